"""Configuring QPs and CC profiles: documented defaults, validation, and starting each half of a QP
(`start_responder` at RTR, `start_requester` at RTS: what `mrc.core.qp.modify` runs).

Defaults (each a parameter; sources in brackets):

======================  ==============  =======================================
QP attribute            default         source
======================  ==============  =======================================
mtu                     4096 B          4 KB MTU inferred from MANI's numbers
mpr, mpr_dest           8 (1024 PSNs)   OCP examples/mrc_qp.md
timeout                 8 (262 us)      OCP example value
retry_linear            7               OCP example value (maximum)
retry_exp               7               ours: finite, so a dead peer ends in
                                        ERROR (~69 ms at timeout 8); 25 = unlimited
max_wimm, _dest         128             OCP example value
ev_active_target        128             MANI: "typically over 100" active
ev_min_active           n_ev / 4        OCP example (ev_count / 4)
ack_every_pkts          4               UET htsim: ACK every 16 KiB
ack_every_bytes         16384           (same)
ack_delay_ps            1 us            ours
always_skip_marks       8               ours (MRC criterion not public)
reorder_window_ps       base RTT        ours (RACK, RFC 8985 uses RTT/4; spraying
                                        over unequal queues needs more)
ev_first_probe_ps       base RTT        a retired EV's first probe about one RTT
                                        later (probes check "whether there really
                                        was a failure", MANI): docs/protocol.md
ev_probe_interval_ps    100 us          ours (MRC timer values not public): the
                                        probes after the first
probe_successes         2               ours ("enough probes succeed", MANI)
rev_probe_interval_ps   base RTT        MANI 3.8: "each RTT"
rev_rotate              1               ours (MANI 3.8 silent on lost control
                                        packets; UET 1.0 ACKs reflect each
                                        acknowledged packet's entropy, so no ACK
                                        path is sticky): see dispatch.rev_suspect
rev_probe_miss_bad      0               ours: an unanswered reverse probe may
                                        have lost its answer on the peer's
                                        reverse EV, so it is not a loss on ours
rto_reprobe             1               ours: a SACK-less timeout cannot tell a
                                        forward loss from a lost SACK
rack                    1               ours: RACK loss detection (0: RTO, trims
                                        and probes only find losses)
rto_retire              1               ours: an RTO retires every EV with data
                                        in flight (0: the oldest packet's only)
ts_unit_ps              8 ns            ours (TSETH wraps at 524 us: it only tells
                                        transmissions apart; RTTs use send times)
ev_policy               0 (MRC)         EV selection policy (evpolicy.py): its
                                        position in evpolicy.REGISTRY (0 MRC, 1 ONE,
                                        2 OBLIVIOUS, 3 REPS, 4 P2C) or its name
reps_buffer             8               REPS paper / UEC htsim recycle buffer
reps_reuse              1               uses of each recycled EV (htsim's
                                        ``repsMaxLifetimeEntropy``)
reps_per_psn            1               an unmarked SACK recycles the EV of every
                                        PSN it newly acknowledges (REPS paper: one
                                        recycled EV per acknowledged packet); 0:
                                        only the EV the SACK reflects
reps_explore            16              htsim: random EVs explored after a freeze
reps_freeze_ps          10 ms           htsim ``exit_freeze_after``
dscp_*                  4 / 8 / 46      third-party emulator values
trim_nack_dest          1               mrc.h: trim NACKs "enabled by default
                                        when supported"
psu_floor               1               ours: a peer's port status update never
                                        takes the last plane (evset.plane_mask;
                                        docs/protocol.md "Liveness")
svc_time_report         1               mrc.h: service time "enabled by default
                                        when supported" (SACK / NACK svc_time)
svc_time_peer           1               the peer reports its service time (mrc.h
                                        MRC_QP_CAP_SVC_TIME_DEST_UNSUPPORTED: 0)
dynamic_mpr             0               mrc.h MRC_QP_CAP_DYNAMIC_MPR (opt-in):
                                        MPR may change in RTS (`modify_mpr`)
hint_share              1               QP hint (mrc.h mrc_qp_hint_attr): QPs
                                        sharing the bottleneck (`hint_share`);
                                        NSCC starts at init_cwnd / hint_share
======================  ==============  =======================================

NSCC profile defaults are the UE Specification 1.0.3 values (3.6.13.3, Table
3-77) with the scaling UEC htsim applies (``UecSrc::initNsccParams``), for the
bandwidth-delay product ``bdp`` of the QP (all planes) at ``config_base_rtt``:
``a = bdp / (100 Gb/s x 12 us)``, ``b = target / 12 us``; target 0.75 x base RTT
with trimming (1.0 x without), max_cwnd 1.5 x BDP, initial window MaxWnd (Table
3-77), gamma 0.8, max_md_jump 0.5 (the smallest MD factor), eta 0.15 MTU x a,
fi 5 MTU x a, fi_scale 0.25 x a, alpha (``pi_gain``) 4 MTU x a x b / target,
fast increase below 1 us of queuing (htsim's "delay ~= 0"), adjustment every
8 MTU or one base RTT, QuickAdapt gate 3 and threshold 4 x target, delay EWMA
0.0125 with htsim's filter (unmarked samples above target count as 0.25 base
RTT unless above 5 base RTTs).
"""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core import evpolicy, evset, nscc
from mrc.core import mpr as mpr_mod
from mrc.core.tables import psn_window
from mrc.errors import ConfigError
from mrc.units import NS, US
from mrc.wire import constants as C

QP_DEFAULTS = {
    "mtu": 4096,
    "mpr": 8,
    "mpr_dest": 8,
    "timeout": 8,
    "retry_linear": 7,
    "retry_exp": 7,
    "max_wimm": 128,
    "max_wimm_dest": 128,
    "ev_active_target": 128,
    "ev_min_active": None,  # n_ev // 4
    "ack_every_pkts": 4,
    "ack_every_bytes": 16384,
    "ack_delay_ps": 1 * US,
    "always_skip_marks": 8,
    "reorder_window_ps": None,  # the CC profile's base RTT
    "ev_first_probe_ps": None,  # the CC profile's base RTT
    "ev_probe_interval_ps": 100 * US,
    "probe_successes": 2,
    "rev_probe_interval_ps": None,  # the CC profile's base RTT
    "rev_rotate": 1,
    "rev_probe_miss_bad": 0,
    "rto_reprobe": 1,
    "rack": 1,
    "rto_retire": 1,
    "ts_unit_ps": 8 * NS,
    "dscp_data": C.DSCP_TRIMMABLE,
    "dscp_rtx": C.DSCP_TRIMMABLE_RETX,
    "dscp_ctrl": C.DSCP_CONTROL,
    "emulate_access": 0,
    "ev_event_mask": 3,
    "trim_nack_dest": 1,
    "psu_floor": 1,
    "svc_time_report": 1,
    "svc_time_peer": 1,
    "dynamic_mpr": 0,
    "hint_share": 1,
    "ev_policy": evpolicy.EVP_MRC,
    "reps_buffer": D.REPS_MAX_BUFFER,
    "reps_reuse": 1,
    "reps_per_psn": 1,
    "reps_explore": 16,
    "reps_freeze_ps": 10_000 * US,
}

# (low, high) bounds checked by `configure_qp`; mrc.h gives the maxima of timeout and retries.
QP_BOUNDS = {
    "mtu": (1, 1 << 20),
    "mpr": (1, 255),
    "mpr_dest": (1, 255),
    "timeout": (0, 24),
    "retry_linear": (0, 7),
    "retry_exp": (0, 25),
    "max_wimm": (0, 65535),
    "max_wimm_dest": (0, 65535),
    "ev_active_target": (1, 65535),
    "ev_min_active": (0, 65535),
    "ack_every_pkts": (1, 65535),
    "ack_every_bytes": (1, 1 << 31),
    "ack_delay_ps": (0, 1 << 50),
    "always_skip_marks": (0, 65535),
    "reorder_window_ps": (0, 1 << 50),
    "ev_first_probe_ps": (0, 1 << 50),
    "ev_probe_interval_ps": (1, 1 << 50),
    "probe_successes": (1, 255),
    "rev_probe_interval_ps": (1, 1 << 50),
    "rev_rotate": (0, 1),
    "rev_probe_miss_bad": (0, 1),
    "rto_reprobe": (0, 1),
    "rack": (0, 1),
    "rto_retire": (0, 1),
    "ts_unit_ps": (1, 1 << 40),
    "dscp_data": (0, 63),
    "dscp_rtx": (0, 63),
    "dscp_ctrl": (0, 63),
    "emulate_access": (0, 1),
    "ev_event_mask": (0, 3),
    "trim_nack_dest": (0, 1),
    "psu_floor": (0, 1),
    "svc_time_report": (0, 1),
    "svc_time_peer": (0, 1),
    "dynamic_mpr": (0, 1),
    "hint_share": (1, 65535),
    "ev_policy": (0, len(evpolicy.NAMES) - 1),
    "reps_buffer": (1, D.REPS_MAX_BUFFER),
    "reps_reuse": (1, 255),
    "reps_per_psn": (0, 1),
    "reps_explore": (0, 65535),
    "reps_freeze_ps": (0, 1 << 50),
}


# UE 1.0.3 3.6.13.3 / UEC htsim: the increase constants are defined on a reference network of
# 100 Gb/s and a 12 us base RTT, and scaled to this one
REF_BDP_BYTES = 100 * 10**9 * 12 // (8 * 10**6)
REF_RTT_PS = 12 * US


def nscc_profile(*, mtu: int = 4096, rate_bps: int = 800_000_000_000, base_rtt_ps: int = 8 * US,
                 trimming: bool = True, **overrides) -> dict:
    """An NSCC CC-profile row (as a dict) for a QP of aggregate rate `rate_bps`.

    `trimming` says whether the fabric trims (target 0.75 x base RTT) or not (1.0 x).
    Parameters derived from others (QuickAdapt threshold and proportional gain from
    ``target_delay``; initial and minimum window from ``max_cwnd``) follow an
    overridden value unless they are overridden themselves, so a profile that only
    lowers ``max_cwnd`` also starts within it.
    """
    bdp = rate_bps * base_rtt_ps // (8 * 10**12)
    target = overrides.get("target_delay", base_rtt_ps * 3 // 4 if trimming else base_rtt_ps)
    max_cwnd = overrides.get("max_cwnd", max(3 * bdp // 2, mtu))
    a = bdp / REF_BDP_BYTES  # scaling_a
    b = target / REF_RTT_PS  # scaling_b
    prof = {
        "algorithm": D.CC_NSCC,
        "disable_qa": 0,
        "adjust_bytes_threshold": 8 * mtu,
        "adjust_period_threshold": base_rtt_ps,
        "base_rtt": base_rtt_ps,
        "eta": 0.15 * mtu * a,
        "fi": 5.0 * mtu * a,
        "fi_scale": 0.25 * a,
        "gamma": 0.8,
        "max_md_jump": 0.5,
        "max_cwnd": max_cwnd,
        "min_cwnd": min(mtu, max_cwnd),
        "init_cwnd": max_cwnd,
        "qa_gate": 3,
        "qa_threshold": 4 * target,
        "target_delay": target,
        "pi_gain": 4.0 * mtu * a * b / max(target, 1),
        "fast_increase_delay": 1 * US,
        "delay_ewma": 0.0125,
        "delay_filter": 1,
        "delay_filter_low": 0.25,
        "delay_filter_cap": 5.0,
    }
    return _checked_cc({**prof, **overrides})


def fixed_window_profile(*, window_bytes: int, base_rtt_ps: int = 8 * US, mtu: int = 4096) -> dict:
    """CC algorithm "none": a fixed window."""
    prof = nscc_profile(mtu=mtu, base_rtt_ps=base_rtt_ps)
    prof.update(algorithm=D.CC_NONE, max_cwnd=window_bytes, init_cwnd=window_bytes, min_cwnd=min(mtu, window_bytes))
    return _checked_cc(prof)


def _checked_cc(prof: dict) -> dict:
    for key in prof:
        if key not in D.CC.names:
            raise ConfigError(f"cc.{key}", prof[key], "unknown NSCC parameter")
    for key in ("base_rtt", "target_delay", "max_cwnd", "min_cwnd", "init_cwnd", "adjust_bytes_threshold", "adjust_period_threshold"):
        if prof[key] <= 0:
            raise ConfigError(f"cc.{key}", prof[key], "must be positive")
    if prof["min_cwnd"] > prof["max_cwnd"]:
        raise ConfigError("cc.min_cwnd", prof["min_cwnd"], f"exceeds max_cwnd ({prof['max_cwnd']})")
    if not prof["min_cwnd"] <= prof["init_cwnd"] <= prof["max_cwnd"]:
        raise ConfigError("cc.init_cwnd", prof["init_cwnd"], f"must be within [min_cwnd, max_cwnd] = [{prof['min_cwnd']}, {prof['max_cwnd']}]")
    if not 0.0 <= prof["max_md_jump"] <= 1.0:
        raise ConfigError("cc.max_md_jump", prof["max_md_jump"], "must be within [0, 1]")
    if not 0.0 <= prof["delay_ewma"] <= 1.0:
        raise ConfigError("cc.delay_ewma", prof["delay_ewma"], "must be within [0, 1]")
    if prof["delay_filter"] not in (0, 1):
        raise ConfigError("cc.delay_filter", prof["delay_filter"], "must be 0 or 1")
    if not 0.0 <= prof["gamma"]:
        raise ConfigError("cc.gamma", prof["gamma"], "must be non-negative")
    if not 0 <= prof["qa_gate"] <= 63:
        raise ConfigError("cc.qa_gate", prof["qa_gate"], "must be within [0, 63]")
    return prof


def write_cc(T, index: int, prof: dict) -> None:
    row = T.cc[index]
    for key, value in _checked_cc(dict(prof)).items():
        row[key] = value


def ev_policy_code(value) -> int:
    """An EV selection policy given by name (one of `evpolicy.NAMES`, any case) or code."""
    if isinstance(value, str):
        names = [n.lower() for n in evpolicy.NAMES]
        if value.lower() not in names:
            raise ConfigError("qp.ev_policy", value, f"unknown EV selection policy (one of {', '.join(evpolicy.NAMES)})")
        return names.index(value.lower())
    return value


def configure_qp(T, i: int, n_ev: int, base_rtt_ps: int, **attrs) -> dict:
    """Write QP attributes (defaults for those not given) into row `i`; returns what was written."""
    cfg = dict(QP_DEFAULTS)
    for key, value in attrs.items():
        if key not in QP_DEFAULTS:
            raise ConfigError(f"qp.{key}", value, f"unknown QP attribute (known: {', '.join(sorted(QP_DEFAULTS))})")
        cfg[key] = ev_policy_code(value) if key == "ev_policy" else value
    if cfg["ev_min_active"] is None:
        cfg["ev_min_active"] = n_ev // 4
    if cfg["reorder_window_ps"] is None:
        cfg["reorder_window_ps"] = base_rtt_ps
    if cfg["rev_probe_interval_ps"] is None:
        cfg["rev_probe_interval_ps"] = base_rtt_ps
    if cfg["ev_first_probe_ps"] is None:
        cfg["ev_first_probe_ps"] = base_rtt_ps
    for key, value in cfg.items():
        lo, hi = QP_BOUNDS[key]
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise ConfigError(f"qp.{key}", value, f"must be an integer within [{lo}, {hi}]")
    if cfg["ev_min_active"] > n_ev:
        raise ConfigError("qp.ev_min_active", cfg["ev_min_active"], f"exceeds the number of EVs ({n_ev})")
    if n_ev > T.ev.shape[1]:
        raise ConfigError("qp.n_ev", n_ev, f"exceeds the EV table's {T.ev.shape[1]} slots per QP (allocate max_ev)")
    # PSN p lives in slot p & (window - 1): an MPR window larger than the table would alias PSNs
    for key, table in (("mpr", T.tx), ("mpr_dest", T.rx)):
        if cfg[key] * D.MPR_UNIT > psn_window(table):
            raise ConfigError(f"qp.{key}", cfg[key], f"x 128 PSNs exceeds the {psn_window(table)}-PSN window the "
                              f"tables were allocated with (allocate window >= {cfg[key] * D.MPR_UNIT})")
    row = T.qp[i]
    # a running responder's window changes only as dynamic MPR changes it (`mpr.set_mpr_dest`: a shrink
    # holds what the requester may have sent under the larger one), whoever rewrites the attributes
    running = row["state"] == D.QPS_RTR or row["state"] == D.QPS_RTS
    for key, value in cfg.items():
        if not (running and key == "mpr_dest"):
            row[key] = value
    if running and cfg["mpr_dest"] != row["mpr_dest"]:
        mpr_mod.set_mpr_dest(T, i, cfg["mpr_dest"])
    return cfg


def hint_share(num_qps_per_peer: int = 0, num_send_peers: int = 0, num_remote_recv_peers: int = 0) -> int:
    """The QP attribute ``hint_share`` for a QP hint (``mrc.h`` ``mrc_qp_hint_attr``; 0 or less: not given).

    A QP of the hint shares its sending NIC with ``num_qps_per_peer x num_send_peers`` QPs of the
    hint (that many QPs to each of that many peers at once), and its peer's receiving port with the
    ``num_remote_recv_peers`` QPs that target it ("the incast experienced by the target of this
    QP"); its fair share of the tighter of the two is 1 / the larger count. NSCC starts such a QP
    at its profile's initial window divided by that (`nscc.cc_init`) instead of at the full window,
    which every one of the QPs would otherwise send into the same port in the first round trip
    (extension, ours; docs/protocol.md, "QP hints"). The hint's ``vendor_cfg`` has no meaning here.
    Returns 1..65535 (1: no hint, the full window)."""
    for key, value in (("num_qps_per_peer", num_qps_per_peer), ("num_send_peers", num_send_peers),
                       ("num_remote_recv_peers", num_remote_recv_peers)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"qp_hint.{key}", value, "must be an integer")
    send = max(num_qps_per_peer, 1) * max(num_send_peers, 1)
    return int(min(max(send, num_remote_recv_peers, 1), QP_BOUNDS["hint_share"][1]))


def modify_mpr(T, i: int, *, mpr: int | None = None, mpr_dest: int | None = None) -> None:
    """Dynamic MPR (``mrc.h`` ``MRC_QP_CAP_DYNAMIC_MPR``, `mrc.core.mpr`): the requester's `mpr` and / or the
    responder's `mpr_dest` (units of 128 PSNs) change now, on a QP whose ``dynamic_mpr`` is on. The
    responder's next SACK advertises a new ``mpr_dest``; the requester follows it. Refused with
    `ConfigError` naming the key: dynamic MPR off, a value outside 1..255, or a window larger than
    the tables were allocated with."""
    q = T.qp[i]
    if q["dynamic_mpr"] == 0:
        key = "mpr" if mpr is not None else "mpr_dest"
        raise ConfigError(f"qp.{key}", mpr if mpr is not None else mpr_dest,
                          "cannot change while the QP runs: dynamic MPR is off (qp.dynamic_mpr = 0)")
    for key, value, table in (("mpr", mpr, T.tx), ("mpr_dest", mpr_dest, T.rx)):
        if value is None:
            continue
        lo, hi = QP_BOUNDS[key]
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise ConfigError(f"qp.{key}", value, f"must be an integer within [{lo}, {hi}]")
        if value * D.MPR_UNIT > psn_window(table):
            raise ConfigError(f"qp.{key}", value, f"x 128 PSNs exceeds the {psn_window(table)}-PSN window the "
                              f"tables were allocated with")
    if mpr is not None:
        mpr_mod.set_mpr(T, i, mpr)
    if mpr_dest is not None:
        mpr_mod.set_mpr_dest(T, i, mpr_dest)


@njit_core
def start_responder(T, i, rq_psn, now):
    """Reset the responder half: the next PSN expected from the peer is `rq_psn`."""
    q = T.qp[i]
    q["cack_psn"] = (rq_psn - 1) & D.PSN_MASK
    mpr_mod.start(q)
    q["ack_pending"] = D.ACK_NONE
    q["ack_deadline"] = D.NEVER
    q["nack_n"] = 0
    q["rx_active_until"] = 0
    q["rev_probe_deadline"] = D.NEVER
    q["rev_probe_timeout"] = D.NEVER
    q["rev_probe_slot"] = -1
    q["rev_probe_due"] = 0
    for p in range(D.MAX_PLANES):
        q["rev_ev"][p] = -1
        q["rev_fresh"][p] = 0
    full = (i64(1) << i64(q["n_planes"])) - 1
    q["local_ports"] = full
    q["remote_ports"] = full
    nscc.cc_init(T, i, now)
    q["srtt"] = q["base_rtt"]
    q["last_rtt"] = q["base_rtt"]
    evset.setup_planes(T, i)


@njit_core
def start_requester(T, i, sq_psn, now):
    """Reset the requester half: the first PSN it sends is `sq_psn`."""
    q = T.qp[i]
    q["sq_psn"] = sq_psn
    q["una_psn"] = sq_psn
    q["start_psn"] = sq_psn
    q["lost_lo"] = sq_psn
    q["peer_mpr"] = 0
    q["inflight"] = 0
    q["n_lost"] = 0
    q["rack_seq"] = 0
    q["rto_deadline"] = D.NEVER
    q["rto_marked_since"] = D.NEVER
    q["loss_deadline"] = D.NEVER
    q["rel_probe_deadline"] = D.NEVER
    q["rel_probe_pending"] = 0
    q["rel_probe_slot"] = -1
    q["ev_probe_deadline"] = D.NEVER
    q["ev_probe_due"] = 0
    q["tx_active_until"] = 0
    evpolicy.start(T, i)
    nscc.cc_init(T, i, now)
