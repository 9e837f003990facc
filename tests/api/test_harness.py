"""The in-memory two-endpoint harness: every fault it offers does what it says, from a seed."""
from __future__ import annotations

import pytest

from mrc.core import dispatch, dtypes as D
from mrc.core.setup import fixed_window_profile
from mrc.testing.harness import InvariantError, Network, Pair, PathFault
from mrc.units import NS, US

MTU = 4096


def run_and_record(network, *, n=64, seed=3, **kw):
    """Write n packets from QP 0 to QP 1 until complete; the data packets QP 1 received, in order."""
    pair = Pair(seed=seed, network=network, n_planes=1, evs_per_plane=8, ev_active_target=8,
                cc=fixed_window_profile(window_bytes=1 << 30), **kw)
    pair.record = True
    assert pair.transfer(n * MTU)
    arrivals = [(t, int(p["psn"]), int(p["trim"]), int(p["ecn"]), int(p["payload_len"]))
                for t, p in pair.received[1] if p["opcode"] in range(0xC6, 0xCC)]
    return pair, arrivals


def test_loss_on_one_ev_drops_that_share_of_its_packets_only():
    pair0 = Pair(n_planes=1, evs_per_plane=8)
    victim = pair0.ev_of(0, 3)
    pair, arrivals = run_and_record(Network(jitter_ps=0, faults={victim: PathFault(loss=0.5)}), n=400)
    on_victim = [p for t, k, p in pair.sent[0] if k == dispatch.K_DATA and int(p["ev"]) == victim]
    assert on_victim and pair.qp(0)["losses"] >= 1
    delivered = [(int(p["psn"]), int(p["ev"])) for _, p in pair.received[1] if p["opcode"] in range(0xC6, 0xCC)]
    sent = [(int(p["psn"]), int(p["ev"])) for _, k, p in pair.sent[0] if k in (dispatch.K_DATA, dispatch.K_RTX)]
    lost = set(sent) - set(delivered)
    assert lost and {ev for _, ev in lost} == {victim}  # only packets of that EV were lost
    assert 0.2 < len(lost) / len(on_victim) < 0.8


def test_blackhole_drops_everything_on_the_ev():
    victim = Pair(n_planes=1, evs_per_plane=8).ev_of(0, 5)
    pair, arrivals = run_and_record(Network(jitter_ps=0, faults={victim: PathFault(blackhole=True)}))
    on_victim = [p for _, k, p in pair.sent[0] if int(p["ev"]) == victim]
    assert on_victim and not [p for _, p in pair.received[1] if int(p["ev"]) == victim]
    assert pair.completions()[0]["status"] == D.WC_SUCCESS


@pytest.mark.parametrize("lasthop, code", [(False, 1), (True, 2)])
def test_trimming_keeps_the_header_and_marks_where(lasthop, code):
    net = Network(jitter_ps=0, default=PathFault(trim=1.0, trim_lasthop=lasthop))
    pair = Pair(network=net, n_planes=1, evs_per_plane=4)
    pair.post_write(0, 2 * MTU)
    pair.pump()
    trimmed = [pkt for _, _, dst, pkt in pair.queue if dst == 1]
    assert [(int(p["trim"]), int(p["payload_len"])) for p in trimmed] == [(code, 0), (code, 0)]
    assert all(int(p["psn"]) == n for n, p in enumerate(sorted(trimmed, key=lambda p: int(p["psn"]))))


def test_ecn_marks_only_ect_packets():
    net = Network(jitter_ps=0, default=PathFault(ecn=1.0))
    pair = Pair(network=net, n_planes=1, evs_per_plane=4)
    pair.post_write(0, 2 * MTU)
    pair.pump()
    assert {int(p["ecn"]) for _, _, dst, p in pair.queue} == {3}  # data is ECT(0): all CE-marked
    pair.queue.clear()
    pair.out[0] = pair.T.pkt0[0]
    pair.out[0]["ecn"] = 0
    pair.out[0]["opcode"] = 0xDC
    pair._emit(1, dispatch.K_CONTROL)
    assert int(pair.queue[0][3]["ecn"]) == 0  # not ECN-capable: never marked


def test_duplication_delivers_twice_and_the_responder_places_once():
    net = Network(jitter_ps=0, default=PathFault(dup=1.0))
    pair = Pair(network=net, n_planes=1, evs_per_plane=4)
    assert pair.transfer(3 * MTU)
    assert pair.qp(1)["rx_pkts"] == 3 and pair.qp(1)["rx_dup"] >= 3


def test_jitter_and_slow_paths_reorder():
    slow = Pair(n_planes=1, evs_per_plane=8).ev_of(0, 0)
    _, arrivals = run_and_record(Network(jitter_ps=0, faults={slow: PathFault(extra_delay_ps=10 * US)}), n=32)
    psns = [psn for _, psn, *_ in sorted(arrivals)]
    assert psns != sorted(psns)
    _, arrivals = run_and_record(Network(jitter_ps=2 * US), n=32)
    psns = [psn for _, psn, *_ in sorted(arrivals)]
    assert psns != sorted(psns)


def test_link_rate_spaces_departures():
    net = Network(jitter_ps=0, rate_bps=100 * 10**9, overhead_bytes=96)
    pair = Pair(network=net, n_planes=1, evs_per_plane=4, cc=fixed_window_profile(window_bytes=1 << 30))
    pair.post_write(0, 4 * MTU)
    pair.pump()
    times = sorted(t for t, _, dst, _ in pair.queue if dst == 1)
    gap = (MTU + 96) * 8 * 10**12 // (100 * 10**9)
    assert [b - a for a, b in zip(times, times[1:])] == [gap] * 3


def trace(seed):
    net = Network(jitter_ps=700 * NS, default=PathFault(loss=0.05, ecn=0.1, dup=0.05, trim=0.05))
    pair, arrivals = run_and_record(net, seed=seed, n=96)
    return arrivals, [(t, k, int(p["psn"]), int(p["ev"])) for t, k, p in pair.sent[0]]


def test_runs_are_deterministic_from_the_seed():
    assert trace(5) == trace(5)
    assert trace(5) != trace(6)


def test_the_harness_catches_a_data_packet_on_a_bad_ev():
    pair = Pair(n_planes=1, evs_per_plane=4, ev_active_target=4)
    pair.post_write(0, MTU)
    kind = dispatch.next_packet(pair.T, 0, 0, 0xFF, pair.out, 0)
    slot = [k for k in range(4) if pair.T.ev[0, k]["ev"] == pair.out[0]["ev"]][0]
    pair.T.ev[0, slot]["state"] = D.EV_ASSUMED_BAD  # as if a mutant core had sent on it
    with pytest.raises(InvariantError, match="in state ASSUMED_BAD"):
        pair._check_send(0, kind, pair.out[0].copy())


def test_result_reports_the_transfer_in_microseconds_gigabits_and_bytes():
    pair = Pair(network=Network(default=PathFault(loss=0.05)), seed=1)
    assert pair.transfer(1 << 20)
    r = pair.result()
    (c,) = r.completions
    assert (c.qp, c.wr_id, c.status, c.byte_len, c.imm_data) == (0, 1, "SUCCESS", 1 << 20, None)
    (raw,) = pair.completions()
    assert c.time_us == int(raw["time"]) / 1e6 and r.time_us == pair.now / 1e6
    assert (r.completed, r.failed, r.bytes_written) == (1, 0, 1 << 20)
    assert r.goodput_gbps == pytest.approx((1 << 20) * 8 / (c.time_us * 1e3))
    q = pair.qp(0)
    assert r.retransmissions == int(q["rtx_pkts"]) > 0 and r.data_packets == int(q["tx_pkts"]) - int(q["rtx_pkts"]) == 256
    assert r.counters["losses"] == r.losses > 0
    assert "1048576 B in" in str(r) and "Gb/s" in str(r)
