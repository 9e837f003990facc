"""Classic pcap files of encoded packets (no dependency; scapy not needed).

`write_pcap` wraps each packet (bytes from its first IP header) in an
Ethernet II header (locally administered MACs, EtherType from the IP
version) and writes nanosecond-resolution pcap. `read_pcap` yields the IP
bytes back from Ethernet (with or without 802.1Q tags), raw-IP, IPv4 and IPv6
link types; a frame it cannot unwrap is yielded as a `DecodeError`.
"""
from __future__ import annotations

import os
import struct
from typing import Iterable, Iterator

import numpy as np

from mrc.wire.errors import DecodeError

MAGIC_US = 0xA1B2C3D4
MAGIC_NS = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229

SRC_MAC = bytes.fromhex("020000000001")
DST_MAC = bytes.fromhex("020000000002")


def _eth(ip: bytes) -> bytes:
    etype = 0x86DD if ip[:1] and ip[0] >> 4 == 6 else 0x0800
    return DST_MAC + SRC_MAC + struct.pack("!H", etype) + ip


def write_pcap(path: str | os.PathLike, packets: Iterable[bytes], times_ns: Iterable[int] | None = None) -> int:
    """Write `packets` (IP bytes) to `path`; returns the number written. Times default to 1 µs apart."""
    n = 0
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", MAGIC_NS, 2, 4, 0, 0, 262144, LINKTYPE_ETHERNET))
        times = iter(times_ns) if times_ns is not None else None
        for ip in packets:
            t = next(times) if times is not None else n * 1000
            frame = _eth(bytes(ip))
            f.write(struct.pack("<IIII", t // 1_000_000_000, t % 1_000_000_000, len(frame), len(frame)))
            f.write(frame)
            n += 1
    return n


def write_pcap_batch(path, buf: np.ndarray, offsets: np.ndarray, times_ns=None) -> int:
    """`write_pcap` for the output of `encode_batch` (one buffer plus offsets)."""
    data = buf.tobytes()
    packets = (data[offsets[k] : offsets[k + 1]] for k in range(len(offsets) - 1))
    return write_pcap(path, packets, times_ns)


def _unwrap(linktype: int, frame: bytes) -> bytes:
    if linktype in (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6):
        return frame
    if linktype != LINKTYPE_ETHERNET:
        raise DecodeError("pcap", "linktype", f"link type {linktype} is not Ethernet or raw IP")
    pos = 12
    while True:
        if len(frame) < pos + 2:
            raise DecodeError("Ethernet", "type", "frame shorter than its Ethernet header")
        etype = struct.unpack_from("!H", frame, pos)[0]
        if etype in (0x8100, 0x88A8):
            pos += 4
            continue
        break
    if etype not in (0x0800, 0x86DD):
        raise DecodeError("Ethernet", "type", f"EtherType 0x{etype:04x} is not IPv4 or IPv6")
    ip = frame[pos + 2 :]
    # Drop Ethernet padding / trailers beyond the IP datagram's own length.
    if etype == 0x86DD and len(ip) >= 40:
        ip = ip[: 40 + struct.unpack_from("!H", ip, 4)[0]]
    elif etype == 0x0800 and len(ip) >= 20:
        ip = ip[: struct.unpack_from("!H", ip, 2)[0]]
    return ip


MAX_RECORD = 262_144  # libpcap's MAXIMUM_SNAPLEN


def read_pcap(path: str | os.PathLike) -> Iterator[tuple[int, int, bytes | DecodeError]]:
    """Yield ``(index, time_ns, ip_bytes or DecodeError)`` for each record of a pcap file."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            raise DecodeError("pcap", "header", "file shorter than the 24-byte pcap header")
        magic_le = struct.unpack("<I", head[:4])[0]
        magic_be = struct.unpack(">I", head[:4])[0]
        if magic_le in (MAGIC_US, MAGIC_NS):
            endian, magic = "<", magic_le
        elif magic_be in (MAGIC_US, MAGIC_NS):
            endian, magic = ">", magic_be
        else:
            raise DecodeError("pcap", "magic", f"neither a pcap nor a pcapng file (it starts {head[:4].hex()}; a pcap "
                              "starts a1b2c3d4 or a1b23c4d either way round, a pcapng 0a0d0d0a)")
        snaplen, linktype = struct.unpack(endian + "II", head[16:24])
        linktype &= 0xFFFF
        # a record is at most the file's snap length, and never beyond libpcap's 262,144-byte maximum
        # (a corrupt or hostile length must not make us allocate gigabytes)
        max_len = min(snaplen, MAX_RECORD) if snaplen else MAX_RECORD
        scale = 1 if magic == MAGIC_NS else 1000
        index = 0
        while True:
            rec = f.read(16)
            if not rec:
                return
            if len(rec) < 16:
                yield index, 0, DecodeError("pcap", "record", "file ends inside a record header")
                return
            sec, frac, incl, _orig = struct.unpack(endian + "IIII", rec)
            if incl > max_len:
                yield index, 0, DecodeError("pcap", "incl_len", f"record {index} claims {incl} bytes, above the "
                                            f"snap length {snaplen} / {MAX_RECORD} maximum: the file is corrupt")
                return
            frame = f.read(incl)
            t = sec * 1_000_000_000 + frac * scale
            if len(frame) < incl:
                yield index, t, DecodeError("pcap", "record", "file ends inside a packet")
                return
            try:
                yield index, t, _unwrap(linktype, frame)
            except DecodeError as exc:
                yield index, t, exc
            index += 1
