"""Python side of the MRC transports: parameters, EV profiles, the fabric's CoreTables, ideal FCTs.

Five transports share the MRC core (`mrcqp`, `mrcctl`) and differ in the EV
selection policy of their QPs (`mrc.core.evpolicy`) and in how switches
forward:

===========  ==============  ============  ========================================================
name         ev_policy       forwarding    what it isolates
===========  ==============  ============  ========================================================
``mrc``      MRC             SRv6 uSID     MRC as specified: spraying over 100s of paths, path health
``mrc-1ev``  ONE             SRv6 uSID     one path per QP (ECMP-like): what spraying buys
``spray``    OBLIVIOUS       SRv6 uSID     oblivious spraying, no path health: what health buys
``reps``     REPS            SRv6 uSID     REPS' recycling of good EVs instead of MRC's health
``ar``       OBLIVIOUS, one  adaptive      switch adaptive routing (least-loaded uplink per packet,
             EV per plane    routing       Spectrum-X style) under a reordering-tolerant transport
===========  ==============  ============  ========================================================

Parameters (``[transport]`` keys; defaults and sources):

=======================  ==========================  ================================================
key                      default                     meaning / source
=======================  ==========================  ================================================
ev_policy                per transport               any registered policy (`evpolicy.NAMES`: "MRC",
                                                     "ONE", "OBLIVIOUS", "REPS", "P2C"; docs/protocol.md)
entropy                  "source-routed"             how an EV becomes a path: "source-routed" (the EV's
                                                     SRv6 carrier, one distinct path per EV, as MRC's
                                                     switches do) or "hashed" (the EV rides in the UDP
                                                     source port and flow label, STEV mode, and every
                                                     switch hashes it with its own seed: ECMP per hop,
                                                     the spec's ECMP mode and htsim's oblivious
                                                     `-paths N`); not for ``ar`` or ``mrc-1ev``
paths                    128 (hashed entropy only)   entropies per QP with entropy = "hashed" (htsim's
                                                     `-paths`), spread evenly over the planes: per plane
                                                     one random base and consecutive low bits, as
                                                     htsim's UecMpOblivious draws them (`mrc_profiles.
                                                     hashed_profiles`)
ev_count                 256 (``ar``: one per plane)  EVs per profile, spread evenly over the planes;
                                                     capped at the pair's distinct paths (MANI: "128 to
                                                     256 entries, distributed equally across all
                                                     network planes"); source-routed entropy only
ev_active_target         128                         active EVs (MANI: "typically over 100"); the rest
                                                     are backups
ev_min_active            ev_count / 4                OCP example
mtu                      4096                        payload bytes per packet
mpr                      auto: 2 x max window, <= 8  room for twice the QP's largest window (NSCC's
                                                     max_cwnd) in units of 128 PSNs, at most the OCP
                                                     example's 8 (`auto_mpr`); the tables hold
                                                     min(mpr x 128, the largest flow's packets) PSNs
                                                     per QP
timeout                  8 (262 us)                  OCP example (local ACK timeout exponent)
retry_linear, retry_exp  7, 7                        OCP maximum / ours (finite)
ack_every_pkts           4                           UET htsim: ACK every 16 KiB
ack_every_bytes          16384                       (same)
ack_delay_us             1                           ours
always_skip_marks        8                           ours
reorder_window_us        the fabric's base RTT       ours (RACK)
ev_first_probe_us        the fabric's base RTT       a retired EV's first probe (re-admission)
ev_probe_interval_us     100                         ours: the probes after the first
probe_successes          2                           ours
rev_probe_interval_us    the fabric's base RTT       MANI 3.8 ("each RTT")
rev_rotate               true                        leave a reverse EV whose SACKs do not arrive
                                                     (mrc.core.setup; ours)
rev_probe_miss_bad       false                       an unanswered reverse probe counts as a loss
                                                     on the probed EV (ours)
rto_reprobe              true                        probe the EVs a SACK-less timeout retired as
                                                     soon as SACKs resume (ours)
rack                     true                        RACK loss detection (ours; false: losses are
                                                     found by RTO, trim NACKs and probes only)
rto_retire               true                        an RTO retires every EV with data in flight
                                                     (ours; false: the oldest packet's EV only)
trim_nack                true                        mrc.h TRIM_NACK_DEST ("enabled by default")
svc_time                 false                       responder service time in SACKs and NACKs, taken
                                                     off RTT samples (mrc.h SVC_TIME, "enabled by
                                                     default when supported", as the library's QPs
                                                     have it; off here so that the published runs
                                                     stay as they were: docs/protocol.md)
mpr_budget               0 (static MPR)              dynamic MPR (mrc.h DYNAMIC_MPR) on every QP: the
                                                     responder QPs of a host receiving a message
                                                     share this many units of 128 PSNs, each
                                                     advertising max(1, budget / receiving) <= mpr
                                                     (ours: the MRC algorithm is not public)
qp_hint                  "none"                      "auto": each QP gets the hint an application
                                                     that knows its traffic would give (QPs from its
                                                     source and to its destination starting while
                                                     it does), NSCC starting at that share of the
                                                     window (extension; docs/protocol.md)
cc                       "uet-1.0-nscc"              or "none" (a fixed window of ``cc_window_bytes``)
cc_window_bytes          1.5 BDP                     the fixed window of cc = "none"
base_rtt_us              the fabric's longest path   NSCC base RTT (the CC profile's, notes 7.2)
reps_buffer              8                           REPS (ev_policy REPS): recycle buffer
reps_reuse               1                           uses of a recycled EV (htsim's usable lifetime)
reps_per_psn             true                        an unmarked SACK recycles the EV of every PSN it
                                                     newly acknowledges (false: only its own EV)
reps_explore             16                          random EVs after a freeze
reps_freeze_us           10000                       freeze length (htsim exit_freeze_after)
ctl_timeout_us           1000                        port status update answer timeout (mrc.ctl's)
ctl_retries              7                           ours
ctl_probe_us             500                         controller EV probes of ASSUMED_BAD EVs (0: off;
                                                     ours)
ctl_probe_successes      2                           answers in a row before the controller returns the
                                                     EV to GOOD (ours)
ev_log_capacity          1000000                     EV events kept for ``ev_events.csv``
=======================  ==========================  ================================================

The NSCC profile is `mrc.core.setup.nscc_profile` for a QP of all its planes'
rate (one plane for ``mrc-1ev``) and the fabric's base RTT (`mrc.fabric.presets`).
EV profiles: for each (source, destination) pair the controller generates
one profile from the fabric's EV format (`mrc.fabric.evformat`): per plane an
equal share of ``ev_count``, distinct hop choices drawn from the run's seed;
pairs under one T0 have one path per plane (their choice fields are zero, as
`srv6_profile` requires). QPs to the same destination share the profile; each
keeps its own EV states and seeded rotation.
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.core import dtypes as D
from mrc.core import evpolicy, setup as core_setup
from mrc.core import ctltable, tables
from mrc.core.cachelines import fill_rows
from mrc.emulator import state as ST
from mrc.emulator.keys import Table
from mrc.emulator.transports import mrcctl, mrcqp, pairs
from mrc.emulator.transports.dispatch import TP_MRC
from mrc.emulator.transports.mrc_profiles import (auto_mpr, ecmp_pin, hashed_profiles, profile_sizes, profiles,
                                                  qp_rng, rdma_udp_sport)
from mrc.errors import ConfigError
from mrc.fabric.ecmp import ecmp_route
from mrc.fabric.paths import MAX_ROUTE_PORTS, ev_route
from mrc.fabric.presets import base_rtt_ps
from mrc.units import US, serialization_ps
from mrc.wire.constants import ICRC_LEN, Opcode
from mrc.wire.layout import H_NO_PAYLOAD, HEADER_TABLE

IP_UDP_BYTES = 40 + 40 + 8  # outer IPv6 (the SRv6 carrier), inner IPv6, UDP (mrc-public-notes 2.1)
BTH_ICRC_BYTES = 12 + 4


def header_sizes() -> np.ndarray:
    """Bytes on the wire (no Ethernet) of each opcode's packet without payload, SRv6 mode, TSETH on (the
    codec's `ext_len` run as Python: a set-up table needs no machine code loaded)."""
    from mrc.wire.packet import ext_len

    length = getattr(ext_len, "py_func", ext_len)
    out = np.zeros(256, np.int32)
    for op in Opcode:
        n = int(length(int(op), 1))
        if n >= 0:
            out[int(op)] = IP_UDP_BYTES + BTH_ICRC_BYTES + n
    return out


def trim_headers() -> int:
    """Bytes from the first IP header to the end of the largest header stack of an MRC data packet (the kinds that
    carry payload, so a switch may trim them), without the ICRC a trimmed packet loses: outer and inner IPv6, UDP,
    BTH, METH, TSETH, RETH and ImmDt, 128 B."""
    hdr = header_sizes()
    data = [int(op) for op in Opcode if hdr[int(op)] and not HEADER_TABLE[int(op)] & H_NO_PAYLOAD]
    return max(int(hdr[op]) for op in data) - ICRC_LEN


class Variant:
    """One named MRC transport (the registry entry): its policy and forwarding."""

    def __init__(self, name: str, policy: str, forwarding: str, description: str):
        self.NAME = name
        self.DESCRIPTION = description
        self.policy = policy
        self.forwarding = forwarding

    def parse(self, t: Table, topo) -> dict:
        return parse(t, topo, self)

    def switch_defaults(self, p: dict) -> dict:
        return {"pfc": False, "ecn_last_hop": False, "trim": True}

    def trim_headers(self, p: dict) -> int:
        """Bytes (from the first IP header) of the largest header stack of a data packet (what a trimmed packet
        keeps at least: `trim_headers`)."""
        return trim_headers()

    def check_switch(self, p: dict, sw) -> None:
        if sw.pfc:
            raise ConfigError("switch.pfc", True, f"transport {self.NAME} runs on a lossy fabric (MRC disables PFC, "
                              "mrc-public-notes 5); set switch.pfc = false")

    def setup(self, topo, flows, p, sw, rng, lat):
        return setup(topo, flows, p, sw, rng, lat)

    def memory(self, topo, flows, p) -> int:
        return memory(topo, flows, p)

    def collect(self, T) -> dict:
        return collect(T)

    def flow_series(self, T, E, flows: list, t: int) -> dict:
        return flow_series(T, E, flows, t)


VARIANTS = [
    Variant("mrc", "MRC", "srv6", "MRC: the core on every NIC, spraying over SRv6 paths with path health"),
    Variant("mrc-1ev", "ONE", "srv6", "MRC pinned to one ECMP-hashed EV per QP (moved only when it dies)"),
    Variant("spray", "OBLIVIOUS", "srv6", "MRC with oblivious EV cycling and no path health"),
    Variant("reps", "REPS", "srv6", "MRC with REPS EV recycling (freeze / explore after losses)"),
    Variant("ar", "OBLIVIOUS", "ar", "switch adaptive routing (least-loaded uplink) under MRC's core"),
]


def parse(t: Table, topo, v: Variant) -> dict:
    rtt = base_rtt_ps(topo.spec)
    planes = topo.n_planes
    entropy = t.choice("entropy", ("source-routed", "hashed"), "source-routed")
    if entropy == "hashed" and v.forwarding == "ar":
        raise ConfigError(t.key("entropy"), entropy, "ar routes adaptively at the switches, not by the EV")
    if entropy != "hashed" and t.has("paths"):
        raise ConfigError(t.key("paths"), t.raw("paths"), "only with entropy = \"hashed\" (source-routed "
                          "profiles take ev_count)")
    if entropy == "hashed" and t.has("ev_count"):
        raise ConfigError(t.key("ev_count"), t.raw("ev_count"), "with entropy = \"hashed\" the profile is "
                          "paths entropies")
    p = dict(
        name=v.NAME,
        forwarding="ecmp" if entropy == "hashed" else v.forwarding,
        entropy=entropy,
        paths=t.int("paths", 128, lo=1, hi=65535) if entropy == "hashed" else None,  # = ev_count when hashed
        ev_policy=t.choice("ev_policy", evpolicy.NAMES, v.policy),
        ev_count=t.int("ev_count", planes if v.forwarding == "ar" else 256, lo=1, hi=65535) if entropy != "hashed"
        else t.int("paths", 128, lo=1, hi=65535),
        ev_active_target=t.int("ev_active_target", 128, lo=1, hi=65535),
        ev_min_active=t.int("ev_min_active", None, lo=0),
        mtu=t.int("mtu", 4096, lo=256, hi=1 << 16),
        mpr=t.int("mpr", None, lo=1, hi=255),
        timeout=t.int("timeout", 8, lo=0, hi=24),
        retry_linear=t.int("retry_linear", 7, lo=0, hi=7),
        retry_exp=t.int("retry_exp", 7, lo=0, hi=25),
        ack_every_pkts=t.int("ack_every_pkts", 4, lo=1, hi=65535),
        ack_every_bytes=t.int("ack_every_bytes", 16384, lo=1, hi=1 << 31),
        ack_delay_us=t.num("ack_delay_us", 1.0, lo=0),
        always_skip_marks=t.int("always_skip_marks", 8, lo=0, hi=65535),
        reorder_window_us=t.num("reorder_window_us", rtt / US, lo=0),
        ev_first_probe_us=t.num("ev_first_probe_us", rtt / US, lo=0),
        ev_probe_interval_us=t.num("ev_probe_interval_us", 100.0, lo=0, lo_open=True),
        probe_successes=t.int("probe_successes", 2, lo=1, hi=255),
        rev_probe_interval_us=t.num("rev_probe_interval_us", rtt / US, lo=0, lo_open=True),
        rev_rotate=t.bool("rev_rotate", True),
        rev_probe_miss_bad=t.bool("rev_probe_miss_bad", False),
        rto_reprobe=t.bool("rto_reprobe", True),
        rack=t.bool("rack", True),
        rto_retire=t.bool("rto_retire", True),
        trim_nack=t.bool("trim_nack", True),
        svc_time=t.bool("svc_time", False),
        mpr_budget=t.int("mpr_budget", 0, lo=0, hi=1 << 20),
        qp_hint=t.choice("qp_hint", ("none", "auto"), "none"),
        cc=t.choice("cc", ("uet-1.0-nscc", "none"), "uet-1.0-nscc"),
        cc_window_bytes=t.int("cc_window_bytes", None, lo=1),
        base_rtt_us=t.num("base_rtt_us", rtt / US, lo=0, lo_open=True),
        reps_buffer=t.int("reps_buffer", D.REPS_MAX_BUFFER, lo=1, hi=D.REPS_MAX_BUFFER),
        reps_reuse=t.int("reps_reuse", 1, lo=1, hi=255),
        reps_per_psn=t.bool("reps_per_psn", True),
        reps_explore=t.int("reps_explore", 16, lo=0, hi=65535),
        reps_freeze_us=t.num("reps_freeze_us", 10_000.0, lo=0),
        ctl_timeout_us=t.num("ctl_timeout_us", 1000.0, lo=0, lo_open=True),
        ctl_retries=t.int("ctl_retries", 7, lo=0, hi=1000),
        ctl_probe_us=t.num("ctl_probe_us", 500.0, lo=0),
        ctl_probe_successes=t.int("ctl_probe_successes", 2, lo=1, hi=1000),
        ev_log_capacity=t.int("ev_log_capacity", 1_000_000, lo=0),
    )
    if entropy == "hashed" and p["ev_policy"] == "ONE":
        raise ConfigError(t.key("entropy"), entropy, "policy ONE (mrc-1ev) pins each QP to its source-routed ECMP "
                          "path; spray:entropy=\"hashed\":paths=1 is one hashed entropy per QP")
    if planes > D.MAX_PLANES:
        raise ConfigError("topology.planes", planes, f"the MRC core handles at most {D.MAX_PLANES} planes")
    if p["cc_window_bytes"] is not None and p["cc"] != "none":
        raise ConfigError(t.key("cc_window_bytes"), p["cc_window_bytes"], "only with cc = \"none\"")
    return p


# ---------------------------------------------------------------- ideal FCT


@njit
def _ideal(F, src, dst, ev, plane, hashed, sizes, mtu, planes_used, hdr_data, hdr_sack, framing, lat, ideal):
    """FCT alone on the idle fabric: the packets striped over the planes used, plus the base RTT (over the path of
    the flow's first EV: its SRv6 route, or with hashed entropy the ports the switches' hashes give it)."""
    out = np.empty(MAX_ROUTE_PORTS, np.int64)
    for f in range(src.shape[0]):
        if hashed:
            n = ecmp_route(F, src[f], dst[f], plane[f], (ev[f] >> 16) & 0xFFFF, ev[f] & 0xFFFF, 17, out)
        else:
            n = ev_route(F, src[f], dst[f], ev[f], out)
        size = sizes[f]
        npk = (size + mtu - 1) // mtu
        last = size - mtu * (npk - 1)
        rate0 = F.port[out[0]]["rate"]
        full = serialization_ps(hdr_data + mtu + framing, rate0)
        k = (npk + planes_used - 1) // planes_used  # packets on the busiest port (port 0 of the rotation)
        if (npk - 1) % planes_used == 0:  # the short last packet is on that port
            t = (k - 1) * full + serialization_ps(hdr_data + last + framing, rate0)
        else:
            t = k * full
        big = hdr_data + (mtu if npk > 1 else last)
        for h in range(n):
            q = out[h]
            r = F.port[q]["rate"]
            t += 2 * F.port[q]["delay"] + serialization_ps(hdr_sack + framing, r)
            if h < n - 1:
                t += 2 * lat
            if h > 0:
                t += serialization_ps(big + framing, r)
        ideal[f] = t


# ---------------------------------------------------------------- setup


def window_of(topo, sizes: np.ndarray, p: dict) -> dict:
    """The QPs' windows for flows of these sizes: ``window`` (PSN rows per flow), ``mpr``, ``planes_used``, and
    what they come from: ``link`` (b/s), ``base_rtt`` (ps), ``max_window`` (bytes)."""
    mtu = p["mtu"]
    max_pkts = int(((sizes + mtu - 1) // mtu).max()) if len(sizes) else 1
    if max_pkts >= 1 << 23:
        raise ConfigError("workload.size_bytes", int(sizes.max()), f"more than 2^23 packets of {mtu} B in one flow "
                          "(half the 24-bit PSN space)")
    # the QP's largest window: NSCC's max_cwnd (1.5 BDP of the planes it uses) or the fixed window
    link = int(topo.port[0]["rate"])
    planes_used = 1 if p["ev_policy"] == "ONE" else topo.n_planes
    base_rtt = p["base_rtt_ps"]
    bdp = planes_used * link * base_rtt // (8 * 10**12)
    max_window = p["cc_window_bytes"] or max(3 * bdp // 2, mtu)
    want = p["mpr"] if p["mpr"] is not None else auto_mpr(max_window, mtu)
    window = 128
    while window < min(want * D.MPR_UNIT, max_pkts):
        window <<= 1
    return dict(window=window, mpr=min(want, window // 128), planes_used=planes_used, link=link, base_rtt=base_rtt,
                max_window=max_window)


def memory(topo, flows: np.ndarray, p: dict) -> int:
    """Bytes `setup` allocates for these flows (its tables row by row; nothing is allocated here).
    `emulator.memory` adds it to the run's estimate; keep it in step with `setup`."""
    nf, H, P = len(flows), topo.n_hosts, topo.n_planes
    npair = pairs.count(flows)
    n_qp = max(2 * npair, 1)
    window = window_of(topo, flows["size"].astype(np.int64), p)["window"]
    max_ev = profile_sizes(topo, p)
    rows = max(npair, 1)
    core = (n_qp * (D.QP.itemsize + max_ev * (D.EV.itemsize + 2))  # qp, ev, ev_order
            + rows * (window * (D.TX.itemsize + D.RX.itemsize) + D.WR.itemsize) + 4096 * D.EVT.itemsize)
    cap = 4 * nf + 4096  # controller requests: at most two per (host, peer) pair each way, plus 4096
    ends = (2 * npair + H) * (ST.EP.itemsize + 4 * P * mrcqp.N_NX * 2) + n_qp * 6 * 8  # ep, mrc_next; pin, rngs, ...
    budget = (H * 8 + n_qp) if p["mpr_budget"] > 0 else 0  # mrc_rx_active, mrc_rx_on
    return (core + ends + H * mrcctl.HC.itemsize + cap * (mrcctl.CQ.itemsize + 4)
            + p["ev_log_capacity"] * mrcqp.EVL.itemsize + nf * 8 + budget)


def setup(topo, flows: np.ndarray, p: dict, sw, rng: np.random.Generator, cfg_switch_latency_ps: int):
    """Endpoints (2 per QP pair: one per flow or connection, `pairs`; + 1 controller per host), the Transports
    fields, each flow's ideal FCT."""
    nf = len(flows)
    P = topo.n_planes
    H = topo.n_hosts
    pair, firsts = pairs.of_flows(flows)
    npair = len(firsts)
    n_qp = 2 * npair
    fsrc = flows["src"].astype(np.int64)
    fdst = flows["dst"].astype(np.int64)
    src, dst = fsrc[firsts], fdst[firsts]  # per pair
    sizes = flows["size"].astype(np.int64)
    mtu = p["mtu"]
    w = window_of(topo, sizes, p)
    window, mpr, planes_used = w["window"], w["mpr"], w["planes_used"]
    link, base_rtt, max_window = w["link"], w["base_rtt"], w["max_window"]

    ep = np.zeros(n_qp + H, ST.EP)
    ep["timer_at"] = ST.NEVER
    ep["tcode"] = TP_MRC
    req = np.arange(0, n_qp, 2)
    resp = req + 1
    ep["host"][req], ep["host"][resp] = src, dst
    ep["peer"][req], ep["peer"][resp] = resp, req
    # a flow's own pair names it; a connection's names no flow until its first message starts
    ep["flow"][req] = ep["flow"][resp] = np.where(flows["conn"][firsts] < 0, firsts, -1)
    ep["planes"][:] = (1 << P) - 1
    ep["host"][n_qp:] = np.arange(H)
    ep["peer"][n_qp:] = -1
    ep["flow"][n_qp:] = -1
    flows["ep"] = req[pair]

    # EV profiles: QP 2k (src -> dst of pair k), QP 2k + 1 (dst -> src)
    qsrc = np.empty(n_qp, np.int64)
    qdst = np.empty(n_qp, np.int64)
    qsrc[req], qsrc[resp] = src, dst
    qdst[req], qdst[resp] = dst, src
    max_ev = profile_sizes(topo, p)
    F = topo.arrays
    seed = int(rng.integers(0, 2**62))
    T = tables.allocate(max(n_qp, 1), max_ev=max_ev, window=window, max_wr=1, max_recv=1, n_mr=1, n_cc=1,
                        evt_capacity=4096, n_ev_rows=max(n_qp, 1), n_tx_rows=max(npair, 1),
                        n_rx_rows=max(npair, 1), n_wr_rows=max(npair, 1), n_rq_rows=1)
    # the profiles are written straight into the EV table's fields (no temporaries: at 131,072 pairs x 256
    # EVs each int64 copy was 537 MB, and every field copied separately was another pass over 4.3 GB)
    ev_vals = T.ev["ev"]
    ev_planes = T.ev["plane"]
    n_ev = np.zeros(max(n_qp, 1), np.int64)
    if p["entropy"] == "hashed":
        hashed_profiles(F, n_qp, p["ev_count"], seed, ev_vals, ev_planes, n_ev, T.ev["state"], D.EV_GOOD,
                        D.EV_UNUSED)
    else:
        profiles(F, qsrc, qdst, p["ev_count"], seed, ev_vals, ev_planes, n_ev, p["forwarding"] == "ar",
                 T.ev["state"], D.EV_GOOD, D.EV_UNUSED)
    pin = np.full(max(n_qp, 1), -1, np.int64)
    if p["ev_policy"] == "ONE" and n_qp:
        qplane = rng.integers(0, P, n_qp) if P > 1 else np.zeros(n_qp, np.int64)
        sport = rdma_udp_sport((0x100 + np.arange(n_qp)) & 0xFFFFFF, (0x100 + (np.arange(n_qp) ^ 1)) & 0xFFFFFF)
        ecmp_pin(F, qsrc, qdst, qplane.astype(np.int64), sport.astype(np.int64), ev_vals, ev_planes, n_ev, pin)

    # the CC profile: NSCC for the QP's rate over the planes it uses, the fabric's base RTT, and
    # whether its switches trim (UE 1.0.3 3.6.13.3: target 0.75 x base RTT with trimming, 1.0 x without)
    if p["cc"] == "none":
        cc = core_setup.fixed_window_profile(window_bytes=max_window, base_rtt_ps=base_rtt, mtu=mtu)
    else:
        cc = core_setup.nscc_profile(mtu=mtu, rate_bps=planes_used * link, base_rtt_ps=base_rtt, trimming=bool(sw.trim))
    core_setup.write_cc(T, 0, cc)

    ideal = ideal_ps(topo, flows, p, sw, cfg_switch_latency_ps, ev_vals, ev_planes, req[pair], planes_used)

    # QP attributes: validated once, then written to every row
    attrs = dict(mtu=mtu, mpr=mpr, mpr_dest=mpr, timeout=p["timeout"], retry_linear=p["retry_linear"],
                 retry_exp=p["retry_exp"], ev_active_target=p["ev_active_target"],
                 ack_every_pkts=p["ack_every_pkts"], ack_every_bytes=p["ack_every_bytes"],
                 ack_delay_ps=p["ack_delay_ps"], always_skip_marks=p["always_skip_marks"],
                 reorder_window_ps=p["reorder_window_ps"],
                 ev_first_probe_ps=p["ev_first_probe_ps"],
                 ev_probe_interval_ps=p["ev_probe_interval_ps"],
                 probe_successes=p["probe_successes"],
                 rev_probe_interval_ps=p["rev_probe_interval_ps"],
                 rev_rotate=int(p["rev_rotate"]), rev_probe_miss_bad=int(p["rev_probe_miss_bad"]),
                 rto_reprobe=int(p["rto_reprobe"]), rack=int(p["rack"]), rto_retire=int(p["rto_retire"]),
                 dscp_data=sw.dscp.data, dscp_rtx=sw.dscp.retx, dscp_ctrl=sw.dscp.control, emulate_access=1,
                 trim_nack_dest=int(p["trim_nack"]), svc_time_report=int(p["svc_time"]),
                 svc_time_peer=int(p["svc_time"]), dynamic_mpr=int(p["mpr_budget"] > 0),
                 ev_policy=p["ev_policy"], reps_buffer=p["reps_buffer"],
                 reps_reuse=p["reps_reuse"], reps_per_psn=int(p["reps_per_psn"]),
                 reps_explore=p["reps_explore"], reps_freeze_ps=p["reps_freeze_ps"])
    if n_qp:
        emin = int(n_ev[:n_qp].min())
        if p["ev_min_active"] is not None and p["ev_min_active"] > emin:
            raise ConfigError("transport.ev_min_active", p["ev_min_active"],
                              f"exceeds the EVs of the smallest profile ({emin})")
        cfg = core_setup.configure_qp(T, 0, emin, base_rtt, **attrs)
        qp = T.qp
        # the attributes every row shares, set in one row and copied whole (one pass over the rows, not one
        # strided pass per field: at 262,144 QPs of 1,088 bytes the per-field passes took seconds)
        row = np.zeros(1, qp.dtype)
        for key, value in cfg.items():
            if key not in ("ev_min_active",):
                row[key] = value
        row["n_planes"] = P
        for key in ("tx_row", "rx_row", "wr_row", "rq_row"):
            row[key] = -1
        row["cc_profile"] = 0
        fill_rows(qp[:n_qp], row)
        qp["ev_min_active"][:n_qp] = (n_ev[:n_qp] // 4 if p["ev_min_active"] is None else p["ev_min_active"])
        qp["n_ev"][:n_qp] = n_ev[:n_qp]
        qp["ev_row"][:n_qp] = np.arange(n_qp)
        qp["tx_row"][req] = qp["wr_row"][req] = np.arange(npair)
        qp["rx_row"][resp] = np.arange(npair)
        qp["qpn"][:n_qp] = (0x100 + np.arange(n_qp)) & 0xFFFFFF
        qp["dest_qpn"][:n_qp] = (0x100 + (np.arange(n_qp) ^ 1)) & 0xFFFFFF
        qp["ev_event_mask"][:n_qp] = 3
        rngs = np.zeros(n_qp, np.int64)
        qp_rng(seed ^ 0x5A5A5A5A, n_qp, rngs)
        qp["rng"][:n_qp] = rngs
        qp["state"][:n_qp] = D.QPS_RESET
        qp["ev_pin"][:n_qp] = pin[:n_qp]  # the EV mrcqp.flow_start starts the QP on (`mrc.core.qp.modify`)
        if p["qp_hint"] == "auto":
            qp["hint_share"][req] = auto_hint_share(flows, firsts, ideal)
    # engine-side tables
    mp = np.zeros(1, mrcqp.MP)
    mp[0]["n_qp"] = n_qp
    mp[0]["mtu"] = mtu
    mp[0]["fwd"] = {"srv6": ST.FWD_SRV6, "ecmp": ST.FWD_ECMP, "ar": ST.FWD_AR}[p["forwarding"]]
    mp[0]["dscp_ctrl"] = sw.dscp.control
    mp[0]["ctl_timeout"] = p["ctl_timeout_ps"]
    mp[0]["ctl_retries"] = p["ctl_retries"]
    mp[0]["ctl_probe"] = p["ctl_probe_ps"]
    mp[0]["ctl_probe_ok"] = p["ctl_probe_successes"]
    mp[0]["mpr_budget"] = p["mpr_budget"]
    mp[0]["mpr_max"] = mpr
    # controller requests: an update per (host, peer) each way, probes, answers
    peers = len(np.unique(np.concatenate([src * H + dst, dst * H + src]))) if nf else 0
    ctl, host, free, s = ctltable.allocate(H, 2 * peers + 4096, P, n_scalars=mrcctl.N_MS)
    hdr = header_sizes()

    budget = p["mpr_budget"] > 0
    fields = {"core": T, "mrc_p": mp, "mrc_hdr": hdr, "mrc_host": host, "mrc_ctl": ctl, "mrc_free": free,
              "mrc_s": s, "mrc_evlog": np.zeros(p["ev_log_capacity"], mrcqp.EVL),
              "mrc_next": np.full((len(ep) * P, mrcqp.N_NX), -1, np.int64),
              "mrc_rows": np.stack([T.qp["tx_row"][:n_qp], T.qp["rx_row"][:n_qp]], axis=1).astype(np.int32),
              "mrc_rx_active": np.zeros(H if budget else 0, np.int64),
              "mrc_rx_on": np.zeros(n_qp if budget else 0, np.uint8)}
    return ep, fields, ideal


def ideal_ps(topo, flows, p, sw, cfg_switch_latency_ps, ev_vals, ev_planes, req_of_flow, planes_used) -> np.ndarray:
    """Each flow's FCT alone on the idle fabric (ps), over the first EV of its QP's profile (its hashed route with
    entropy="hashed")."""
    nf = len(flows)
    ideal = np.zeros(nf, np.int64)
    if nf:
        hdr = header_sizes()
        data_hdr = int(hdr[int(Opcode.MRC_WRITE_MIDDLE)])
        sack = int(hdr[int(Opcode.MRC_RELIABILITY_SACK)])
        _ideal(topo.arrays, flows["src"].astype(np.int64), flows["dst"].astype(np.int64),
               ev_vals[req_of_flow, 0].astype(np.int64), ev_planes[req_of_flow, 0].astype(np.int64),
               p["entropy"] == "hashed", flows["size"].astype(np.int64), p["mtu"], planes_used,
               data_hdr, sack, sw.framing_bytes, cfg_switch_latency_ps, ideal)
    return ideal


def _overlapping(host: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per flow: the flows of the same `host` running when it starts (start <= its start < end; itself included)."""
    times, inv = np.unique(np.concatenate([start, end]), return_inverse=True)
    m = len(times) + 1
    s_rank, e_rank = inv[:len(start)], inv[len(start):]
    base = host.astype(np.int64) * m
    starts = np.sort(base + s_rank)
    ends = np.sort(base + e_rank)
    at = base + s_rank
    return (np.searchsorted(starts, at, "right") - np.searchsorted(ends, at, "right")).astype(np.int64)


def auto_hint_share(flows: np.ndarray, firsts: np.ndarray, ideal: np.ndarray) -> np.ndarray:
    """``qp_hint = "auto"``: the QP hint of each pair's requester (`mrc.core.setup.hint_share`) as an application
    that knows its traffic gives it, from its first flow: ``num_qps_per_peer x num_send_peers`` = the flows
    from its source host running when it starts (a flow runs from its start for its ideal FCT),
    ``num_remote_recv_peers`` = those to its destination host; the share is the larger, at most 65535. A flow
    started by another's completion (``start`` -1: a collective's later steps) has no start to compare:
    it counts for no other and gets no hint (1)."""
    start = flows["start"].astype(np.int64)
    timed = start >= 0
    share = np.ones(len(flows), np.int64)
    if timed.any():
        s = start[timed]
        e = s + np.maximum(ideal[timed], 1)
        share[timed] = np.maximum(_overlapping(flows["src"][timed], s, e), _overlapping(flows["dst"][timed], s, e))
    return np.minimum(share[firsts], 65535).astype(np.uint16)


def empty() -> dict:
    """Empty MRC tables (for runs of other transports: one compiled loop serves all)."""
    T = tables.allocate(1, max_ev=1, window=128, max_wr=1, max_recv=1, n_mr=1, n_cc=1, evt_capacity=1)
    return {"core": T, "mrc_p": np.zeros(0, mrcqp.MP), "mrc_hdr": np.zeros(256, np.int32),
            "mrc_host": np.zeros(0, mrcctl.HC), "mrc_ctl": np.zeros(0, mrcctl.CQ), "mrc_free": np.zeros(0, np.int32),
            "mrc_s": np.zeros(mrcctl.N_MS, np.int64), "mrc_evlog": np.zeros(0, mrcqp.EVL),
            "mrc_next": np.zeros((0, mrcqp.N_NX), np.int64), "mrc_rows": np.zeros((0, 2), np.int32),
            "mrc_rx_active": np.zeros(0, np.int64), "mrc_rx_on": np.zeros(0, np.uint8)}


def collect(T) -> dict:
    """What the run leaves for the results: the EV event log and per-QP counters."""
    n = int(T.mrc_s[mrcctl.MS_EVLOG_N])
    n_qp = int(T.mrc_p[0]["n_qp"]) if len(T.mrc_p) else 0
    q = T.core.qp[:n_qp]
    return {"ev_events": T.mrc_evlog[:n].copy(),
            "qp": {k: int(q[k].sum()) for k in ("tx_pkts", "rtx_pkts", "rtx_spurious", "lost_acked", "rtx_timeouts", "losses",
                                                 "trims_rx", "ecn_sacks_rx", "probes_tx", "sacks_tx", "nacks_tx",
                                                 "rx_dup", "rx_trimmed", "ev_floor_hits", "ev_skips")}}


def flow_series(T, E, flows: list, t: int) -> dict:
    """Per flow (its requester QP), at time t (read-only): NSCC's window and the bytes in flight
    (header and payload), the smoothed RTT (us), the EVs that may carry its data (active and GOOD or
    SKIP), those ASSUMED_BAD, bytes delivered to the receiver."""
    core = T.core
    out = {k: [] for k in ("cwnd_bytes", "inflight_bytes", "srtt_us", "active_evs", "bad_evs", "delivered_bytes")}
    for f in flows:
        req = int(E.flow[f]["ep"])
        q = core.qp[req]
        row = core.ev[int(q["ev_row"])][:int(q["n_ev"])]
        usable = (row["state"] == D.EV_GOOD) | (row["state"] == D.EV_SKIP)
        out["cwnd_bytes"].append(float(q["cwnd"]))
        out["inflight_bytes"].append(int(q["inflight"]))
        out["srtt_us"].append(int(q["srtt"]) / US)
        out["active_evs"].append(int(np.count_nonzero(usable & (row["active"] != 0))))
        out["bad_evs"].append(int(np.count_nonzero(row["state"] == D.EV_ASSUMED_BAD)))
        out["delivered_bytes"].append(int(core.qp[int(E.ep[req]["peer"])]["rx_bytes"]))
    return out
