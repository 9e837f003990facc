"""Compiled path functions over `FabricArrays` (``F``): EV -> route, SRv6 forwarding.

Routes are written into a caller-provided int array ``out`` as the port ids
the packet leaves from, in order: the source NIC port first, the last T0's
downlink to the destination last; the function returns how many (the hop
count: 2, 4 or 6), or a negative code:

- ``ROUTE_INVALID_EV`` (-1): a field beyond its count, or padding bits set;
- ``ROUTE_BAD_ARGS`` (-2): host or plane out of range, or `out` too short;
- ``ROUTE_DROPPED`` (-3): a node had no entry for the carrier (SRv6);
- ``ROUTE_TOO_LONG`` (-4): more hops than the fabric can need (SRv6).

`srv6_forward` is one node's step: match block + uSID, shift, look up.
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.fabric.address import carrier_lead, carrier_pack, carrier_shift
from mrc.fabric.address import AGG_BASE, HOST_BASE, T0_BASE, T1_BASE
from mrc.fabric.tables import ACT_END_DT6, ACT_FORWARD, hash_slot

ROUTE_INVALID_EV = -1
ROUTE_BAD_ARGS = -2
ROUTE_DROPPED = -3
ROUTE_TOO_LONG = -4
FWD_DELIVER = -1  # srv6_forward: the packet is for this node
FWD_DROP = -2  # srv6_forward: no entry (no route)
MAX_ROUTE_PORTS = 6


@njit(inline="always")
def nic_port(F, host, plane):
    return host * F.n_planes + plane


@njit(inline="always")
def switch_node(F, plane, tier, index):
    off = 0
    if tier >= 1:
        off += F.n_t0
    if tier >= 2:
        off += F.n_t1
    return F.n_hosts + plane * F.switches_per_plane + off + index


@njit(inline="always")
def down_port(F, node, i):
    return F.node[node]["port_start"] + i


@njit(inline="always")
def up_port(F, node, j):
    n = F.node[node]
    return n["port_start"] + n["n_down"] + j


@njit(inline="always")
def peer_node(F, port):
    return F.port[port]["peer_node"]


@njit(inline="always")
def ev_field(F, ev, f):
    """Value of EV field `f` (0 = plane, 1 = first choice, 2 = second)."""
    e = F.ev[f]
    return (np.int64(ev) >> e["shift"]) & ((np.int64(1) << e["width"]) - 1)


@njit(inline="always")
def ev_valid(F, ev):
    ev = np.int64(ev)
    if ev < 0 or ev > 0xFFFFFFFF or (ev & F.ev_pad_mask) != 0:
        return False
    for f in range(F.ev_nfields):
        if ev_field(F, ev, f) >= F.ev[f]["count"]:
            return False
    return True


@njit
def ev_route(F, src, dst, ev, out):
    """Ports a packet from `src` to `dst` on `ev` leaves from (see the module docstring)."""
    if src < 0 or src >= F.n_hosts or dst < 0 or dst >= F.n_hosts or out.shape[0] < 2 * F.tiers:
        return ROUTE_BAD_ARGS
    if not ev_valid(F, ev):
        return ROUTE_INVALID_EV
    p = ev_field(F, ev, 0)
    hs, hd = F.node[src], F.node[dst]
    t0s, t0d = hs["leaf"], hd["leaf"]
    out[0] = nic_port(F, src, p)
    s0 = switch_node(F, p, 0, t0s)
    if t0s == t0d:
        out[1] = down_port(F, s0, hd["pos"])
        return 2
    d0 = switch_node(F, p, 0, t0d)
    a = ev_field(F, ev, 1)
    out[1] = up_port(F, s0, a)
    if F.tiers == 2:
        out[2] = down_port(F, switch_node(F, p, 1, a), t0d)
        out[3] = down_port(F, d0, hd["pos"])
        return 4
    A = F.t1_per_pod
    agg_s = switch_node(F, p, 1, hs["pod"] * A + a)
    if hs["pod"] == hd["pod"]:
        out[2] = down_port(F, agg_s, F.node[d0]["pos"])
        out[3] = down_port(F, d0, hd["pos"])
        return 4
    c = ev_field(F, ev, 2)
    out[2] = up_port(F, agg_s, c)
    out[3] = down_port(F, switch_node(F, p, 2, a + A * c), hd["pod"])
    out[4] = down_port(F, switch_node(F, p, 1, hd["pod"] * A + a), F.node[d0]["pos"])
    out[5] = down_port(F, d0, hd["pos"])
    return 6


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
