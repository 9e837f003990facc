"""The digits a number in a CSV file keeps: the precision of its quantity, no float noise.

The engine's clock counts integer picoseconds; what it derives (a percentile interpolated between
two flows, a mean, a rate over a sample window) is computed in binary floating point, whose last
digits are noise (``114.32061120000003`` us). A CSV cell keeps the digits the quantity has:

- a time in microseconds (a column whose name has the unit ``us`` as a word: ``fct_us``, ``t_us``,
  ``fct_us_p99``, ``failure0_off_99_us``): 6 decimals, the clock's tick (1 ps);
- a time in nanoseconds (``ns``): 3 decimals (1 ps); in milliseconds (``ms``): 9 decimals (1 ps);
- a wall-clock time in seconds (``s``: ``cell_s``, ``wall_s``): 6 decimals (1 us);
- any other real number (rates, ratios, shares, slowdowns, probabilities, GPU-seconds): 6
  significant digits;
- integers, booleans and text as they are; NaN and None an empty cell; infinity ``inf``.

The value written is the quantity rounded to that precision: it reads back as the same number up to
the last kept digit (``tests/emulator/test_precision.py``). docs/emulator.md ("Numbers in the CSV
files") states the rule.
"""
from __future__ import annotations

import math
import re

import numpy as np

SIGNIFICANT = 6  # digits of a quantity without a time unit
DECIMALS = {"us": 6, "ns": 3, "ms": 9, "s": 6}  # a time's unit -> decimals kept
_WORDS = re.compile(r"[A-Za-z]+")


def _words(name: str) -> list[str]:
    return _WORDS.findall(str(name).replace("_", " "))


def decimals(name: str) -> int | None:
    """Decimals kept for column `name`: a time's (its unit is one of the name's words), None for `SIGNIFICANT`
    digits (GPU-seconds are a quantity, not a clock reading: significant digits)."""
    words = _words(name)
    if "gpu" in words:
        return None
    for w in words:
        if w in DECIMALS:
            return DECIMALS[w]
    return None


def _round_sig(v: np.ndarray) -> np.ndarray:
    out = v.copy()
    ok = np.isfinite(v) & (v != 0)
    if not ok.any():
        return out
    x = v[ok]
    k = SIGNIFICANT - 1 - np.floor(np.log10(np.abs(x))).astype(np.int64)
    r = np.empty_like(x)
    up = k >= 0
    # rint(x * 10^k) / 10^k: one correctly rounded division of two exact numbers (10^k is exact up to 10^22), so
    # the result is the double nearest to the decimal, which prints with at most SIGNIFICANT digits
    ku = np.minimum(k[up], 22)
    r[up] = np.rint(x[up] * 10.0 ** ku) / 10.0 ** ku
    kd = np.minimum(-k[~up], 22)
    r[~up] = np.rint(x[~up] / 10.0 ** kd) * 10.0 ** kd
    for j in np.flatnonzero((k > 22) | (k < -22)):  # powers of ten beyond the exact ones: formatted one by one
        r[j] = float(f"{x[j]:.{SIGNIFICANT}g}")
    out[ok] = r
    return out


def rounded(name: str, values: np.ndarray) -> np.ndarray:
    """A float column rounded to its quantity's precision (NaN and infinities kept)."""
    v = np.asarray(values, float)
    d = decimals(name)
    if d is None:
        return _round_sig(v)
    # a value past 2^53 / 10^d has no digit below the unit's to round away (and v * 10^d would lose some)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(v) & (np.abs(v) < 2.0 ** 53 / 10.0 ** d), np.round(v, d), v)


def value(name: str, v):
    """One cell's value rounded to its quantity's precision (ints, bools, text and None unchanged)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (float, np.floating)):
        return v
    if not math.isfinite(v):
        return float(v)
    return float(rounded(name, np.array([v]))[0])
