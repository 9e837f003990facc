"""The one numba decorator every compiled function in the project uses.

``njit`` fixes the agreed options in one place:

- ``cache=True``: compiled code is cached next to the source, so a second run
  (and the test suite) does not pay compile time again;
- ``error_model="numpy"``: no Python exception machinery in hot loops;
- no ``fastmath``: results must be bit-for-bit reproducible across machines.

With ``NUMBA_DISABLE_JIT=1`` numba returns the plain Python function, so the
same code runs (slowly) as ordinary Python for debugging and coverage.
`tests/test_jit_rule.py` walks the source tree and fails if a compiled
function anywhere uses another decorator.
"""
from __future__ import annotations

import numba

OPTIONS = {"cache": True, "error_model": "numpy", "nogil": True}


def njit(fn=None, **overrides):
    """``numba.njit`` with the project's options; usable as ``@njit`` or ``@njit(inline="always")``."""
    options = {**OPTIONS, **overrides}
    if fn is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(fn)
