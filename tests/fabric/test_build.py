"""Node and port arrays: counts, links, numbering (htsim's), per-tier speeds and delays."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.fabric import DOWN, HOST, SWITCH, UP, build, from_preset
from tests.fabric.fabrics import big, small


def test_links_are_symmetric(topo):
    a = topo.arrays
    ports = np.arange(a.n_ports)
    assert np.array_equal(a.port["peer"][a.port["peer"]], ports)  # peer of peer is the port
    assert np.all(a.port["node"][a.port["peer"]] != a.port["node"])
    assert np.array_equal(a.port["peer_node"], a.port["node"][a.port["peer"]])  # the cached far end
    assert np.array_equal(a.port["plane"][a.port["peer"]], a.port["plane"])  # a link stays in its plane
    assert np.array_equal(a.port["tier"][a.port["peer"]], a.port["tier"])
    assert np.array_equal(a.port["rate"][a.port["peer"]], a.port["rate"])
    assert np.array_equal(a.port["delay"][a.port["peer"]], a.port["delay"])
    assert np.all(a.port["dir"][a.port["peer"]] != a.port["dir"])
    # an UP port's node is one tier below its peer's node (hosts are tier -1)
    up = a.port["dir"] == UP
    assert np.array_equal(a.node["tier"][a.port["node"][up]] + 1, a.node["tier"][a.port["node"][a.port["peer"][up]]])


def test_planes_share_no_switch(topo):
    a = topo.arrays
    sw = a.node["kind"][a.port["node"]] == SWITCH
    assert np.array_equal(a.node["plane"][a.port["node"][sw]], a.port["plane"][sw])
    # each host has one NIC port per plane, to a T0 of that plane
    for h in (0, a.n_hosts - 1):
        nics = [topo.nic_port(h, p) for p in range(a.n_planes)]
        assert [int(a.port["plane"][q]) for q in nics] == list(range(a.n_planes))
        assert len({int(a.port["node"][a.port["peer"][q]]) for q in nics}) == a.n_planes


def test_node_port_ranges_cover_every_port_once(topo):
    a = topo.arrays
    width = a.node["n_down"] + a.node["n_up"]
    owner = np.repeat(np.arange(a.n_nodes), width)
    starts = np.repeat(a.node["port_start"], width)
    offs = np.arange(a.n_ports) - np.repeat(np.cumsum(width) - width, width)
    assert np.array_equal(a.port["node"][starts + offs], owner)
    # downlinks first, then uplinks
    k = np.arange(a.n_ports) - a.node["port_start"][a.port["node"]]
    assert np.array_equal(a.port["dir"] == DOWN, k < a.node["n_down"][a.port["node"]])


def test_counts_of_the_131k_design():
    t = big()
    assert (t.n_hosts, t.n_planes, t.n_t0, t.n_t1, t.n_t2) == (131072, 8, 512, 256, 0)
    t0 = t.switch(3, 0, 17)
    t1 = t.switch(3, 1, 200)
    assert (t.node["n_down"][t0], t.node["n_up"][t0]) == (256, 256)  # 512 x 100G
    assert (t.node["n_down"][t1], t.node["n_up"][t1]) == (512, 0)
    assert t.n_ports == 131072 * 8 + 8 * (512 * 512 + 256 * 512)
    assert set(t.port["rate"].tolist()) == {100_000_000_000}


@pytest.mark.parametrize("name,hosts,t0,t1,t2", [("fattree-k8", 128, 32, 32, 16), ("fattree-k16", 1024, 128, 128, 64),
                                                  ("leafspine-8192-400g", 8192, 128, 64, 0)])
def test_counts_of_standard_setups(name, hosts, t0, t1, t2):
    t = from_preset(name)
    assert (t.n_hosts, t.n_t0, t.n_t1, t.n_t2) == (hosts, t0, t1, t2)
    assert t.n_ports == 2 * (hosts + t0 * (t.node["n_up"][hosts]) + t1 * t.node["n_up"][hosts + t0])


def test_htsim_numbering_fat_tree():
    """Host i under edge i // hosts_per_edge; edge e in pod e // (k/2); agg podpos connects to core podpos + k/2*l."""
    t = from_preset("fattree-k8")
    A, hpl = 4, 4
    for h in range(t.n_hosts):
        edge = int(t.port["node"][t.port["peer"][t.nic_port(h, 0)]])
        assert t.node["index"][edge] == h // hpl and t.node["pod"][edge] == h // (hpl * A) == t.node["pod"][h]
    for g in range(t.n_t1):
        agg = t.switch(0, 1, g)
        assert t.node["pod"][agg] == g // A
        ups = [int(t.node["index"][t.peer_node(t.node["port_start"][agg] + A + j)]) for j in range(A)]
        assert ups == [g % A + A * j for j in range(A)]
        downs = [int(t.node["index"][t.port["node"][t.port["peer"][t.node["port_start"][agg] + m]]]) for m in range(A)]
        assert downs == [(g // A) * A + m for m in range(A)]
    for c in range(t.n_t2):  # core c reaches every pod, at aggregation position c % (k/2)
        core = t.switch(0, 2, c)
        aggs = [int(t.node["index"][t.port["node"][t.port["peer"][t.node["port_start"][core] + q]]]) for q in range(8)]
        assert aggs == [q * A + c % A for q in range(8)]


def test_leaf_spine_numbering():
    t = small("odd-leaf-spine")
    for h in range(t.n_hosts):
        for p in range(t.n_planes):
            t0 = int(t.port["node"][t.port["peer"][t.nic_port(h, p)]])
            assert (t.node["plane"][t0], t.node["tier"][t0], t.node["index"][t0]) == (p, 0, h // 3)
    leaf = t.switch(2, 0, 4)
    spines = [int(t.node["index"][t.peer_node(t.node["port_start"][leaf] + 3 + j)]) for j in range(3)]
    assert spines == [0, 1, 2]


def test_per_tier_speeds_and_delays():
    t = build(dict(kind="fat-tree", k=4, link_gbps=100, fabric_gbps=[200, 400], link_delay_ns=[100, 250, 1000]))
    for tier, rate, delay in [(0, 100e9, 100_000), (1, 200e9, 250_000), (2, 400e9, 1_000_000)]:
        sel = t.port["tier"] == tier
        assert set(t.port["rate"][sel].tolist()) == {int(rate)} and set(t.port["delay"][sel].tolist()) == {delay}


def test_oversubscribed_fat_tree_edges_have_more_hosts():
    t = small("fattree-k4-os2")
    edge = t.switch(1, 0, 0)
    assert (t.hosts_per_leaf, t.node["n_down"][edge], t.node["n_up"][edge], t.n_hosts) == (4, 4, 2, 32)


def test_nodes_kinds_and_indices(topo):
    a = topo.arrays
    assert np.all(a.node["kind"][: a.n_hosts] == HOST) and np.all(a.node["kind"][a.n_hosts:] == SWITCH)
    assert np.array_equal(a.node["index"][: a.n_hosts], np.arange(a.n_hosts))
    for p in range(a.n_planes):
        for tier, n in enumerate((a.n_t0, a.n_t1, a.n_t2)):
            if n:
                nodes = [topo.switch(p, tier, i) for i in range(n)]
                assert [int(a.node["index"][x]) for x in nodes] == list(range(n))
                assert {int(a.node["tier"][x]) for x in nodes} == {tier}
                assert topo.parse_node(topo.node_name(nodes[-1])) == nodes[-1]


def test_host_addresses_one_per_plane():
    t = small("two-plane-64")
    assert str(t.host_address(0, 0)) == "fd00::1"
    assert str(t.host_address(13, 1)) == "fd00:1:1:5::1"  # plane 1, T0 1, downlink 5
    assert len({t.host_address(h, p) for h in range(64) for p in range(2)}) == 128


def test_switch_defaults():
    d = from_preset("leafspine-8192-400g").switch_defaults
    assert (d.queue_bytes, d.ecn_min_bytes, d.ecn_max_bytes, d.mtu_bytes, d.trim_header_bytes) == (
        415_000, 103_750, 311_250, 4150, 64)
    d = from_preset("fattree-k16").switch_defaults
    assert 170_000 < d.queue_bytes < 180_000  # one BDP at 100G over 6 hops of 1 us (setups 7: about 178 kB)
    assert d.ecn_min_bytes == round(0.2 * d.queue_bytes) and d.ecn_max_bytes == round(0.8 * d.queue_bytes)
    d = big().switch_defaults
    assert (d.mtu_bytes, d.trim_header_bytes, d.ecn_on_last_hop) == (4238, 256, False)
