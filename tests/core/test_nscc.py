"""NSCC per UE Specification 1.0.3 3.6.13: one scenario per rule, each failing on the pre-1.0.3 model.

The rules and their sections are listed in `mrc.core.nscc`; defaults in `mrc.core.setup.nscc_profile`.
"""
from __future__ import annotations

import pytest

from mrc.core import nscc, setup, tables
from mrc.units import US

MTU = 4096
BASE = 8 * US
RATE = 100 * 10**9


def fresh(cwnd=50_000.0, inflight=0, **cc):
    T = tables.allocate(1, max_ev=8)
    setup.write_cc(T, 0, setup.nscc_profile(rate_bps=RATE, base_rtt_ps=BASE, **cc))
    T.qp[0]["cc_profile"] = 0
    nscc.cc_init(T, 0, 0)
    T.qp[0]["cwnd"] = cwnd
    T.qp[0]["inflight"] = inflight
    return T


def feed(T, n, delay, ecn, start=0, step=1 * US, acked=MTU, pen=0):
    now = start
    for _ in range(n):
        now += step
        nscc.on_ack(T, 0, acked, BASE + delay, ecn, now, pen)
    return now


# -- 3.6.13.3 parameters ------------------------------------------------------------------------

def test_target_is_three_quarters_of_base_rtt_with_trimming_and_one_without():
    assert setup.nscc_profile(base_rtt_ps=BASE)["target_delay"] == BASE * 3 // 4
    assert setup.nscc_profile(base_rtt_ps=BASE, trimming=False)["target_delay"] == BASE
    assert setup.nscc_profile(base_rtt_ps=BASE, trimming=False)["qa_threshold"] == 4 * BASE


def test_max_window_is_one_and_a_half_bdp_and_the_window_starts_there():
    p = setup.nscc_profile(rate_bps=RATE, base_rtt_ps=BASE, mtu=MTU)
    bdp = RATE * BASE // (8 * 10**12)
    assert p["max_cwnd"] == 3 * bdp // 2
    assert p["init_cwnd"] == p["max_cwnd"]  # Table 3-77: ccc.cwnd starts at MaxWnd


def test_increase_constants_scale_with_bdp():
    # reference network: 100 Gb/s x 12 us; a = BDP / that, b = target / 12 us
    ref = setup.nscc_profile(rate_bps=RATE, base_rtt_ps=12 * US, mtu=MTU)
    assert ref["fi"] == pytest.approx(5 * MTU)
    assert ref["eta"] == pytest.approx(0.15 * MTU)
    assert ref["fi_scale"] == pytest.approx(0.25)
    assert ref["pi_gain"] == pytest.approx(4.0 * MTU * 0.75 / (9 * US))
    big = setup.nscc_profile(rate_bps=8 * RATE, base_rtt_ps=12 * US, mtu=MTU)
    for key in ("fi", "eta", "fi_scale", "pi_gain"):
        assert big[key] == pytest.approx(8 * ref[key])


# -- 3.6.13.5 OnACK: the quadrants --------------------------------------------------------------

def test_no_ecn_low_delay_increases_proportionally():
    lo, hi = fresh(), fresh()
    feed(lo, 40, delay=2 * US, ecn=False)
    feed(hi, 40, delay=int(0.8 * 0.75 * BASE), ecn=False)
    assert lo.qp[0]["cwnd"] > hi.qp[0]["cwnd"] > 50_000  # more headroom, faster growth


def test_fast_increase_needs_a_whole_window_of_clear_bytes_then_replaces_proportional():
    T = fresh(cwnd=40_000.0, adjust_bytes_threshold=1 << 40, adjust_period_threshold=1 << 50)
    fi_scale = T.cc[0]["fi_scale"]
    # 9 x 4096 = 36864 bytes at ~0 delay: less than a window, so no fast increase yet
    feed(T, 9, delay=0, ecn=False)
    assert T.qp[0]["cwnd"] == 40_000.0 and T.qp[0]["increase_mode"] == 0
    assert T.qp[0]["inc_bytes"] > 0  # proportional increase accumulated meanwhile
    # the 10th packet passes a window (40960 > 40000): fast increase, and it replaces proportional
    before = T.qp[0]["inc_bytes"]
    feed(T, 1, delay=0, ecn=False, start=9 * US)
    assert T.qp[0]["cwnd"] == pytest.approx(40_000.0 + MTU * fi_scale)
    assert T.qp[0]["increase_mode"] == 1 and T.qp[0]["inc_bytes"] == before
    # any delay ends it
    feed(T, 1, delay=3 * US, ecn=False, start=10 * US)
    assert T.qp[0]["increase_mode"] == 0 and T.qp[0]["fi_count"] == 0


def test_a_single_low_delay_sample_does_not_fast_increase():
    T = fresh(adjust_bytes_threshold=1 << 40, adjust_period_threshold=1 << 50)
    nscc.on_ack(T, 0, 8000, BASE + 500_000, False, 1 * US)  # 0.5 us of queuing
    assert T.qp[0]["cwnd"] == 50_000.0


def test_no_ecn_high_delay_fair_increase_is_the_same_for_every_window():
    kw = dict(adjust_bytes_threshold=1 << 40, adjust_period_threshold=1 << 50)
    small, large = fresh(cwnd=20_000.0, **kw), fresh(cwnd=80_000.0, **kw)
    for T in (small, large):
        feed(T, 4, delay=2 * BASE, ecn=False, step=BASE // 2)
    fi = small.cc[0]["fi"]
    assert small.qp[0]["inc_bytes"] == pytest.approx(fi * 4 * MTU)
    assert large.qp[0]["inc_bytes"] == pytest.approx(fi * 4 * MTU)


def test_md_uses_the_average_delay_not_the_sample():
    T = fresh(eta=0.0)  # eta: added once per period whatever the quadrant
    # one marked sample far above the target while the average is still low: no decrease
    nscc.on_ack(T, 0, MTU, BASE + 4 * BASE, True, 2 * BASE)
    assert T.qp[0]["avg_delay"] < T.cc[0]["target_delay"]
    assert T.qp[0]["cwnd"] == 50_000.0


def test_md_at_most_once_per_base_rtt_and_by_the_average_excess():
    T = fresh(delay_ewma=1.0, eta=0.0)  # the average is the last sample: easy to predict
    target = T.cc[0]["target_delay"]
    delay = 2 * target
    nscc.on_ack(T, 0, MTU, BASE + delay, True, 2 * BASE)
    first = T.qp[0]["cwnd"]
    assert first == pytest.approx(50_000 * (1 - 0.8 * (delay - target) / delay))
    nscc.on_ack(T, 0, MTU, BASE + delay, True, 2 * BASE + BASE // 2)  # within one base RTT
    assert T.qp[0]["cwnd"] == first
    nscc.on_ack(T, 0, MTU, BASE + delay, True, 3 * BASE + 1)
    assert T.qp[0]["cwnd"] < first


def test_max_md_jump_is_the_smallest_factor():
    T = fresh(gamma=5.0, max_md_jump=0.3, delay_ewma=1.0, eta=0.0)
    nscc.on_ack(T, 0, MTU, BASE + 50 * BASE, True, 2 * BASE)
    assert T.qp[0]["cwnd"] == pytest.approx(50_000 * 0.3)


def test_ecn_low_delay_leaves_the_window_alone():
    T = fresh(eta=0.0)
    feed(T, 40, delay=0, ecn=True)
    assert T.qp[0]["cwnd"] == 50_000


# -- the delay average (htsim update_delay) -----------------------------------------------------

def test_unmarked_high_delay_samples_are_replaced_by_a_quarter_base_rtt():
    T, raw = fresh(), fresh(delay_filter=0)
    feed(T, 200, delay=3 * BASE, ecn=False)
    feed(raw, 200, delay=3 * BASE, ecn=False)
    assert T.qp[0]["avg_delay"] < 0.25 * BASE + 1
    assert raw.qp[0]["avg_delay"] > BASE


def test_marked_or_very_high_samples_always_count():
    marked, huge = fresh(), fresh()
    feed(marked, 200, delay=3 * BASE, ecn=True)
    feed(huge, 200, delay=6 * BASE, ecn=False)  # above 5 base RTTs
    assert marked.qp[0]["avg_delay"] > BASE
    assert huge.qp[0]["avg_delay"] > 2 * BASE


def test_base_rtt_only_decreases_and_max_window_follows_it():
    T = fresh()
    max0 = T.qp[0]["max_wnd"]
    nscc.on_ack(T, 0, MTU, BASE // 2, False, 1)
    assert T.qp[0]["base_rtt"] == BASE // 2
    assert T.qp[0]["max_wnd"] == pytest.approx(max0 / 2)
    nscc.on_ack(T, 0, MTU, BASE + 50 * US, False, 2)
    assert T.qp[0]["base_rtt"] == BASE // 2


def test_no_rtt_sample_moves_nothing_but_the_counters():
    T = fresh()
    nscc.on_ack(T, 0, MTU, -1, False, 1 * US)
    assert T.qp[0]["cwnd"] == 50_000.0 and T.qp[0]["inc_bytes"] == 0.0
    assert T.qp[0]["achieved_bytes"] == MTU


# -- fulfill_adjustment -------------------------------------------------------------------------

def test_increases_are_batched_until_an_adjustment_threshold():
    T = fresh(adjust_bytes_threshold=8 * MTU, adjust_period_threshold=1 << 50)
    for n in range(8):
        nscc.on_ack(T, 0, MTU, BASE + 2 * US, False, (n + 1) * 100)
        assert T.qp[0]["cwnd"] == 50_000  # accumulated, not applied (8 MTU is not *more* than 8 MTU)
    assert T.qp[0]["inc_bytes"] > 0
    nscc.on_ack(T, 0, MTU, BASE + 2 * US, False, 900)
    assert T.qp[0]["cwnd"] > 50_000 and T.qp[0]["inc_bytes"] == 0.0


def test_eta_is_added_once_per_period_only():
    T = fresh(adjust_bytes_threshold=MTU // 2, adjust_period_threshold=BASE, eta=1000.0, fi=0.0)
    target = T.cc[0]["target_delay"]
    nscc.on_ack(T, 0, MTU, BASE + target + 1, False, BASE // 4)  # fair increase of 0: only eta could move it
    assert T.qp[0]["cwnd"] == 50_000.0  # bytes threshold passed but not the period: no eta
    nscc.on_ack(T, 0, MTU, BASE + target + 1, False, BASE)
    assert T.qp[0]["cwnd"] == pytest.approx(51_000.0)


# -- QuickAdapt ---------------------------------------------------------------------------------

def test_quick_adapt_after_a_trim_sets_the_window_to_what_was_achieved():
    T = fresh(qa_gate=0, inflight=30_000)
    c = T.cc[0]
    nscc.on_ack(T, 0, MTU, BASE, False, 1 * US)  # opens the first QuickAdapt period
    nscc.on_trim(T, 0, MTU, -1, 2 * US)
    end = T.qp[0]["qa_endtime"]
    nscc.on_ack(T, 0, 3 * MTU, BASE, False, end - 1)
    nscc.on_trim(T, 0, MTU, -1, end)
    assert T.qp[0]["cwnd"] == 3 * MTU
    assert T.qp[0]["bytes_to_ignore"] == 30_000
    assert c["base_rtt"] + c["target_delay"] == end - 1 * US


def test_quick_adapt_ignores_only_marked_feedback_for_what_was_in_flight():
    T = fresh(qa_gate=0, inflight=20_000)
    T.qp[0]["bytes_to_ignore"] = 20_000
    T.qp[0]["qa_endtime"] = 10**12
    T.qp[0]["cwnd"] = 12_000.0
    nscc.on_ack(T, 0, MTU, BASE + 4 * BASE, True, 3 * BASE)  # marked, above target: ignored (no MD)
    assert T.qp[0]["cwnd"] == 12_000.0 and T.qp[0]["bytes_ignored"] == MTU
    T.qp[0]["avg_delay"] = 2 * BASE
    nscc.on_ack(T, 0, MTU, BASE + 1 * US, False, 3 * BASE + 1)  # unmarked: processed
    assert T.qp[0]["cwnd"] > 12_000.0


def test_quick_adapt_fires_on_a_sample_above_its_threshold():
    T = fresh(qa_gate=0)
    thr = T.cc[0]["qa_threshold"]
    nscc.on_ack(T, 0, MTU, BASE, False, 1 * US)  # opens the first period
    end = T.qp[0]["qa_endtime"]
    nscc.on_ack(T, 0, MTU, BASE, False, end - 1)
    nscc.on_ack(T, 0, MTU, BASE + thr + 1, False, end)
    assert T.qp[0]["cwnd"] == pytest.approx(2 * MTU)  # what the period achieved


def test_quick_adapt_can_be_disabled():
    T = fresh(qa_gate=0, disable_qa=1)
    nscc.on_ack(T, 0, MTU, BASE, False, 1 * US)
    nscc.on_trim(T, 0, MTU, -1, 2 * US)
    nscc.on_ack(T, 0, 3 * MTU, BASE, False, 100 * US)
    assert T.qp[0]["cwnd"] > 3 * MTU


# -- trims and losses (OnNACK, OnInferredLoss) --------------------------------------------------

def test_trim_takes_the_packets_bytes_off_the_window_whatever_its_rtt():
    for rtt in (-1, BASE, 20 * BASE):
        T = fresh()
        nscc.on_trim(T, 0, 4160, rtt, 1 * US)
        assert T.qp[0]["cwnd"] == pytest.approx(50_000 - 4160)
        assert T.qp[0]["trigger_qa"] == 1


def test_trim_feeds_one_base_rtt_into_the_delay_average():
    T = fresh(delay_ewma=1.0)
    nscc.on_trim(T, 0, MTU, -1, 1 * US)
    assert T.qp[0]["avg_delay"] == pytest.approx(BASE)


def test_inferred_loss_takes_the_packets_bytes_off_and_does_not_trigger_quick_adapt():
    T = fresh()
    nscc.on_loss(T, 0, 4160)
    assert T.qp[0]["cwnd"] == pytest.approx(50_000 - 4160)
    assert T.qp[0]["trigger_qa"] == 0
    nscc.on_loss(T, 0, 1 << 30)
    assert T.qp[0]["cwnd"] == T.cc[0]["min_cwnd"]


# -- destination flow control (3.6.13.2) ---------------------------------------------------------

def test_receiver_penalty_holds_the_window_at_inflight_less_a_share_and_stops_increases():
    T = fresh(inflight=30_000)
    nscc.on_ack(T, 0, 12_800, BASE, False, 1 * US, 64)
    assert T.qp[0]["cwnd"] == pytest.approx(30_000 - 6400)
    assert T.qp[0]["inc_bytes"] == 0.0  # no proportional increase while penalised
    assert T.qp[0]["saved_cwnd"] == 50_000.0
    nscc.on_ack(T, 0, 1 << 30, BASE, False, 2 * US, 127)
    assert T.qp[0]["cwnd"] == T.cc[0]["min_cwnd"]  # never below one MTU


def test_restore_cwnd_brings_back_the_saved_window():
    T = fresh(inflight=30_000)
    nscc.on_ack(T, 0, MTU, BASE, False, 1 * US, 64)
    nscc.on_ack(T, 0, MTU, BASE, False, 2 * US, 0, True)
    assert T.qp[0]["cwnd"] == 50_000.0 and T.qp[0]["saved_cwnd"] == 0.0


# -- bounds and algorithm none ------------------------------------------------------------------

def test_window_stays_within_bounds():
    T = fresh()
    feed(T, 2000, delay=0, ecn=False)
    assert T.qp[0]["cwnd"] == T.qp[0]["max_wnd"] == T.cc[0]["max_cwnd"]


def test_algorithm_none_is_a_fixed_window():
    T = tables.allocate(1, max_ev=8)
    setup.write_cc(T, 0, setup.fixed_window_profile(window_bytes=64 * MTU))
    nscc.cc_init(T, 0, 0)
    feed(T, 50, delay=10 * BASE, ecn=True)
    nscc.on_trim(T, 0, MTU, 20 * BASE, 10 * BASE)
    nscc.on_loss(T, 0, MTU)
    assert T.qp[0]["cwnd"] == 64 * MTU
