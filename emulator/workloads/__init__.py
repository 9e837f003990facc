"""Workloads: the flows of a run, with their start times, triggers and collectives.

A scenario has one ``[workload]`` table, or several ``[[workload]]`` jobs on
disjoint host sets sharing the fabric (each with ``hosts``). Kinds
(`generators`): ``flows``, ``permutation``, ``all-to-all``,
``allreduce-ring``, ``incast``, ``poisson``, ``cm`` (htsim connection
matrices, `cm`), ``training`` (`training`) and ``trace`` (`trace`), whose
collectives `collectives` builds. Host numbers inside a job are job-local (0 .. len(hosts)-1;
without ``hosts`` they are the fabric's host ids).

`build` returns a `FlowSet`: the `state.FLOW` rows (``ep``, ``alone`` and
``ideal`` still to be filled at set-up), the htsim-style triggers, the
collectives (name, flows) whose completion time is reported, and the
training / trace jobs' `training.JobGraph` records.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from mrc.emulator import state as ST
from mrc.errors import ConfigError
from mrc.units import ps_from_us


@dataclasses.dataclass
class Collective:
    name: str
    job: int
    kind: str
    flows: np.ndarray  # flow indices


@dataclasses.dataclass
class FlowSet:
    flows: np.ndarray  # state.FLOW
    trig: np.ndarray  # state.TRIG
    trig_tgt: np.ndarray  # int32: flow f, or trigger u as -(u + 1)
    collectives: list[Collective]
    jobs: dict = dataclasses.field(default_factory=dict)  # job index -> job-level record (training jobs)

    @property
    def max_fanout(self) -> int:
        return int(self.trig["n"].max()) if len(self.trig) else 0


class Builder:
    """Collects flows and triggers of every job (global host ids, integer picoseconds)."""

    KINDS = {"oneshot": ST.TRIG_ONESHOT, "multishot": ST.TRIG_MULTISHOT, "barrier": ST.TRIG_BARRIER}

    # one list per FLOW column, in this order (`build`)
    COLUMNS = ("src", "dst", "size", "start", "job", "coll", "cm_id", "trigger", "send_trig", "recv_trig", "delay",
               "conn")

    def __init__(self):
        self.cols: dict[str, list] = {c: [] for c in self.COLUMNS}
        self.trig_kind: list[int] = []
        self.trig_count: list[int] = []
        self.trig_links: list[tuple[int, int]] = []  # (trigger, trigger it activates)
        self.collectives: list[Collective] = []
        self.jobs: dict[int, object] = {}  # job index -> its job-level record (`training.JobGraph`)
        self.conns: dict[tuple, int] = {}  # connection key -> id (`connection`)
        self._conn_runs: dict[tuple, list] = {}  # (prefix, senders, receivers) -> ids (`connections`, repeated)

    @property
    def n_flows(self) -> int:
        return len(self.cols["src"])

    def flow(self, src, dst, size, start_us=None, job=0, coll=-1, cm_id=0, trigger=-1, send_trig=-1,
             recv_trig=-1, delay_ps=0, conn=-1) -> int:
        """A flow; started at ``start_us``, or by ``trigger`` (then ``delay_ps`` after it fires); a message on
        connection ``conn`` (`connection`) if given, else on a QP pair of its own."""
        if src == dst:
            raise ValueError("flow from a host to itself")
        start = -1 if start_us is None else ps_from_us(start_us)
        for c, v in zip(self.COLUMNS, (int(src), int(dst), int(size), start, job, coll, cm_id, trigger, send_trig,
                                       recv_trig, int(delay_ps), int(conn))):
            self.cols[c].append(v)
        return self.n_flows - 1

    def flows(self, src: list, dst: list, size: int, start_ps: list, job: int, coll: int, trigger: list,
              delay_ps: list, conn: list) -> range:
        """Flows in bulk (lists of Python ints, one entry per flow; ``start_ps`` -1 for a triggered flow), the
        same as that many `flow` calls; returns their ids."""
        n = len(src)
        if any(a == b for a, b in zip(src, dst)):
            raise ValueError("flow from a host to itself")
        f0 = self.n_flows
        c = self.cols
        c["src"] += src
        c["dst"] += dst
        c["size"] += [int(size)] * n
        c["start"] += start_ps
        c["job"] += [job] * n
        c["coll"] += [coll] * n
        c["cm_id"] += [0] * n
        c["trigger"] += trigger
        c["send_trig"] += [-1] * n
        c["recv_trig"] += [-1] * n
        c["delay"] += delay_ps
        c["conn"] += conn
        return range(f0, f0 + n)

    def set_triggers_many(self, flows, send_trig=None, recv_trig=None) -> None:
        """`set_triggers` for every flow of ``flows`` (the range of ids `flows` returned), with a list of
        send-done and / or receive-done triggers, one per flow, or one for all."""
        if not (isinstance(flows, range) and flows.step == 1):
            raise TypeError(f"set_triggers_many takes the range of flow ids Builder.flows returned, not {flows!r}")
        for col, trig in (("send_trig", send_trig), ("recv_trig", recv_trig)):
            if trig is None:
                continue
            vals = [int(trig)] * len(flows) if np.ndim(trig) == 0 else np.asarray(trig, np.int64).tolist()
            if len(vals) != len(flows):
                raise ValueError(f"set_triggers_many: {len(vals)} {col} values for {len(flows)} flows")
            self.cols[col][flows.start:flows.stop] = vals

    def set_triggers(self, f: int, send_trig=None, recv_trig=None) -> None:
        """Set flow f's send-done and / or receive-done trigger."""
        if send_trig is not None:
            self.cols["send_trig"][f] = send_trig
        if recv_trig is not None:
            self.cols["recv_trig"][f] = recv_trig

    def connection(self, key: tuple) -> int:
        """The id of the connection named ``key`` (created on first use): one QP pair whose messages (flows given
        this id) are sent one after another. Its key must name the sender and receiver."""
        return self.conns.setdefault(key, len(self.conns))

    def connections(self, prefix: tuple, src: list, dst: list) -> list:
        """`connection` of ``prefix + (src[i], dst[i])`` for every i. (A job asks for the same list every
        iteration: it is kept, whole, after the first time.)"""
        run = (prefix, tuple(src), tuple(dst))
        ids = self._conn_runs.get(run)
        if ids is None:
            d = self.conns
            ids = self._conn_runs[run] = [d.setdefault(prefix + (a, b), len(d)) for a, b in zip(src, dst)]
        return list(ids)

    def trigger(self, kind: str, count: int = 0) -> int:
        self.trig_kind.append(self.KINDS[kind])
        self.trig_count.append(int(count))
        return len(self.trig_kind) - 1

    def triggers(self, kind: str, n: int, count: int = 0) -> range:
        """n triggers at once (the same as n `trigger` calls); returns their ids."""
        t0 = len(self.trig_kind)
        self.trig_kind += [self.KINDS[kind]] * n
        self.trig_count += [int(count)] * n
        return range(t0, t0 + n)

    def link(self, t: int, u: int) -> None:
        """Trigger t, when it fires, activates trigger u (once per firing, as a flow's trigger would)."""
        self.trig_links.append((int(t), int(u)))

    def links(self, t: int, us) -> None:
        """`link` t to each of ``us``."""
        t = int(t)
        self.trig_links += [(t, u) for u in np.asarray(us, np.int64).tolist()]

    def collective(self, name, job, kind, flows) -> int:
        self.collectives.append(Collective(name, job, kind, np.asarray(flows, np.int64)))
        return len(self.collectives) - 1

    def build(self) -> FlowSet:
        n = self.n_flows
        fl = np.zeros(n, ST.FLOW)
        for c in self.COLUMNS:
            fl[c] = np.array(self.cols[c], dtype=np.int64)
        fl["msg_next"] = -1
        fl["t_start"] = fl["t_send_done"] = fl["t_recv_done"] = -1
        fl["ep"] = -1
        nt = len(self.trig_kind)
        trig = np.zeros(nt, ST.TRIG)
        trig["kind"] = self.trig_kind
        trig["remaining"] = self.trig_count
        trig["t_fired"] = -1
        tgt = np.zeros(0, np.int32)
        if nt:
            # targets of each trigger: its flows (in flow order), then the triggers it activates (-(u + 1))
            links = np.array(self.trig_links, np.int64).reshape(-1, 2)
            owners = np.concatenate([fl["trigger"].astype(np.int64), links[:, 0]])
            targets = np.concatenate([np.arange(n, dtype=np.int64), -(links[:, 1] + 1)])
            order = np.argsort(owners, kind="stable")
            order = order[owners[order] >= 0]
            counts = np.bincount(owners[order], minlength=nt)
            trig["n"] = counts
            trig["first"] = np.concatenate([[0], np.cumsum(counts)[:-1]])
            tgt = targets[order].astype(np.int32)
        return FlowSet(fl, trig, tgt, self.collectives, self.jobs)


def build(jobs, topo, rng: np.random.Generator) -> FlowSet:
    """Flows of every job (see `generators`); checks that job host sets are disjoint."""
    from mrc.emulator.workloads import generators

    b = Builder()
    owner: dict[int, int] = {}
    for job in jobs:
        hosts = job.hosts if job.hosts is not None else list(range(topo.n_hosts))
        for h in hosts:
            if h in owner:
                raise ConfigError(f"{job.where}.hosts", job.hosts_given,
                                  f"host {h} also belongs to workload[{owner[h]}]: jobs need disjoint hosts")
            owner[h] = job.index
        generators.generate(b, job, np.asarray(hosts, np.int64), topo, rng)
    fs = b.build()
    if len(fs.flows) == 0:
        raise ConfigError("workload", None, "the workload has no flows")
    return fs
