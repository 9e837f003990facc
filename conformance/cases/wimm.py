"""Responder cases, Write-with-Immediate: completions in message order, and the fatal errors (no receive
posted, too many waiting) with and without telling the requester.

The IUT is the responder; the requester is crafted (see `responder`).
"""
from __future__ import annotations

from ..case import MUST, SHOULD, case
from ..craft import ONLY_IMM
from .common import US, pattern, responder_pair
from .responder import EV, error_seen, naks, respond

CASES: list = []


def _wimm(sc, rsp, c, region, psn, imm):
    sc.inject(rsp, c.data(psn, pattern(64, psn), va=region.va + 64 * (psn - 100), rkey=region.rkey, ev=EV[psn % 8],
                          opcode=ONLY_IMM, imm=imm, msn=psn - 100, rqmsn=psn - 100))


@case("responder.wimm-in-order", MUST, registry=CASES,
      ref="notes §4 ('Immediate Data values that arrive early are stashed until all preceding requests have "
          "been received, at which point the completion is delivered in the correct order')",
      behaviour="Write-with-Immediate completions come in message order: one that arrives early waits for "
                "its predecessors.",
      failure="Write-with-Immediate completions are not in message order",
      network="crafted requester; WriteIMM 101 arrives before WriteIMM 100",
      mutants=["wimm-arrival-order", "in-order-only"])
def _wimm_order(t):
    sc, rsp, req, c, region = responder_pair(t)
    for k in range(2):
        rsp.ep.post_recv(10 + k)
    _wimm(sc, rsp, c, region, 101, 0xB)
    respond(sc, rsp, 5 * US)
    early = rsp.sends("recv")
    if early:
        t.fail(f"completion {early[0]} delivered before the preceding WriteIMM arrived")
    _wimm(sc, rsp, c, region, 100, 0xA)
    respond(sc, rsp, 5 * US)
    got = [(x.wr_id, x.imm, x.status) for x in rsp.sends("recv")]
    t.expect(got == [(10, 0xA, "SUCCESS"), (11, 0xB, "SUCCESS")], f"receive completions {got}, expected "
                                                                  f"[(10, 0xa), (11, 0xb)] SUCCESS")


def _no_recv(sc, rsp, c, region):
    _wimm(sc, rsp, c, region, 100, 0x5)
    return respond(sc, rsp, 10 * US)


def _overflow(sc, rsp, c, region):
    for k in range(4):
        rsp.ep.post_recv(20 + k)
    out = []
    for psn in (101, 102, 103):  # 100 missing: three WriteIMMs wait, max_wimm_dest is 2
        _wimm(sc, rsp, c, region, psn, psn)
        out += respond(sc, rsp, 2 * US)
    return out


WIMM_ERRORS = {
    "no-recv": (_no_recv, {}, "a Write-with-Immediate arrives with no receive posted (no RNR in MRC)",
                "notes §1.3 ('RNR (Receiver Not Ready) is not supported')", ["auto-post-recv"]),
    "overflow": (_overflow, {"max_wimm_dest": 2}, "more Write-with-Immediate messages wait than max_wimm_dest",
                 "notes §4 ('max_wimm_inflight negotiated; exceeding it moves the QP to an error state')",
                 ["ignores-max-wimm-dest", "in-order-only"]),
}


def _wimm_fatal(t):
    fn, iut, *_ = WIMM_ERRORS[t.params["what"]]
    sc, rsp, req, c, region = responder_pair(t, iut=iut)
    fn(sc, rsp, c, region)
    t.expect(error_seen(rsp), f"QP state {rsp.ep.qp_state()}, no QP_FATAL event: the error was not fatal")
    ok = [x for x in rsp.sends("recv") if x.status == "SUCCESS"]
    t.expect(not ok or t.params["what"] == "overflow", f"successful receive completions {ok}")


def _wimm_nak(t):
    fn, iut, *_ = WIMM_ERRORS[t.params["what"]]
    sc, rsp, req, c, region = responder_pair(t, iut=iut)
    out = fn(sc, rsp, c, region)
    t.expect(naks(out), "the responder went to ERROR without telling the requester (no NAK, no NACK "
                        "UNEXP_EVENT): the requester only finds out when its retries run out")


for _what, (_, _, _desc, _ref, _mut) in WIMM_ERRORS.items():
    case(f"responder.wimm-error-fatal[{_what}]", MUST, registry=CASES, ref=_ref,
         behaviour=f"When {_desc}, the responder QP enters ERROR.",
         failure=f"{_desc}, yet the QP did not fail", network="crafted requester", mutants=_mut,
         params={"what": _what})(_wimm_fatal)
    case(f"responder.wimm-error-nak[{_what}]", SHOULD, registry=CASES,
         ref=_ref + "; IBTA RC (a fatal responder error is NAKed)",
         behaviour=f"When {_desc}, the responder tells the requester at once (NAK or NACK UNEXP_EVENT).",
         failure=f"{_desc}, and the requester is not told", network="crafted requester",
         mutants=["no-aeth-nak", *_mut],
         params={"what": _what})(_wimm_nak)
