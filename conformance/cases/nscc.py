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
    """The IUT requester (ports 2 x 100 Gb/s: MaxWnd 1.5 x BDP = 300 kB at 8 us) and a crafted responder."""
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


def _trim(sc, req, c, pkts: list[Packet]) -> None:
    """NACK TRIMMED for `pkts`, each at its send time + base RTT: the window starts at MaxWnd
    (UE 1.0.3 Table 3-77), so it can only be seen to grow after it has given something back."""
    for p in pkts:
        sc.advance(p.time + BASE_RTT)
        sc.inject(req, c.nack(0x01, p.psn, entropy=p.ev, ts=p["tx_timestamp"]))
        sc.pull(req)


def _grow(t, delay: int, m: int = 0, n: int = 12) -> tuple[float, float]:
    """cwnd after four trims, and after `n` SACKs at `delay`; QuickAdapt off (mrc_ctl disable_qa)."""
    sc, req, rsp, c, first = _setup(t, {**CC, "disable_qa": 1}, need=4 + n)
    _trim(sc, req, c, first[:4])
    before = _cwnd(req)
    _ack_each(sc, req, c, first[4:4 + n], delay=delay, m=m)
    return before, _cwnd(req)


QUADRANTS = {
    # name: (ECN, the delays of two runs, behaviour, mutants)
    "no-ecn-low-delay": (0, (TARGET // 10, 9 * TARGET // 10),
                         "proportional increase: more headroom below the target, more growth",
                         ["no-increase", "fair-only"]),
    "no-ecn-high-delay": (0, (3 * TARGET // 2, 3 * TARGET),
                          "fair increase: the same growth however far above the target",
                          ["no-increase", "proportional-only"]),
    "ecn-high-delay": (1, (4 * TARGET,), "multiplicative decrease on the average delay, once per base RTT",
                       ["no-md", "ignores-ecn", "md-every-sack"]),
    "ecn-low-delay": (1, (0,), "no change (the EV is skipped instead: 'steer first, throttle second')",
                      ["md-on-any-ecn", "ignores-ecn"]),
}


def _quadrant(t):
    name = t.params["quadrant"]
    ecn, delays, _, _ = QUADRANTS[name]
    if name.startswith("no-ecn"):
        (b0, a0), (b1, a1) = (_grow(t, d) for d in delays)
        g0, g1 = a0 - b0, a1 - b1
        t.note("growth_bytes", (round(g0), round(g1)))
        t.expect(g0 > 0 and g1 > 0, f"cwnd grew {g0:+.0f} / {g1:+.0f} bytes at {delays[0] / US:g} / "
                                    f"{delays[1] / US:g} us of delay: did not increase")
        if name == "no-ecn-low-delay":
            t.expect(g0 >= 1.5 * g1, f"cwnd grew {g0:+.0f} bytes at {delays[0] / US:g} us and {g1:+.0f} at "
                                     f"{delays[1] / US:g} us: not proportional to the headroom below the target")
        else:
            t.expect(abs(g0 - g1) <= 0.1 * max(g0, g1), f"cwnd grew {g0:+.0f} bytes at {delays[0] / US:g} us and "
                                                        f"{g1:+.0f} at {delays[1] / US:g} us: a fair increase "
                                                        f"does not depend on the delay")
        return
    sc, req, rsp, c, first = _setup(t, {**CC, "disable_qa": 1}, need=64)
    _trim(sc, req, c, first[:4])
    # phase A: 40 SACKs of packets sent within one base RTT; the delay average climbs
    _ack_each(sc, req, c, first[4:44], delay=delays[0], m=ecn)
    # phase B, a base RTT later: 20 SACKs within a microsecond, each reporting the same delay
    before = _cwnd(req)
    at = max(p.time for p in first[:64]) + BASE_RTT + delays[0] + BASE_RTT + 1
    for k, p in enumerate(first[44:64]):
        sc.advance(at + k * 50_000)
        sc.inject(req, ack_for(c, [p], cack=p.psn, m=ecn))
        sc.pull(req)
    after = _cwnd(req)
    t.note("cwnd_before_after", (round(before), round(after)))
    change = (after - before) / before
    if delays[0] >= TARGET:
        t.expect(change <= -0.1, f"cwnd {before:.0f} -> {after:.0f} bytes ({change:+.1%}): did not decrease")
        t.expect(change >= -0.55, f"cwnd {before:.0f} -> {after:.0f} bytes ({change:+.1%}): more than one bounded "
                                  f"decrease (max_md_jump 0.5) within one base RTT")
    else:
        t.expect(abs(change) <= 0.01, f"cwnd {before:.0f} -> {after:.0f} bytes ({change:+.1%}): changed")


for _q, (_ecn, _delays, _what, _mut) in QUADRANTS.items():
    _hi = _delays[0] >= TARGET
    case(f"nscc.quadrant[{_q}]", MUST, registry=CASES,
         ref="UE 1.0.3 §3.6.13.5 NSCC.OnACK, §3.6.13.6 proportional_increase / fair_increase / "
             "multiplicative_decrease; notes §3.5 (four quadrants, MANI / EMU), §7.2",
         behaviour=f"SACKs {'with' if _ecn else 'without'} ECN (M = {'SKIP_ONCE' if _ecn else 'NONE'}) and a "
                   f"queuing delay {'above' if _hi else 'below'} target_delay give a {_what}.",
         failure=f"the window does not follow NSCC's {'ECN' if _ecn else 'no-ECN'} / "
                 f"{'high' if _hi else 'low'}-delay quadrant",
         network="crafted responder; QuickAdapt off; " + (
             f"4 trim NACKs, then 12 SACKs at {_delays[0] / US:g} us, and (new connection) at {_delays[1] / US:g} us"
             if not _ecn else f"4 trim NACKs, 40 SACKs with M = 1 at {_delays[0] / US:g} us over base RTT 8 us, "
                              f"then 20 more within 1 us a base RTT later (the window measured over those 20)"),
         mutants=_mut, needs=["cc_query"], params={"quadrant": _q})(_quadrant)


@case("nscc.quick-adapt", MUST, registry=CASES,
      ref="UE 1.0.3 §3.6.13.5 NSCC.OnNACK (a trim sets trigger_qa), §3.6.13.6 quick_adapt (at the end of a "
          "base RTT + target_qdelay period, when less than max_wnd >> qa_gate was achieved, cwnd = "
          "max(achieved, MTU)); notes §3.5 (mrc_ctl_cc_nscc_cfg disable_qa, qa_gate)",
      behaviour="After a trim NACK, once the QuickAdapt period (base RTT + target delay) ends with little "
                "acknowledged, the window drops to about what was acknowledged.",
      failure="QuickAdapt did not cut the window after a trim",
      network="crafted responder: NACK TRIMMED for the first packet, SACKs for two others",
      mutants=["no-quickadapt", "go-back-n", "ignores-trimmed"], needs=["cc_query"])
def _quick_adapt(t):
    sc, req, rsp, c, first = _setup(t)
    before = _cwnd(req)
    p0 = first[0]
    _trim(sc, req, c, [p0])
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


@case("nscc.quick-adapt-gate", MUST, registry=CASES,
      ref="UE 1.0.3 §3.6.13.6 quick_adapt: only while achieved_bytes < max_wnd >> qa_gate (qa_gate 3: an eighth "
          "of the window); notes §7.2",
      behaviour="After a trim NACK, a QuickAdapt period that acknowledged more than an eighth of the maximum "
                "window does not cut the window to what was acknowledged.",
      failure="QuickAdapt cut the window although the period achieved more than max_wnd >> qa_gate",
      network="crafted responder: NACK TRIMMED for the first packet, then SACKs for 24 others (96 KiB) "
              "within the period, and one after it",
      mutants=["no-qa-gate"], needs=["cc_query"])
def _quick_adapt_gate(t):
    sc, req, rsp, c, first = _setup(t, need=26)
    before = _cwnd(req)
    p0 = first[0]
    _trim(sc, req, c, [p0])
    _ack_each(sc, req, c, first[1:25], delay=0)
    p = first[25]
    sc.advance(p.time + 3 * BASE_RTT)  # past the end of the period (base RTT + target after the trim)
    sc.inject(req, ack_for(c, [p], cack=p.psn, m=0))
    sc.pull(req)
    after = _cwnd(req)
    t.note("cwnd_before_after", (round(before), round(after)))
    t.expect(int(before) >> 3 < 24 * MTU < before, f"initial window {before:.0f} bytes: the case needs 24 MTU "
                                                   f"to be more than an eighth of it and less than all of it")
    t.expect(after >= before / 2, f"cwnd {before:.0f} -> {after:.0f} bytes: cut although the period acknowledged "
                                  f"{24 * MTU} bytes, more than max_wnd >> 3")


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
