"""Rules on what a requester sends: opcode sequences, RETH, segmentation, MSNs, retransmissions, the MPR window."""
from __future__ import annotations

from collections import Counter

from ..flows import K_ACK, K_DATA, K_SACK
from .base import MUST, SHOULD, rule
from .common import CONTINUES, ENDS, IMM, LAST, LAST_IMM, MAX_MPR, MIDDLE, MPR_UNIT, STARTS, cols, op, psn24


@rule("data.opcode-sequence", MUST, needs=("requester",),
      ref="notes §2.3 (MRC opcodes 0xC6-0xCB: WRITE_FIRST / MIDDLE / LAST / LAST_IMM / ONLY / ONLY_IMM); IBTA RC "
          "(a message is FIRST, MIDDLE..., LAST, or ONLY)",
      behaviour="In PSN order, a message is WRITE_FIRST, WRITE_MIDDLE..., WRITE_LAST (LAST_IMM), or one WRITE_ONLY "
                "(ONLY_IMM); the packet after a message's last starts the next one.")
def opcode_sequence(flow, ctx):
    c = cols(flow)
    inside = None  # is the PSN before the current one inside a message (None: not seen)
    for j, i in c.psn_order:
        b = c.opcode[j]
        if i is None:
            inside = b in CONTINUES
            continue
        ok = b in (MIDDLE, LAST, LAST_IMM) if inside else b in STARTS
        if not ok:
            a = c.opcode[i]
            yield j, (f"PSN {psn24(c.u[j])} is {op(b)} after {op(a)} (PSN {psn24(c.u[i])}): "
                      + ("the message must go on (WRITE_MIDDLE) or end (WRITE_LAST / LAST_IMM)" if inside else
                         "the next message starts with WRITE_FIRST or WRITE_ONLY"))
            continue  # judge the next packet against the sequence as it should have been
        inside = b in CONTINUES


@rule("data.msn", SHOULD, needs=("requester",),
      ref="notes §2.4 (METH: MSN and RQMSN 'to track in-flight WriteIMM requests')",
      behaviour="Every packet of a message carries its MSN, one more than the previous message's (mod 2^16); RQMSN "
                "counts the Write-with-Immediate messages before it.")
def msn(flow, ctx):
    c = cols(flow)
    want = None  # (MSN, RQMSN) the current PSN should carry, from the packets before it
    for j, i in c.psn_order:
        b = c.opcode[j]
        if i is not None and want is not None and b in (MIDDLE, LAST, LAST_IMM, *STARTS):
            got = (c.msn[j], c.rqmsn[j])
            if got != want:
                yield j, (f"PSN {psn24(c.u[j])} ({op(b)}) carries MSN {got[0]} / RQMSN {got[1]}; the packets before "
                          f"it say {want[0]} / {want[1]}")
            have = want
        else:
            have = (c.msn[j], c.rqmsn[j])
        # what the next PSN carries: the same message's numbers, or the next message's
        if b in CONTINUES:
            want = have
        else:
            want = ((have[0] + 1) & 0xFFFF, (have[1] + (1 if b in IMM else 0)) & 0xFFFF)


def _mtu(c, first) -> int | None:
    """The path MTU: the payload every untrimmed WRITE_FIRST / MIDDLE carries (the most common one)."""
    sizes = Counter(c.payload_len[i] for i in first.values() if c.opcode[i] in CONTINUES and not c.trim[i])
    return sizes.most_common(1)[0][0] if sizes else None


@rule("data.segmentation", MUST, needs=("requester",),
      ref="notes §2.4 (RETH: 'VA advanced by one Path MTU for each successive packet'); §3.1 (path MTU)",
      behaviour="Every packet of a message but its last carries exactly the path MTU; none carries more.")
def segmentation(flow, ctx):
    c = cols(flow)
    first = c.by_psn
    mtu = _mtu(c, first)
    if mtu is None:
        return
    for u in sorted(first):
        i = first[u]
        if c.trim[i]:
            continue
        n = c.payload_len[i]
        if c.opcode[i] in CONTINUES and n != mtu:
            yield i, (f"{op(c.opcode[i])} PSN {psn24(u)} carries {n} bytes; the flow's other packets before a "
                      f"message's end carry {mtu} (the path MTU)")
        elif c.opcode[i] in ENDS and n > mtu:
            yield i, f"{op(c.opcode[i])} PSN {psn24(u)} carries {n} bytes, more than the path MTU {mtu}"


@rule("data.reth", MUST, needs=("requester",),
      ref="notes §2.4 (RETH 'in every data packet', 'virtual address advanced by one Path MTU for each successive "
          "packet'); §1.2 (OAI: 'all MRC packets include their final memory address')",
      behaviour="Within a message every packet carries the same R_Key, an address one path MTU past the previous "
                "packet's, a DMA length that covers its payload, and DMA lengths that describe one extent (each the "
                "rest of the message, or each the whole message).")
def reth(flow, ctx):
    c = cols(flow)
    first = c.by_psn
    mtu = _mtu(c, first)
    want = None  # (va, rkey, end under 'rest of the message', dma under 'whole message') for the current PSN
    for j, i in c.psn_order:
        u = c.u[j]
        if not c.trim[j] and c.dma_len[j] < c.payload_len[j]:
            yield j, (f"PSN {psn24(u)}: RETH DMA length {c.dma_len[j]} is shorter than its {c.payload_len[j]}-byte "
                      "payload")
        got = (c.va[j], c.rkey[j], c.va[j] + c.dma_len[j], c.dma_len[j])
        have = got
        if i is not None and want is not None and c.opcode[i] in CONTINUES and c.opcode[j] in (MIDDLE, LAST, LAST_IMM):
            if got[1] != want[1]:
                yield j, f"PSN {psn24(u)}: R_Key 0x{got[1]:x}, the message's 0x{want[1]:x}"
                have = want
            elif want[0] is not None and got[0] != want[0]:
                yield j, (f"PSN {psn24(u)}: RETH address 0x{got[0]:x}, expected 0x{want[0]:x} (one path MTU, "
                          f"{mtu} bytes, past PSN {psn24(c.u[i])}'s)")
                have = want
            elif got[2] != want[2] and got[3] != want[3]:
                yield j, (f"PSN {psn24(u)}: RETH DMA length {got[3]} at 0x{got[0]:x} describes another extent than "
                          f"PSN {psn24(c.u[i])}'s (neither the rest of one message nor the same whole message)")
                have = want
        want = (None if mtu is None else have[0] + mtu, have[1], have[2], have[3]) \
            if c.opcode[j] in CONTINUES else None


_SAME = ("opcode", "msn", "rqmsn", "va", "rkey", "dma_len")


@rule("data.rtx-identical", MUST, needs=("requester",),
      ref="notes §3.6 (a retransmission resends the packet with its PSN, marked rtx); §2.4 / §1.2 (every packet "
          "carries its final address); IBTA RC (a retransmitted request repeats the original)",
      behaviour="A retransmission carries the same opcode, MSN, RQMSN, RETH, immediate data and payload length as "
                "the first transmission of its PSN.")
def rtx_identical(flow, ctx):
    c = cols(flow)
    first: dict[int, int] = {}
    for i in range(c.n):
        if c.kind[i] != K_DATA:
            continue
        j = first.setdefault(c.u[i], i)
        if j == i:
            continue
        diff = [f for f in _SAME if getattr(c, f)[i] != getattr(c, f)[j]]
        if c.opcode[i] in IMM and c.opcode[j] in IMM and c.imm[i] != c.imm[j]:
            diff.append("imm")
        if not c.trim[i] and not c.trim[j] and c.payload_len[i] != c.payload_len[j]:
            diff.append("payload_len")
        if diff:
            what = ", ".join(f"{f} {getattr(c, f)[i]} (was {getattr(c, f)[j]})" for f in diff)
            yield i, f"retransmission of PSN {psn24(c.u[i])} differs from its first transmission (record " \
                     f"{c.first[j]}): {what}"


@rule("data.rtx-flag", MUST, needs=("requester",),
      ref="notes §2.4 (BTH rtx bit 5); §3.6 (MANI: retransmissions 'marked with an rtx flag in the BTH')",
      behaviour="A data packet sent again for a PSN already sent has the BTH rtx flag set.")
def rtx_flag(flow, ctx):
    c = cols(flow)
    seen: dict[int, int] = {}
    for i in range(c.n):
        if c.kind[i] != K_DATA:
            continue
        j = seen.setdefault(c.u[i], i)
        if j != i and not c.rtx[i]:
            yield i, f"PSN {psn24(c.u[i])} sent again (first at record {c.first[j]}) without the rtx flag"


@rule("data.mpr-window", MUST, needs=("requester", "responder", "complete"),
      ref="notes §3.1 (mrc.h MPR: the in-flight PSN window, 'unit=128 PSNs'; MPR / MPR_DEST); §2.4 (SETH mpr)",
      behaviour="A new PSN lies within the MPR window above the highest cumulative ACK seen: PSN <= cack_psn + MPR "
                "x 128, MPR the largest the responder has advertised in its SACKs (255 x 128 before any SACK).")
def mpr_window(flow, ctx):
    c = cols(flow)
    high = None  # highest cumulative ACK (unwrapped)
    mpr = 0
    start = flow.view.first_psn
    for i in range(c.n):
        k = c.kind[i]
        if k == K_SACK:
            high = c.u[i] if high is None else max(high, c.u[i])
            if c.mpr[i]:
                mpr = max(mpr, c.mpr[i])
        elif k == K_ACK and (c.aeth_syndrome[i] & 0x60) == 0:  # an AETH ACK acknowledges up to its PSN
            high = c.u[i] if high is None else max(high, c.u[i])
        elif k == K_DATA and not c.rtx[i] and start is not None and c.u[i] >= start:
            if high is None:
                base, window, why = start - 1, MAX_MPR * MPR_UNIT, "before any SACK, at most 255 x 128"
            else:
                base, window = high, (mpr or MAX_MPR) * MPR_UNIT
                why = f"MPR {mpr} x 128" if mpr else "no MPR advertised: at most 255 x 128"
            if c.u[i] > base + window:
                yield i, (f"PSN {psn24(c.u[i])} is {c.u[i] - base} past the highest cumulative ACK {psn24(base)}: the "
                          f"window is {window} ({why})")
