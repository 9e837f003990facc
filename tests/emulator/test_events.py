"""The event queues: same order as a naive sorted list, ties in scheduling order; timers move in place."""
from __future__ import annotations

import heapq

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mrc.emulator import events as EVT

I_N, I_SEQ, I_TN = 0, 1, 2


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 50)), min_size=1, max_size=300))
@settings(max_examples=60)
def test_heap_matches_heapq_with_ties(ops):
    ht, hv = EVT.heap_new(400)
    S = np.zeros(4, np.int64)
    ref = []
    seq = 0
    for push, t in ops:
        if push or not ref:
            EVT.heap_push(ht, hv, S, I_N, I_SEQ, t, seq * 16 + 3)
            heapq.heappush(ref, (t, seq))
            seq += 1
        else:
            got = EVT.heap_pop(ht, hv, S, I_N)
            t0, s0 = heapq.heappop(ref)
            assert got == (t0, s0 * 16 + 3)
    while ref:
        t0, s0 = heapq.heappop(ref)
        assert EVT.heap_pop(ht, hv, S, I_N) == (t0, s0 * 16 + 3)
    assert S[I_N] == 0


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(-1, 40)), min_size=1, max_size=200))
@settings(max_examples=60)
def test_timer_heap_keeps_one_entry_per_endpoint(ops):
    n_ep = 21
    h = np.zeros(n_ep, EVT.HEAP)
    pos = np.full(n_ep, -1, np.int64)
    S = np.zeros(4, np.int64)
    want = {}  # ep -> (t, seq)
    for ep, t in ops:
        if t < 0:
            EVT.timer_remove(h, pos, S, I_TN, ep)
            want.pop(ep, None)
        else:
            seq = int(S[I_SEQ])
            EVT.timer_set(h, pos, S, I_TN, I_SEQ, ep, t)
            want[ep] = (t, seq)
        assert S[I_TN] == len(want)
        for e, (tt, ss) in want.items():
            assert h[pos[e]]["t"] == tt and h[pos[e]]["s"] == ss and h[pos[e]]["e"] == e
    order = sorted((t, s, e) for e, (t, s) in want.items())
    for t, s, e in order:
        assert EVT.timer_pop(h, pos, S, I_TN) == (t, e)
        assert pos[e] == -1


def test_heap_grows_keeping_its_entries_and_aligns_child_groups():
    ht, hv = EVT.heap_new(8)
    assert EVT.heap_capacity(ht) == 8
    assert (ht.ctypes.data + 8 * (EVT.ROOT + 1)) % 32 == 0  # children 1..4 of the root: one aligned group
    S = np.zeros(4, np.int64)
    times = [5, 3, 9, 3, 1, 7, 2, 8]
    for k, t in enumerate(times):
        EVT.heap_push(ht, hv, S, I_N, I_SEQ, t, k)
    ht, hv = EVT.heap_grown(ht, hv, int(S[I_N]))
    assert EVT.heap_capacity(ht) == 16
    for k, t in enumerate([4, 3]):
        EVT.heap_push(ht, hv, S, I_N, I_SEQ, t, 8 + k)
    got = [EVT.heap_pop(ht, hv, S, I_N) for _ in range(10)]
    want = sorted(((t, k) for k, t in enumerate(times + [4, 3])), key=lambda x: (x[0], x[1]))
    assert got == want
