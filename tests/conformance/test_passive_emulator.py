"""Captures the emulator writes pass the passive check clean, from every MRC transport.

The default run: a small 2-plane leaf-spine with a permutation, an incast (trims, CE marks, NACKs), a gray link
and a link that goes down (losses, retransmissions, EVs retired, probes), captured on every port, under each
transport of the MRC family. The slow run: the scenario library's scenarios under each MRC transport, cut to their
first 150 us, captured on every port.
"""
from __future__ import annotations

import pytest

from mrc.cli import main
from mrc.conformance.passive import check_capture

TRANSPORTS = ("mrc", "mrc-1ev", "spray", "reps", "ar")

BUSY = """
name = "passive-busy"
seed = 5
duration_us = 120
[topology]
kind = "leaf-spine"
hosts_per_leaf = 4
leaves = 4
spines = 4
planes = 2
link_gbps = 100
[transport]
name = "mrc"
[[workload]]
kind = "permutation"
size_bytes = 2000000
hosts = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
[[workload]]
kind = "incast"
receiver = 0
senders = 5
size_bytes = 500000
hosts = [10, 11, 12, 13, 14, 15]
[[failures]]
kind = "gray-loss"
at_us = 20
link = ["p0.t0.0", "p0.t1.1"]
probability = 0.02
[[failures]]
kind = "link-down"
at_us = 50
link = ["p1.t0.1", "p1.t1.2"]
"""


def _run(tmp_path, scenario: str, transport: str, *sets: str):
    out = tmp_path / "run"
    argv = ["emu", "run", scenario, "--transport", transport, "--out", str(out), "--capture", "*", "--no-plots",
            "--set", "capture.max_packets=2000000", *[x for s in sets for x in ("--set", s)]]
    assert main(argv) == 0
    return check_capture(out / "capture.pcapng")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_emulator_capture_of_every_mrc_transport_passes_clean(tmp_path, transport):
    path = tmp_path / "busy.toml"
    path.write_text(BUSY)
    res = _run(tmp_path, str(path), transport)
    assert [v.line() for v in res.violations] == []
    # the capture is what it should be: every port, both directions, the packets of all 15 flows, folded
    assert res.counts["mrc"] > 10_000 and res.counts["transmissions"] < res.counts["mrc"] / 2
    assert res.counts["malformed"] == res.counts["trimmed_into_headers"]
    data = [fr for fr in res.flows if (fr.flow.kind == 0).any()]
    assert len(data) == 15 and all(fr.flow.view.complete and not fr.not_judged for fr in data)
    assert sum(fr.retransmissions for fr in res.flows) > 50  # the losses were there to judge


LIBRARY = ("incast", "link-failure", "allreduce-ring", "alltoall-16")


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("name", LIBRARY)
def test_the_scenario_library_captured_under_every_mrc_transport_passes_clean(tmp_path, name, transport):
    res = _run(tmp_path, name, transport, "duration_us=150")
    assert res.counts["mrc"] > 1000
    assert [v.line() for v in res.violations] == []
