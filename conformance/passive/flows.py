"""Each QP's conversation rebuilt from the transmissions: by address, QP number and PSN space.

One *flow* is one direction of a connected QP pair: the requester's data and reliability probes
to the responder's QP, and the responder's SACKs, NACKs and AETH (N)ACKs back. A QP pair that
writes both ways is two flows.

What ties the packets of a flow together (mrc-public-notes 2.4): data and probes carry the
responder's QP number (BTH DestQP, 24 bits); SACKs and NACKs carry the requester's (DestQP) and
the responder's low 16 bits (SETH / NETH ``spdcid``); probes carry both low halves (PETH
``spdcid`` / ``dpdcid``). Addresses are per NIC port (one per plane: MANI, "every port ... its own
management IP address"), so a flow is first rebuilt per address pair (a *subflow*) and the
subflows of one QP pair (planes) are merged by their QP numbers, provided that is consistent:
no two of them share an address, and their PSNs interleave as one PSN space (no PSN sent for the
first time in two of them; ranges that overlap). QP numbers that several host pairs reuse are
thus kept apart, at worst as partial flows (judged less), never merged wrongly.

PSNs are 24 bits and wrap; every PSN a flow carries (data and probe PSNs, cumulative ACKs, NACK
PSNs) is unwrapped into one 64-bit sequence along the flow (`Flow.u`).

What a flow lets the rules judge (`View`): whether both directions are in the capture, whether
every PSN between the first one seen and the last was seen (a capture of one plane of several,
or of part of the paths, misses some), whether feedback was seen wherever data went, and
whether the capture starts mid-connection.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from mrc.wire.records import PKT

from .observe import TXI

K_DATA, K_PROBE, K_SACK, K_NACK, K_ACK, K_EPREQ, K_EPRSP, K_OTHER = range(8)
KIND_NAMES = ("data", "probe", "SACK", "NACK", "ACK", "endpoint request", "endpoint response", "other")
_KIND = np.full(256, K_OTHER, np.uint8)
_KIND[0xC6:0xCC] = K_DATA
_KIND[0xDE] = K_PROBE
_KIND[0xDC] = K_SACK
_KIND[0xDD] = K_NACK
_KIND[0xD1] = K_ACK
_KIND[0xD8] = K_EPREQ
_KIND[0xD9] = K_EPRSP
REQUESTER_KINDS = (K_DATA, K_PROBE)
RESPONDER_KINDS = (K_SACK, K_NACK, K_ACK)

HALF = 1 << 23
PSN_MOD = 1 << 24


def kinds(opcodes: np.ndarray) -> np.ndarray:
    return _KIND[opcodes]


def signed24(d: np.ndarray) -> np.ndarray:
    """A PSN difference taken modulo 2^24 into [-2^23, 2^23)."""
    return (np.asarray(d, np.int64) + HALF) % PSN_MOD - HALF


@dataclasses.dataclass
class View:
    """What the capture shows of a flow (each item is a reason some rules are not judged)."""

    requester: bool  # data or probes seen
    responder: bool  # SACKs, NACKs or ACKs seen
    holes: int  # PSNs between the first and the last seen that were never seen (lost before the capture point, too)
    unseen_acked: int  # of those, PSNs the responder acknowledged cumulatively: they got through where we did not look
    unanswered_paths: int  # address pairs that carried data with no feedback seen back on them (a responder may answer
    # on another plane: told, not a reason to judge less)
    mid_start: bool  # the capture starts after the flow did
    first_psn: int | None  # unwrapped PSN of the first new data packet seen (judging starts there)

    @property
    def complete(self) -> bool:
        return self.requester and self.responder and self.unseen_acked == 0

    def missing(self) -> list[str]:
        """Why the view is not complete, in words."""
        out = []
        if not self.requester:
            out.append("only the responder's side is in the capture (no data)")
        if not self.responder:
            out.append("only the requester's side is in the capture (no SACK, NACK or ACK)")
        if self.unseen_acked:
            out.append(f"{self.unseen_acked} PSN(s) were acknowledged but never seen (the capture covers part of the "
                       "planes or paths)")
        return out


@dataclasses.dataclass
class Flow:
    id: int
    req_addrs: tuple  # address ids of the requester's ports seen
    resp_addrs: tuple
    req_qpn: int | None  # the requester's QP number (24 bits from SACK / NACK DestQP; None: not seen)
    resp_qpn: int  # the responder's (24 bits from data, else the 16 of SETH spdcid)
    tx: np.ndarray  # indices into the capture's transmissions, in capture order
    pkt: np.ndarray  # their PKT rows (first sightings)
    txi: np.ndarray  # their TXI rows
    kind: np.ndarray  # K_* per row
    u: np.ndarray  # unwrapped PSN per row: data / probe / ACK PSN, SACK cack_psn, NACK nack_psn
    view: View = None  # type: ignore[assignment]


@dataclasses.dataclass
class Endpoints:
    """The endpoint operations (QP 2): connectionless, judged by address pair and request id."""

    tx: np.ndarray
    pkt: np.ndarray
    txi: np.ndarray
    kind: np.ndarray


def _first_new(pk, kd) -> int | None:
    new = np.flatnonzero((kd == K_DATA) & (pk["rtx"] == 0))
    return int(new[0]) if len(new) else None


def _subflows(pkt, txi, kind):
    """Transmission rows per subflow (requester addr, responder addr, responder QPN low 16 bits), and what each
    tells of the QP numbers."""
    req = np.isin(kind, REQUESTER_KINDS)
    rsp = np.isin(kind, (K_SACK, K_NACK))
    a = np.where(req, txi["src"], txi["dst"]).astype(np.int64)
    b = np.where(req, txi["dst"], txi["src"]).astype(np.int64)
    qb16 = np.where(req, pkt["dqpn"] & 0xFFFF, pkt["spdcid"]).astype(np.int64)
    sel = np.flatnonzero(req | rsp)
    subs: dict[tuple, dict] = {}
    for i, ai, bi, qi in zip(sel.tolist(), a[sel].tolist(), b[sel].tolist(), qb16[sel].tolist()):
        s = subs.get((ai, bi, qi))
        if s is None:
            s = subs[(ai, bi, qi)] = {"rows": [], "qb24": None, "qa": None, "qa16": None}
        s["rows"].append(i)
    for key, s in subs.items():
        rows = np.array(s["rows"], np.int64)
        k = kind[rows]
        d = rows[k == K_DATA]
        if len(d):
            s["qb24"] = int(pkt["dqpn"][d[0]])
        fb = rows[(k == K_SACK) | (k == K_NACK)]
        if len(fb):
            s["qa"] = int(pkt["dqpn"][fb[0]])
            s["qa16"] = s["qa"] & 0xFFFF
        else:
            pr = rows[k == K_PROBE]
            if len(pr):
                s["qa16"] = int(pkt["spdcid"][pr[0]])
    # AETH ACKs (no responder QPN): to the subflow of their address pair whose requester QPN they carry
    by_qa: dict[tuple, tuple] = {}
    for key, s in subs.items():
        if s["qa"] is not None:
            by_qa.setdefault((key[0], key[1], s["qa"]), key)
    orphan = []
    for i in np.flatnonzero(kind == K_ACK).tolist():
        key = by_qa.get((int(txi["dst"][i]), int(txi["src"][i]), int(pkt["dqpn"][i])))
        if key is None:
            orphan.append(i)
        else:
            subs[key]["rows"].append(i)
    return subs, orphan


def _psn_range(pkt, kind, rows) -> tuple[np.ndarray, np.ndarray]:
    """PSNs sent new (rtx 0) in `rows`, and the range they and the cumulative ACKs span (unwrapped locally)."""
    rows = np.sort(np.asarray(rows, np.int64))
    k = kind[rows]
    v = np.where(k == K_SACK, pkt["cack_psn"][rows], np.where(k == K_NACK, pkt["nack_psn"][rows], pkt["psn"][rows]))
    u = _unwrap(v.astype(np.int64))
    new = (k == K_DATA) & (pkt["rtx"][rows] == 0)
    return u[new], u


def _unwrap(v: np.ndarray) -> np.ndarray:
    if not len(v):
        return v
    u = np.empty(len(v), np.int64)
    u[0] = v[0]
    if len(v) > 1:
        u[1:] = v[0] + np.cumsum(signed24(np.diff(v)))
    return u


def _fits(c: dict, key: tuple, new, span) -> bool:
    """Can subflow `key` belong to the QP pair of cluster `c`?"""
    if key[0] in c["a"] or key[1] in c["b"]:
        return False  # two subflows of one QP pair never share an address: another host pair
    if key[0] in c["b"] or key[1] in c["a"]:
        return False  # the roles swapped: the other direction of the pair (both QPs may have the same number)
    if len(np.intersect1d(new, c["new"])):
        return False  # the same PSN sent new twice: another QP pair with the same QP numbers
    # PSN ranges are compared when both carried data (probes and feedback alone say little of a PSN space)
    return not len(new) or not len(c["new"]) or span is None or c["span"] is None or _overlap(span, c["span"])


def _join(c: dict, key: tuple, new, span) -> None:
    c["keys"].append(key)
    c["a"].add(key[0])
    c["b"].add(key[1])
    c["new"] = np.union1d(c["new"], new)
    c["span"] = _union_span(c["span"], span)


def _merge(subs: dict, pkt, kind) -> list[list[tuple]]:
    """Subflows grouped into flows (lists of subflow keys): by QP numbers, when consistent.

    Subflows whose requester QPN is known (feedback, probes) are clustered per (requester, responder) QPN pair;
    one that carried only data (its feedback went back on another plane, or is not in the capture) then joins the
    one cluster of its responder QPN it fits, if there is exactly one."""
    info = {}
    for key, s in subs.items():
        new, u = _psn_range(pkt, kind, s["rows"])
        # spans in 24-bit PSN space: (start, length) of what the subflow's rows cover
        info[key] = (new % PSN_MOD, (int(u.min()) % PSN_MOD, int(u.max() - u.min())) if len(u) else None)
    groups: dict[tuple, list[tuple]] = {}
    alone = []
    for key, s in subs.items():
        if s["qa16"] is None:
            alone.append(key)
        else:
            groups.setdefault((s["qa16"], key[2]), []).append(key)
    clusters: list[dict] = []
    for keys in groups.values():
        mine: list[dict] = []
        for key in sorted(keys, key=lambda k: len(subs[k]["rows"]), reverse=True):
            new, span = info[key]
            c = next((c for c in mine if _fits(c, key, new, span)), None)
            if c is None:
                mine.append({"keys": [key], "a": {key[0]}, "b": {key[1]}, "new": new, "span": span, "qb16": key[2]})
            else:
                _join(c, key, new, span)
        clusters += mine
    by_qb: dict[int, list[dict]] = {}
    for c in clusters:
        by_qb.setdefault(c["qb16"], []).append(c)
    out = []
    for key in alone:
        new, span = info[key]
        fits = [c for c in by_qb.get(key[2], []) if _fits(c, key, new, span)]
        if len(fits) == 1:
            _join(fits[0], key, new, span)
        else:
            out.append([key])
    return out + [c["keys"] for c in clusters]


def _overlap(s1, s2) -> bool:
    """Two PSN ranges (start mod 2^24, length) overlap (modulo 2^24)."""
    d = int(signed24(np.int64(s2[0] - s1[0])))
    return (0 <= d <= s1[1]) or (0 <= -d <= s2[1])


def _union_span(s1, s2):
    if s1 is None:
        return s2
    if s2 is None:
        return s1
    d = int(signed24(np.int64(s2[0] - s1[0])))
    lo = min(0, d)
    hi = max(s1[1], d + s2[1])
    return ((s1[0] + lo) % PSN_MOD, hi - lo)


def build(pkt: np.ndarray, txi: np.ndarray) -> tuple[list[Flow], Endpoints, np.ndarray]:
    """Flows, endpoint operations, and the transmissions that belong to no flow (AETH ACKs of unknown QPs)."""
    kind = kinds(pkt["opcode"])
    subs, orphan = _subflows(pkt, txi, kind)
    flows = []
    for fid, keys in enumerate(_merge(subs, pkt, kind)):
        rows = np.sort(np.concatenate([np.asarray(subs[k]["rows"], np.int64) for k in keys]))
        s0 = [subs[k] for k in keys]
        qa = next((s["qa"] for s in s0 if s["qa"] is not None), None)
        qb24 = next((s["qb24"] for s in s0 if s["qb24"] is not None), keys[0][2])
        f = Flow(fid, tuple(sorted({k[0] for k in keys})), tuple(sorted({k[1] for k in keys})), qa, qb24, rows,
                 pkt[rows], txi[rows], kind[rows], np.zeros(0, np.int64))
        f.u = _unwrap(_psn_values(f.pkt, f.kind))
        f.view = _view(f)
        flows.append(f)
    ep = np.flatnonzero((kind == K_EPREQ) | (kind == K_EPRSP))
    return flows, Endpoints(ep, pkt[ep], txi[ep], kind[ep]), np.array(orphan, np.int64)


def _psn_values(pk, kd) -> np.ndarray:
    return np.where(kd == K_SACK, pk["cack_psn"], np.where(kd == K_NACK, pk["nack_psn"], pk["psn"])).astype(np.int64)


def _view(f: Flow) -> View:
    kd, pk = f.kind, f.pkt
    data = kd == K_DATA
    req = np.isin(kd, REQUESTER_KINDS)
    rsp = np.isin(kd, RESPONDER_KINDS)
    i0 = _first_new(pk, kd)
    holes = unseen_acked = 0
    first_psn = None
    mid = bool(data.any())  # data, but none sent new: only retransmissions of PSNs from before the capture
    if i0 is not None:
        first_psn = int(f.u[i0])
        du = f.u[data]
        seen = np.unique(du[du >= first_psn])
        holes = int(seen[-1] - first_psn + 1 - len(seen)) if len(seen) else 0
        # PSNs below the highest cumulative ACK (and the highest PSN seen) never seen: they reached the responder by
        # a way the capture does not show. (PSNs missing above it may just be lost before the capture point.)
        acks = f.u[(kd == K_SACK)]
        if len(acks) and len(seen):
            top = min(int(acks.max()), int(seen[-1]))
            unseen_acked = int(top - first_psn + 1 - np.searchsorted(seen, top, side="right")) if top >= first_psn else 0
        # mid-connection: the first new packet is inside a message, or data from before it is resent, or the
        # responder acknowledges less than everything before it
        mid = int(pk["opcode"][i0]) not in (0xC6, 0xCA, 0xCB) or bool((data & (f.u < first_psn)).any()) \
            or bool(((kd == K_SACK) & (f.u < first_psn - 1)).any())
    # an address pair that carried data must have had feedback back on it: a responder answers on the plane the
    # trigger came in on (control packets take the reverse EV set of that plane, MANI 3.8)
    a = np.where(req, f.txi["src"], f.txi["dst"]).astype(np.int64)
    b = np.where(req, f.txi["dst"], f.txi["src"]).astype(np.int64)
    pair = a << 32 | b
    unanswered = len(np.setdiff1d(pair[data], pair[rsp])) if rsp.any() else 0
    return View(bool(req.any()), bool(rsp.any()), holes, unseen_acked, unanswered, mid, first_psn)


__all__ = ["Flow", "View", "Endpoints", "build", "kinds", "signed24", "PKT", "TXI"]
