"""The scenarios of docs/results.md: listed in the library, parse with every transport, run at a tiny size."""
from __future__ import annotations

import pathlib

import pytest

from mrc.emulator import metrics, scenario, scenarios, sim
from mrc.emulator.transports import REGISTRY

RESULTS = sorted(n for n in scenarios.names() if n.startswith("results/"))

# --set overrides that shrink a scenario to a fraction of a second (the .cm permutations of 1024 and
# 8192 hosts cannot shrink: they only parse)
TINY = {
    "results/r2-k8-allreduce": ["workload.size_bytes=64000"],
    "results/r4-8plane-nic-port": ["workload.flows=[{src=0,dst=40,size_bytes=2000000},{src=41,dst=0,size_bytes=2000000}]",
                                   "failures.0.at_us=5"],
    "results/r5-incast-victim": ["workload.size_bytes=50000", "workload.victim_size_bytes=100000"],
    "results/r6-gray-loss-1pct": ["workload.size_bytes=50000"],
    "results/r7-t1-reboot": ["workload.size_bytes=640000", "failures.0.at_us=10", "failures.0.duration_us=200"],
    "results/r8-link-flap": ["workload.size_bytes=200000", "failures.0.at_us=5", "failures.0.period_us=20", "failures.0.down_us=10"],
    "results/r8-link-flap-4": ["workload.size_bytes=200000"] + [
        f"failures.{k}.{key}={v}" for k in range(4) for key, v in (("at_us", 5 + 5 * k), ("period_us", 20), ("down_us", 10))],
    "results/r10-allreduce-1x400g-loss1pct": ["workload.size_bytes=65536"],
    "results/r10-alltoall-4x100g": ["workload.size_bytes=1024"],
    "results/r10-p2p-latency": [],
}


def test_library_lists_the_results_scenarios():
    files = sorted(p.stem for p in (scenarios.DIR / "results").glob("*.toml"))
    assert len(files) >= 10
    assert RESULTS == [f"results/{f}" for f in files]
    assert (scenarios.DIR / "results" / "__init__.py").is_file()  # a package, so its TOML files ship
    for n in RESULTS:
        assert scenarios.path(n).parent.name == "results"


@pytest.mark.parametrize("name", RESULTS)
def test_parses_with_every_transport(name):
    # as `--transport` and sweeps substitute a transport (`transports.spec.apply`: the scenario's own
    # [transport] keys reach only the transport they name)
    from mrc.emulator.transports import spec as tspec

    data, stem, base = scenario.read(name)
    for t in REGISTRY:
        sc = scenario.parse(tspec.apply(data, t), stem, base)
        assert sc.name == pathlib.Path(name).name
        assert sc.transport_name == t


@pytest.mark.parametrize("name", sorted(TINY))
@pytest.mark.parametrize("transport", ["roce-ecmp", "mrc"])
def test_runs_tiny(name, transport):
    from mrc.emulator.transports import spec as tspec

    data, stem, base = scenario.read(name)
    data = tspec.apply(data, transport)
    scenario.apply_sets(data, ["metrics.plots=false", *TINY[name]])
    sc = scenario.parse(data, stem, base)
    run = sim.Simulation(sc).run(progress=False)
    s = metrics.summary(run)
    if transport == "mrc" or name != "results/r4-8plane-nic-port":
        # every transfer completes (roce-ecmp loses the QPs on the dead plane in r4: its point)
        assert s["flows"]["completed"] == s["flows"]["total"], s["outcome"]
    if sc.failures:
        assert len(s["reroute"]) >= 1
