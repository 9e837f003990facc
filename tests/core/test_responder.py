"""Responder: SACK contents, trim NACKs, duplicates, out-of-window PSNs, access checks, WIMM order."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.core import dispatch, dtypes as D
from mrc.core.setup import fixed_window_profile
from mrc.testing.harness import Network, Pair, PathFault
from mrc.units import US
from mrc.wire.constants import NackReason, Opcode, SackM

MTU = 4096


def data_packets(pair, n, **kw):
    pair.post_write(0, n * MTU, **kw)
    return [p for _, p in pair.collect(0)]


def only(pkts, opcode):
    out = [p for _, p in pkts if p["opcode"] == opcode]
    return out


def test_sack_reports_cack_bitmap_reflected_ev_m_and_cc_state():
    pair = Pair(ack_every_pkts=100, ack_every_bytes=1 << 30)
    pkts = data_packets(pair, 4)
    pkts[3]["ecn"] = 3  # CE on the last one
    for p in (pkts[0], pkts[2], pkts[3]):
        pair.deliver(1, p)
    sacks = only(pair.collect(1), Opcode.MRC_RELIABILITY_SACK)
    assert len(sacks) == 1  # owed immediately because of the CE mark
    s = sacks[0]
    assert s["cack_psn"] == 0
    assert s["sack_offset"] == 1
    assert s["sack_bitmap"] == 0b110  # PSNs 2 and 3 above cack_psn + 1
    assert s["ack_psn_offset"] == 3  # the trigger is PSN 3
    assert s["entropy"] == pkts[3]["ev"]
    assert s["tx_timestamp"] == pkts[3]["tx_timestamp"]
    assert s["m"] == SackM.SKIP_ONCE
    assert s["ooo_count"] == 2
    assert s["rcvd_bytes"] == (3 * MTU) >> 8
    assert s["mpr"] == pair.qp(1)["mpr_dest"]
    assert s["dscp"] == pair.qp(1)["dscp_ctrl"]
    assert s["dqpn"] == pair.qp(1)["dest_qpn"]


def test_sack_travels_on_the_plane_the_trigger_arrived_on():
    pair = Pair(n_planes=2, ack_every_pkts=1)
    pkts = data_packets(pair, 4)
    for p in pkts:
        pair.deliver(1, p)
        (s,) = only(pair.collect(1), Opcode.MRC_RELIABILITY_SACK)
        assert s["port"] == p["port"]
        assert s["ev"] >> 28 == p["port"]  # an EV of QP 1's own set on that plane


def test_trimmed_header_gets_nack_trimmed_or_lasthop():
    pair = Pair()
    pkts = data_packets(pair, 2)
    a, b = pkts
    a["trim"], a["payload_len"] = 1, 0
    b["trim"], b["payload_len"] = 2, 0
    pair.deliver(1, a)
    pair.deliver(1, b)
    nacks = only(pair.collect(1), Opcode.MRC_RELIABILITY_NACK)
    assert [(int(n["nack_reason"]), int(n["nack_psn"])) for n in nacks] == [(NackReason.TRIMMED, 0), (NackReason.TRIMMED_LASTHOP, 1)]
    assert nacks[0]["entropy"] == a["ev"] and nacks[1]["entropy"] == b["ev"]
    assert nacks[0]["tx_timestamp"] == a["tx_timestamp"]
    assert all(n["dscp"] == pair.qp(1)["dscp_ctrl"] for n in nacks)
    assert pair.qp(1)["cack_psn"] == 0xFFFFFF  # nothing was received


def test_owed_nacks_are_bounded_at_eight_and_the_rest_counted():
    """NACKs owed but not yet sent wait in an 8-entry queue; one more is dropped and counted, never
    written past it (the requester recovers by timeout or probe)."""
    pair = Pair()
    pkts = data_packets(pair, 10)
    for p in pkts:
        p["trim"], p["payload_len"] = 1, 0
        pair.deliver(1, p)
    assert pair.qp(1)["nack_n"] == 8 and pair.qp(1)["rx_dropped"] == 2 and pair.qp(1)["rx_trimmed"] == 10
    nacks = only(pair.collect(1), Opcode.MRC_RELIABILITY_NACK)
    assert [int(n["nack_psn"]) for n in nacks] == list(range(8))
    assert pair.qp(1)["nack_n"] == 0


def test_duplicates_are_acknowledged_not_placed_again():
    pair = Pair(emulate_access=1)
    (p,) = data_packets(pair, 1)
    pair.deliver(1, p)
    assert pair.qp(1)["rx_pkts"] == 1
    pair.collect(1)
    pair.deliver(1, p)
    assert pair.qp(1)["rx_pkts"] == 1 and pair.qp(1)["rx_dup"] == 1
    assert len(only(pair.collect(1), Opcode.MRC_RELIABILITY_SACK)) == 1  # at once


def test_psn_beyond_the_window_gets_psn_oor_window():
    pair = Pair(mpr_dest=1, cc=fixed_window_profile(window_bytes=1 << 30))
    pkts = data_packets(pair, 130)
    pair.deliver(1, pkts[128])  # window is 128 PSNs above cack_psn
    nacks = only(pair.collect(1), Opcode.MRC_RELIABILITY_NACK)
    assert [(int(n["nack_reason"]), int(n["nack_psn"])) for n in nacks] == [(NackReason.PSN_OOR_WINDOW, 128)]
    assert pair.qp(1)["rx_oor"] == 1


def test_an_oor_nack_means_the_same_after_the_wire():
    # the responder's NACK record carries only what NETH carries: encoding and decoding it gives
    # the same fields, so a NACK means the same in the emulator (records) and on the wire
    from mrc.wire import codec
    from mrc.wire.records import NET
    pair = Pair(mpr_dest=1, cc=fixed_window_profile(window_bytes=1 << 30))
    pkts = data_packets(pair, 130)
    pair.deliver(1, pkts[128])
    (n,) = only(pair.collect(1), Opcode.MRC_RELIABILITY_NACK)
    assert n["mpr"] == 0
    net = np.zeros(1, dtype=NET)
    net[0]["ip_version"], net[0]["dport"] = 6, 4791
    got, _, _ = codec.decode(codec.encode(n, net))
    for field in ("nack_reason", "nack_psn", "entropy", "spdcid", "dpdcid", "cc_type", "mpr", "tx_timestamp",
                  "dqpn", "psn"):
        assert got[field] == n[field], field


def test_write_outside_the_registered_region_is_refused():
    pair = Pair(emulate_access=0)
    T = pair.T
    T.mr[0]["valid"], T.mr[0]["access"], T.mr[0]["rkey"] = 1, 1, 7
    T.mr[0]["va"], T.mr[0]["length"] = 0x10000, 2 * MTU
    inside = data_packets(pair, 2, remote_va=0x10000, rkey=7)
    pair.deliver(1, inside[0])
    assert list(T.place[:3]) == [0, 0, MTU]  # placed at offset 0 of region 0
    pair.deliver(1, inside[1])
    assert list(T.place[:3]) == [0, MTU, MTU]
    # a write that runs past the end of the region
    pair.post_write(0, 2 * MTU, remote_va=0x10000 + MTU, rkey=7, wr_id=9)
    outside = [p for _, p in pair.collect(0)]
    pair.deliver(1, outside[1])
    assert T.place[0] == -1
    viol = [e for e in pair.events if e["kind"] == D.E_ACCESS_VIOLATION]
    assert len(viol) == 1 and viol[0]["wr_id"] == 0x10000 + 2 * MTU
    assert pair.qp(1)["state"] == D.QPS_ERROR
    naks = only(pair.collect(1), Opcode.MRC_ACKNOWLEDGE)
    assert len(naks) == 1 and naks[0]["aeth_syndrome"] == 0x62  # NAK: remote access error
    pair.deliver(0, naks[0])
    done = pair.completions()
    assert done[0]["status"] == D.WC_REM_ACCESS_ERR and pair.qp(0)["state"] == D.QPS_ERROR


def test_wrong_rkey_is_refused():
    pair = Pair(emulate_access=0)
    T = pair.T
    T.mr[0]["valid"], T.mr[0]["access"], T.mr[0]["rkey"] = 1, 1, 7
    T.mr[0]["va"], T.mr[0]["length"] = 0x10000, MTU
    (p,) = data_packets(pair, 1, remote_va=0x10000, rkey=8)
    pair.deliver(1, p)
    assert T.place[0] == -1 and pair.qp(1)["state"] == D.QPS_ERROR


def test_write_with_immediate_completes_in_message_order():
    pair = Pair()
    for r in range(3):
        pair.post_recv(1, 100 + r)
    pair.post_write(0, 2 * MTU, wr_id=1, imm=0xA)
    pair.post_write(0, MTU, wr_id=2, imm=0xB)
    pair.post_write(0, 3 * MTU, wr_id=3, imm=0xC)
    pkts = [p for _, p in pair.collect(0)]
    assert len(pkts) == 6
    for p in reversed(pkts):  # worst-case reordering
        pair.deliver(1, p)
        if p["psn"] != 0:
            assert not pair.completions(D.E_RECV_IMM)  # nothing before message 1 is complete
    recv = pair.completions(D.E_RECV_IMM)
    assert [(int(e["wr_id"]), int(e["imm"]), int(e["byte_len"])) for e in recv] == [
        (100, 0xA, 2 * MTU), (101, 0xB, MTU), (102, 0xC, 3 * MTU)]


def test_write_with_immediate_without_posted_receive_is_fatal():
    pair = Pair()
    pair.post_write(0, 10, imm=1)
    (p,) = [p for _, p in pair.collect(0)]
    pair.deliver(1, p)
    assert pair.qp(1)["state"] == D.QPS_ERROR
    assert any(e["kind"] == D.E_QP_ERROR and e["status"] == D.ERR_NO_RECV for e in pair.events)


def test_too_many_early_immediates_exceed_max_wimm_dest():
    pair = Pair(max_wimm_dest=2)
    for r in range(4):
        pair.post_recv(1, r)
    pair.post_write(0, MTU, wr_id=0)  # PSN 0, held back
    for n in range(3):
        pair.post_write(0, 10, wr_id=n + 1, imm=n)
    pkts = [p for _, p in pair.collect(0)]
    for p in pkts[1:]:
        pair.deliver(1, p)
    assert pair.qp(1)["state"] == D.QPS_ERROR
    assert any(e["kind"] == D.E_QP_ERROR and e["status"] == D.ERR_WIMM_OVERFLOW for e in pair.events)


def test_always_skip_after_a_run_of_marks_on_one_ev():
    pair = Pair(always_skip_marks=3, ack_every_pkts=1, n_planes=1, evs_per_plane=4, ev_active_target=4)
    pkts = data_packets(pair, 4)
    target = pkts[0]
    ms = []
    for n in range(3):
        p = target.copy()
        p["psn"] = n
        p["ecn"] = 3
        pair.deliver(1, p)
        (s,) = only(pair.collect(1), Opcode.MRC_RELIABILITY_SACK)
        ms.append(int(s["m"]))
    assert ms == [SackM.SKIP_ONCE, SackM.SKIP_ONCE, SackM.ALWAYS_SKIP]


def test_ack_coalescing_every_n_packets_and_by_timer():
    pair = Pair(ack_every_pkts=4, ack_every_bytes=1 << 30, ack_delay_ps=2_000_000)
    pkts = data_packets(pair, 7)
    sacks = []
    for p in pkts[:6]:
        pair.deliver(1, p)
        sacks += only(pair.collect(1), Opcode.MRC_RELIABILITY_SACK)
    assert len(sacks) == 1 and sacks[0]["cack_psn"] == 3
    pair.advance(pair.now + 2_000_000)  # the coalescing timer sends the rest
    late = only(pair.collect(1), Opcode.MRC_RELIABILITY_SACK)
    assert len(late) == 1 and late[0]["cack_psn"] == 5
    pair.deliver(1, pkts[6])  # the last packet of the message asks for an ACK
    assert len(only(pair.collect(1), Opcode.MRC_RELIABILITY_SACK)) == 1


def test_probe_gets_a_probe_response_reflecting_its_ev():
    pair = Pair()
    from mrc.core import requester

    requester.build_probe(pair.T, 0, pair.out, 0, 3, pair.now)
    probe = pair.out[0].copy()
    assert probe["opcode"] == Opcode.MRC_RELIABILITY_PROBE
    pair.deliver(1, probe)
    (s,) = only(pair.collect(1), Opcode.MRC_RELIABILITY_SACK)
    assert s["pr"] == 1 and s["entropy"] == probe["ev"] and s["tx_timestamp"] == probe["tx_timestamp"]


def test_sack_bitmap_matches_a_naive_model(rng):
    from tests.core.naive import sack_bitmap

    pair = Pair(ack_every_pkts=1, cc=fixed_window_profile(window_bytes=1 << 30))
    pkts = data_packets(pair, 300)
    order = rng.permutation(len(pkts))[:200]
    received = set()
    for idx in order:
        p = pkts[idx]
        pair.deliver(1, p)
        received.add(int(p["psn"]))
        (s,) = only(pair.collect(1), Opcode.MRC_RELIABILITY_SACK)
        cack, base, bits = sack_bitmap(received, trigger=int(p["psn"]))
        assert (int(s["cack_psn"]), int(s["cack_psn"] + s["sack_offset"]) & 0xFFFFFF, int(s["sack_bitmap"])) == (cack, base, bits)
    assert np.all(np.diff(np.sort(list(received))) > 0)


def _judge_against_naive(pair, pkts, order, window):
    """Deliver `pkts` in `order` to QP 1; each answer must be the naive model's: a SACK with its cack_psn,
    bitmap base and bitmap, or NACK PSN_OOR_WINDOW for a PSN beyond the MPR window. Returns the PSNs placed."""
    from tests.core.naive import accepts, sack_bitmap

    received: set[int] = set()
    for idx in order:
        p = pkts[idx]
        psn = int(p["psn"])
        fits = accepts(received, psn, window=window)
        pair.deliver(1, p)
        out = pair.collect(1)
        if not fits:
            (n,) = only(out, Opcode.MRC_RELIABILITY_NACK)
            assert (int(n["nack_reason"]), int(n["psn"])) == (NackReason.PSN_OOR_WINDOW, psn)
            assert not only(out, Opcode.MRC_RELIABILITY_SACK)
            continue
        received.add(psn)
        (s,) = only(out, Opcode.MRC_RELIABILITY_SACK)
        cack, base, bits = sack_bitmap(received, trigger=psn, window=window)
        got = (int(s["cack_psn"]), int(s["cack_psn"] + s["sack_offset"]) & 0xFFFFFF, int(s["sack_bitmap"]))
        assert got == (cack, base, bits), (psn, sorted(received))
    return received


def _narrow_window_pair():
    """QP 1's window is MPR 1 (128 PSNs); QP 0 may have 256 in flight, so it sends beyond that window."""
    pair = Pair(ack_every_pkts=1, cc=fixed_window_profile(window_bytes=1 << 30), mpr=2, mpr_dest=1)
    return pair, int(pair.qp(1)["mpr_dest"]) * D.MPR_UNIT


def test_the_window_edge_exactly():
    """cack_psn + 128 is inside MPR 1's window, cack_psn + 129 is not; the edge PSN, as a trigger beyond
    64 of cack_psn, is bit 63 of its own SACK."""
    pair, window = _narrow_window_pair()
    assert window == 128
    pkts = data_packets(pair, 250)
    order = [127, 128, 0, 128, 129, 64, 1, 2, 130, 129, 200]
    received = _judge_against_naive(pair, pkts, order, window)
    assert {127, 128, 129, 130} <= received and 200 not in received
    assert pair.qp(1)["rx_oor"] == 3  # 128 (cack -1), 129 (cack 0), 200


@pytest.mark.parametrize("seed", range(4))
def test_sack_bitmap_and_window_match_the_naive_model_near_the_edge(seed):
    pair, window = _narrow_window_pair()
    pkts = data_packets(pair, 250)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pkts))[:220]
    received = _judge_against_naive(pair, pkts, order, window)
    assert pair.qp(1)["rx_oor"] > 0 and received  # both sides of the edge were exercised


def test_any_packet_of_a_write_running_past_the_region_is_refused_in_any_order():
    for first in (0, 1, 2):
        pair = Pair(emulate_access=0)
        T = pair.T
        T.mr[0]["valid"], T.mr[0]["access"], T.mr[0]["rkey"] = 1, 1, 7
        T.mr[0]["va"], T.mr[0]["length"] = 0x10000, 2 * MTU
        pair.post_write(0, 3 * MTU, remote_va=0x10000 + MTU // 2, rkey=7)  # ends MTU / 2 past the region
        pkts = data_packets_sent(pair)
        pair.deliver(1, pkts[first])  # whichever packet arrives first, nothing is placed
        assert T.place[0] == -1 and pair.qp(1)["rx_pkts"] == 0 and pair.qp(1)["state"] == D.QPS_ERROR
        (viol,) = [e for e in pair.events if e["kind"] == D.E_ACCESS_VIOLATION]
        assert (int(viol["wr_id"]), int(viol["byte_len"])) == (0x10000 + MTU // 2 + first * MTU, (3 - first) * MTU)
        for p in pkts:
            pair.deliver(1, p)
        assert pair.qp(1)["rx_pkts"] == 0  # and none of the others either


def test_a_write_exactly_filling_the_region_is_placed():
    pair = Pair(emulate_access=0)
    T = pair.T
    T.mr[0]["valid"], T.mr[0]["access"], T.mr[0]["rkey"] = 1, 1, 7
    T.mr[0]["va"], T.mr[0]["length"] = 0x10000, 3 * MTU - 5
    pair.post_write(0, 3 * MTU - 5, remote_va=0x10000, rkey=7)
    placed = []
    for p in reversed(data_packets_sent(pair)):
        pair.deliver(1, p)
        placed.append(list(T.place[:3]))
    assert placed == [[0, 2 * MTU, MTU - 5], [0, MTU, MTU], [0, 0, MTU]]
    assert pair.qp(1)["state"] == D.QPS_RTS


def test_region_without_remote_write_access_is_refused():
    pair = Pair(emulate_access=0)
    T = pair.T
    T.mr[0]["valid"], T.mr[0]["access"], T.mr[0]["rkey"] = 1, 0, 7  # local access only
    T.mr[0]["va"], T.mr[0]["length"] = 0x10000, MTU
    pair.post_write(0, 10, remote_va=0x10000, rkey=7)
    (p,) = data_packets_sent(pair)
    pair.deliver(1, p)
    assert T.place[0] == -1 and pair.qp(1)["state"] == D.QPS_ERROR


def data_packets_sent(pair):
    return [p for _, p in pair.collect(0)]


def test_reverse_ev_is_refreshed_by_a_probe_while_only_receiving():
    pair = Pair(n_planes=1, evs_per_plane=8, ev_active_target=8, ack_every_pkts=1)
    pair.post_write(0, 2 * MTU)
    pkts = data_packets_sent(pair)
    pair.deliver(1, pkts[0])
    (s1,) = only(pair.collect(1), Opcode.MRC_RELIABILITY_SACK)
    rev = int(pair.qp(1)["rev_ev"][0])
    assert s1["ev"] == pair.T.ev[1, rev]["ev"]  # control packets use the plane's reverse EV
    pair.advance(pair.now + pair.qp(1)["rev_probe_interval_ps"])  # one RTT receiving, sending no data
    out = pair.collect(1)
    probes = [p for k, p in out if k == dispatch.K_PROBE]
    assert len(probes) == 1 and probes[0]["opcode"] == Opcode.MRC_RELIABILITY_PROBE
    pair.deliver(0, probes[0])
    (answer,) = only(pair.collect(0), Opcode.MRC_RELIABILITY_SACK)
    assert answer["pr"] == 1 and answer["entropy"] == probes[0]["ev"]
    pair.deliver(1, answer)
    new_rev = int(pair.qp(1)["rev_ev"][0])
    assert pair.T.ev[1, new_rev]["ev"] == probes[0]["ev"]  # the probed path now carries the SACKs
    pair.deliver(1, pkts[1])
    (s2,) = only(pair.collect(1), Opcode.MRC_RELIABILITY_SACK)
    assert s2["ev"] == probes[0]["ev"]


@pytest.mark.parametrize("miss_bad", [0, 1])
def test_a_blackholed_reverse_path_is_abandoned_and_the_transfer_completes(miss_bad):
    net = Network(jitter_ps=0)
    pair = Pair(n_planes=2, evs_per_plane=4, ev_active_target=8, network=net, ev_min_active=0,
                rev_probe_miss_bad=miss_bad)
    pair.post_write(0, 4 * MTU, wr_id=1)
    assert pair.run_until(lambda s: len(s.completions()) == 1)
    dead = [int(pair.T.ev[1, pair.qp(1)["rev_ev"][p]]["ev"]) for p in range(2)]
    for ev in dead:  # both reverse EVs of the responder die
        net.faults[ev] = PathFault(blackhole=True)
    pair.post_write(0, 512 * MTU, wr_id=2)  # many RTTs of inbound-only traffic: reverse probes run
    assert pair.run_until(lambda s: len(s.completions()) == 2, max_time_ps=pair.now + 20_000 * US)
    assert [int(e["status"]) for e in pair.completions()] == [D.WC_SUCCESS] * 2
    revs = {int(pair.T.ev[1, pair.qp(1)["rev_ev"][p]]["ev"]) for p in range(2)}
    assert not revs & set(dead)
    states = {int(pair.T.ev[1, k]["ev"]): int(pair.T.ev[1, k]["state"]) for k in range(8)}
    if miss_bad:  # unanswered reverse probes count as losses: the responder retired them too
        assert all(states[ev] == D.EV_ASSUMED_BAD for ev in dead)
    else:  # by default an unanswered reverse probe is not held against the probed EV
        assert all(states[ev] == D.EV_GOOD for ev in dead)
        assert pair.qp(1)["rev_probe_misses"] >= 1 and pair.qp(1)["rev_rotations"] >= 1


def test_without_trim_nacks_a_trimmed_header_is_only_counted_and_loss_detection_recovers():
    net = Network(jitter_ps=0)
    pair = Pair(network=net, n_planes=1, evs_per_plane=8, ev_active_target=8, trim_nack_dest=0, ev_min_active=0)
    victim = pair.ev_of(0, 2)
    net.faults[victim] = PathFault(trim=1.0)
    pair.record = True
    assert pair.transfer(16 * MTU)
    assert pair.completions()[0]["status"] == D.WC_SUCCESS
    assert pair.qp(1)["rx_trimmed"] >= 1 and pair.qp(1)["nacks_tx"] == 0
    assert pair.qp(0)["trims_rx"] == 0 and pair.qp(0)["losses"] >= 1  # recovered as a silent loss
    assert not [p for _, p in pair.received[0] if p["opcode"] == Opcode.MRC_RELIABILITY_NACK]


def test_half_qps_answer_and_use_reverse_probes():
    """A send-only QP (no RX row) and a receive-only QP (no TX row), as the emulator allocates them:
    the receiver's reverse-EV probes are answered by the sender and refresh its reverse EVs."""
    from mrc.testing.harness import Network, Pair

    pair = Pair(n_planes=2, evs_per_plane=8, network=Network(rate_bps=100 * 10**9))
    pair.T.qp[0]["rx_row"] = -1
    pair.T.qp[1]["tx_row"] = -1
    pair.T.qp[1]["wr_row"] = -1
    assert pair.transfer(300 * MTU)
    rx, tx = pair.qp(1), pair.qp(0)
    assert int(rx["rx_bytes"]) == 300 * MTU
    assert int(rx["probes_tx"]) > 0 and int(rx["sacks_rx"]) > 0  # probes sent, answers handled
    assert int(tx["rx_dropped"]) == 0  # the sender answered every probe
    states = pair.T.ev[1, : int(rx["n_ev"])]["state"]
    assert not (states == D.EV_ASSUMED_BAD).any()  # no reverse probe timed out


def test_rx_held_counts_the_slots_held_beyond_cack_psn_through_duplicates(rng):
    # fill_sack stops scanning once it has found every held slot: the count must stay exact
    pair = Pair(ack_every_pkts=1, cc=fixed_window_profile(window_bytes=1 << 30))
    pkts = data_packets(pair, 200)
    T = pair.T
    rx_row = int(pair.qp(1)["rx_row"])
    for idx in rng.integers(0, len(pkts), 400):  # duplicates included
        pair.deliver(1, pkts[idx])
        pair.collect(1)
        held = int(np.count_nonzero(T.rx[:, rx_row]["flags"] & D.RX_RECEIVED))
        assert pair.qp(1)["rx_held"] == held
