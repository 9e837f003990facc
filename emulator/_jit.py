"""The emulator's compile options: the project's `mrc._jit.njit` without the NRT.

The engine never allocates inside compiled code: every table comes from
Python. Without numba's reference-counting runtime (NRT) the compiled loop
does no reference counting on the dozens of arrays every element function
touches (measured: reference counting otherwise took most of the loop's
time), and arrays passed in from Python carry no NRT handle. Functions that
allocate (setup helpers) use `mrc._jit.njit` itself.
"""
from __future__ import annotations

from mrc._jit import njit as _njit


def njit(fn=None, **overrides):
    """`mrc._jit.njit` with ``_nrt=False``; usable as ``@njit`` or ``@njit(inline="always")``."""
    return _njit(fn, **{"_nrt": False, **overrides})
