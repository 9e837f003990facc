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
Code that does allocate (the emulator's loops, `mrc.testing.memnet`) uses ``njit``
and calls core functions as usual.

Cache keyed by the sources. numba checks a cached function against its own
file only: after an edit to a function it calls or inlines from another module
(the engine loop inlines the transports and the core) it would silently run the
old machine code. So the cache lives in a directory named after a hash of every
source file of the packages holding compiled code (``mrc``, ``mrc.fabric``,
``mrc.emulator``):
any edit gives a fresh directory. The base directory is ``NUMBA_CACHE_DIR`` if
the user set one, else ``$XDG_CACHE_HOME/mrc-transport/numba`` (``~/.cache``);
only the `KEEP_CACHES` most recently used directories are kept.

With ``NUMBA_DISABLE_JIT=1`` numba returns the plain Python function, so the
same code runs (slowly) as ordinary Python for debugging and coverage.
`tests/test_jit_rule.py` walks the source tree and fails if a compiled
function anywhere uses another decorator.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import shutil
import sys

KEEP_CACHES = 4
_KEYED = "MRC_NUMBA_CACHE_KEY"  # set for child processes: the key their parent used


def _source_dirs() -> list[pathlib.Path]:
    dirs = [pathlib.Path(__file__).resolve().parent]
    if "mrc" in sys.modules:  # the subpackages may live elsewhere (package-dir): ask the import system
        for name in ("mrc.fabric", "mrc.emulator"):
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.submodule_search_locations:
                dirs += [pathlib.Path(d).resolve() for d in spec.submodule_search_locations]
    return sorted(set(dirs))


def source_key() -> str:
    """Hash of the path and content of every ``.py`` file of the compiled packages."""
    h = hashlib.sha256()
    for d in _source_dirs():
        for f in sorted(d.rglob("*.py")):
            h.update(f.relative_to(d).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _use_keyed_cache() -> None:
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return
    user = os.environ.get("NUMBA_CACHE_DIR")
    key = source_key()
    if user and os.environ.get(_KEYED) == key and pathlib.Path(user).name == key:
        return  # a child process of ours: the directory is already keyed
    base = pathlib.Path(user) if user else pathlib.Path(
        os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "mrc-transport" / "numba"
    target = base / key
    target.mkdir(parents=True, exist_ok=True)
    os.utime(target)
    os.environ["NUMBA_CACHE_DIR"] = str(target)
    os.environ[_KEYED] = key
    others = sorted((d for d in base.iterdir() if d.is_dir() and d != target and len(d.name) == 16),
                    key=lambda d: d.stat().st_mtime, reverse=True)
    for old in others[KEEP_CACHES - 1:]:
        shutil.rmtree(old, ignore_errors=True)


_use_keyed_cache()

import numba  # noqa: E402  (after NUMBA_CACHE_DIR is set)
from numba.core import config as _numba_config  # noqa: E402

_numba_config.reload_config()


def _load_cached_code_without_registries() -> None:
    """Load a cached compiled function without first installing numba's compiler registries.

    numba's cache refreshes the target context before every load (``Cache.load_overload``): the first
    refresh of a process imports and installs every lowering and typing registry numba has (its
    ``cpython``, ``np``, ``typed``, ``random`` implementations, third-party entry points), which machine
    code read from the cache never uses: about 0.3 s of a warm start-up (docs/emulator.md, "Start-up").
    Loaded code needs only the runtime (NRT) symbols, so the load initialises the runtime and nothing
    else; a cache miss compiles as before (`numba.core.compiler.compile_extra` refreshes the context
    itself). With another numba whose cache lacks these methods, its own load stays."""
    from numba.core import caching
    from numba.core.runtime import nrt

    cache = caching.Cache
    if not all(hasattr(cache, a) for a in ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")):
        return

    def load_overload(self, sig, target_context):
        nrt.rtsys.initialize(target_context)  # idempotent: the runtime's symbols and functions, once
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    load_overload.__doc__ = cache.load_overload.__doc__
    cache.load_overload = load_overload


if os.environ.get("NUMBA_DISABLE_JIT") != "1":
    _load_cached_code_without_registries()

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
