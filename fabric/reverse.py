"""Path -> EVs: which EVs of a source (and destination) cross a port or follow a route.

Needed to locate failed links: an ASSUMED_BAD event names (QP, EV); the
EVs that cross one link share it, so the controller can correlate events
across QPs (mrc-public-notes 3.9: "pinpoint the specific failing link").

Every valid EV is tried (at most planes x the choices, e.g. 2,048 on the
131,072-host fabric) with the compiled `paths.ev_route`. For a source alone,
one destination stands for all (`_representative`).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from mrc._jit import njit
from mrc.errors import UsageError
from mrc.fabric.build import DOWN, HOST
from mrc.fabric.paths import MAX_ROUTE_PORTS, ev_route


@njit
def _evs_through(F, port, src, dsts, evs, keep):
    out = np.empty(MAX_ROUTE_PORTS, np.int64)
    for i in range(evs.shape[0]):
        for d in dsts:
            n = ev_route(F, src, d, evs[i], out)
            hit = False
            for k in range(n):
                if out[k] == port:
                    hit = True
            if hit:
                keep[i] = True
                break


@njit
def _evs_on_route(F, src, dst, route, evs, keep):
    out = np.empty(MAX_ROUTE_PORTS, np.int64)
    for i in range(evs.shape[0]):
        n = ev_route(F, src, dst, evs[i], out)
        if n == route.shape[0]:
            same = True
            for k in range(n):
                if out[k] != route[k]:
                    same = False
            keep[i] = same


def _under(topo, host: int, node: int) -> bool:
    """Is `host` in the subtree below `node` (itself, if `node` is a host)?"""
    n, h = topo.node[node], topo.node[host]
    if n["kind"] == HOST:
        return host == node
    if n["tier"] == 0:
        return h["leaf"] == n["index"]
    if n["tier"] == 1 and topo.tiers == 3:
        return h["pod"] == n["pod"]
    return True


def _representative(topo, port: int, src: int) -> int:
    """One destination whose routes from `src` cross `port` exactly when any destination's do; -1 if none.

    Routes go up, then down. An up port of node u carries the packets of
    sources below u to destinations outside u's subtree, and which EVs use it
    does not depend on where outside; a down port towards node v carries
    packets to destinations below v from sources outside v's subtree, and
    likewise does not depend on which destination below v.
    """
    hpl = topo.hosts_per_leaf
    q = topo.port[port]
    if q["dir"] == DOWN:
        v = topo.peer_node(port)
        if _under(topo, src, v):
            return -1
        n = topo.node[v]
        if n["kind"] == HOST:
            return int(v)
        if n["tier"] == 0:
            return int(n["index"]) * hpl
        return int(n["pod"]) * topo.t0_per_pod * hpl  # an aggregation switch's pod
    u = int(q["node"])
    if not _under(topo, src, u):
        return -1
    n = topo.node[u]
    if n["kind"] == HOST:
        return (src + 1) % topo.n_hosts if topo.n_hosts > 1 else -1
    if n["tier"] == 0:
        return ((int(n["index"]) + 1) % topo.n_t0) * hpl if topo.n_t0 > 1 else -1
    pods = topo.n_t0 // topo.t0_per_pod  # an aggregation switch going up to the cores
    return ((int(n["pod"]) + 1) % pods) * topo.t0_per_pod * hpl if pods > 1 else -1


def evs_through(topo, port: int, src: int, dst: int | None = None) -> np.ndarray:
    """EVs whose path from `src` (to `dst`, or to any destination) leaves from `port`."""
    if not 0 <= port < topo.n_ports:
        raise UsageError(f"port = {port!r}: ports are 0..{topo.n_ports - 1}")
    src = topo._host("src", src)
    evs = topo.ev_format.all_evs()
    keep = np.zeros(evs.shape[0], np.bool_)
    if dst is None:
        rep = _representative(topo, int(port), src)
        dsts = np.array([rep] if rep >= 0 else [], np.int64)
    else:
        dsts = np.array([topo._host("dst", dst)], np.int64)
    _evs_through(topo.arrays, int(port), src, dsts, evs, keep)
    return evs[keep]


def evs_through_link(topo, port: int, src: int, dst: int | None = None) -> np.ndarray:
    """EVs crossing the link of `port` in either direction (the port or its peer)."""
    both = np.union1d(evs_through(topo, port, src, dst), evs_through(topo, int(topo.port[port]["peer"]), src, dst))
    return both.astype(np.int64)


def evs_for_route(topo, src: int, dst: int, route) -> np.ndarray:
    """EVs whose path from `src` to `dst` is exactly `route` (port ids)."""
    src, dst = topo._host("src", src), topo._host("dst", dst)
    r = np.asarray(route, np.int64)
    evs = topo.ev_format.all_evs()
    keep = np.zeros(evs.shape[0], np.bool_)
    _evs_on_route(topo.arrays, src, dst, r, evs, keep)
    return evs[keep]


def suspect_ports(topo, bad: Iterable[tuple[int, int, int]], good: Iterable[tuple[int, int, int]] = ()) -> list:
    """Ports ranked by how many bad (src, dst, ev) paths cross them, skipping ports a good path crosses.

    Returns ``[(port, count), ...]`` (highest count first): with one failed
    link, its port is first once a few EVs through it went bad.
    """
    cleared = set()
    for s, d, e in good:
        cleared.update(int(p) for p in topo.route(s, d, e))
    counts: dict[int, int] = {}
    for s, d, e in bad:
        for p in topo.route(s, d, e):
            if int(p) not in cleared:
                counts[int(p)] = counts.get(int(p), 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
