"""Hand-built MRC captures for the passive check's tests: a conversation written as a pcapng with `mrc.wire`.

`conversation()` is a requester A (QP 0x11) writing to a responder B (QP 0x22) that does everything
the rules look at once, correctly: a three-packet write with a loss and its retransmission, a
CE-marked packet echoed SKIP_ONCE, a Write-with-Immediate trimmed, NACKed and sent again, a
reliability probe and its answer, an EV-probe endpoint request and its response. Each record is
a `Rec` (PKT and NET rows and the payload) that a test may change (`tamper`) before `write`
encodes the records (ICRC and checksums right) and writes them.

``taps=1`` writes one interface that sees every packet once (a capture at a mirror port);
``taps=2`` writes each packet where it leaves its sender ("A -> network", unchanged) and where it
reaches its receiver ("network -> B", after the network's CE mark or trim), 1 us later: a capture
at both hosts, which the check folds back into one transmission per packet.
"""
from __future__ import annotations

import dataclasses
import ipaddress

import numpy as np

from mrc.wire import NET, PKT
from mrc.wire.codec import encode
from mrc.wire.constants import ECN_CE, ECN_ECT0, ENDPOINT_QPN, ROCEV2_UDP_PORT, EvMode, NackReason
from mrc.wire.dscp import DEFAULT_DSCP
from mrc.wire.pcapng import write_pcapng
from mrc.wire.trim import trim_bytes

A = ipaddress.IPv6Address("2001:db8::a").packed
B = ipaddress.IPv6Address("2001:db8::b").packed
QA, QB = 0x11, 0x22
FIRST, MIDDLE, LAST, LAST_IMM, ONLY, ONLY_IMM = 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xCB
SACK, NACK, PROBE, EP_REQ, EP_RSP = 0xDC, 0xDD, 0xDE, 0xD8, 0xD9
MTU = 1024
VA, RKEY = 0x10000, 0x77


@dataclasses.dataclass
class Rec:
    t_us: float
    pkt: np.void
    net: np.void
    ce: bool = False  # the network CE-marks it
    trim: int = 0  # the network trims it (1 TRIMMED, 2 TRIMMED_LASTHOP)
    raw: object = None  # fn(bytes) -> bytes applied after encoding (damage)
    lost: bool = False  # the network loses it (taps=2: seen leaving only)

    @property
    def from_a(self) -> bool:
        return bytes(self.net["src"]) == A


def _rows(src: bytes, dst: bytes, opcode: int, dqpn: int, psn: int, ev: int, dscp: int):
    p = np.zeros(1, PKT)[0]
    p["opcode"], p["pkey"], p["dqpn"], p["psn"], p["ev"] = opcode, 0xFFFF, dqpn, psn, ev
    p["dscp"], p["ecn"] = dscp, ECN_ECT0
    n = np.zeros(1, NET)[0]
    n["ip_version"], n["ev_mode"], n["hop_limit"], n["dport"] = 6, int(EvMode.STEV), 64, ROCEV2_UDP_PORT
    n["src"] = np.frombuffer(src, np.uint8)
    n["dst"] = np.frombuffer(dst, np.uint8)
    return p, n


class Conversation:
    def __init__(self):
        self.recs: list[Rec] = []

    def _add(self, t, p, n, **kw) -> int:
        self.recs.append(Rec(t, p, n, **kw))
        return len(self.recs)  # the record's number with taps=1

    def data(self, t, psn, opcode, *, msn, va, n=MTU, ev, ts, rtx=0, rqmsn=0, imm=0, dma=None, ce=False, trim=0):
        p, nn = _rows(A, B, opcode, QB, psn, ev, DEFAULT_DSCP.retx if rtx else DEFAULT_DSCP.data)
        p["rtx"], p["ts"], p["tx_timestamp"], p["ftype"] = rtx, 1, ts, 1
        p["ackreq"] = 1 if opcode in (LAST, LAST_IMM, ONLY, ONLY_IMM) else 0
        p["msn"], p["rqmsn"], p["va"], p["rkey"] = msn, rqmsn, va, RKEY
        p["dma_len"] = n if dma is None else dma
        if opcode in (LAST_IMM, ONLY_IMM):
            p["imm"] = imm
        p["payload_len"] = n
        return self._add(t, p, nn, ce=ce, trim=trim)

    def sack(self, t, *, cack, trigger, entropy, ts, m=0, bitmap=0, sack_offset=1, mpr=8, pr=0):
        p, n = _rows(B, A, SACK, QA, trigger, 0x9000, DEFAULT_DSCP.control)
        p["m"], p["pr"], p["ack_psn_offset"], p["entropy"] = m, pr, trigger - cack, entropy
        p["spdcid"], p["dpdcid"], p["cack_psn"], p["mpr"] = QB, QA, cack, mpr
        p["sack_offset"], p["sack_bitmap"], p["tx_timestamp"] = sack_offset, bitmap, ts
        return self._add(t, p, n)

    def nack(self, t, *, psn, reason, entropy, ts):
        p, n = _rows(B, A, NACK, QA, psn, 0x9000, DEFAULT_DSCP.control)
        p["nack_reason"], p["entropy"], p["spdcid"], p["dpdcid"] = reason, entropy, QB, QA
        p["nack_psn"], p["cc_type"], p["tx_timestamp"] = psn, 2, ts
        return self._add(t, p, n)

    def probe(self, t, *, psn, ev, ts, probe_id=0):
        p, n = _rows(A, B, PROBE, QB, psn, ev, DEFAULT_DSCP.data)
        p["probe_id"], p["spdcid"], p["dpdcid"], p["tx_timestamp"], p["ftype"] = probe_id, QA, QB, ts, 1
        return self._add(t, p, n)

    def endpoint(self, t, *, response, req_id, ts, op=1):
        src, dst = (B, A) if response else (A, B)
        p, n = _rows(src, dst, EP_RSP if response else EP_REQ, ENDPOINT_QPN, 0, 0x7000, DEFAULT_DSCP.control)
        p["ep_op"], p["req_id"], p["tx_timestamp"], p["ftype"] = op, req_id, ts, 1
        return self._add(t, p, n)

    # -- output -----------------------------------------------------------------------------------
    def tamper(self, number: int, **fields) -> None:
        """Change fields of record `number` (1-based) before it is encoded."""
        p = self.recs[number - 1].pkt
        for k, v in fields.items():
            p[k] = v

    def _bytes(self, r: Rec, arrived: bool) -> bytes:
        p = r.pkt.copy()
        if arrived and r.ce:
            p["ecn"] = ECN_CE
        payload = bytes(range(256)) * (int(p["payload_len"]) // 256 + 1)
        data = encode(p, r.net, payload[: int(p["payload_len"])] if p["payload_len"] else None)
        if arrived and r.trim:  # cut to its headers plus 64 bytes of payload
            data = trim_bytes(data, len(data) - int(p["payload_len"]) - 4 + 64, lasthop=r.trim == 2)
        if r.raw is not None:
            data = r.raw(data)
        return data

    def records(self, taps: int = 1) -> list[tuple[int, int, bytes]]:
        """(interface, time in ns, bytes) in capture order."""
        out = []
        for r in self.recs:
            t = int(r.t_us * 1000)
            if taps == 1:
                out.append((0, t, self._bytes(r, r.ce or bool(r.trim))))
            else:
                out.append((0 if r.from_a else 1, t, self._bytes(r, False)))
                if not r.lost:
                    out.append((2 if r.from_a else 3, t + 1000, self._bytes(r, True)))
        out.sort(key=lambda x: x[1])
        return out

    def write(self, path, taps: int = 1) -> str:
        ifaces = ([("mirror", "")] if taps == 1 else
                  [("a0", "A -> network"), ("b0", "B -> network"), ("b1", "network -> B"), ("a1", "network -> A")])
        write_pcapng(path, ifaces, self.records(taps), tsresol=9)
        return str(path)

    def index(self, number: int, taps: int = 1) -> int:
        """The capture record number (1-based) at which record `number` is first seen."""
        if taps == 1:
            return number
        r = self.recs[number - 1]
        recs = self.records(taps)
        t = int(r.t_us * 1000)
        return next(k + 1 for k, (i, tt, _) in enumerate(recs) if tt == t and i == (0 if r.from_a else 1))


E = [0x1000 + k for k in range(8)]  # EVs


def conversation() -> Conversation:
    """The clean conversation (record numbers in comments, for taps=1)."""
    c = Conversation()
    c.data(0, 0, FIRST, msn=0, va=VA, ev=E[1], ts=100, dma=3 * MTU)  # 1
    c.data(1, 1, MIDDLE, msn=0, va=VA + MTU, ev=E[2], ts=101, dma=2 * MTU)  # 2
    c.data(2, 2, LAST, msn=0, va=VA + 2 * MTU, ev=E[3], ts=102, dma=MTU)  # 3 (lost on its way)
    c.data(3, 3, ONLY, msn=1, va=VA + 8192, n=500, ev=E[4], ts=103)  # 4
    c.sack(8, cack=1, trigger=3, entropy=E[4], ts=103, bitmap=0b10)  # 5: PSNs 0-1 and 3
    c.data(9, 2, LAST, msn=0, va=VA + 2 * MTU, ev=E[5], ts=109, rtx=1, dma=MTU)  # 6: the retransmission
    c.sack(14, cack=3, trigger=2, entropy=E[5], ts=109)  # 7
    c.data(15, 4, ONLY, msn=2, va=VA + 16384, n=700, ev=E[1], ts=115, ce=True)  # 8: CE-marked on its way
    c.sack(20, cack=4, trigger=4, entropy=E[1], ts=115, m=1)  # 9: echoed SKIP_ONCE
    c.data(21, 5, ONLY_IMM, msn=3, va=VA + 24576, n=900, ev=E[2], ts=121, imm=7)  # 10: trimmed on its way
    c.nack(26, psn=5, reason=int(NackReason.TRIMMED), entropy=E[2], ts=121)  # 11
    c.data(27, 5, ONLY_IMM, msn=3, va=VA + 24576, n=900, ev=E[6], ts=127, imm=7, rtx=1)  # 12
    c.sack(32, cack=5, trigger=5, entropy=E[6], ts=127)  # 13
    c.probe(40, psn=6, ev=E[3], ts=140, probe_id=1)  # 14
    c.sack(45, cack=5, trigger=6, entropy=E[3], ts=140, pr=1)  # 15
    c.endpoint(50, response=False, req_id=9, ts=150)  # 16
    c.endpoint(55, response=True, req_id=9, ts=150)  # 17
    c.recs[2].lost = True
    c.recs[9].trim = 1
    return c
