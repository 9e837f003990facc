"""ECMP: a per-switch seeded hash over the 5-tuple picks among equal-cost next hops.

The 5-tuple is (source address, destination address, UDP source port, IPv6
flow label, protocol): the addresses are the hosts' addresses on the plane
(`address.host_address`), so in the STEV / UDP EV modes the EV (carried in the
source port and flow label) steers the hash, as it does in real switches
(mrc-public-notes 5: "ECMP (hash on EV fields)").

The hash is MurmurHash3's 32-bit mixing (Appleby, public domain algorithm)
over ten 32-bit words, seeded per switch (`build.seeds`: splitmix64 of the
fabric's `ecmp_seed` and the node id) so that switches choose independently
(no hash polarisation). All arithmetic is masked 32-bit in int64, which gives
the same numbers compiled and under NUMBA_DISABLE_JIT. A next hop is picked
as ``(hash * n) >> 32`` among the n equal-cost uplinks; going down there is
one choice.
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.fabric.address import HOST_IID, HOST_PREFIX
from mrc.fabric.paths import ROUTE_BAD_ARGS, down_port, nic_port, peer_node, up_port

M32 = 0xFFFFFFFF
_C1 = 0xCC9E2D51
_C2 = 0x1B873593


@njit(inline="always")
def _rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & M32


@njit(inline="always")
def _round(h, k):
    k = (k * _C1) & M32
    k = _rotl(k, 15)
    k = (k * _C2) & M32
    h ^= k
    h = _rotl(h, 13)
    return (h * 5 + 0xE6546B64) & M32


@njit(inline="always")
def _fmix(h):
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    return h ^ (h >> 16)


@njit
def ecmp_hash(seed, src_words, dst_words, sport, flow_label, proto):
    """32-bit hash of a 5-tuple; addresses as four big-endian 32-bit words each."""
    h = int(seed) & M32  # int(): Python ints under NUMBA_DISABLE_JIT, so no numpy overflow warnings
    for i in range(4):
        h = _round(h, int(src_words[i]) & M32)
    for i in range(4):
        h = _round(h, int(dst_words[i]) & M32)
    h = _round(h, ((int(sport) & 0xFFFF) << 16) | (int(proto) & 0xFF))
    h = _round(h, int(flow_label) & 0xFFFFF)
    return _fmix(h ^ 40)


@njit(inline="always")
def host_words(F, host, plane):
    """The host's address on `plane` as four 32-bit words: fd00:<plane>:<t0>:<d>::1."""
    h = F.node[host]
    return ((HOST_PREFIX << 16) | plane, (np.int64(h["leaf"]) << 16) | h["pos"], 0, HOST_IID)


@njit(inline="always")
def ecmp_pick(F, node, src, dst, plane, sport, flow_label, proto, n):
    """Index in [0, n) this switch's hash gives the 5-tuple."""
    h = ecmp_hash(F.node[node]["seed"], host_words(F, src, plane), host_words(F, dst, plane), sport, flow_label, proto)
    return (h * int(n)) >> 32


@njit
def ecmp_next_port(F, node, src, dst, plane, sport, flow_label, proto):
    """Egress port `node` uses for the 5-tuple towards host `dst` (a host: its NIC port on `plane`)."""
    d = F.node[dst]
    me = F.node[node]
    if me["kind"] == 0:
        return nic_port(F, node, plane)
    if me["tier"] == 0:
        if me["index"] == d["leaf"]:
            return down_port(F, node, d["pos"])
    elif me["tier"] == 1:
        if F.tiers == 2:
            return down_port(F, node, d["leaf"])
        if me["pod"] == d["pod"]:
            return down_port(F, node, d["leaf"] - d["pod"] * F.t0_per_pod)
    else:
        return down_port(F, node, d["pod"])
    return up_port(F, node, ecmp_pick(F, node, src, dst, plane, sport, flow_label, proto, me["n_up"]))


@njit
def ecmp_route(F, src, dst, plane, sport, flow_label, proto, out):
    """Ports the 5-tuple's packets leave from, src NIC first (like `paths.ev_route`)."""
    if src < 0 or src >= F.n_hosts or dst < 0 or dst >= F.n_hosts or plane < 0 or plane >= F.n_planes:
        return ROUTE_BAD_ARGS
    if out.shape[0] < 2 * F.tiers:
        return ROUTE_BAD_ARGS
    port = nic_port(F, src, plane)
    out[0] = port
    n = 1
    node = peer_node(F, port)
    while F.node[node]["kind"] != 0:
        port = ecmp_next_port(F, node, src, dst, plane, sport, flow_label, proto)
        out[n] = port
        n += 1
        node = peer_node(F, port)
    return n
