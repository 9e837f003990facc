"""Packets as the suite sees them: bytes on the wire, decoded once, and what the network does to them.

`Packet` is one packet an endpoint sent (or the suite crafted): its bytes,
where it came from and went, and its decoded fields (`PKT` / `NET` rows,
decoded with the project's compiled codec *without* checking the ICRC: a
switch does not check it; the wire cases check it with `icrc_ok`, an
implementation written here from IBTA Annex A17 on top of `zlib.crc32`).

Network actions on bytes, as a switch performs them: `mark_ce` (ECN CE in
every IP header), `trim` (`mrc.wire.trim.trim_bytes`: payload cut, DSCP
re-marked TRIMMED / TRIMMED_LASTHOP).
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from mrc.wire import DecodeError, EvMode
from mrc.wire.codec import decode
from mrc.wire.constants import NackReason, Opcode
from mrc.wire.dscp import DscpTable
from mrc.wire.trim import trim_bytes

DATA_OPCODES = frozenset(range(0xC6, 0xCC))


class Dscp:
    """A `DscpTable` with its class array computed once (the codec asks for it on every decode)."""

    def __init__(self, table: DscpTable | dict | None = None):
        if isinstance(table, dict):
            table = DscpTable.from_dict(table)
        self.table = table or DscpTable()
        self.classes = self.table.classes

    def __getattr__(self, name):
        return getattr(self.table, name)
LAST_OPCODES = frozenset({0xC8, 0xC9, 0xCA, 0xCB})
IMM_OPCODES = frozenset({0xC9, 0xCB})
KIND_OF = {0xDC: "sack", 0xDD: "nack", 0xDE: "probe", 0xD1: "ack", 0xD8: "ep_req", 0xD9: "ep_rsp"}
NACK_NAMES = {int(r): r.name for r in NackReason}


@dataclass
class Packet:
    data: bytes
    src: str  # endpoint name ("crafted" for packets the suite built)
    port: int  # NIC port it left by (1-based)
    time: int  # ps
    ev_mode: str = "STEV"
    dscp: Dscp = field(default_factory=Dscp)
    dst: str | None = None
    fate: str = "in flight"  # "delivered", "dropped", "link down", "unroutable", "held"
    arrived: int | None = None
    _decoded: tuple | None = None

    # -- decoding ----------------------------------------------------------------
    def _decode(self):
        if self._decoded is None:
            try:
                self._decoded = decode(self.data, ev_mode=EvMode[self.ev_mode], dport=0, dscp=self.dscp,
                                       verify_icrc=False, verify_udp=False, port=self.port - 1)
            except DecodeError as e:
                self._decoded = (None, None, e)
        return self._decoded

    @property
    def error(self) -> DecodeError | None:
        pkt, _, err = self._decode()
        return err if pkt is None else None

    @property
    def pkt(self):
        p = self._decode()[0]
        if p is None:
            raise AssertionError(f"packet from {self.src} at {self.time} ps does not decode: {self.error}")
        return p

    @property
    def net(self):
        self.pkt
        return self._decode()[1]

    @property
    def payload(self) -> bytes:
        self.pkt
        return self._decode()[2]

    def __getitem__(self, name: str) -> int:
        return int(self.pkt[name])

    # -- shorthands -----------------------------------------------------------------
    @property
    def opcode(self) -> int:
        return int(self.pkt["opcode"])

    @property
    def kind(self) -> str:
        if self.error is not None:
            return "malformed"
        op = self.opcode
        return "data" if op in DATA_OPCODES else KIND_OF.get(op, f"opcode {op:#x}")

    @property
    def is_data(self) -> bool:
        return self.error is None and self.opcode in DATA_OPCODES

    @property
    def psn(self) -> int:
        return int(self.pkt["psn"])

    @property
    def ev(self) -> int:
        return int(self.pkt["ev"])

    @property
    def dst_address(self) -> bytes:
        return bytes(self.net["dst"])

    def __repr__(self):
        what = self.kind
        if self.error is None:
            what += f" psn={self.psn} ev={self.ev:#x}"
            if self.kind == "nack":
                what += f" {NACK_NAMES.get(self['nack_reason'], self['nack_reason'])}"
        return f"<{what} {self.src}->{self.dst} port {self.port} t={self.time} {self.fate}>"


# --- what a switch does to bytes ------------------------------------------------------------------

def _ip_headers(data: bytes):
    """Offsets of the IP headers of a packet (outer first): IPv4 / IPv6, IPv6-in-IPv6 with an optional SRH."""
    pos, out = 0, []
    while True:
        v = data[pos] >> 4
        out.append((pos, v))
        if v == 4:
            return out
        nh, nxt = data[pos + 6], pos + 40
        if nh == 43:
            nh, nxt = data[nxt], nxt + 8 + 8 * data[nxt + 1]
        if nh != 41:
            return out
        pos = nxt


def opcode_of(data: bytes) -> int:
    """The BTH opcode of a packet, read without decoding it (-1 if it is too short)."""
    try:
        pos, v = _ip_headers(data)[-1]
        udp = pos + (40 if v == 6 else (data[pos] & 0xF) * 4)
        return data[udp + 8]
    except IndexError:
        return -1


def mark_ce(data: bytes) -> bytes:
    """Set ECN = CE (11) in every IP header. Neither the ICRC (traffic class is masked) nor the UDP
    checksum (IPv6 pseudo-header) covers it; an IPv4 header checksum is updated."""
    b = bytearray(data)
    for pos, v in _ip_headers(data):
        if v == 6:
            b[pos + 1] |= 0x30
        else:
            b[pos + 1] |= 0x03
            b[pos + 10:pos + 12] = b"\0\0"
            b[pos + 10:pos + 12] = struct.pack("!H", _inet_checksum(bytes(b[pos:pos + 20])))
    return bytes(b)


def ecn_of(data: bytes) -> int:
    pos, v = _ip_headers(data)[-1]
    return (data[pos + 1] >> 4) & 3 if v == 6 else data[pos + 1] & 3


def _inet_checksum(b: bytes) -> int:
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def trim(p: Packet, *, lasthop: bool = False) -> bytes:
    """The packet's bytes trimmed to its headers (payload removed) and re-marked as a switch does it."""
    headers = len(p.data) - int(p.pkt["payload_len"]) - 4
    return trim_bytes(p.data, headers, lasthop=lasthop, dscp=p.dscp, ev_mode=EvMode[p.ev_mode])


# --- ICRC, independently (IBTA Annex A17) -----------------------------------------------------

def icrc_of(data: bytes) -> int:
    """The ICRC the packet should carry: CRC-32 over 8 bytes of 1s, the IP header that carries UDP
    (inner one in SRv6) with traffic class / flow label / hop limit (IPv4: TOS, TTL, checksum) set
    to 1s, UDP with its checksum set to 1s, BTH with byte 4 (resv8a) set to 1s, and the rest."""
    pos, v = _ip_headers(data)[-1]
    b = bytearray(data[pos:len(data) - 4])
    if v == 6:
        b[0] |= 0x0F
        b[1] = 0xFF
        b[2:4] = b"\xff\xff"
        b[7] = 0xFF
        udp = 40
    else:
        udp = (b[0] & 0xF) * 4
        b[1] = 0xFF
        b[8] = 0xFF
        b[10:12] = b"\xff\xff"
    b[udp + 6:udp + 8] = b"\xff\xff"
    b[udp + 8 + 4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xFFFFFFFF


def without_udp_checksum(data: bytes) -> bytes:
    """`data` with its UDP checksum set to 0 ("not computed"), so only the ICRC protects it."""
    pos, v = _ip_headers(data)[-1]
    udp = pos + (40 if v == 6 else (data[pos] & 0xF) * 4)
    return data[:udp + 6] + b"\0\0" + data[udp + 8:]


def icrc_ok(data: bytes) -> bool:
    """Whether the last 4 bytes hold the right ICRC (least significant byte first, as RoCEv2 NICs send it)."""
    return struct.unpack("<I", data[-4:])[0] == icrc_of(data)


def with_icrc(data: bytes) -> bytes:
    """`data` with its ICRC recomputed (for crafted or rewritten packets)."""
    return data[:-4] + struct.pack("<I", icrc_of(data))


def opcode_name(op: int) -> str:
    try:
        return Opcode(op).name
    except ValueError:
        return f"{op:#x}"
