"""Rules on endpoint operations (QP 2): requests and the responses that answer them."""
from __future__ import annotations

from mrc.wire.constants import ENDPOINT_QPN

from ..flows import K_EPREQ, K_EPRSP
from .base import MUST, rule

EP_REF = ("notes §2.7 (endpoint operations: 'connectionless Endpoint Operations using the reserved QP number 0x2'; "
          "'unique id echoed'; OCPGH mrc_ctl_ep_req {req_id, ...} / response {req_id, port, rtt}); §2.3 "
          "(ENDPOINT_REQUEST 0xD8 / RESPONSE 0xD9); §2.4 (ERTH op, EETH: the timestamp reflected)")


@rule("endpoint.qp", MUST, scope="endpoints", ref=EP_REF,
      behaviour="Endpoint requests and responses are addressed to the reserved QP 0x2.")
def endpoint_qp(ep, ctx):
    for k in range(len(ep.tx)):
        q = int(ep.pkt["dqpn"][k])
        if q != ENDPOINT_QPN:
            what = "request" if ep.kind[k] == K_EPREQ else "response"
            yield k, f"endpoint {what} (req_id {int(ep.pkt['req_id'][k])}) to QP 0x{q:x}, not 0x{ENDPOINT_QPN:x}"


@rule("endpoint.answer-matches", MUST, scope="endpoints", ref=EP_REF,
      behaviour="Every endpoint response answers a request seen before it from the address it goes to (the same "
                "address pair reversed, so the same port), with the request's op and req_id, and reflects the "
                "request's timestamp. (Judged once a request from that address has been seen: the capture may have "
                "started after the request of an earlier response. A request without an answer is not a violation: "
                "probes test paths that may be broken.)")
def answer_matches(ep, ctx):
    reqs: dict[tuple, list[int]] = {}
    asked_by: dict[tuple, set] = {}  # (requester, responder) -> req_ids seen
    kinds, src, dst = ep.kind.tolist(), ep.txi["src"].tolist(), ep.txi["dst"].tolist()
    req_id, op, ts = ep.pkt["req_id"].tolist(), ep.pkt["ep_op"].tolist(), ep.pkt["tx_timestamp"].tolist()
    for k in range(len(kinds)):
        if kinds[k] == K_EPREQ:
            reqs.setdefault((src[k], dst[k], req_id[k]), []).append(k)
            asked_by.setdefault((src[k], dst[k]), set()).add(req_id[k])
            continue
        if kinds[k] != K_EPRSP:
            continue
        ids = asked_by.get((dst[k], src[k]))
        if not ids:
            continue  # no request from there seen yet: its request may predate the capture
        asked = reqs.get((dst[k], src[k], req_id[k]))
        if not asked:
            yield k, (f"endpoint response with req_id {req_id[k]} answers no request seen from its destination (which "
                      f"sent req_id {', '.join(str(i) for i in sorted(ids)[:6])})")
        elif not any(op[j] == op[k] for j in asked):
            yield k, f"endpoint response req_id {req_id[k]} has op {op[k]}, its request op {op[asked[-1]]}"
        elif not any(op[j] == op[k] and ts[j] == ts[k] for j in asked):
            yield k, (f"endpoint response req_id {req_id[k]} reflects timestamp {ts[k]}, its request carried "
                      f"{ts[asked[-1]]}")
