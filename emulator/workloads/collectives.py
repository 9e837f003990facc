"""Collectives as flows with real dependencies: the building blocks of `training` and `trace` jobs.

Each function adds one collective's flows to a `workloads.Builder` for a
group of hosts. Its members start on a trigger each (``start[i]``, a trigger
id; -1: at ``start_us``), ``delay_ps[i]`` later (the member's compute phase);
``channels`` parallel connections (NCCL's channels: one QP each, so ECMP sees
``channels`` distinct 5-tuples) carry a share each. Given a communicator name
``comm``, a member's messages to one peer on one channel are messages on one
connection (`Builder.connection`, keyed by job, ``comm``, channel, sender and
receiver): NCCL opens a communicator's connections once and reuses them for
every collective, so a QP keeps what it learnt (MRC's EV health, DCQCN's
rate) from one iteration to the next. Without ``comm`` every flow has a QP
pair of its own (htsim's model of a connection matrix).

- `ring_schedule` / `ring`: NCCL's ring algorithm (reduce-scatter then
  all-gather around a ring, 2 (m - 1) steps), or a two-level hierarchical
  ring (reduce-scatter inside local groups, an all-reduce ring across them,
  all-gather inside): a member's step s + 1 starts once it has sent its step
  s and received its predecessor's step s (the data it forwards). The buffer
  moves in loops of at most ``chunk_bytes`` per step, as NCCL's chunks do;
  ``steps_per_flow`` > 1 fuses that many consecutive steps of a member (same
  successor) into one flow: fewer flows for fabrics of 100,000 hosts, at the
  price of a coarser dependency (a fused flow needs only its first step's
  input; a member's result is then complete when the whole collective is, as
  in a pipelined ring the last data reaches everyone only after every link has
  carried its share).
  The collective is done when every member has received its last flow
  (``done``, a barrier trigger of ``m * channels`` activations; ``member_done``:
  per member, the trigger its own last receipt activates, ``member_sent``: the
  one its own last flow's completion activates).
- `alltoall`: every member sends ``bytes / m`` to every other member, one
  flow per pair and channel; each receipt activates ``done`` and, if given,
  ``on_recv[dst]``; each completed send ``on_sent[src]``.
- `send`: point-to-point, one flow per channel; receipt activates ``done`` and
  ``on_recv`` if given, completion ``on_sent``.

Return values are the flow ids (for the job's collective record) and, for
rings, the per-member bytes each member sent (the bandwidth bound of
`training` metrics).
"""
from __future__ import annotations

import numpy as np

from mrc.units import US

# How a job's messages map onto QP pairs: "reuse" (a communicator's connection per peer and channel, as NCCL
# does), or "per-message" (a QP pair for every message, as htsim's connection matrices have it)
CONNECTIONS = ("reuse", "per-message")


def ring_schedule(m: int, nbytes: int, channels: int, chunk_bytes: int, algorithm: str, local: int):
    """The steps of one channel's all-reduce of ``nbytes / channels``: a list of (successor of each member, bytes)."""
    per = -(-nbytes // channels)
    idx = np.arange(m)
    if algorithm == "ring":
        loops = max(1, -(-per // (m * chunk_bytes)))
        step = max(1, -(-per // (loops * m)))
        succ = (idx + 1) % m
        return [(succ, step)] * (2 * (m - 1) * loops)
    g = m // local  # hierarchical: local groups of `local` consecutive members, g of them
    grp, pos = idx // local, idx % local
    loops = max(1, -(-per // (local * chunk_bytes)))
    shard = -(-per // (loops * local))  # what a member owns after the local reduce-scatter
    intra = grp * local + (pos + 1) % local
    inter = ((grp + 1) % g) * local + pos
    one = []
    if local > 1:
        one += [(intra, shard)] * (local - 1)
    if g > 1:
        one += [(inter, max(1, -(-shard // g)))] * (2 * (g - 1))
    if local > 1:
        one += [(intra, shard)] * (local - 1)
    return one * loops


_FUSED: dict = {}  # id(schedule), steps_per_flow -> (schedule, its `fuse`): a job's groups share one schedule


def fuse(schedule, steps_per_flow: int) -> list:
    """The flows of one member and channel: (successor of each member, bytes, steps fused), consecutive steps
    towards the same successor fused up to `steps_per_flow` at a time."""
    hit = _FUSED.get((id(schedule), steps_per_flow))
    if hit is not None and hit[0] is schedule:
        return hit[1]
    out = _fuse(schedule, steps_per_flow)
    if len(_FUSED) > 64:
        _FUSED.clear()
    _FUSED[(id(schedule), steps_per_flow)] = (schedule, out)
    return out


def _fuse(schedule, steps_per_flow: int) -> list:
    out: list = []
    for succ, nb in schedule:
        if out and out[-1][2] < steps_per_flow and out[-1][0] is succ:
            s, tot, k = out[-1]
            out[-1] = (s, tot + nb, k + 1)
        else:
            out.append((succ, nb, 1))
    return out


def coarse(schedule, steps_per_flow: int) -> bool:
    """True if steps are fused: a member's last receipt then no longer implies the whole ring is done, so a
    member's result is taken as complete when the collective is (the pipelined limit)."""
    return any(k > 1 for _, _, k in fuse(schedule, steps_per_flow))


def _conn(b, comm, job, ch, src, dst):
    return -1 if comm is None else b.connection((job, comm, ch, int(src), int(dst)))


def ring(b, hosts, schedule, channels, steps_per_flow, start, delay_ps, start_us, job, coll, done,
         member_done=None, member_sent=None, comm=None):
    """Flows of a ring collective over ``hosts`` (see the module text); returns (flow ids, bytes sent per member).
    ``member_done[i]`` is activated once per channel by member i's last receipt, or, with fused steps
    (`coarse`), once by ``done``. (Flows and triggers are added a step at a time, in bulk: 131,072-host jobs.)"""
    m = len(hosts)
    fused = fuse(schedule, steps_per_flow)
    whole = any(k > 1 for _, _, k in fused)  # `coarse`
    ids = []
    sent = np.zeros(m, np.int64)
    hosts = np.asarray(hosts, np.int64)
    src = hosts.tolist()
    # per member, as numpy columns (131,072-host jobs): a member on a trigger starts delay_ps after it fires,
    # the others at start_us + delay_ps
    start_trig = np.asarray(start, np.int64)
    on_trig = start_trig >= 0
    delay = np.asarray(delay_ps)
    first_trig = np.where(on_trig, start_trig, -1).tolist()
    first_delay = np.where(on_trig, delay.astype(np.int64), 0).tolist()
    first_start = ([-1] * m if on_trig.all() else
                   np.where(on_trig, -1, np.round((start_us + delay / US) * US).astype(np.int64)).tolist())
    for ch in range(channels):
        prev = None  # flow ids of the members' previous flows
        for j, (succ, nb, _k) in enumerate(fused):
            dst = hosts[np.asarray(succ, np.int64)].tolist()
            conn = [-1] * m if comm is None else b.connections((job, comm, ch), src, dst)
            if j == 0:
                cur = b.flows(src, dst, nb, first_start, job, coll, first_trig, first_delay, conn)
            else:
                bar = b.triggers("barrier", m, 2)
                psucc = fused[j - 1][0]
                for i in range(m):
                    # my own previous flow sent; the data my successor forwards next
                    b.set_triggers(prev[i], send_trig=bar[i], recv_trig=bar[psucc[i]])
                cur = b.flows(src, dst, nb, [-1] * m, job, coll, list(bar), [0] * m, conn)
            sent += nb
            ids += cur
            prev = cur
        last = fused[-1][0]
        if member_done is None or whole:  # every last receipt activates ``done`` only
            b.set_triggers_many(prev, send_trig=member_sent, recv_trig=done)
        else:
            for i in range(m):
                b.set_triggers(prev[i], recv_trig=receipt(b, done, member_done[last[i]]),
                               send_trig=None if member_sent is None else member_sent[i])
    if whole and member_done is not None:
        b.links(done, member_done[:m])
    return ids, sent


def receipt(b, done, mine):
    """The trigger a last receipt activates: the collective's ``done``, and the receiver's own if given."""
    if mine is None:
        return done
    t = b.trigger("oneshot")
    b.link(t, done)
    b.link(t, mine)
    return t


def alltoall(b, hosts, nbytes, channels, start, delay_ps, start_us, job, coll, done, on_recv=None, on_sent=None,
             comm=None):
    """Flows of an all-to-all; returns (flow ids, bytes sent per member)."""
    m = len(hosts)
    per = max(1, -(-nbytes // (m * channels)))
    ids = []
    sent = np.zeros(m, np.int64)
    for ch in range(channels):
        for i in range(m):
            for r in range(1, m):
                d = (i + r) % m
                ids.append(_first(b, hosts[i], hosts[d], per, start[i], delay_ps[i], start_us, job, coll,
                                  receipt(b, done, None if on_recv is None else on_recv[d]),
                                  -1 if on_sent is None else on_sent[i], _conn(b, comm, job, ch, hosts[i], hosts[d])))
                sent[i] += per
    return ids, sent


def send(b, src, dst, nbytes, channels, start, delay_ps, start_us, job, coll, done, on_recv=None, on_sent=-1,
         comm=None):
    """Flows of a point-to-point send; returns (flow ids, bytes sent)."""
    per = max(1, -(-nbytes // channels))
    ids = [_first(b, src, dst, per, start, delay_ps, start_us, job, coll, receipt(b, done, on_recv), on_sent,
                  _conn(b, comm, job, ch, src, dst))
           for ch in range(channels)]
    return ids, per * channels


def _first(b, src, dst, nb, start, delay_ps, start_us, job, coll, on_recv, on_sent, conn=-1):
    if start < 0:
        return b.flow(src, dst, nb, start_us + delay_ps / US, job=job, coll=coll, recv_trig=on_recv,
                      send_trig=on_sent, conn=conn)
    return b.flow(src, dst, nb, None, job=job, coll=coll, trigger=start, delay_ps=delay_ps, recv_trig=on_recv,
                  send_trig=on_sent, conn=conn)


def set_triggers(b, f, send_trig=None, recv_trig=None):
    b.set_triggers(f, send_trig=send_trig, recv_trig=recv_trig)
