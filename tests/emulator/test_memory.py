"""The run's memory estimate: counted without allocating, checked before the tables exist, close to the real peak."""
from __future__ import annotations

import time

import pytest

from mrc.cli import main
from mrc.emulator import memory, scenario
from mrc.errors import ConfigError
from mrc.fabric import Topology, resolve
from mrc.fabric.tables import table_sizes

SMALL_MACHINE = 6 << 30  # MemAvailable of a smaller machine (the k = 128 run died at 7.9 GB of RSS)


@pytest.mark.parametrize("topo", [
    {"kind": "leaf-spine", "hosts_per_leaf": 4, "leaves": 4, "spines": 4, "link_gbps": 100},
    {"kind": "leaf-spine", "hosts_per_leaf": 3, "leaves": 5, "spines": 2, "planes": 4, "link_gbps": 100},
    {"kind": "fat-tree", "k": 4, "link_gbps": 100},
    {"kind": "fat-tree", "k": 8, "planes": 2, "link_gbps": 100},
    {"preset": "fattree-k16"},
])
def test_table_sizes_are_those_of_the_built_fabric(topo):
    spec = resolve(topo)
    t = Topology(spec)
    assert table_sizes(spec) == (len(t.tbl), len(t.htbl), t.n_nodes)
    est = memory.fabric_parts(spec)
    ports = [p for p in est.parts if p.name == "ports"][0]
    assert ports.nbytes >= t.n_ports * 216  # every engine port row counted


def test_sizes_parse_and_bad_sizes_name_the_key():
    assert memory.parse_size("8G") == 8 << 30 and memory.parse_size("512 MiB") == 512 << 20
    assert memory.parse_size(4096) == 4096 and memory.parse_size("1.5gb") == 3 << 29
    for bad in ("8X", "-1G", 0, True, "", [1]):
        with pytest.raises(ConfigError) as e:
            memory.parse_size(bad, "--max-memory")
        assert e.value.key == "--max-memory"


def _fails_fast(name, sets, key):
    scenario.load("incast")  # the fabric's compiled code loaded (the first parse after a change compiles it)
    t = time.perf_counter()
    with pytest.raises(ConfigError) as e:
        scenario.load(name, sets=sets)
    assert time.perf_counter() - t < 1.0
    assert e.value.key == key, str(e.value)
    return str(e.value)


def test_a_fat_tree_k128_fails_fast_where_it_cannot_fit(monkeypatch):
    est = memory.fabric_parts(resolve({"preset": "fattree-k16", "k": 128}))
    assert 7 << 30 < est.total < 9 << 30  # the run reached 7.9 GB before numpy gave up
    monkeypatch.setattr(memory, "available_memory", lambda: SMALL_MACHINE)
    msg = _fails_fast("fattree-k16-permutation", ["topology.k=128"], "topology.k")
    assert "topology.k = 128" in msg and "GiB" in msg and "6.00 GiB of memory available (MemAvailable)" in msg
    assert "fabric tables" in msg and "the largest part is the fabric tables, driven by topology.k" in msg


def test_max_memory_below_the_fabric_refuses_with_the_key():
    msg = _fails_fast("fattree-k16-permutation", ["topology.k=128", "engine.max_memory='4G'"], "topology.k")
    assert "the limit engine.max_memory (--max-memory) of 4.00 GiB" in msg


def test_a_huge_leaf_spine_fails_fast_on_any_machine():
    from tests.emulator.helpers import make

    # the largest the uSID plan allows: 4,096 hosts per leaf, 12,288 leaves, 8 planes (50 M hosts)
    huge = make(topology={"kind": "leaf-spine", "hosts_per_leaf": 4096, "leaves": 12288, "spines": 4096,
                          "planes": 8, "link_gbps": 400})
    assert memory.fabric_parts(resolve(huge["topology"])).total > 256 << 30
    msg = _fails_fast(huge, [], "topology.leaves")
    assert msg.startswith("topology.leaves = 12288: the run needs about")
    assert "of memory available (MemAvailable)" in msg


def test_max_memory_below_the_whole_run_refuses_before_the_tables(capsys):
    """The fabric fits; flows, pool and transport do not. Refused before the transport or engine allocate."""
    from mrc.emulator import sim

    sc = scenario.load("fattree-k16-permutation", sets=["engine.max_memory='350M'"])
    t = time.perf_counter()
    with pytest.raises(ConfigError) as e:
        sim.Simulation(sc)
    assert time.perf_counter() - t < 1.0
    assert e.value.key == "workload" and "packet pool" in str(e.value) and "350 MiB" in str(e.value)
    # the same from the command line, and --dry-run shows the parts
    assert main(["emu", "run", "fattree-k16-permutation", "--max-memory", "350M", "--no-progress", "--no-plots",
                 "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert "packet pool" in out and "workload" in err and "--max-memory" in err
    assert main(["emu", "run", "fattree-k16-permutation", "--dry-run"]) == 0
    out, _ = capsys.readouterr()
    assert "fits: the run would start" in out and "total (peak)" in out


def test_max_memory_below_the_process_names_the_option(capsys):
    assert main(["emu", "run", "incast", "--max-memory", "100M", "--no-progress", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "engine.max_memory" in err and "the process needs" in err
    assert main(["emu", "run", "incast", "--max-memory", "lots", "--no-progress"]) == 2
    assert "--max-memory" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("setup", ["incast", "fattree-k8-permutation", "fattree-k8-permutation:mrc"])
def test_the_estimate_is_close_to_the_measured_peak(setup):
    """Real runs in a child process (peak RSS from wait4); docs/emulator.md ("Memory") has the figures."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "memory_estimate.py"
    spec = importlib.util.spec_from_file_location("memory_estimate", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.measure("incast", None)  # the compiled code in the cache (compiling takes more memory than running)
    r = bench.one(setup)
    assert 0.6 <= r["ratio"] <= 1.15, r
