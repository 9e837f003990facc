"""Absurd resource settings and unusable --out paths fail at once, naming the key, before anything runs."""
from __future__ import annotations

import time

import pytest

from mrc.cli import main
from mrc.emulator import scenario
from mrc.errors import ConfigError


@pytest.mark.parametrize("sets, key", [
    (["metrics.sample_us=1e-6"], "metrics.sample_us"),
    (["metrics.sample_us=0.01", "duration_us=1000000"], "metrics.sample_us"),
    (["engine.pool_packets=1e12"], "engine.pool_packets"),
    (["engine.pool_packets=1000000000000"], "engine.pool_packets"),
    (["engine.pool_packets=2000000000"], "engine.pool_packets"),  # 2e9 rows x ~530 B: ~1 TB
    (["metrics.trace_capacity=1000000000000"], "metrics.trace_capacity"),
])
def test_resource_bounds_are_checked_before_anything_is_allocated(sets, key):
    scenario.load("incast")  # compiled code loaded (the first parse after a change compiles the fabric's)
    t = time.perf_counter()
    with pytest.raises(ConfigError) as e:
        scenario.load("incast", sets=sets)
    assert e.value.key == key and time.perf_counter() - t < 1.0
    assert key in str(e.value)


@pytest.mark.parametrize("make", ["file", "under_file"])
def test_out_is_checked_before_the_simulation(tmp_path, capsys, make):
    f = tmp_path / "a-file"
    f.write_text("x")
    out = f if make == "file" else f / "sub"
    t = time.perf_counter()
    assert main(["emu", "run", "incast", "--out", str(out), "--no-progress", "--no-plots"]) == 2
    assert time.perf_counter() - t < 5.0  # no simulation ran (the imports take part of this)
    err = capsys.readouterr().err
    assert "--out" in err and "cannot create or write" in err
