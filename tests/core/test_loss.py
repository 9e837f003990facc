"""Loss recovery: selective retransmission, trim NACKs, silent loss, probes, RTO, QP error."""
from __future__ import annotations

import pytest

from mrc.core import dispatch, dtypes as D, evset
from mrc.core.requester import tx_slot
from mrc.core.setup import fixed_window_profile
from mrc.testing.harness import Pair
from mrc.units import US
from mrc.wire.constants import NackReason, Opcode

MTU = 4096


def sent(pair, i=0):
    return [p for _, p in pair.collect(i)]


def acks_back(pair):
    """Deliver everything QP 1 wants to send to QP 0."""
    for p in sent(pair, 1):
        pair.deliver(0, p)


def slot_of(pair, ev, i=0):
    return evset.find_slot(pair.T, i, int(ev))


def ev_state(pair, ev, i=0):
    return int(pair.T.ev[i, slot_of(pair, ev, i)]["state"])


def nack(pair, pkt, reason):
    n = pkt.copy()
    n["opcode"] = Opcode.MRC_RELIABILITY_NACK
    n["dqpn"] = pair.qp(1)["dest_qpn"]
    n["nack_reason"] = reason
    n["nack_psn"] = pkt["psn"]
    n["entropy"] = pkt["ev"]
    n["mpr"] = 0
    return n


def test_selective_retransmission_of_exactly_the_holes():
    pair = Pair(ack_every_pkts=1, cc=fixed_window_profile(window_bytes=1 << 30))
    pair.post_write(0, 8 * MTU)
    pkts = sent(pair)
    pair.advance(2 * US)
    for p in pkts:
        if p["psn"] not in (2, 5):
            pair.deliver(1, p)
            acks_back(pair)
    pair.advance(pair.now + 10 * pair.qp(0)["base_rtt"])
    again = pair.collect(0)
    assert sorted(int(p["psn"]) for k, p in again if k == dispatch.K_RTX) == [2, 5]
    assert all(k != dispatch.K_DATA for k, _ in again)


def test_trim_nack_retransmits_at_once_and_skips_the_ev_once():
    pair = Pair(n_planes=1, evs_per_plane=8, ev_active_target=8, cc=fixed_window_profile(window_bytes=1 << 30))
    pair.post_write(0, 4 * MTU)
    pkts = sent(pair)
    victim = pkts[1]
    pair.deliver(0, nack(pair, victim, NackReason.TRIMMED))
    assert ev_state(pair, victim["ev"]) == D.EV_SKIP
    (k, r), = pair.collect(0)  # immediately, no timer needed
    assert k == dispatch.K_RTX and r["psn"] == victim["psn"] and r["rtx"] == 1
    assert r["ev"] != victim["ev"]
    # the next rotation passes over the SKIP EV once and makes it GOOD again
    pair.post_write(0, 16 * MTU, wr_id=2)
    evs = [int(p["ev"]) for p in sent(pair)]
    assert evs.count(int(victim["ev"])) == 1  # skipped in one of the two rotations
    assert ev_state(pair, victim["ev"]) == D.EV_GOOD


def test_trimmed_lasthop_retransmits_without_ev_penalty():
    pair = Pair()
    pair.post_write(0, 2 * MTU)
    pkts = sent(pair)
    pair.deliver(0, nack(pair, pkts[0], NackReason.TRIMMED_LASTHOP))
    assert ev_state(pair, pkts[0]["ev"]) == D.EV_GOOD
    (k, r), = pair.collect(0)
    assert k == dispatch.K_RTX and r["psn"] == 0
    assert pair.qp(0)["trims_rx"] == 1


def test_a_sack_for_a_packet_already_marked_lost_cancels_its_retransmission():
    """PSN 2 is trimmed (NACK: LOST, waiting for its retransmission), yet a copy arrives and the responder's
    SACK reports it before the requester resends: no retransmission goes out, the window is credited once."""
    pair = Pair(ack_every_pkts=100, ack_every_bytes=1 << 30, cc=fixed_window_profile(window_bytes=1 << 30))
    pair.post_write(0, 4 * MTU)
    pkts = sent(pair)
    pair.deliver(0, nack(pair, pkts[2], NackReason.TRIMMED_LASTHOP))
    q = pair.qp(0)
    assert tx_slot(pair.T, pair.qp(0), 2)["state"] == D.TX_LOST and q["n_lost"] == 1
    inflight = int(q["inflight"])
    for p in (pkts[0], pkts[2], pkts[3]):  # PSN 1 still missing: 2 and 3 only in the bitmap
        pair.deliver(1, p)
    pkts[3]["ackreq"] = 1
    pair.deliver(1, pkts[3])  # a duplicate asks for the SACK now
    sacks = [p for p in sent(pair, 1) if p["opcode"] == Opcode.MRC_RELIABILITY_SACK]
    assert sacks and int(sacks[-1]["cack_psn"]) == 0 and int(sacks[-1]["sack_bitmap"]) == 0b110  # bit b: PSN cack + 1 + b
    for s in sacks:
        pair.deliver(0, s)
    assert tx_slot(pair.T, pair.qp(0), 2)["state"] == D.TX_SACKED and q["n_lost"] == 0
    assert int(q["inflight"]) == inflight - 2 * MTU  # PSN 0 and 3; PSN 2 had left flight when marked lost
    again = pair.collect(0)
    assert all(k != dispatch.K_RTX for k, _ in again), [(k, int(p["psn"])) for k, p in again]
    assert q["rtx_pkts"] == 0 and q["rtx_spurious"] == 0 and q["lost_acked"] == 1  # declared lost, then acknowledged


@pytest.mark.parametrize("reason", [NackReason.NO_BITMAP, NackReason.NO_PKT_BUFFER, NackReason.NO_RESOURCE])
def test_resource_nacks_retransmit_without_ev_penalty(reason):
    pair = Pair()
    pair.post_write(0, 2 * MTU)
    pkts = sent(pair)
    cwnd = pair.qp(0)["cwnd"]
    pair.deliver(0, nack(pair, pkts[1], reason))
    assert ev_state(pair, pkts[1]["ev"]) == D.EV_GOOD
    # UE 1.0.3 3.6.13.5 NSCC.OnNACK: only trims move the window or trigger QuickAdapt
    assert pair.qp(0)["trigger_qa"] == 0 and pair.qp(0)["cwnd"] == cwnd
    (k, r), = pair.collect(0)
    assert k == dispatch.K_RTX and r["psn"] == 1


def test_psn_oor_window_resends_and_takes_no_mpr_from_the_nack():
    # NETH has no mpr field (docs/wire.md): whatever a NACK's record says there, the requester
    # resends the PSN and keeps the window it learnt from the SACKs' SETH
    pair = Pair(cc=fixed_window_profile(window_bytes=1 << 30))
    pair.post_write(0, 300 * MTU)
    pkts = sent(pair)
    n = nack(pair, pkts[200], NackReason.PSN_OOR_WINDOW)
    n["mpr"] = 1  # not on the wire: must not matter
    pair.deliver(0, n)
    assert pair.qp(0)["peer_mpr"] == 0
    (k, r), = pair.collect(0)
    assert k == dispatch.K_RTX and r["psn"] == 200


def test_unexp_event_nack_is_fatal():
    pair = Pair()
    pair.post_write(0, MTU, wr_id=5)
    (p,) = sent(pair)
    pair.deliver(0, nack(pair, p, NackReason.UNEXP_EVENT))
    assert pair.qp(0)["state"] == D.QPS_ERROR
    assert pair.completions()[0]["wr_id"] == 5


def test_ecn_marked_sack_skips_the_ev():
    pair = Pair(ack_every_pkts=1)
    pair.post_write(0, MTU)
    (p,) = sent(pair)
    p2 = p.copy()
    p2["ecn"] = 3
    pair.deliver(1, p2)
    acks_back(pair)
    assert ev_state(pair, p["ev"]) == D.EV_SKIP
    assert pair.qp(0)["ecn_sacks_rx"] == 1


def test_silent_loss_makes_the_ev_assumed_bad_and_reports_it():
    pair = Pair(ack_every_pkts=1, cc=fixed_window_profile(window_bytes=1 << 30))
    pair.post_write(0, 6 * MTU)
    pkts = sent(pair)
    lost = pkts[1]
    pair.advance(2 * US)
    for p in pkts:
        if p is not lost:
            pair.deliver(1, p)
            acks_back(pair)
    pair.advance(pair.now + 10 * pair.qp(0)["base_rtt"])
    assert ev_state(pair, lost["ev"]) == D.EV_ASSUMED_BAD
    ev_events = [e for e in pair.events if e["kind"] == D.E_EV_STATE]
    assert [(int(e["ev"]), int(e["ev_state"]), int(e["drop_count"])) for e in ev_events] == [(int(lost["ev"]), D.EV_ASSUMED_BAD, 1)]
    # and it carries no new data
    pair.post_write(0, 64 * MTU, wr_id=2)
    assert int(lost["ev"]) not in [int(p["ev"]) for p in sent(pair)]


def test_blackholed_ev_is_probed_and_comes_back_after_two_successes():
    pair = Pair(ack_every_pkts=1, ev_probe_interval_ps=50 * US, probe_successes=2)
    pair.post_write(0, 4 * MTU)
    pkts = sent(pair)
    lost = pkts[0]
    pair.advance(2 * US)
    for p in pkts[1:]:
        pair.deliver(1, p)
        acks_back(pair)
    pair.advance(pair.now + 10 * pair.qp(0)["base_rtt"])
    assert ev_state(pair, lost["ev"]) == D.EV_ASSUMED_BAD
    bad_at = pair.now
    # the path is still broken: the first probe goes unanswered
    pair.advance(bad_at + 50 * US)
    probes = [p for k, p in pair.collect(0) if k == dispatch.K_PROBE and p["ev"] == lost["ev"]]
    assert len(probes) == 1 and probes[0]["opcode"] == Opcode.MRC_RELIABILITY_PROBE
    # the path is repaired: the next probes are answered
    answered = 0
    for n in range(2, 6):
        pair.advance(bad_at + n * 50 * US)
        for k, p in pair.collect(0):
            if k == dispatch.K_PROBE and p["ev"] == lost["ev"]:
                pair.deliver(1, p)
                acks_back(pair)
                answered += 1
        if ev_state(pair, lost["ev"]) == D.EV_GOOD:
            break
    assert answered == 2
    assert ev_state(pair, lost["ev"]) == D.EV_GOOD
    good = [e for e in pair.events if e["kind"] == D.E_EV_STATE and e["ev_state"] == D.EV_GOOD]
    assert [int(e["ev"]) for e in good] == [int(lost["ev"])]


def test_reliability_probe_recovers_lost_sacks_without_retransmitting():
    pair = Pair(ack_every_pkts=1)
    pair.post_write(0, 4 * MTU)
    for p in sent(pair):
        pair.deliver(1, p)
    sent(pair, 1)  # every SACK is lost
    pair.advance(pair.now + 100 * US)
    out = pair.collect(0)
    kinds = [k for k, _ in out]
    assert dispatch.K_PROBE in kinds and dispatch.K_RTX not in kinds
    for k, p in out:
        pair.deliver(1, p)
    acks_back(pair)
    assert pair.completions() and pair.qp(0)["rtx_pkts"] == 0


def test_rto_linear_then_exponential_then_error_with_all_wrs_completed():
    pair = Pair(timeout=2, retry_linear=3, retry_exp=2, ev_min_active=32)
    pair.post_write(0, MTU, wr_id=1)
    pair.post_write(0, MTU, wr_id=2)
    pair.post_write(0, MTU, wr_id=3)
    sent(pair)  # everything is dropped, forever
    base = 1_024_000 << 2  # 1.024 us x 2^timeout
    expiries = []
    t0 = pair.now
    while pair.qp(0)["state"] != D.QPS_ERROR:
        t = dispatch.next_deadline(pair.T, 0)
        before = pair.qp(0)["rtx_timeouts"]
        pair.advance(t)
        if pair.qp(0)["rtx_timeouts"] != before or pair.qp(0)["state"] == D.QPS_ERROR:
            expiries.append(t - t0)
            t0 = t
        sent(pair)
    assert expiries == [base, base, base, base, 2 * base, 4 * base]
    done = pair.completions()
    assert [(int(e["wr_id"]), int(e["status"])) for e in done] == [
        (1, D.WC_RETRY_EXC_ERR), (2, D.WC_WR_FLUSH_ERR), (3, D.WC_WR_FLUSH_ERR)]


def _psn0_declared_lost():
    """Three packets; the second and third arrive and are acknowledged, and PSN 0 is then declared lost (RACK),
    not yet resent. Returns the pair and the three packets."""
    pair = Pair(ack_every_pkts=1, n_planes=1, evs_per_plane=8, ev_active_target=8)
    pair.post_write(0, 3 * MTU)
    pkts = sent(pair)
    pair.advance(2 * US)
    pair.deliver(1, pkts[1])
    pair.deliver(1, pkts[2])
    acks_back(pair)
    pair.advance(pair.now + 10 * pair.qp(0)["base_rtt"])
    return pair, pkts


def test_spurious_retransmission_counted_apart():
    pair, pkts = _psn0_declared_lost()
    rtx = [p for k, p in pair.collect(0) if k == dispatch.K_RTX]
    assert [int(p["psn"]) for p in rtx] == [0]
    pair.deliver(1, pkts[0])  # ... but the original was only late
    acks_back(pair)
    q = pair.qp(0)
    assert q["rtx_pkts"] == 1 and q["rtx_spurious"] == 1


def test_a_loss_declared_then_acknowledged_before_its_resend_is_not_a_spurious_retransmission():
    """The emulator's `reps` runs once counted more spurious retransmissions than retransmissions: a PSN declared
    lost (RACK) whose original was acknowledged before it was resent counted as spurious. It is a false loss
    declaration (`lost_acked`); `rtx_spurious` counts retransmissions only, so it never exceeds `rtx_pkts`."""
    pair, pkts = _psn0_declared_lost()  # nothing collected: PSN 0 not resent yet
    assert pair.qp(0)["losses"] == 1 and pair.qp(0)["n_lost"] == 1
    pair.deliver(1, pkts[0])  # the original was only late
    acks_back(pair)
    q = pair.qp(0)
    assert q["rtx_pkts"] == 0 and q["rtx_spurious"] == 0 and q["lost_acked"] == 1 and q["n_lost"] == 0
    assert not [p for k, p in pair.collect(0) if k == dispatch.K_RTX]  # nothing is resent afterwards


def test_local_port_down_moves_traffic_to_the_other_planes():
    from mrc.core.dispatch import set_local_ports

    pair = Pair(n_planes=2, cc=fixed_window_profile(window_bytes=1 << 30))
    pair.post_write(0, 4 * MTU)
    pkts = sent(pair)
    on_plane1 = [p for p in pkts if p["port"] == 1]
    assert on_plane1
    set_local_ports(pair.T, 0, 0b01, pair.now)
    again = pair.collect(0)
    assert sorted(int(p["psn"]) for k, p in again if k == dispatch.K_RTX) == sorted(int(p["psn"]) for p in on_plane1)
    assert all(p["port"] == 0 for _, p in again)
    pair.post_write(0, 8 * MTU, wr_id=2)
    assert all(p["port"] == 0 for p in sent(pair))
    set_local_ports(pair.T, 0, 0b11, pair.now)
    pair.post_write(0, 8 * MTU, wr_id=3)
    assert {int(p["port"]) for p in sent(pair)} == {0, 1}


def test_remote_port_status_update_removes_the_plane():
    from mrc.core.dispatch import set_remote_ports

    pair = Pair(n_planes=2)
    set_remote_ports(pair.T, 0, 0b10, pair.now)
    pair.post_write(0, 8 * MTU)
    assert {int(p["port"]) for p in sent(pair)} == {1}


def test_ev_min_active_floor_stops_retirements():
    pair = Pair(n_planes=1, evs_per_plane=4, ev_active_target=4, ev_min_active=3)
    T = pair.T
    for k in range(4):
        evset.ev_input(T, 0, k, D.EVI_LOSS, 0)
    states = [int(T.ev[0, k]["state"]) for k in range(4)]
    assert states.count(D.EV_ASSUMED_BAD) == 1  # 4 usable - 1 = 3 = ev_min_active: no further retirement
    assert pair.qp(0)["ev_floor_hits"] == 3


def test_always_skip_sack_retires_the_ev_without_retransmitting():
    pair = Pair(ack_every_pkts=1, n_planes=1, evs_per_plane=8, ev_active_target=4, ev_min_active=0)
    pair.post_write(0, 2 * MTU)
    pkts = sent(pair)
    pair.deliver(1, pkts[0])
    (s,) = sent(pair, 1)
    s["m"] = 2  # ALWAYS_SKIP: the responder judged the path persistently bad
    pair.deliver(0, s)
    assert ev_state(pair, pkts[0]["ev"]) == D.EV_ASSUMED_BAD
    assert [k for k, _ in pair.collect(0)] == []  # nothing was lost: no retransmission
    assert [(int(e["ev"]), int(e["ev_state"])) for e in pair.events if e["kind"] == D.E_EV_STATE] == [
        (int(pkts[0]["ev"]), D.EV_ASSUMED_BAD)]
    pair.post_write(0, 8 * MTU, wr_id=2)
    assert int(pkts[0]["ev"]) not in [int(p["ev"]) for p in sent(pair)]


def test_rto_without_any_sack_retires_the_ev_and_retransmits_elsewhere():
    pair = Pair(n_planes=1, evs_per_plane=8, ev_active_target=4, timeout=3, ev_min_active=0)
    pair.post_write(0, 100, wr_id=1)
    (p,) = sent(pair)  # lost: no SACK, no NACK will ever come
    rto = 1_024_000 << 3
    assert dispatch.next_deadline(pair.T, 0) <= rto
    pair.advance(rto)
    assert ev_state(pair, p["ev"]) == D.EV_ASSUMED_BAD
    (k, r), = [(k, r) for k, r in pair.collect(0) if k != dispatch.K_PROBE]
    assert k == dispatch.K_RTX and r["psn"] == p["psn"] and r["rtx"] == 1 and r["ev"] != p["ev"]
    pair.deliver(1, r)
    acks_back(pair)
    assert [(int(e["wr_id"]), int(e["status"])) for e in pair.completions()] == [(1, D.WC_SUCCESS)]
    assert pair.qp(0)["rtx_timeouts"] == 1 and pair.qp(0)["retries"] == 0  # progress resets the count


def test_remote_port_status_update_restores_the_plane():
    from mrc.core.dispatch import set_remote_ports

    pair = Pair(n_planes=2, cc=fixed_window_profile(window_bytes=1 << 30))
    pair.post_write(0, 4 * MTU)
    first = sent(pair)
    set_remote_ports(pair.T, 0, 0b01, pair.now)  # the peer lost its port 2
    again = pair.collect(0)
    assert sorted(int(p["psn"]) for k, p in again if k == dispatch.K_RTX) == sorted(
        int(p["psn"]) for p in first if p["port"] == 1)  # what was in flight there is resent at once
    assert {int(p["port"]) for _, p in again} == {0}
    set_remote_ports(pair.T, 0, 0b11, pair.now)
    pair.post_write(0, 8 * MTU, wr_id=2)
    assert {int(p["port"]) for p in sent(pair)} == {0, 1}


def test_receiver_penalty_in_cc_state_shrinks_the_senders_window():
    from mrc.core import setup

    cc = setup.nscc_profile(rate_bps=200 * 10**9, base_rtt_ps=4 * US, disable_qa=1)
    plain, penalised = Pair(cc=cc, ack_every_pkts=1), Pair(cc=cc, ack_every_pkts=1)
    penalised.qp(1)["rcv_cwnd_pen"] = 64  # the responder asks for half of every acknowledged byte back
    for pair in (plain, penalised):
        pair.post_write(0, 4 * MTU)
        pkts = sent(pair)
        pair.advance(4 * US)
        for p in pkts:
            pair.deliver(1, p)
        for s in sent(pair, 1):
            assert s["rcv_cwnd_pen"] == pair.qp(1)["rcv_cwnd_pen"]
            before_inflight = pair.qp(0)["inflight"]
            pair.deliver(0, s)
            if pair is penalised:
                # UE 1.0.3 3.6.13.6 apply_cwnd_penalty: held at what is still in flight, less
                # pen / 128 of the acknowledged bytes, never below one MTU (plus eta, which
                # fulfill_adjustment adds once per period whatever the feedback)
                left = pair.qp(0)["inflight"]
                assert left < before_inflight
                assert MTU <= pair.qp(0)["cwnd"] <= max(MTU, left - (before_inflight - left) // 2) + cc["eta"]
    assert plain.qp(0)["cwnd"] >= cc["init_cwnd"]
    assert penalised.qp(0)["saved_cwnd"] == cc["init_cwnd"]


def test_nak_for_too_many_early_immediates_fails_the_requester_with_invalid_request():
    pair = Pair(max_wimm_dest=1)
    for r in range(3):
        pair.post_recv(1, r)
    pair.post_write(0, MTU, wr_id=0)  # PSN 0: held back, so the immediates behind it wait
    for n in range(2):
        pair.post_write(0, 10, wr_id=n + 1, imm=n)
    pkts = sent(pair)
    for p in pkts[1:]:
        pair.deliver(1, p)
    assert pair.qp(1)["state"] == D.QPS_ERROR
    (nak,) = [p for p in sent(pair, 1) if p["opcode"] == Opcode.MRC_ACKNOWLEDGE]
    assert nak["aeth_syndrome"] == D.AETH_NAK_INV_REQ
    pair.deliver(0, nak)
    assert pair.qp(0)["state"] == D.QPS_ERROR
    assert [(int(e["wr_id"]), int(e["status"])) for e in pair.completions()] == [
        (0, D.WC_REM_INV_REQ_ERR), (1, D.WC_WR_FLUSH_ERR), (2, D.WC_WR_FLUSH_ERR)]


def test_a_lost_nak_is_repeated_when_the_requester_retransmits():
    pair = Pair(timeout=2)
    pair.post_write(0, 10, wr_id=1, imm=9)  # no receive posted at QP 1
    (p,) = sent(pair)
    pair.deliver(1, p)
    assert pair.qp(1)["state"] == D.QPS_ERROR
    assert [int(n["aeth_syndrome"]) for n in sent(pair, 1)] == [D.AETH_NAK_REMOTE_OP]  # ... and it is lost
    pair.advance(dispatch.next_deadline(pair.T, 0))
    (r,) = [r for k, r in pair.collect(0) if k == dispatch.K_RTX]
    pair.deliver(1, r)
    (nak,) = sent(pair, 1)
    assert nak["aeth_syndrome"] == D.AETH_NAK_REMOTE_OP
    pair.deliver(0, nak)
    assert [(int(e["wr_id"]), int(e["status"])) for e in pair.completions()] == [(1, D.WC_REM_OP_ERR)]


def test_an_aeth_nak_outside_rts_is_ignored():
    pair = Pair()
    pair.post_write(0, MTU)
    (p,) = sent(pair)
    nak = p.copy()
    nak["opcode"], nak["aeth_syndrome"] = Opcode.MRC_ACKNOWLEDGE, D.AETH_NAK_REMOTE_ACCESS
    pair.qp(0)["state"] = D.QPS_RTR  # e.g. a stale NAK reaching a QP that was reset and reconnected
    pair.deliver(0, nak)
    assert pair.qp(0)["state"] == D.QPS_RTR and pair.qp(0)["rx_dropped"] == 1 and not pair.completions()
    pair.qp(0)["state"] = D.QPS_RTS
    ack = nak.copy()
    ack["aeth_syndrome"] = 0x1F  # a positive ACK: MRC acknowledges with SACKs, nothing changes
    pair.deliver(0, ack)
    assert pair.qp(0)["state"] == D.QPS_RTS and not pair.completions()


def _lose_second_of_six(pair):
    pair.post_write(0, 6 * MTU)
    pkts = sent(pair)
    pair.advance(2 * US)
    for p in pkts:
        if p is not pkts[1]:
            pair.deliver(1, p)
            acks_back(pair)
    pair.advance(pair.now + 10 * pair.qp(0)["base_rtt"])
    return pkts[1]


def test_without_the_rack_extension_a_silent_loss_waits_for_the_timeout():
    on = Pair(ack_every_pkts=1, cc=fixed_window_profile(window_bytes=1 << 30))
    off = Pair(ack_every_pkts=1, cc=fixed_window_profile(window_bytes=1 << 30), rack=0)
    for pair, state in ((on, D.EV_ASSUMED_BAD), (off, D.EV_GOOD)):
        lost = _lose_second_of_six(pair)
        assert ev_state(pair, lost["ev"]) == state
        assert pair.qp(0)["losses"] == (1 if pair is on else 0)
    off.advance(int(off.qp(0)["rto_deadline"]) + 1)  # the RTO finds it
    assert off.qp(0)["rtx_timeouts"] == 1 and off.qp(0)["losses"] >= 1


def test_without_the_rto_retire_extension_a_timeout_retires_only_the_oldest_packets_ev():
    def run(**kw):
        pair = Pair(n_planes=1, evs_per_plane=8, ev_active_target=8, timeout=3, ev_min_active=0, **kw)
        pair.post_write(0, 4 * MTU, wr_id=1)
        pkts = sent(pair)  # all lost
        assert len({int(p["ev"]) for p in pkts}) == 4
        pair.advance(1_024_000 << 3)
        return [ev_state(pair, p["ev"]) for p in pkts]
    assert run() == [D.EV_ASSUMED_BAD] * 4
    assert run(rto_retire=0) == [D.EV_ASSUMED_BAD] + [D.EV_GOOD] * 3


def test_a_retired_ev_is_first_probed_about_one_rtt_later_and_readmitted_within_a_few():
    """Re-admission: a spurious retirement (the packet was only late) is undone within a few RTTs,
    not after ev_probe_interval_ps (100 us)."""
    pair = Pair(ack_every_pkts=1)
    base = int(pair.qp(0)["base_rtt"])
    assert pair.qp(0)["ev_first_probe_ps"] == base and pair.qp(0)["ev_probe_interval_ps"] == 100 * US
    lost = _lose_second_of_six(pair)
    assert ev_state(pair, lost["ev"]) == D.EV_ASSUMED_BAD
    e = pair.T.ev[pair.qp(0)["ev_row"]][[int(x["ev"]) for x in pair.T.ev[pair.qp(0)["ev_row"]]].index(int(lost["ev"]))]
    bad_at = int(e["bad_since"])
    assert int(e["probe_deadline"]) == bad_at + base
    for _ in range(4):
        pair.advance(max(pair.now, int(e["probe_deadline"])) + 1)
        for k, p in pair.collect(0):
            if k == dispatch.K_PROBE and p["ev"] == lost["ev"]:
                pair.deliver(1, p)
                acks_back(pair)
        if ev_state(pair, lost["ev"]) == D.EV_GOOD:
            break
    assert ev_state(pair, lost["ev"]) == D.EV_GOOD
    assert pair.now - bad_at <= 4 * base


@pytest.mark.parametrize("side", ["remote", "local"])
def test_probing_of_an_assumed_bad_ev_resumes_when_its_plane_comes_back(side):
    """An EV went ASSUMED_BAD, then its plane went down (a port status update, or the local port) for
    longer than its probe interval: no probe leaves while the plane is down, and once the plane is back
    its probe goes at once (the probe that fell due meanwhile is not forgotten)."""
    from mrc.core.dispatch import set_local_ports, set_remote_ports

    set_ports = set_remote_ports if side == "remote" else set_local_ports
    pair = Pair(n_planes=2, evs_per_plane=4, ev_probe_interval_ps=50 * US, ev_min_active=0)
    T, q = pair.T, pair.qp(0)
    k = int(q["plane_start"][1])  # an EV of plane 1
    evset.ev_input(T, 0, k, D.EVI_LOSS, pair.now)
    assert int(T.ev[0, k]["state"]) == D.EV_ASSUMED_BAD
    bad_ev = int(T.ev[0, k]["ev"])
    set_ports(T, 0, 0b01, pair.now)  # plane 1 down
    for n in range(1, 5):  # four probe intervals pass with the plane down
        pair.advance(n * 50 * US)
        assert [p for kind, p in pair.collect(0) if kind == dispatch.K_PROBE] == []
    set_ports(T, 0, 0b11, pair.now)  # plane 1 back
    pair.advance(pair.now + 1)
    probes = [p for kind, p in pair.collect(0) if kind == dispatch.K_PROBE]
    assert [int(p["ev"]) for p in probes] == [bad_ev]
