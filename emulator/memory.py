"""The memory a scenario's run will need, estimated before anything is allocated, and the check against it.

Three checks, each before the tables it counts exist:

- `check_fabric` (from `scenario.parse`, before the `Topology` is built): the process, the fabric's node,
  port and routing tables (their peak while `fabric.tables.build_tables` makes them, counted from the
  fabric's shape by `fabric.tables.table_sizes`), and the engine's per-port tables and event heap. A
  fat-tree ``k = 128`` or a huge leaf-spine stops here, in well under a second.
- `check_workload` (from `sim.Simulation`, before the workload's flows are drawn): the fabric's parts plus the
  flows the jobs will make, counted from their keys (`workloads.generators.flow_bound`), with what drawing
  them costs in Python (`BUILD_BYTES_PER_FLOW`);
- `check_run` (from `sim.Simulation`, once the workload's flows are drawn and before the transport's and
  the engine's tables): all of the above plus the flows, the transport's tables (each transport's
  ``memory(topo, flows, params)``, row by row as its ``setup`` allocates), the packet pool, the trace, the
  capture and the sampled time series; and, on a cold start, what compiling takes (`COMPILE_BYTES`).

Every part is a row count times the bytes of its numpy dtype, plus `BASE_BYTES` for the interpreter,
numpy, numba and the loaded compiled code. Tables are counted whole, although numpy's zeroed tables only
take memory where they are written (the packet pool and the transport's PSN windows rarely fill), so the
estimate leans high; docs/emulator.md ("Memory") gives its measured accuracy.

The limit is the smaller of ``MemAvailable`` (Linux) and ``engine.max_memory`` (``--max-memory``). A run
over it is refused with a `ConfigError` naming the key that drives the largest part, the estimate and
the limit.
"""
from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from mrc.errors import ConfigError

GIB = 1 << 30
# The interpreter, numpy, numba and the emulator's compiled code once loaded: peak RSS of a run whose tables
# are negligible (incast, 16 hosts: 230-250 MB on this machine, benchmarks in docs/emulator.md), rounded up.
BASE_BYTES = 256 << 20
# A cold start (the first run of a code version, `coldstart.is_cold`) compiles first: numba and LLVM then
# hold about this much more (incast's first run peaked at 1,602 MB, against 245 MB once compiled).
COMPILE_BYTES = 1400 << 20
SERIES_VALUE_BYTES = 32  # one sampled value: a Python float (24 B) and its list slot (8 B)


@dataclasses.dataclass
class Part:
    name: str
    nbytes: int
    key: str | None  # the scenario key that drives it
    value: object = None  # that key's value


@dataclasses.dataclass
class Estimate:
    parts: list[Part]
    build_peak: int = 0  # extra bytes while the fabric's routing tables are being built (freed after)

    @property
    def resident(self) -> int:
        return sum(p.nbytes for p in self.parts)

    @property
    def total(self) -> int:
        """The peak: everything at once, or the fabric's build peak on top of the process, if higher."""
        fabric = sum(p.nbytes for p in self.parts if p.name in ("process", "fabric tables"))
        return max(self.resident, fabric + self.build_peak)

    def largest(self) -> Part:
        return max((p for p in self.parts if p.key is not None), key=lambda p: p.nbytes
                   + (self.build_peak if p.name == "fabric tables" else 0))

    def lines(self) -> list[str]:
        out = [f"  {p.name:16s} {_size(p.nbytes):>10s}" + (f"   ({p.key} = {p.value!r})" if p.key else "")
               for p in self.parts]
        if self.build_peak:
            out.append(f"  {'(fabric build)':16s} {_size(self.build_peak):>10s}   while the routing tables are made")
        out.append(f"  {'total (peak)':16s} {_size(self.total):>10s}")
        return out


def _size(n: int) -> str:
    return f"{n / GIB:,.2f} GiB" if n >= GIB else f"{n / (1 << 20):,.0f} MiB"


# ---------------------------------------------------------------- limits

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": GIB, "gb": GIB, "gib": GIB, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}


def parse_size(value, key: str = "engine.max_memory") -> int:
    """Bytes of a size: an integer (bytes) or a string like ``"8G"``, ``"512 MiB"``, ``"1.5GB"`` (powers of 2)."""
    if isinstance(value, bool):
        raise ConfigError(key, value, "a size: bytes, or a number with K, M, G or T (e.g. 8G)")
    if isinstance(value, int):
        n = value
    elif isinstance(value, float) and math.isfinite(value):
        n = int(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*", value)
        if not m or m.group(2).lower() not in _UNITS:
            raise ConfigError(key, value, "a size: bytes, or a number with K, M, G or T (e.g. 8G)")
        n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    else:
        raise ConfigError(key, value, "a size: bytes, or a number with K, M, G or T (e.g. 8G)")
    if n <= 0:
        raise ConfigError(key, value, "must be above 0")
    return n


def available_memory() -> int | None:
    """Bytes of memory the kernel says are available (Linux ``MemAvailable``), None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def limit(max_memory: int | None) -> tuple[int | None, str]:
    """(bytes, what it is) of the limit a run must fit: ``MemAvailable`` or ``engine.max_memory``, the smaller."""
    avail = available_memory()
    if max_memory is not None and (avail is None or max_memory <= avail):
        return max_memory, f"the limit engine.max_memory (--max-memory) of {_size(max_memory)}"
    if avail is None:
        return None, "no limit (MemAvailable unknown)"
    return avail, f"the {_size(avail)} of memory available (MemAvailable)"


def check(est: Estimate, max_memory: int | None) -> None:
    """Refuse (`ConfigError` on the key of the largest part) an estimate above the limit."""
    cap, what = limit(max_memory)
    if cap is None or est.total <= cap:
        return
    if max_memory is not None and cap == max_memory and BASE_BYTES >= cap:
        raise ConfigError("engine.max_memory", max_memory, f"below the {_size(BASE_BYTES)} the process needs "
                          f"before any table (the run needs about {_size(est.total)})")
    big = est.largest()
    parts = ", ".join(f"{p.name} {_size(p.nbytes)}" for p in sorted(est.parts, key=lambda p: -p.nbytes)[:4])
    build = f", {_size(est.build_peak)} more while the fabric's tables are built" if est.build_peak else ""
    raise ConfigError(big.key, big.value, f"the run needs about {_size(est.total)} ({parts}{build}), more than "
                      f"{what}; the largest part is the {big.name}, driven by {big.key}")


# ---------------------------------------------------------------- the fabric


def fabric_key(spec) -> tuple[str, object]:
    """The topology key that sizes the fabric: ``k`` of a fat-tree, ``leaves`` of a leaf-spine."""
    return ("topology.k", spec.k) if spec.tiers == 3 else ("topology.leaves", spec.leaves)


def fabric_parts(spec) -> Estimate:
    """The process and the fabric: node, port and routing tables, the engine's per-port tables and heap."""
    from mrc.emulator import state as ST
    from mrc.emulator.events import HEAP
    from mrc.fabric.build import NODE, PORT, shape
    from mrc.fabric.tables import TBL, table_sizes

    sh = shape(spec)
    n_sw, per_sw = sh["n_sw"], [sh["n_down"][t] + sh["n_up"][t] for t in range(3)]
    H, P = spec.hosts, spec.planes
    n_ports = H * P + P * sum(n_sw[t] * per_sw[t] for t in range(3))
    entries, slots, n_nodes = table_sizes(spec)
    key, value = fabric_key(spec)
    tables = n_nodes * (NODE.itemsize + 16) + n_ports * PORT.itemsize + (entries + slots) * TBL.itemsize
    # building them: the per-tier pieces (prefix 8 B, action 1 B, port 4 B per entry) and their
    # concatenation are alive while the hash tables are filled (+ 8 B: the 2-D blocks they are cut from;
    # measured: within 5 % of the RSS growth of a fat-tree k = 48 and k = 64 build)
    build = entries * (2 * (8 + 1 + 4) + 8)
    # engine: PORTS rows; the two samplers' per-port columns (group cell, last tx bytes, rate: 3 x 8 B each)
    ports = n_ports * (ST.PORTS.itemsize + 2 * 3 * 8)
    heap = ST.heap_rows_for(n_ports) * (HEAP.itemsize + 8)
    parts = [Part("process", BASE_BYTES, None), Part("fabric tables", tables, key, value),
             Part("ports", ports, key, value), Part("event heap", heap, key, value)]
    return Estimate(parts, build)


def check_fabric(spec, max_memory: int | None) -> Estimate:
    est = fabric_parts(spec)
    check(est, max_memory)
    return est


# ---------------------------------------------------------------- the whole run


def series_samples(sc) -> int:
    """Rows of the time series the run will sample (`sim.auto_sample_us`; open-ended runs double the interval
    every `sim.ADAPT_EVERY` samples, so they stay a few thousand rows long)."""
    from mrc.emulator import sim

    interval = sim.auto_sample_us(sc)
    n = sc.end_us / interval
    if sc.metrics.sample_us is None and sc.duration_us is None:
        k = 0
        while n > sim.ADAPT_EVERY:  # each doubling: ADAPT_EVERY rows cover ADAPT_EVERY intervals
            n = (n - sim.ADAPT_EVERY) / 2
            k += 1
        return int((k + 1) * sim.ADAPT_EVERY)
    return int(math.ceil(n)) + 1


def run_parts(sc, flows: np.ndarray) -> Estimate:
    """Every part of the run's memory: the fabric's, plus flows, transport, pool, trace, capture, series."""
    from mrc.emulator import state as ST
    from mrc.emulator.sim import GROUPS
    from mrc.wire.records import PKT

    from mrc.emulator import coldstart

    est = fabric_parts(sc.topo.spec)
    if coldstart.is_cold():
        est.parts.insert(1, Part("compiling", COMPILE_BYTES, None))
    nf = len(flows)
    tmod = sc.transport_module
    wl = ("workload", f"{nf:,} flows")
    parts = est.parts
    parts.append(Part("flows", nf * (ST.FLOW.itemsize + 4 * 8), *wl))
    parts.append(Part("transport", int(tmod.memory(sc.topo, flows, sc.transport)), *wl))
    if sc.pool_packets is not None:
        rows, pkey = sc.pool_packets, ("engine.pool_packets", sc.pool_packets)
    else:
        rows, pkey = ST.pool_rows_for(flows["size"]), wl
    parts.append(Part("packet pool", rows * (ST.PKTE.itemsize + PKT.itemsize + 4 + 8), *pkey))
    if sc.metrics.trace_capacity:
        parts.append(Part("trace", sc.metrics.trace_capacity * ST.TRACE.itemsize, "metrics.trace_capacity",
                          sc.metrics.trace_capacity))
    if sc.capture.on:
        parts.append(Part("capture", sc.capture.max_packets * (ST.CAP.itemsize + PKT.itemsize), "capture.max_packets",
                          sc.capture.max_packets))
    cols = 8 + 4 * len(GROUPS) + 2 * len(sc.metrics.ports) + 8 * len(sc.failures) + len(sc.metrics.flow_series) * 8
    cols += 6 * len(GROUPS) * sc.topo.n_planes  # planes.csv: a row per (group, plane) per sample
    parts.append(Part("time series", series_samples(sc) * cols * SERIES_VALUE_BYTES, "metrics.sample_us",
                      sc.metrics.sample_us))
    return est


# Drawing the flows: the builder's Python lists (twelve columns of ints per flow, `workloads.Builder`), a
# Poisson job's (time, host) arrivals, then the numpy columns they become. Measured: a Poisson job on
# mrc-2plane-tiny (load 0.5) grows the peak RSS by 852 B a flow at 29 k flows and 752 B at 732 k
# (tracemalloc's peak: about 300 B; the rest is what the allocator keeps)
BUILD_BYTES_PER_FLOW = 800


def workload_parts(sc) -> Estimate | None:
    """The fabric's parts plus the flows the jobs will draw, from their keys (`generators.flow_bound`), while
    they are drawn (jobs whose count only generating tells, training and trace, are left to `check_run`); None
    when no job's count is known."""
    from mrc.emulator import state as ST
    from mrc.emulator.workloads import generators

    est = fabric_parts(sc.topo.spec)
    total, big, big_job = 0, -1, None
    for job in sc.jobs:
        nf = generators.flow_bound(job, sc.topo)
        if nf is None:
            continue  # counted once drawn (`check_run`)
        total += nf
        if nf > big:
            big, big_job = nf, job
    if big_job is None:
        return None
    kind = big_job.kind
    key = f"{big_job.where}.{generators.BOUND_KEY[kind]}"
    value = {"poisson": big_job.params.get("until_us"), "incast": big_job.params.get("senders")}.get(kind, f"{big:,} flows")
    est.parts.append(Part("flows (drawing)", total * (ST.FLOW.itemsize + 4 * 8 + BUILD_BYTES_PER_FLOW), key, value))
    return est


def check_workload(sc) -> Estimate | None:
    """Refuse, before any flow is drawn, a workload whose flows alone do not fit (a Poisson job's ``until_us``
    of hours draws billions of arrivals); `check_run` then counts the whole run once they are drawn."""
    est = workload_parts(sc)
    if est is not None:
        check(est, sc.max_memory)
    return est


def check_run(sc, flows: np.ndarray) -> Estimate:
    est = run_parts(sc, flows)
    check(est, sc.max_memory)
    return est
