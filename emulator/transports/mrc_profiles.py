"""EV profiles of the MRC transports, the ECMP-hashed pin of `mrc-1ev`, per-QP seeds, the default MPR.

For each (source, destination) host pair the controller generates one profile
from the fabric's EV format (`mrc.fabric.evformat`): per plane an equal share
of ``ev_count``, distinct hop choices drawn from the run's seed (pairs under
one T0 have one path per plane, their choice fields zero as `srv6_profile`
requires). `mrc-1ev` then puts, for each QP, the EV of its 5-tuple's ECMP path
first in its plane's part and pins it (`ecmp_pin`).
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.fabric.ecmp import ecmp_route
from mrc.fabric.paths import MAX_ROUTE_PORTS


@njit
def _mix(z):
    """splitmix64 finaliser (uint64)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit
def _choices(F, src, dst):
    """Distinct paths per plane between two hosts (1 under one T0)."""
    hs, hd = F.node[src], F.node[dst]
    if hs["leaf"] == hd["leaf"]:
        return 1
    if F.tiers == 2:
        return F.ev[1]["count"]
    if hs["pod"] == hd["pod"]:
        return F.ev[1]["count"]
    return F.ev[1]["count"] * F.ev[2]["count"]


@njit
def _ev_of(F, src, dst, plane, c):
    """The EV of hop choice number `c` on `plane` for (src, dst) (fields beyond the pair's path zero)."""
    ev = np.int64(plane) << F.ev[0]["shift"]
    hs, hd = F.node[src], F.node[dst]
    if hs["leaf"] == hd["leaf"]:
        return ev
    if F.tiers == 2 or hs["pod"] == hd["pod"]:
        return ev | (np.int64(c) << F.ev[1]["shift"])
    n2 = F.ev[2]["count"]
    return ev | (np.int64(c // n2) << F.ev[1]["shift"]) | (np.int64(c % n2) << F.ev[2]["shift"])


@njit
def profiles(F, src, dst, ev_count, seed, ev_out, plane_out, n_out, one_per_plane, state_out, good, unused):
    """GEN-style profiles: per QP (src, dst) an equal share of ev_count per plane, distinct choices; a QP's
    EVs get state `good`, its slots after them `unused` (the same pass: at 131k hosts the EV table is 4.3 GB)."""
    P = F.n_planes
    scratch = np.empty(max(F.ev[1]["count"] * max(F.ev[2]["count"], 1), 1), np.int64)
    for j in range(scratch.shape[0]):
        scratch[j] = j
    drawn = np.empty(scratch.shape[0], np.int64)
    for i in range(src.shape[0]):
        s, d = src[i], dst[i]
        nc = _choices(F, s, d)
        x = _mix(np.uint64(seed) ^ (np.uint64(s) * np.uint64(0x9E3779B97F4A7C15)) ^
                 (np.uint64(d) * np.uint64(0xD1B54A32D192ED03))) | np.uint64(1)
        k = 0
        for p in range(P):
            share = 1 if one_per_plane else ev_count // P + (1 if p < ev_count % P else 0)
            take = min(max(share, 1), nc)
            for j in range(take):  # partial Fisher-Yates with xorshift64* over the identity 0 .. nc - 1
                x ^= x >> np.uint64(12)
                x ^= x << np.uint64(25)
                x ^= x >> np.uint64(27)
                r = j + np.int64((x * np.uint64(0x2545F4914F6CDD1D)) % np.uint64(nc - j))
                drawn[j] = r
                t = scratch[j]
                scratch[j] = scratch[r]
                scratch[r] = t
                ev_out[i, k] = _ev_of(F, s, d, p, scratch[j])
                plane_out[i, k] = p
                k += 1
            for j in range(take - 1, -1, -1):  # undo the swaps: the identity again, without rewriting all nc
                r = drawn[j]
                t = scratch[j]
                scratch[j] = scratch[r]
                scratch[r] = t
        n_out[i] = k
        for j in range(state_out.shape[1]):
            state_out[i, j] = good if j < k else unused


@njit
def hashed_profiles(F, n_qp, ev_count, seed, ev_out, plane_out, n_out, state_out, good, unused):
    """Profiles of hashed entropies (``entropy = "hashed"``): per QP, ``ev_count`` entropies spread evenly over
    the planes; on each plane a random base drawn per QP (from the run's seed and the QP's index) with its low
    bits replaced by 0 .. share - 1, as htsim's UecMpOblivious builds its entropies (random upper bits, the path
    index in the low ones). An EV is the plane (the EV format's plane field) above the entropy; the switches
    hash the whole of it (`mrcctl.route_ev`). A QP's EVs get state `good`, its slots after them `unused`."""
    P = F.n_planes
    shift = F.ev[0]["shift"]  # the plane field's position: the entropy is every bit below it
    emask = (np.int64(1) << shift) - 1
    for i in range(n_qp):
        x = _mix(np.uint64(seed) + np.uint64(i + 1) * np.uint64(0xD6E8FEB86659FD93)) | np.uint64(1)
        k = 0
        for p in range(P):
            share = ev_count // P + (1 if p < ev_count % P else 0)
            share = max(share, 1)
            low = np.int64(1)
            while low < share:
                low <<= 1
            x ^= x >> np.uint64(12)
            x ^= x << np.uint64(25)
            x ^= x >> np.uint64(27)
            base = np.int64((x * np.uint64(0x2545F4914F6CDD1D)) >> np.uint64(16)) & emask & ~(low - 1)
            for j in range(share):
                ev_out[i, k] = (np.int64(p) << shift) | base | j
                plane_out[i, k] = p
                k += 1
        n_out[i] = k
        for j in range(state_out.shape[1]):
            state_out[i, j] = good if j < k else unused


def rdma_udp_sport(lqpn, rqpn):
    """RoCEv2 UDP source port of a QP pair: Linux's rdma_calc_flow_label then
    rdma_flow_label_to_udp_sport (include/rdma/ib_verbs.h), vectorised."""
    v = np.asarray(lqpn, np.int64) * np.asarray(rqpn, np.int64)
    fl = (v ^ (v >> 20)) & 0xFFFFF
    return ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)) | 0xC000


@njit
def ecmp_pin(F, src, dst, plane, sport, ev_out, plane_out, n_out, pin_out):
    """mrc-1ev: each QP's EV is the path ECMP hashing gives its 5-tuple (`mrc.fabric.ecmp.ecmp_route`:
    the plane drawn per QP from the run's seed, the UDP source port from the QP numbers as RoCE NICs
    derive it (`rdma_udp_sport`), flow label 0). The EV is
    put first in its plane's part of the profile (replacing that slot unless already present) and
    its slot is the QP's pin (``ev_pin``)."""
    out = np.empty(MAX_ROUTE_PORTS, np.int64)
    for i in range(src.shape[0]):
        s, d, p = src[i], dst[i], plane[i]
        n = ecmp_route(F, s, d, p, sport[i], 0, 17, out)
        ev = np.int64(p) << F.ev[0]["shift"]
        if n >= 4:
            t0 = F.port[out[1]]["node"]
            a = out[1] - (F.node[t0]["port_start"] + F.node[t0]["n_down"])
            ev |= np.int64(a) << F.ev[1]["shift"]
            if n == 6:
                t1 = F.port[out[2]]["node"]
                c = out[2] - (F.node[t1]["port_start"] + F.node[t1]["n_down"])
                ev |= np.int64(c) << F.ev[2]["shift"]
        first = -1
        slot = -1
        for k in range(n_out[i]):
            if plane_out[i, k] == p:
                if first < 0:
                    first = k
                if ev_out[i, k] == ev:
                    slot = k
        if slot < 0:
            slot = first
            ev_out[i, slot] = ev
        pin_out[i] = slot


@njit
def qp_rng(seed, n, out):
    """Each QP's own generator state: non-zero 32-bit values from the run's seed."""
    for i in range(n):
        z = _mix(np.uint64(seed) + np.uint64(i + 1) * np.uint64(0x9E3779B97F4A7C15))
        v = np.int64(z & np.uint64(0xFFFFFFFF))
        out[i] = v if v != 0 else 0x6C8E9CF5


def auto_mpr(max_window_bytes: int, mtu: int) -> int:
    """Default MPR: room for twice the QP's largest window in PSNs (holes left by losses), in units of
    128, at most 8 (the OCP example). A QP never has more than its window in flight, so a larger MPR
    only costs table memory (the TX/RX rings are MPR x 128 entries per QP)."""
    pkts = -(-max_window_bytes // mtu)
    return max(1, min(8, -(-2 * pkts // 128)))


def profile_sizes(topo, p: dict) -> int:
    """EVs per QP at most (the profile size for the pairs with the most paths; with hashed entropy every QP's
    ``ev_count`` = ``paths``, rounded up to a multiple of the planes)."""
    if p.get("entropy") == "hashed":
        return topo.n_planes * max(1, -(-p["ev_count"] // topo.n_planes))
    fa = topo.arrays
    most = int(fa.ev[1]["count"]) * (int(fa.ev[2]["count"]) if fa.tiers == 3 else 1)
    per_plane = 1 if p["forwarding"] == "ar" else -(-p["ev_count"] // topo.n_planes)
    return topo.n_planes * max(1, min(per_plane, most))
