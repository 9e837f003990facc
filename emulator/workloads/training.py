"""The ``training`` workload: iterations of compute and collectives over a job's parallelism groups.

A job of n ranks (one per host: a host of the fabric is one GPU with its
multi-plane NIC) is a grid ``tp x ep x dp x pp`` (``rank_order`` says which
dimension varies fastest; Megatron-LM's default order is tensor first). Ranks
sharing every coordinate but one form that dimension's groups. ``placement``
maps ranks to the job's hosts:

- ``contiguous``: rank r on the job's r-th host (host order: T0 by T0);
- ``rail``: the job's hosts taken by their position under their T0 first,
  then T0 by T0: consecutive ranks sit at the same position under different
  T0s (a rail), so the fastest-varying dimension's groups span T0s on one
  rail, as rail-optimised clusters place data-parallel peers;
- ``random``: a seeded permutation.

Iteration k on a host: a compute phase (``compute_us``, times ``1 + U(-jitter,
jitter)`` drawn per host and iteration, times ``straggler_slowdown`` on the
stragglers), then its collectives, all issued together: the data-parallel
all-reduce (``dp_bytes``; ``dp_algorithm`` ring or hierarchical,
`collectives.ring_schedule`), the tensor-parallel all-reduce (``tp_bytes``,
ring), the expert-parallel all-to-all (``ep_bytes`` per rank) and the pipeline
point-to-point sends (``pp_bytes`` of activations to the next stage and of
gradients to the previous one). Iteration k + 1's compute starts when every
input of the host has arrived: its own last receipt of each all-reduce (a
ring member has the whole result once its last all-gather step arrives),
every all-to-all share addressed to it, and its pipeline neighbours' sends;
and when its own sends of iteration k are complete (so it never starts before
its own compute of iteration k ended, and a collective's buffers are free, as
NCCL's kernel ends only when its sends are done).
The first iteration starts at ``start_us``.

``connections = "reuse"`` (the default) sends a rank's messages to one peer of
one communicator (a group's collective) on one channel over one connection,
reused from iteration to iteration as NCCL reuses the connections it opens
when a communicator is created (`collectives`); ``"per-message"`` gives every
message a QP pair of its own (the model of htsim's connection matrices).

`generate` also returns a `JobGraph`: the triggers whose firing times are
each host's iteration boundaries, the compute times, the bytes each host
sent per iteration and the groups' done triggers, from which
`training_metrics` computes iteration times, the ideal and the waste.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from mrc.emulator.keys import Table
from mrc.emulator.workloads import collectives as CO
from mrc.errors import ConfigError
from mrc.units import US, ps_from_us

DIMS = ("tp", "ep", "dp", "pp")
PLACEMENTS = ("contiguous", "rail", "random")
# NCCL's ring all-reduce chunk: NCCL_BUFFSIZE 4 MiB split into NCCL_STEPS = 8 slots, a chunk being
# ALLREDUCE_CHUNKSTEPS = NCCL_STEPS / 2 of them (NVIDIA/nccl src/include/collectives.h, docs env NCCL_BUFFSIZE)
NCCL_CHUNK_BYTES = 2 * 1024 * 1024


@dataclasses.dataclass
class Group:
    name: str  # e.g. "dp3"
    kind: str  # "dp" | "tp" | "ep" | "pp"
    hosts: np.ndarray  # job-local host indices
    done: list  # per iteration: the trigger that fires when the group's collective is complete (or -1)


@dataclasses.dataclass
class JobGraph:
    """What `training_metrics` needs of a training (or trace) job; times in ps, triggers are `Builder` ids."""
    kind: str  # "training" | "trace"
    hosts: np.ndarray  # job-local index -> fabric host
    ready: np.ndarray  # [n, K + 1] trigger whose firing is host i's end of iteration k - 1 (column 0: -1, start)
    start_ps: int
    compute_ps: np.ndarray  # [n, K]
    sent_bytes: np.ndarray  # [n, K]
    host_bps: float  # a host's NIC bandwidth (all planes)
    groups: list  # Group
    stragglers: list  # job-local hosts
    ideal_ps: np.ndarray  # [K]: each iteration on an idle fabric limited only by NIC bandwidth


def parse(t: Table, n: int) -> dict:
    """Validated parameters of a training job over n hosts (keys removed from `t`)."""
    p: dict = {"iterations": t.int("iterations", 3, lo=1, hi=100_000),
               "start_us": t.num("start_us", 0.0, lo=0),
               "compute_us": t.num("compute_us", lo=0),
               "jitter": t.num("jitter", 0.0, lo=0, hi=0.99),
               "straggler_slowdown": t.num("straggler_slowdown", 2.0, lo=1.0),
               "placement": t.choice("placement", PLACEMENTS, "contiguous"),
               "dp_algorithm": t.choice("dp_algorithm", ("ring", "hierarchical"), "ring"),
               "channels": t.int("channels", 1, lo=1, hi=64),
               "chunk_bytes": t.int("chunk_bytes", NCCL_CHUNK_BYTES, lo=1),
               "steps_per_flow": t.int("steps_per_flow", 1, lo=1),
               "connections": t.choice("connections", CO.CONNECTIONS, "reuse")}
    for d in ("tp", "ep", "pp"):
        p[d] = t.int(d, 1, lo=1, hi=n)
    rest = p["tp"] * p["ep"] * p["pp"]
    if n % rest:
        raise ConfigError(t.key("tp"), p["tp"], f"tp x ep x pp = {rest} does not divide the job's {n} hosts")
    p["dp"] = t.int("dp", n // rest, lo=1, hi=n)
    if p["dp"] * rest != n:
        raise ConfigError(t.key("dp"), p["dp"], f"tp x ep x dp x pp = {p['dp'] * rest}, the job has {n} hosts")
    order = t.raw("rank_order", "tp,ep,dp,pp")
    dims = [x.strip() for x in order.split(",")] if isinstance(order, str) else None
    if dims is None or sorted(dims) != sorted(DIMS):
        raise ConfigError(t.key("rank_order"), order, "the four of tp, ep, dp, pp, comma-separated, fastest first")
    p["rank_order"] = dims
    for d in ("dp", "tp", "ep", "pp"):
        p[f"{d}_bytes"] = t.int(f"{d}_bytes", 0, lo=0)
    local = t.int("dp_local", 8 if p["dp"] % 8 == 0 else 1, lo=1)
    if p["dp"] % local:
        raise ConfigError(t.key("dp_local"), local, f"must divide dp = {p['dp']}")
    p["dp_local"] = local
    if not any(p[f"{d}_bytes"] > 0 and p[d] > 1 for d in ("dp", "tp", "ep", "pp")):
        raise ConfigError(t.key("dp_bytes"), p["dp_bytes"], "the job communicates nothing: give dp_bytes, tp_bytes, "
                          "ep_bytes or pp_bytes > 0 with that dimension larger than 1")
    sv = t.raw("stragglers", [])
    if isinstance(sv, list):
        for h in sv:
            if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < n:
                raise ConfigError(t.key("stragglers"), sv, f"a list of job hosts 0..{n - 1}, or a count")
        if len(set(sv)) != len(sv):
            raise ConfigError(t.key("stragglers"), sv, "a host is listed twice")
        p["stragglers"] = list(sv)
    else:
        t.data["stragglers"] = sv
        p["stragglers"] = t.int("stragglers", 0, lo=0, hi=n)
    return p


def rank_hosts(p: dict, hosts: np.ndarray, hosts_per_leaf: int, rng) -> np.ndarray:
    """Fabric host of each rank under the placement."""
    if p["placement"] == "random":
        return rng.permutation(hosts)
    if p["placement"] == "rail":
        key = np.lexsort((hosts // hosts_per_leaf, hosts % hosts_per_leaf))
        return hosts[key]
    return np.asarray(hosts)


def coords(p: dict, n: int) -> dict:
    """Each rank's coordinate along every dimension (rank_order: fastest first)."""
    out = {}
    stride = 1
    for d in p["rank_order"]:
        out[d] = (np.arange(n) // stride) % p[d]
        stride *= p[d]
    return out


def groups_of(p: dict, n: int, dim: str) -> list[np.ndarray]:
    """The ranks of each group of dimension `dim`, ordered by their coordinate along it."""
    c = coords(p, n)
    others = np.zeros(n, np.int64)
    for d in p["rank_order"]:
        if d != dim:
            others = others * p[d] + c[d]
    out = []
    for key in np.unique(others):
        r = np.flatnonzero(others == key)
        out.append(r[np.argsort(c[dim][r], kind="stable")])
    return out


def compute_times(p: dict, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(compute ps per rank and iteration, straggler ranks). Drawn in a fixed order from the job's generator."""
    K = p["iterations"]
    base = p["compute_us"] * US
    jit = rng.uniform(-p["jitter"], p["jitter"], (n, K)) if p["jitter"] > 0 else np.zeros((n, K))
    sv = p["stragglers"]
    slow = np.asarray(sv if isinstance(sv, list) else rng.choice(n, sv, replace=False), np.int64)
    c = base * (1.0 + jit)
    c[slow] *= p["straggler_slowdown"]
    return np.rint(c).astype(np.int64), np.sort(slow)


def generate(b, job, hosts: np.ndarray, topo, rng) -> JobGraph:
    """Add a training job's flows to builder `b`; returns its `JobGraph` (job-local index = rank)."""
    p = job.params
    j = job.index
    n = len(hosts)
    K = p["iterations"]
    ranks = rank_hosts(p, np.asarray(hosts, np.int64), topo.hosts_per_leaf, rng)
    comp, slow = compute_times(p, n, rng)
    ch = p["channels"]

    def comm(name):  # the communicator whose connections a collective's messages use (None: a QP pair per message)
        return name if p["connections"] == "reuse" else None

    # ready[i, k]: the barrier that fires when rank i has every input of iteration k (k >= 1)
    ready = np.full((n, K + 1), -1, np.int64)
    for k in range(1, K + 1):
        ready[:, k] = b.triggers("barrier", n, 0)
    need = np.zeros(n, np.int64)  # inputs per iteration (the same every iteration)
    sent = np.zeros((n, K), np.int64)
    groups: list[Group] = []
    rings = []  # (kind, ranks, schedule)
    for d, algo in (("dp", p["dp_algorithm"]), ("tp", "ring")):
        if p[d] > 1 and p[f"{d}_bytes"] > 0:
            local = p["dp_local"] if algo == "hierarchical" else 1
            sched = CO.ring_schedule(p[d], p[f"{d}_bytes"], ch, p["chunk_bytes"], algo, local)
            whole = CO.coarse(sched, p["steps_per_flow"])
            for g, r in enumerate(groups_of(p, n, d)):
                rings.append((d, g, r, sched))
                # its last receipt per channel (fused steps: the whole collective's end, once), its own sends done
                need[r] += (1 if whole else ch) + ch
    a2a = groups_of(p, n, "ep") if p["ep"] > 1 and p["ep_bytes"] > 0 else []
    for r in a2a:
        need[r] += 2 * (len(r) - 1) * ch  # every share to it, every share of its own sent
    pipes = groups_of(p, n, "pp") if p["pp"] > 1 and p["pp_bytes"] > 0 else []
    for r in pipes:
        need[r[1:]] += 2 * ch  # activations from the previous stage; its gradients sent back
        need[r[:-1]] += 2 * ch  # gradients from the next stage; its activations sent on
    for d, g, r, _ in rings:
        groups.append(Group(f"{d}{g}", d, r, []))
    groups += [Group(f"ep{g}", "ep", r, []) for g, r in enumerate(a2a)]
    groups += [Group(f"pp{g}", "pp", r, []) for g, r in enumerate(pipes)]
    for k in range(K):
        start = ready[:, k]
        delay = comp[:, k]
        nxt = ready[:, k + 1]
        gi = 0
        for d, g, r, sched in rings:
            c = len(b.collectives)
            done = b.trigger("barrier", len(r) * ch)
            ids, s = CO.ring(b, ranks[r], sched, ch, p["steps_per_flow"], start[r], delay[r], p["start_us"], j, c,
                             done, member_done=nxt[r], member_sent=nxt[r], comm=comm(f"{d}{g}"))
            sent[r, k] += s
            b.collective(f"job{j}.it{k}.{d}{g}", j, f"allreduce-{p['dp_algorithm'] if d == 'dp' else 'ring'}", ids)
            groups[gi].done.append(done)
            gi += 1
        for g, r in enumerate(a2a):
            c = len(b.collectives)
            done = b.trigger("barrier", len(r) * (len(r) - 1) * ch)
            ids, s = CO.alltoall(b, ranks[r], p["ep_bytes"], ch, start[r], delay[r], p["start_us"], j, c, done,
                                 nxt[r], nxt[r], comm=comm(f"ep{g}"))
            sent[r, k] += s
            b.collective(f"job{j}.it{k}.ep{g}", j, "alltoall", ids)
            groups[gi].done.append(done)
            gi += 1
        for g, r in enumerate(pipes):
            c = len(b.collectives)
            done = b.trigger("barrier", 2 * (len(r) - 1) * ch)
            ids = []
            for s_ in range(len(r) - 1):
                a, z = r[s_], r[s_ + 1]
                f1, n1 = CO.send(b, ranks[a], ranks[z], p["pp_bytes"], ch, start[a], delay[a], p["start_us"], j, c,
                                 done, nxt[z], nxt[a], comm=comm(f"pp{g}"))
                f2, n2 = CO.send(b, ranks[z], ranks[a], p["pp_bytes"], ch, start[z], delay[z], p["start_us"], j, c,
                                 done, nxt[a], nxt[z], comm=comm(f"pp{g}"))
                sent[a, k] += n1
                sent[z, k] += n2
                ids += f1 + f2
            b.collective(f"job{j}.it{k}.pp{g}", j, "pipeline", ids)
            groups[gi].done.append(done)
            gi += 1
    for k in range(1, K + 1):
        for i, t in enumerate(ready[:, k].tolist()):
            b.trig_count[t] = int(need[i])
    rate = float(topo.port[topo.nic_port(int(ranks[0]), 0)]["rate"]) * topo.n_planes
    # ideal: the slowest compute, then the most bytes a host sends at its NIC's full rate (the collectives'
    # bandwidth bound: 2 (m - 1) / m of the buffer for a ring all-reduce)
    ideal = comp.max(axis=0) + np.rint(sent.max(axis=0) * 8 / rate * 1e12).astype(np.int64)
    return JobGraph("training", ranks, ready, ps_from_us(p["start_us"]), comp, sent, rate, groups,
                    [int(x) for x in slow], ideal)
