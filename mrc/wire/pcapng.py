"""pcapng files: write one interface per capture point; read pcapng (and classic pcap) with scapy.

`write_pcapng(path, interfaces, packets, tsresol=9)` writes a Section Header Block,
one Interface Description Block per ``(name, description)`` (raw IP link type: the
packets are bytes from their first IP header, as the codec makes them; ``if_name``,
``if_description``, ``if_tsresol`` = 10^-`tsresol` s) and one Enhanced Packet Block
per ``(interface, time, bytes)``, times in units of 10^-`tsresol` s (the emulator uses
12: simulated picoseconds). Little-endian, as tcpdump and Wireshark write.

`read_packets(path)` yields ``(index, time_ns, ip_bytes or DecodeError, interface)``
for pcapng and classic pcap alike (classic pcap: `mrc.wire.pcap.read_pcap`). pcapng is read
here, block by block, every block type of the format (draft-ietf-opsawg-pcapng, "Block
Types") handled:

- packets: Enhanced Packet Blocks (6), Simple Packet Blocks (3: interface 0, no time, so
  ``time_ns`` is None) and the obsolete Packet Blocks (2);
- Section Header (0x0A0D0D0A: byte order, a new section forgets the interfaces) and
  Interface Description Blocks (1: link type, snap length, ``if_tsresol``, ``if_tsoffset``);
- every other type (Name Resolution 4, Interface Statistics 5, systemd Journal Export 9,
  Decryption Secrets 0x0A, Custom 0x0BAD / 0x40000BAD, the requested and local-use ranges,
  unknown ones) carries no packet and is skipped, as the format asks of a reader.

The file is hostile until it fits: a block's length is checked (at least 12 bytes, a multiple
of 4, at most `MAX_BLOCK`, inside the file, repeated in its trailer) before its body is read,
and a packet's captured length against the block, its interface's snap length and libpcap's
262,144-byte maximum (`mrc.wire.pcap.MAX_RECORD`, as the classic reader bounds it), so a block
that claims 4 GiB is refused, never allocated. The first thing wrong ends the listing with a
`DecodeError` record naming the field, the block's index and its byte offset; nothing raises.
"""
from __future__ import annotations

import os
import struct
from typing import Iterable, Iterator

from mrc.wire.errors import DecodeError

LINKTYPE_RAW = 101
SHB = 0x0A0D0D0A
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_BYTE_ORDER = 0x1A2B3C4D
_SNAPLEN = 262144

OPT_END = 0
OPT_COMMENT = 1
IF_NAME = 2
IF_DESCRIPTION = 3
IF_TSRESOL = 9
SHB_USERAPPL = 4


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def _options(items) -> bytes:
    body = b"".join(_option(c, v) for c, v in items if v is not None)
    return body + struct.pack("<HH", OPT_END, 0) if body else b""


def _block(kind: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack("<II", kind, n) + body + struct.pack("<I", n)


def write_pcapng(path: str | os.PathLike, interfaces: Iterable[tuple[str, str]],
                 packets: Iterable[tuple[int, int, bytes]], tsresol: int = 9, comment: str = "") -> int:
    """Write `packets` (interface index, time in 10^-tsresol s, IP bytes) to `path`; returns the count."""
    if not 0 <= tsresol <= 127:
        raise ValueError(f"tsresol = {tsresol}: a power of ten 0..127")
    ifaces = list(interfaces)
    n = 0
    with open(path, "wb") as f:
        from mrc._version import __version__

        shb = struct.pack("<IHHq", _BYTE_ORDER, 1, 0, -1) + _options(
            [(OPT_COMMENT, comment.encode() or None), (SHB_USERAPPL, f"mrc-transport {__version__}".encode())])
        f.write(_block(0x0A0D0D0A, shb))
        for name, desc in ifaces:
            idb = struct.pack("<HHI", LINKTYPE_RAW, 0, _SNAPLEN) + _options(
                [(IF_NAME, name.encode()), (IF_DESCRIPTION, desc.encode() or None), (IF_TSRESOL, bytes([tsresol]))])
            f.write(_block(1, idb))
        for iface, t, data in packets:
            if not 0 <= iface < len(ifaces):
                raise ValueError(f"interface {iface}: the file has {len(ifaces)}")
            if t < 0 or t >= 1 << 64:
                raise ValueError(f"time {t}: outside 0..2^64-1 units")
            data = bytes(data)
            epb = struct.pack("<IIIII", iface, t >> 32, t & 0xFFFFFFFF, len(data), len(data)) + data
            f.write(_block(6, epb))
            n += 1
    return n


def is_pcapng(path: str | os.PathLike) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == PCAPNG_MAGIC


def read_packets(path: str | os.PathLike) -> Iterator[tuple[int, int | None, bytes | DecodeError, str | None]]:
    """Yield ``(index, time_ns, ip_bytes or DecodeError, interface name or None)`` for pcapng or pcap."""
    if not is_pcapng(path):
        from mrc.wire.pcap import read_pcap

        for index, t, data in read_pcap(path):
            yield index, t, data, None
        return
    yield from _read_pcapng(path)


# Block types (draft-ietf-opsawg-pcapng, "Block Types"): what each is, for messages
IDB, PB, SPB, NRB, ISB, EPB, JOURNAL, DSB = 1, 2, 3, 4, 5, 6, 9, 0x0A
BLOCK_NAMES = {SHB: "Section Header", IDB: "Interface Description", PB: "Packet (obsolete)", SPB: "Simple Packet",
               NRB: "Name Resolution", ISB: "Interface Statistics", EPB: "Enhanced Packet",
               JOURNAL: "systemd Journal Export", DSB: "Decryption Secrets", 0x0BAD: "Custom",
               0x40000BAD: "Custom (do not copy)"}
MAX_BLOCK = 16 << 20  # Wireshark's pcapng reader refuses longer blocks too
IF_TSOFFSET = 14


class _Interface:
    __slots__ = ("linktype", "snaplen", "name", "tsresol", "tsoffset")

    def __init__(self, linktype: int, snaplen: int):
        self.linktype, self.snaplen, self.name = linktype, snaplen, None
        self.tsresol = (10, 6)  # base, exponent: microseconds unless if_tsresol says otherwise
        self.tsoffset = 0  # seconds

    def time_ns(self, ticks: int) -> int:
        base, exp = self.tsresol
        ns = (ticks * 10**9 // 10**exp) if base == 10 else (ticks * 10**9) >> exp
        return ns + self.tsoffset * 10**9


def _parse_options(body: bytes, pos: int, end: str, where: str) -> Iterator[tuple[int, bytes]]:
    """(code, value) of each option from `pos`; raises DecodeError when one runs past the block."""
    while pos + 4 <= len(body):
        code, n = struct.unpack_from(end + "HH", body, pos)
        if code == OPT_END:
            return
        if pos + 4 + n > len(body):
            raise DecodeError("pcapng", "option_length", f"{where}: option {code} of {n} bytes runs past the block")
        yield code, body[pos + 4 : pos + 4 + n]
        pos += 4 + n + (-n % 4)


def _read_pcapng(path) -> Iterator[tuple[int, int | None, bytes | DecodeError, str | None]]:
    from mrc.wire.pcap import MAX_RECORD, _unwrap

    size = os.path.getsize(path)
    index = 0  # packets yielded
    block = 0  # blocks read
    end = "<"
    ifaces: list[_Interface] = []
    with open(path, "rb") as f:
        while True:
            at = f.tell()
            head = f.read(8)
            if not head:
                return
            where = f"block {block} at byte {at}"
            if len(head) < 8:
                yield index, None, DecodeError("pcapng", "block", f"{where}: the file ends inside a block header"), None
                return
            kind_le = struct.unpack_from("<I", head)[0]
            if kind_le == SHB:  # the byte order is the section's: read it before the length
                bom = f.read(4)
                if bom == struct.pack("<I", _BYTE_ORDER):
                    end = "<"
                elif bom == struct.pack(">I", _BYTE_ORDER):
                    end = ">"
                else:
                    yield index, None, DecodeError("pcapng", "byte_order_magic", f"{where}: {bom.hex() or 'nothing'} "
                                                   "is not 0x1A2B3C4D in either byte order"), None
                    return
                f.seek(at + 8)
            kind, length = struct.unpack_from(end + "II", head)
            name = BLOCK_NAMES.get(kind, f"type {kind:#x}")
            where = f"block {block} ({name}) at byte {at}"
            problem = None
            if length < 12 or length % 4:
                problem = f"length {length} is not a multiple of 4 of at least 12"
            elif length > MAX_BLOCK:
                problem = f"length {length} is above the {MAX_BLOCK}-byte maximum: the file is corrupt"
            elif at + length > size:
                problem = f"length {length} runs past the end of the file ({size - at} bytes left)"
            if problem is not None:
                yield index, None, DecodeError("pcapng", "block_total_length", f"{where}: {problem}"), None
                return
            body = f.read(length - 12)
            trailer = f.read(4)
            if len(body) < length - 12 or len(trailer) < 4 or struct.unpack(end + "I", trailer)[0] != length:
                yield index, None, DecodeError("pcapng", "block_total_length", f"{where}: the trailing length "
                                               f"{trailer.hex() or 'is missing'} differs from {length}"), None
                return
            block += 1
            try:
                if kind == SHB:
                    if len(body) < 12:
                        raise DecodeError("pcapng", "block", f"{where}: {len(body)} bytes, shorter than its fields")
                    major = struct.unpack_from(end + "H", body, 4)[0]
                    if major != 1:
                        raise DecodeError("pcapng", "major_version", f"{where}: version {major}, not 1")
                    ifaces = []  # interfaces belong to their section
                elif kind == IDB:
                    if len(body) < 8:
                        raise DecodeError("pcapng", "block", f"{where}: {len(body)} bytes, shorter than its fields")
                    linktype, _, snaplen = struct.unpack_from(end + "HHI", body)
                    iface = _Interface(linktype, snaplen)
                    for code, value in _parse_options(body, 8, end, where):
                        if code == IF_NAME:
                            iface.name = value.decode("utf-8", errors="replace")
                        elif code == IF_TSRESOL and len(value) >= 1:
                            r = value[0]
                            iface.tsresol = (2, r & 0x7F) if r & 0x80 else (10, r)
                        elif code == IF_TSOFFSET and len(value) >= 8:
                            iface.tsoffset = struct.unpack_from(end + "q", value)[0]
                    ifaces.append(iface)
                elif kind in (EPB, PB, SPB):
                    if kind == SPB:
                        fixed, iface_id = 4, 0
                        orig = struct.unpack_from(end + "I", body)[0] if len(body) >= 4 else 0
                    else:
                        fixed = 20
                        if len(body) < fixed:
                            raise DecodeError("pcapng", "block", f"{where}: {len(body)} bytes, shorter than its fields")
                        if kind == EPB:
                            iface_id, hi, lo, caplen, orig = struct.unpack_from(end + "IIIII", body)
                        else:
                            iface_id, _drops, hi, lo, caplen, orig = struct.unpack_from(end + "HHIIII", body)
                    if len(body) < fixed:
                        raise DecodeError("pcapng", "block", f"{where}: {len(body)} bytes, shorter than its fields")
                    if iface_id >= len(ifaces):
                        raise DecodeError("pcapng", "interface_id", f"{where}: interface {iface_id}, but the section "
                                          f"has described {len(ifaces)}")
                    iface = ifaces[iface_id]
                    if kind == SPB:  # no captured length: the block holds min(original, snap length) bytes
                        caplen = min(orig, len(body) - fixed, iface.snaplen or len(body) - fixed)
                    limit = min(iface.snaplen, MAX_RECORD) if iface.snaplen else MAX_RECORD
                    if caplen > limit:
                        raise DecodeError("pcapng", "captured_packet_length", f"{where}: {caplen} bytes, above the "
                                          f"snap length {iface.snaplen} / {MAX_RECORD} maximum: the file is corrupt")
                    if fixed + caplen > len(body):
                        raise DecodeError("pcapng", "captured_packet_length", f"{where}: {caplen} bytes, more than "
                                          f"the block holds ({len(body) - fixed})")
                    t = None if kind == SPB else iface.time_ns((hi << 32) | lo)
                    frame = body[fixed : fixed + caplen]
                    try:
                        yield index, t, _unwrap(iface.linktype, frame), iface.name
                    except DecodeError as exc:
                        yield index, t, exc, iface.name
                    index += 1
                # every other block type carries no packet: skipped (the format asks readers to skip what
                # they do not use)
            except (DecodeError, struct.error) as exc:
                err = exc if isinstance(exc, DecodeError) else DecodeError("pcapng", "block", f"{where}: {exc}")
                yield index, None, err, None
                return
