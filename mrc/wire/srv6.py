"""SRv6 uSID carriers (F3216) and the shift a switch performs on them.

A carrier is an IPv6 destination address: a 32-bit locator block followed by
up to six 16-bit micro-SIDs (uSIDs), then zeros (RFC 9800 NEXT-C-SID, "F3216",
the Linux default; OCP MRC examples: "32-bit locator field followed by ...
16-bit uSID fields"). A switch whose block and uSID lead the address (the
first 48 bits) shifts the rest left by 16 bits and zero-fills (uN). When
nothing follows its uSID, the carrier is exhausted: with an SRH and
``segleft > 0`` it decrements ``segleft`` and copies segment ``[segleft]``
into the destination (RFC 8754 4.3.1); with neither, the path ends there.

Compiled functions (`usid_key`, `usid_process`) work on uint8[16] arrays for
the emulator; `carrier`, `parse_carrier` and `usid_step` are their Python
faces over addresses (`str`, `int`, `bytes` or `ipaddress.IPv6Address`).
"""
from __future__ import annotations

import enum
import ipaddress
from typing import Sequence

import numpy as np

from mrc._jit import njit
from mrc.errors import UsageError
from mrc.wire.constants import USIDS_PER_CARRIER


class UsidAction(enum.IntEnum):
    NOT_MINE = 0  # leading block + uSID are not this node's: forward by lookup, unchanged
    SHIFTED = 1  # the argument was shifted left by one uSID
    NEXT_CONTAINER = 2  # the carrier was exhausted; the next SRH segment is the destination
    END = 3  # the carrier was exhausted and no segment is left: this node ends the path


def _packed(addr) -> bytes:
    if isinstance(addr, (bytes, bytearray)) and len(addr) == 16:
        return bytes(addr)
    if isinstance(addr, np.ndarray):
        return bytes(addr.astype(np.uint8))
    return ipaddress.IPv6Address(addr).packed


def carrier(block: int, usids: Sequence[int]) -> ipaddress.IPv6Address:
    """The carrier address of locator `block` (32 bits) followed by `usids` (1..6, each 1..0xffff)."""
    if not 0 <= block <= 0xFFFFFFFF:
        raise UsageError(f"block = {block!r}: a locator block is 32 bits")
    if not 1 <= len(usids) <= USIDS_PER_CARRIER:
        raise UsageError(f"usids = {list(usids)!r}: a carrier holds 1..{USIDS_PER_CARRIER} uSIDs")
    value = block << 96
    for k, u in enumerate(usids):
        if not 1 <= u <= 0xFFFF:
            raise UsageError(f"usids[{k}] = {u!r}: a uSID is 1..0xffff (0 ends the carrier)")
        value |= u << (80 - 16 * k)
    return ipaddress.IPv6Address(value)


def parse_carrier(addr) -> tuple[int, list[int]]:
    """(block, uSIDs up to the first zero) of a carrier address."""
    value = int.from_bytes(_packed(addr), "big")
    usids = []
    for k in range(USIDS_PER_CARRIER):
        u = (value >> (80 - 16 * k)) & 0xFFFF
        if u == 0:
            break
        usids.append(u)
    return value >> 96, usids


@njit
def usid_key(dst):
    """The leading 48 bits (block + active uSID) of a carrier, the key of a switch's /48 lookup."""
    k = np.int64(0)
    for b in range(6):
        k = (k << 8) | np.int64(dst[b])
    return k


@njit
def usid_process(dst, segments, segleft, key):
    """One switch's uN step on `dst` (uint8[16], changed in place).

    `key` is the switch's own block + uSID as `usid_key` computes it;
    `segments` the SRH segment list (n x 16, may have 0 rows), `segleft` its
    Segments Left. Returns ``(action, segleft)`` with `UsidAction` values.
    """
    if usid_key(dst) != key:
        return 0, segleft
    arg = 0
    for b in range(6, 16):
        arg |= dst[b]
    if arg != 0:
        for b in range(4, 14):
            dst[b] = dst[b + 2]
        dst[14] = 0
        dst[15] = 0
        return 1, segleft
    if segleft > 0 and segleft - 1 < segments.shape[0]:
        segleft -= 1
        for b in range(16):
            dst[b] = segments[segleft, b]
        return 2, segleft
    return 3, segleft


def usid_step(dst, block: int, usid: int, segments: Sequence = (), segleft: int = 0):
    """Python face of `usid_process`: returns ``(UsidAction, new destination, new segleft)``."""
    a = np.frombuffer(_packed(dst), dtype=np.uint8).copy()
    segs = np.zeros((len(segments), 16), dtype=np.uint8)
    for k, s in enumerate(segments):
        segs[k] = np.frombuffer(_packed(s), dtype=np.uint8)
    action, left = usid_process(a, segs, int(segleft), (int(block) << 16) | int(usid))
    return UsidAction(int(action)), ipaddress.IPv6Address(a.tobytes()), int(left)
