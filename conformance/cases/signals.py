"""Signals between the ends: the requester's reaction to the NACK reasons NO_BITMAP, PSN_OOR_WINDOW and
UNEXP_EVENT, the receiver penalty a responder puts in its SACKs, and the answer to an EV-probe endpoint
request (NO_PKT_BUFFER is `requester.resource-nack`, the trim reasons are in `recovery`).
"""
from __future__ import annotations

from mrc.wire.constants import NackReason

from ..case import MUST, SHOULD, case
from ..craft import Crafter
from .common import MS, US, pattern, post, requester_pair, responder_pair, retransmissions, sends_done
from .responder import EV, respond, sacks

CASES: list = []


# --- NACK reasons -------------------------------------------------------------------------------------

def _nack_run(t, reason: int, psn_of=lambda first, last: first.psn):
    """A 16-packet write; the tester's first SACK is replaced by a NACK `reason` naming PSN `psn_of(first
    data packet, last data packet sent so far)`. Returns (scenario, requester, the NACK's arrival, its PSN)."""
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=1024))
    state = {"psn": None}

    def route(sc, p):
        if state["psn"] is None and p.src == "rsp" and p.kind == "sack":
            sent = sc.data_sent(req)
            psn = psn_of(sent[0], sent[-1])
            state["psn"] = psn
            nack = Crafter(rsp, req).nack(reason, psn, entropy=sent[0].ev, ts=sent[0]["tx_timestamp"])
            return [(0, nack, f"replaced by NACK {reason:#x}")]
        return None

    sc.route = route
    data = pattern(16 * 1024)
    post(sc, req, 1, data, region, 0)
    sc.run(sends_done(req, 1), max_ps=sc.now + 20 * MS)
    t.expect(state["psn"] is not None, "tester problem: no SACK to replace")
    nack = [p for p in sc.log if p.src == "rsp" and p.fate.startswith("replaced")]
    return sc, req, rsp, region, data, nack[0].arrived if nack else None, state["psn"]


NACK_REASONS = {
    # variant: (code, what the requester must do, mutants)
    "no-bitmap": (int(NackReason.NO_BITMAP), "resend the packet at once and go on (a resource NACK: the "
                  "responder had no PSN tracking state for it; not fatal)", ["no-bitmap-fatal"]),
    "psn-oor-window": (int(NackReason.PSN_OOR_WINDOW), "resend the packet at once and go on (the PSN fell "
                       "outside the responder's tracking window and was dropped; NETH carries no MPR, the "
                       "window is learnt from SETH)", ["oor-nack-ignored"]),
    "unexp-event": (int(NackReason.UNEXP_EVENT), "fail: the QP enters ERROR and the write completes with an "
                    "error; the same NACK naming a PSN never sent is not the peer's and changes nothing",
                    ["unexp-event-ignored", "accepts-oow-nack"]),
}


def _nack_reason(t):
    variant = t.params["variant"]
    code = NACK_REASONS[variant][0]
    if variant != "unexp-event":
        sc, req, rsp, region, data, arrived, psn = _nack_run(t, code)
        got = req.sends("send")
        t.expect([c.status for c in got] == ["SUCCESS"], f"completions {got} after NACK {code:#x}, expected one "
                                                          f"SUCCESS (the QP must not fail)")
        t.expect(rsp.ep.read_mr(region)[:len(data)] == data, "the bytes placed at the responder differ")
        rtx = [p for p in retransmissions(sc.data_sent(req)) if p.psn == psn and p.time >= arrived]
        t.expect(rtx, f"PSN {psn} was not retransmitted after NACK {code:#x} named it")
        lag = rtx[0].time - arrived
        t.note("rtx_after_nack_us", lag / US)
        t.expect(lag <= 1 * US, f"PSN {psn} retransmitted {lag / US:.1f} us after its NACK {code:#x} arrived "
                                f"(limit 1 us)")
        return
    # in window: a PSN the requester sent and has not seen acknowledged
    sc, req, rsp, region, data, arrived, psn = _nack_run(t, code)
    got = [(c.wr_id, c.status) for c in req.sends("send")]
    t.expect(req.ep.qp_state() == "ERROR", f"QP state {req.ep.qp_state()} after NACK UNEXP_EVENT for PSN {psn} "
                                           f"in flight, expected ERROR (completions {got})")
    t.expect(got and got[0][1] != "SUCCESS", f"completions {got}: the write must complete with an error status")
    # out of window: a PSN far beyond anything sent (the hardening rule: not from our peer, dropped)
    sc, req, rsp, region, data, arrived, psn = _nack_run(t, code, lambda first, last: (last.psn + 5000) & 0xFFFFFF)
    got = [(c.wr_id, c.status) for c in req.sends("send")]
    t.expect(got == [(1, "SUCCESS")], f"completions {got} after NACK UNEXP_EVENT for PSN {psn}, never sent: a "
                                      f"NACK outside the window must be dropped")
    t.expect(req.ep.qp_state() == "RTS", f"QP state {req.ep.qp_state()} after a NACK for a PSN never sent")


for _v, (_code, _what, _mut) in NACK_REASONS.items():
    case(f"requester.nack-reason[{_v}]", MUST, registry=CASES,
         ref="notes §2.5 (NACK codes: NO_BITMAP 0x06 'responder ran out of PSN tracking resources', "
             "PSN_OOR_WINDOW 0x0B 'PSN fell outside the responder's tracking window', UNEXP_EVENT 0x19 'Fatal "
             "error'); §2.4 (NETH: no MPR field); §7.1 (UET NACK codes); project choice (a NACK naming a PSN "
             "never sent is dropped: packets from the network are hostile until they fit the window)",
         behaviour=f"A NACK {NackReason(_code).name} for a PSN in flight makes the requester {_what}.",
         failure=f"the requester does not react to NACK {NackReason(_code).name} as it must",
         network=f"the responder's first SACK of a 16-packet write is replaced by NACK {NackReason(_code).name} "
                 f"naming the first PSN" + (" (and, on a new connection, a PSN 5000 beyond the last sent)"
                                            if _v == "unexp-event" else ""),
         mutants=_mut, params={"variant": _v})(_nack_reason)


# --- receiver penalty -----------------------------------------------------------------------------------

@case("responder.rcv-cwnd-pen", SHOULD, registry=CASES,
      ref="notes §2.4 (CC_STATE rcv_cwnd_pen 7b); §3.5 ('ranges from 0 (no effect) to 127 (reduce to one packet "
          "per RTT)'); §7.2 (UET destination flow control: cwnd -= newly_rcvd_bytes x pen >> 7); peer notes "
          "(UET ACK_CC cc_state rcv_cwnd_pend: the receiver pushes back only when it cannot keep up)",
      behaviour="A responder that keeps up with what arrives (here 32 packets placed as they come, nothing "
                "waiting) puts rcv_cwnd_pen = 0 in every SACK: a penalty is the receiver pushing back, and "
                "anything else would throttle a sender for nothing.",
      failure="an uncongested responder asks the requester to shrink its window",
      network="crafted requester, 32 packets with AckReq on 8 EVs",
      mutants=["spurious-rcv-pen"])
def _rcv_cwnd_pen(t):
    sc, rsp, req, c, region = responder_pair(t)
    out = []
    for k in range(32):
        sc.inject(rsp, c.data(100 + k, pattern(512, k), va=region.va + 512 * k, rkey=region.rkey, msn=k,
                              ev=EV[k % 8]))
        out += respond(sc, rsp, 1 * US)
    got = sacks(out)
    t.expect(len(got) >= 8, f"{len(got)} SACKs for 32 packets with AckReq")
    pens = sorted({s["rcv_cwnd_pen"] for s in got})
    t.note("rcv_cwnd_pen_values", pens)
    t.expect(pens == [0], f"rcv_cwnd_pen {pens} in the SACKs of a responder with nothing waiting, expected 0")


# --- EV-probe endpoint operation --------------------------------------------------------------------------

@case("controller.ev-probe-response", MUST, registry=CASES,
      ref="notes §2.7 (EV Probes: 'connectionless Endpoint Operations using the reserved QP number 0x2'; 'unique "
          "id echoed; measure forward reachability and RTT'; OCPGH mrc_ctl_ep_req / response {req_id, port, "
          "rtt}); §2.4 (ERTH op 1 = EV_PROBE, EETH: the timestamp reflected); §2.3 (ENDPOINT_REQUEST 0xD8 / "
          "RESPONSE 0xD9)",
      behaviour="An EV-probe endpoint request (0xD8 to QP 0x2, ERTH op EV_PROBE) that arrives on a port is "
                "answered on that port with an ENDPOINT_RESPONSE (0xD9 to QP 0x2) to the sender, echoing op, "
                "req_id and the request's timestamp (so the sender can match it and take the RTT).",
      failure="an EV probe is not answered, or its answer cannot be matched to it",
      network="crafted peer: three EV probes with different req_id, EV and timestamp, on ports 2, 1, 2",
      mutants=["ep-probe-ignored", "ep-probe-wrong-id"])
def _ev_probe(t):
    sc, rsp, req, c, region = responder_pair(t)
    for req_id, port, ev, ts in ((0x1234, 2, EV[5], 0x4321), (0x0001, 1, EV[6], 0x0102), (0xBEEF, 2, EV[7], 0xFFFE)):
        sc.inject(rsp, c.ep_request(1, req_id, ev=ev, ts=ts), port=port)
        got = [p for p in respond(sc, rsp, 10 * US) if p.kind == "ep_rsp"]
        t.expect(got, f"no ENDPOINT_RESPONSE within 10 us to EV probe req_id {req_id:#x} on port {port}")
        r = got[0]
        t.expect(len(got) == 1, f"{len(got)} responses to one EV probe")
        t.expect(r["dqpn"] == 2, f"the response goes to QP {r['dqpn']:#x}, expected 0x2 (endpoint operations)")
        t.expect(r["ep_op"] == 1, f"the response says op {r['ep_op']}, expected 1 (EV_PROBE)")
        t.expect(r["req_id"] == req_id, f"the response echoes req_id {r['req_id']:#x}, expected {req_id:#x}")
        t.expect(r["tx_timestamp"] == ts, f"the response reflects timestamp {r['tx_timestamp']:#x}, expected {ts:#x}")
        t.expect(r.port == port, f"the probe arrived on port {port}, its answer left on port {r.port}")
        t.expect(r.dst_address == req.address, "the response is not addressed to the probe's sender")


@case("controller.ev-probe-rtt", MUST, registry=CASES,
      ref="notes §2.7 (EV probes 'measure forward reachability and RTT'; 'unique id echoed'; OCPGH "
          "mrc_ctl_ep_req {req_id, sgid, dgid, req_ev (+port)}, response {req_id, port, rtt (ns)}, batched "
          "send-and-wait); §2.4 (ERTH op 1 = EV_PROBE); §2.3 (0xD8 / 0xD9, QP 0x2)",
      behaviour="Asked to probe one of its EVs on port 2, the endpoint sends an ENDPOINT_REQUEST (0xD8 to QP 0x2, "
                "op EV_PROBE) on port 2 carrying that EV and the request id; an answer with another req_id is "
                "not taken for it; the answer with its req_id, 7 us later, is reported once, on port 2, with an "
                "RTT of 7 us.",
      failure="the endpoint's EV probe does not go out as asked, or its answer is not matched and timed",
      network="crafted peer: an answer with a req_id never asked for after 3 us, then the right answer after 7 us",
      mutants=["ep-probe-wrong-ev", "ep-rsp-any-id"], needs=["ep_probe"])
def _ev_probe_rtt(t):
    sc, rsp, req, c, region = responder_pair(t)
    ev = next(e for e, port in rsp.cfg.evs if port == 2)
    start = sc.now
    rsp.ep.ev_probe(0x0042, ev, 2, sc.now)
    out = [p for p in sc.pull(rsp) if p.kind == "ep_req"]
    t.expect(len(out) == 1, f"{len(out)} endpoint requests sent for one EV probe")
    r = out[0]
    t.expect((r["dqpn"], r["ep_op"], r["req_id"]) == (2, 1, 0x42),
             f"request to QP {r['dqpn']:#x}, op {r['ep_op']}, req_id {r['req_id']:#x}: expected QP 0x2, op 1 "
             f"(EV_PROBE), req_id 0x42")
    t.expect(r.port == 2 and r.ev == ev, f"the probe left on port {r.port} with EV {r.ev:#x}, asked: port 2, "
                                         f"EV {ev:#x}")
    t.expect(r.dst_address == req.address, "the probe is not addressed to the QP's peer")
    sc.advance(start + 3 * US)
    sc.inject(rsp, c.ep_response(1, 0x0043, ev=0x0B0B0002, ts=r["tx_timestamp"]), port=2)
    early = rsp.ep.ep_responses()
    t.expect(not early, f"an answer with req_id 0x43 (never asked) was reported: {early}")
    sc.advance(start + 7 * US)
    sc.inject(rsp, c.ep_response(1, 0x0042, ev=0x0B0B0002, ts=r["tx_timestamp"]), port=2)
    got = rsp.ep.ep_responses()
    t.expect(len(got) == 1, f"answers reported {got}, expected the one to req_id 0x42")
    a = got[0]
    t.note("rtt_ns", a.rtt_ns)
    t.expect(a.req_id == 0x42 and a.port == 2, f"answer {a}: expected req_id 0x42 on port 2")
    t.expect(6900 <= a.rtt_ns <= 7100, f"RTT {a.rtt_ns} ns reported for an answer that came 7000 ns after the "
                                       f"probe")
