"""Helpers the flow rules share: a flow's columns as Python lists, its data transmissions by PSN, SACK bits."""
from __future__ import annotations

import functools

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
    """A flow's columns as lists (fast per-row reads in Python loops), and what several rules derive from them,
    each computed once per flow."""

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
        self.start = flow.view.first_psn
        self._acks: dict[int, tuple] = {}

    @functools.cached_property
    def by_psn(self) -> dict[int, int]:
        """Unwrapped PSN -> row of its first data transmission."""
        out: dict[int, int] = {}
        for i in range(self.n):
            if self.kind[i] == K_DATA and self.u[i] not in out:
                out[self.u[i]] = i
        return out

    @functools.cached_property
    def psn_order(self) -> list[tuple[int, int | None]]:
        """(row, row of the PSN before it or None) for the first transmission of every data PSN, in PSN order, from
        the first new PSN the capture saw (`flows.View.first_psn`) on."""
        first, start = self.by_psn, self.start
        out = []
        for u in sorted(first):
            if start is not None and u < start:
                continue
            out.append((first[u], first.get(u - 1) if (start is None or u - 1 >= start) else None))
        return out

    def acks(self, i: int) -> tuple[int, list[int]]:
        """A SACK's cumulative ACK (unwrapped) and the PSNs its bitmap marks (bit b = PSN cack + sack_offset + b)."""
        got = self._acks.get(i)
        if got is None:
            base = self.u[i] + self.sack_offset[i]
            bits = self.sack_bitmap[i]
            out = []
            while bits:
                low = bits & -bits
                out.append(base + low.bit_length() - 1)
                bits ^= low
            got = self._acks[i] = (self.u[i], out)
        return got

    @functools.cached_property
    def triggers(self) -> list[tuple[int, int, list[int], list[int]]]:
        """Per SACK and NACK row, in capture order: (row, the PSN it answers, the transmissions of that PSN before
        it on the EV it reflects, all transmissions of that PSN before it). A SACK answers the packet at cack_psn +
        ack_psn_offset (a probe's when pr = 1), a NACK the one at nack_psn."""
        seen: dict[tuple, list[int]] = {}
        out = []
        for i in range(self.n):
            k = self.kind[i]
            if k == K_DATA or k == K_PROBE:
                seen.setdefault((k, self.u[i]), []).append(i)
            elif k == K_SACK or k == K_NACK:
                if k == K_SACK:
                    psn, kind = self.u[i] + self.ack_psn_offset[i], (K_PROBE if self.pr[i] else K_DATA)
                else:
                    psn, kind = self.u[i], K_DATA
                sent = list(seen.get((kind, psn), ()))
                ent = self.entropy[i]
                out.append((i, psn, [j for j in sent if ev_matches(ent, self.ev[j])], sent))
        return out


def cols(flow) -> Cols:
    c = getattr(flow, "_cols", None)
    if c is None:
        c = flow._cols = Cols(flow)
    return c


def op(code: int) -> str:
    return opcode_name(int(code))


class Acked:
    """What the SACKs so far acknowledge: the highest cumulative ACK and the bitmap bits above it."""

    def __init__(self):
        self.high: int | None = None
        self.bits: set[int] = set()

    def add(self, c: Cols, i: int) -> None:
        cack, bits = c.acks(i)
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


def psn24(u: int) -> int:
    return u & 0xFFFFFF
