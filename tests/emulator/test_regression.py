"""Slow runs: the regression table (`validate.txt`) and the 131,072-host scale run.

    python -m pytest -m slow tests/emulator
    python tests/emulator/test_regression.py      # print the table's rows from fresh runs
"""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

TABLE = pathlib.Path(__file__).with_name("validate.txt")


def rows():
    for line in TABLE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sets, p99, mx, done, cct = line.split()
            yield name, [] if sets == "-" else sets.split(","), float(p99), float(mx), int(done), cct


def measure(name, sets):
    from mrc.emulator import run

    s = run(name, sets=sets).summary
    cct = max(s["cct_us"]) if s["cct_us"] else None
    return s["fct_us"]["p99"], s["fct_us"]["max"], s["flows"]["completed"], cct


@pytest.mark.slow
@pytest.mark.parametrize("name,sets,p99,mx,done,cct", list(rows()))
def test_regression_table(name, sets, p99, mx, done, cct):
    got = measure(name, sets)
    assert got[0] == pytest.approx(p99, rel=0.01)
    assert got[1] == pytest.approx(mx, rel=0.01)
    assert got[2] == done
    if cct == "-":
        assert got[3] is None
    else:
        assert got[3] == pytest.approx(float(cct), rel=0.01)


@pytest.mark.slow
def test_131k_hosts_permutation_fits_in_16_gb():
    code = ("from mrc.emulator import run; s = run('mrc-8plane-131k-permutation').summary; "
            "print(s['flows']['completed'], s['flows']['total'], s['sim']['peak_rss_mb'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=3600)
    assert out.returncode == 0, out.stderr[-2000:]
    done, total, rss = out.stdout.split()
    assert int(done) == int(total) == 131072
    assert float(rss) <= 16 * 1024


if __name__ == "__main__":
    for name, sets, *_ in rows():
        p99, mx, done, cct = measure(name, sets)
        print(f"{name:26} {','.join(sets) or '-':32} {p99:12.3f} {mx:12.3f} {done:6d}  "
              f"{'-' if cct is None else f'{cct:.3f}'}")
