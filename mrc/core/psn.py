"""24-bit PSN arithmetic (BTH PSNs wrap at 2^24)."""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core

PSN_MOD = 1 << 24
PSN_MASK = PSN_MOD - 1
HALF = 1 << 23


@njit_core(inline="always")
def psn_add(psn, n):
    return (psn + n) & PSN_MASK


@njit_core(inline="always")
def psn_diff(a, b):
    """a - b as a signed distance in [-2^23, 2^23)."""
    d = (i64(a) - i64(b)) & PSN_MASK
    if d >= HALF:
        d -= PSN_MOD
    return d
