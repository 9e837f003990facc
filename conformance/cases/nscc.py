"""NSCC cases: the window's reaction in each quadrant (ECN x delay), QuickAdapt, receiver penalty, limits.

The IUT is the requester; the responder is crafted, so each SACK's M field
and the delay it reports are chosen exactly: the SACK reflects the data
packet's TSETH timestamp and is fed at ``send time + base RTT + delay``.
The CC profile is "uet-1.0-nscc" with base_rtt 8 us and target_delay 6 us
(``mrc_ctl_cc_nscc_cfg`` fields); the window is read with
`Endpoint.cc_state` (feature ``cc_query``), except in ``nscc.max-cwnd``.
"""
from __future__ import annotations

from ..adapter import EndpointConfig
from ..case import MUST, SHOULD, case
from ..craft import Crafter, ack_for
from ..packets import Packet
from .common import US, evs, pattern

CASES: list = []
BASE_RTT = 8 * US
TARGET = 6 * US
MTU = 4096
CC = {"algorithm": "uet-1.0-nscc", "base_rtt": 8000, "target_delay": 6000}


def _setup(t, cc: dict | None = None, need: int = 8):
    sc = t.scenario()
    req = sc.add("req", EndpointConfig(ports=2, evs=evs(2, 8), mtu=MTU, cc=cc or CC, timeout=14), iut=True)
    rsp = sc.crafted("rsp")
    sc.connect(req, rsp)
    req.ep.post_write(1, pattern(2 << 20), remote_va=0x10000, rkey=0x77, imm=None, now=0)
    first = [p for p in sc.pull(req) if p.is_data]
    t.expect(len(first) >= need, f"only {len(first)} packets in the initial window (the case needs {need})")
    return sc, req, rsp, Crafter(rsp, req), first


def _cwnd(req) -> float:
    return float(req.ep.cc_state()["cwnd"])


def _ack_each(sc, req, c, pkts: list[Packet], *, delay: int, m: int = 0, pen: int = 0) -> None:
    """Acknowledge `pkts` one by one, each fed at its send time + base RTT + `delay`."""
    for p in pkts:
        sc.advance(p.time + BASE_RTT + delay)
        sc.inject(req, ack_for(c, [p], cack=p.psn, m=m, rcv_cwnd_pen=pen))
        sc.pull(req)


QUADRANTS = {
    # name: (ECN, delay, expected direction, behaviour, mutants)
    "no-ecn-low-delay": (0, 0, +1, "proportional (fast) increase", ["no-increase"]),
    "no-ecn-high-delay": (0, 3 * TARGET // 2, +1, "fair increase", ["no-increase"]),
    "ecn-high-delay": (1, 2 * TARGET, -1, "multiplicative decrease", ["no-md", "ignores-ecn"]),
    "ecn-low-delay": (1, 0, 0, "no change (the EV is skipped instead: 'steer first, throttle second')",
                      ["md-on-any-ecn", "ignores-ecn"]),
}


def _quadrant(t):
    ecn, delay, direction, _, _ = QUADRANTS[t.params["quadrant"]]
    sc, req, rsp, c, first = _setup(t)
    before = _cwnd(req)
    _ack_each(sc, req, c, first[:16], delay=delay, m=ecn)
    after = _cwnd(req)
    t.note("cwnd_before_after", (round(before), round(after)))
    change = (after - before) / before
    if direction > 0:
        t.expect(after > before, f"cwnd {before:.0f} -> {after:.0f} bytes: did not increase")
    elif direction < 0:
        t.expect(change <= -0.1, f"cwnd {before:.0f} -> {after:.0f} bytes ({change:+.1%}): did not decrease")
        t.expect(change >= -0.55, f"cwnd {before:.0f} -> {after:.0f} bytes ({change:+.1%}): more than one bounded "
                                  f"decrease (max_md_jump 0.5) within one base RTT")
    else:
        t.expect(abs(change) <= 0.01, f"cwnd {before:.0f} -> {after:.0f} bytes ({change:+.1%}): changed")


for _q, (_ecn, _delay, _dir, _what, _mut) in QUADRANTS.items():
    case(f"nscc.quadrant[{_q}]", MUST, registry=CASES,
         ref="notes §3.5 (four quadrants, MANI / EMU); §7.2 and UET 1.0 NSCC (algorithm 'uet-1.0-nscc')",
         behaviour=f"SACKs {'with' if _ecn else 'without'} ECN (M = {'SKIP_ONCE' if _ecn else 'NONE'}) and a "
                   f"queuing delay {'above' if _delay >= TARGET else 'below'} target_delay give a {_what}.",
         failure=f"the window does not follow NSCC's {'ECN' if _ecn else 'no-ECN'} / "
                 f"{'high' if _delay >= TARGET else 'low'}-delay quadrant",
         network=f"crafted responder; 16 SACKs, M = {_ecn}, delay {_delay / US:g} us over base RTT 8 us",
         mutants=_mut, needs=["cc_query"], params={"quadrant": _q})(_quadrant)


@case("nscc.quick-adapt", MUST, registry=CASES,
      ref="notes §7.2 (UET 1.0 NSCC QuickAdapt: on a NACK / loss, when less than max_cwnd >> qa_gate was "
          "achieved, cwnd = max(achieved, min_cwnd)); §3.5 (mrc_ctl_cc_nscc_cfg disable_qa, qa_gate)",
      behaviour="After a trim NACK, once the QuickAdapt period (base RTT + target delay) ends with little "
                "acknowledged, the window drops to about what was acknowledged.",
      failure="QuickAdapt did not cut the window after a trim",
      network="crafted responder: NACK TRIMMED for the first packet, SACKs for two others",
      mutants=["no-quickadapt", "go-back-n", "sack-bitmap-reversed"], needs=["cc_query"])
def _quick_adapt(t):
    sc, req, rsp, c, first = _setup(t)
    before = _cwnd(req)
    p0 = first[0]
    sc.advance(p0.time + BASE_RTT)
    sc.inject(req, c.nack(0x01, p0.psn, entropy=p0.ev, ts=p0["tx_timestamp"]))
    sc.pull(req)
    for k, at in ((1, 2 * BASE_RTT), (2, 4 * BASE_RTT)):
        p = first[k]
        sc.advance(p.time + at)
        bitmap = sum(1 << j for j in range(1, k + 1))  # bit j = PSN first + j: packets 1..k received
        sc.inject(req, ack_for(c, [p], cack=(p0.psn - 1) & 0xFFFFFF, bitmap=bitmap, trigger=p))
        sc.pull(req)
    after = _cwnd(req)
    t.note("cwnd_before_after", (round(before), round(after)))
    t.expect(before >= 8 * MTU, f"initial window {before:.0f} bytes: too small for the case")
    t.expect(after <= 3 * MTU, f"cwnd {before:.0f} -> {after:.0f} bytes after a trim with 8 KiB acknowledged "
                               f"in the period (expected <= 3 MTU)")


@case("nscc.receiver-penalty", SHOULD, registry=CASES,
      ref="notes §3.5 (rcv_cwnd_pen 0-127, '127 (reduce to one packet per RTT)'); §7.2 (UET: cwnd -= "
          "newly_rcvd_bytes x pen >> 7)",
      behaviour="SACKs carrying rcv_cwnd_pen = 64 shrink the window by about half the bytes they acknowledge, "
                "compared with the same SACKs without a penalty.",
      failure="the requester ignores the receiver's window penalty",
      network="crafted responder; 8 SACKs with rcv_cwnd_pen 0, then (new connection) 64",
      mutants=["ignores-rcv-pen"], needs=["cc_query"])
def _penalty(t):
    grew = []
    for pen in (0, 64):
        sc, req, rsp, c, first = _setup(t)
        before = _cwnd(req)
        _ack_each(sc, req, c, first[:8], delay=0, pen=pen)
        grew.append(_cwnd(req) - before)
    acked = 8 * MTU
    t.note("cwnd_change_pen0_pen64", [round(g) for g in grew])
    t.expect(grew[1] <= grew[0] - 0.25 * acked, f"window change {grew[0]:+.0f} bytes without penalty, "
                                                f"{grew[1]:+.0f} with rcv_cwnd_pen 64 over {acked} bytes acknowledged")


@case("nscc.max-cwnd", MUST, registry=CASES,
      ref="notes §3.5 ('A sender may transmit only while cwnd > inflight'; mrc_ctl_cc_nscc_cfg max_cwnd)",
      behaviour="With max_cwnd = 16 KiB in the CC profile, no more than 16 KiB (plus one packet) is ever in "
                "flight, from the very first packet.",
      failure="more bytes in flight than the CC profile's max_cwnd",
      network="crafted responder that never answers",
      mutants=["ignores-cwnd"])
def _max_cwnd(t):
    sc, req, rsp, c, first = _setup(t, {**CC, "max_cwnd": 4 * MTU}, need=1)
    more = [p for p in sc.pull(req) if p.is_data]
    inflight = sum(p["payload_len"] for p in first + more)
    t.note("bytes_in_flight", inflight)
    t.expect(inflight <= 5 * MTU, f"{inflight} payload bytes sent without acknowledgement; max_cwnd is {4 * MTU}")
