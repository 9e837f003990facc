"""RTT samples: our own send times, the reflected TSETH timestamp only to tell transmissions apart.

The 16-bit timestamp wraps every 2^16 x ts_unit_ps (524 us at the default 8 ns), so
every RTT here is taken on a path longer than that, where the timestamp alone would
alias (docs/protocol.md, "RTT samples").
"""
from __future__ import annotations

from mrc.core import dispatch, dtypes as D, evset
from mrc.core.setup import fixed_window_profile, nscc_profile
from mrc.testing.harness import Network, Pair
from mrc.units import MS, US
from mrc.wire.constants import NackReason, Opcode

MTU = 4096
WRAP = (1 << 16) * 8_000  # ps: the default timestamp's period
RTT = 3 * MS + 1_234_567  # far from a multiple of WRAP


def long_pair(**kw):
    # RTO and probe timers far beyond the RTT: the tests decide every delivery themselves
    kw.setdefault("cc", fixed_window_profile(window_bytes=1 << 30))
    return Pair(timeout=16, reorder_window_ps=10 * MS, ack_every_pkts=1, **kw)


def answers(pair, i):
    return [p for _, p in pair.collect(i)]


def test_a_sack_is_timed_from_its_trigger_psns_send_time():
    pair = long_pair()
    pair.now = 5 * US
    pair.post_write(0, 2 * MTU)
    first, second = answers(pair, 0)
    pair.now += RTT // 2
    pair.deliver(1, second)
    (sack,) = answers(pair, 1)
    assert sack["opcode"] == Opcode.MRC_RELIABILITY_SACK and sack["psn"] == second["psn"]
    pair.now = 5 * US + RTT
    pair.deliver(0, sack)
    q = pair.qp(0)
    assert q["last_rtt"] == RTT  # exact: not RTT mod 524 us
    assert q["srtt"] == q["base_rtt"] + (RTT - q["base_rtt"]) // 8
    slot = evset.find_slot(pair.T, 0, int(second["ev"]))
    assert pair.T.ev[0, slot]["last_rtt"] == RTT


def test_a_nack_is_timed_from_the_nacked_psns_send_time_for_nscc_only():
    """The trim NACK's RTT goes to NSCC (its base RTT) only; RACK's RTT and srtt are a delivered
    packet's, so they do not move (the trimmed header skipped the queues)."""
    pair = long_pair(cc=nscc_profile(rate_bps=100 * 10**9, base_rtt_ps=8 * US))
    pair.post_write(0, MTU)
    (pkt,) = answers(pair, 0)
    pkt["trim"], pkt["payload_len"] = 1, 0
    pair.now += RTT // 2
    pair.deliver(1, pkt)
    (nack,) = answers(pair, 1)
    assert nack["opcode"] == Opcode.MRC_RELIABILITY_NACK and nack["nack_reason"] == NackReason.TRIMMED
    q = pair.qp(0)
    before = (int(q["last_rtt"]), int(q["srtt"]), float(q["cwnd"]))
    pair.now = RTT
    pair.deliver(0, nack)
    assert (int(q["last_rtt"]), int(q["srtt"])) == before[:2]
    # UE 1.0.3 3.6.13.5 NSCC.OnNACK: the trimmed packet's bytes come off the window, however long
    # the NACK took (the old model decreased from the RTT: to half here)
    assert float(q["cwnd"]) == before[2] - MTU


def test_a_probe_answer_is_timed_from_the_probe_on_the_ev_it_reflects():
    pair = long_pair()
    pair.now = 7 * US
    pair.post_write(0, MTU)
    (data,) = answers(pair, 0)
    pair.qp(0)["rel_probe_pending"] = 1  # as on_timer does when SACKs are overdue
    pair.now = 20 * US
    (kind, probe), = pair.collect(0)
    assert kind == dispatch.K_PROBE and probe["psn"] == data["psn"] + 1  # a probe consumes no PSN
    pair.now += RTT // 2
    pair.deliver(1, probe)
    (answer,) = answers(pair, 1)
    assert answer["pr"] == 1 and answer["entropy"] == probe["ev"]
    pair.now = 20 * US + RTT
    pair.deliver(0, answer)
    assert pair.qp(0)["last_rtt"] == RTT


def test_the_receivers_reverse_ev_probes_measure_a_long_path_and_nothing_flaps():
    """Only probes give the receiving QP an RTT: on a 3 ms path it must read 3 ms, and no
    reverse-EV probe may time out (their timeout is 2 srtt + the reorder window)."""
    net = Network(base_delay_ps=RTT // 2, jitter_ps=2 * US)
    pair = Pair(network=net, base_rtt_ps=RTT, cc=fixed_window_profile(window_bytes=64 * MTU, base_rtt_ps=RTT),
                timeout=14, rev_probe_interval_ps=400 * US, reorder_window_ps=RTT // 4)
    assert pair.transfer(1024 * MTU)  # 16 round trips
    receiver, sender = pair.qp(1), pair.qp(0)
    assert receiver["probes_tx"] >= 10
    assert abs(int(receiver["srtt"]) - RTT) < 50 * US, receiver["srtt"]
    assert abs(int(sender["srtt"]) - RTT) < 50 * US, sender["srtt"]
    bad = [e for e in pair.events if e["kind"] == D.E_EV_STATE and e["ev_state"] == D.EV_ASSUMED_BAD]
    assert not bad and sender["losses"] == 0 and sender["rtx_pkts"] == 0


def test_an_answer_to_an_earlier_copy_of_a_retransmitted_psn_gives_no_sample():
    """Karn's rule: only the last transmission's send time is kept; the reflected timestamp says
    which copy arrived, and an earlier copy's answer leaves every RTT estimate alone."""
    pair = long_pair(n_planes=1, evs_per_plane=4, ev_active_target=4)
    pair.post_write(0, MTU)
    (orig,) = answers(pair, 0)
    trimmed = orig.copy()
    trimmed["trim"], trimmed["payload_len"] = 1, 0
    pair.now = 10 * US
    pair.deliver(1, trimmed)
    (nack,) = answers(pair, 1)
    pair.now = 20 * US
    pair.deliver(0, nack)
    (kind, rtx), = pair.collect(0)
    assert kind == dispatch.K_RTX and rtx["tx_timestamp"] != orig["tx_timestamp"]
    q = pair.qp(0)
    before = (int(q["last_rtt"]), int(q["srtt"]))
    # an answer reflecting the first copy (its timestamp), whatever EV it came back on
    late = orig.copy()
    late["ev"] = rtx["ev"]
    pair.now = RTT
    pair.deliver(1, late)
    (sack,) = answers(pair, 1)
    assert sack["tx_timestamp"] == orig["tx_timestamp"]
    pair.deliver(0, sack)
    assert (int(q["last_rtt"]), int(q["srtt"])) == before
    assert q["una_psn"] == 1  # the acknowledgement itself counts
