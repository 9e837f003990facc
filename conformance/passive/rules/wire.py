"""Rules on each packet alone: layout, reserved bits, ICRC, UDP checksum, TSETH on data."""
from __future__ import annotations

import numpy as np

from mrc.wire.errors import decode_error

from .. import decode as D
from ..observe import mix
from .base import MUST, SHOULD, rule


def _first_flagged(ctx, flagged: np.ndarray) -> np.ndarray:
    """Records flagged whose transmission was not flagged on an earlier sighting (a packet damaged on its way is
    reported where it is first seen damaged, once)."""
    rows = np.flatnonzero(flagged)
    if not len(rows):
        return rows
    tx = ctx.of[rows]
    _, first = np.unique(tx, return_index=True)
    return rows[np.sort(first)]


def _where(ctx, row) -> str:
    """' (interface NAME)' for a capture with several interfaces."""
    if len(ctx.interfaces) <= 1:
        return ""
    i = int(ctx.rec["iface"][row])
    name = ctx.interfaces[i].name if 0 <= i < len(ctx.interfaces) else str(i)
    return f" (on {name or f'interface {i}'})"


def _earlier_clean(ctx, row) -> str:
    """What to add when an earlier sighting of the packet was intact (`_first_flagged` keeps the first damaged one):
    it was damaged on its way."""
    first = int(ctx.txi["row"][ctx.of[row]])
    if first != row:
        return f"; record {int(ctx.rec['index'][first])} shows it intact: changed in the network"
    return ""


@rule("wire.reserved-zero", MUST, scope="record",
      ref="notes §2.4 (header tables 6-3...6-9, 7-10...7-23: field layouts and reserved bits); IBTA (reserved fields "
          "are sent as 0)",
      behaviour="Every reserved field of BTH (tver, resv6, r, resv4) and of the MRC extension headers is zero.")
def reserved_zero(ctx):
    for row in _first_flagged(ctx, (ctx.rec["flags"] & D.F_RESERVED) != 0):
        mask = int(ctx.rec["reserved"][row])
        names = [h for k, h in enumerate(D.HEADERS) if mask >> k & 1]
        yield int(ctx.rec["index"][row]), (f"reserved bits set in {', '.join(names)} of a "
                                           f"{_op(ctx.pkt['opcode'][row])} (PSN {int(ctx.pkt['psn'][row])})"
                                           f"{_where(ctx, row)}")


@rule("wire.icrc", MUST, scope="record",
      ref="notes §2.1 (the RoCEv2 stack ends in the ICRC); IBTA Annex A17 (ICRC over the masked IP / UDP / BTH and "
          "the rest); a trimmed packet has none (notes §2.6)",
      behaviour="Every packet that is not trimmed ends with the right ICRC.")
def icrc(ctx):
    return _wrong(ctx, D.F_ICRC, "ICRC")


def _wrong(ctx, flag: int, what: str):
    """(record, message) for each packet first seen with the wire flag `flag` (a checksum that is wrong)."""
    for row in _first_flagged(ctx, (ctx.rec["flags"] & flag) != 0):
        yield int(ctx.rec["index"][row]), (f"wrong {what} on a {_op(ctx.pkt['opcode'][row])} (PSN "
                                           f"{int(ctx.pkt['psn'][row])}){_where(ctx, row)}"
                                           f"{_earlier_clean(ctx, row)}")


@rule("wire.udp-checksum", MUST, scope="record",
      ref="RFC 768 / RFC 8200 §8.1 (UDP checksum); IBTA Annex A17 (RoCEv2 may send 0: not computed)",
      behaviour="A UDP checksum that is not zero is right (trimmed packets, rewritten by the switch, are not judged).")
def udp_checksum(ctx):
    return _wrong(ctx, D.F_UDP, "UDP checksum")


@rule("wire.malformed", MUST, scope="record",
      ref="notes §2.1-2.5 (packet stacks, opcodes and the headers each carries); mrc.wire decodes every layout",
      behaviour="Every RoCEv2 packet (UDP to 4791) decodes: known opcode, its headers complete, lengths that agree, "
                "no payload on a kind that carries none (a packet a switch trimmed into its headers is not judged).")
def malformed(ctx):
    bad, pk = ctx.bad, ctx.bad_pkt
    last: dict[tuple, int] = {}  # one packet seen at several places is reported once (where first seen)
    same = int(ctx.options.same_us * 1000)
    for k in range(len(bad)):
        if bad["flags"][k] & D.F_TRIMMED_CUT:
            continue
        key = (int(bad["code"][k]), int(bad["src"][k]), int(bad["dst"][k]), int(pk["opcode"][k]), int(pk["dqpn"][k]),
               int(pk["psn"][k]))
        t = int(bad["t"][k])
        seen = last.get(key)
        last[key] = t
        if seen is not None and t - seen <= same:
            continue
        err = decode_error(int(bad["code"][k]))
        yield int(bad["index"][k]), f"does not decode: {err}"


@rule("wire.tseth", SHOULD, scope="record",
      ref="notes §2.4 (TSETH: a 16-bit transmit timestamp 'reflected in the SACK's CC_STATE'; BTH ts bit); §3.5 "
          "(NSCC takes the RTT from the reflected timestamp)",
      behaviour="Data packets carry a TSETH (BTH ts = 1, ftype 1) so that SACKs can reflect their timestamp.")
def tseth(ctx):
    p = ctx.tx_pkt
    op = p["opcode"]
    bad = np.flatnonzero((op >= 0xC6) & (op <= 0xCB) & ((p["ts"] == 0) | (p["ftype"] != 1)))
    for k in bad:
        what = "no TSETH (ts = 0)" if p["ts"][k] == 0 else f"TSETH ftype {int(p['ftype'][k])}, not 1"
        yield int(ctx.txi["first"][k]), f"data packet PSN {int(p['psn'][k])} with {what}"


def _op(opcode) -> str:
    from mrc.wire.constants import opcode_name

    return opcode_name(int(opcode))


_CONTROL_OPS = (0xD1, 0xD8, 0xD9, 0xDC, 0xDD)
_CLASS_NAMES = {0: "data", 1: "retx", 2: "control", 3: "trimmed", 4: "trimmed_lasthop", 5: "no_trim", 255: "unknown"}


def _dscp_class(ctx, dscp) -> np.ndarray:
    return ctx.options.dscp.classes[dscp]


@rule("dscp.control", SHOULD, scope="record",
      ref="notes §2.6 (control class: SACKs, NACKs, transport ACKs on DSCP_CONTROL, 'high-priority best-effort with "
          "neither trimming nor WRED'); the code points are the network's (--dscp)",
      behaviour="SACKs, NACKs, AETH (N)ACKs and endpoint operations leave on the control code point.")
def dscp_control(ctx):
    p = ctx.tx_pkt
    cls = _dscp_class(ctx, p["dscp"])
    bad = np.flatnonzero(np.isin(p["opcode"], _CONTROL_OPS) & (cls != 2))
    for k in bad:
        yield int(ctx.txi["first"][k]), (f"{_op(p['opcode'][k])} (PSN {int(p['psn'][k])}) leaves with DSCP "
                                         f"{int(p['dscp'][k])} ({_CLASS_NAMES[int(cls[k])]}), not the control code "
                                         f"point {ctx.options.dscp.control}")


@rule("dscp.retransmission", SHOULD, scope="record",
      ref="notes §2.6 (data class: DSCP_TRIMMABLE, DSCP_NO_TRIM; retransmissions get their own code point, "
          "DSCP_TRIMMABLE_RETX, 'so switches can apply different queuing or marking policy')",
      behaviour="A first transmission leaves on a data code point (trimmable or not), a retransmission (BTH rtx) on "
                "the retransmission one.")
def dscp_retransmission(ctx):
    p = ctx.tx_pkt
    op = p["opcode"]
    cls = _dscp_class(ctx, p["dscp"])
    data = (op >= 0xC6) & (op <= 0xCB) & (p["trim"] == 0)  # a trimmed first sighting was re-marked by a switch
    # a retransmission: rtx set, or a PSN the capture saw sent before (data.rtx-flag judges the flag itself)
    key = mix(ctx.txi["src"], ctx.txi["dst"], p["dqpn"], p["psn"])
    again = np.zeros(len(p), np.bool_)
    d = np.flatnonzero(data)
    if len(d):
        _, first = np.unique(key[d], return_index=True)
        again[d] = True
        again[d[first]] = False
    rtx = (p["rtx"] == 1) | again
    bad = np.flatnonzero(data & np.where(rtx, cls != 1, (cls != 0) & (cls != 5)))
    for k in bad:
        want = f"the retransmission code point {ctx.options.dscp.retx}" if rtx[k] else \
            f"a data code point ({ctx.options.dscp.data} or {ctx.options.dscp.no_trim})"
        yield int(ctx.txi["first"][k]), (f"{'retransmission' if rtx[k] else 'data packet'} PSN {int(p['psn'][k])} "
                                         f"leaves with DSCP {int(p['dscp'][k])} ({_CLASS_NAMES[int(cls[k])]}), not {want}")
