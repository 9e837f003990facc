"""The address plan: SRv6 uSID blocks and uSIDs, and host addresses.

SRv6 (F3216: 32-bit block, 16-bit uSIDs, RFC 9800 NEXT-C-SID):

- one block per plane, ``5f00:<plane>::/32`` (5f00::/16 is the IANA block for
  SRv6 SIDs, RFC 9602), so planes never share a SID; the plane number sits in
  the block's low bits so that an OCP GEN profile can fill it from the EV;
- a uSID per switch, the same numbers in every plane (the block tells planes
  apart), in ranges aligned so that GEN masks can fill the EV's choices into
  the uSID's low bits:

  ======================  =====================================================
  ``0x1000 + i``           T0 switch i (leaf, or fat-tree edge), i < 0x3000
  ``0x4000 + pod*2^wa+a``  fat-tree aggregation switch a of `pod` (wa = bits of k/2)
  ``0x8000 + j``           leaf-spine T1 (spine) j
  ``0x8000 + (a<<wc)+c``   fat-tree core switch on aggregation position a, uplink c
  ``0xf000 + d``           T0-local: the T0's downlink d (the host under it)
  ======================  =====================================================

  The host uSID is T0-local: the destination T0 shifts its own uSID away and
  looks the next one up in its own table, so 131,072 hosts need no global
  host uSID (they share 256 values).

Hosts have one IPv6 address per NIC port (plane): ``fd00:<plane>:<t0>:<d>::1``
(``fd00:<plane>:<t0>::/48`` is the T0's host prefix, which ECMP routing uses).

Compiled helpers take carriers as two uint64 words: ``hi`` = block(32) |
uSID1 | uSID2, ``lo`` = uSID3 | uSID4 | uSID5 | uSID6.
"""
from __future__ import annotations

import ipaddress

import numpy as np

from mrc._jit import njit
from mrc.errors import UsageError

BLOCK_BASE = 0x5F000000  # plane p uses BLOCK_BASE | p
T0_BASE = 0x1000
AGG_BASE = 0x4000
T1_BASE = 0x8000  # leaf-spine spines; fat-tree cores
HOST_BASE = 0xF000
USIDS_PER_CARRIER = 6
HOST_PREFIX = 0xFD00  # host addresses: fd00:<plane>:<t0>:<downlink>::1
HOST_IID = 1


def bits(n: int) -> int:
    """Bits needed to number `n` things (0 for one thing)."""
    return max(0, (int(n) - 1).bit_length())


def block(plane: int) -> int:
    return BLOCK_BASE | int(plane)


def carrier_int(blk: int, usids) -> int:
    """The 128-bit carrier of block `blk` followed by `usids` (then zeros)."""
    if len(usids) > USIDS_PER_CARRIER:
        raise UsageError(f"usids = {list(usids)!r}: a carrier holds at most {USIDS_PER_CARRIER} uSIDs")
    value = int(blk) << 96
    for k, u in enumerate(usids):
        if not 1 <= int(u) <= 0xFFFF:
            raise UsageError(f"usids[{k}] = {u!r}: a uSID is 1..0xffff")
        value |= int(u) << (80 - 16 * k)
    return value


def carrier_words(value: int) -> tuple[np.uint64, np.uint64]:
    """(hi, lo) uint64 words of a 128-bit carrier."""
    return np.uint64(value >> 64), np.uint64(value & 0xFFFFFFFFFFFFFFFF)


def words_int(hi, lo) -> int:
    return (int(hi) << 64) | int(lo)


def parse_carrier(value) -> tuple[int, list[int]]:
    """(block, uSIDs up to the first zero) of a carrier given as int, text or IPv6Address."""
    v = int(ipaddress.IPv6Address(value)) if not isinstance(value, int) else value
    out = []
    for k in range(USIDS_PER_CARRIER):
        u = (v >> (80 - 16 * k)) & 0xFFFF
        if u == 0:
            break
        out.append(u)
    return v >> 96, out


def prefix48_text(prefix48: int) -> str:
    """``5f00:3:8007::/48`` for the 48-bit value block|uSID."""
    return f"{ipaddress.IPv6Address(int(prefix48) << 80)}/48"


def host_address(t0: int, downlink: int, plane: int) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address((HOST_PREFIX << 112) | (plane << 96) | (t0 << 80) | (downlink << 64) | HOST_IID)


def link_local(port: int) -> ipaddress.IPv6Address:
    """A link-local address for a port, ``fe80::1:<port id as 32 bits>`` (``fe80::1:0:0`` for port 0),
    used as ``via`` in printed routes; the namespace builder assigns it to the port's interface."""
    return ipaddress.IPv6Address((0xFE80 << 112) | (1 << 32) | int(port))


# ---------------------------------------------------------------- compiled

_M16 = np.uint64(0xFFFF)
_LOW32 = np.uint64(0xFFFFFFFF)


@njit(inline="always")
def carrier_block(hi):
    return hi >> np.uint64(32)


@njit(inline="always")
def carrier_lead(hi):
    """The active (leading) uSID of a carrier."""
    return (hi >> np.uint64(16)) & _M16


@njit(inline="always")
def carrier_shift(hi, lo):
    """uN: drop the leading uSID, shift the rest left by 16 bits, zero-fill."""
    nhi = (hi & ~_LOW32) | ((hi & _M16) << np.uint64(16)) | (lo >> np.uint64(48))
    return nhi, lo << np.uint64(16)


@njit
def carrier_pack(blk, u1, u2, u3, u4):
    """Carrier words of a block and up to four uSIDs (0 = none)."""
    hi = (np.uint64(blk) << np.uint64(32)) | (np.uint64(u1) << np.uint64(16)) | np.uint64(u2)
    lo = (np.uint64(u3) << np.uint64(48)) | (np.uint64(u4) << np.uint64(32))
    return hi, lo
