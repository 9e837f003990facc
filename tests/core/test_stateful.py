"""Hypothesis stateful tests: the requester/responder invariants under random fault patterns.

Invariants (docs/protocol.md):
- every accepted message is placed exactly once and completes, under any
  finite fault pattern that leaves at least one working path;
- no data packet goes out on an EV that is not GOOD, and a blackholed EV
  gets no new data after its first timeout (both checked by the harness at
  every send, see `mrc.testing.harness`);
- inflight <= cwnd at every send, PSN span <= MPR x 128 after every step;
- PSN wraparound is safe (runs start near 2^24);
- active EVs per plane differ by at most one while all ports are up and
  every plane still has backups; in general each plane has exactly
  min(its share of the active target, its usable EVs) active.

The number of examples is 300 compiled; the pure-Python run of the core
tests (`test_pure_python.py`) sets ``MRC_STATEFUL_EXAMPLES`` lower.
"""
from __future__ import annotations

import os

import numpy as np
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from mrc.core import dtypes as D, evset
from mrc.core.dispatch import set_local_ports
from mrc.testing.harness import Network, Pair, PathFault

MTU = 4096


class Transfers(RuleBasedStateMachine):
    @initialize(
        seed=st.integers(0, 2**16),
        start_psn=st.one_of(st.integers(0, 1000), st.integers(2**24 - 300, 2**24 - 1)),
        n_planes=st.integers(1, 4),
        per_plane=st.sampled_from([4, 8]),
        jitter_ns=st.integers(0, 3000),
    )
    def setup(self, seed, start_psn, n_planes, per_plane, jitter_ns):
        self.net = Network(jitter_ps=jitter_ns * 1000)
        self.pair = Pair(seed=seed, start_psn=start_psn, n_planes=n_planes, evs_per_plane=per_plane,
                         network=self.net, ev_probe_interval_ps=20_000_000, max_wr=64)
        self.posted: dict[int, int] = {}
        self.next_id = 1
        self.n_planes = n_planes
        self.evs = [int(v) for v in self.pair.T.ev[0, : n_planes * per_plane]["ev"]]

    @rule(packets=st.integers(0, 24), extra=st.integers(0, MTU - 1), imm=st.booleans())
    @precondition(lambda self: len(self.posted) < 40)
    def post(self, packets, extra, imm):
        size = packets * MTU + extra
        if imm:
            self.pair.post_recv(1, self.next_id)
        self.pair.post_write(0, size, wr_id=self.next_id, imm=self.next_id if imm else None)
        self.posted[self.next_id] = size
        self.next_id += 1

    @rule(k=st.integers(0, 31), loss=st.sampled_from([0.0, 0.05, 0.3, 1.0]), trim=st.sampled_from([0.0, 0.1]),
          lasthop=st.booleans(), ecn=st.sampled_from([0.0, 0.2]), dup=st.sampled_from([0.0, 0.1]))
    def fault(self, k, loss, trim, lasthop, ecn, dup):
        ev = self.evs[k % len(self.evs)]
        self.net.faults[ev] = PathFault(loss=loss, trim=trim, trim_lasthop=lasthop, ecn=ecn, dup=dup)

    @rule(k=st.integers(0, 31))
    def blackhole(self, k):
        self.net.faults[self.evs[k % len(self.evs)]] = PathFault(blackhole=True)

    @rule(k=st.integers(0, 31), delay_ns=st.integers(0, 20_000))
    def slow_path(self, k, delay_ns):
        self.net.faults[self.evs[k % len(self.evs)]] = PathFault(extra_delay_ps=delay_ns * 1000)

    @rule(steps=st.integers(1, 300))
    def run(self, steps):
        self.pair.pump()
        for _ in range(steps):
            if not self.pair.step():
                break

    @rule(plane=st.integers(0, 3))
    @precondition(lambda self: self.n_planes > 1)
    def port_flap(self, plane):
        plane %= self.n_planes
        T = self.pair.T
        set_local_ports(T, 0, ((1 << self.n_planes) - 1) & ~(1 << plane), self.pair.now)
        self.pair.pump()
        for _ in range(50):
            self.pair.step()
        set_local_ports(T, 0, (1 << self.n_planes) - 1, self.pair.now)

    @invariant()
    def planes_balanced(self):
        if not hasattr(self, "pair"):
            return
        T = self.pair.T
        q = T.qp[0]
        counts = np.zeros(D.MAX_PLANES, dtype=np.int64)
        evset.active_per_plane(T, 0, counts)
        c = counts[: self.n_planes]
        usable = [sum(evset.is_usable(T.ev[0, k]["state"]) for k in range(q["plane_start"][p], q["plane_start"][p + 1]))
                  for p in range(self.n_planes)]
        share = [evset.plane_share(q, p) for p in range(self.n_planes)]
        assert list(c) == [min(s, u) for s, u in zip(share, usable)], (list(c), share, usable)
        if all(u >= s for s, u in zip(share, usable)):
            assert c.max() - c.min() <= 1, c

    def teardown(self):
        if not hasattr(self, "pair"):
            return
        # the faults end; every accepted message must complete, placed exactly once
        self.net.faults.clear()
        pair = self.pair
        ok = pair.run_until(lambda s: len(s.completions()) == len(self.posted), max_steps=400_000)
        done = pair.completions()
        assert ok, f"{len(done)} of {len(self.posted)} completed; qp0={pair.qp(0)['state']}"
        assert sorted(int(e["wr_id"]) for e in done) == sorted(self.posted)
        assert all(int(e["status"]) == D.WC_SUCCESS for e in done)
        assert [int(e["wr_id"]) for e in done] == sorted(self.posted)  # send completions in order
        total_pkts = sum(max(1, -(-s // MTU)) for s in self.posted.values())
        assert pair.qp(1)["rx_pkts"] == total_pkts  # exactly once: duplicates never placed
        assert pair.qp(1)["rx_bytes"] == sum(self.posted.values())
        imms = [e for e in pair.completions(D.E_RECV_IMM)]
        assert [int(e["imm"]) for e in imms] == sorted(int(e["imm"]) for e in imms)  # message order


TestTransfers = Transfers.TestCase
TestTransfers.settings = settings(max_examples=int(os.environ.get("MRC_STATEFUL_EXAMPLES", "300")),
                                  stateful_step_count=30, deadline=None)
