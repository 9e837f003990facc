"""Each captured record decoded once, with the project's compiled codec, into one row.

`decode(batch, dscp, ev_mode)` turns a `reader.Batch` into a `PKT` table (`mrc.wire.records`)
plus a `REC` table beside it: the record's number, time and interface, what it is (`status`),
its inner addresses as small integers (`Addresses`), and what the wire layer says about it:
ICRC and UDP checksum wrong, reserved bits set (per header, `RESERVED` below).

The packet is decoded by `mrc.wire.parse.decode_packet` (the codec behind `codec.decode_batch`)
over the record's span of the capture buffer, with the ICRC and UDP checksum *not* verified, so
that a damaged packet is still read and its damage reported as a rule violation, not as an
unreadable packet. `_wire_checks` then checks them itself (`mrc.wire.checksum`), and the
reserved bits of BTH and of every extension header the opcode carries (`mrc.wire.layout`).
A trimmed packet (its DSCP in the table's TRIMMED classes, mrc-public-notes 2.6) carries no
ICRC; its UDP checksum is not judged either (the switch that cut it rewrote the lengths).
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.wire import errors as WE
from mrc.wire.checksum import icrc, udp_checksum
from mrc.wire.constants import ROCEV2_UDP_PORT, EvMode
from mrc.wire.dscp import DEFAULT_DSCP, DscpTable
from mrc.wire.layout import HEADER_TABLE, ORDER
from mrc.wire.packet import ext_len
from mrc.wire.parse import decode_packet
from mrc.wire.records import NET, PKT

from .reader import LINK_OK, Batch

# status of a record
ST_MRC = 0  # an MRC packet (opcodes 0xC6-0xDE): the rules read it
ST_ROCE = 1  # a RoCEv2 packet that is not MRC (standard RC opcodes, CNP): counted
ST_OTHER = 2  # not RoCEv2 (not UDP to 4791, not IP): counted
ST_MALFORMED = 3  # UDP to 4791 that does not decode
ST_SHORT = 4  # cut by the capture's snap length before it could be read: not judged
ST_LINK = 5  # its link layer does not carry IP

# wire flags
F_ICRC = 1  # ICRC wrong on an untrimmed packet
F_UDP = 2  # UDP checksum present and wrong
F_RESERVED = 4  # a reserved field is not zero (REC.reserved says which headers)
F_TRIMMED_CUT = 8  # trimmed into its headers (a switch's trim size shorter than them): read as far as possible

REC = np.dtype([("index", np.int64), ("t", np.int64), ("iface", np.int32), ("status", np.uint8),
                ("code", np.uint8), ("flags", np.uint8), ("ev_mode", np.uint8), ("reserved", np.uint16),
                ("src", np.int32), ("dst", np.int32), ("size", np.int32)], align=True)
"""Per record, beside its `PKT` row: number (1-based, Wireshark's), time (ns), interface, `status`, decode
error code, wire flags, EV mode, headers with reserved bits set (bit k: `HEADERS[k]`), inner source and
destination address ids (`Addresses`), IP length."""

# Reserved bits, as masks over each header's bytes (mrc-public-notes 2.4 header tables; IBTA: reserved fields are
# sent as 0). The scapy layers name the same bits ``resv*`` (BTH also ``r`` and ``tver``).
HEADERS = ["BTH"] + [name for name, _, _ in ORDER]
_MASKS: dict[str, dict[int, int]] = {
    "BTH": {1: 0x0F, 4: 0x3F, 8: 0x4F},  # tver; resv6 after FECN / BECN; r (bit 6) and resv4
    "TSETH": {2: 0x7F, 3: 0xF0},  # tsr 1 | rsvd 11 | ftype 4
    "SETH": {1: 0x17},  # prologue resv1, resv3 (the byte before cack_psn is svc_time, mrc.h SVC_TIME)
    "CC_STATE": {2: 0x80},  # the bit before ooo_count
    "NETH": {1: 0x17, 17: 0xFF},  # byte 12 is svc_time, as in SETH
    "PETH": {1: 0x17, 2: 0xFF, 6: 0xFF, 7: 0xFF, 14: 0x7F, 15: 0xF0},
    "ERTH": {0: 0x3F, 8: 0xFF, 9: 0xFF, 10: 0xFF, 11: 0xFF, 14: 0x7F, 15: 0xF0},
    "EETH": {0: 0x3F, 14: 0x7F, 15: 0xF0, **{k: 0xFF for k in range(16, 36)}},
    "CNP": {k: 0xFF for k in range(16)},
}
_SIZES = [12] + [size for _, _, size in ORDER]
_BITS = [0] + [bit for _, bit, _ in ORDER]
MASKS = np.zeros((len(HEADERS), 36), np.uint8)
for _h, _name in enumerate(HEADERS):
    for _b, _m in _MASKS.get(_name, {}).items():
        MASKS[_h, _b] = _m
SIZES = np.array(_SIZES, np.int64)
BITS = np.array(_BITS, np.int64)
TSETH_BIT = int(dict((n, b) for n, b, _ in ORDER)["TSETH"])

# decode codes that mean "not RoCEv2 at all" (another protocol, another UDP port)
_NOT_ROCE = np.zeros(256, np.bool_)
for _c in (WE.E_IPV6_NH, WE.E_IPV4_PROTO, WE.E_UDP_DPORT, WE.E_IP_VERSION, WE.E_IPV4_FRAG, WE.E_INNER_NH,
           WE.E_INNER_VERSION):
    _NOT_ROCE[_c] = True


@njit
def _decode(buf, start, end, ok, pkts, nets, pay, codes, ev_hint, dport, classes):
    for k in range(start.shape[0]):
        if not ok[k]:
            continue
        code, p = decode_packet(buf, start[k], end[k], pkts, k, nets, k, ev_hint, dport, classes, False, False)
        codes[k] = code
        pay[k] = p


@njit
def _udp_dport(buf, start, end):
    """The UDP destination port of an IP packet (inner header in IPv6-in-IPv6), or -1."""
    pos = start
    for _ in range(3):
        if end - pos < 1:
            return -1
        v = buf[pos] >> 4
        if v == 4:
            if end - pos < 20:
                return -1
            hl = (buf[pos] & 0xF) * 4
            if buf[pos + 9] != 17 or end - pos < hl + 4:
                return -1
            return (np.int64(buf[pos + hl + 2]) << 8) | np.int64(buf[pos + hl + 3])
        if v != 6 or end - pos < 40:
            return -1
        nh = buf[pos + 6]
        pos += 40
        if nh == 43:
            if end - pos < 8:
                return -1
            nh = 41
            pos += 8 + 8 * np.int64(buf[pos + 1])
        if nh == 17:
            if end - pos < 4:
                return -1
            return (np.int64(buf[pos + 2]) << 8) | np.int64(buf[pos + 3])
        if nh != 41:
            return -1
    return -1


@njit
def _wire_checks(buf, start, end, codes, pkts, nets, pay, trim_cls, masks, sizes, bits, tseth_bit, flags, reserved,
                 table):
    """ICRC, UDP checksum and reserved bits of each decoded packet."""
    for k in range(start.shape[0]):
        if codes[k] != 0:
            continue
        p = pkts[k]
        op = p["opcode"]
        el = ext_len(op, p["ts"])
        bth = pay[k] - el - 12
        udp = bth - 8
        ipv = 6 if nets[k]["ip_version"] == 6 else 4
        ip_off = udp - 40 if ipv == 6 else start[k]
        e = end[k]
        trimmed = trim_cls[p["dscp"]]
        if not trimmed:
            if e - pay[k] - p["payload_len"] >= 4:
                stored = (np.uint32(buf[e - 4]) | (np.uint32(buf[e - 3]) << np.uint32(8))
                          | (np.uint32(buf[e - 2]) << np.uint32(16)) | (np.uint32(buf[e - 1]) << np.uint32(24)))
                if stored != icrc(buf, ip_off, ipv, udp, e - 4):
                    flags[k] |= 1
            c = (np.int64(buf[udp + 6]) << 8) | np.int64(buf[udp + 7])
            if c != 0 and c != udp_checksum(buf, ip_off, ipv, udp, e):
                flags[k] |= 2
        # reserved bits: BTH, then each header the opcode carries, in wire order
        m = table[op]
        pos = bth
        r = 0
        for h in range(masks.shape[0]):
            if h > 0 and (m & bits[h]) == 0:
                continue
            if bits[h] == tseth_bit and p["ts"] == 0:
                continue
            for b in range(sizes[h]):
                if pos + b < e and buf[pos + b] & masks[h, b]:
                    r |= 1 << h
                    break
            pos += sizes[h]
        if r:
            flags[k] |= 4
            reserved[k] = r


def _ip_dscp(buf, start, end) -> int:
    """The DSCP of the (first) IP header, 0 if too short to say."""
    if end - start < 2:
        return 0
    b0, b1 = int(buf[start]), int(buf[start + 1])
    return (((b0 & 0xF) << 4) | (b1 >> 4)) >> 2 if b0 >> 4 == 6 else b1 >> 2


class Addresses:
    """Inner IPv6 / IPv4 addresses <-> small integers, for the whole capture."""

    def __init__(self):
        self.ids: dict[bytes, int] = {}
        self.values: list[bytes] = []

    def map(self, raw: np.ndarray) -> np.ndarray:
        """(n, 16) uint8 -> int32 ids."""
        if not len(raw):
            return np.zeros(0, np.int32)
        v = np.ascontiguousarray(raw).view("V16").reshape(-1)
        uniq, inv = np.unique(v, return_inverse=True)
        ids = np.empty(len(uniq), np.int32)
        for j, u in enumerate(uniq):
            b = u.tobytes()
            i = self.ids.get(b)
            if i is None:
                i = self.ids[b] = len(self.values)
                self.values.append(b)
            ids[j] = i
        return ids[inv.reshape(-1)]

    def text(self, i: int) -> str:
        import ipaddress

        b = self.values[i]
        if b[:10] == bytes(10) and b[10:12] == b"\xff\xff":
            return str(ipaddress.IPv4Address(b[12:]))
        return str(ipaddress.IPv6Address(b))


def decode(batch: Batch, addresses: Addresses, dscp: DscpTable = DEFAULT_DSCP, ev_mode: EvMode = EvMode.STEV):
    """(PKT rows, REC rows) of a batch."""
    n = len(batch)
    pkts = np.zeros(n, PKT)
    nets = np.zeros(n, NET)
    rec = np.zeros(n, REC)
    rec["index"] = batch.first + np.arange(n)
    rec["t"] = batch.t_ns
    rec["iface"] = batch.iface
    rec["size"] = batch.end - batch.start
    pay = np.zeros(n, np.int64)
    codes = np.zeros(n, np.int32)
    ok = batch.link == LINK_OK
    _decode(batch.buf, batch.start, batch.end, ok, pkts, nets, pay, codes, int(ev_mode), ROCEV2_UDP_PORT,
            dscp.classes)
    flags = np.zeros(n, np.uint8)
    reserved = np.zeros(n, np.uint16)
    trim_cls = np.isin(dscp.classes, [3, 4])  # DscpClass.TRIMMED, TRIMMED_LASTHOP
    _wire_checks(batch.buf, batch.start, batch.end, codes, pkts, nets, pay, trim_cls, MASKS, SIZES, BITS, TSETH_BIT,
                 flags, reserved, HEADER_TABLE)
    status = np.full(n, ST_MRC, np.uint8)
    status[~ok] = ST_LINK
    bad = ok & (codes != 0)
    if bad.any():
        status[bad] = ST_MALFORMED
        idx = np.flatnonzero(bad)
        not_roce = _NOT_ROCE[np.minimum(codes[idx], 255)]
        status[idx[not_roce]] = ST_OTHER
        # a decode error on a record the capture cut short is the cut, not the packet: not judged
        status[idx[batch.short[idx] & ~not_roce]] = ST_SHORT
        for k in idx[~batch.short[idx]]:
            if trim_cls[_ip_dscp(batch.buf, batch.start[k], batch.end[k])]:
                # a switch cut it into its headers (its DSCP says trimmed): the wire carries what it left
                status[k] = ST_MALFORMED
                flags[k] |= F_TRIMMED_CUT
            elif status[k] == ST_MALFORMED and _udp_dport(batch.buf, batch.start[k], batch.end[k]) != ROCEV2_UDP_PORT:
                status[k] = ST_OTHER  # not UDP to 4791 at all: someone else's traffic
    good = status == ST_MRC
    op = pkts["opcode"]
    status[good & (op < 0xC6)] = ST_ROCE
    rec["status"] = status
    rec["code"] = np.minimum(codes, 255)
    rec["flags"] = flags
    rec["reserved"] = reserved
    rec["ev_mode"] = nets["ev_mode"]
    rec["src"] = addresses.map(nets["src"])
    rec["dst"] = addresses.map(nets["dst"])
    return pkts, rec
