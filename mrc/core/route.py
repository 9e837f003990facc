"""An EV's route on a multi-plane Clos fabric: the ports a packet leaves from (htsim: a route is a list).

MRC's paths are explicit: the EV's fields name the plane and the up-link choice at each tier, so the route
is a function of the fabric's shape and the EV alone. It lives in the core because the library needs it
(`mrc.ctl.localizer` maps EVs to the links they cross) as much as the fabric and the emulator do; the
fabric's arrays come in as an argument (``F``, `mrc.fabric.FabricArrays`: ``node``, ``port`` and ``ev``
rows and the shape), so nothing here imports the fabric.

Routes are written into a caller-provided int array ``out`` as the port ids the packet leaves from, in
order: the source NIC port first, the last T0's downlink to the destination last; `ev_route` returns how
many (the hop count: 2, 4 or 6), or a negative code:

- ``ROUTE_INVALID_EV`` (-1): a field beyond its count, or padding bits set;
- ``ROUTE_BAD_ARGS`` (-2): host or plane out of range, or `out` too short;
- ``ROUTE_DROPPED`` (-3): a node had no entry for the carrier (SRv6, `mrc.fabric.paths.srv6_route`);
- ``ROUTE_TOO_LONG`` (-4): more hops than the fabric can need (SRv6).
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit

ROUTE_INVALID_EV = -1
ROUTE_BAD_ARGS = -2
ROUTE_DROPPED = -3
ROUTE_TOO_LONG = -4
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
