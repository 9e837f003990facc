"""Compiled path functions over `FabricArrays` (``F``): EV -> route, SRv6 forwarding.

`ev_route` (EV -> the ports a packet leaves from) and its helpers are in `mrc.core.route`, where the
library finds them too; they are re-exported here with the codes they return. This module adds the
SRv6 side: `ev_carrier` (the uSID carrier of an EV's path), `srv6_forward` (one node's step: match
block + uSID, shift, look up) and `srv6_route` (the static tables followed hop by hop, filling the
same port list as `ev_route`, or ``ROUTE_DROPPED`` / ``ROUTE_TOO_LONG``).
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.core.route import (  # noqa: F401  (the fabric's route functions, re-exported)
    MAX_ROUTE_PORTS, ROUTE_BAD_ARGS, ROUTE_DROPPED, ROUTE_INVALID_EV, ROUTE_TOO_LONG, down_port, ev_field, ev_route,
    ev_valid, nic_port, peer_node, switch_node, up_port,
)
from mrc.fabric.address import carrier_lead, carrier_pack, carrier_shift
from mrc.fabric.address import AGG_BASE, HOST_BASE, T0_BASE, T1_BASE
from mrc.fabric.tables import ACT_END_DT6, ACT_FORWARD, hash_slot

FWD_DELIVER = -1  # srv6_forward: the packet is for this node
FWD_DROP = -2  # srv6_forward: no entry (no route)


@njit
def ev_carrier(F, src, dst, ev):
    """SRv6 carrier (hi, lo) of the path `ev_route` gives; (0, 0) if the EV or hosts are invalid.

    Leaf-spine: block | T0(src) | T1 | T0(dst) | host, or block | T0 | host
    under one T0. Fat-tree: block | edge(src) | core | edge(dst) | host across
    pods (the aggregation switches forward by their /48 entries for the core
    and the edge), block | edge | agg | edge | host inside a pod.
    """
    if src < 0 or src >= F.n_hosts or dst < 0 or dst >= F.n_hosts or not ev_valid(F, ev):
        return np.uint64(0), np.uint64(0)
    p = ev_field(F, ev, 0)
    hs, hd = F.node[src], F.node[dst]
    t0s, t0d = hs["leaf"], hd["leaf"]
    blk = F.plane_block[p]
    host = HOST_BASE + hd["pos"]
    if t0s == t0d:
        return carrier_pack(blk, T0_BASE + t0s, host, 0, 0)
    a = ev_field(F, ev, 1)
    if F.tiers == 2:
        mid = T1_BASE + a
    elif hs["pod"] == hd["pod"]:
        mid = AGG_BASE + (hs["pod"] << F.agg_bits) + a
    else:
        mid = T1_BASE + (a << F.core_bits) + ev_field(F, ev, 2)
    return carrier_pack(blk, T0_BASE + t0s, mid, T0_BASE + t0d, host)


@njit(inline="always")
def table_home(F, node, prefix48):
    """Index in ``F.htbl`` of the home slot of the /48 prefix in `node`'s table (where
    `table_lookup` probes first)."""
    base = F.htbl_start[node]
    size = F.htbl_start[node + 1] - base
    return base + hash_slot(np.uint64(prefix48), size) if size > 0 else base


@njit(inline="always")
def table_lookup(F, node, prefix48):
    """Index in ``F.htbl`` of `node`'s entry for the /48 prefix (block << 16 | uSID), or -1.

    One hash probe, then linear probing (the table is at most half full).
    """
    base = F.htbl_start[node]
    size = F.htbl_start[node + 1] - base
    key = np.uint64(prefix48)
    k = hash_slot(key, size)
    for _ in range(size):
        v = F.htbl[base + k]["prefix"]
        if v == key:
            return base + k
        if v == 0:
            return -1
        k = (k + 1) & (size - 1)
    return -1


@njit(inline="always")
def srv6_forward(F, node, hi, lo):
    """What `node` does with a packet whose destination is the carrier (hi, lo).

    Returns ``(code, hi, lo)``: code >= 0 is the egress port (the carrier as
    it leaves), ``FWD_DELIVER`` the packet is for this node (End.DT6 at a
    host, or the carrier ended at this switch), ``FWD_DROP`` no entry.
    """
    for _ in range(7):
        e = table_lookup(F, node, hi >> np.uint64(16))
        if e < 0:
            return FWD_DROP, hi, lo
        act = F.htbl[e]["action"]
        if act == ACT_FORWARD:
            return np.int64(F.htbl[e]["port"]), hi, lo
        if act == ACT_END_DT6:
            return FWD_DELIVER, hi, lo
        hi, lo = carrier_shift(hi, lo)
        if carrier_lead(hi) == 0:
            return FWD_DELIVER, hi, lo
    return FWD_DROP, hi, lo


@njit
def srv6_route(F, src, plane, hi, lo, out):
    """Follow the static tables from `src`'s NIC port on `plane`; fills `out` like `ev_route`.

    The node the packet is delivered to is ``port[port[out[n-1]]["peer"]]["node"]``.
    """
    if src < 0 or src >= F.n_hosts or plane < 0 or plane >= F.n_planes or out.shape[0] < 1:
        return ROUTE_BAD_ARGS
    port = nic_port(F, src, plane)
    out[0] = port
    n = 1
    node = peer_node(F, port)
    for _ in range(2 * F.tiers + 2):
        code, hi, lo = srv6_forward(F, node, hi, lo)
        if code == FWD_DELIVER:
            return n
        if code < 0:
            return ROUTE_DROPPED
        if n >= out.shape[0]:
            return ROUTE_TOO_LONG
        out[n] = code
        n += 1
        node = peer_node(F, code)
    return ROUTE_TOO_LONG
