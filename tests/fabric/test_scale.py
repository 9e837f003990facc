"""The 131,072-host preset builds within the issue's limits (30 s, 2 GB), in a fresh process."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_131k_build_time_and_peak_memory():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fabric_build.py"), "--check"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    seconds = float(re.search(r"build time\s+([\d.]+) s", out.stdout).group(1))
    mb = float(re.search(r"peak RSS\s+([\d.]+) MB", out.stdout).group(1))
    assert seconds <= 30 and mb <= 2048
