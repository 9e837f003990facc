"""The one numba decorator every compiled function in the project uses.

``njit`` fixes the agreed options in one place:

- ``cache=True``: compiled code is cached next to the source, so a second run
  (and the test suite) does not pay compile time again;
- ``error_model="numpy"``: no Python exception machinery in hot loops;
- no ``fastmath``: results must be bit-for-bit reproducible across machines.

``njit_core`` is the same decorator for the protocol core (`mrc/core`), plus
``_nrt=False``: no reference counting of arrays. The core only reads and
writes arrays it is given (it never allocates), and with reference counting
numba wraps every call that passes the state tables in NRT incref/decref
calls, one pair per array: that cost about ten times the core's own work per
packet (``benchmarks/core_harness.py`` has the figures). A function compiled
this way cannot allocate arrays; numba refuses to compile one that tries.
Code that does allocate (the emulator's loops, `mrc.memnet`) uses ``njit``
and calls core functions as usual.

With ``NUMBA_DISABLE_JIT=1`` numba returns the plain Python function, so the
same code runs (slowly) as ordinary Python for debugging and coverage.
`tests/test_jit_rule.py` walks the source tree and fails if a compiled
function anywhere uses another decorator.
"""
from __future__ import annotations

import numba

OPTIONS = {"cache": True, "error_model": "numpy", "nogil": True}
CORE_OPTIONS = {**OPTIONS, "_nrt": False}


def njit(fn=None, **overrides):
    """``numba.njit`` with the project's options; usable as ``@njit`` or ``@njit(inline="always")``."""
    options = {**OPTIONS, **overrides}
    if fn is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(fn)


def njit_core(fn=None, **overrides):
    """`njit` for the protocol core: no array reference counting (the core never allocates)."""
    options = {**CORE_OPTIONS, **overrides}
    if fn is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(fn)
