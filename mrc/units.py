"""Units used everywhere in the project (the part htsim's `config.h` plays).

Time is an integer number of **picoseconds** (int64: about 106 days of range).
Rates are integer **bits per second**. Sizes are integer **bytes**.
Conversions below are exact for every rate that divides 8e12 (100G, 200G,
400G, 800G, 25G, ...); other rates round the serialisation time *up*, so a
link is never faster than its nominal rate.
"""
from __future__ import annotations

from mrc._jit import njit

PS = 1
NS = 1_000
US = 1_000_000
MS = 1_000_000_000
S = 1_000_000_000_000

GBPS = 1_000_000_000


def ps_from_ns(ns: float) -> int:
    return int(round(ns * NS))


def ps_from_us(us: float) -> int:
    return int(round(us * US))


def us_from_ps(ps: int) -> float:
    return ps / US


def bps_from_gbps(gbps: float) -> int:
    return int(round(gbps * GBPS))


@njit
def serialization_ps(nbytes, rate_bps):
    """Time to put `nbytes` on a wire of `rate_bps`, in ps, rounded up.

    Split into whole picoseconds per byte plus a remainder so that the product
    stays inside int64 for any size up to gigabytes.
    """
    per_byte = 8_000_000_000_000 // rate_bps
    rem = 8_000_000_000_000 % rate_bps
    return nbytes * per_byte + (nbytes * rem + rate_bps - 1) // rate_bps
