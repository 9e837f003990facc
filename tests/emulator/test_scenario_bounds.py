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


# --- hostile scenario files: strict decoding, every number bounded, the workload estimated before it is drawn

def _scenario_file(tmp_path, text: bytes | str, name: str = "s.toml"):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


INCAST = scenario.scenarios.path("incast").read_text()


def _one_line(capsys, argv) -> str:
    """The command's error: exit status 2, one "mrc: error" line (a cold start may say it compiles first)."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    errors = [line for line in err.splitlines() if line.startswith("mrc: error")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def test_a_scenario_that_is_not_utf8_fails_in_one_line(tmp_path, capsys):
    p = _scenario_file(tmp_path, INCAST.encode() + b"\n# caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        scenario.load(str(p))
    assert "not UTF-8" in _one_line(capsys, ["emu", "run", str(p), "--no-progress", "--no-plots"])


@pytest.mark.parametrize("depth", [40, 3000])
def test_deep_nesting_fails_in_one_line(tmp_path, capsys, depth):
    p = _scenario_file(tmp_path, INCAST + "\n[extra]\nx = " + "[" * depth + "]" * depth + "\n")
    with pytest.raises(ConfigError, match="nested"):
        scenario.load(str(p))
    assert "nested" in _one_line(capsys, ["emu", "run", str(p), "--no-progress", "--no-plots"])
    with pytest.raises(ConfigError, match="nested") as e:
        scenario.load("incast", sets=["x=" + "[" * depth + "1" + "]" * depth])
    assert len(str(e.value)) < 300


@pytest.mark.parametrize("sets, key", [
    (["duration_us=1e20"], "duration_us"),
    (["workload.start_us=1e20"], "workload.start_us"),
    (["workload.size_bytes=100000000000000000000"], "workload.size_bytes"),
    (["switch.queue_bytes=4611686018427387904"], "switch.queue_bytes"),
    (["switch.latency_ns=1e300"], "switch.latency_ns"),
    (["switch.route_converge_us=1e18"], "switch.route_converge_us"),
    (["seed=99999999999999999999"], "seed"),
])
def test_every_number_is_bounded_before_compiled_code_sees_it(sets, key):
    t = time.perf_counter()
    with pytest.raises(ConfigError) as e:
        scenario.load("incast", sets=sets)
    assert e.value.key == key and time.perf_counter() - t < 5.0, str(e.value)


def test_a_poisson_workload_is_estimated_before_it_is_drawn(tmp_path, capsys, monkeypatch):
    from mrc.emulator import sim, workloads

    p = _scenario_file(tmp_path, """
name = "poisson-long"
[topology]
preset = "mrc-2plane-tiny"
[transport]
name = "mrc"
[workload]
kind = "poisson"
load = 0.5
until_us = 1e9
[engine]
max_memory = "1G"
""")
    sc = scenario.load(str(p))

    def never(*a, **k):
        raise AssertionError("the workload was drawn before its estimate was checked")

    monkeypatch.setattr(workloads, "build", never)
    t = time.perf_counter()
    with pytest.raises(ConfigError) as e:
        sim.Simulation(sc)
    assert e.value.key == "workload.until_us" and "1.00 GiB" in str(e.value) and time.perf_counter() - t < 2.0
    assert "workload.until_us" in _one_line(capsys, ["emu", "run", str(p), "--no-progress", "--no-plots"])
