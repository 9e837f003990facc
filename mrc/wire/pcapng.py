"""pcapng files: write one interface per capture point; read pcapng (and classic pcap) with scapy.

`write_pcapng(path, interfaces, packets, tsresol=9)` writes a Section Header Block,
one Interface Description Block per ``(name, description)`` (raw IP link type: the
packets are bytes from their first IP header, as the codec makes them; ``if_name``,
``if_description``, ``if_tsresol`` = 10^-`tsresol` s) and one Enhanced Packet Block
per ``(interface, time, bytes)``, times in units of 10^-`tsresol` s (the emulator uses
12: simulated picoseconds). Little-endian, as tcpdump and Wireshark write.

`read_packets(path)` yields ``(index, time_ns, ip_bytes or DecodeError, interface)``
for pcapng and classic pcap alike. pcapng is read by scapy's maintained reader
(`scapy.utils.RawPcapReader`, which picks its pcapng reader by the magic); classic pcap
by `mrc.wire.pcap.read_pcap`. A pcapng block scapy cannot read (it stops there, as at the end)
ends the listing with a `DecodeError` record naming the byte offset, never an exception.
"""
from __future__ import annotations

import os
import struct
from typing import Iterable, Iterator

from mrc.wire.errors import DecodeError

LINKTYPE_RAW = 101
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


def read_packets(path: str | os.PathLike) -> Iterator[tuple[int, int, bytes | DecodeError, str | None]]:
    """Yield ``(index, time_ns, ip_bytes or DecodeError, interface name or None)`` for pcapng or pcap."""
    if not is_pcapng(path):
        from mrc.wire.pcap import read_pcap

        for index, t, data in read_pcap(path):
            yield index, t, data, None
        return
    yield from _read_pcapng(path)


def _read_pcapng(path) -> Iterator[tuple[int, int, bytes | DecodeError, str | None]]:
    import os

    from scapy.error import Scapy_Exception
    from scapy.utils import RawPcapReader

    from mrc.wire.pcap import _unwrap

    size = os.path.getsize(path)
    try:
        reader = RawPcapReader(str(path))
    except Scapy_Exception as exc:
        yield 0, 0, DecodeError("pcapng", "header", str(exc)), None
        return
    # scapy ends the file with EOFError both at its end and (after a rate-limited warning) at a block it
    # cannot read: note where each block read starts; a clean end starts a read at the end of the file
    read_block = reader._read_block
    last = {"at": 0}

    def _read_block(*a, **kw):
        last["at"] = reader.f.tell()
        return read_block(*a, **kw)

    reader._read_block = _read_block
    index = 0
    with reader:
        while True:
            try:
                frame, meta = reader._read_packet()
            except EOFError:
                if last["at"] != size:
                    yield index, 0, DecodeError("pcapng", "block", f"unreadable block at byte {last['at']} of "
                                                f"{size}"), None
                return
            except (Scapy_Exception, struct.error, ValueError, OverflowError) as exc:
                yield index, 0, DecodeError("pcapng", "block", str(exc)), None
                return
            res = int(meta.tsresol) or 1_000_000
            ticks = (int(meta.tshigh) << 32) | int(meta.tslow)
            t = ticks * 1_000_000_000 // res
            ifname = meta.ifname.decode(errors="replace") if isinstance(meta.ifname, bytes) else meta.ifname
            try:
                yield index, t, _unwrap(int(meta.linktype), frame), ifname
            except DecodeError as exc:
                yield index, t, exc, ifname
            index += 1
