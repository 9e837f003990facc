"""Switch forwarding, per packet and per switch, with `mrc.fabric`'s compiled functions.

- SRv6 (``pkt.fwd == FWD_SRV6``): `mrc.fabric.paths.srv6_forward` on the
  packet's carrier (match block + uSID, shift, look up the static /48 table);
  the shifted carrier travels on. Static routes: a dead link stays in the
  tables (MRC steers around it at the endpoints).
- ECMP (``FWD_ECMP``): `mrc.fabric.ecmp.ecmp_next_port` hashes the 5-tuple
  (source and destination host address on the plane, UDP source port, flow
  label, protocol 17) with the switch's seed. On a healthy fabric that is the
  whole story, so the engine's path for a 5-tuple is exactly
  `Topology.ecmp_route`'s.

- Adaptive routing (``FWD_AR``, the ``ar`` transport; NVIDIA Spectrum-X
  style, peer notes 2.10): going down the path is unique (as ECMP); going up,
  each packet takes the least-loaded uplink (fewest bytes queued, data and
  control), ties broken from a random start (the engine's seeded RNG). A
  switch knows its own links' state at once (a dead uplink is never chosen);
  dead links elsewhere are avoided as the routing view learns them (below).
  The transport (MRC's core, one EV per plane) tolerates the reordering.

Routing reacts to dead links (not to gray loss or degraded rates, which
routing protocols do not see): ``port.rloc`` is what the switches at the two
ends of a link believe (updated ``route_detect_us`` after the event),
``port.rglob`` what every other switch believes (``route_converge_us``,
routing-protocol convergence). While any link is believed down, an uplink
choice skips members that are down locally or from which the destination is
unreachable in the global view, re-hashing the same 5-tuple over the members
left (so flows spread over them as ECMP groups do after a member is
withdrawn). Going down there is one choice: if the switch knows it is dead
the packet is dropped (no route).
"""
from __future__ import annotations

import numpy as np

from mrc.emulator._jit import njit
from mrc.emulator import state as ST
from mrc.emulator.pool import rand_u64
from mrc.fabric.build import DOWN
from mrc.fabric.ecmp import ecmp_next_port, ecmp_pick
from mrc.fabric.paths import peer_node, srv6_forward, up_port

_PROTO_UDP = 17


@njit
def _down_ok(E, F, node, dst, plane):
    """Does the unique downward path from `node` to host `dst` look alive in the global view?

    Returns 1 alive, 0 dead, -1 if `node` would have to go up first.
    """
    for _ in range(4):
        n = F.node[node]
        if n["kind"] == 0:
            return 1 if node == dst else 0
        d = F.node[dst]
        down = False
        if n["tier"] == 0:
            down = n["index"] == d["leaf"]
        elif n["tier"] == 1:
            down = F.tiers == 2 or n["pod"] == d["pod"]
        else:
            down = True
        if not down:
            return -1
        q = ecmp_next_port(F, node, dst, dst, plane, 0, 0, _PROTO_UDP)
        if E.port[q]["rglob"] == 0:
            return 0
        node = peer_node(F, q)
    return 0


@njit
def _reachable(E, F, node, dst, plane):
    """Global view: can `node` still reach `dst` (one more upward choice allowed, fat-tree aggregation)?"""
    r = _down_ok(E, F, node, dst, plane)
    if r >= 0:
        return r == 1
    n = F.node[node]
    for j in range(n["n_up"]):
        u = up_port(F, node, j)
        if E.port[u]["rglob"] != 0 and _down_ok(E, F, peer_node(F, u), dst, plane) == 1:
            return True
    return False


@njit
def _usable(E, F, q, dst, plane):
    return E.port[q]["rloc"] != 0 and _reachable(E, F, peer_node(F, q), dst, plane)


@njit
def _ecmp_repair(E, F, node, i, q):
    p = E.pkt[i]
    dst = p["dst"]
    plane = p["plane"]
    if F.port[q]["dir"] == DOWN:
        return q if E.port[q]["rloc"] != 0 else -1
    if _usable(E, F, q, dst, plane):
        return q
    n_up = F.node[node]["n_up"]
    count = 0
    for j in range(n_up):
        if _usable(E, F, up_port(F, node, j), dst, plane):
            count += 1
    if count == 0:
        return q if E.port[q]["rloc"] != 0 else -1
    k = ecmp_pick(F, node, p["src"], dst, plane, p["sport"], p["flow_label"], _PROTO_UDP, count)
    for j in range(n_up):
        u = up_port(F, node, j)
        if _usable(E, F, u, dst, plane):
            if k == 0:
                return u
            k -= 1
    return q


@njit
def _ar_next(E, F, node, i):
    """Adaptive routing: the least-loaded usable uplink when going up, else the unique downward port."""
    p = E.pkt
    q = ecmp_next_port(F, node, p[i]["src"], p[i]["dst"], p[i]["plane"], p[i]["sport"], p[i]["flow_label"],
                       _PROTO_UDP)
    if F.port[q]["dir"] == DOWN:
        if E.S[ST.S_ROUTE_DOWN] == 0:
            return q
        return q if E.port[q]["rloc"] != 0 else -1
    P = E.port
    n_up = F.node[node]["n_up"]
    dst = p[i]["dst"]
    plane = p[i]["plane"]
    check = E.S[ST.S_ROUTE_DOWN] != 0
    start = np.int64(rand_u64(E) % np.uint64(n_up))
    best = -1
    load = np.int64(2**62)
    for j in range(n_up):
        u = up_port(F, node, (start + j) % n_up)
        if P[u]["up"] == 0:
            continue
        if check and not _usable(E, F, u, dst, plane):
            continue
        b = P[u]["bytes0"] + P[u]["bytes1"]
        if b < load:
            load = b
            best = u
    return best if best >= 0 else q


@njit(inline="always")
def forward(E, F, node, i):
    """Egress port switch `node` sends packet i to, or -1 (no route: drop)."""
    p = E.pkt
    if p[i]["fwd"] == ST.FWD_SRV6:
        code, hi, lo = srv6_forward(F, node, p[i]["hi"], p[i]["lo"])
        if code < 0:
            return -1
        p[i]["hi"] = hi
        p[i]["lo"] = lo
        return code
    if p[i]["fwd"] == ST.FWD_AR:
        return _ar_next(E, F, node, i)
    q = ecmp_next_port(F, node, p[i]["src"], p[i]["dst"], p[i]["plane"], p[i]["sport"], p[i]["flow_label"],
                       _PROTO_UDP)
    if E.S[ST.S_ROUTE_DOWN] == 0:
        return q
    return _ecmp_repair(E, F, node, i, q)

