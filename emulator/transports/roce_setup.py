"""Python side of `roce-ecmp`: parameters (documented defaults), endpoints, paths, ideal FCTs.

Parameters (``[transport]`` keys; sources in brackets):

===================  ===============  =============================================
key                  default          meaning
===================  ===============  =============================================
mtu                  4096             payload bytes per packet (RoCE path MTU)
lossless             true             PFC on the fabric (lossless RoCE, as deployed)
forwarding           "ecmp"           "ecmp": 5-tuple hashing; "srv6": one static
                                      SRv6 path per QP
ack_every            1                ACK every N packets (ns-3 HPCC L2_ACK_INTERVAL)
rto_us               1000             first retransmission timeout (ours: in the order
                                      of ConnectX adaptive retransmission's first
                                      retries, far below the verbs timeout NCCL uses)
rto_max_us           65536            the timeout doubles per timeout without progress
                                      up to this (ConnectX adaptive retransmission
                                      doubles within its ranges; 65.5 ms ~ the common
                                      IBTA local ACK timeout 14 = 4.096 us x 2^14)
retry_cnt            7                timeouts without progress before the QP errors
                                      (IBTA maximum)
window               0                max PSNs in flight (0: no limit, RoCE default)
dcqcn                true             DCQCN rate control (and ECN-capable packets)
dcqcn_profile        "tuned"          a published DCQCN parameter set that fills
                                      every dcqcn_* key and cnp_interval_us not
                                      given (`dcqcn_profiles`, each value cited):
                                      tuned, connectx, hpcc, paper
dcqcn_g ...          profile          alpha gain, alpha / decrease / increase
                                      periods, F, byte counter, R_AI, R_HAI, min
                                      rate, initial alpha, target clamping, CNP
                                      interval (docs/emulator.md)
trimmable            false            mark data DSCP_TRIMMABLE instead of DSCP_NO_TRIM
                                      (RoCE receivers discard trimmed packets: for
                                      experiments with trimming switches)
qps                  1                QP pairs per connection (a flow, or a
                                      collective channel's connection): each
                                      message split over them as NCCL does with
                                      NCCL_IB_QPS_PER_CONNECTION = qps and
                                      NCCL_IB_SPLIT_DATA_ON_QPS = 1 (`roce`);
                                      each QP its own UDP source port, so its own
                                      ECMP hash (QP scaling, Meta's RoCE
                                      deployment, SIGCOMM'24)
===================  ===============  =============================================

With DCQCN the transport asks the switches for the DCQCN marking slope
``ecn_pmax = 0.2`` unless the scenario sets it (`DCQCN_ECN_PMAX`).

Each QP's UDP source port is drawn from the ephemeral range 49152-65535 and its
plane (NIC port) uniformly, from the run's seed; the flow label is 0. The QPs
of one connection get distinct source ports (a draw that repeats one within its
connection is drawn again), so N QPs are N 5-tuples. The responder's ACKs use
their own source port (the reverse direction is its own 5-tuple). Endpoints:
QP k of pair (connection) g is requester ``2 (g qps + k)`` and responder
``2 (g qps + k) + 1``; a flow's ``ep`` is its connection's first requester.
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.emulator import state as ST
from mrc.emulator.keys import Table
from mrc.emulator.transports import dcqcn_profiles, pairs, roce
from mrc.emulator.transports.dispatch import TP_ROCE
from mrc.fabric.ecmp import ecmp_route
from mrc.fabric.paths import MAX_ROUTE_PORTS, ev_carrier, ev_route
from mrc.units import serialization_ps

NAME = "roce-ecmp"
DESCRIPTION = "RoCEv2 RC: one ECMP path per QP, go-back-N, DCQCN; lossless (PFC) or lossy"


def parse(t: Table, topo) -> dict:
    g = topo.spec.link_gbps
    profile = t.choice("dcqcn_profile", tuple(dcqcn_profiles.PROFILES), "tuned")
    d = dcqcn_profiles.defaults(profile, g)
    p = dict(
        mtu=t.int("mtu", 4096, lo=64, hi=65536),
        lossless=t.bool("lossless", True),
        forwarding=t.choice("forwarding", ("ecmp", "srv6"), "ecmp"),
        ack_every=t.int("ack_every", 1, lo=1),
        rto_us=t.num("rto_us", 1000.0, lo=0, lo_open=True),
        rto_max_us=t.num("rto_max_us", 65536.0, lo=0, lo_open=True),
        retry_cnt=t.int("retry_cnt", 7, lo=0, hi=7),
        window=t.int("window", 0, lo=0),
        dcqcn=t.bool("dcqcn", True),
        dcqcn_profile=profile,
        dcqcn_g=t.num("dcqcn_g", d["dcqcn_g"], lo=0, hi=1, lo_open=True),
        dcqcn_alpha_us=t.num("dcqcn_alpha_us", d["dcqcn_alpha_us"], lo=0, lo_open=True),
        dcqcn_dec_us=t.num("dcqcn_dec_us", d["dcqcn_dec_us"], lo=0),
        dcqcn_inc_us=t.num("dcqcn_inc_us", d["dcqcn_inc_us"], lo=0, lo_open=True),
        dcqcn_f=t.int("dcqcn_f", d["dcqcn_f"], lo=0),
        dcqcn_bc_bytes=t.int("dcqcn_bc_bytes", d["dcqcn_bc_bytes"], lo=0),
        dcqcn_rai_mbps=t.num("dcqcn_rai_mbps", d["dcqcn_rai_mbps"], lo=0),
        dcqcn_rhai_mbps=t.num("dcqcn_rhai_mbps", d["dcqcn_rhai_mbps"], lo=0),
        dcqcn_min_rate_mbps=t.num("dcqcn_min_rate_mbps", d["dcqcn_min_rate_mbps"], lo=0, lo_open=True),
        dcqcn_alpha_init=t.num("dcqcn_alpha_init", d["dcqcn_alpha_init"], lo=0, hi=1),
        dcqcn_clamp_tgt_rate=t.bool("dcqcn_clamp_tgt_rate", d["dcqcn_clamp_tgt_rate"]),
        dcqcn_clamp_after_time_inc=t.bool("dcqcn_clamp_after_time_inc", d["dcqcn_clamp_after_time_inc"]),
        cnp_interval_us=t.num("cnp_interval_us", d["cnp_interval_us"], lo=0),
        trimmable=t.bool("trimmable", False),
        qps=t.int("qps", 1, lo=1, hi=MAX_QPS),
    )
    if p["rto_max_us"] < p["rto_us"]:
        from mrc.errors import ConfigError
        raise ConfigError(t.key("rto_max_us"), p["rto_max_us"], f"below rto_us = {p['rto_us']:g}")
    if p["dcqcn_min_rate_mbps"] * 1e6 > g * 1e9:
        from mrc.errors import ConfigError
        raise ConfigError(t.key("dcqcn_min_rate_mbps"), p["dcqcn_min_rate_mbps"], f"above the {g:g} Gb/s link rate")
    return p


# QPs per connection at most: NCCL caps NCCL_IB_QPS_PER_CONNECTION at NCCL_IB_MAX_QPS = 128 (net_ib.cc)
MAX_QPS = 128


def distinct_ports(rng: np.random.Generator, groups: int, per: int) -> np.ndarray:
    """`groups` x `per` UDP source ports from the ephemeral range, distinct within each group of `per` (drawn
    again where a group repeats one); with per = 1 exactly ``rng.integers(49152, 65536, groups)``."""
    ports = rng.integers(49152, 65536, groups * per)
    if per == 1:
        return ports
    g = ports.reshape(groups, per)
    while True:
        srt = np.sort(g, axis=1)
        bad = np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))
        if not len(bad):
            return g.ravel()
        for row in bad:  # redraw the repeats of each such group (rare: 16 QPs repeat with p ~ 0.7 %)
            seen = set()
            for k in range(per):
                while int(g[row, k]) in seen:
                    g[row, k] = rng.integers(49152, 65536)
                seen.add(int(g[row, k]))


def split_sizes(sizes: np.ndarray, nqp: int) -> np.ndarray:
    """(flows, nqp) bytes each QP carries of each message: `roce.part_bytes` for every (size, k), vectorised."""
    sizes = np.asarray(sizes, np.int64)
    if nqp == 1:
        return sizes.reshape(-1, 1)
    chunk = ((sizes + nqp - 1) // nqp + 127) // 128 * 128
    left = sizes[:, None] - np.arange(nqp)[None, :] * chunk[:, None]
    return np.clip(left, 0, chunk[:, None])


# WRED marking probability at Kmax for the RoCE traffic class with DCQCN: 0.2, as HPCC's ns-3 (PMAX_MAP) and
# ConWeave's set it at 100G (the DCQCN paper used 1 % with 40G switches whose PFC thresholds were far above
# Kmax; the fabric presets' 1.0 is the UET/NSCC convention). Kmin / Kmax stay the fabric's.
DCQCN_ECN_PMAX = 0.2


def switch_defaults(p: dict) -> dict:
    """The fabric settings this transport expects unless the scenario sets them."""
    d = {"pfc": p["lossless"], "ecn_last_hop": True, "trim": False}
    if p["dcqcn"]:
        d["ecn_pmax"] = DCQCN_ECN_PMAX
    return d


def trim_headers(p: dict) -> int:
    """Bytes (from the first IP header) of the largest header stack of a packet this transport marks trimmable:
    IPv6, UDP, BTH and RETH of a WRITE FIRST / ONLY (no ICRC: a trimmed packet has none); 0 when its data is
    marked not trimmable (the default)."""
    from mrc.wire.constants import ICRC_LEN

    return roce.HDR_BYTES - ICRC_LEN + roce.RETH_BYTES if p["trimmable"] else 0


def check_switch(p: dict, sw) -> None:
    from mrc.errors import ConfigError
    if p["lossless"] and not sw.pfc:
        raise ConfigError("switch.pfc", False, "transport.lossless = true needs PFC on the fabric")
    if not p["lossless"] and sw.pfc:
        raise ConfigError("switch.pfc", True, "transport.lossless = false: a lossy RoCE fabric has no PFC")


@njit
def _paths(F, src, dst, plane, sport, fwd, ev, sizes, mtu, framing, lat, ideal, hi, lo):
    """Per QP: the SRv6 carrier (srv6) and the ideal FCT over its path (see docs/emulator.md)."""
    out = np.empty(MAX_ROUTE_PORTS, np.int64)
    for f in range(src.shape[0]):
        if fwd == ST.FWD_SRV6:
            n = ev_route(F, src[f], dst[f], ev[f], out)
            hi[f], lo[f] = ev_carrier(F, src[f], dst[f], ev[f])
        else:
            n = ecmp_route(F, src[f], dst[f], plane[f], sport[f], 0, 17, out)
        size = sizes[f]
        npk = (size + mtu - 1) // mtu
        last = size - mtu * (npk - 1)
        rate0 = F.port[out[0]]["rate"]
        if npk == 1:
            first = roce.HDR_BYTES + roce.RETH_BYTES + last
            t = serialization_ps(first + framing, rate0)
            big = first
        else:
            first = roce.HDR_BYTES + roce.RETH_BYTES + mtu
            mid = roce.HDR_BYTES + mtu
            t = serialization_ps(first + framing, rate0) + (npk - 2) * serialization_ps(mid + framing, rate0)
            t += serialization_ps(roce.HDR_BYTES + last + framing, rate0)
            big = first
        for k in range(n):
            q = out[k]
            r = F.port[q]["rate"]
            d = F.port[q]["delay"]
            t += 2 * d + serialization_ps(roce.ACK_BYTES + framing, r)
            if k < n - 1:
                t += 2 * lat
            if k > 0:
                t += serialization_ps(big + framing, r)
        ideal[f] = t


def setup(topo, flows: np.ndarray, p: dict, sw, rng: np.random.Generator, cfg_switch_latency_ps: int):
    """Endpoints (2 per QP pair; ``qps`` pairs per flow or connection, `pairs`), the ROCE table, its parameter
    row, and each flow's ideal FCT."""
    nf = len(flows)
    pair, firsts = pairs.of_flows(flows)
    npair = len(firsts)
    N = p["qps"]
    nq = npair * N  # QP pairs: QP k of connection g is number g * N + k
    P = topo.n_planes
    ep = np.zeros(2 * nq, ST.EP)
    ep["timer_at"] = ST.NEVER
    ep["tcode"] = TP_ROCE
    R = np.zeros(2 * nq, roce.ROCE)
    src = np.repeat(flows["src"].astype(np.int64)[firsts], N)  # per QP pair
    dst = np.repeat(flows["dst"].astype(np.int64)[firsts], N)
    plane = rng.integers(0, P, nq) if P > 1 else np.zeros(nq, np.int64)
    sport_req = distinct_ports(rng, npair, N)
    sport_resp = distinct_ports(rng, npair, N)
    fwd = ST.FWD_SRV6 if p["forwarding"] == "srv6" else ST.FWD_ECMP
    ev = np.zeros(nq, np.int64)
    if fwd == ST.FWD_SRV6:
        fmt = topo.ev_format
        choices = [rng.integers(0, f.count, nq) for f in fmt.fields[1:]]
        ev = np.array([topo.make_ev(int(plane[k]), *(int(c[k]) for c in choices)) for k in range(nq)], np.int64)
    req = np.arange(0, 2 * nq, 2)
    resp = req + 1
    lead = np.repeat(req[::N], N)  # each QP's connection's first requester
    ep["host"][req], ep["host"][resp] = src, dst
    ep["peer"][req], ep["peer"][resp] = resp, req
    # a flow's own pairs name it; a connection's name no flow until its first message starts
    own = np.repeat(np.where(flows["conn"][firsts] < 0, firsts, -1), N)
    ep["flow"][req] = ep["flow"][resp] = own
    ep["planes"][req] = ep["planes"][resp] = 1 << plane
    flows["ep"] = req[::N][pair]
    R["role"][req], R["role"][resp] = roce.ROLE_REQ, roce.ROLE_RESP
    R["flow"][req] = R["flow"][resp] = own
    R["peer"][req], R["peer"][resp] = resp, req
    R["grp"][req] = R["grp"][resp] = lead
    R["nqp"] = N
    R["host"][req], R["host"][resp] = src, dst
    R["peer_host"][req], R["peer_host"][resp] = dst, src
    R["plane"][req] = R["plane"][resp] = plane
    R["sport"][req], R["sport"][resp] = sport_req, sport_resp
    R["ev"][req] = R["ev"][resp] = ev
    R["rto_at"] = ST.NEVER
    R["inc_at"] = ST.NEVER
    R["last_cnp"] = -1
    F = topo.arrays
    sizes = flows["size"].astype(np.int64)
    # each flow's FCT alone over its QPs' paths: per (flow, QP) the part that QP carries, then the slowest part
    # (parts on one NIC port share it; that is not modelled here, so with several QPs it is a lower bound)
    qp_of = (pair[:, None] * N + np.arange(N)[None, :]).ravel()  # per (flow, k): its QP pair
    part = split_sizes(sizes, N).ravel()
    alone = np.zeros(nf * N, np.int64)
    hi = np.zeros(nf * N, np.uint64)
    lo = np.zeros(nf * N, np.uint64)
    _paths(F, src[qp_of], dst[qp_of], plane[qp_of].astype(np.int64), sport_req[qp_of].astype(np.int64), fwd,
           ev[qp_of], part if N == 1 else np.maximum(part, 1), p["mtu"], sw.framing_bytes, cfg_switch_latency_ps,
           alone, hi, lo)
    ideal = alone if N == 1 else np.where(part > 0, alone, 0).reshape(nf, N).max(axis=1)
    if fwd == ST.FWD_SRV6:
        hi_r = np.zeros(nq, np.uint64)
        lo_r = np.zeros(nq, np.uint64)
        _paths(F, dst, src, plane.astype(np.int64), sport_resp.astype(np.int64), fwd, ev,
               np.ones(nq, np.int64), p["mtu"], sw.framing_bytes, 0, np.zeros(nq, np.int64), hi_r, lo_r)
        at = np.repeat(firsts, N) * N + np.tile(np.arange(N), npair)  # each QP pair's carrier, from its first flow
        R["hi"][req], R["lo"][req], R["hi"][resp], R["lo"][resp] = hi[at], lo[at], hi_r, lo_r
    rp = np.zeros(1, roce.RP)
    line = int(topo.port[0]["rate"])
    rp[0] = np.array((
        p["mtu"], p["ack_every"], p["rto_ps"], p["rto_max_ps"],
        p["retry_cnt"], p["window"], int(p["dcqcn"]),
        line, int(p["dcqcn_min_rate_mbps"] * 1e6), int(p["dcqcn_rai_mbps"] * 1e6), int(p["dcqcn_rhai_mbps"] * 1e6),
        p["dcqcn_g"], p["dcqcn_alpha_init"], max(1, p["dcqcn_alpha_ps"]),
        p["dcqcn_dec_ps"], p["dcqcn_inc_ps"], p["dcqcn_f"], p["dcqcn_bc_bytes"],
        int(p["dcqcn_clamp_tgt_rate"]), int(p["dcqcn_clamp_after_time_inc"]), p["cnp_interval_ps"],
        sw.framing_bytes, sw.dscp.data if p["trimmable"] else sw.dscp.no_trim, sw.dscp.control, fwd,
    ), dtype=roce.RP)
    return ep, {"roce": R, "roce_p": rp}, ideal


def memory(topo, flows: np.ndarray, p: dict) -> int:
    """Bytes `setup` allocates for these flows (nothing is allocated here; `emulator.memory` adds it to
    the run's estimate): two endpoints and two ROCE rows per QP pair, and a dozen per-flow columns."""
    return pairs.count(flows) * p.get("qps", 1) * 2 * (ST.EP.itemsize + roce.ROCE.itemsize) + len(flows) * 12 * 8


def flow_series(T, E, flows: list, t: int) -> dict:
    """Per flow (its connection's requester QPs, summed over them), at time t: DCQCN current and target rate
    (Gb/s), alpha (as of t, computed without touching the lazily updated state; the mean over the QPs whose
    rate limiter is on), CNPs received, rate cuts, bytes acknowledged."""
    R = T.roce
    rp = T.roce_p[0]
    out = {k: [] for k in ("rate_gbps", "target_gbps", "alpha", "cnps", "cuts", "acked_bytes")}
    for f in flows:
        lead = int(E.flow[f]["ep"])
        rows = [R[lead + 2 * k] for k in range(int(R[lead]["nqp"]))]
        alphas = []
        for r in rows:
            a = float(r["alpha"])
            if r["cc_on"]:
                k = (t - int(r["alpha_t"])) // int(rp["alpha_ps"])
                if k > 0:
                    g = float(rp["g"])
                    a = (1 - g) * a + (g if r["alpha_cnp"] else 0.0)
                    a *= (1 - g) ** (k - 1)
                alphas.append(a)
        out["rate_gbps"].append(sum(int(r["rate"]) for r in rows) / 1e9)
        out["target_gbps"].append(sum(int(r["target"]) for r in rows) / 1e9)
        out["alpha"].append(sum(alphas) / len(alphas) if alphas else float("nan"))  # no rate limiter yet
        out["cnps"].append(sum(int(r["cnps"]) for r in rows))
        out["cuts"].append(sum(int(r["cuts"]) for r in rows))
        out["acked_bytes"].append(sum(min(max(int(r["snd_una"]) - int(r["base"]), 0) * rp["mtu"], int(r["size"]))
                                      for r in rows))
    return out
