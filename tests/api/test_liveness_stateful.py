"""Hypothesis stateful test: whatever arrives, every QP completes its work or reaches ERROR within a bound.

Two devices on `SimNet`, one connected QP pair, writes posted both ways; between steps anything may
happen: forged port status updates from either peer's address (any mask, any port), local ports going
down and up, EV states set by the controller (GOOD, ASSUMED_BAD, DENIED), packet loss from none to all.
Checked at every step of the network (after every device has sent what it could): a QP in RTS with send
work has a deadline armed (never silent). Checked at the end, once the hostile phase is over (the
network loses nothing, but ports, EV states and claims stay as they were left): within `BOUND` of
simulated time every posted write has completed, successfully or with an error status.

The bound: the retry schedule of the QPs (timeout 4 = 16.4 us, 3 linear + 3 doubling retries: ~280 us
from the last progress) plus the EV probe interval (100 us) for paths retired during the losses; 50 ms
leaves room for several rounds of both.
"""
from __future__ import annotations

import os

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from mrc.units import MS, US

from tests.api.test_liveness import never_silent, run_checked, spoof
from tests.twodevices import RTS, TwoDevices, ctl_evs

MTU = 4096
BOUND = 50 * MS
EV_COUNT = 8


class HostilePeers(RuleBasedStateMachine):
    @initialize(seed=st.integers(0, 2**16), floor=st.sampled_from([1, 1, 0]))
    def setup(self, seed, floor):
        self.env = TwoDevices(ports=2, ev_count=EV_COUNT, seed=seed, net_seed=seed + 1)
        self.conn = self.env.connect(rts=dict(RTS, retry_linear=3, retry_exp=3, psu_floor=floor))
        a, b = self.env.a, self.env.b
        self.bufs = {"A": bytearray(64 * MTU), "B": bytearray(64 * MTU)}
        self.mrs = {"A": a.reg_mr(self.bufs["A"]), "B": b.reg_mr(self.bufs["B"])}
        self.posted = {"A": 0, "B": 0}
        self.done = {"A": [], "B": []}

    def _poll(self):
        self.done["A"].extend(self.conn.cqa.poll(1024))
        self.done["B"].extend(self.conn.cqb.poll(1024))

    @rule(from_a=st.booleans(), packets=st.integers(1, 16), count=st.integers(1, 6))
    def post(self, from_a, packets, count):
        """`count` writes at once: more than the window lets out, so work waits behind what is in flight."""
        side, other = ("A", "B") if from_a else ("B", "A")
        qp = self.conn.qa if from_a else self.conn.qb
        for _ in range(count):
            if qp.state != "RTS" or self.posted[side] - len(self.done[side]) >= 32:
                return
            size = packets * MTU - 100
            off = (self.posted[side] % 4) * 16 * MTU
            self.posted[side] += 1
            qp.post_write(self.posted[side], (self.mrs[side].addr + off, size, self.mrs[side].lkey),
                          remote_addr=self.mrs[other].addr + off, rkey=self.mrs[other].rkey)

    @rule(to_a=st.booleans(), mask=st.integers(0, 3), port=st.integers(1, 2))
    def forged_port_status(self, to_a, mask, port):
        spoof(self.env, src="B" if to_a else "A", dest="A" if to_a else "B", mask=mask, port=port)

    @rule(on_a=st.booleans(), port=st.integers(1, 2), up=st.booleans())
    def port(self, on_a, port, up):
        (self.env.a if on_a else self.env.b).set_port_state(port, up, now=self.env.net.now)

    @rule(on_a=st.booleans(), k=st.integers(0, EV_COUNT - 1), state=st.sampled_from(["GOOD", "ASSUMED_BAD", "DENIED"]))
    def ev_state(self, on_a, k, state):
        dev = self.env.a if on_a else self.env.b
        dev.ctl.modify_ev_state(1, ctl_evs(0 if on_a else 1, EV_COUNT)[k], state, now=self.env.net.now)

    @rule(loss=st.sampled_from([0.0, 0.05, 0.5, 1.0]))
    def losses(self, loss):
        self.env.net.loss = loss

    @rule(us=st.integers(1, 3000))
    def run(self, us):
        run_checked(self.env, self.conn, lambda: False, self.env.net.now + us * US)
        self._poll()

    @invariant()
    def not_silent(self):
        if hasattr(self, "env"):
            self.env.net.pump()
            never_silent(self.env, self.conn)

    def teardown(self):
        if not hasattr(self, "env"):
            return
        env = self.env
        env.net.loss = 0.0

        def all_completed():
            self._poll()
            return all(len(self.done[s]) == self.posted[s] for s in "AB")

        start = env.net.now
        assert run_checked(env, self.conn, all_completed, start + BOUND), (
            f"after {(env.net.now - start) / US:.0f} us: A {len(self.done['A'])}/{self.posted['A']} "
            f"({self.conn.qa.state}), B {len(self.done['B'])}/{self.posted['B']} ({self.conn.qb.state})")
        for s in "AB":
            assert sorted(c.wr_id for c in self.done[s]) == list(range(1, self.posted[s] + 1))


TestHostilePeers = HostilePeers.TestCase
TestHostilePeers.settings = settings(max_examples=int(os.environ.get("MRC_LIVENESS_EXAMPLES", "60")),
                                     stateful_step_count=25, deadline=None)
