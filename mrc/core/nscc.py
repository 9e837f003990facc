"""NSCC congestion control ("uet-1.0-nscc"): one window in bytes per QP.

MRC names UET 1.0 NSCC as its algorithm (mrc_ctl.h: "uet-1.0-nscc") and its
parameters are the fields of ``mrc_ctl_cc_nscc_cfg``. The MRC text of the
algorithm is not public, so this follows UET 1.0 NSCC as described by the UEC
design paper (arXiv:2508.08906) and the UEC htsim reference (mrc-public-notes
7.2); each constant is a CC-profile parameter (see ``cc_profile`` in
`mrc.core.setup` for defaults).

Every SACK is one sample: ``delay = rtt - base_rtt`` (queuing delay) and
``ecn`` (the SACK's M field says the triggering packet was CE-marked).

=============  ===========  ===============================================
ECN            delay        reaction
=============  ===========  ===============================================
no             < target     proportional increase: inc += pi_gain * acked *
                            (target - delay); fast increase (cwnd += acked *
                            fi_scale) when delay < fast_increase_delay
no             >= target    fair increase: inc += fi * acked
yes            >= target    multiplicative decrease, at most once per base
                            RTT: cwnd *= max(1 - gamma * (avg_delay - target)
                            / avg_delay, 1 - max_md_jump)
yes            < target     no change: the EV is skipped instead ("steer
                            first, throttle second")
=============  ===========  ===============================================

Increases accumulate in ``inc_acc`` and are applied every
``adjust_bytes_threshold`` acknowledged bytes or ``adjust_period_threshold``
ps as ``cwnd += inc_acc / cwnd + eta``. QuickAdapt: every base_rtt + target,
if the period saw a trim/loss or ``avg_delay > qa_threshold``, and fewer than
``max_cwnd >> qa_gate`` bytes were acknowledged, the window becomes what was
acknowledged in the period (at least ``min_cwnd``) and feedback for packets
already in flight is ignored. The receiver penalty ``rcv_cwnd_pen`` (0-127)
removes ``acked * pen / 128`` bytes (UET receiver back-pressure, NWK).
Algorithm "none" keeps ``cwnd = max_cwnd``.
"""
from __future__ import annotations

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core.psn import psn_diff


@njit_core
def cc_init(T, i, now):
    q = T.qp[i]
    c = T.cc[q["cc_profile"]]
    if c["algorithm"] == D.CC_NONE:
        q["cwnd"] = float(c["max_cwnd"])
    else:
        q["cwnd"] = float(c["init_cwnd"])
    q["base_rtt"] = c["base_rtt"]
    q["avg_delay"] = 0.0
    q["inc_acc"] = 0.0
    q["acked_since_adjust"] = 0
    q["last_adjust"] = now
    q["last_md"] = now - c["base_rtt"]
    q["qa_deadline"] = now + c["base_rtt"] + c["target_delay"]
    q["qa_achieved"] = 0
    q["qa_congested"] = 0
    q["qa_ignore"] = 0


@njit_core(inline="always")
def _clamp(q, c):
    if q["cwnd"] < c["min_cwnd"]:
        q["cwnd"] = float(c["min_cwnd"])
    if q["cwnd"] > c["max_cwnd"]:
        q["cwnd"] = float(c["max_cwnd"])


@njit_core
def _quick_adapt(q, c, now):
    if now < q["qa_deadline"]:
        return
    if c["disable_qa"] == 0:
        congested = q["qa_congested"] != 0 or q["avg_delay"] > c["qa_threshold"]
        if congested and q["qa_achieved"] < (c["max_cwnd"] >> c["qa_gate"]):
            q["cwnd"] = float(max(q["qa_achieved"], c["min_cwnd"]))
            q["inc_acc"] = 0.0
            q["qa_ignore"] = 1
            q["qa_ignore_psn"] = q["sq_psn"]
    q["qa_deadline"] = now + q["base_rtt"] + c["target_delay"]
    q["qa_achieved"] = 0
    q["qa_congested"] = 0


@njit_core
def ack_feedback(q, c, acked, rtt, ecn, psn, now):
    """A SACK acknowledged `acked` new bytes; `rtt` its sample (ps, <0: none); `psn` the trigger.

    `q` is the QP's row, `c` its CC profile row (``T.cc[q["cc_profile"]]``).
    """
    if c["algorithm"] == D.CC_NONE:
        return
    q["qa_achieved"] += acked
    if q["qa_ignore"]:
        # feedback for packets sent before QuickAdapt cut the window is stale
        if psn_diff(psn, q["qa_ignore_psn"]) < 0:
            _quick_adapt(q, c, now)
            return
        q["qa_ignore"] = 0
    if rtt >= 0:
        if rtt < q["base_rtt"]:
            q["base_rtt"] = rtt
        delay = float(rtt - q["base_rtt"])
        q["avg_delay"] += c["delay_ewma"] * (delay - q["avg_delay"])
    else:
        delay = q["avg_delay"]
    target = float(c["target_delay"])
    if not ecn:
        if delay < target:
            q["inc_acc"] += c["pi_gain"] * acked * (target - delay)
            if delay < c["fast_increase_delay"]:
                q["cwnd"] += acked * c["fi_scale"]
        else:
            q["inc_acc"] += c["fi"] * acked
    elif delay >= target:
        if now - q["last_md"] >= q["base_rtt"]:
            avg = max(q["avg_delay"], delay)
            factor = 1.0 - c["gamma"] * (avg - target) / avg if avg > 0 else 1.0
            floor = 1.0 - c["max_md_jump"]
            if factor < floor:
                factor = floor
            q["cwnd"] *= factor
            q["last_md"] = now
            q["inc_acc"] = 0.0
    q["acked_since_adjust"] += acked
    if q["acked_since_adjust"] >= c["adjust_bytes_threshold"] or now - q["last_adjust"] >= c["adjust_period_threshold"]:
        if q["inc_acc"] > 0.0:
            q["cwnd"] += q["inc_acc"] / max(q["cwnd"], 1.0) + c["eta"]
        q["inc_acc"] = 0.0
        q["acked_since_adjust"] = 0
        q["last_adjust"] = now
    _clamp(q, c)
    _quick_adapt(q, c, now)


@njit_core
def congestion(q, c, rtt, now):
    """A trim NACK (rtt: its sample) or a loss: QuickAdapt sees congestion; a long delay also decreases."""
    if c["algorithm"] == D.CC_NONE:
        return
    q["qa_congested"] = 1
    if rtt >= 0 and rtt - q["base_rtt"] >= c["target_delay"] and now - q["last_md"] >= q["base_rtt"]:
        delay = float(rtt - q["base_rtt"])
        factor = 1.0 - c["gamma"] * (delay - c["target_delay"]) / delay
        floor = 1.0 - c["max_md_jump"]
        q["cwnd"] *= factor if factor > floor else floor
        q["last_md"] = now
        q["inc_acc"] = 0.0
        _clamp(q, c)
    _quick_adapt(q, c, now)


@njit_core
def penalty(q, c, acked, pen):
    """rcv_cwnd_pen from CC_STATE: remove acked * pen / 128 bytes from the window."""
    if pen == 0 or c["algorithm"] == D.CC_NONE:
        return
    q["cwnd"] -= acked * pen / 128.0
    _clamp(q, c)


# The same three with the table bundle, for callers that hold (T, i).
@njit_core
def on_ack(T, i, acked, rtt, ecn, psn, now):
    q = T.qp[i]
    ack_feedback(q, T.cc[q["cc_profile"]], acked, rtt, ecn, psn, now)


@njit_core
def on_congestion_loss(T, i, rtt, now):
    q = T.qp[i]
    congestion(q, T.cc[q["cc_profile"]], rtt, now)


@njit_core
def receiver_penalty(T, i, acked, pen):
    q = T.qp[i]
    penalty(q, T.cc[q["cc_profile"]], acked, pen)


@njit_core(inline="always")
def window_open(T, i, nbytes):
    """May `nbytes` more go out? At least one packet may always be in flight."""
    q = T.qp[i]
    return q["inflight"] == 0 or q["inflight"] + nbytes <= q["cwnd"]
