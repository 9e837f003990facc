"""The ideal FCT of a flow: the fabric's best, the same for every transport.

A flow's slowdown is its FCT divided by this one number, so slowdowns compare
across transports (a transport that uses one plane of four does not get a
four times smaller yardstick). For a flow of ``size`` payload bytes from
``src`` to ``dst``::

    ideal = size x 8 / R  +  base RTT of the shortest path

- ``R``: all the host's NIC bandwidth: the smaller of the sum of the source's
  NIC port rates and the sum of the destination's T0 downlink rates, over every
  plane (payload bytes only: a transport's headers are its own cost);
- base RTT: over the plane whose minimal path is quickest, propagation both
  ways, the switch latency of every switch both ways, and the store and
  forward of the largest packet (``min(size, switch.mtu_bytes)`` bytes, no
  headers) on every hop after the NIC; the acknowledgement is taken as free.

No transport beats it: a lone flow's slowdown is 1 plus its transport's header
and acknowledgement overheads (and ``n_planes`` times that for a transport that
uses one plane). The transport's own figure, the FCT of the flow alone on its
own path(s) with its headers (`state.FLOW` ``alone``), stays in ``flows.csv``
as ``alone_fct_us``.
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.fabric.paths import MAX_ROUTE_PORTS, ev_route
from mrc.units import serialization_ps


@njit
def _best(F, src, dst, sizes, plane_evs, mtu, lat, out_ideal):
    route = np.empty(MAX_ROUTE_PORTS, np.int64)
    for f in range(src.shape[0]):
        size = sizes[f]
        pkt = min(size, mtu)
        r_src = 0
        r_dst = 0
        rtt = np.int64(-1)
        for p in range(plane_evs.shape[0]):
            n = ev_route(F, src[f], dst[f], plane_evs[p], route)
            r_src += F.port[route[0]]["rate"]
            r_dst += F.port[route[n - 1]]["rate"]
            t = np.int64(0)
            for h in range(n):
                q = route[h]
                t += 2 * F.port[q]["delay"]
                if h < n - 1:
                    t += 2 * lat
                if h > 0:
                    t += serialization_ps(pkt, F.port[q]["rate"])
            if rtt < 0 or t < rtt:
                rtt = t
        out_ideal[f] = serialization_ps(size, min(r_src, r_dst)) + rtt


def fabric_best(topo, flows: np.ndarray, mtu_bytes: int, switch_latency_ps: int) -> np.ndarray:
    """The ideal FCT (ps) of every flow (`state.FLOW` rows) on `topo` (see the module docstring)."""
    out = np.zeros(len(flows), np.int64)
    if len(flows):
        zeros = (0,) * (len(topo.ev_format.fields) - 1)
        evs = np.array([topo.make_ev(p, *zeros) for p in range(topo.n_planes)], np.int64)
        # once per distinct (source, destination, size): a job's iterations repeat their messages (the 131k
        # training job: 393,216 flows, 131,072 distinct)
        src, dst = flows["src"].astype(np.int64), flows["dst"].astype(np.int64)
        size = flows["size"].astype(np.int64)
        pair = src * topo.n_hosts + dst
        order = np.lexsort((size, pair))
        pair_o, size_o = pair[order], size[order]
        new = np.ones(len(order), bool)
        new[1:] = (pair_o[1:] != pair_o[:-1]) | (size_o[1:] != size_o[:-1])
        first = order[new]
        best = np.zeros(len(first), np.int64)
        _best(topo.arrays, src[first], dst[first], size[first], evs, int(mtu_bytes), int(switch_latency_ps), best)
        out[order] = best[np.cumsum(new) - 1]
    return out
