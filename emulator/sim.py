"""Running a scenario: set up the tables, step the compiled loop in chunks, sample, collect.

    >>> from mrc.emulator import scenario, sim
    >>> run = sim.Simulation(scenario.load("fattree-k8-permutation")).run(progress=True)
    >>> run.flows["t_send_done"]            # per flow (state.FLOW)

Python only sets up, calls `engine.run_chunk` up to the next sample time (or
an event budget, for the progress bar), grows the packet pool or the heap
when the loop asks, and samples link utilisation, queue occupancy and failure
watches between chunks (`Sampler`). Randomness: the scenario seed feeds a
numpy SeedSequence split into the workload, transport and engine streams, so
the same scenario and seed give the same numbers, bit for bit.
"""
from __future__ import annotations

import dataclasses
import resource
import sys
import time

import numpy as np

from mrc.emulator import build, engine, localize, memory, sampling, workloads
from mrc.emulator import events as EVT
from mrc.emulator import state as ST
from mrc.emulator.pool import RESERVE
from mrc.emulator.scenario import Scenario
from mrc.errors import MRCError
from mrc.units import US

# (link tier, direction) -> group name of the utilisation / queue series
GROUPS = {(0, 0): "host_up", (0, 1): "t0_down", (1, 0): "t0_up", (1, 1): "t1_down", (2, 0): "t1_up",
          (2, 1): "t2_down"}


@dataclasses.dataclass
class RunData:
    scenario: Scenario
    flows: np.ndarray
    collectives: list
    counters: dict
    samples: dict  # column -> np.ndarray
    port_stats: dict  # per port: max_bytes0, max_bytes1, drops, trims, marks, tx_bytes, paused_ps (views of E.port)
    failures: list  # per failure: dict
    trace: np.ndarray
    sim: dict  # events, packet_hops, wall_s, sim_time_us, peak_rss_mb, ...
    inflight: dict  # packets and bytes still in the fabric at the end
    fstat: np.ndarray = None  # per failure: state.FSTAT (reroute tracking)
    extra: dict = dataclasses.field(default_factory=dict)  # the transport's own (collect): e.g. ev_events
    capture: dict = dataclasses.field(default_factory=dict)  # [capture]: rows (CAP), headers (PKT), missed
    localization: dict | None = None  # MRC transports: the controller's fault localisation (`localize.record`)
    plane_samples: dict = dataclasses.field(default_factory=dict)  # `PlaneSampler.columns` (planes.csv)
    jobs: dict = dataclasses.field(default_factory=dict)  # training / trace jobs: index -> `training.JobGraph`
    trig_fired: np.ndarray = None  # each trigger's firing time (-1: never)
    baseline: list | None = None  # training / trace jobs of the failure-free twin (`training_metrics.baseline`)


class RunTimeout(MRCError):
    """A run passed its wall-time limit (`Simulation.run`'s ``deadline``)."""


ADAPT_EVERY = 2000  # without duration_us or sample_us, the interval doubles every this many samples


def auto_sample_us(sc: Scenario) -> float:
    if sc.metrics.sample_us is not None:
        return sc.metrics.sample_us
    if sc.duration_us is not None:
        return max(1.0, min(10.0, sc.duration_us / 100)) if sc.duration_us <= 10_000 else sc.duration_us / 1000
    return 10.0


class Sampler:
    """Link utilisation and queue occupancy per link group, watched failures, chosen ports."""

    def __init__(self, sim: "Simulation"):
        topo = sim.sc.topo
        fp = topo.port
        gid = np.full(len(fp), -1, np.int64)
        for k, (tier, d) in enumerate(GROUPS):
            gid[(fp["tier"] == tier) & (fp["dir"] == d)] = k
        count = np.bincount(gid[gid >= 0], minlength=len(GROUPS))
        self.count = count
        self.groups = {name: k for k, name in enumerate(GROUPS.values()) if count[k]}
        self.rate = fp["rate"].astype(np.float64)
        self.cells = sampling.PortCells(gid, len(GROUPS), self.rate)
        self.ports = list(sim.sc.metrics.ports)
        self.fail_ports = [np.array(sorted(set(f.ports) | {int(fp[q]["peer"]) for q in f.ports}), np.int64)
                           for f in sim.sc.failures]
        self.cols: dict[str, list] = {}
        self.t_prev = 0
        self.prev_ctr = np.zeros(ST.N_C, np.int64)
        self.aff_mark = None  # (flows started, flows ended, affected marks) when `aff_running` was counted
        self.aff_running = [0] * min(len(self.fail_ports), ST.MAX_TRACKED_FAILURES)
        self.prev_watch = [0] * len(self.fail_ports)
        self.prev_fstat = np.zeros((len(self.fail_ports), 3), np.int64)
        self.sim = sim
        self.flow_series = list(sim.sc.metrics.flow_series)
        n_flows = len(sim.flowset.flows)
        for f in self.flow_series:
            if f >= n_flows:
                from mrc.errors import ConfigError
                raise ConfigError("metrics.flow_series", f, f"no such flow: the workload has {n_flows}")
        self.tmod = sim.sc.transport_module

    def _add(self, name, value):
        self.cols.setdefault(name, []).append(value)

    def sample(self, E, t):
        dt = t - self.t_prev
        if dt <= 0:
            return
        P = E.port
        tx = P["tx_bytes"]
        prev_tx = self.cells.prev_tx
        mine = [(p, float((tx[p] - prev_tx[p]) * 8.0 / (self.rate[p] * (dt / 1e12))),
                 int(P["bytes0"][p] + P["bytes1"][p])) for p in self.ports]
        usum, umax, qsum, qmax = self.cells.update(E, dt / 1e12)
        self._add("t_us", t / US)
        for name, k in self.groups.items():
            self._add(f"util_{name}_mean", float(usum[k] / self.count[k]))
            self._add(f"util_{name}_max", float(umax[k]))
            self._add(f"queue_{name}_mean_bytes", float(qsum[k] / self.count[k]))
            self._add(f"queue_{name}_max_bytes", int(qmax[k]))
        d = E.ctr - self.prev_ctr
        self._add("goodput_gbps", float(d[ST.C_GOODPUT_BYTES] * 8 / (dt / 1e12) / 1e9))
        self._add("drops", int(d[ST.C_DROP_PKTS]))
        self._add("trims", int(d[ST.C_TRIMS]))
        self._add("ecn_marks", int(d[ST.C_ECN_MARKS]))
        self._add("pfc_pauses", int(d[ST.C_PFC_PAUSES]))
        self._add("packets_in_flight", int(E.S[ST.S_INFLIGHT]))
        self._add("paused_ports", int(E.S[ST.S_PAUSED_N]))
        self._add("flows_running", int(E.S[ST.S_FLOWS_STARTED] - E.S[ST.S_FLOWS_ENDED]))
        self._add("retransmissions", int(d[ST.C_RETX]))
        self._add("spurious_retransmissions", int(d[ST.C_SPURIOUS]))
        self._add("timeouts", int(d[ST.C_TIMEOUTS]))
        self._add("nacks_trimmed", int(d[ST.C_NACK_TRIMMED]))
        self._add("nacks_trimmed_lasthop", int(d[ST.C_NACK_TRIMMED_LASTHOP]))
        self._add("ev_assumed_bad", int(d[ST.C_EV_BAD]))
        self._add("ev_good", int(d[ST.C_EV_GOOD]))
        mark = (int(E.S[ST.S_FLOWS_STARTED]), int(E.S[ST.S_FLOWS_ENDED]), int(E.S[ST.S_AFF_MARKS]))
        if self.aff_running and mark != self.aff_mark:  # a pass over the flows only when one started, ended
            self.aff_mark = mark  # or became affected
            running = E.flow["status"] == ST.FLOW_RUNNING
            aff = E.flow["fail_aff"]
            for k in range(len(self.aff_running)):
                self.aff_running[k] = int(np.count_nonzero(running & ((aff & (1 << k)) != 0)))
        for k, ports in enumerate(self.fail_ports):
            w = int(P["watch_hits"][ports].sum())
            self._add(f"failure{k}_packets", w - self.prev_watch[k])
            self.prev_watch[k] = w
            if k < ST.MAX_TRACKED_FAILURES:
                fs = E.fstat[k]
                cur = np.array([fs["aff_sent"], fs["aff_directed"], fs["aff_rx"]], np.int64)
                self._add(f"failure{k}_affected_sent", int(cur[0] - self.prev_fstat[k, 0]))
                self._add(f"failure{k}_affected_on_failed", int(cur[1] - self.prev_fstat[k, 1]))
                self._add(f"failure{k}_affected_goodput_gbps", float((cur[2] - self.prev_fstat[k, 2]) * 8 / (dt / 1e12) / 1e9))
                self._add(f"failure{k}_affected_running", self.aff_running[k])
                self.prev_fstat[k] = cur
        for p, u, q in mine:
            self._add(f"port{p}_util", u)
            self._add(f"port{p}_queue_bytes", q)
        if self.flow_series:
            for name, vals in self.tmod.flow_series(self.sim.T, E, self.flow_series, t).items():
                for f, v in zip(self.flow_series, vals):
                    self._add(f"flow{f}_{name}", v)
        self.prev_ctr = E.ctr.copy()
        self.t_prev = t

    def columns(self) -> dict:
        return {k: np.asarray(v) for k, v in self.cols.items()}


class PlaneSampler:
    """Utilisation and queue occupancy per link group *and plane* (the report's heatmaps), one row per
    (sample, group, plane) in long form: ``planes.csv``."""

    def __init__(self, sim: "Simulation"):
        fp = sim.sc.topo.port
        n_planes = int(sim.sc.topo.n_planes)
        names = list(GROUPS.values())
        gid = np.full(len(fp), -1, np.int64)
        for k, ((tier, d), _) in enumerate(GROUPS.items()):
            gid[(fp["tier"] == tier) & (fp["dir"] == d)] = k
        ok = gid >= 0
        cell = np.where(ok, gid * n_planes + fp["plane"].astype(np.int64), -1)
        n = len(names) * n_planes
        self.cells = sampling.PortCells(cell, n, fp["rate"].astype(np.float64))
        self.count = np.bincount(cell[ok], minlength=n)
        self.keep = np.flatnonzero(self.count)
        self.group = np.array(names, dtype=object)[self.keep // n_planes]
        self.plane = self.keep % n_planes
        self.t_prev = 0
        # per column, one array per sample (a run sampled for long has millions of rows: no Python objects per row)
        self.cols: dict[str, list] = {k: [] for k in ("t_us", "group", "plane", "util_mean", "util_max",
                                                       "queue_mean_bytes", "queue_max_bytes")}

    def sample(self, E, t):
        dt = t - self.t_prev
        if dt <= 0:
            return
        usum, ux, qsum, qx = self.cells.update(E, dt / 1e12)
        um = usum[self.keep] / self.count[self.keep]
        qm = qsum[self.keep] / self.count[self.keep]
        c = self.cols
        c["t_us"].append(np.full(len(self.keep), t / US))
        c["group"].append(self.group)
        c["plane"].append(self.plane)
        c["util_mean"].append(um)
        c["util_max"].append(ux[self.keep])
        c["queue_mean_bytes"].append(qm)
        c["queue_max_bytes"].append(qx[self.keep])
        self.t_prev = t

    def columns(self) -> dict:
        if not self.cols["t_us"]:
            return {k: np.asarray([], dtype=object if k == "group" else None) for k in self.cols}
        return {k: np.concatenate(v) for k, v in self.cols.items()}


class Simulation:
    def __init__(self, sc: Scenario):
        self.sc = sc
        wl, tp, eg = np.random.SeedSequence(sc.seed).spawn(3)
        memory.check_workload(sc)  # the flows' count from the keys, before a single one is drawn
        self.flowset = workloads.build(sc.jobs, sc.topo, np.random.default_rng(wl))
        self.memory = memory.check_run(sc, self.flowset.flows)  # before the transport's and engine's tables
        ep, self.T = build.transport(sc, self.flowset, np.random.default_rng(tp))
        self.E = build.engine(sc, self.flowset, ep, int(eg.generate_state(1, np.uint64)[0]))
        self.F = sc.topo.arrays

    def run(self, progress: bool = False, deadline: float | None = None) -> RunData:
        """Run to the end; with `deadline` (a `time.perf_counter` value) raise `RunTimeout` once the loop passes
        it (checked between chunks of the compiled loop, at most `engine.chunk_events` events apart)."""
        sc = self.sc
        E, F, T = self.E, self.F, self.T
        end_ps = int(round(sc.end_us * US))
        sample_ps = max(1, int(round(auto_sample_us(sc) * US)))
        adaptive = sc.metrics.sample_us is None and sc.duration_us is None
        n_samples = 0
        reserve = 64 + 2 * self.flowset.max_fanout
        n_flows = len(E.flow)
        sampler = Sampler(self)
        planes = PlaneSampler(self)
        # live localisation maps EVs to the paths they name; a hashed entropy names none (only the switches' hash
        # seeds decide its path), so MRC transports with entropy = "hashed" run without it
        live = (localize.Live(sc, T, E) if sc.localize.enabled and len(T.mrc_p) and T.mrc_p[0]["fwd"] != ST.FWD_ECMP
                else None)
        engine.prime(E)
        t_next = sample_ps
        bar = _Progress(progress, end_ps, n_flows)
        wall0 = time.perf_counter()
        while True:
            t_stop = min(t_next, end_ps)
            st = engine.run_chunk(E, F, T, t_stop, sc.chunk_events, reserve)
            if st == ST.ST_GROW:
                E = ST.grow(E, pool=E.S[ST.S_FREE_N] < RESERVE, heap=EVT.heap_capacity(E.heap_t) - E.S[ST.S_HEAP_N] < reserve)
                continue
            bar.update(E, time.perf_counter() - wall0)
            if deadline is not None and time.perf_counter() > deadline:
                bar.close()
                raise RunTimeout(f"stopped at {int(E.S[ST.S_NOW]) / US:,.1f} us of simulated time after "
                                 f"{time.perf_counter() - wall0:.1f} s of wall time (the time limit)")
            if st == ST.ST_BUDGET:
                continue
            if live is not None:
                live.step(T, E, int(E.S[ST.S_NOW]))
            if st == ST.ST_CHUNK:
                sampler.sample(E, t_stop)
                planes.sample(E, t_stop)
                if t_stop >= end_ps:
                    break
                n_samples += 1
                if adaptive and n_samples % ADAPT_EVERY == 0:
                    sample_ps *= 2  # open-ended runs: keep the series a few thousand rows long
                t_next += sample_ps
                continue
            sampler.sample(E, int(E.S[ST.S_NOW]))  # every flow ended, or nothing left to do
            planes.sample(E, int(E.S[ST.S_NOW]))
            break
        wall = time.perf_counter() - wall0
        bar.close()
        self.E = E
        now = int(E.S[ST.S_NOW]) if st != ST.ST_CHUNK else t_stop
        fl = E.flow
        running = fl["status"] == ST.FLOW_RUNNING
        fl["why"][running] = ST.WHY_END_OF_RUN
        fl["why"][fl["status"] == ST.FLOW_PENDING] = ST.WHY_NOT_STARTED
        tmod = sc.transport_module
        extra = tmod.collect(self.T) if hasattr(tmod, "collect") else {}
        fails = [{"index": k, "kind": f.kind, "target": f.target, "at_us": f.at_us, "ports": list(f.ports)}
                 for k, f in enumerate(sc.failures)]
        loc = None
        if live is not None:
            loc, extra["ev_paths"] = live.finish(T, E, now, fails)
        allocated = np.ones(len(E.pkt), bool)
        allocated[E.free[: E.S[ST.S_FREE_N]]] = False
        P = E.port
        data = RunData(
            scenario=sc, flows=fl.copy(), collectives=self.flowset.collectives,
            counters={k: int(E.ctr[v]) for k, v in ST.COUNTER_NAMES.items()},
            samples=sampler.columns(),
            # views into the port table, not copies (the run is over: nothing writes them again; at 131k hosts
            # ten copied columns were 335 MB on top of the run's peak)
            port_stats={k: P[k] for k in ("max_bytes0", "max_bytes1", "drops", "trims", "marks", "tx_bytes",
                                          "paused_ps", "pauses_sent", "watch_hits", "watch_last")},
            failures=_failure_records(sc, P),
            trace=E.trace[: E.S[ST.S_TRACE_N]].copy(),
            sim={"events": int(E.S[ST.S_EVENTS]), "packet_hops": int(E.S[ST.S_HOPS]), "wall_s": wall,
                 "sim_time_us": now / US, "peak_rss_mb": peak_rss_mb(),
                 "peak_packets": int(E.S[ST.S_PEAK_INFLIGHT]),
                 "pool_rows": len(E.pkt), "heap_rows": EVT.heap_capacity(E.heap_t)},
            inflight={"packets": int(allocated.sum()), "bytes": int(E.pkt["size"][allocated].sum())},
            fstat=E.fstat.copy(), extra=extra,
            capture={"rows": E.cap[: E.S[ST.S_CAP_N]].copy(), "hdr": E.cap_hdr[: E.S[ST.S_CAP_N]].copy(),
                     "missed": int(E.S[ST.S_CAP_MISSED])} if sc.capture.on else {},
            localization=loc, plane_samples=planes.columns(),
            jobs=self.flowset.jobs, trig_fired=E.trig["t_fired"].copy(),
        )
        if data.jobs and sc.failures:
            from mrc.emulator import training_metrics

            data.baseline = training_metrics.baseline(sc, progress)
        return data


def _failure_records(sc: Scenario, P) -> list:
    out = []
    topo = sc.topo
    for k, f in enumerate(sc.failures):
        ports = sorted(set(f.ports) | {int(topo.port[q]["peer"]) for q in f.ports})
        last = int(P["watch_last"][ports].max()) if ports else 0
        hits = int(P["watch_hits"][ports].sum()) if ports else 0
        out.append({"index": k, "kind": f.kind, "target": f.target, "at_us": f.at_us, "ports": ports,
                    "duration_us": f.duration_us, "packets_directed": hits,
                    "last_packet_us": last / US if hits else None})
    return out


def peak_rss_mb() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024.0 if sys.platform != "darwin" else r / 2**20


class _Progress:
    """A rich progress bar: simulated time, flows ended, events/s, ETA (only on a terminal, or when asked)."""

    def __init__(self, on: bool, end_ps: int, n_flows: int):
        self.on = on
        self.end_ps = end_ps
        self.n_flows = n_flows
        self.p = None
        if on:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
            self.p = Progress(TextColumn("[bold]emu[/]"), BarColumn(), TextColumn("{task.fields[info]}"),
                              TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), transient=False)
            self.p.start()
            self.task = self.p.add_task("run", total=1000, info="")

    def update(self, E, wall):
        if not self.p:
            return
        now = int(E.S[ST.S_NOW])
        ended = int(E.S[ST.S_FLOWS_ENDED])
        frac = max(now / self.end_ps if self.end_ps else 0.0, ended / self.n_flows if self.n_flows else 0.0)
        ev = int(E.S[ST.S_EVENTS])
        info = (f"sim {now / US:,.1f} us  flows {ended}/{self.n_flows}  "
                f"{ev / wall / 1e6 if wall > 0 else 0:.2f} M ev/s")
        self.p.update(self.task, completed=int(1000 * min(frac, 1.0)), info=info)

    def close(self):
        if self.p:
            self.p.stop()
