"""Checksums of a RoCEv2 packet, compiled: CRC-32 for the ICRC, the Internet checksum for UDP / IPv4.

ICRC (IBTA Annex A17, RoCEv2): CRC-32 (the Ethernet / zlib polynomial) over
8 bytes of 1s (standing for the InfiniBand LRH), the IP header that carries
UDP, the UDP header, BTH and everything after it up to the ICRC, with the
fields a router may change set to 1s first:

- IPv6: traffic class, flow label, hop limit;
- IPv4: type of service, TTL, header checksum;
- UDP: checksum;
- BTH: resv8a (the byte that holds FECN / BECN).

The 32-bit result goes on the wire least significant byte first (as scapy's
``contrib.roce`` and real NICs do). In SRv6 mode the covered IP header is the
inner one, the RoCEv2 header proper: transit switches rewrite the outer
destination (uSID shift) and SRH, which must not invalidate the ICRC.

CRC-32 runs "slicing by 16" (sixteen 256-entry tables, 16 bytes per step)
so a 4 KB payload costs 256 steps, not 4096: ~1.6 us per 4 KiB on the
development machine, bound by instruction throughput (a flat table, int64
indices and 64-bit loads measured the same). NICs compute the ICRC and the UDP
checksum in hardware; `mrc.wire.codec` can leave both to "hardware"
(``csum_offload``, docs/wire.md).
"""
from __future__ import annotations

import sys

import numpy as np

from mrc._jit import njit


def _tables() -> np.ndarray:
    t = np.zeros((16, 256), dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        t[0, i] = c
    for k in range(1, 16):
        for i in range(256):
            prev = int(t[k - 1, i])
            t[k, i] = (prev >> 8) ^ int(t[0, prev & 0xFF])
    return t


CRC_TABLES = _tables()
_T = CRC_TABLES
# The word-at-a-time loops below read little-endian words; other hosts take the byte loop.
LITTLE_ENDIAN = sys.byteorder == "little"


@njit
def crc32_byte(crc, b):
    return np.uint32(_T[0, (crc ^ np.uint32(b)) & np.uint32(0xFF)] ^ (crc >> np.uint32(8)))


@njit
def crc32_update(crc, buf, start, end):
    """Continue a CRC-32 (pre-inverted state `crc`) over ``buf[start:end]`` (slicing by 16)."""
    crc = np.uint32(crc)
    i = start
    nblk = (end - start) // 16
    if LITTLE_ENDIAN and nblk > 0:
        w = buf[start : start + 16 * nblk].view(np.uint32)
        m = np.uint32(0xFF)
        for j in range(nblk):
            a = crc ^ w[4 * j]
            b = w[4 * j + 1]
            c = w[4 * j + 2]
            d = w[4 * j + 3]
            crc = (
                _T[15, a & m] ^ _T[14, (a >> np.uint32(8)) & m] ^ _T[13, (a >> np.uint32(16)) & m] ^ _T[12, a >> np.uint32(24)]
                ^ _T[11, b & m] ^ _T[10, (b >> np.uint32(8)) & m] ^ _T[9, (b >> np.uint32(16)) & m] ^ _T[8, b >> np.uint32(24)]
                ^ _T[7, c & m] ^ _T[6, (c >> np.uint32(8)) & m] ^ _T[5, (c >> np.uint32(16)) & m] ^ _T[4, c >> np.uint32(24)]
                ^ _T[3, d & m] ^ _T[2, (d >> np.uint32(8)) & m] ^ _T[1, (d >> np.uint32(16)) & m] ^ _T[0, d >> np.uint32(24)]
            )
        i = start + 16 * nblk
    while i < end:
        crc = crc32_byte(crc, buf[i])
        i += 1
    return crc


@njit
def crc32(buf, start, end):
    """Plain CRC-32 of ``buf[start:end]`` (equals ``zlib.crc32``)."""
    return crc32_update(np.uint32(0xFFFFFFFF), buf, start, end) ^ np.uint32(0xFFFFFFFF)


def _prefix_state() -> int:
    crc = 0xFFFFFFFF
    for _ in range(8):
        crc = int(CRC_TABLES[0, (crc ^ 0xFF) & 0xFF]) ^ (crc >> 8)
    return crc


ICRC_PREFIX_STATE = np.uint32(_prefix_state())  # CRC state after the 8 bytes of 1s standing for the LRH


def _masks(ip_len: int, ipv6: bool) -> np.ndarray:
    """OR-masks (64 bytes from the covered IP header) that turn the variant fields into 1s."""
    m = np.zeros(64, dtype=np.uint8)
    if ipv6:
        m[0], m[1], m[2], m[3], m[7] = 0x0F, 0xFF, 0xFF, 0xFF, 0xFF  # traffic class, flow label, hop limit
    else:
        m[1], m[8], m[10], m[11] = 0xFF, 0xFF, 0xFF, 0xFF  # type of service, TTL, header checksum
    m[ip_len + 6], m[ip_len + 7] = 0xFF, 0xFF  # UDP checksum
    m[ip_len + 8 + 4] = 0xFF  # BTH resv8a (FECN, BECN)
    return m


ICRC_MASK6 = _masks(40, True)
ICRC_MASK4 = _masks(20, False)
ICRC_MASK6_W = ICRC_MASK6.view(np.uint32).copy()
ICRC_MASK4_W = ICRC_MASK4.view(np.uint32).copy()


@njit
def _crc_masked(crc, buf, start, end, maskb, maskw):
    """`crc32_update` with ``maskb[k]`` OR-ed into byte ``start + k`` for k < 64."""
    i = start
    nblk = (end - start) // 16
    m = np.uint32(0xFF)
    if LITTLE_ENDIAN and nblk > 0:
        w = buf[start : start + 16 * nblk].view(np.uint32)
        for j in range(nblk):
            a = w[4 * j]
            b = w[4 * j + 1]
            c = w[4 * j + 2]
            d = w[4 * j + 3]
            if j < 4:
                a |= maskw[4 * j]
                b |= maskw[4 * j + 1]
                c |= maskw[4 * j + 2]
                d |= maskw[4 * j + 3]
            a ^= crc
            crc = (
                _T[15, a & m] ^ _T[14, (a >> np.uint32(8)) & m] ^ _T[13, (a >> np.uint32(16)) & m] ^ _T[12, a >> np.uint32(24)]
                ^ _T[11, b & m] ^ _T[10, (b >> np.uint32(8)) & m] ^ _T[9, (b >> np.uint32(16)) & m] ^ _T[8, b >> np.uint32(24)]
                ^ _T[7, c & m] ^ _T[6, (c >> np.uint32(8)) & m] ^ _T[5, (c >> np.uint32(16)) & m] ^ _T[4, c >> np.uint32(24)]
                ^ _T[3, d & m] ^ _T[2, (d >> np.uint32(8)) & m] ^ _T[1, (d >> np.uint32(16)) & m] ^ _T[0, d >> np.uint32(24)]
            )
        i = start + 16 * nblk
    while i < end:
        b8 = buf[i]
        if i - start < 64:
            b8 |= maskb[i - start]
        crc = crc32_byte(crc, b8)
        i += 1
    return crc


@njit
def icrc(buf, ip_off, ip_version, udp_off, end):
    """RoCEv2 ICRC of the packet whose covered IP header starts at `ip_off`.

    `udp_off` is where UDP starts (so the IP header is ``buf[ip_off:udp_off]``)
    and `end` where the ICRC itself starts. The variant fields are OR-ed to 1s
    on the fly (no copy). An IPv4 header with options takes the byte-wise path.
    """
    crc = ICRC_PREFIX_STATE
    hl = udp_off - ip_off
    if ip_version == 6:
        crc = _crc_masked(crc, buf, ip_off, end, ICRC_MASK6, ICRC_MASK6_W)
    elif hl == 20:
        crc = _crc_masked(crc, buf, ip_off, end, ICRC_MASK4, ICRC_MASK4_W)
    else:
        for j in range(hl):
            b = buf[ip_off + j]
            if j == 1 or j == 8 or j == 10 or j == 11:
                b = np.uint8(0xFF)
            crc = crc32_byte(crc, b)
        for j in range(20):
            b = buf[udp_off + j]
            if j == 6 or j == 7 or j == 12:
                b = np.uint8(0xFF)
            crc = crc32_byte(crc, b)
        crc = crc32_update(crc, buf, udp_off + 20, end)
    return crc ^ np.uint32(0xFFFFFFFF)


@njit
def ones_sum(buf, start, end, acc):
    """Add the big-endian 16-bit words of ``buf[start:end]`` to `acc` (odd tail padded with 0).

    On little-endian hosts the bulk is summed as 32-bit words as read (a plain
    widening sum into 64 bits, which LLVM vectorises: no carries to propagate
    until the fold) and the folded sum byte-swapped: one's complement sums do not
    depend on word size or byte order (RFC 1071 section 2). 4 KiB: ~55 ns, half
    the time of 16-bit words; 64-bit words with an end-around carry per add
    measured ~290 ns (the carry is a dependency chain).
    """
    pos = start
    n4 = (end - start) & ~3
    if LITTLE_ENDIAN and n4 >= 16:
        w = buf[start : start + n4].view(np.uint32)
        s = np.uint64(0)
        for k in range(w.shape[0]):
            s += w[k]
        s = np.uint64(fold(s))
        acc += ((s & np.uint64(0xFF)) << np.uint64(8)) | (s >> np.uint64(8))
        pos = start + n4
    n2 = (end - pos) & ~1
    for k in range(pos, pos + n2, 2):
        acc += (np.uint64(buf[k]) << np.uint64(8)) | np.uint64(buf[k + 1])
    if pos + n2 < end:
        acc += np.uint64(buf[end - 1]) << np.uint64(8)
    return acc


@njit
def fold(acc):
    while acc >> np.uint64(16):
        acc = (acc & np.uint64(0xFFFF)) + (acc >> np.uint64(16))
    return np.uint16(acc)


@njit
def pseudo_header_sum(buf, ip_off, ip_version, length):
    """One's complement sum (unfolded) of the UDP pseudo-header of the IP header at `ip_off`."""
    acc = np.uint64(0)
    if ip_version == 6:
        acc = ones_sum(buf, ip_off + 8, ip_off + 40, acc)
    else:
        acc = ones_sum(buf, ip_off + 12, ip_off + 20, acc)
    return acc + np.uint64(17) + np.uint64(length)


@njit
def udp_checksum(buf, ip_off, ip_version, udp_off, end):
    """UDP checksum with the pseudo-header of the IP header at `ip_off` (field read as 0)."""
    acc = pseudo_header_sum(buf, ip_off, ip_version, end - udp_off)
    acc = ones_sum(buf, udp_off, end, acc)
    # the stored checksum was summed too: add its complement to take it out (RFC 1624)
    stored = (np.uint64(buf[udp_off + 6]) << np.uint64(8)) | np.uint64(buf[udp_off + 7])
    acc += np.uint64(0xFFFF) ^ stored
    c = ~fold(acc) & np.uint16(0xFFFF)
    if c == 0:
        c = np.uint16(0xFFFF)
    return c


@njit
def udp_checksum_partial(buf, ip_off, ip_version, udp_off, end):
    """What a driver with UDP checksum offload leaves in the checksum field for the NIC to finish
    (Linux ``CHECKSUM_PARTIAL``: the folded, not complemented, pseudo-header sum)."""
    return fold(pseudo_header_sum(buf, ip_off, ip_version, end - udp_off))


@njit
def ipv4_checksum(buf, ip_off, hlen):
    """IPv4 header checksum (the checksum field itself read as 0)."""
    acc = ones_sum(buf, ip_off, ip_off + 10, np.uint64(0))
    acc = ones_sum(buf, ip_off + 12, ip_off + hlen, acc)
    return ~fold(acc) & np.uint16(0xFFFF)


def icrc_bytes(ip_header: bytes, udp_header: bytes, rest: bytes) -> int:
    """ICRC in plain Python (zlib), for the scapy layers: same masking as `icrc`.

    `ip_header` is the IP header that carries UDP, `udp_header` the 8 UDP
    bytes, `rest` BTH and everything after it up to (not including) the ICRC.
    """
    import zlib

    ip = bytearray(ip_header)
    if ip[0] >> 4 == 6:
        ip[0] |= 0x0F
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xFF
    else:
        ip[1] = 0xFF
        ip[8] = 0xFF
        ip[10:12] = b"\xff\xff"
    udp = bytearray(udp_header)
    udp[6:8] = b"\xff\xff"
    bth = bytearray(rest[:12])
    bth[4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + bytes(rest[12:])) & 0xFFFFFFFF
