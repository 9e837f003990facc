"""The static /48 table every node installs, and its Linux (iproute2) form.

An entry is (prefix, action, egress port). The prefix is the 48-bit value
block|uSID (``5f00:3:8007::/48``). Actions:

- ``END``: the node's own uSID. uN with NEXT-C-SID: shift the carrier left by
  one uSID, then look the new leading uSID up in the same table. Linux:
  ``encap seg6local action End flavors next-csid lblen 32 nflen 16``.
- ``FORWARD``: send out of the egress port unchanged (a plain /48 route).
- ``END_DT6``: at a host, decapsulate and deliver the inner packet
  (``encap seg6local action End.DT6``).

What each node holds (A = k/2):

================  ==========================================================
leaf-spine T0     own uSID; every T1 uSID -> that uplink; host uSIDs -> downlinks
leaf-spine T1     own uSID; every T0 uSID -> the downlink to that T0
fat-tree edge     own uSID; its pod's aggregation uSIDs and every core uSID on
                  aggregation position a -> uplink a; host uSIDs -> downlinks
fat-tree agg      own uSID; its pod's edge uSIDs -> downlinks; its cores -> uplinks
fat-tree core     own uSID; every edge uSID -> the downlink to that edge's pod
host              per plane: its T0-local host uSID -> End.DT6 on that NIC port
================  ==========================================================

Entries are `TBL` rows kept per node, sorted by prefix, in CSR form (rows
``tbl_start[n]`` .. ``tbl_start[n+1]``): what the Python faces list. The
forwarding path looks a prefix up in the same entries laid out as one hash
table per node (``htbl_start``, ``htbl``: open addressing, linear probing,
a power-of-two size at least twice the node's entries, prefix 0 = empty slot),
so a lookup touches one cache line or two instead of a binary search's ~8.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mrc._jit import njit
from mrc.fabric import address as AD
from mrc.fabric.build import DOWN, HOST

ACT_END, ACT_FORWARD, ACT_END_DT6 = 1, 2, 3
ACTION_NAMES = {ACT_END: "End", ACT_FORWARD: "forward", ACT_END_DT6: "End.DT6"}

TBL = np.dtype([
    ("prefix", np.uint64),  # block << 16 | uSID: the /48
    ("port", np.int32),  # egress port (-1 for End)
    ("action", np.int8),  # ACT_END / ACT_FORWARD / ACT_END_DT6
], align=True)


def _block(usids, actions, ports, blk):
    """Flatten per-node 2-D entry arrays (rows = nodes) into CSR pieces."""
    n, m = usids.shape
    return (np.full(n, m, np.int64),
            ((np.uint64(blk) << np.uint64(16)) | usids.astype(np.uint64)).ravel(),
            np.broadcast_to(actions, (n, m)).astype(np.int8).ravel(),
            ports.astype(np.int32).ravel())


def build_tables(spec, a: dict) -> dict:
    """CSR static tables for every node of the arrays `a` (`build.build_arrays`)."""
    H, P, hpl = a["n_hosts"], a["n_planes"], a["hosts_per_leaf"]
    counts, prefixes, actions, ports = [], [], [], []

    def add(piece):
        c, pr, ac, po = piece
        counts.append(c), prefixes.append(pr), actions.append(ac), ports.append(po)

    # hosts: one End.DT6 entry per plane (blocks ascend with the plane: sorted)
    h = np.arange(H, dtype=np.int64)[:, None]
    pl = np.arange(P, dtype=np.int64)[None, :]
    counts.append(np.full(H, P, np.int64))
    prefixes.append((((AD.BLOCK_BASE | pl).astype(np.uint64) << np.uint64(16))
                     | (AD.HOST_BASE + h % hpl).astype(np.uint64)).ravel())
    actions.append(np.full(H * P, ACT_END_DT6, np.int8))
    ports.append((h * P + pl).astype(np.int32).ravel())

    S = a["switches_per_plane"]
    n_sw = (a["n_t0"], a["n_t1"], a["n_t2"])
    A, wa, wc = a["t1_per_pod"], a["agg_bits"], a["core_bits"]
    for p in range(P):
        blk = AD.block(p)
        first = H + p * S
        # T0 (leaf / edge)
        i = np.arange(n_sw[0], dtype=np.int64)[:, None]
        start = a["node"]["port_start"][first: first + n_sw[0]].astype(np.int64)[:, None]
        d = np.arange(hpl, dtype=np.int64)[None, :]
        own = AD.T0_BASE + i
        if spec.tiers == 2:
            j = np.arange(n_sw[1], dtype=np.int64)[None, :]
            ups, up_ports = AD.T1_BASE + j + 0 * i, start + hpl + j
        else:
            aa = np.arange(A, dtype=np.int64)[None, :]
            pod = i // A
            aggs, agg_ports = AD.AGG_BASE + (pod << wa) + aa, start + hpl + aa
            ac = np.arange(A * A, dtype=np.int64)[None, :]  # (a, c) in order
            cores = AD.T1_BASE + ((ac // A) << wc) + ac % A + 0 * i
            core_ports = start + hpl + ac // A
            ups = np.concatenate([aggs, cores], axis=1)
            up_ports = np.concatenate([agg_ports, core_ports], axis=1)
        usids = np.concatenate([own, ups, AD.HOST_BASE + d + 0 * i], axis=1)
        acts = np.concatenate([[ACT_END], np.full(ups.shape[1] + hpl, ACT_FORWARD)])
        prt = np.concatenate([np.full_like(own, -1), up_ports, start + d], axis=1)
        add(_block(usids, acts, prt, blk))
        # T1 (spine / aggregation)
        first1 = first + n_sw[0]
        i = np.arange(n_sw[1], dtype=np.int64)[:, None]
        start = a["node"]["port_start"][first1: first1 + n_sw[1]].astype(np.int64)[:, None]
        own = a["node"]["usid"][first1: first1 + n_sw[1]].astype(np.int64)[:, None]
        if spec.tiers == 2:
            l_ = np.arange(n_sw[0], dtype=np.int64)[None, :]
            usids = np.concatenate([AD.T0_BASE + l_ + 0 * i, own], axis=1)
            acts = np.concatenate([np.full(n_sw[0], ACT_FORWARD), [ACT_END]])
            prt = np.concatenate([start + l_, np.full_like(own, -1)], axis=1)
        else:
            m = np.arange(A, dtype=np.int64)[None, :]
            c = np.arange(A, dtype=np.int64)[None, :]
            edges = AD.T0_BASE + (i // A) * A + m
            cores = AD.T1_BASE + ((i % A) << wc) + c
            usids = np.concatenate([edges, own, cores], axis=1)
            acts = np.concatenate([np.full(A, ACT_FORWARD), [ACT_END], np.full(A, ACT_FORWARD)])
            prt = np.concatenate([start + m, np.full_like(own, -1), start + A + c], axis=1)
        add(_block(usids, acts, prt, blk))
        # T2 (core)
        if n_sw[2]:
            first2 = first1 + n_sw[1]
            i = np.arange(n_sw[2], dtype=np.int64)[:, None]
            start = a["node"]["port_start"][first2: first2 + n_sw[2]].astype(np.int64)[:, None]
            own = a["node"]["usid"][first2: first2 + n_sw[2]].astype(np.int64)[:, None]
            e = np.arange(n_sw[0], dtype=np.int64)[None, :]
            usids = np.concatenate([AD.T0_BASE + e + 0 * i, own], axis=1)
            acts = np.concatenate([np.full(n_sw[0], ACT_FORWARD), [ACT_END]])
            prt = np.concatenate([start + e // A, np.full_like(own, -1)], axis=1)
            add(_block(usids, acts, prt, blk))

    count = np.concatenate(counts)
    tbl_start = np.zeros(len(count) + 1, np.int64)
    np.cumsum(count, out=tbl_start[1:])
    tbl = np.empty(int(tbl_start[-1]), TBL)
    tbl["prefix"], tbl["action"], tbl["port"] = np.concatenate(prefixes), np.concatenate(actions), np.concatenate(ports)
    return dict(tbl_start=tbl_start, tbl=tbl, **hash_tables(tbl_start, tbl))


def table_sizes(spec) -> tuple[int, int, int]:
    """(entries, hash slots, nodes) `build_tables` makes for `spec`, counted from its shape alone (nothing is
    built): what a memory estimate needs before the fabric exists."""
    from mrc.fabric.build import shape

    sh = shape(spec)
    P, H, hpl = spec.planes, spec.hosts, spec.hosts_per_leaf
    n_sw = sh["n_sw"]
    if spec.tiers == 2:
        L, U = n_sw[0], n_sw[1]
        per_node = [(L, 1 + U + hpl), (U, L + 1)]
    else:
        A = sh["t1_per_pod"]
        per_node = [(n_sw[0], 1 + A + A * A + hpl), (n_sw[1], 2 * A + 1), (n_sw[2], n_sw[0] + 1)]
    groups = [(H, P)] + [(P * n, m) for n, m in per_node]

    def slots(m):
        return 1 << int(np.ceil(np.log2(max(2 * m, 2))))

    return (sum(n * m for n, m in groups), sum(n * slots(m) for n, m in groups), sum(n for n, _ in groups))


HASH_MULT = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing (Knuth): 2^64 / golden ratio


@njit(inline="always")
def hash_slot(prefix48, size):
    """Home slot of a /48 prefix in a node's hash table of `size` (a power of two) slots."""
    return np.int64(((np.uint64(prefix48) * HASH_MULT) >> np.uint64(32)) & np.uint64(size - 1))


def hash_tables(tbl_start: np.ndarray, tbl: np.ndarray) -> dict:
    """The per-node hash tables of the sorted CSR entries (``htbl_start``, ``htbl``)."""
    if len(tbl) and (tbl["prefix"] == 0).any():
        raise ValueError("a table prefix is 0, which marks an empty hash slot")
    count = np.diff(tbl_start)
    size = np.ones(len(count), np.int64) << np.ceil(np.log2(np.maximum(2 * count, 2))).astype(np.int64)
    htbl_start = np.zeros(len(count) + 1, np.int64)
    np.cumsum(size, out=htbl_start[1:])
    htbl = np.zeros(int(htbl_start[-1]), TBL)
    htbl["port"] = -1
    _fill_hash(tbl_start, tbl, htbl_start, htbl)
    return dict(htbl_start=htbl_start, htbl=htbl)


@njit
def _fill_hash(tbl_start, tbl, htbl_start, htbl):
    for n in range(tbl_start.shape[0] - 1):
        base = htbl_start[n]
        size = htbl_start[n + 1] - base
        for e in range(tbl_start[n], tbl_start[n + 1]):
            k = hash_slot(tbl[e]["prefix"], size)
            while htbl[base + k]["prefix"] != 0:
                k = (k + 1) & (size - 1)
            htbl[base + k] = tbl[e]


# ---------------------------------------------------------------- Python faces


class TableEntry(NamedTuple):
    prefix48: int  # block << 16 | uSID
    action: int  # ACT_END / ACT_FORWARD / ACT_END_DT6
    port: int  # egress port id (-1 for End)

    @property
    def prefix(self) -> str:
        return AD.prefix48_text(self.prefix48)

    @property
    def usid(self) -> int:
        return self.prefix48 & 0xFFFF


def entries(topo, node: int) -> list[TableEntry]:
    """The static table `node` installs, sorted by prefix."""
    lo, hi = int(topo.tbl_start[node]), int(topo.tbl_start[node + 1])
    return [TableEntry(int(r["prefix"]), int(r["action"]), int(r["port"])) for r in topo.tbl[lo:hi]]


def ifname(topo, port: int) -> str:
    """Interface name of a port inside its node's namespace: ``nic<p>``, ``d<i>`` or ``u<j>``."""
    q = topo.port[port]
    n = topo.node[q["node"]]
    if n["kind"] == HOST:
        return f"nic{int(q['plane'])}"
    k = int(port) - int(n["port_start"])
    return f"d{k}" if q["dir"] == DOWN else f"u{k - int(n['n_down'])}"


def iproute2(topo, node: int, local_dev: str | None = None) -> list[str]:
    """The table of `node` as ``ip -6 route add`` commands (one per entry).

    Forward entries go ``via`` the peer port's link-local address
    (`address.link_local`: ``fe80::1:<port id>``), which the namespace builder
    assigns to that interface. An End entry has no egress: its device only
    anchors the route (after the shift the kernel looks the new address up
    again), so it is `local_dev`, by default the node's first interface (Linux
    treats a non-local route on ``lo`` as unroutable for incoming packets).
    End.DT6 looks the inner address up in table ``local``, where the host's own
    addresses are (in ``main`` it would be forwarded back out).
    """
    out = []
    n = topo.node[node]
    anchor = local_dev or ifname(topo, int(n["port_start"]))
    for e in entries(topo, node):
        if e.action == ACT_END:
            out.append(f"ip -6 route add {e.prefix} encap seg6local action End flavors next-csid "
                       f"lblen 32 nflen 16 dev {anchor}")
        elif e.action == ACT_FORWARD:
            peer = int(topo.port[e.port]["peer"])
            out.append(f"ip -6 route add {e.prefix} via {AD.link_local(peer)} dev {ifname(topo, e.port)}")
        else:
            out.append(f"ip -6 route add {e.prefix} encap seg6local action End.DT6 table local "
                       f"dev {ifname(topo, e.port)}")
    return out
