"""Static /48 tables: what each node holds, their order, and the iproute2 form."""
from __future__ import annotations

import re

import numpy as np

from mrc.fabric import ACT_END, ACT_END_DT6, ACT_FORWARD
from mrc.fabric import address as AD
from tests.fabric.fabrics import big, small


def test_every_table_is_sorted_and_has_one_end_per_switch(topo):
    a = topo.arrays
    for node in range(a.n_nodes):
        lo, hi = a.tbl_start[node], a.tbl_start[node + 1]
        pre = a.tbl["prefix"][lo:hi]
        assert np.all(pre[1:] > pre[:-1])
        acts = a.tbl["action"][lo:hi]
        if a.node["kind"][node] == 0:
            assert np.all(acts == ACT_END_DT6) and hi - lo == a.n_planes
        else:
            own = (np.uint64(a.plane_block[a.node["plane"][node]]) << np.uint64(16)) | np.uint64(a.node["usid"][node])
            assert pre[acts == ACT_END].tolist() == [int(own)]
            fwd = a.tbl["port"][lo:hi][acts == ACT_FORWARD]
            assert np.all(a.port["node"][fwd] == node)  # egress ports are the node's own


def test_hash_tables_hold_exactly_the_sorted_entries(topo):
    """The forwarding path's per-node hash tables: the same entries, every one found by a lookup,
    absent prefixes (other planes' blocks, unknown uSIDs) not found."""
    from mrc.fabric.paths import table_lookup
    from numba import njit

    @njit
    def look(F, node, key):
        return table_lookup(F, node, key)

    a = topo.arrays
    for node in range(a.n_nodes):
        lo, hi = a.tbl_start[node], a.tbl_start[node + 1]
        hlo, hhi = a.htbl_start[node], a.htbl_start[node + 1]
        size = hhi - hlo
        assert size >= 2 * (hi - lo) and size & (size - 1) == 0
        h = a.htbl[hlo:hhi]
        used = h[h["prefix"] != 0]
        assert sorted(used.tolist()) == sorted(a.tbl[lo:hi].tolist())
        for r in a.tbl[lo:hi]:
            e = look(a, node, r["prefix"])
            assert e >= 0 and a.htbl[e]["prefix"] == r["prefix"]
            assert (a.htbl[e]["action"], a.htbl[e]["port"]) == (r["action"], r["port"])
        for missing in (int(a.tbl[lo]["prefix"]) ^ (1 << 40), (int(a.plane_block[0]) << 16) | 0xEFFF):
            if missing not in a.tbl["prefix"][lo:hi]:
                assert look(a, node, np.uint64(missing)) == -1


def test_usids_are_unique_per_plane_and_grouped_by_tier(topo):
    a = topo.arrays
    sw = a.node["kind"] == 1
    for p in range(a.n_planes):
        u = a.node["usid"][sw & (a.node["plane"] == p)]
        assert len(set(u.tolist())) == len(u)
    assert np.all((a.node["usid"][sw & (a.node["tier"] == 0)] & 0xC000) == 0)  # 0x1000..0x3fff
    assert np.all(a.node["usid"][: a.n_hosts] >= AD.HOST_BASE)


def test_table_sizes_of_the_131k_design():
    t = big()
    sizes = np.diff(t.tbl_start)
    assert set(sizes[t.node["tier"] == 0].tolist()) == {1 + 256 + 256}  # own, 256 T1s, 256 hosts
    assert set(sizes[t.node["tier"] == 1].tolist()) == {1 + 512}  # own, 512 T0s
    assert set(sizes[: t.n_hosts].tolist()) == {8}  # End.DT6 per plane


def test_iproute2_lines():
    t = small("tiny")
    t0 = t.switch(1, 0, 0)
    lines = t.iproute2(t0)
    assert lines[0] == ("ip -6 route add 5f00:1:1000::/48 encap seg6local action End flavors next-csid "
                        "lblen 32 nflen 16 dev d0")  # anchored on the first interface
    assert t.iproute2(t0, local_dev="lo")[0].endswith(" dev lo")
    up1 = t.node["port_start"][t0] + 2 + 1
    assert lines[2] == f"ip -6 route add 5f00:1:8001::/48 via fe80::1:0:{int(t.port['peer'][up1]):x} dev u1"
    assert lines[3].endswith("dev d0") and lines[3].startswith("ip -6 route add 5f00:1:f000::/48 via fe80::")
    host = t.iproute2(3)
    assert host == ["ip -6 route add 5f00:0:f001::/48 encap seg6local action End.DT6 table local dev nic0",
                    "ip -6 route add 5f00:1:f001::/48 encap seg6local action End.DT6 table local dev nic1"]
    pattern = re.compile(r"ip -6 route add [0-9a-f:]+/48 (encap seg6local action End(\.DT6)? .*|via fe80::1:[0-9a-f:]+ "
                         r"dev [du]\d+)$")
    for node in range(t.n_nodes):
        assert len(t.iproute2(node)) == len(t.table(node))
        assert all(pattern.match(line) for line in t.iproute2(node))


def test_entries_face():
    t = small("fattree-k8")
    core = t.switch(0, 2, 6)  # a = 2, c = 1
    table = t.table(core)
    assert len(table) == 32 + 1
    own = [e for e in table if e.action == ACT_END]
    assert [e.prefix for e in own] == ["5f00:0:8009::/48"] and own[0].usid == 0x8009
    to_pod5 = [e for e in table if e.usid == AD.T0_BASE + 21][0]  # edge 21 is in pod 5
    assert t.port_name(to_pod5.port) == "p0.t2.6:down5"
