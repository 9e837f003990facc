"""Fault localisation on the namespace fabric: three native transfers at once, one link taken down, one
with tc netem loss; the localiser names both links from the endpoints' EV events (`mrc io transfer --pairs`).

Needs root and network namespaces (marked ``netns``); the fabric (3 leaves x 2 spines x 2 hosts, 2
planes: 16 namespaces) has a prefix unique to this process and is removed even when a test fails."""
from __future__ import annotations

import os
import shutil

import pytest
import trio

from mrc.cli import build_parser
from mrc.errors import UsageError
from mrc.fabric import netns
from mrc.io.localize import parse_pairs, run_several
from tests.netns_fabric import can_netns

pytestmark = pytest.mark.netns
PREFIX = f"mrcloc{os.getpid() % 100000}-"
FABRIC = """kind = "leaf-spine"
planes = 2
hosts_per_leaf = 2
leaves = 3
spines = 2
link_gbps = 100
fabric_gbps = 100
"""


@pytest.fixture(scope="module")
def fab(tmp_path_factory):
    reason = can_netns() or (None if shutil.which("tc") else "needs iproute2's `tc`")
    if reason:
        pytest.skip(reason)
    src = tmp_path_factory.mktemp("fab") / "three-leaves.toml"
    src.write_text(FABRIC)
    try:
        yield netns.up(src, prefix=PREFIX)
    finally:
        netns.down(PREFIX)
        assert netns.namespaces(PREFIX) == []


def several(*argv: str) -> dict:
    args = build_parser().parse_args(["io", "transfer", "--mode", "native", "--prefix", PREFIX, "--timeout-s", "90",
                                      *argv])
    return trio.run(run_several, args)


def test_the_localiser_names_the_down_link_and_the_lossy_one(fab):
    # h0 -> h2 and h1 -> h4 leave leaf 0; h3 -> h5 goes from leaf 1 to leaf 2
    r = several("--pairs", "h0:h2,h1:h4,h3:h5", "--bytes", "24M", "--fail-link", "p0.t0.0:u1", "--fail-at", "150",
                "--netem-link", "p1.t0.2:u0", "--netem-loss", "5")
    assert r["verified"], [t.get("error") for t in r["transfers"]]
    sus = {s["element"]: s for s in r["localization"]["verdict"]["suspects"] if s["verdict"] != "congestion"}
    assert "p0.t0.0-p0.t1.1" in sus, sus
    assert sus["p0.t0.0-p0.t1.1"]["pairs"] == 2 and sus["p0.t0.0-p0.t1.1"]["verdict"] == "down"
    assert "p1.t0.2-p1.t1.0" in sus, sus
    assert set(sus) <= {"p0.t0.0-p0.t1.1", "p1.t0.2-p1.t1.0"}  # nothing healthy blamed
    # the link is up again, the netem qdisc gone
    assert netns.status(PREFIX)["links_down"] == []


def test_pairs_are_checked(fab):
    with pytest.raises(UsageError):
        parse_pairs("h0:h2,h0:h3", fab.topo)  # h0 twice
    with pytest.raises(UsageError):
        parse_pairs("h0-h2", fab.topo)
    with pytest.raises(UsageError):
        parse_pairs("h0:p0.t0.1", fab.topo)
