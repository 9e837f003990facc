"""Responder service time (mrc.h MRC_DEVICE_CAP_SVC_TIME, MRC_QP_CAP_SVC_TIME_DEST_UNSUPPORTED): the responder
says in every SACK and NACK how long it held the packet it answers (SETH / NETH ``svc_time``, units of
64 ns), and the requester takes that off its RTT samples, so a responder that delays its ACKs does not
inflate the RTT, RACK's wait or NSCC's delay (docs/protocol.md, "Responder service time")."""
from __future__ import annotations

import pytest

from mrc.core import dispatch
from mrc.core.setup import fixed_window_profile, nscc_profile
from mrc.testing.harness import Network, Pair
from mrc.units import NS, US
from mrc.wire.constants import SVC_TIME_MAX, SVC_TIME_UNIT_PS, NackReason, Opcode

MTU = 4096


def manual_pair(**kw):
    kw.setdefault("cc", fixed_window_profile(window_bytes=1 << 30))
    kw.setdefault("ack_every_pkts", 1000)
    kw.setdefault("ack_delay_ps", 3 * US)
    return Pair(timeout=16, ack_every_bytes=1 << 30, **kw)


def answers(pair, i):
    """What QP i sends now but its reverse-EV probes (a receiving QP probes its reverse path every RTT)."""
    return [p for k, p in pair.collect(i) if k != dispatch.K_PROBE or i == 0]


# the trigger arrives at 1,002,000,333 ps; holds by hand in 16 ns ticks (one taken off), then 64 ns units
@pytest.mark.parametrize("hold_ps,units", [(0, 0), (63 * NS, 0), (3 * US, 46), (3 * US + 60 * NS, 47),
                                           (20 * US, SVC_TIME_MAX), (70 * US, SVC_TIME_MAX),
                                           (1100 * US, SVC_TIME_MAX), (1_048_776 * NS, 2)])
def test_a_sack_reports_how_long_its_trigger_was_held_never_more(hold_ps, units):
    pair = manual_pair(ack_delay_ps=hold_ps)
    pair.now = 1_000_000 * NS + 333  # not on a ns boundary: the rounding of both ends is in the test
    pair.post_write(0, 4 * MTU)
    first, *_ = answers(pair, 0)
    pair.now += 2 * US
    pair.deliver(1, first)  # not the last packet: no AckReq, the SACK waits ack_delay_ps
    pair.advance(pair.now + hold_ps)
    (sack,) = answers(pair, 1)
    assert sack["opcode"] == Opcode.MRC_RELIABILITY_SACK
    assert sack["svc_time"] == units
    assert sack["svc_time"] * SVC_TIME_UNIT_PS <= hold_ps  # never more than the true hold, even aliased (1.1 ms)
    if hold_ps < 16 * US:
        assert hold_ps - sack["svc_time"] * SVC_TIME_UNIT_PS < 96 * NS


def sack_held_10us(**attrs):
    """QP 1 gets a data packet at 2 us and holds its SACK until 12 us; QP 0 gets the SACK at 14 us."""
    pair = manual_pair(ack_delay_ps=10 * US, **attrs)
    pair.post_write(0, 4 * MTU)
    first, *_ = answers(pair, 0)
    pair.now = 2 * US
    pair.deliver(1, first)
    pair.advance(12 * US)
    (sack,) = answers(pair, 1)
    pair.now = 14 * US
    pair.deliver(0, sack)
    return sack, pair.qp(0)


def test_the_requester_takes_the_service_time_off_its_rtt_sample():
    sack, q = sack_held_10us()
    assert sack["svc_time"] == 156  # 10 us = 625 ticks of 16 ns; 624 x 16 ns = 9.984 us = 156 x 64 ns
    assert q["last_rtt"] == 14 * US - 156 * SVC_TIME_UNIT_PS  # 4.016 us: the network's round trip, to 64 ns


@pytest.mark.parametrize("side", ["report", "peer"])
def test_either_end_turned_off_gives_the_raw_sample(side):
    sack, q = sack_held_10us(**({"svc_time_report": 0} if side == "report" else {"svc_time_peer": 0}))
    assert sack["svc_time"] == (0 if side == "report" else 156)
    assert q["last_rtt"] == 14 * US


def test_a_service_time_longer_than_the_round_trip_is_ignored():
    """A peer cannot have held a packet longer than its round trip: such a report is not believed."""
    pair = manual_pair(ack_every_pkts=1)
    pair.post_write(0, 4 * MTU)
    first, *_ = answers(pair, 0)
    pair.now = 2 * US
    pair.deliver(1, first)
    (sack,) = answers(pair, 1)
    sack["svc_time"] = SVC_TIME_MAX  # 16.32 us, in a 4 us round trip
    pair.now = 4 * US
    pair.deliver(0, sack)
    assert pair.qp(0)["last_rtt"] == 4 * US


def test_nacks_and_probe_answers_carry_it_too():
    pair = manual_pair()
    pair.post_write(0, 4 * MTU)
    first, second, *_ = answers(pair, 0)
    first["trim"], first["payload_len"] = 1, 0
    pair.now = 2 * US
    pair.deliver(1, first)
    pair.now = 2 * US + 700 * NS  # the NACK leaves 700 ns after its trimmed header arrived
    (nack,) = answers(pair, 1)
    assert nack["opcode"] == Opcode.MRC_RELIABILITY_NACK and nack["nack_reason"] == NackReason.TRIMMED
    assert nack["svc_time"] == 10  # ticks 125 -> 168: 42 x 16 ns = 672 ns = 10.5 x 64 ns
    pair.qp(0)["rel_probe_pending"] = 1
    pair.now = 5 * US
    (kind, probe), = [(k, p) for k, p in pair.collect(0) if k == dispatch.K_PROBE]
    pair.now = 7 * US
    pair.deliver(1, probe)
    pair.now = 9 * US
    (answer,) = answers(pair, 1)
    assert answer["pr"] == 1 and answer["svc_time"] == 31  # ticks 437 -> 562: 124 x 16 ns = 31 x 64 ns
    pair.now = 9 * US + 100 * NS
    pair.deliver(0, answer)
    assert pair.qp(0)["last_rtt"] == 4 * US + 100 * NS - 31 * SVC_TIME_UNIT_PS


def run_delayed_acks(svc_time: int, **kw):
    """A transfer whose responder holds every SACK 10 us (coalescing by time only) on a 4 us round trip."""
    net = Network(base_delay_ps=2 * US, jitter_ps=0)
    pair = Pair(network=net, cc=nscc_profile(rate_bps=100 * 10**9, base_rtt_ps=8 * US), ack_every_pkts=65535,
                ack_every_bytes=1 << 30, ack_delay_ps=10 * US, svc_time_report=svc_time, svc_time_peer=svc_time,
                **kw)
    pair.post_write(0, 1200 * MTU)
    # looked at half way, before the last packet's AckReq brings an immediate SACK
    assert pair.run_until(lambda p: int(p.qp(0)["una_psn"]) >= 300)
    return pair.qp(0)


def test_a_responder_that_delays_acks_inflates_neither_base_rtt_nor_the_window_decisions():
    """Same transfer, same delayed ACKs (every SACK held 10 us on a 4 us round trip; the QPs start at an
    eighth of the window): with the service time the requester learns the network's RTT, its RACK and
    probe timers run on it, NSCC reads no queueing (so it takes the fast increase) and scales MaxWnd to
    the path; without it every sample is 10 us too long: the base RTT never leaves the profile's 8 us,
    so MaxWnd is twice the path's, srtt is ~13 us, and NSCC reads queueing that is not there."""
    on = run_delayed_acks(1, hint_share=8)
    off = run_delayed_acks(0, hint_share=8)
    assert 4 * US <= on["base_rtt"] < 4 * US + 64 * NS
    assert off["base_rtt"] == 8 * US  # the profile's: no sample was ever below it
    assert on["srtt"] < 5 * US and off["srtt"] > 12 * US
    assert on["max_wnd"] < 0.6 * off["max_wnd"]
    assert on["avg_delay"] < 0.1 * US and off["avg_delay"] > 0.5 * US
    assert on["increase_mode"] == 1 and off["increase_mode"] == 0
