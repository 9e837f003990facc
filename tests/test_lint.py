"""ruff, with the rules of pyproject.toml ([tool.ruff]), finds nothing in the repository."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    try:
        import ruff  # noqa: F401  (installed with the test extras)
    except ImportError:
        exe = shutil.which("ruff")
        if exe is None:
            pytest.fail("ruff is not installed: pip install -e '.[test]'")
        return [exe]
    return [sys.executable, "-m", "ruff"]


def test_ruff_finds_nothing():
    proc = subprocess.run(_ruff() + ["check", "--no-cache", "--output-format", "concise", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
