"""Dynamic MPR (mrc.h MRC_QP_CAP_DYNAMIC_MPR; `mrc.core.mpr`): the responder changes its window while
the QP runs, every SACK's SETH ``mpr`` says so, the requester follows, and a shrink never NACKs a
PSN the requester sent under the larger window (docs/protocol.md, "Dynamic MPR")."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrc.core import dtypes as D
from mrc.core import setup
from mrc.core.psn import psn_diff
from mrc.core.setup import fixed_window_profile
from mrc.errors import ConfigError
from mrc.testing.harness import Network, Pair, PathFault
from mrc.units import NS, US
from mrc.wire.constants import NackReason, Opcode

MTU = 4096


def mpr_pair(**kw):
    """A pair whose requester is held by MPR alone (a window far above it, the network at infinite rate)."""
    kw.setdefault("cc", fixed_window_profile(window_bytes=1 << 30))
    kw.setdefault("network", Network(jitter_ps=0))
    return Pair(dynamic_mpr=1, mtu=MTU, window=1024, max_wr=8, **kw)


def span(pair, i=0):
    q = pair.qp(i)
    return psn_diff(int(q["sq_psn"]), int(q["una_psn"]))


def test_a_window_that_shrinks_and_grows_as_the_responder_signals():
    pair = mpr_pair()
    pair.post_write(0, 3000 * MTU)
    spans = []
    assert pair.run_until(lambda p: span(p) == 8 * 128)  # the requester fills MPR 8 (1024 PSNs)
    setup.modify_mpr(pair.T, 1, mpr_dest=2)  # the responder shrinks to 256 PSNs
    assert pair.run_until(lambda p: p.qp(0)["peer_mpr"] == 2)
    # from the first SACK that says so, no new PSN beyond una + 256 (the harness checks every send)
    assert pair.run_until(lambda p: spans.append(span(p)) or span(p) <= 256)
    assert max(spans) <= 8 * 128  # what was in flight drained; nothing new above the old window
    seen = []
    assert pair.run_until(lambda p: seen.append(span(p)) or int(p.qp(0)["una_psn"]) > 1500)
    assert max(seen) == 256  # ... and the window is used in full
    setup.modify_mpr(pair.T, 1, mpr_dest=6)  # grows to 768 PSNs
    assert pair.run_until(lambda p: span(p) == 6 * 128)
    assert pair.qp(0)["peer_mpr"] == 6
    assert pair.run_until(lambda p: len(p.completions()) == 1)
    assert pair.result().completions[0].status == "SUCCESS"
    assert pair.qp(1)["rx_oor"] == 0 and pair.qp(1)["nacks_tx"] == 0 and pair.qp(0)["rtx_pkts"] == 0


def test_the_requester_never_exceeds_its_own_mpr_whatever_is_advertised():
    pair = mpr_pair(mpr=3, mpr_dest=8)
    pair.post_write(0, 1000 * MTU)
    peak = []
    assert pair.run_until(lambda p: peak.append(span(p)) or len(p.completions()) == 1)
    assert max(peak) == 3 * 128 and pair.qp(0)["peer_mpr"] == 8
    setup.modify_mpr(pair.T, 0, mpr=5)  # the requester's own MPR may change too
    pair.post_write(0, 1000 * MTU, wr_id=2)
    peak.clear()
    assert pair.run_until(lambda p: peak.append(span(p)) or len(p.completions()) == 2)
    assert max(peak) == 5 * 128


def collect_data(pair, i=0):
    return [p for _, p in pair.collect(i)]


def test_a_shrink_holds_every_psn_sent_under_the_old_window():
    pair = mpr_pair(mpr=4, mpr_dest=4, ack_every_pkts=1)
    pair.post_write(0, 1000 * MTU)
    data = collect_data(pair, 0)
    assert len(data) == 512  # MPR 4 x 128
    setup.modify_mpr(pair.T, 1, mpr_dest=1)
    r = pair.qp(1)
    assert (int(r["mpr_dest"]), int(r["mpr_track"]), int(r["mpr_hold_psn"])) == (1, 4, 512)
    # the last PSN the old window allowed arrives first: it is held (placed, no NACK)
    pair.deliver(1, data[511])
    (sack,) = collect_data(pair, 1)
    assert sack["opcode"] == Opcode.MRC_RELIABILITY_SACK and sack["mpr"] == 1
    assert r["rx_oor"] == 0 and r["rx_pkts"] == 1
    for p in data[:511]:
        pair.deliver(1, p)
    answers = collect_data(pair, 1)
    assert all(p["opcode"] == Opcode.MRC_RELIABILITY_SACK and p["mpr"] == 1 for p in answers)
    # cack_psn passed the hold: the responder tracks MPR 1 again
    assert int(r["cack_psn"]) == 511 and (int(r["mpr_track"]), r["rx_oor"]) == (1, 0)
    for p in answers:
        pair.deliver(0, p)
    q = pair.qp(0)
    assert q["peer_mpr"] == 1 and int(q["una_psn"]) == 512
    more = collect_data(pair, 0)
    assert [int(p["psn"]) for p in more] == list(range(512, 512 + 128))
    # a PSN beyond the smaller window is now out of range
    far = more[0].copy()
    far["psn"] = 512 + 128
    pair.deliver(1, far)
    (nack,) = collect_data(pair, 1)
    assert nack["opcode"] == Opcode.MRC_RELIABILITY_NACK and nack["nack_reason"] == NackReason.PSN_OOR_WINDOW


def test_shrinks_in_a_row_hold_the_widest_window_any_of_them_allowed():
    pair = mpr_pair(mpr=8, mpr_dest=8, ack_every_pkts=1)
    pair.post_write(0, 2000 * MTU)
    data = collect_data(pair, 0)
    setup.modify_mpr(pair.T, 1, mpr_dest=4)
    setup.modify_mpr(pair.T, 1, mpr_dest=2)  # the first hold (cack + 1 + 8 x 128) still stands
    r = pair.qp(1)
    assert (int(r["mpr_track"]), int(r["mpr_hold_psn"])) == (8, 1024)
    pair.deliver(1, data[1023])
    assert r["rx_oor"] == 0
    setup.modify_mpr(pair.T, 1, mpr_dest=8)  # growing back to the held window ends the hold
    pair.collect(1)
    assert (int(r["mpr_dest"]), int(r["mpr_track"])) == (8, 8)


def test_an_overtaken_sack_does_not_reopen_a_closed_window():
    pair = mpr_pair(mpr=8, mpr_dest=8, ack_every_pkts=1)
    pair.post_write(0, 2000 * MTU)
    data = collect_data(pair, 0)
    pair.deliver(1, data[0])
    (old,) = collect_data(pair, 1)  # cack 0, mpr 8
    setup.modify_mpr(pair.T, 1, mpr_dest=2)
    pair.deliver(1, data[1])
    (new,) = collect_data(pair, 1)  # cack 1, mpr 2
    assert (old["mpr"], new["mpr"]) == (8, 2)
    pair.deliver(0, new)
    pair.deliver(0, old)  # reordered on the way back: older cumulative ack, the old window
    assert pair.qp(0)["peer_mpr"] == 2
    assert collect_data(pair, 0) == []  # 1022 PSNs outstanding, far above 256: nothing new


def test_changing_mpr_needs_dynamic_mpr_and_a_value_the_tables_hold():
    static = Pair(cc=fixed_window_profile(window_bytes=1 << 20))
    with pytest.raises(ConfigError, match=r"qp.mpr_dest = 2: .*dynamic MPR is off"):
        setup.modify_mpr(static.T, 1, mpr_dest=2)
    pair = mpr_pair()
    with pytest.raises(ConfigError, match=r"qp.mpr_dest = 0: must be an integer within \[1, 255\]"):
        setup.modify_mpr(pair.T, 1, mpr_dest=0)
    with pytest.raises(ConfigError, match=r"qp.mpr = 9: x 128 PSNs exceeds the 1024-PSN window"):
        setup.modify_mpr(pair.T, 0, mpr=9)
    with pytest.raises(ConfigError, match=r"qp.mpr_dest = '2'"):
        setup.modify_mpr(pair.T, 1, mpr_dest="2")
    assert int(pair.qp(1)["mpr_dest"]) == 8  # nothing changed


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), changes=st.lists(st.tuples(st.integers(1, 40), st.integers(1, 8)), min_size=1,
                                                    max_size=6))
def test_property_never_more_than_the_current_mpr_and_never_an_oor_nack(seed, changes):
    """Whatever the responder does to its window, whenever, over a lossy reordering network: a new PSN
    is only ever sent inside the window last advertised (the harness checks every send), the responder
    never refuses a PSN the requester was allowed to send, and the write completes."""
    net = Network(jitter_ps=1500 * NS, default=PathFault(loss=0.02, dup=0.02))
    pair = mpr_pair(seed=seed, network=net, ack_every_pkts=2)
    pair.post_write(0, 1500 * MTU)
    pending = sorted(changes)
    t0 = 0

    def step(p):
        nonlocal t0
        while pending and p.now >= t0 + pending[0][0] * US:
            at, value = pending.pop(0)
            t0 += at * US
            setup.modify_mpr(p.T, 1, mpr_dest=value)
        assert p.qp(1)["rx_oor"] == 0
        return len(p.completions()) == 1

    assert pair.run_until(step, max_time_ps=200_000 * US)
    assert pair.result().completions[0].status == "SUCCESS"
    assert pair.qp(1)["rx_bytes"] >= 1500 * MTU and pair.qp(1)["rx_oor"] == 0


def test_mpr_of_zero_in_a_sack_changes_nothing():
    """A SACK whose mpr is 0 (a peer that does not advertise one) leaves the requester's own MPR in force."""
    pair = mpr_pair(mpr=2, mpr_dest=2, ack_every_pkts=1)
    pair.post_write(0, 10 * MTU)
    data = collect_data(pair, 0)
    pair.deliver(1, data[0])
    (sack,) = collect_data(pair, 1)
    sack["mpr"] = 0
    pair.deliver(0, sack)
    assert pair.qp(0)["peer_mpr"] == 0 and D.MPR_UNIT * 2 == 256


def test_rewriting_the_attributes_of_a_running_qp_changes_its_window_as_dynamic_mpr_does():
    """`configure_qp` on a QP in RTR / RTS (an API's RTS -> RTS modify rewrites every attribute) changes
    ``mpr_dest`` through `mpr.set_mpr_dest`, so a smaller value holds what was sent under the larger."""
    pair = mpr_pair(mpr=4, mpr_dest=4, ack_every_pkts=1)
    pair.post_write(0, 1000 * MTU)
    data = collect_data(pair, 0)
    setup.configure_qp(pair.T, 1, 32, 4 * US, dynamic_mpr=1, mtu=MTU, mpr=4, mpr_dest=1, ack_every_pkts=1,
                       ev_active_target=16, emulate_access=1)
    r = pair.qp(1)
    assert (int(r["mpr_dest"]), int(r["mpr_track"]), int(r["mpr_hold_psn"])) == (1, 4, 512)
    pair.deliver(1, data[511])
    assert r["rx_oor"] == 0
