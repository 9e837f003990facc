"""`mrc fabric netns`: the namespace fabric holds exactly the computed tables; up is idempotent; down cleans up.

Needs root and network namespaces (marked ``netns``; skipped with the reason
otherwise). Every fabric here has a prefix unique to this process, and is
removed even when a test fails.
"""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from mrc.cli import main
from mrc.errors import MRCError
from mrc.fabric import netns
from mrc.fabric.tables import ifname
from tests.netns_fabric import tiny_fabric

PREFIX = f"mrcft{os.getpid() % 100000}-"


@pytest.fixture(scope="module")
def fab():
    yield from tiny_fabric(PREFIX)


def _routes(ns: str) -> list[str]:
    out = subprocess.run(["ip", "-n", ns, "-6", "route", "show"], capture_output=True, text=True, check=True).stdout
    return [" ".join(line.split()) for line in out.splitlines() if line.startswith("5f00:")]


def _expected(fab, node: int) -> list[str]:
    return [line.removeprefix("ip -6 route add ") for line in fab.topo.iproute2(node)]


def _installed_exactly(fab, node: int) -> bool:
    have = _routes(fab.ns(node))
    extra = 0 if node >= fab.topo.n_hosts else fab.topo.n_planes  # hosts: + one /32 per plane towards their T0
    return len(have) == len(_expected(fab, node)) + extra and all(
        any(h.startswith(e + " ") or h == e for h in have) for e in _expected(fab, node))


pytestmark = pytest.mark.netns


def test_every_node_holds_exactly_the_tables_mrc_fabric_computes(fab):
    t = fab.topo
    assert netns.namespaces(PREFIX) == sorted(fab.all_ns)
    for node in range(t.n_nodes):
        assert _installed_exactly(fab, node), (t.node_name(node), _routes(fab.ns(node)), _expected(fab, node))
    # switches run End with NEXT-C-SID on their own uSID; hosts End.DT6 into the local table (255)
    assert any("action End flavors next-csid lblen 32 nflen 16" in r for r in _routes(fab.ns(t.switch(0, 1, 1))))
    assert sum("action End.DT6 table local" in r for r in _routes(fab.ns(0))) == t.n_planes
    for q, peer in fab.links():  # every link a veth pair with the jumbo MTU, both ends up
        for end in (q, peer):
            ns, dev = fab.ns(int(t.port[end]["node"])), ifname(t, end)
            link = subprocess.run(["ip", "-n", ns, "-o", "link", "show", "dev", dev], capture_output=True,
                                  text=True, check=True).stdout
            assert "mtu 9000" in link and ",UP" in link


def test_up_again_changes_nothing_and_repairs_what_was_broken(fab):
    t0 = fab.ns(fab.topo.switch(1, 0, 0))
    subprocess.run(["ip", "-n", t0, "-6", "route", "del", "5f00:1:8001::/48"], check=True)
    netns.link_down(fab, fab.parse_port("p1.t0.0:u0"))
    assert netns.status(PREFIX)["links_down"] == ["p1.t0.0:u0"]
    start = time.monotonic()
    again = netns.up("mrc-2plane-tiny", prefix=PREFIX)
    assert time.monotonic() - start < 5
    assert again.all_ns == fab.all_ns and netns.status(PREFIX)["links_down"] == []
    for node in range(fab.topo.n_nodes):
        assert _installed_exactly(fab, node), fab.topo.node_name(node)


def test_a_link_goes_down_and_comes_back_with_its_routes(fab):
    port = fab.parse_port("p0.t0.1:u1")
    ns = fab.ns(fab.topo.switch(0, 0, 1))
    assert netns.link_down(fab, port) == f"{ns}:u1"
    assert not any(r.startswith("5f00:0:8001::/48") for r in _routes(ns))  # the kernel dropped the route
    netns.link_up(fab, port)
    assert _installed_exactly(fab, fab.topo.switch(0, 0, 1))


def test_the_commands(fab, capsys):
    assert main(["fabric", "netns", "status", "--prefix", PREFIX]) == 0
    assert "12 of 12 namespaces" in capsys.readouterr().out
    assert main(["fabric", "netns", "link", "down", "p0.t0.0:u0", "--prefix", PREFIX]) == 0
    assert main(["fabric", "netns", "status", "--prefix", PREFIX]) == 0
    assert "links down: p0.t0.0:u0" in capsys.readouterr().out
    assert main(["fabric", "netns", "link", "up", "p0.t0.0:u0", "--prefix", PREFIX]) == 0
    assert main(["fabric", "netns", "link", "up", "p9.t0.0:u0", "--prefix", PREFIX]) == 2
    assert "give NODE:IFNAME" in capsys.readouterr().err


def test_down_removes_every_namespace_and_the_state(fab):
    other = PREFIX + "x-"
    assert main(["fabric", "netns", "up", "mrc-2plane-tiny", "--prefix", other]) == 0
    assert len(netns.namespaces(other)) == 12
    assert main(["fabric", "netns", "down", "--prefix", other]) == 0
    assert netns.namespaces(other) == [] and not (netns.STATE_DIR / f"{other}json").exists()
    assert main(["fabric", "netns", "down", "--prefix", other]) == 0  # nothing left: still fine
    with pytest.raises(MRCError, match="no namespace fabric is up"):
        netns.load(other)
