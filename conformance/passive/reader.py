"""Captures read in batches: classic pcap and pcapng, the link layers MRC traffic is captured on.

`read_batches(path)` yields `Batch`es of up to ``batch`` records: the file's bytes (mapped, not read:
the operating system pages them in as they are walked, and out again) and, per record, where
its IP packet starts and ends in them, its time (ns), its interface and whether the capture cut
it short. Records are numbered from 1 in file order, as Wireshark numbers them. Compiled
scanners (`_scan_pcapng`, `_scan_pcap`) walk the blocks, so a million packets take seconds;
Python only reads the blocks that describe interfaces.

Link layers (per pcapng interface, or the pcap file's): Ethernet (with up to two 802.1Q /
802.1ad tags), raw IP (101, 12, 14), IPv4 (228), IPv6 (229), Linux cooked SLL (113) and SLL2 (276,
tshark's ``-i any``), BSD loopback (0, 108). A record whose link layer does not carry IPv4 or
IPv6 gets a ``link`` code instead (not MRC traffic, counted).

A file that is not a capture raises `CaptureError` with one line naming the problem; a capture
that ends inside a record ends the listing (``Batch.truncated`` on the last batch).
"""
from __future__ import annotations

import dataclasses
import mmap
import os
import struct
from typing import Iterator

import numpy as np

from mrc._jit import njit
from mrc.errors import MRCError

PCAPNG_SHB = 0x0A0D0D0A
BYTE_ORDER_MAGIC = 0x1A2B3C4D
PCAP_MAGIC = {0xA1B2C3D4: 1000, 0xA1B23C4D: 1}  # magic -> ns per fraction unit
MAX_RECORD = 1 << 26  # a pcapng block or pcap record longer than 64 MiB is corruption, not a packet

# link types (tcpdump.org/linktypes.html)
LT_NULL, LT_ETHERNET, LT_RAW, LT_RAW12, LT_RAW14, LT_LOOP = 0, 1, 101, 12, 14, 108
LT_SLL, LT_IPV4, LT_IPV6, LT_SLL2 = 113, 228, 229, 276

# link codes of a record (Batch.link)
LINK_OK, LINK_TYPE, LINK_NOT_IP, LINK_SHORT = 0, 1, 2, 3
LINK_PROBLEMS = {LINK_TYPE: "link type not read", LINK_NOT_IP: "not IPv4 / IPv6", LINK_SHORT: "frame shorter than its "
                 "link header"}

# scanner stop codes
_MORE, _OTHER, _FULL, _BAD = 0, 1, 2, 3


class CaptureError(MRCError):
    """The file is not a pcap / pcapng capture we can read (one line naming the problem)."""


@dataclasses.dataclass(frozen=True)
class Interface:
    name: str
    description: str
    linktype: int
    ticks_per_s: int  # if_tsresol
    offset_s: int = 0  # if_tsoffset


@dataclasses.dataclass
class Batch:
    first: int  # record number (1-based) of the first record
    buf: np.ndarray  # uint8, writable (the decoder may use it as scratch)
    start: np.ndarray  # int64: first byte of the IP packet
    end: np.ndarray  # int64: one past its last byte
    t_ns: np.ndarray  # int64
    iface: np.ndarray  # int32: index into `interfaces`
    short: np.ndarray  # bool: captured length below the length on the wire (snap length)
    link: np.ndarray  # uint8: LINK_* code
    interfaces: list  # the Interfaces known so far (shared, grows)
    truncated: str = ""  # why the file ended early, on the last batch

    def __len__(self) -> int:
        return len(self.start)


# ---------------------------------------------------------------- compiled scanners


@njit
def _u32(buf, pos, big):
    if big:
        return (np.uint32(buf[pos]) << 24) | (np.uint32(buf[pos + 1]) << 16) | (np.uint32(buf[pos + 2]) << 8) \
            | np.uint32(buf[pos + 3])
    return (np.uint32(buf[pos + 3]) << 24) | (np.uint32(buf[pos + 2]) << 16) | (np.uint32(buf[pos + 1]) << 8) \
        | np.uint32(buf[pos])


@njit
def _scan_pcapng(buf, pos, end, big, off, caplen, origlen, iface, ticks, n0, snap0):
    """Packet blocks (EPB 6, SPB 3, obsolete PB 2) from `pos` into the arrays from row `n0`.
    Returns (rows filled, position reached, stop code)."""
    n = n0
    cap = off.shape[0]
    while True:
        if n >= cap:
            return n, pos, _FULL
        if end - pos < 12:
            return n, pos, _MORE
        kind = _u32(buf, pos, big)
        total = np.int64(_u32(buf, pos + 4, big))
        if total < 12 or total % 4 != 0 or total > MAX_RECORD:
            return n, pos, _BAD
        if end - pos < total:
            return n, pos, _MORE
        if _u32(buf, pos + total - 4, big) != total:
            return n, pos, _BAD
        if kind == 6:
            if total < 32:
                return n, pos, _BAD
            c = np.int64(_u32(buf, pos + 20, big))
            if 28 + c > total - 4:
                return n, pos, _BAD
            iface[n] = _u32(buf, pos + 8, big)
            ticks[n] = (np.int64(_u32(buf, pos + 12, big)) << 32) | np.int64(_u32(buf, pos + 16, big))
            off[n] = pos + 28
            caplen[n] = c
            origlen[n] = _u32(buf, pos + 24, big)
        elif kind == 3:
            o = np.int64(_u32(buf, pos + 8, big))
            c = min(o, total - 16)
            if snap0 > 0:
                c = min(c, snap0)
            iface[n] = 0
            ticks[n] = -1
            off[n] = pos + 12
            caplen[n] = c
            origlen[n] = o
        elif kind == 2:
            if total < 32:
                return n, pos, _BAD
            c = np.int64(_u32(buf, pos + 20, big))
            if 28 + c > total - 4:
                return n, pos, _BAD
            b0, b1 = np.uint32(buf[pos + 8]), np.uint32(buf[pos + 9])
            iface[n] = (b0 << 8 | b1) if big else (b1 << 8 | b0)
            ticks[n] = (np.int64(_u32(buf, pos + 12, big)) << 32) | np.int64(_u32(buf, pos + 16, big))
            off[n] = pos + 28
            caplen[n] = c
            origlen[n] = _u32(buf, pos + 24, big)
        else:
            return n, pos, _OTHER
        n += 1
        pos += total


@njit
def _scan_pcap(buf, pos, end, big, max_len, off, caplen, origlen, ticks, n0, frac_ns):
    n = n0
    cap = off.shape[0]
    while True:
        if n >= cap:
            return n, pos, _FULL
        if end - pos < 16:
            return n, pos, _MORE
        incl = np.int64(_u32(buf, pos + 8, big))
        if incl > max_len:
            return n, pos, _BAD
        if end - pos < 16 + incl:
            return n, pos, _MORE
        ticks[n] = np.int64(_u32(buf, pos, big)) * 1_000_000_000 + np.int64(_u32(buf, pos + 4, big)) * frac_ns
        off[n] = pos + 16
        caplen[n] = incl
        origlen[n] = _u32(buf, pos + 12, big)
        n += 1
        pos += 16 + incl


@njit
def _be16(buf, pos):
    return (np.int64(buf[pos]) << 8) | np.int64(buf[pos + 1])


@njit
def _unwrap(buf, off, caplen, origlen, linktype, start, end, short, link):
    """Where each record's IP packet lies (start, end), from its link layer."""
    for k in range(off.shape[0]):
        o, c, lt = off[k], caplen[k], linktype[k]
        short[k] = origlen[k] > c
        pos = -1
        if lt == LT_RAW or lt == LT_RAW12 or lt == LT_RAW14 or lt == LT_IPV4 or lt == LT_IPV6:
            pos = o
        elif lt == LT_ETHERNET:
            pos = o + 12
            for _ in range(3):
                if pos + 2 > o + c:
                    break
                et = _be16(buf, pos)
                if et == 0x8100 or et == 0x88A8:
                    pos += 4
                    continue
                break
            if pos + 2 > o + c:
                link[k] = LINK_SHORT
                continue
            et = _be16(buf, pos)
            if et != 0x86DD and et != 0x0800:
                link[k] = LINK_NOT_IP
                continue
            pos += 2
        elif lt == LT_SLL or lt == LT_SLL2:
            hl = 16 if lt == LT_SLL else 20
            if c < hl:
                link[k] = LINK_SHORT
                continue
            et = _be16(buf, o + 14) if lt == LT_SLL else _be16(buf, o)
            if et != 0x86DD and et != 0x0800:
                link[k] = LINK_NOT_IP
                continue
            pos = o + hl
        elif lt == LT_NULL or lt == LT_LOOP:
            if c < 4:
                link[k] = LINK_SHORT
                continue
            pos = o + 4
        else:
            link[k] = LINK_TYPE
            continue
        stop = o + c
        start[k] = pos
        # the IP datagram's own length drops Ethernet padding and trailers; a datagram that claims more than the
        # frame holds keeps what is there (the decoder then says so: a truncated packet, or the capture's cut)
        e = stop
        if pos < stop:
            v = buf[pos] >> 4
            if v == 6 and stop - pos >= 40:
                e = min(stop, pos + 40 + _be16(buf, pos + 4))
            elif v == 4 and stop - pos >= 20:
                e = min(stop, pos + _be16(buf, pos + 2))
        end[k] = max(e, pos)


# ---------------------------------------------------------------- Python side


def _options(body: bytes, at: int, big: bool) -> dict[int, bytes]:
    e = ">" if big else "<"
    out: dict[int, bytes] = {}
    while at + 4 <= len(body):
        code, n = struct.unpack_from(e + "HH", body, at)
        if code == 0:
            break
        out.setdefault(code, body[at + 4 : at + 4 + n])
        at += 4 + n + (-n % 4)
    return out


def _idb(body: bytes, big: bool) -> Interface:
    e = ">" if big else "<"
    if len(body) < 8:
        raise CaptureError("pcapng: interface description block shorter than 8 bytes")
    linktype = struct.unpack_from(e + "H", body, 0)[0]
    opts = _options(body, 8, big)
    ticks = 1_000_000
    if 9 in opts and opts[9]:
        r = opts[9][0]
        ticks = 2 ** (r & 0x7F) if r & 0x80 else 10 ** (r & 0x7F)
    offset = struct.unpack(e + "q", opts[14][:8])[0] if len(opts.get(14, b"")) >= 8 else 0
    text = lambda c: opts.get(c, b"").split(b"\0")[0].decode("utf-8", "replace")  # noqa: E731
    return Interface(text(2), text(3), linktype, ticks, offset)


def _open(path) -> tuple:
    try:
        f = open(path, "rb")
    except OSError as e:
        raise CaptureError(f"{path}: {e.strerror}") from None
    head = f.read(24)
    if len(head) < 4:
        f.close()
        raise CaptureError(f"{path}: {len(head)} bytes: too short for a pcap or pcapng header")
    return f, head


def read_batches(path: str | os.PathLike, batch: int = 1 << 16) -> Iterator[Batch]:
    """The capture's records in batches (see the module docstring). The file is mapped, not read: a batch's
    ``buf`` is the whole file (copy-on-write, so the decoder may use it as scratch), valid while it is referenced."""
    f, head = _open(path)
    with f:
        size = os.fstat(f.fileno()).st_size
        mm = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY) if size else None
    buf = np.frombuffer(mm, np.uint8) if mm is not None else np.zeros(0, np.uint8)
    magic = struct.unpack("<I", head[:4])[0]
    if magic == PCAPNG_SHB:
        walk = _pcapng(buf, batch, str(path))
    else:
        walk = None
        for big in (False, True):
            m = struct.unpack(">I" if big else "<I", head[:4])[0]
            if m in PCAP_MAGIC:
                walk = _pcap(buf, big, PCAP_MAGIC[m], batch, str(path))
        if walk is None:
            raise CaptureError(f"{path}: not a pcap or pcapng capture (first bytes {head[:4].hex()})")
    done = 0
    for b in walk:
        yield b
        # the caller is done with the batch: drop the pages behind it from the mapping (they are read again from
        # the file if touched), so a capture of many gigabytes does not stay resident
        upto = int(b.end.max()) // mmap.PAGESIZE * mmap.PAGESIZE if len(b) else 0
        if mm is not None and upto > done and hasattr(mmap, "MADV_DONTNEED"):
            mm.madvise(mmap.MADV_DONTNEED, done, upto - done)
            done = upto


def ticks_to_ns(ticks: np.ndarray, per_s) -> np.ndarray:
    """Timestamps in units of 1 / `per_s` s (a number, or one per timestamp) -> ns, without overflow (picosecond
    ticks of a long run included)."""
    per_s = np.asarray(per_s, np.int64)
    g = np.gcd(np.int64(1_000_000_000), per_s)
    whole, part = np.divmod(ticks, per_s)
    return whole * 1_000_000_000 + part * (1_000_000_000 // g) // (per_s // g)


def _arrays(n: int):
    return (np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64))


def _make_batch(buf, first: int, n: int, off, caplen, origlen, ticks, iface, ifaces, truncated="") -> Batch:
    off, caplen, origlen, ticks, iface = off[:n], caplen[:n], origlen[:n], ticks[:n], iface[:n]
    known = (iface >= 0) & (iface < len(ifaces))
    at = np.where(known, iface, 0)
    lt = np.array([i.linktype for i in ifaces] or [0], np.int64)[at]
    lt[~known] = -1
    start = np.zeros(n, np.int64)
    end = np.zeros(n, np.int64)
    short = np.zeros(n, np.bool_)
    link = np.zeros(n, np.uint8)
    _unwrap(buf, off, caplen, origlen, lt, start, end, short, link)
    # times: ticks of the interface's resolution -> ns (SPBs carry none: the previous record's)
    per_s = np.array([i.ticks_per_s for i in ifaces] or [1_000_000_000], np.int64)[at]
    offset = np.array([i.offset_s for i in ifaces] or [0], np.int64)[at]
    t = np.where(ticks >= 0, ticks_to_ns(np.maximum(ticks, 0), per_s) + offset * 1_000_000_000, 0)
    if (ticks < 0).any():
        t = np.maximum.accumulate(t)
    return Batch(first, buf, start, end, t, iface.astype(np.int32), short, link, ifaces, truncated)


def _pcapng(buf, batch, path) -> Iterator[Batch]:
    ifaces: list[Interface] = []
    big = False
    snap0 = 0
    first = 1
    pos, end = 0, len(buf)
    off, caplen, origlen, ticks = _arrays(batch)
    iface = np.zeros(batch, np.int64)
    while True:
        n, pos, stop = _scan_pcapng(buf, pos, end, big, off, caplen, origlen, iface, ticks, 0, snap0)
        if n:
            yield _make_batch(buf, first, n, off, caplen, origlen, ticks, iface, ifaces)
            first += n
            off, caplen, origlen, ticks = _arrays(batch)
            iface = np.zeros(batch, np.int64)
        if stop == _FULL:
            continue
        if stop == _MORE:
            if pos < end:
                yield _make_batch(buf, first, 0, off, caplen, origlen, ticks, iface, ifaces,
                                  truncated=f"the file ends inside the block at byte offset {pos}")
            return
        if stop == _BAD:
            if first == 1 and not ifaces:
                raise CaptureError(f"{path}: pcapng: the first block is corrupt")
            yield _make_batch(buf, first, 0, off, caplen, origlen, ticks, iface, ifaces,
                              truncated=f"corrupt block (bad length) at byte offset {pos}")
            return
        # a block that is not a packet: read it here (the scanner checked its length)
        e = ">" if big else "<"
        kind = struct.unpack_from(e + "I", buf, pos)[0]
        if kind == PCAPNG_SHB:
            bom = bytes(buf[pos + 8 : pos + 12])
            if bom == struct.pack("<I", BYTE_ORDER_MAGIC):
                big = False
            elif bom == struct.pack(">I", BYTE_ORDER_MAGIC):
                big = True
            else:
                raise CaptureError(f"{path}: pcapng: section header with byte-order magic {bom.hex()}")
            ifaces = []  # a new section: its interfaces replace the old ones (batches made keep their list)
            e = ">" if big else "<"
        total = struct.unpack_from(e + "I", buf, pos + 4)[0]
        if total < 12 or total % 4 or total > MAX_RECORD or pos + total > end:
            yield _make_batch(buf, first, 0, off, caplen, origlen, ticks, iface, ifaces,
                              truncated=f"corrupt or cut block of {total} bytes at byte offset {pos}")
            return
        if kind == 1:
            body = bytes(buf[pos + 8 : pos + total - 4])
            ifaces = ifaces + [_idb(body, big)]
            if len(ifaces) == 1:
                snap0 = struct.unpack_from(e + "I", body, 4)[0] if len(body) >= 8 else 0
        pos += total


def _pcap(buf, big, frac_ns, batch, path) -> Iterator[Batch]:
    if len(buf) < 24:
        raise CaptureError(f"{path}: {len(buf)} bytes: shorter than the 24-byte pcap header")
    e = ">" if big else "<"
    snaplen, linktype = struct.unpack_from(e + "II", buf, 16)
    ifaces = [Interface("", "", linktype & 0xFFFF, 1_000_000_000)]
    max_len = min(snaplen, MAX_RECORD) if snaplen else MAX_RECORD
    max_len = max(max_len, 262_144)  # some writers put a small snap length and longer records
    first, pos, end = 1, 24, len(buf)
    while True:
        off, caplen, origlen, ticks = _arrays(batch)
        n, pos, stop = _scan_pcap(buf, pos, end, big, max_len, off, caplen, origlen, ticks, 0, frac_ns)
        iface = np.zeros(n, np.int64)
        if n:
            yield _make_batch(buf, first, n, off, caplen, origlen, ticks, iface, ifaces)
            first += n
        if stop == _FULL:
            continue
        if stop == _BAD:
            yield _make_batch(buf, first, 0, off, caplen, origlen, ticks, iface, ifaces,
                              truncated=f"record {first} claims more than {max_len} bytes: the file is corrupt")
        elif pos < end:
            yield _make_batch(buf, first, 0, off, caplen, origlen, ticks, iface, ifaces,
                              truncated=f"the file ends inside record {first}")
        return
