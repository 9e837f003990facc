"""Scenario files: TOML with ``[topology]``, ``[switch]``, ``[transport]``, ``[workload]``, ``[[failures]]``.

Top-level keys: ``name`` (default: the file name), ``description``,
``seed`` (default 1), ``duration_us`` (simulated time limit; default: run
until every flow ended, at most 1 s), and the tables:

- ``[topology]``: `mrc.fabric` keys (``preset`` or ``kind`` + parameters,
  overrides on top of a preset; see docs/fabric.md);
- ``[switch]``: buffers, ECN, trimming, PFC, latency, routing reaction
  (`SwitchConfig`; defaults from the fabric's preset and the transport);
- ``[transport]``: ``name`` and its parameters (`transports`);
- ``[workload]`` or ``[[workload]]`` (jobs on disjoint hosts): ``kind`` and
  its keys (`workloads.generators`);
- ``[[failures]]``: ``at_us``, ``kind`` and target (`parse_failure`);
- ``[capture]``: ``ports``, ``start_us``, ``end_us``, ``max_packets`` (`capture.parse`);
- ``[localize]``: ``enabled`` and the localiser's parameters (`localize.parse`);
- ``[metrics]``: ``sample_us``, ``ports``, ``plots``, ``trace_flows``, ``flow_series``,
  ``trace_capacity``, ``reroute_window_us``, ``recovery_pct``; ``[engine]``:
  ``pool_packets``, ``chunk_events``, ``max_memory`` (a size, e.g. ``"8G"``: the run is refused if its
  memory estimate is above it, or above the memory available; `memory`).

Every unknown key and every bad value raises `ConfigError` naming the key
(``switch.queue_bytes``, ``workload[1].size_bytes``, ``failures[0].link``).
`load` also applies ``--set key=value`` overrides (`apply_sets`).

Times are given in microseconds and converted to integer picoseconds here, once (`mrc.units.ps_from_us`,
rounded to the nearest ps): `Failure`, `SwitchConfig` and `Metrics` carry a ``<name>_ps`` beside each
``<name>_us``, `Scenario.end_ps` is the run's end, and a transport's parameters a ``<name>_ps`` beside
every number ``<name>_us`` (`times_in_ps`): the engine and the transports' set-up read only those.
"""
from __future__ import annotations

import copy
import dataclasses
import pathlib
import tomllib
from typing import Any

from mrc.emulator import memory, scenarios, transports
from mrc.emulator import state as ST
from mrc.emulator.capture import CaptureConfig
from mrc.emulator.capture import parse as parse_capture
from mrc.emulator.localize import LocalizeConfig
from mrc.emulator.localize import parse as parse_localize
from mrc.emulator.keys import Table, host_list, toml_value
from mrc.emulator.workloads import generators
from mrc.errors import ConfigError, read_text
from mrc.fabric import Topology, resolve
from mrc.units import ps_from_us
from mrc.wire.dscp import DscpTable

DEFAULT_CAP_US = 1_000_000.0
FAILURE_KINDS = ("link-down", "link-up", "flap", "gray-loss", "degrade", "nic-port-down", "switch-reboot")


def _times_in_ps(cfg) -> None:
    """Set every ``<name>_ps`` field of a frozen config from its ``<name>_us`` (None stays None): the one
    conversion of the scenario's times, rounded to the nearest ps (`mrc.units.ps_from_us`)."""
    for f in dataclasses.fields(cfg):
        if f.name.endswith("_ps") and not f.init:
            us = getattr(cfg, f.name[:-3] + "_us")
            object.__setattr__(cfg, f.name, None if us is None else ps_from_us(us))


def times_in_ps(params: dict) -> dict:
    """`params` (a transport's) plus ``<name>_ps`` for every number ``<name>_us``, converted as `_times_in_ps`:
    the transports' set-up reads times in ps only."""
    out = dict(params)
    for k, v in params.items():
        if k.endswith("_us") and isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k[:-3] + "_ps"] = ps_from_us(v)
    return out


@dataclasses.dataclass(frozen=True)
class SwitchConfig:
    queue_bytes: int
    ctrl_queue_bytes: int
    ecn: bool
    ecn_min_bytes: int
    ecn_max_bytes: int
    ecn_pmax: float
    ecn_mark: str
    ecn_last_hop: bool
    trim: bool
    trim_header_bytes: int
    pfc: bool
    pfc_xoff_bytes: int
    pfc_xon_bytes: int
    pfc_headroom_bytes: int
    latency_ns: float
    framing_bytes: int
    route_detect_us: float
    route_converge_us: float
    mtu_bytes: int
    dscp: DscpTable
    route_detect_ps: int = dataclasses.field(init=False)  # the two above in ps (`_times_in_ps`)
    route_converge_ps: int = dataclasses.field(init=False)

    def __post_init__(self):
        _times_in_ps(self)


@dataclasses.dataclass(frozen=True)
class Job:
    kind: str
    index: int
    where: str
    hosts: list[int] | None
    hosts_given: Any
    params: dict


@dataclasses.dataclass(frozen=True)
class Failure:
    kind: str
    at_us: float
    ports: tuple[int, ...]
    target: str
    duration_us: float | None = None
    period_us: float | None = None
    down_us: float | None = None
    until_us: float | None = None
    probability: float = 0.0
    rate_fraction: float = 1.0
    scale_queue: bool = True  # degrade: scale the ports' queue limit and ECN thresholds with the rate (htsim)
    # the times above in ps (`_times_in_ps`): what the engine's failure actions are built from
    at_ps: int = dataclasses.field(init=False)
    duration_ps: int | None = dataclasses.field(init=False)
    period_ps: int | None = dataclasses.field(init=False)
    down_ps: int | None = dataclasses.field(init=False)
    until_ps: int | None = dataclasses.field(init=False)

    def __post_init__(self):
        _times_in_ps(self)


@dataclasses.dataclass(frozen=True)
class Metrics:
    sample_us: float | None
    ports: tuple[int, ...]
    plots: bool
    trace_flows: tuple[int, ...]
    trace_capacity: int
    reroute_window_us: float = 50.0
    recovery_pct: float = 10.0
    flow_series: tuple[int, ...] = ()  # flows whose transport state is sampled (the transport's `flow_series`)
    baseline: str = "auto"  # training / trace jobs with failures: "auto" (run the failure-free twin), "none", or a
    # results directory of the failure-free run (`sim.baseline`)
    reroute_window_ps: int = dataclasses.field(init=False)  # reroute_window_us in ps (`_times_in_ps`)

    def __post_init__(self):
        _times_in_ps(self)


@dataclasses.dataclass
class Scenario:
    name: str
    description: str
    seed: int
    duration_us: float | None
    topo: Topology
    switch: SwitchConfig
    transport_name: str
    transport: dict
    jobs: list[Job]
    failures: list[Failure]
    metrics: Metrics
    pool_packets: int | None
    chunk_events: int
    data: dict  # the scenario as given (after --set), for the results
    base_dir: pathlib.Path | None
    capture: CaptureConfig = CaptureConfig()  # [capture]: ports whose packets go to capture.pcapng
    localize: LocalizeConfig = LocalizeConfig()  # [localize]: the controller's fault localisation (MRC transports)
    max_memory: int | None = None  # engine.max_memory (bytes): the run's memory estimate must stay below it

    @property
    def transport_module(self):
        """The module that runs this scenario's transport (`mrc.emulator.transports.REGISTRY`): the one place
        the name is looked up (the name was checked when the scenario was parsed)."""
        return transports.REGISTRY[self.transport_name]

    @property
    def end_us(self) -> float:
        return self.duration_us if self.duration_us is not None else DEFAULT_CAP_US

    @property
    def end_ps(self) -> int:
        """The run's end (`end_us`) in ps."""
        return ps_from_us(self.end_us)


# ---------------------------------------------------------------- loading


MAX_FILE_BYTES = 16 << 20  # a scenario file is a few KB; traffic matrices and traces are files of their own
MAX_DEPTH = 32  # tables and arrays nested inside each other (the deepest key of the library is 4 levels down)


def check_depth(data, where: str = "scenario") -> None:
    """Refuse data nested deeper than `MAX_DEPTH` (walked without recursion: any depth is safe to check)."""
    stack = [(data, 0, "")]
    while stack:
        node, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            raise ConfigError(path or where, "...", f"nested {depth} levels deep: at most {MAX_DEPTH}")
        if isinstance(node, dict):
            stack.extend((v, depth + 1, f"{path}.{k}" if path else str(k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, depth + 1, f"{path}[{k}]") for k, v in enumerate(node))


def decode_toml(text: str, where: str) -> dict:
    """A TOML document from a file's text (`mrc.errors.read_text`: UTF-8, as TOML 1.0 says, checked there),
    strictly: bounded nesting, one-line errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(where, where, f"not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(where, where, f"arrays or inline tables nested too deep to read (at most {MAX_DEPTH} "
                          "levels are allowed)") from None
    check_depth(data, where)
    return data


def read(source) -> tuple[dict, str, pathlib.Path | None]:
    """(data, name, directory) of a scenario file, a library name, or a mapping."""
    if isinstance(source, dict):
        check_depth(source)
        return copy.deepcopy(source), str(source.get("name", "scenario")), None
    p = pathlib.Path(source)
    if not p.is_file():
        lib = scenarios.path(str(source))
        if lib is None:
            raise ConfigError("scenario", str(source), "no such file, and not a library scenario "
                              f"({', '.join(scenarios.names())})")
        p = lib
    size = p.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ConfigError("scenario", str(source), f"{size:,} bytes: a scenario file is at most {MAX_FILE_BYTES:,} "
                          "(traffic matrices and traces go in files of their own)")
    return decode_toml(read_text(p, "scenario"), str(source)), p.stem, p.parent


def apply_sets(data: dict, sets) -> dict:
    """Apply ``key=value`` overrides (dotted keys; ``workload.1.size_bytes`` indexes arrays of tables)."""
    for item in sets or ():
        if "=" not in item:
            raise ConfigError("--set", item, "write key=value (e.g. switch.queue_bytes=100000)")
        key, _, text = item.partition("=")
        parts = key.strip().split(".")
        if not all(parts):
            raise ConfigError("--set", item, "empty key part")
        node: Any = data
        for k, part in enumerate(parts[:-1]):
            if isinstance(node, list):
                if not part.isdigit() or int(part) >= len(node):
                    raise ConfigError(".".join(parts[: k + 1]), part, f"an index 0..{len(node) - 1}")
                node = node[int(part)]
            else:
                if part not in node:
                    node[part] = {}
                node = node[part]
                if not isinstance(node, (dict, list)):
                    raise ConfigError(".".join(parts[: k + 1]), node, "not a table")
        last = parts[-1]
        value = toml_value(text.strip(), key.strip())
        if isinstance(node, list):
            if not last.isdigit() or int(last) >= len(node):
                raise ConfigError(key, last, f"an index 0..{len(node) - 1}")
            node[int(last)] = value
        else:
            node[last] = value
    return data


def load(source, seed: int | None = None, sets=()) -> Scenario:
    data, name, base = read(source)
    apply_sets(data, sets)
    check_depth(data)
    if seed is not None:
        data["seed"] = seed
    return parse(data, name, base)


def parse(data: dict, name: str = "scenario", base_dir=None) -> Scenario:
    top = Table(data, "")
    name = top.str("name", name)
    desc = top.raw("description", "")
    if not isinstance(desc, str):
        raise ConfigError("description", desc, "must be a string")
    seed = top.int("seed", 1, lo=0, hi=2**63 - 1)
    duration = top.num("duration_us", None, lo=0, lo_open=True) if top.has("duration_us") else None
    top.raw("duration_us", None)
    topo_t = top.raw("topology")
    if not isinstance(topo_t, dict):
        raise ConfigError("topology", topo_t, "must be a table of topology keys (or a preset)")
    spec = resolve(topo_t, where="topology")
    # the fabric's memory, checked before the Topology is built (a fat-tree k = 128 stops here, at once)
    eng = data.get("engine")
    max_mem = memory.parse_size(eng["max_memory"]) if isinstance(eng, dict) and "max_memory" in eng else None
    memory.check_fabric(spec, max_mem)
    topo = Topology(spec, ecmp_seed=seed)
    tt = top.table("transport")
    tname = tt.str("name")
    tmod = transports.get(tname)
    tparams = times_in_ps(tmod.parse(tt, topo))
    tt.done()
    sw = parse_switch(top.table("switch", {}), topo, tmod.switch_defaults(tparams), (tname, tmod.trim_headers(tparams)))
    tmod.check_switch(tparams, sw)
    jobs = parse_workloads(top.raw("workload"), topo, duration, base_dir)
    fl = top.raw("failures", [])
    if not isinstance(fl, list):
        raise ConfigError("failures", fl, "write [[failures]] tables")
    failures = [parse_failure(Table(f, f"failures[{k}]"), topo) for k, f in enumerate(fl)]
    mt = top.table("metrics", {})
    sample = mt.num("sample_us", None, lo=MIN_SAMPLE_US) if mt.has("sample_us") else None
    mt.raw("sample_us", None)
    if sample is not None and duration is not None and duration / sample > MAX_SAMPLES:
        raise ConfigError("metrics.sample_us", sample, f"{duration / sample:,.0f} samples over duration_us = "
                          f"{duration}: at most {MAX_SAMPLES:,}")
    ports = mt.raw("ports", [])
    if not isinstance(ports, list) or any(isinstance(q, bool) or not isinstance(q, int) or not 0 <= q < topo.n_ports
                                          for q in ports):
        raise ConfigError("metrics.ports", ports, f"a list of port ids 0..{topo.n_ports - 1}")
    tf = mt.raw("trace_flows", [])
    if not isinstance(tf, list) or any(isinstance(f, bool) or not isinstance(f, int) or f < 0 for f in tf):
        raise ConfigError("metrics.trace_flows", tf, "a list of flow indices")
    fs = mt.raw("flow_series", [])
    if not isinstance(fs, list) or any(isinstance(f, bool) or not isinstance(f, int) or f < 0 for f in fs):
        raise ConfigError("metrics.flow_series", fs, "a list of flow indices")
    metrics = Metrics(sample, tuple(ports), mt.bool("plots", True), tuple(tf),
                      mt.int("trace_capacity", 1_000_000 if tf else 0, lo=0),
                      mt.num("reroute_window_us", 50.0, lo=0), mt.num("recovery_pct", 10.0, lo=0, hi=100, lo_open=True),
                      tuple(fs), mt.str("baseline", "auto"))
    mt.done()
    check_memory("metrics.trace_capacity", metrics.trace_capacity, metrics.trace_capacity * ST.TRACE.itemsize, max_mem)
    cap = parse_capture(top.table("capture", {}), topo, duration)
    loc = parse_localize(top.table("localize", {}))
    et = top.table("engine", {})
    pool = et.int("pool_packets", None, lo=256, hi=1 << 31)  # None: sized from the workload (state.pool_rows_for)
    if pool is not None:
        check_memory("engine.pool_packets", pool, pool * (ST.PKTE.itemsize + ST.PKT.itemsize + 4), max_mem)
    chunk = et.int("chunk_events", 2_000_000, lo=1000)
    et.raw("max_memory", None)  # read (and checked) above, before the fabric
    et.done()
    top.done()
    return Scenario(name, desc, seed, duration, topo, sw, tname, tparams, jobs, failures, metrics, pool, chunk,
                    data, pathlib.Path(base_dir) if base_dir is not None else None, cap, loc, max_mem)


# ---------------------------------------------------------------- resource bounds

MIN_SAMPLE_US = 0.01  # metrics.sample_us below 10 ns samples faster than any event the engine models
MAX_SAMPLES = 10_000_000  # time-series rows over duration_us


available_memory = memory.available_memory


def check_memory(key: str, value, nbytes: int, max_memory: int | None = None) -> None:
    """Refuse, before anything is allocated, a setting whose arrays alone need more memory than is available
    (or than ``engine.max_memory``). The whole run is estimated later (`memory.check_run`)."""
    cap, what = memory.limit(max_memory)
    if cap is not None and nbytes > cap:
        raise ConfigError(key, value, f"needs about {nbytes / 2**30:,.1f} GiB, more than {what}")


# ---------------------------------------------------------------- sections


def parse_switch(t: Table, topo: Topology, tdefaults: dict, headers: tuple[str, int] = ("", 0)) -> SwitchConfig:
    """The ``[switch]`` table. `headers`: the transport's name and the bytes of the largest header stack of a
    packet it marks trimmable (`transports` ``trim_headers``): the trimmed size is never below it."""
    d = topo.switch_defaults
    queue = t.int("queue_bytes", d.queue_bytes, lo=1)
    mtu = t.int("mtu_bytes", d.mtu_bytes, lo=64)
    ecn_min = t.int("ecn_min_bytes", d.ecn_min_bytes, lo=0)
    ecn_max = t.int("ecn_max_bytes", d.ecn_max_bytes, lo=0)
    if ecn_max < ecn_min:
        raise ConfigError("switch.ecn_max_bytes", ecn_max, f"below ecn_min_bytes = {ecn_min}")
    pfc = t.bool("pfc", tdefaults.get("pfc", False))
    # PFC headroom: what arrives after XOFF is sent: a round trip on the longest, fastest link plus two MTUs.
    rate = max(int(topo.port["rate"].max()), 1)
    delay = int(topo.port["delay"].max())
    headroom_default = int(2 * delay * rate / 8e12) + 2 * mtu + 64
    xoff = t.int("pfc_xoff_bytes", max(queue // 4, 2 * mtu), lo=1)
    xon = t.int("pfc_xon_bytes", max(xoff - 2 * mtu, 0), lo=0)
    if xon > xoff:
        raise ConfigError("switch.pfc_xon_bytes", xon, f"above pfc_xoff_bytes = {xoff}")
    headroom = t.int("pfc_headroom_bytes", headroom_default, lo=0)
    trim = t.bool("trim", tdefaults.get("trim", False))
    # A trimmed packet keeps its headers: htsim asserts trim_size >= its 64 B header (Packet::strip_payload), UET
    # 1.0 sets a floor (MIN_TRIM_SIZE, 4.1) and Spectrum-4 trims to 256..1024 B (mrc-public-notes 5). The preset's
    # size (htsim's 64 B: its header size) applies where it holds the transport's headers, else the trimmed
    # size is the transport's header stack; a size given below that is refused.
    tname, floor = headers
    trim_hdr = t.int("trim_header_bytes", max(d.trim_header_bytes, floor), lo=1)
    if trim and trim_hdr < floor:
        raise ConfigError("switch.trim_header_bytes", trim_hdr, f"below the {floor} bytes of headers of a trimmable "
                          f"{tname} packet (IP, UDP, BTH and its extension headers): a trimmed packet keeps its "
                          f"headers; give at least {floor}, or leave the key out")
    dscp_t = t.raw("dscp", {})
    if not isinstance(dscp_t, dict):
        raise ConfigError("switch.dscp", dscp_t, "a table of class = code point")
    try:
        dscp = DscpTable.from_dict(dscp_t)
    except ConfigError as exc:
        raise ConfigError(f"switch.{exc.key}", exc.value, exc.problem) from None
    sw = SwitchConfig(
        queue_bytes=queue,
        ctrl_queue_bytes=t.int("ctrl_queue_bytes", queue, lo=1),
        ecn=t.bool("ecn", True),
        ecn_min_bytes=ecn_min,
        ecn_max_bytes=ecn_max,
        ecn_pmax=t.num("ecn_pmax", tdefaults.get("ecn_pmax", 1.0), lo=0, hi=1),
        ecn_mark=t.choice("ecn_mark", ("dequeue", "enqueue"), "dequeue"),
        ecn_last_hop=t.bool("ecn_last_hop", tdefaults.get("ecn_last_hop", d.ecn_on_last_hop)),
        trim=trim,
        trim_header_bytes=trim_hdr,
        pfc=pfc,
        pfc_xoff_bytes=xoff,
        pfc_xon_bytes=xon,
        pfc_headroom_bytes=headroom,
        latency_ns=t.num("latency_ns", d.switch_latency_ps / 1000, lo=0),
        framing_bytes=t.int("framing_bytes", 0, lo=0),
        route_detect_us=t.num("route_detect_us", 1000.0, lo=0),
        route_converge_us=t.num("route_converge_us", 100_000.0, lo=0),
        mtu_bytes=mtu,
        dscp=dscp,
    )
    if sw.route_converge_us < sw.route_detect_us:
        raise ConfigError("switch.route_converge_us", sw.route_converge_us,
                          f"below route_detect_us = {sw.route_detect_us} (remote switches learn later)")
    t.done()
    return sw


def parse_workloads(value, topo: Topology, duration, base_dir) -> list[Job]:
    if value is None:
        raise ConfigError("workload", None, "missing: give [workload] or [[workload]] tables")
    items = [value] if isinstance(value, dict) else value
    if not isinstance(items, list) or not items or not all(isinstance(x, dict) for x in items):
        raise ConfigError("workload", value, "a [workload] table or [[workload]] tables")
    jobs = []
    for k, item in enumerate(items):
        where = "workload" if isinstance(value, dict) else f"workload[{k}]"
        t = Table(item, where)
        kind = t.choice("kind", generators.KINDS)
        hosts = None
        given = t.raw("hosts", None)
        if given is not None:
            hosts = host_list(given, t.key("hosts"), topo.n_hosts)
        n = len(hosts) if hosts is not None else topo.n_hosts
        params = generators.parse(t, kind, n, duration, base_dir)
        t.done()
        jobs.append(Job(kind, k, where, hosts, given, params))
    return jobs


def _node(t: Table, topo: Topology, name: str, value) -> int:
    from mrc.errors import UsageError

    try:
        return topo.parse_node(str(value))
    except UsageError as exc:
        raise ConfigError(t.key(name), value, str(exc)) from None


def _link_port(t: Table, topo: Topology, value) -> int:
    if not isinstance(value, list) or len(value) != 2:
        raise ConfigError(t.key("link"), value, "two adjacent nodes, e.g. [\"p0.t0.3\", \"p0.t1.1\"]")
    a, b = (_node(t, topo, "link", v) for v in value)
    n = topo.node[a]
    start = int(n["port_start"])
    for q in range(start, start + int(n["n_down"]) + int(n["n_up"])):
        if topo.peer_node(q) == b:
            return q
    raise ConfigError(t.key("link"), value, f"{topo.node_name(a)} and {topo.node_name(b)} are not linked")


def parse_failure(t: Table, topo: Topology) -> Failure:
    kind = t.choice("kind", FAILURE_KINDS)
    at = t.num("at_us", lo=0)
    extra: dict = {}
    if kind == "nic-port-down":
        h = t.int("host", lo=0, hi=topo.n_hosts - 1)
        p = t.int("plane", 0, lo=0, hi=topo.n_planes - 1)
        ports, target = (h * topo.n_planes + p,), f"h{h}:nic{p}"
    elif kind == "switch-reboot":
        s = _node(t, topo, "switch", t.raw("switch"))
        if topo.node[s]["kind"] == 0:
            raise ConfigError(t.key("switch"), t.data["switch"], "a switch, not a host")
        ports, target = _switch_ports(topo, s), topo.node_name(s)
    else:
        given = [k for k in ("link", "port", "switch") if t.has(k)]
        if len(given) != 1:
            raise ConfigError(t.key("link"), None, "give exactly one target: link = [a, b], port = N or switch = S")
        if given[0] == "link":
            q = _link_port(t, topo, t.raw("link"))
            ports, target = (q,), f"{topo.node_name(topo.port[q]['node'])}-{topo.node_name(topo.peer_node(q))}"
        elif given[0] == "port":
            q = t.int("port", lo=0, hi=topo.n_ports - 1)
            ports, target = (q,), topo.port_name(q)
        else:
            s = _node(t, topo, "switch", t.raw("switch"))
            if topo.node[s]["kind"] == 0:
                raise ConfigError(t.key("switch"), t.data["switch"], "a switch, not a host")
            ports, target = _switch_ports(topo, s), topo.node_name(s)
    if kind in ("link-down", "nic-port-down", "gray-loss", "degrade"):
        extra["duration_us"] = t.num("duration_us", None, lo=0, lo_open=True) if t.has("duration_us") else None
    elif kind == "switch-reboot":
        extra["duration_us"] = t.num("duration_us", lo=0, lo_open=True)
    if kind == "flap":
        extra["period_us"] = t.num("period_us", lo=0, lo_open=True)
        extra["down_us"] = t.num("down_us", extra["period_us"] / 2, lo=0, lo_open=True)
        if extra["down_us"] >= extra["period_us"]:
            raise ConfigError(t.key("down_us"), extra["down_us"], f"must be below period_us = {extra['period_us']}")
        extra["until_us"] = t.num("until_us", None, lo=0) if t.has("until_us") else None
        if extra["until_us"] is not None and extra["until_us"] <= at:
            raise ConfigError(t.key("until_us"), extra["until_us"], f"must be after at_us = {at}")
    if kind == "gray-loss":
        extra["probability"] = t.num("probability", lo=0, hi=1, lo_open=True)
    if kind == "degrade":
        extra["rate_fraction"] = t.num("rate_fraction", lo=0, hi=1, lo_open=True)
        extra["scale_queue"] = t.bool("scale_queue", True)
    t.done()
    return Failure(kind, at, tuple(int(q) for q in ports), target, **extra)


def _switch_ports(topo: Topology, s: int) -> tuple[int, ...]:
    n = topo.node[s]
    start = int(n["port_start"])
    return tuple(range(start, start + int(n["n_down"]) + int(n["n_up"])))
