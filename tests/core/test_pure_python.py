"""The core runs as plain Python too (``NUMBA_DISABLE_JIT=1``), and gives the same numbers.

CI runs only ``python -m pytest``, so the pure-Python run of the core tests happens here, in a
subprocess with ``NUMBA_DISABLE_JIT=1``:

- by default, every core test module with the hypothesis state machine cut to
  ``FAST_EXAMPLES`` examples (a full pure-Python run of its 300 examples takes minutes);
- under ``-m slow``, the same with the full 300 examples;
- and a lossy two-QP run must produce the same packets, bit for bit, compiled and not.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
FAST_EXAMPLES = 40


def _pure_env(**extra) -> dict:
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", **extra)
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _run_core_tests_without_jit(examples: int) -> None:
    cmd = [sys.executable, "-m", "pytest", "tests/core", "tests/api", "-q", "-x", "-p", "no:cacheprovider",
           "-m", "not slow", "--ignore", str(Path("tests/core") / Path(__file__).name)]
    proc = subprocess.run(cmd, cwd=ROOT, env=_pure_env(MRC_STATEFUL_EXAMPLES=str(examples)),
                          capture_output=True, text=True, timeout=1800)
    tail = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, f"core tests failed with NUMBA_DISABLE_JIT=1:\n{tail}"
    assert "[100%]" in proc.stdout, tail  # every collected test ran


def test_core_tests_pass_without_jit():
    _run_core_tests_without_jit(FAST_EXAMPLES)


@pytest.mark.slow
def test_core_tests_pass_without_jit_with_every_stateful_example():
    _run_core_tests_without_jit(300)


def digest() -> str:
    """SHA-256 of every packet of a lossy, reordering, trimming, marking, duplicating run, and the end state."""
    from mrc.core import dtypes as D
    from mrc.testing.harness import Network, Pair, PathFault
    from mrc.units import NS

    net = Network(jitter_ps=900 * NS, default=PathFault(loss=0.03, trim=0.05, ecn=0.1, dup=0.03))
    pair = Pair(seed=9, n_planes=2, evs_per_plane=8, start_psn=(1 << 24) - 40, network=net)
    net.faults[int(pair.T.ev[0, 3]["ev"])] = PathFault(blackhole=True)
    pair.record = True
    for n in range(6):
        if n % 2:
            pair.post_recv(1, 100 + n)
        pair.post_write(0, 9_000 * (n + 1), wr_id=n + 1, imm=n if n % 2 else None)
    assert pair.run_until(lambda s: len(s.completions()) == 6)
    assert all(int(e["status"]) == D.WC_SUCCESS for e in pair.completions())
    h = hashlib.sha256()

    def put(rows):  # field by field: the padding bytes of aligned records are not part of the state
        for name in rows.dtype.names:
            h.update(np.ascontiguousarray(rows[name]).tobytes())

    for i in (0, 1):
        h.update(np.array([(t, k) for t, k, _ in pair.sent[i]], dtype=np.int64).tobytes())
        put(np.array([p for _, _, p in pair.sent[i]]))
    for table in (pair.T.qp, pair.T.ev, pair.T.tx, pair.T.rx):
        put(table)
    return h.hexdigest()


def test_compiled_and_pure_python_runs_agree_bit_for_bit():
    code = "from tests.core.test_pure_python import digest; print(digest())"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_pure_env(), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip() == digest()
