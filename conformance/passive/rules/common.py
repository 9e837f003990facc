"""Helpers the flow rules share: a flow's columns as Python lists, its data transmissions by PSN, SACK bits."""
from __future__ import annotations

from mrc.wire.constants import opcode_name

from ..flows import K_DATA, K_NACK, K_PROBE, K_SACK

FIRST, MIDDLE, LAST, LAST_IMM, ONLY, ONLY_IMM = 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xCB
CONTINUES = (FIRST, MIDDLE)  # a packet after which the message goes on
ENDS = (LAST, LAST_IMM, ONLY, ONLY_IMM)
STARTS = (FIRST, ONLY, ONLY_IMM)
IMM = (LAST_IMM, ONLY_IMM)
MPR_UNIT = 128  # PSNs per MPR unit (mrc.h: "unit=128 PSNs", notes §3.1)
MAX_MPR = 255

_COLS = ("opcode", "rtx", "psn", "msn", "rqmsn", "va", "rkey", "dma_len", "imm", "payload_len", "trim", "ts",
         "tx_timestamp", "ev", "m", "pr", "ack_psn_offset", "entropy", "cack_psn", "mpr", "sack_offset", "sack_bitmap",
         "nack_reason", "nack_psn", "aeth_syndrome", "dqpn")


class Cols:
    """A flow's columns as lists (fast per-row reads in Python loops), built once per flow."""

    def __init__(self, flow):
        p = flow.pkt
        for name in _COLS:
            setattr(self, name, p[name].tolist())
        self.kind = flow.kind.tolist()
        self.u = flow.u.tolist()
        self.ce = flow.txi["ce"].tolist()
        self.trimmed = flow.txi["trim"].tolist()  # any sighting trimmed (trim code)
        self.role = flow.txi["last_role"].tolist()
        self.damaged = flow.txi["damaged"].tolist()
        self.first = flow.txi["first"].tolist()
        self.t = flow.txi["t"].tolist()
        self.t_last = flow.txi["t_last"].tolist()
        self.n = len(self.kind)


def cols(flow) -> Cols:
    c = getattr(flow, "_cols", None)
    if c is None:
        c = flow._cols = Cols(flow)
    return c


def op(code: int) -> str:
    return opcode_name(int(code))


def first_by_psn(c: Cols) -> dict[int, int]:
    """Unwrapped PSN -> row of its first data transmission."""
    out: dict[int, int] = {}
    for i in range(c.n):
        if c.kind[i] == K_DATA and c.u[i] not in out:
            out[c.u[i]] = i
    return out


def sack_psns(c: Cols, i: int) -> tuple[int, list[int]]:
    """A SACK's cumulative ACK (unwrapped) and the PSNs its bitmap marks (bit b = PSN cack + sack_offset + b)."""
    base = c.u[i] + c.sack_offset[i]
    bits = c.sack_bitmap[i]
    out = []
    b = 0
    while bits:
        if bits & 1:
            out.append(base + b)
        bits >>= 1
        b += 1
    return c.u[i], out


class Acked:
    """What the SACKs so far acknowledge: the highest cumulative ACK and the bitmap bits above it."""

    def __init__(self):
        self.high: int | None = None
        self.bits: set[int] = set()

    def add(self, c: Cols, i: int) -> None:
        cack, bits = sack_psns(c, i)
        self.high = cack if self.high is None else max(self.high, cack)
        self.bits.update(b for b in bits if b > self.high)
        if len(self.bits) > 4096:
            self.bits = {b for b in self.bits if b > self.high}

    def __contains__(self, psn: int) -> bool:
        return (self.high is not None and psn <= self.high) or psn in self.bits


def ev_matches(entropy: int, ev: int) -> bool:
    """A reflected entropy names the EV a packet was sent on: the whole EV (STEV, SRv6's compact EV) or, in UDP
    EV mode, the UDP source port (the EV's upper half when decoded as STEV)."""
    return entropy == ev or entropy == ev >> 16


def trigger_rows(c: Cols, i: int, by_psn_ev: dict) -> tuple[int, list[int]]:
    """The PSN a SACK or NACK answers and the transmissions before it that match its reflected EV: for a SACK the
    packet at cack_psn + ack_psn_offset (a probe's when pr = 1), for a NACK the packet at nack_psn."""
    if c.kind[i] == K_SACK:
        psn = c.u[i] + c.ack_psn_offset[i]
        kind = K_PROBE if c.pr[i] else K_DATA
    else:
        psn, kind = c.u[i], K_DATA
    rows = [j for j in by_psn_ev.get((kind, psn), ()) if ev_matches(c.entropy[i], c.ev[j])]
    return psn, rows


def transmissions_before(c: Cols):
    """Walk the rows in capture order; yields (row, {(kind, psn): [rows of data / probe before it]}) for every
    SACK and NACK row (the dict grows as the walk goes)."""
    seen: dict[tuple, list[int]] = {}
    for i in range(c.n):
        k = c.kind[i]
        if k == K_DATA or k == K_PROBE:
            seen.setdefault((k, c.u[i]), []).append(i)
        elif k == K_SACK or k == K_NACK:
            yield i, seen


def psn24(u: int) -> int:
    return u & 0xFFFFFF
