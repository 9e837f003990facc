"""Reverse-path (control EV) failures: lost SACKs must not stall a QP or retire good forward EVs.

docs/protocol.md "Reverse path": the responder drops a plane's reverse EV on evidence that its
control packets are lost (a duplicate, a probe after it sent SACKs), an unanswered reverse probe
is not held against the probed EV, and EVs retired by a SACK-less timeout are probed at once
when SACKs flow again.
"""
from __future__ import annotations

import pytest

from mrc.core import dtypes as D
from mrc.testing.harness import Network, Pair, PathFault
from mrc.units import US
from mrc.wire.constants import Opcode

MTU = 4096
BASE_RTT = 4 * US


def _pair(**kw):
    kw.setdefault("n_planes", 1)
    kw.setdefault("evs_per_plane", 8)
    kw.setdefault("ev_active_target", 8)
    return Pair(network=Network(jitter_ps=0), base_rtt_ps=BASE_RTT, **kw)


def _warm(pair):
    """One small transfer, so both ends have a reverse EV on plane 0; returns (responder's, requester's)."""
    assert pair.transfer(4 * MTU, wr_id=1)
    # the requester's reverse EV is set by its first control packet (an answer to a reverse probe)
    # (and nothing is in flight that could still change them: no packet, no reverse probe)
    assert pair.run_until(lambda s: s.qp(0)["rev_ev"][0] >= 0 and s.qp(1)["rev_ev"][0] >= 0
                          and s.qp(1)["rev_probe_slot"] < 0 and not s.queue, max_time_ps=pair.now + 100 * US)
    return [pair.ev_of(i, int(pair.qp(i)["rev_ev"][0])) for i in (1, 0)]


def _sacks_after(pair, t0):
    return [(t, p) for t, p in pair.received[0] if t > t0 and p["opcode"] == Opcode.MRC_RELIABILITY_SACK]


@pytest.mark.parametrize("both_ends", [False, True])
def test_a_dead_reverse_ev_is_left_within_a_few_rtts_and_forward_evs_stay_good(both_ends):
    pair = _pair()
    resp_rev, req_rev = _warm(pair)
    pair.net.faults[resp_rev] = PathFault(blackhole=True)  # every SACK of the responder is lost ...
    if both_ends:  # ... and so is every answer to the responder's reverse probes
        pair.net.faults[req_rev] = PathFault(blackhole=True)
    pair.record = True
    t0 = pair.now
    pair.post_write(0, 256 * MTU, wr_id=2)
    assert pair.run_until(lambda s: len(s.completions()) == 2, max_time_ps=t0 + 5_000 * US)
    assert [int(e["status"]) for e in pair.completions()] == [D.WC_SUCCESS] * 2
    sacks = _sacks_after(pair, t0)
    assert sacks and all(int(p["ev"]) != resp_rev for _, p in sacks)  # SACKs flow on other EVs
    assert sacks[0][0] - t0 <= 5 * BASE_RTT  # the first one within a few RTTs
    q0, q1 = pair.qp(0), pair.qp(1)
    assert q1["rev_rotations"] >= 1
    assert q0["rtx_timeouts"] == 0  # no SACK-less timeout: the stall was short
    states = [int(pair.T.ev[0, k]["state"]) for k in range(8) if pair.ev_of(0, k) != req_rev]
    assert D.EV_ASSUMED_BAD not in states  # lost SACKs retired no forward EV (but the dead one)
    assert int(pair.qp(1)["rev_ev"][0]) < 0 or pair.ev_of(1, int(pair.qp(1)["rev_ev"][0])) != resp_rev


def test_without_rotation_the_same_outage_stalls_until_the_timeout():
    """The previous behaviour (``rev_rotate`` = 0, ``rev_probe_miss_bad`` = 1), for contrast."""
    pair = _pair(rev_rotate=0, rev_probe_miss_bad=1, rto_reprobe=0, timeout=5)  # RTO 32.8 us
    resp_rev, req_rev = _warm(pair)
    pair.net.faults[resp_rev] = PathFault(blackhole=True)
    pair.net.faults[req_rev] = PathFault(blackhole=True)
    pair.record = True
    t0 = pair.now
    pair.post_write(0, 256 * MTU, wr_id=2)
    assert pair.run_until(lambda s: len(s.completions()) == 2, max_time_ps=t0 + 5_000 * US)
    assert pair.qp(0)["rtx_timeouts"] >= 1
    assert _sacks_after(pair, t0)[0][0] - t0 > 8 * BASE_RTT


@pytest.mark.parametrize("reprobe", [1, 0])
def test_evs_retired_by_a_sack_less_timeout_come_back_when_sacks_resume(reprobe):
    # every reverse path of the responder is dead for a while: only a timeout can end the wait
    # (the default ev_min_active, 2 of 8, keeps two EVs for the retransmissions)
    # (re-admission's first probe, one RTT after retirement, is pushed out of the way too: it is
    # lost on the dead reverse path here, and this test is about rto_reprobe)
    pair = _pair(timeout=4, ev_probe_interval_ps=1_000 * US, ev_first_probe_ps=1_000 * US, rto_reprobe=reprobe)
    _warm(pair)
    dead = [pair.ev_of(1, k) for k in range(8)]
    for ev in dead:
        pair.net.faults[ev] = PathFault(blackhole=True)
    pair.post_write(0, 64 * MTU, wr_id=2)
    assert pair.run_until(lambda s: s.qp(0)["rtx_timeouts"] >= 1, max_time_ps=pair.now + 1_000 * US)
    bad = sum(int(pair.T.ev[0, k]["state"]) == D.EV_ASSUMED_BAD for k in range(8))
    assert bad >= 1  # the timeout could not tell lost data from lost SACKs
    for ev in dead:  # the reverse path heals
        del pair.net.faults[ev]
    assert pair.run_until(lambda s: len(s.completions()) == 2, max_time_ps=pair.now + 2_000 * US)
    t_done = pair.now
    pair.run_until(lambda s: False, max_time_ps=t_done + 20 * BASE_RTT)
    states = [int(pair.T.ev[0, k]["state"]) for k in range(8)]
    if reprobe:  # probed at once, answered, back: long before the 1 ms probe interval
        assert D.EV_ASSUMED_BAD not in states and pair.qp(0)["rto_reprobes"] >= 1
    else:
        assert D.EV_ASSUMED_BAD in states


def test_a_forward_blackhole_still_retires_the_forward_ev():
    pair = _pair()
    _warm(pair)
    victim = pair.ev_of(0, 3)
    pair.net.faults[victim] = PathFault(blackhole=True)
    pair.post_write(0, 128 * MTU, wr_id=2)
    assert pair.run_until(lambda s: len(s.completions()) == 2, max_time_ps=pair.now + 5_000 * US)
    assert int(pair.T.ev[0, 3]["state"]) == D.EV_ASSUMED_BAD
    others = [int(pair.T.ev[0, k]["state"]) for k in range(8) if k != 3]
    assert D.EV_ASSUMED_BAD not in others
