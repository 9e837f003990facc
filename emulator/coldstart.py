"""Say so when a run starts by compiling (minutes), instead of minutes of silence.

The compiled code lives in numba's cache directory, one per version of the
sources (`mrc._jit`). After the first simulation of a version completes,
`Compiling.done` leaves a marker there, and the compile time in the parent
directory (the estimate the next cold start prints). `Compiling` prints a
line to stderr when the marker is missing, on a terminal or not.
"""
from __future__ import annotations

import json
import os
import pathlib
import sys
import time

MARK = "mrc-emulator-compiled.json"
LAST = "mrc-emulator-last-compile.json"
DEFAULT_ESTIMATE = "about 3-4 minutes on a 2-core machine"
MIN_ESTIMATE_S = 30.0


def cache_dir() -> pathlib.Path | None:
    import mrc._jit  # noqa: F401  (sets NUMBA_CACHE_DIR to this version's directory)

    d = os.environ.get("NUMBA_CACHE_DIR")
    return pathlib.Path(d) if d and os.environ.get("NUMBA_DISABLE_JIT") != "1" else None


def is_cold() -> bool:
    d = cache_dir()
    return d is not None and not (d / MARK).exists()


def estimate() -> str:
    d = cache_dir()
    try:
        s = json.loads((d.parent / LAST).read_text())["compile_s"]
        return f"the last compile on this machine took {s / 60:.1f} minutes"
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return DEFAULT_ESTIMATE


def _echo(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Compiling:
    """Announce a cold start now; `done(loop_s)` after the first run records the compile time."""

    def __init__(self, echo=_echo, what: str = "the emulator"):
        self.cold = is_cold()
        self.t0 = time.perf_counter()
        if self.cold:
            echo(f"compiling {what} (numba; first run of this code version): {estimate()}; cached afterwards")

    def done(self, loop_s: float = 0.0) -> None:
        if not self.cold:
            return
        self.cold = False
        record(time.perf_counter() - self.t0 - loop_s)


def record(compile_s: float) -> None:
    """Mark this version's cache warm and keep `compile_s` as the next estimate."""
    d = cache_dir()
    if d is None:
        return
    text = json.dumps({"compile_s": round(max(compile_s, 0.0), 1)}) + "\n"
    try:
        d.mkdir(parents=True, exist_ok=True)
        (d / MARK).write_text(text)
        if compile_s >= MIN_ESTIMATE_S:  # a whole compile, not a run that found most of it cached
            (d.parent / LAST).write_text(text)
    except OSError:
        pass  # a read-only cache directory: nothing to remember, the run itself is fine
