"""The event queues: a 4-ary heap of (time, sequence number, event) for the elements, an
indexed binary heap for the endpoint timers.

Every element keeps at most one event pending (htsim's queue and pipe
discipline), so the heap holds one entry per busy element, not one per packet.
Ties in time are broken by a sequence number taken at push time, so the order
of simultaneous events is the order they were scheduled: runs are
deterministic. An event word is ``id * 16 + kind`` (`kind` < 16): a port, pipe,
endpoint, flow or cursor id plus what happened to it. Port events (a packet
leaves a serialiser, a packet reaches the end of a wire) also carry the
packet's row and whether an endpoint handles it next (`event_pkt`), in the
upper bits: the loop prefetches that row while it handles the event before
(`engine.run_chunk`). Ids stay below 2**28 (`MAX_ID`, checked at build).

The scalars live in the engine's int64 array ``S`` (`state.S_HEAP_N`,
`state.S_SEQ`); the heap arrays grow from Python when nearly full
(`engine.run_chunk` returns `state.ST_GROW`).
"""
from __future__ import annotations

import numpy as np

from mrc.core.cachelines import aligned_zeros, prefetch_line
from mrc.emulator._jit import njit

HEAP = np.dtype([("t", np.int64), ("s", np.int64), ("e", np.int64)], align=True)  # a timer-heap entry

KIND_BITS = 4
KIND_MASK = 15

# Event kinds (low 4 bits of the event word).
EVT_TX = 0  # port id: the packet being serialised has left
EVT_PIPE = 1  # port id: the packet at the head of the port's wire reaches the peer
EVT_TIMER = 2  # endpoint id: a transport deadline
EVT_ARRIVAL = 3  # (no id): the next timed flow start
EVT_START = 4  # flow id: a triggered flow starts now
EVT_FAIL = 5  # (no id): the next failure action
EVT_PFC_PAUSE = 6  # port id: a PAUSE frame reaches this (egress) port
EVT_PFC_RESUME = 7  # port id: a RESUME (XON) frame reaches this port
EVT_TRIG = 8  # trigger id: activated by a trigger it depends on (workloads with dependency graphs)
N_KINDS = 9


MAX_ID = 1 << 28
_ID_MASK = MAX_ID - 1
_HINT_SHIFT = 33  # bits 33..62: packet row + 1 (0: none); bit 32: an endpoint handles the packet next


@njit(inline="always")
def event(ident, kind):
    return np.int64(ident) * 16 + kind


@njit(inline="always")
def event_pkt(ident, kind, pkt, endpoint):
    """`event` carrying packet row `pkt` and whether an endpoint (NIC transport) handles it next."""
    return ((np.int64(pkt) + 1) << _HINT_SHIFT) | (np.int64(1 if endpoint else 0) << 32) | (np.int64(ident) * 16 + kind)


@njit(inline="always")
def event_id(ev):
    return (ev >> KIND_BITS) & _ID_MASK


@njit(inline="always")
def event_hint(ev):
    """(packet row or -1, endpoint flag) of an event word."""
    return (ev >> _HINT_SHIFT) - 1, (ev >> 32) & 1


@njit(inline="always")
def _less(h, a, b):
    ta = h[a]["t"]
    tb = h[b]["t"]
    return ta < tb or (ta == tb and h[a]["s"] < h[b]["s"])


# The element heap is 4-ary (children of j: 4j+1 .. 4j+4): half the levels of a
# binary heap. Its keys (times) are an int64 array of their own, `ht`, and the
# sequence numbers and event words a parallel `EVQ` array, `hv`: a removal
# compares four children's (time, sequence number) keys, whose times sit side by
# side in one line of `ht` and whose `hv` entries fill one line (entry j lives at
# index j + ROOT, so every group of four children starts on a 32-byte boundary
# of the line-aligned `ht` and a 64-byte one of `hv`). The timer heap below is small
# and stays binary, with one `HEAP` row per entry.
ARITY = 4
ROOT = 3
EVQ = np.dtype([("s", np.int64), ("e", np.int64)], align=True)


def heap_new(capacity: int):
    """An empty element heap of `capacity` entries: (``ht``, ``hv``)."""
    return aligned_zeros(capacity + ROOT, np.int64), aligned_zeros(capacity + ROOT, EVQ)


def heap_grown(ht, hv, n: int):
    """The heap with twice the capacity, its first `n` entries kept."""
    t2, v2 = heap_new(2 * heap_capacity(ht))
    t2[: n + ROOT] = ht[: n + ROOT]
    v2[: n + ROOT] = hv[: n + ROOT]
    return t2, v2


@njit(inline="always")
def heap_capacity(ht):
    """Entries the element heap holds at most."""
    return ht.shape[0] - ROOT


@njit(inline="always")
def _min_child_scan(ht, hv, c, n):
    m = c
    tm = ht[c + ROOT]
    end = min(c + ARITY, n)
    for k in range(c + 1, end):
        tk = ht[k + ROOT]
        if tk < tm or (tk == tm and hv[k + ROOT]["s"] < hv[m + ROOT]["s"]):
            m = k
            tm = tk
    return m


@njit(inline="always")
def _earlier(ta, sa, tb, sb):
    """(ta, sa) before (tb, sb), computed without branches (`&` and `|` do not short-circuit)."""
    return (ta < tb) | ((ta == tb) & (sa < sb))


@njit(inline="always")
def min_child(ht, hv, c, n):
    """The earliest of entries c .. min(c + ARITY, n) - 1 (c < n)."""
    if c + 3 >= n:
        return _min_child_scan(ht, hv, c, n)
    # four children: a tournament on the times alone (selects, no branches to mispredict);
    # the sequence numbers decide only when the earliest time is shared
    b = c + ROOT
    t0 = ht[b]
    t1 = ht[b + 1]
    t2 = ht[b + 2]
    t3 = ht[b + 3]
    a = c + 1 if t1 < t0 else c
    ta = min(t0, t1)
    d = c + 3 if t3 < t2 else c + 2
    td = min(t2, t3)
    m = d if td < ta else a
    tm = min(ta, td)
    if (t0 == tm) + (t1 == tm) + (t2 == tm) + (t3 == tm) > 1:
        # a shared earliest time (common: synchronised senders of equal packets on equal links):
        # the same tournament on (time, sequence number), again with selects; the four
        # sequence numbers share the one line of `hv` that holds the four children
        s0 = hv[b]["s"]
        s1 = hv[b + 1]["s"]
        s2 = hv[b + 2]["s"]
        s3 = hv[b + 3]["s"]
        x = _earlier(t1, s1, t0, s0)
        a = c + 1 if x else c
        ta = t1 if x else t0
        sa = s1 if x else s0
        y = _earlier(t3, s3, t2, s2)
        d = c + 3 if y else c + 2
        td = t3 if y else t2
        sd = s3 if y else s2
        m = d if _earlier(td, sd, ta, sa) else a
    return m


@njit(inline="always")
def heap_top(ht, hv):
    """(time, sequence number, event word) of the earliest entry (the heap must not be empty)."""
    return ht[ROOT], hv[ROOT]["s"], hv[ROOT]["e"]


@njit(inline="always")
def heap_entry(hv, j):
    """Event word of entry j."""
    return hv[j + ROOT]["e"]


@njit(inline="always")
def heap_push(ht, hv, S, i_n, i_seq, t, ev):
    """Schedule event `ev` at time `t` (the caller made sure there is room)."""
    n = S[i_n]
    seq = S[i_seq]
    S[i_seq] = seq + 1
    S[i_n] = n + 1
    # sift up with a hole
    j = n
    while j > 0:
        p = (j - 1) >> 2
        tp = ht[p + ROOT]
        if tp < t or (tp == t and hv[p + ROOT]["s"] < seq):
            break
        ht[j + ROOT] = tp
        hv[j + ROOT] = hv[p + ROOT]
        j = p
    ht[j + ROOT] = t
    hv[j + ROOT]["s"] = seq
    hv[j + ROOT]["e"] = ev


@njit(inline="always")
def heap_pop(ht, hv, S, i_n):
    """Remove the earliest event; returns (t, ev). The heap must not be empty."""
    t0 = ht[ROOT]
    e0 = hv[ROOT]["e"]
    n = S[i_n] - 1
    S[i_n] = n
    if n > 0:
        lt = ht[n + ROOT]
        ls = hv[n + ROOT]["s"]
        le = hv[n + ROOT]["e"]
        j = 0
        while True:
            c = 4 * j + 1
            if c >= n:
                break
            g = 16 * j + 5  # j's 16 grandchildren: two whole lines of `ht`; ask for them a level early
            if g < n:
                prefetch_line(ht, g + ROOT)
                prefetch_line(ht, g + 8 + ROOT)
            c = min_child(ht, hv, c, n)
            tc = ht[c + ROOT]
            if lt < tc or (lt == tc and ls < hv[c + ROOT]["s"]):
                break
            ht[j + ROOT] = tc
            hv[j + ROOT] = hv[c + ROOT]
            j = c
        ht[j + ROOT] = lt
        hv[j + ROOT]["s"] = ls
        hv[j + ROOT]["e"] = le
    return t0, e0


# ---------------------------------------------------------------- timers: an indexed heap
#
# Endpoint timers move often (pacing, RTO restarts): a second heap keyed by
# endpoint holds at most one entry per endpoint, with its position in `pos`,
# so a timer is moved in place instead of leaving stale entries behind.
# Entries take their sequence number from the same counter as the main heap,
# so the loop merges both queues in one deterministic (time, seq) order.


@njit(inline="always")
def _tmove(h, pos, j, src):
    h[j] = h[src]
    pos[h[j]["e"]] = j


@njit(inline="always")
def _tsift_up(h, pos, j, t, s, e):
    while j > 0:
        p = (j - 1) >> 1
        tp = h[p]["t"]
        if tp < t or (tp == t and h[p]["s"] < s):
            break
        _tmove(h, pos, j, p)
        j = p
    h[j]["t"] = t
    h[j]["s"] = s
    h[j]["e"] = e
    pos[e] = j


@njit(inline="always")
def _tsift_down(h, pos, n, j, t, s, e):
    while True:
        c = 2 * j + 1
        if c >= n:
            break
        if c + 1 < n and _less(h, c + 1, c):
            c += 1
        tc = h[c]["t"]
        if t < tc or (t == tc and s < h[c]["s"]):
            break
        _tmove(h, pos, j, c)
        j = c
    h[j]["t"] = t
    h[j]["s"] = s
    h[j]["e"] = e
    pos[e] = j


@njit(inline="always")
def timer_set(h, pos, S, i_n, i_seq, e, t):
    """Set endpoint e's timer to `t` (insert, or move its entry)."""
    seq = S[i_seq]
    S[i_seq] = seq + 1
    j = pos[e]
    if j < 0:
        n = S[i_n]
        S[i_n] = n + 1
        _tsift_up(h, pos, n, t, seq, e)
        return
    old_t = h[j]["t"]
    if t < old_t:
        _tsift_up(h, pos, j, t, seq, e)
    else:
        _tsift_down(h, pos, S[i_n], j, t, seq, e)


@njit(inline="always")
def timer_remove(h, pos, S, i_n, e):
    j = pos[e]
    if j < 0:
        return
    pos[e] = -1
    n = S[i_n] - 1
    S[i_n] = n
    if j == n:
        return
    t = h[n]["t"]
    s = h[n]["s"]
    last = h[n]["e"]
    if j > 0 and (t < h[(j - 1) >> 1]["t"] or (t == h[(j - 1) >> 1]["t"] and s < h[(j - 1) >> 1]["s"])):
        _tsift_up(h, pos, j, t, s, last)
    else:
        _tsift_down(h, pos, n, j, t, s, last)


@njit(inline="always")
def timer_pop(h, pos, S, i_n):
    """Remove the earliest timer; returns (t, endpoint)."""
    t0 = h[0]["t"]
    e0 = h[0]["e"]
    timer_remove(h, pos, S, i_n, e0)
    return t0, e0
