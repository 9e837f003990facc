"""NSCC: the reaction in each quadrant, MD gating, QuickAdapt, receiver penalty, algorithm none."""
from __future__ import annotations

import pytest

from mrc.core import nscc, setup, tables
from mrc.units import US

MTU = 4096
BASE = 8 * US


def fresh(**cc):
    T = tables.allocate(1, max_ev=8)
    setup.write_cc(T, 0, setup.nscc_profile(rate_bps=100 * 10**9, base_rtt_ps=BASE, **cc))
    T.qp[0]["cc_profile"] = 0
    nscc.cc_init(T, 0, 0)
    T.qp[0]["cwnd"] = 50_000.0
    return T


def feed(T, n, delay, ecn, start=0, step=1 * US, acked=MTU):
    now = start
    for _ in range(n):
        now += step
        nscc.on_ack(T, 0, acked, BASE + delay, ecn, 0, now)
    return now


def test_no_ecn_low_delay_increases_proportionally():
    lo, hi = fresh(), fresh()
    feed(lo, 40, delay=0, ecn=False)
    feed(hi, 40, delay=int(0.6 * 0.75 * BASE), ecn=False)
    assert lo.qp[0]["cwnd"] > hi.qp[0]["cwnd"] > 50_000  # more headroom, faster growth


def test_fast_increase_below_threshold_grows_by_acked_times_scale():
    T = fresh(fast_increase_delay=1 * US, fi_scale=0.25, adjust_bytes_threshold=1 << 40, adjust_period_threshold=1 << 50)
    nscc.on_ack(T, 0, 8000, BASE + 500_000, False, 0, 1 * US)  # 0.5 us of queuing
    assert T.qp[0]["cwnd"] == pytest.approx(50_000 + 8000 * 0.25)


def test_no_ecn_high_delay_fair_increase():
    T = fresh(fi=5.0 * MTU)
    feed(T, 40, delay=2 * BASE, ecn=False)
    assert T.qp[0]["cwnd"] > 50_000


def test_ecn_high_delay_multiplicative_decrease_once_per_base_rtt():
    T = fresh(gamma=0.8, max_md_jump=0.5)
    target = T.cc[0]["target_delay"]
    delay = 2 * target
    nscc.on_ack(T, 0, MTU, BASE + delay, True, 0, BASE)
    first = T.qp[0]["cwnd"]
    assert first < 50_000
    nscc.on_ack(T, 0, MTU, BASE + delay, True, 0, BASE + BASE // 2)  # within one base RTT: no second cut
    assert T.qp[0]["cwnd"] == first
    nscc.on_ack(T, 0, MTU, BASE + delay, True, 0, 2 * BASE + 1)
    assert T.qp[0]["cwnd"] < first


def test_md_never_removes_more_than_max_md_jump():
    T = fresh(gamma=5.0, max_md_jump=0.3)
    nscc.on_ack(T, 0, MTU, BASE + 50 * BASE, True, 0, BASE)
    assert T.qp[0]["cwnd"] == pytest.approx(50_000 * 0.7)


def test_ecn_low_delay_leaves_the_window_alone():
    T = fresh()
    feed(T, 40, delay=0, ecn=True)
    assert T.qp[0]["cwnd"] == 50_000


def test_quick_adapt_cuts_to_what_was_achieved_after_a_loss():
    T = fresh(qa_gate=0)
    c = T.cc[0]
    nscc.on_congestion_loss(T, 0, -1, 1 * US)
    window = c["base_rtt"] + c["target_delay"]
    nscc.on_ack(T, 0, 3 * MTU, BASE, False, 0, window + 1)
    assert T.qp[0]["cwnd"] == 3 * MTU
    assert T.qp[0]["qa_ignore"] == 1


def test_quick_adapt_can_be_disabled():
    T = fresh(qa_gate=0, disable_qa=1)
    c = T.cc[0]
    nscc.on_congestion_loss(T, 0, -1, 1 * US)
    nscc.on_ack(T, 0, 3 * MTU, BASE, False, 0, c["base_rtt"] + c["target_delay"] + 1)
    assert T.qp[0]["cwnd"] > 3 * MTU


def test_receiver_penalty_removes_a_share_of_acked_bytes():
    T = fresh()
    nscc.receiver_penalty(T, 0, 12800, 64)
    assert T.qp[0]["cwnd"] == pytest.approx(50_000 - 6400)
    nscc.receiver_penalty(T, 0, 1 << 30, 127)
    assert T.qp[0]["cwnd"] == T.cc[0]["min_cwnd"]  # never below one MTU


def test_window_stays_within_bounds():
    T = fresh()
    feed(T, 2000, delay=0, ecn=False)
    assert T.qp[0]["cwnd"] == T.cc[0]["max_cwnd"]


def test_algorithm_none_is_a_fixed_window():
    T = tables.allocate(1, max_ev=8)
    setup.write_cc(T, 0, setup.fixed_window_profile(window_bytes=64 * MTU))
    nscc.cc_init(T, 0, 0)
    feed(T, 50, delay=10 * BASE, ecn=True)
    nscc.on_congestion_loss(T, 0, 20 * BASE, 10 * BASE)
    assert T.qp[0]["cwnd"] == 64 * MTU


def test_increases_are_batched_until_an_adjustment_threshold():
    T = fresh(fast_increase_delay=0, adjust_bytes_threshold=8 * MTU, adjust_period_threshold=1 << 50, eta=0.0)
    for n in range(7):
        nscc.on_ack(T, 0, MTU, BASE, False, 0, (n + 1) * 100)
        assert T.qp[0]["cwnd"] == 50_000  # accumulated, not applied
    assert T.qp[0]["inc_acc"] > 0
    nscc.on_ack(T, 0, MTU, BASE, False, 0, 800)  # the 8th MTU: applied as inc_acc / cwnd
    assert T.qp[0]["cwnd"] > 50_000 and T.qp[0]["inc_acc"] == 0.0
    T = fresh(fast_increase_delay=0, adjust_bytes_threshold=1 << 40, adjust_period_threshold=BASE, eta=0.0)
    nscc.on_ack(T, 0, MTU, BASE, False, 0, BASE // 2)
    assert T.qp[0]["cwnd"] == 50_000
    nscc.on_ack(T, 0, MTU, BASE, False, 0, BASE)  # one period after cc_init: applied
    assert T.qp[0]["cwnd"] > 50_000


def test_eta_is_added_per_adjustment_while_increasing():
    T = fresh(fast_increase_delay=0, adjust_bytes_threshold=MTU, eta=1000.0)
    target = T.cc[0]["target_delay"]
    nscc.on_ack(T, 0, MTU, BASE + target - 1, False, 0, 1)  # barely any proportional headroom
    assert T.qp[0]["cwnd"] == pytest.approx(50_000 + 1000, abs=1.0)


def test_base_rtt_only_decreases_and_delay_is_measured_from_it():
    T = fresh()
    nscc.on_ack(T, 0, MTU, BASE - 2 * US, False, 0, 1)
    assert T.qp[0]["base_rtt"] == BASE - 2 * US
    nscc.on_ack(T, 0, MTU, BASE + 50 * US, False, 0, 2)
    assert T.qp[0]["base_rtt"] == BASE - 2 * US
    assert T.qp[0]["avg_delay"] > 0
