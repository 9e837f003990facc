"""Builders: nodes and ports of a multi-plane Clos fabric as flat numpy arrays.

Numbering (docs/fabric.md has the drawing):

- `NODE` and `PORT` rows (structured arrays, below) describe them.
- node ids: hosts ``0..H-1`` first (host h = htsim host h: host h sits under
  T0 ``h // hosts_per_leaf``, fat-tree pods contiguous), then for each plane
  p the plane's T0 switches, T1 switches, T2 (core) switches, each numbered
  as htsim's FatTreeTopology numbers ToR / Agg / Core switches. So
  ``node(p, tier, i) = H + p * S + offset[tier] + i``.
- port ids: host NIC ports first, ``nic(h, p) = h * P + p``; then each
  switch's ports in node order, its downlinks first, then its uplinks:
  ``down(n, i) = node[n].port_start + i``, ``up(n, j) = ... + node[n].n_down + j``.
- A port is one end of a link (an egress queue of its node); ``port[q].peer``
  is the other end. Leaf-spine: T0 l uplink j <-> T1 j downlink l. Fat-tree
  (A = k/2): edge e uplink a <-> aggregation ``(e // A) * A + a`` downlink
  ``e % A``; aggregation g uplink c <-> core ``g % A + A * c`` downlink
  ``g // A`` (htsim: core = podpos + aggs_per_pod * l).
"""
from __future__ import annotations

import numpy as np

from mrc.fabric import address as AD
from mrc.fabric.spec import FabricSpec
from mrc.units import bps_from_gbps, ps_from_ns

HOST, SWITCH = 0, 1
TIER_HOST, T0, T1, T2 = -1, 0, 1, 2
UP, DOWN = 0, 1
TIER_NAMES = {TIER_HOST: "host", T0: "T0", T1: "T1", T2: "T2"}

# One row per node. Structured arrays keep the compiled calls cheap: a
# namedtuple of a few arrays passes far fewer values than one array per field.
NODE = np.dtype([
    ("kind", np.int8),  # HOST 0, SWITCH 1
    ("tier", np.int8),  # host -1, T0 0, T1 1, T2 2
    ("plane", np.int8),  # -1 for hosts
    ("index", np.int32),  # host id, or the switch's index within (plane, tier): htsim's numbering
    ("pod", np.int32),  # fat-tree pod (cores -1); 0 in a leaf-spine
    ("pos", np.int32),  # host: its downlink on its T0; fat-tree T0/T1: place in the pod (index % k/2);
                        # core: its aggregation position a; leaf-spine switches: index
    ("leaf", np.int32),  # host: index of its T0; switches: -1
    ("usid", np.int32),  # the node's uSID (hosts: their T0-local uSID)
    ("n_down", np.int32),  # downlinks (hosts: 0)
    ("n_up", np.int32),  # uplinks (hosts: one NIC port per plane)
    ("port_start", np.int64),  # first port; downlinks first, then uplinks
    ("seed", np.int64),  # 32-bit ECMP hash seed
], align=True)

# One row per port = one end of a link = an egress queue of its node.
PORT = np.dtype([
    ("node", np.int32),
    ("peer", np.int32),  # the port at the other end of the link
    ("rate", np.int64),  # bits/s
    ("delay", np.int64),  # propagation delay, ps
    ("plane", np.int8),
    ("tier", np.int8),  # link tier: 0 host-T0, 1 T0-T1, 2 T1-T2
    ("dir", np.int8),  # UP 0 (towards the top), DOWN 1
    ("peer_node", np.int32),  # node of the peer port (what a packet leaving here reaches); in the padding
], align=True)


def shape(spec: FabricSpec) -> dict:
    """Per-tier switch counts and port counts (per plane)."""
    hpl = spec.hosts_per_leaf
    if spec.tiers == 2:
        L, U = spec.leaves, spec.spines
        return dict(n_sw=(L, U, 0), n_down=(hpl, L, 0), n_up=(U, 0, 0), t0_per_pod=L, t1_per_pod=U,
                    agg_bits=0, core_bits=AD.bits(U))
    k = spec.k
    A = k // 2
    return dict(n_sw=(k * A, k * A, A * A), n_down=(hpl, A, k), n_up=(A, A, 0), t0_per_pod=A, t1_per_pod=A,
                agg_bits=AD.bits(A), core_bits=AD.bits(A))


def seeds(ecmp_seed: int, n: int) -> np.ndarray:
    """Per-node 32-bit ECMP hash seeds: splitmix64 of (seed, node id), low 32 bits."""
    with np.errstate(over="ignore"):
        z = (np.uint64(ecmp_seed & 0xFFFFFFFFFFFFFFFF) * np.uint64(0x9E3779B97F4A7C15)
             + (np.arange(n, dtype=np.uint64) + np.uint64(1)) * np.uint64(0xBF58476D1CE4E5B9))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z & np.uint64(0xFFFFFFFF)).astype(np.int64)


def build_arrays(spec: FabricSpec, ecmp_seed: int = 0) -> dict:
    """Node and port arrays of `spec` (see the module docstring for the numbering)."""
    sh = shape(spec)
    P, H, hpl = spec.planes, spec.hosts, spec.hosts_per_leaf
    n_sw, n_down, n_up = sh["n_sw"], sh["n_down"], sh["n_up"]
    S = sum(n_sw)
    sw_off = (0, n_sw[0], n_sw[0] + n_sw[1])
    per_sw = tuple(n_down[t] + n_up[t] for t in range(3))
    PP = sum(n_sw[t] * per_sw[t] for t in range(3))
    port_off = (0, n_sw[0] * per_sw[0], n_sw[0] * per_sw[0] + n_sw[1] * per_sw[1])
    n_nodes, n_ports = H + P * S, H * P + P * PP
    rates = [bps_from_gbps(spec.link_gbps)] + [bps_from_gbps(g) for g in spec.fabric_gbps]
    delays = [ps_from_ns(d) for d in spec.link_delay_ns]

    def start(p, tier, i):
        return H * P + p * PP + port_off[tier] + np.asarray(i, dtype=np.int64) * per_sw[tier]

    # ---- nodes
    node = np.zeros(n_nodes, NODE)
    node["kind"] = SWITCH
    hosts = np.arange(H, dtype=np.int64)
    hn = node[:H]
    hn["kind"], hn["tier"], hn["plane"], hn["index"] = HOST, TIER_HOST, -1, hosts
    hn["pod"] = (hosts // hpl) // sh["t0_per_pod"] if spec.tiers == 3 else 0
    hn["pos"], hn["leaf"] = hosts % hpl, hosts // hpl
    hn["port_start"], hn["n_down"], hn["n_up"] = hosts * P, 0, P
    hn["usid"] = AD.HOST_BASE + hosts % hpl
    A, wa, wc = sh["t1_per_pod"], sh["agg_bits"], sh["core_bits"]
    for p in range(P):
        for t in range(3):
            if n_sw[t] == 0:
                continue
            i = np.arange(n_sw[t], dtype=np.int64)
            r = node[H + p * S + sw_off[t]: H + p * S + sw_off[t] + n_sw[t]]
            r["tier"], r["plane"], r["index"], r["leaf"] = t, p, i, -1
            r["port_start"], r["n_down"], r["n_up"] = start(p, t, i), n_down[t], n_up[t]
            if spec.tiers == 2:
                r["pod"], r["pos"] = 0, i
                r["usid"] = (AD.T0_BASE if t == T0 else AD.T1_BASE) + i
            elif t == T0:
                r["pod"], r["pos"], r["usid"] = i // A, i % A, AD.T0_BASE + i
            elif t == T1:
                r["pod"], r["pos"], r["usid"] = i // A, i % A, AD.AGG_BASE + ((i // A) << wa) + i % A
            else:
                r["pod"], r["pos"], r["usid"] = -1, i % A, AD.T1_BASE + ((i % A) << wc) + i // A
    node["seed"] = seeds(ecmp_seed, n_nodes)

    # ---- ports
    port = np.zeros(n_ports, PORT)
    # host NIC ports: nic(h, p) = h*P + p <-> T0 (p, h // hpl) downlink h % hpl
    hp = np.arange(H * P, dtype=np.int64)
    h, p_of = hp // P, hp % P
    nic = port[: H * P]
    nic["node"] = h
    nic["peer"] = H * P + p_of * PP + port_off[T0] + (h // hpl) * per_sw[T0] + h % hpl
    nic_lat = ps_from_ns(spec.nic_latency_ns)  # the NIC's own latency, each way, on its host link
    nic["rate"], nic["delay"], nic["plane"], nic["tier"], nic["dir"] = rates[0], delays[0] + nic_lat, p_of, 0, UP
    for p in range(P):
        for t in range(3):
            if n_sw[t] == 0:
                continue
            i = np.arange(n_sw[t], dtype=np.int64)[:, None]
            d = np.arange(n_down[t], dtype=np.int64)[None, :]
            u = np.arange(n_up[t], dtype=np.int64)[None, :]
            base = int(start(p, t, 0))
            blk = slice(base, base + n_sw[t] * per_sw[t])
            owner = H + p * S + sw_off[t] + i
            peer = np.empty((n_sw[t], per_sw[t]), np.int64)
            if t == T0:
                peer[:, : n_down[t]] = ((i * hpl + d) * P + p)  # the host's NIC port
                if spec.tiers == 2:  # uplink j -> spine j, downlink i
                    peer[:, n_down[t]:] = start(p, T1, u) + i
                else:  # uplink a -> aggregation (pod*A + a), downlink (e % A)
                    peer[:, n_down[t]:] = start(p, T1, (i // A) * A + u) + i % A
            elif t == T1 and spec.tiers == 2:  # downlink l -> leaf l, uplink j
                peer[:, :] = start(p, T0, d) + hpl + i
            elif t == T1:
                peer[:, : n_down[t]] = start(p, T0, (i // A) * A + d) + hpl + i % A
                peer[:, n_down[t]:] = start(p, T2, i % A + A * u) + i // A
            else:  # core m = a + A*c, downlink q -> aggregation q*A + a, uplink c
                peer[:, :] = start(p, T1, d * A + i % A) + A + i // A
            r = port[blk]
            r["node"] = np.broadcast_to(owner, peer.shape).ravel()
            r["peer"] = peer.ravel()
            tier_of = np.empty(peer.shape, np.int8)
            tier_of[:, : n_down[t]] = t  # a T(t) downlink is link tier t (host links are tier 0)
            tier_of[:, n_down[t]:] = t + 1
            dir_of = np.empty(peer.shape, np.int8)
            dir_of[:, : n_down[t]], dir_of[:, n_down[t]:] = DOWN, UP
            tiers_flat = tier_of.ravel()
            r["tier"], r["dir"], r["plane"] = tiers_flat, dir_of.ravel(), p
            r["rate"] = np.asarray(rates, np.int64)[tiers_flat]
            r["delay"] = np.asarray(delays, np.int64)[tiers_flat] + np.where(tiers_flat == 0, nic_lat, 0)
    port["peer_node"] = port["node"][port["peer"]]

    return dict(
        n_hosts=H, n_planes=P, tiers=spec.tiers, hosts_per_leaf=hpl,
        n_t0=n_sw[0], n_t1=n_sw[1], n_t2=n_sw[2], t0_per_pod=sh["t0_per_pod"], t1_per_pod=sh["t1_per_pod"],
        switches_per_plane=S, n_nodes=n_nodes, n_ports=n_ports, agg_bits=wa, core_bits=wc,
        node=node, port=port, plane_block=np.array([AD.block(p) for p in range(P)], np.uint64),
    )
