"""Rules on what a responder sends back: what SACKs, NACKs and ACKs acknowledge, the EV and timestamp they
reflect, the ECN echo, NACK reasons and answers to trimmed packets."""
from __future__ import annotations

from mrc.wire.constants import M_NONE, M_SKIP_ONCE, NackReason, Trim

from ..flows import K_ACK, K_DATA, K_NACK, K_SACK
from ..observe import ROLE_FABRIC, ROLE_INTO
from .base import MUST, SHOULD, rule
from .common import Acked, cols, psn24

NACK_REASONS = {int(r) for r in NackReason}
TRIM_REASONS = {int(NackReason.TRIMMED): int(Trim.TRIMMED), int(NackReason.TRIMMED_LASTHOP): int(Trim.TRIMMED_LASTHOP)}


def _name(reason: int) -> str:
    return NackReason(reason).name if reason in NACK_REASONS else f"0x{reason:02x}"


@rule("ack.unsent-psn", MUST, needs=("requester", "responder", "complete"),
      ref="notes §3.6 (SACK: cumulative ACK + 64-bit bitmap of PSNs received; NACK of a PSN received trimmed or out "
          "of the window); §2.4 (SETH cack_psn, sack_offset, sack_bitmap, ack_psn_offset; NETH nack_psn)",
      behaviour="No cumulative ACK, SACK bitmap bit, SACK trigger PSN, NACK or AETH (N)ACK names a PSN the requester "
                "has not sent yet.")
def unsent_psn(flow, ctx):
    c = cols(flow)
    start = flow.view.first_psn
    if start is None:
        return
    high = start - 1  # highest PSN sent so far
    for i in range(c.n):
        k = c.kind[i]
        if k == K_DATA:
            high = max(high, c.u[i])
            continue
        if k == K_SACK:
            cack, bits = c.acks(i)
            named = [("cumulative ACK", cack)] + [("SACK bitmap bit", b) for b in bits if b > high][:1]
            if not c.pr[i]:  # a probe's answer names the probe's PSN, the next one to send
                named.append(("trigger PSN (cack_psn + ack_psn_offset)", cack + c.ack_psn_offset[i]))
        elif k == K_NACK:
            named = [(f"NACK {_name(c.nack_reason[i])}", c.u[i])]
        elif k == K_ACK:
            named = [("AETH " + ("ACK" if (c.aeth_syndrome[i] & 0x60) == 0 else "NAK"), c.u[i])]
        else:
            continue
        for what, psn in named:
            if psn > high:
                yield i, (f"{what} names PSN {psn24(psn)}, but the highest PSN sent so far is {psn24(high)}"
                          if high >= start else f"{what} names PSN {psn24(psn)} before any data was sent")
                break


def _not_received(flow, ctx) -> list:
    """(SACK row, PSN, how, why) for each SACK that acknowledges a PSN no copy of which could deliver its payload:
    every copy so far trimmed ("trimmed") or damaged, with a wrong ICRC ("damaged"). Once per flow (two rules)."""
    got = getattr(flow, "_not_received", None)
    if got is None:
        got = flow._not_received = list(_walk_not_received(flow))
    return got


def _walk_not_received(flow):
    c = cols(flow)
    if flow.view.first_psn is None:
        return
    good: dict[int, bool] = {}  # PSN -> a whole, intact copy was seen
    trimmed_only: dict[int, bool] = {}
    told: set[int] = set()  # PSNs reported already (a later cumulative ACK repeats the same claim)
    acked = flow.view.first_psn - 1
    for i in range(c.n):
        k = c.kind[i]
        if k == K_DATA:
            u = c.u[i]
            good[u] = good.get(u, False) or not (c.trimmed[i] or c.damaged[i])
            trimmed_only[u] = trimmed_only.get(u, True) and bool(c.trimmed[i])
        elif k == K_SACK:
            cack, bits = c.acks(i)
            newly = list(range(acked + 1, cack + 1)) if cack > acked else []
            for p in newly + bits:
                if good.get(p) is False and p not in told:
                    told.add(p)
                    yield i, p, "cumulative ACK" if p <= cack else "bitmap", \
                        "trimmed" if trimmed_only[p] else "damaged"
                    break
            acked = max(acked, cack)


@rule("ack.trimmed-not-acked", MUST, needs=("requester", "responder", "complete"),
      ref="notes §4 (a trimmed header is answered with NACK TRIMMED / TRIMMED_LASTHOP, the packet retransmitted); "
          "§2.6 (a switch trims the payload off, DSCP_TRIMMED)",
      behaviour="A PSN of which only trimmed headers have been sent through is not acknowledged (cumulatively or in "
                "the bitmap): its payload never arrived.")
def trimmed_not_acked(flow, ctx):
    for i, p, how, why in _not_received(flow, ctx):
        if why == "trimmed":
            yield i, f"acknowledges PSN {psn24(p)} ({how}), of which only trimmed headers have been sent through"


@rule("ack.damaged-not-acked", MUST, needs=("requester", "responder", "complete"),
      ref="IBTA Annex A17 (a packet whose ICRC does not match is discarded); notes §2.1 (the RoCEv2 stack ends in the "
          "ICRC)",
      behaviour="A PSN whose copies all reached the responder damaged (a wrong ICRC) or trimmed, at least one "
                "damaged, is not acknowledged: the responder must have dropped them.")
def damaged_not_acked(flow, ctx):
    for i, p, how, why in _not_received(flow, ctx):
        if why == "damaged":
            yield i, f"acknowledges PSN {psn24(p)} ({how}), every copy of which arrived with a wrong ICRC or trimmed"


@rule("ack.trigger-acknowledged", MUST, needs=("responder",),
      ref="notes §2.4 (SETH: ack_psn = cack_psn + ack_psn_offset, the packet that triggered the SACK; bit b of the "
          "bitmap = PSN cack_psn + sack_offset + b); §3.6 (the SACK describes the PSNs received)",
      behaviour="A SACK answering a data packet acknowledges it: its PSN is at or below cack_psn, or its bit is set "
                "when the bitmap reaches it.")
def trigger_acknowledged(flow, ctx):
    c = cols(flow)
    for i in range(c.n):
        if c.kind[i] != K_SACK or c.pr[i]:
            continue
        cack = c.u[i]
        psn = cack + c.ack_psn_offset[i]
        b = psn - cack - c.sack_offset[i]
        if psn > cack and 0 <= b < 64 and not (c.sack_bitmap[i] >> b) & 1:
            yield i, (f"SACK triggered by PSN {psn24(psn)} (cack_psn {psn24(cack)} + ack_psn_offset "
                      f"{c.ack_psn_offset[i]}) does not acknowledge it: bit {b} of its bitmap is clear")


@rule("ack.entropy-reflected", MUST, needs=("requester", "responder", "complete"),
      ref="notes §2.4 (SETH / NETH entropy: 'reflected EV of the triggering data packet'); §4 (each SACK carries the "
          "reflected EV); §3.4 (the requester acts on the EV the feedback names)",
      behaviour="A SACK reflects the EV of the packet that triggered it (the data packet at cack_psn + ack_psn_offset, "
                "or the probe it answers), a NACK the EV of the packet it NACKs.")
def entropy_reflected(flow, ctx):
    c = cols(flow)
    start = flow.view.first_psn
    for i, psn, rows, sent in c.triggers:
        kind = "probe" if c.kind[i] == K_SACK and c.pr[i] else "data"
        if rows or not sent or (start is not None and psn < start):
            continue
        evs = sorted({c.ev[j] for j in sent})
        what = "SACK" if c.kind[i] == K_SACK else "NACK"
        yield i, (f"{what} reflects EV 0x{c.entropy[i]:x} for {kind} PSN {psn24(psn)}, which was sent on EV(s) "
                  f"{', '.join(f'0x{e:x}' for e in evs[:4])}")


@rule("ecn.echo", MUST, needs=("requester", "responder", "complete"),
      ref="notes §3.4 / §3.5 (SACK m = SKIP_ONCE when 'the forward path was ECN-marked', tagged with the EV that saw "
          "it; ALWAYS_SKIP for a persistently bad path); §2.4 (SETH m: 00 NONE, 01 SKIP_ONCE, 10 ALWAYS_SKIP)",
      behaviour="A SACK whose trigger arrived CE-marked says so (m = SKIP_ONCE or ALWAYS_SKIP); a SACK whose trigger "
                "arrived unmarked does not say SKIP_ONCE; m is never 3. (A SACK answering a duplicate, a PSN "
                "already acknowledged, is not judged: the notes do not say whether its mark is echoed, and the "
                "project's responder answers duplicates with m = NONE.)")
def ecn_echo(flow, ctx):
    c = cols(flow)
    acked = Acked()  # what earlier SACKs acknowledged: a trigger among them is a duplicate
    for i, psn, rows, _ in c.triggers:
        if c.kind[i] != K_SACK:
            continue
        if c.m[i] == 3:
            yield i, "SACK with m = 3, which is not an M value (NONE 0, SKIP_ONCE 1, ALWAYS_SKIP 2)"
            acked.add(c, i)
            continue
        dup = not c.pr[i] and psn in acked
        acked.add(c, i)
        if not rows or dup:
            continue
        marked = {c.ce[j] for j in rows}
        if len(marked) != 1:
            continue  # several transmissions of the trigger on that EV, some marked: cannot tell which arrived
        kind = "probe" if c.pr[i] else "data packet"
        if True in marked and c.m[i] == M_NONE:
            yield i, (f"SACK answers {kind} PSN {psn24(psn)} on EV 0x{c.entropy[i]:x}, which arrived CE-marked "
                      f"(record {c.first[rows[-1]]}), with m = NONE: the mark is not echoed")
        elif False in marked and c.m[i] == M_SKIP_ONCE and all(c.role[j] == ROLE_INTO for j in rows):
            yield i, (f"SACK says SKIP_ONCE for {kind} PSN {psn24(psn)} on EV 0x{c.entropy[i]:x}, which arrived "
                      f"unmarked (record {c.first[rows[-1]]}, on the link into the responder)")


@rule("cc.timestamp-reflected", MUST, needs=("requester", "responder", "complete"),
      ref="notes §2.4 (TSETH: 16-bit transmit timestamp 'reflected in the SACK's CC_STATE'); §3.5 (NSCC's RTT from "
          "the reflected timestamp)",
      behaviour="A SACK's CC_STATE reflects the TSETH (or PETH) timestamp of the packet that triggered it.")
def timestamp_reflected(flow, ctx):
    c = cols(flow)
    for i, psn, rows, _ in c.triggers:
        if c.kind[i] != K_SACK:
            continue
        rows = [j for j in rows if c.pr[i] or c.ts[j]]  # data without TSETH has no timestamp to reflect
        if rows and not any(c.tx_timestamp[j] == c.tx_timestamp[i] for j in rows):
            yield i, (f"SACK reflects timestamp {c.tx_timestamp[i]} for PSN {psn24(psn)} on EV 0x{c.entropy[i]:x}, "
                      f"which was sent with {', '.join(str(c.tx_timestamp[j]) for j in rows[:4])}")


@rule("nack.reason", MUST, needs=("responder",),
      ref="notes §2.5 (NACK reason codes: TRIMMED 0x01, TRIMMED_LASTHOP 0x02, NO_BITMAP 0x06, NO_PKT_BUFFER 0x07, "
          "NO_RESOURCE 0x0A, PSN_OOR_WINDOW 0x0B, UNEXP_EVENT 0x19)",
      behaviour="Every NACK carries one of MRC's reason codes.")
def nack_reason(flow, ctx):
    c = cols(flow)
    for i in range(c.n):
        if c.kind[i] == K_NACK and c.nack_reason[i] not in NACK_REASONS:
            yield i, f"NACK of PSN {psn24(c.u[i])} with reason 0x{c.nack_reason[i]:02x}, not an MRC reason code"


@rule("nack.trim-reason", MUST, needs=("requester", "responder", "complete"),
      ref="notes §2.5 (TRIMMED: trimmed in the fabric; TRIMMED_LASTHOP: at the last hop); §2.6 (DSCP_TRIMMED / "
          "DSCP_TRIMMED_LASTHOP); §4 (a trimmed header is answered with NACK TRIMMED or TRIMMED_LASTHOP)",
      behaviour="A NACK TRIMMED or TRIMMED_LASTHOP names a packet that reached the responder trimmed, and says where "
                "it was trimmed as its DSCP did.")
def trim_reason(flow, ctx):
    c = cols(flow)
    for i, psn, rows, _ in c.triggers:
        if c.kind[i] != K_NACK or c.nack_reason[i] not in TRIM_REASONS:
            continue
        if not rows:
            continue
        trims = {c.trimmed[j] for j in rows}
        want = TRIM_REASONS[c.nack_reason[i]]
        if want in trims:
            continue
        name = _name(c.nack_reason[i])
        if trims - {0}:
            got = "TRIMMED_LASTHOP" if int(Trim.TRIMMED_LASTHOP) in trims else "TRIMMED"
            yield i, f"NACK {name} of PSN {psn24(psn)}, which was trimmed as {got}"
        elif all(c.role[j] == ROLE_INTO for j in rows):
            yield i, (f"NACK {name} of PSN {psn24(psn)} on EV 0x{c.entropy[i]:x}, which reached the responder whole "
                      f"(record {c.first[rows[-1]]})")


@rule("nack.trim-answered", SHOULD, needs=("requester", "responder", "complete"),
      ref="notes §4 ('Trimmed header received -> NACK(TRIMMED or TRIMMED_LASTHOP)'; trim-NACK generation is "
          "optional, MRC_DEVICE_CAP_TRIM_NACK, 'enabled by default when supported'); UET 1.0 trimming (NWK)",
      behaviour="A trimmed data packet that reaches the responder is answered with a NACK TRIMMED / TRIMMED_LASTHOP "
                "of its PSN (judged when the capture runs on for --answer-us after it).")
def trim_answered(flow, ctx):
    c = cols(flow)
    wait = int(ctx.options.answer_us * 1000)
    nacked: dict[int, list[int]] = {}
    for i in range(c.n):
        if c.kind[i] == K_NACK and c.nack_reason[i] in TRIM_REASONS:
            nacked.setdefault(c.u[i], []).append(c.t[i])
    for i in range(c.n):
        if c.kind[i] != K_DATA or not c.trimmed[i] or c.role[i] == ROLE_FABRIC:
            continue
        if c.t_last[i] + wait > ctx.t_end:
            continue
        if not any(t >= c.t[i] for t in nacked.get(c.u[i], ())):
            yield i, (f"trimmed data packet PSN {psn24(c.u[i])} (last seen at record {c.first[i]}'s transmission, "
                      f"{'on the link into the responder' if c.role[i] == ROLE_INTO else 'in the capture'}) got no "
                      f"trim NACK within the {ctx.options.answer_us:g} us the capture runs on")


@rule("nack.oor-window", MUST, needs=("responder",),
      ref="notes §4 (PSNs tracked in a window of MPR x 128 above the cumulative ACK; 'out-of-range -> "
          "PSN_OOR_WINDOW'); §2.5",
      behaviour="A NACK PSN_OOR_WINDOW names a PSN above the window, never one at or below a cumulative ACK the "
                "responder has already sent.")
def oor_window(flow, ctx):
    c = cols(flow)
    high = None
    for i in range(c.n):
        if c.kind[i] == K_SACK:
            high = c.u[i] if high is None else max(high, c.u[i])
        elif c.kind[i] == K_NACK and c.nack_reason[i] == int(NackReason.PSN_OOR_WINDOW) and high is not None \
                and c.u[i] <= high:
            yield i, (f"NACK PSN_OOR_WINDOW of PSN {psn24(c.u[i])}, at or below the cumulative ACK {psn24(high)} the "
                      "responder sent before")

