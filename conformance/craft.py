"""Packets the suite builds by hand, as a crafted peer (h2spec style): data, SACK, NACK, probe, endpoint request.

A `Crafter` speaks for one side of a connection: its own address and QP
number, and the endpoint it talks to. Every builder returns wire bytes
(`mrc.wire.encode`, ICRC included); fields not given take the values an MRC
sender would use (pkey 0xFFFF, TSETH present, ECT(0), the data DSCP).
"""
from __future__ import annotations

import numpy as np

from mrc.wire import NET, PKT, EvMode
from mrc.wire.codec import encode
from mrc.wire.constants import ECN_CE, ECN_ECT0, ENDPOINT_QPN, ROCEV2_UDP_PORT, NackReason, Opcode

from .packets import Dscp
from .scenario import Node

ONLY, ONLY_IMM = int(Opcode.MRC_WRITE_ONLY), int(Opcode.MRC_WRITE_ONLY_IMM)
FIRST, MIDDLE, LAST, LAST_IMM = (int(Opcode.MRC_WRITE_FIRST), int(Opcode.MRC_WRITE_MIDDLE),
                                 int(Opcode.MRC_WRITE_LAST), int(Opcode.MRC_WRITE_LAST_IMM))
ECT0, CE = ECN_ECT0, ECN_CE  # the ECN codepoints (mrc.wire.constants) by the names the cases use


class Crafter:
    def __init__(self, me: Node, peer: Node, *, dscp: Dscp | None = None):
        self.me, self.peer = me, peer
        self.mode = EvMode[peer.cfg.ev_mode]
        self.dscp = dscp or Dscp(peer.cfg.dscp)

    def _rows(self, opcode: int, psn: int, ev: int, dscp: int, ecn: int = ECT0):
        p = np.zeros(1, dtype=PKT)[0]
        p["opcode"], p["pkey"], p["dqpn"], p["psn"] = opcode, 0xFFFF, self.peer.qpn, psn & 0xFFFFFF
        p["ev"], p["dscp"], p["ecn"] = ev, dscp, ecn
        n = np.zeros(1, dtype=NET)[0]
        n["ip_version"], n["ev_mode"], n["hop_limit"], n["dport"] = 6, int(self.mode), 64, ROCEV2_UDP_PORT
        n["src"] = np.frombuffer(self.me.address, dtype=np.uint8)
        n["dst"] = np.frombuffer(self.peer.address, dtype=np.uint8)
        if self.mode == EvMode.SRV6:
            n["outer_hop_limit"] = 64
            n["outer_src"] = n["src"]
            n["outer_dst"] = n["dst"]
        return p, n

    def data(self, psn: int, payload: bytes, *, va: int, rkey: int, opcode: int = ONLY, ev: int = 0x0A0B0001,
             dma_len: int | None = None, imm: int | None = None, ackreq: int = 1, msn: int = 0, rqmsn: int = 0,
             ts: int = 0x1234, rtx: int = 0, ecn: int = ECT0) -> bytes:
        """An MRC write packet. `dma_len` defaults to len(payload) (bytes from `va` to the message's end)."""
        p, n = self._rows(opcode, psn, ev, self.dscp.retx if rtx else self.dscp.data, ecn)
        p["ackreq"], p["rtx"], p["ts"], p["tx_timestamp"], p["ftype"] = ackreq, rtx, 1, ts, 1
        p["msn"], p["rqmsn"] = msn, rqmsn
        p["va"], p["rkey"] = va, rkey
        p["dma_len"] = len(payload) if dma_len is None else dma_len
        if opcode in (ONLY_IMM, LAST_IMM):
            p["imm"] = 0 if imm is None else imm
        p["payload_len"] = len(payload)
        return encode(p, n, bytes(payload) if payload else None)

    def sack(self, *, cack: int, trigger: int, entropy: int, ts: int, m: int = 0, sack_offset: int = 1,
             bitmap: int = 0, mpr: int = 8, ev: int = 0x0B0B0001, pr: int = 0, ooo_count: int = 0,
             rcv_cwnd_pen: int = 0) -> bytes:
        """A RELIABILITY_SACK: everything up to `cack` received, bit b of `bitmap` = PSN cack+sack_offset+b."""
        p, n = self._rows(int(Opcode.MRC_RELIABILITY_SACK), trigger, ev, self.dscp.control)
        off = (trigger - cack) & 0xFFFFFF
        p["ack_psn_offset"] = off - (1 << 24) if off >= 1 << 23 else off
        p["m"], p["pr"], p["entropy"], p["cack_psn"] = m, pr, entropy, cack & 0xFFFFFF
        p["spdcid"], p["dpdcid"] = self.me.qpn & 0xFFFF, self.peer.qpn & 0xFFFF
        p["mpr"], p["sack_offset"], p["sack_bitmap"] = mpr, sack_offset, bitmap
        p["tx_timestamp"], p["ooo_count"], p["rcv_cwnd_pen"] = ts, ooo_count, rcv_cwnd_pen
        return encode(p, n)

    def nack(self, reason: NackReason | int, psn: int, *, entropy: int, ts: int, ev: int = 0x0B0B0001) -> bytes:
        """A RELIABILITY_NACK. NETH carries no MPR (notes 2.4: byte 17 is reserved): the responder's
        window is only ever told in SETH, so a crafted NACK has exactly the fields the wire has."""
        p, n = self._rows(int(Opcode.MRC_RELIABILITY_NACK), psn, ev, self.dscp.control)
        p["nack_reason"], p["entropy"], p["nack_psn"], p["cc_type"] = int(reason), entropy, psn & 0xFFFFFF, 2
        p["spdcid"], p["dpdcid"], p["tx_timestamp"] = self.me.qpn & 0xFFFF, self.peer.qpn & 0xFFFF, ts
        return encode(p, n)

    def probe(self, psn: int, *, ev: int, probe_id: int = 1, ts: int = 0x2222, ecn: int = ECT0) -> bytes:
        p, n = self._rows(int(Opcode.MRC_RELIABILITY_PROBE), psn, ev, self.dscp.data, ecn)
        p["probe_id"], p["spdcid"], p["dpdcid"] = probe_id, self.me.qpn & 0xFFFF, self.peer.qpn & 0xFFFF
        p["ts"], p["tx_timestamp"], p["ftype"] = 1, ts, 1
        return encode(p, n)


    def ep_request(self, op: int, req_id: int, *, ev: int, ts: int = 0x3333, port_status: int = 0) -> bytes:
        """An ENDPOINT_REQUEST (BTH opcode 0xD8 to the reserved QP 0x2, ERTH): op 0 PORT_STATUS_UPDATE,
        1 EV_PROBE (notes 2.4 ERTH, 2.7)."""
        p, n = self._rows(int(Opcode.MRC_ENDPOINT_REQUEST), 0, ev, self.dscp.control)
        p["dqpn"] = ENDPOINT_QPN
        p["ep_op"], p["req_id"], p["port_status_mask"] = op, req_id, port_status
        p["ts"], p["tx_timestamp"], p["ftype"] = 1, ts, 1
        return encode(p, n)

    def ep_response(self, op: int, req_id: int, *, ev: int, ts: int, port_status: int = 0b11,
                    svc_time: int = 0) -> bytes:
        """An ENDPOINT_RESPONSE (0xD9 to QP 0x2, EETH) answering request `req_id`, reflecting its timestamp;
        `svc_time`: the responder's service time it reports (EETH, ns)."""
        p, n = self._rows(int(Opcode.MRC_ENDPOINT_RESPONSE), 0, ev, self.dscp.control)
        p["dqpn"] = ENDPOINT_QPN
        p["ep_op"], p["req_id"], p["port_status_mask"] = op, req_id, port_status
        p["svc_time"] = svc_time
        p["ts"], p["tx_timestamp"], p["ftype"] = 1, ts, 1
        return encode(p, n)


def ack_for(c: Crafter, data_pkts, *, cack: int, trigger=None, m: int = 0, bitmap: int = 0, sack_offset: int = 1,
            rcv_cwnd_pen: int = 0) -> bytes:
    """A SACK from `c` that acknowledges up to `cack`, reflecting the trigger packet's EV and timestamp."""
    t = trigger if trigger is not None else data_pkts[-1]
    return c.sack(cack=cack, trigger=t.psn, entropy=t.ev, ts=t["tx_timestamp"], m=m, bitmap=bitmap,
                  sack_offset=sack_offset, rcv_cwnd_pen=rcv_cwnd_pen)
