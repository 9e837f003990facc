"""The packet pool (htsim's PacketDB): rows handed out from a free list, plus the engine's RNG and trace hook.

A packet is a row index into ``E.pkt`` (engine fields) and ``E.hdr`` (its
`PKT` header row). `alloc` never fails inside a chunk: the main loop stops
and asks Python to grow the pool whenever fewer than `RESERVE` rows are free.
"""
from __future__ import annotations

import numpy as np

from mrc.emulator._jit import njit
from mrc.emulator import state as ST

RESERVE = 64  # rows that must be free before the loop handles an event


@njit(inline="always")
def alloc(E):
    """A free packet row. `pkt_new` fills its engine fields; the header row ``E.hdr[i]`` still holds
    the previous packet's values: the transport writes every field it or its peer reads (the protocol
    core starts each packet from its own zeroed template)."""
    S = E.S
    k = S[ST.S_FREE_N] - 1
    S[ST.S_FREE_N] = k
    i = np.int64(E.free[k])
    S[ST.S_INFLIGHT] += 1
    if S[ST.S_INFLIGHT] > S[ST.S_PEAK_INFLIGHT]:
        S[ST.S_PEAK_INFLIGHT] = S[ST.S_INFLIGHT]
    p = E.pkt
    p[i]["next"] = -1
    p[i]["in_port"] = -1
    p[i]["trim"] = 0
    return i


@njit(inline="always")
def free(E, i):
    S = E.S
    k = S[ST.S_FREE_N]
    E.free[k] = i
    S[ST.S_FREE_N] = k + 1
    S[ST.S_INFLIGHT] -= 1


# ---------------------------------------------------------------- RNG (xorshift64*)


@njit(inline="always")
def rand_u64(E):
    x = np.uint64(E.S[ST.S_RNG])
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    E.S[ST.S_RNG] = np.int64(x)
    return x * np.uint64(0x2545F4914F6CDD1D)


@njit(inline="always")
def rand_u01(E):
    """Uniform in [0, 1) with 53 random bits."""
    return np.float64(rand_u64(E) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


# ---------------------------------------------------------------- trace hook


@njit
def trace(E, kind, i, port, now, reason):
    """Record one packet event when tracing is on for its flow (``E.trace`` has room)."""
    n = E.S[ST.S_TRACE_N]
    if n >= E.trace.shape[0]:
        return
    f = E.pkt[i]["flow"]
    if E.cfg[0]["trace_all"] == 0 and (f < 0 or E.trace_flow[f] == 0):
        return
    r = E.trace[n]
    r["t"] = now
    r["port"] = port
    r["flow"] = f
    r["psn"] = E.hdr[i]["psn"]
    r["size"] = E.pkt[i]["size"]
    r["ev"] = E.hdr[i]["ev"]
    r["plane"] = E.pkt[i]["plane"]
    r["kind"] = kind
    r["cls"] = E.pkt[i]["cls"]
    r["reason"] = reason
    r["opcode"] = E.hdr[i]["opcode"]
    r["dscp"] = E.pkt[i]["dscp"]
    r["trim"] = E.pkt[i]["trim"]
    E.S[ST.S_TRACE_N] = n + 1


# ---------------------------------------------------------------- building packets (for transports)


@njit(inline="always")
def pkt_new(E, i, src, dst, dst_ep, flow, plane, size, cls, ecn, dscp, now):
    """Fill packet i's engine fields; the transport fills ``E.hdr[i]`` and then routes it."""
    p = E.pkt
    p[i]["src"] = src
    p[i]["dst"] = dst
    p[i]["dst_ep"] = dst_ep
    p[i]["flow"] = flow
    p[i]["plane"] = plane
    p[i]["size"] = size
    p[i]["cls"] = cls
    p[i]["ecn"] = ecn
    p[i]["dscp"] = dscp
    p[i]["fwd"] = ST.FWD_ECMP
    h = E.hdr
    h[i]["port"] = plane
    h[i]["dscp"] = dscp
    h[i]["ecn"] = ecn
    h[i]["trim"] = 0


@njit(inline="always")
def pkt_route_ecmp(E, i, sport, flow_label):
    """Forward packet i by ECMP hashing of its 5-tuple (UDP source port, flow label)."""
    p = E.pkt
    p[i]["fwd"] = ST.FWD_ECMP
    p[i]["sport"] = sport
    p[i]["flow_label"] = flow_label


@njit(inline="always")
def pkt_route_srv6(E, i, hi, lo):
    """Forward packet i by SRv6 uSID shift-and-lookup on the carrier (hi, lo) (`paths.ev_carrier`)."""
    p = E.pkt
    p[i]["fwd"] = ST.FWD_SRV6
    p[i]["hi"] = hi
    p[i]["lo"] = lo


@njit(inline="always")
def pkt_route_ar(E, i, sport, flow_label):
    """Forward packet i by switch adaptive routing: each switch sends it up its least-loaded usable
    uplink (`forward`); downward the path is unique. The 5-tuple only breaks ties in ECMP repair."""
    p = E.pkt
    p[i]["fwd"] = ST.FWD_AR
    p[i]["sport"] = sport
    p[i]["flow_label"] = flow_label
