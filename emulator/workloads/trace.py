"""The ``trace`` workload: a job's collectives replayed from a trace file (format in docs/emulator.md).

A trace is text, one statement per line (``#`` starts a comment)::

    hosts 8
    group dp0 0 1 2 3          # a group: its name, then job-local hosts (ring order)
    group dp1 4 5 6 7
    op 1 allreduce group dp0 bytes 1048576 compute_us 50
    op 2 allreduce group dp1 bytes 1048576 compute_us 50
    op 3 alltoall group all bytes 65536 after 1,2
    op 4 send src 3 dst 4 bytes 262144 after 3 compute_us 20

``hosts N`` comes first (the job needs at least N hosts; ``group all`` is
every one of them). ``op ID KIND ...``: ID a positive integer, unique; KIND
``allreduce`` (the workload's ``algorithm``, ring or hierarchical, chunked as
`collectives.ring`), ``alltoall`` (``bytes`` per member) or ``send`` (``src``,
``dst``); ``bytes B`` (B >= 1); ``after`` a comma-separated list of earlier op
ids; ``compute_us`` the compute that precedes the op on its members. An op
starts ``compute_us`` after every op it is ``after`` has completed (ops with
no ``after``: after the job's ``start_us``); it completes when every member
received its last flow (all-reduce), every share arrived (all-to-all), the
send arrived. The job ends when every op has completed.

Errors name the file, the line and the token.
"""
from __future__ import annotations

import dataclasses
import pathlib

import numpy as np

from mrc.emulator import scenarios
from mrc.emulator.keys import Table
from mrc.emulator.workloads import collectives as CO
from mrc.emulator.workloads.training import NCCL_CHUNK_BYTES, Group, JobGraph
from mrc.errors import ConfigError, read_text
from mrc.units import ps_from_us

OPS = ("allreduce", "alltoall", "send")


@dataclasses.dataclass
class Op:
    id: int
    kind: str
    group: str | None
    src: int
    dst: int
    nbytes: int
    after: list
    compute_us: float
    line: int


@dataclasses.dataclass
class Trace:
    hosts: int
    groups: dict  # name -> list of job-local hosts
    ops: list
    name: str


def parse(text: str, name: str = "<trace>") -> Trace:
    def err(ln, tok, problem):
        raise ConfigError(f"{name}:{ln}", tok, problem)

    def num(ln, tok, v, kind=int):
        try:
            return kind(v)
        except (TypeError, ValueError):
            err(ln, tok, f"{tok} needs a number, got {v!r}")

    n = None
    groups: dict[str, list[int]] = {}
    ops: list[Op] = []
    seen: set[int] = set()
    for ln, raw in enumerate(text.splitlines(), 1):
        tok = raw.split("#", 1)[0].split()
        if not tok:
            continue
        head = tok[0]
        if head == "hosts":
            if n is not None or len(tok) != 2:
                err(ln, raw.strip(), "write 'hosts N' once, before everything else")
            n = num(ln, "hosts", tok[1])
            if n < 2:
                err(ln, "hosts", "a trace needs at least 2 hosts")
            continue
        if n is None:
            err(ln, head, "the trace must start with 'hosts N'")
        if head == "group":
            if len(tok) < 3:
                err(ln, raw.strip(), "write 'group NAME HOST HOST ...'")
            g = tok[1]
            if g in groups or g == "all":
                err(ln, g, "group defined twice (or named 'all', which is every host)")
            hs = [num(ln, "host", x) for x in tok[2:]]
            for h in hs:
                if not 0 <= h < n:
                    err(ln, h, f"host outside 0..{n - 1}")
            if len(set(hs)) != len(hs) or len(hs) < 2:
                err(ln, g, "a group has at least two hosts, none twice")
            groups[g] = hs
        elif head == "op":
            if len(tok) < 3:
                err(ln, raw.strip(), "write 'op ID KIND key value ...'")
            oid = num(ln, "op", tok[1])
            if oid < 1 or oid in seen:
                err(ln, tok[1], "op ids are positive and unique")
            kind = tok[2]
            if kind not in OPS:
                err(ln, kind, f"op kind must be one of {', '.join(OPS)}")
            o = Op(oid, kind, None, -1, -1, 0, [], 0.0, ln)
            k = 3
            while k < len(tok):
                key = tok[k]
                if k + 1 >= len(tok):
                    err(ln, key, f"'{key}' needs a value")
                v = tok[k + 1]
                if key == "group":
                    if v != "all" and v not in groups:
                        err(ln, v, "no such group (define it above with 'group')")
                    o.group = v
                elif key in ("src", "dst"):
                    h = num(ln, key, v)
                    if not 0 <= h < n:
                        err(ln, key, f"host outside 0..{n - 1}")
                    setattr(o, key, h)
                elif key == "bytes":
                    o.nbytes = num(ln, key, v)
                elif key == "compute_us":
                    o.compute_us = num(ln, key, v, float)
                    if not o.compute_us >= 0:
                        err(ln, key, "must be >= 0")
                elif key == "after":
                    for x in v.split(","):
                        d = num(ln, "after", x)
                        if d not in seen:
                            err(ln, "after", f"op {d} is not defined above this line")
                        o.after.append(d)
                else:
                    err(ln, key, "unknown key (group, src, dst, bytes, after, compute_us)")
                k += 2
            if o.nbytes < 1:
                err(ln, "bytes", "every op needs 'bytes B' with B >= 1")
            if kind == "send":
                if o.src < 0 or o.dst < 0 or o.src == o.dst or o.group is not None:
                    err(ln, raw.strip(), "a send needs src and dst (different hosts) and no group")
            elif o.group is None or o.src >= 0 or o.dst >= 0:
                err(ln, raw.strip(), f"an {kind} needs a group and no src / dst")
            seen.add(oid)
            ops.append(o)
        else:
            err(ln, head, "unknown statement (hosts, group, op)")
    if n is None or not ops:
        raise ConfigError(name, None, "a trace needs 'hosts N' and at least one op")
    groups["all"] = list(range(n))
    return Trace(n, groups, ops, name)


def _text(p: pathlib.Path, key: str) -> str:
    try:
        return p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(key, str(p), f"not UTF-8 text (byte {exc.start})") from None


def load(path, key: str = "workload.file") -> Trace:
    p = pathlib.Path(path)
    if not p.is_file():
        raise ConfigError(key, str(path), "no such file")
    return parse(read_text(p, key), p.name)


def parse_keys(t: Table, n: int, base_dir) -> dict:
    f = t.str("file")
    tr = load(scenarios.find_file(f, base_dir, t.key("file")), t.key("file"))
    if tr.hosts > n:
        raise ConfigError(t.key("file"), f, f"the trace has {tr.hosts} hosts, the job {n}")
    p = {"trace": tr, "start_us": t.num("start_us", 0.0, lo=0),
         "algorithm": t.choice("algorithm", ("ring", "hierarchical"), "ring"),
         "local": t.int("local", 1, lo=1),
         "channels": t.int("channels", 1, lo=1, hi=64),
         "chunk_bytes": t.int("chunk_bytes", NCCL_CHUNK_BYTES, lo=1),
         "steps_per_flow": t.int("steps_per_flow", 1, lo=1),
         "connections": t.choice("connections", CO.CONNECTIONS, "reuse")}
    if p["algorithm"] == "hierarchical":
        for o in tr.ops:
            m = len(tr.groups[o.group]) if o.group else 0
            if o.kind == "allreduce" and m % p["local"]:
                raise ConfigError(t.key("local"), p["local"], f"does not divide group {o.group} ({m} hosts) of "
                                  f"{tr.name}:{o.line}")
    return p


def generate(b, job, hosts: np.ndarray, topo, rng) -> JobGraph:
    """Add a trace job's flows to builder `b`; returns its `JobGraph` (one 'iteration': the whole trace)."""
    p = job.params
    tr: Trace = p["trace"]
    j = job.index
    n = tr.hosts
    hosts = np.asarray(hosts, np.int64)[:n]
    ch = p["channels"]

    def comm(name):  # the communicator whose connections an op's messages use (None: a QP pair per message)
        return name if p["connections"] == "reuse" else None

    done: dict[int, int] = {}
    has_dep: set[int] = set()
    start_ps = ps_from_us(p["start_us"])
    # earliest finish on an idle, infinitely fast fabric limited only by NIC bandwidth (the ideal)
    rate = float(topo.port[topo.nic_port(int(hosts[0]), 0)]["rate"]) * topo.n_planes
    finish_ideal: dict[int, tuple] = {}  # op -> (finish ps, compute ps on its critical path)
    sent = np.zeros(n, np.int64)
    groups: list[Group] = []
    for o in tr.ops:
        start = -1
        if o.after:
            start = b.trigger("barrier", len(o.after))
            for d in o.after:
                b.link(done[d], start)
                has_dep.add(d)
        delay = ps_from_us(o.compute_us)
        c = len(b.collectives)
        if o.kind == "send":
            members = np.array([o.src, o.dst])
            done[o.id] = b.trigger("barrier", ch)
            ids, s = CO.send(b, hosts[o.src], hosts[o.dst], o.nbytes, ch, start, delay, p["start_us"], j, c,
                             done[o.id], comm=comm("p2p"))
            per = np.array([s, 0])
        else:
            members = np.asarray(tr.groups[o.group], np.int64)
            m = len(members)
            starts = np.full(m, start)
            delays = np.full(m, delay)
            if o.kind == "allreduce":
                local = p["local"] if p["algorithm"] == "hierarchical" else 1
                sched = CO.ring_schedule(m, o.nbytes, ch, p["chunk_bytes"], p["algorithm"], local)
                done[o.id] = b.trigger("barrier", m * ch)
                ids, per = CO.ring(b, hosts[members], sched, ch, p["steps_per_flow"], starts, delays, p["start_us"], j,
                                   c, done[o.id], comm=comm(f"group:{o.group}"))
            else:
                done[o.id] = b.trigger("barrier", m * (m - 1) * ch)
                ids, per = CO.alltoall(b, hosts[members], o.nbytes, ch, starts, delays, p["start_us"], j, c,
                                       done[o.id], comm=comm(f"group:{o.group}"))
        sent[members] += per
        b.collective(f"job{j}.op{o.id}.{o.kind}", j, o.kind, ids)
        groups.append(Group(f"op{o.id}", o.kind, members, [done[o.id]]))
        t0, c0 = max((finish_ideal[d] for d in o.after), default=(start_ps, 0))
        finish_ideal[o.id] = (t0 + delay + float(np.max(per)) * 8 / rate * 1e12, c0 + delay)
    sinks = [o.id for o in tr.ops if o.id not in has_dep]
    end = b.trigger("barrier", len(sinks))
    for d in sinks:
        b.link(done[d], end)
    t_end, c_crit = max(finish_ideal.values())
    ready = np.full((n, 2), -1, np.int64)
    ready[:, 1] = end
    return JobGraph("trace", hosts, ready, start_ps, np.full((n, 1), c_crit, np.int64), sent[:, None], rate, groups,
                    [], np.array([int(round(t_end - start_ps))], np.int64))
