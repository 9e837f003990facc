"""The check's report: one line per violation (text), or one JSON document."""
from __future__ import annotations

from .check import Result
from .flows import KIND_NAMES


def _addr(res: Result, ids) -> str:
    if not ids:
        return "?"
    first = res.addresses.text(int(ids[0]))
    return first if len(ids) == 1 else f"{first} (+{len(ids) - 1} more port address{'es' if len(ids) > 2 else ''})"


def flow_name(res: Result, fr) -> str:
    f = fr.flow
    req = f"QP 0x{f.req_qpn:x}" if f.req_qpn is not None else "QP ?"
    return f"flow {f.id}: {req} at {_addr(res, f.req_addrs)} -> QP 0x{f.resp_qpn:x} at {_addr(res, f.resp_addrs)}"


def text(res: Result, *, verbose: bool = False) -> str:
    lines = [v.line() for v in res.violations]
    c = res.counts
    lines.append(f"{res.path}: {c['records']} packet(s), {c['mrc']} MRC ({c['transmissions']} transmissions), "
                 f"{c['flows']} flow(s), {c['endpoint_ops']} endpoint operation(s); {c['roce']} other RoCEv2, "
                 f"{c['other']} not RoCEv2, {c['malformed']} malformed ({c['trimmed_into_headers']} of them trimmed "
                 f"into their headers by a switch: not judged), {c['short']} cut by the snap length")
    for note in res.notes:
        lines.append(f"note: {note}")
    partial = [fr for fr in res.flows if fr.not_judged]
    for fr in partial[: None if verbose else 8]:
        why = sorted(set(fr.not_judged.values()))
        lines.append(f"note: {flow_name(res, fr)}: {len(fr.not_judged)} rule(s) not judged: {'; '.join(why)}")
    if len(partial) > 8 and not verbose:
        lines.append(f"note: ... and {len(partial) - 8} more flow(s) partly judged (--verbose lists them)")
    rtx = sum(fr.retransmissions for fr in res.flows)
    spur = sum(fr.spurious for fr in res.flows)
    if rtx:
        lines.append(f"retransmissions: {rtx}, of which {spur} spurious (of PSNs already acknowledged; counted, not "
                     "violations)")
    must = res.must_violations
    should = len(res.violations) - must
    per = {}
    for v in res.violations:
        per[v.rule] = per.get(v.rule, 0) + 1
    if res.violations:
        lines.append(f"{must} MUST and {should} SHOULD violation(s): "
                     + ", ".join(f"{k} {n}" for k, n in sorted(per.items())))
    else:
        lines.append(f"clean: no violation of the {len(res.rules)} rule(s) checked ({res.seconds:.1f} s)")
    return "\n".join(lines) + "\n"


def as_json(res: Result) -> dict:
    qps = []
    for fr in res.flows:
        f = fr.flow
        kinds = {KIND_NAMES[k]: int((f.kind == k).sum()) for k in sorted(set(f.kind.tolist()))}
        qps.append({
            "flow": f.id,
            "requester": {"qpn": f.req_qpn, "addresses": [res.addresses.text(int(a)) for a in f.req_addrs]},
            "responder": {"qpn": f.resp_qpn, "addresses": [res.addresses.text(int(a)) for a in f.resp_addrs]},
            "packets": kinds, "retransmissions": fr.retransmissions, "spurious_retransmissions": fr.spurious,
            "view": {"complete": f.view.complete, "requester": f.view.requester, "responder": f.view.responder,
                     "psn_holes": f.view.holes, "unseen_acked": f.view.unseen_acked, "unanswered_paths": f.view.unanswered_paths,
                     "mid_connection": f.view.mid_start, "missing": f.view.missing()},
            "judged": fr.judged, "not_judged": fr.not_judged,
        })
    return {
        "file": res.path,
        "packets": res.counts,
        "qps": qps,
        "violations": [{"index": v.index, "rule": v.rule, "level": v.level, "message": v.message, "flow": v.flow}
                       for v in res.violations],
        "rules": {r.id: {"level": r.level, "ref": r.ref, "behaviour": r.behaviour, **res.per_rule[r.id]}
                  for r in res.rules},
        "counts": {"must": res.must_violations, "should": len(res.violations) - res.must_violations,
                   "by_rule": {r.id: res.per_rule[r.id]["violations"] for r in res.rules}},
        "notes": res.notes,
        "seconds": round(res.seconds, 3),
        "exit_status": res.exit_status,
    }
