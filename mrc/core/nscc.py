"""NSCC congestion control ("uet-1.0-nscc"): one window in bytes per QP.

MRC names UET 1.0 NSCC as its algorithm (mrc_ctl.h: "uet-1.0-nscc") and its
parameters are the fields of ``mrc_ctl_cc_nscc_cfg``. The MRC text of the
algorithm is not public, so this follows the UE Specification 1.0.3 section
3.6.13 (NSCC source algorithm 3.6.13.5, internal functions 3.6.13.6, state
Table 3-77, destination flow control 3.6.13.2), read through a public
translation of its pseudocode, and the UEC htsim (uet-htsim ``uec.cpp``) where
the specification leaves a choice to the implementation (the average delay, the
"delay ~= 0" of fast increase). Each rule below cites its section; every
constant is a CC-profile parameter (``cc_profile`` in `mrc.core.setup`).

Every SACK that acknowledges new bytes is one call of `ack_feedback`
(NSCC.OnACK): ``delay = rtt - base_rtt`` (queuing delay) and ``ecn`` (the
SACK's M field: the triggering packet was CE-marked).

=============  ===========  ===============================================
ECN            delay        reaction (3.6.13.5)
=============  ===========  ===============================================
no             < target     proportional increase: inc_bytes += alpha *
                            acked * (target - delay); replaced by fast
                            increase (cwnd += acked * fi_scale) once a
                            whole window of bytes saw delay ~= 0
no             >= target    fair increase: inc_bytes += fi * acked
yes            >= target    multiplicative decrease if the *average* delay
                            exceeds the target, at most once per base RTT:
                            cwnd *= max(1 - gamma * (avg - target) / avg,
                            max_md_jump)
yes            < target     no change: the EV is skipped instead ("steer
                            first, throttle second")
=============  ===========  ===============================================

Increases accumulate in ``inc_bytes`` and are applied (fulfill_adjustment)
when more than ``adjust_bytes_threshold`` bytes were acknowledged or
``adjust_period_threshold`` passed, as ``cwnd += inc_bytes / cwnd``, plus
``eta`` once per period. QuickAdapt runs first on every SACK. A trim NACK takes
the trimmed packet's bytes off the window (or triggers QuickAdapt); an inferred
loss takes the lost packet's bytes off. A SACK carrying ``rcv_cwnd_pen``
(Rcv_Cwnd_Pend) holds the window at what is in flight, less ``pen / 128`` of the
acknowledged bytes, and suppresses increases. Algorithm "none" keeps
``cwnd = max_cwnd``.
"""
from __future__ import annotations

from mrc._jit import njit_core
from mrc.core import dtypes as D


@njit_core
def use_profile(T, i, row):
    """QP `i` runs with the CC profile in row `row` of ``T.cc`` (bound at INIT; read from its next start)."""
    T.qp[i]["cc_profile"] = row


@njit_core
def cc_init(T, i, now):
    """The source state of Table 3-77 (UE 1.0.3 3.6.13.4). A QP hint that says this QP shares its
    bottleneck with others (``hint_share`` > 1, `mrc.core.setup.hint_share`) starts it at that share of
    the initial window, never below ``min_cwnd`` (extension, ours); the fixed window is not changed."""
    q = T.qp[i]
    c = T.cc[q["cc_profile"]]
    if c["algorithm"] == D.CC_NONE:
        q["cwnd"] = float(c["max_cwnd"])
    else:
        q["cwnd"] = float(c["init_cwnd"])
        if q["hint_share"] > 1:
            q["cwnd"] = max(q["cwnd"] / q["hint_share"], float(c["min_cwnd"]))
    q["base_rtt"] = c["base_rtt"]
    q["max_wnd"] = float(c["max_cwnd"])
    q["saved_cwnd"] = 0.0
    q["avg_delay"] = 0.0
    q["inc_bytes"] = 0.0
    q["received_bytes"] = 0
    q["achieved_bytes"] = 0
    q["fi_count"] = 0
    q["increase_mode"] = 0
    q["trigger_qa"] = 0
    q["qa_endtime"] = 0
    q["bytes_to_ignore"] = 0
    q["bytes_ignored"] = 0
    q["last_adjust_time"] = now
    q["last_dec_time"] = now


@njit_core(inline="always")
def _floor(q, c):
    if q["cwnd"] < c["min_cwnd"]:
        q["cwnd"] = float(c["min_cwnd"])


@njit_core(inline="always")
def _cap(q, c):
    if q["cwnd"] > q["max_wnd"]:
        q["cwnd"] = q["max_wnd"]
    _floor(q, c)


@njit_core
def _update_base_rtt(q, c, rtt):
    """update_base_rtt (3.6.13.6): base_rtt only decreases, and MaxWnd follows it (1.5 x the
    link rate x base_rtt: the profile's ``max_cwnd`` is that window at ``config_base_rtt``)."""
    if rtt < q["base_rtt"]:
        q["base_rtt"] = rtt
        q["max_wnd"] = max(float(c["max_cwnd"]) * rtt / c["base_rtt"], float(c["min_cwnd"]))


@njit_core
def _update_delay(q, c, delay, ecn):
    """update_delay: the running average behind get_avg_delay (3.6.13.6 leaves it to the
    implementation). UEC htsim's filter (``UecSrc::update_delay``): a sample above the target
    that carries no ECN mark is replaced by ``delay_filter_low`` x base RTT (the queue it met has
    drained, or the mark would be there), except samples above ``delay_filter_cap`` x base RTT,
    which always count. ``delay_filter = 0`` averages every sample as it is."""
    sample = float(delay)
    if c["delay_filter"] != 0 and not ecn and delay > c["target_delay"] \
            and delay <= c["delay_filter_cap"] * q["base_rtt"]:
        sample = c["delay_filter_low"] * q["base_rtt"]
    q["avg_delay"] += c["delay_ewma"] * (sample - q["avg_delay"])


@njit_core
def _quick_adapt(q, c, is_loss, ecn, delay, now):
    """quick_adapt (3.6.13.6): True when it cut the window or the SACK belongs to the bytes it
    ignores (marked feedback for what was in flight when it cut); both reset the adjustment."""
    if c["disable_qa"] != 0:
        return False
    done = False
    if q["bytes_ignored"] < q["bytes_to_ignore"] and ecn:
        done = True
    elif now >= q["qa_endtime"]:
        if q["qa_endtime"] != 0 and (q["trigger_qa"] != 0 or is_loss or delay > c["qa_threshold"]) \
                and q["achieved_bytes"] < (int(q["max_wnd"]) >> int(c["qa_gate"])):
            q["cwnd"] = float(max(q["achieved_bytes"], c["min_cwnd"]))
            q["bytes_to_ignore"] = q["inflight"]
            q["bytes_ignored"] = 0
            q["trigger_qa"] = 0
            done = True
        q["achieved_bytes"] = 0
        q["qa_endtime"] = now + q["base_rtt"] + c["target_delay"]
    if done:
        q["inc_bytes"] = 0.0
        q["received_bytes"] = 0
    return done


@njit_core
def _fast_increase(q, c, acked, delay):
    """fast_increase (3.6.13.6): only after more than a window of bytes saw ``delay ~= 0``
    (below ``fast_increase_delay``, htsim's 1 us), then exponential growth until any delay."""
    if delay < c["fast_increase_delay"]:
        q["fi_count"] += acked
        if q["fi_count"] > q["cwnd"] or q["increase_mode"] != 0:
            q["cwnd"] += acked * c["fi_scale"]
            if q["cwnd"] > q["max_wnd"]:
                q["cwnd"] = q["max_wnd"]
            q["increase_mode"] = 1
            return
    else:
        q["fi_count"] = 0
    q["increase_mode"] = 0


@njit_core
def _multiplicative_decrease(q, c, now):
    """multiplicative_decrease (3.6.13.6): on the average delay, at most once per base RTT."""
    q["increase_mode"] = 0
    q["fi_count"] = 0
    avg = q["avg_delay"]
    target = float(c["target_delay"])
    if avg > target and now - q["last_dec_time"] > q["base_rtt"]:
        factor = 1.0 - c["gamma"] * (avg - target) / avg
        if factor < c["max_md_jump"]:
            factor = c["max_md_jump"]
        q["cwnd"] *= factor
        _floor(q, c)
        q["last_dec_time"] = now


@njit_core
def _fulfill_adjustment(q, c, now):
    """fulfill_adjustment (3.6.13.6): apply the accumulated increase; eta once per period."""
    q["cwnd"] += q["inc_bytes"] / max(q["cwnd"], 1.0)
    if now - q["last_adjust_time"] >= c["adjust_period_threshold"]:
        q["last_adjust_time"] = now
        q["cwnd"] += c["eta"]
    _cap(q, c)
    q["inc_bytes"] = 0.0
    q["received_bytes"] = 0


@njit_core
def _apply_cwnd_penalty(q, c, pen, restore, acked):
    """apply_cwnd_penalty (3.6.13.2, 3.6.13.6): while the destination sends Rcv_Cwnd_Pend > 0
    the window is held at what is in flight less ``pen * acked >> 7``; with Restore_Cwnd the
    window saved when the penalty began comes back once it ends. True while penalised."""
    if pen > 0:
        if q["saved_cwnd"] == 0.0:
            q["saved_cwnd"] = q["cwnd"]
        if q["cwnd"] > q["inflight"]:
            q["cwnd"] = float(q["inflight"])
        q["cwnd"] -= float((pen * acked) >> 7)
        _floor(q, c)
        return True
    if restore and q["saved_cwnd"] > 0.0:
        q["cwnd"] = q["saved_cwnd"]
        q["saved_cwnd"] = 0.0
        _cap(q, c)
    return False


@njit_core
def ack_feedback(q, c, acked, rtt, ecn, pen, restore, now):
    """NSCC.OnACK (3.6.13.5): a SACK acknowledged `acked` new bytes; `rtt` is its sample
    (ps, < 0: none, and then only the counters and the penalty move); `pen` / `restore` the
    CC_STATE's rcv_cwnd_pen and r_c. Call after `inflight` no longer counts the acked bytes.

    `q` is the QP's row, `c` its CC profile row (``T.cc[q["cc_profile"]]``).
    """
    if c["algorithm"] == D.CC_NONE:
        return
    q["bytes_ignored"] += acked
    q["received_bytes"] += acked
    q["achieved_bytes"] += acked
    limited = _apply_cwnd_penalty(q, c, pen, restore, acked)
    if rtt < 0:
        return
    _update_base_rtt(q, c, rtt)
    delay = rtt - q["base_rtt"]
    _update_delay(q, c, delay, ecn)
    if _quick_adapt(q, c, False, ecn, delay, now):
        return
    target = c["target_delay"]
    if not ecn and not limited:
        if delay >= target:
            q["inc_bytes"] += c["fi"] * acked
        else:
            _fast_increase(q, c, acked, delay)
            if q["increase_mode"] == 0:
                q["inc_bytes"] += c["pi_gain"] * acked * (target - delay)
    elif ecn and delay >= target:
        _multiplicative_decrease(q, c, now)
    # ECN below the target: no change, the EV is skipped (3.6.13: ECN-driven load balancing
    # gets to move traffic before the aggregate window shrinks)
    if now - q["last_adjust_time"] >= c["adjust_period_threshold"] or q["received_bytes"] > c["adjust_bytes_threshold"]:
        _fulfill_adjustment(q, c, now)
    _cap(q, c)


@njit_core
def trim(q, c, nbytes, rtt, now):
    """NSCC.OnNACK for a trimmed packet of `nbytes` (3.6.13.5): the delay average takes one
    config base RTT (the trimmed queue's delay), QuickAdapt is triggered, and unless it runs
    the packet's bytes come off the window. TRIMMED_LASTHOP is treated the same: the
    specification spares it only where receiver credit (RCCC) manages the last hop, and MRC
    has none."""
    if c["algorithm"] == D.CC_NONE:
        return
    if rtt >= 0:
        _update_base_rtt(q, c, rtt)
    _update_delay(q, c, c["base_rtt"], True)
    q["bytes_ignored"] += nbytes
    q["trigger_qa"] = 1
    if not _quick_adapt(q, c, True, True, 0, now):
        q["cwnd"] -= nbytes
        _floor(q, c)


@njit_core
def loss(q, c, nbytes):
    """NSCC.OnInferredLoss (3.6.13.5): a packet of `nbytes` declared lost (RACK or timeout)."""
    if c["algorithm"] == D.CC_NONE:
        return
    q["cwnd"] -= nbytes
    _floor(q, c)
    q["bytes_ignored"] += nbytes


# The same with the table bundle, for callers that hold (T, i).
@njit_core
def on_ack(T, i, acked, rtt, ecn, now, pen=0, restore=False):
    q = T.qp[i]
    ack_feedback(q, T.cc[q["cc_profile"]], acked, rtt, ecn, pen, restore, now)


@njit_core
def on_trim(T, i, nbytes, rtt, now):
    q = T.qp[i]
    trim(q, T.cc[q["cc_profile"]], nbytes, rtt, now)


@njit_core
def on_loss(T, i, nbytes):
    q = T.qp[i]
    loss(q, T.cc[q["cc_profile"]], nbytes)


@njit_core(inline="always")
def window_open(T, i, nbytes):
    """May `nbytes` more go out? At least one packet may always be in flight."""
    q = T.qp[i]
    return q["inflight"] == 0 or q["inflight"] + nbytes <= q["cwnd"]
