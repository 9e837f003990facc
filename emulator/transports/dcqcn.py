"""DCQCN reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015),
with the NVIDIA ConnectX refinements that deployed NICs run (parameter sets and their sources:
`transports.dcqcn_profiles`).

Per QP, rates in bits/s (row `r` of the `roce.ROCE` table, parameters `rp` of `roce.RP`):

- First CNP: the NIC allocates the QP's rate limiter: alpha = ``alpha_init``
  (ConnectX ``initial_alpha_value``; HPCC's ns-3 model does the same), the
  alpha clock starts. Before it alpha plays no part (it does not decay from
  the flow's start).
- Alpha: per ``alpha_ps`` interval, ``alpha = (1 - g) alpha + g`` if a CNP
  arrived in it, else ``alpha = (1 - g) alpha``. Evaluated lazily with exact
  repeated multiplication: no event per interval, same bits everywhere.
- Rate decrease (at most one per ``dec_ps``, ConnectX
  ``rate_reduce_monitor_period``): a CNP ``dec_ps`` or more after the last cut
  cuts now; one arriving sooner is remembered and cuts when the period ends
  (it is never lost). A cut: ``Rt = Rc`` if the target is clamped (below),
  ``Rc = max(min_rate, Rc (1 - alpha / 2))``; the increase counters reset and
  the increase timer restarts.
- Target clamping (ConnectX ``clamp_tgt_rate``, ``clamp_tgt_rate_after_time_inc``):
  with ``clamp`` set, every cut sets ``Rt = Rc`` (the paper's rule). Without
  it (ConnectX default), a cut sets ``Rt = Rc`` only if the rate was
  increased since the previous cut, by the byte counter, or by the timer when
  ``clamp_time`` is set. So the cuts that follow one another during one
  feedback delay lower the rate but not the target, and recovery aims at the
  rate before the congestion event (HPCC's ns-3 model: ``CLAMP_TARGET_RATE 0``).
- Rate increase events: the timer (every ``inc_ps`` after a cut or the last
  timer event) and the byte counter (every ``bc`` bytes sent; 0 = off). With
  ``t`` and ``b`` the events of each kind since the cut before this one
  (both ``t`` when the byte counter is off): fast recovery while
  ``max(t, b) < F`` (``Rc = (Rt + Rc) / 2``); hyper increase when
  ``min(t, b) > F`` (``Rt += (min(t, b) - F) R_HAI``, the QCN / paper
  progression); additive increase otherwise (``Rt += R_AI``); both followed
  by ``Rc = (Rt + Rc) / 2`` (rates are whole bits/s: a cut rounds down, an
  increase up). So the first F events are fast recovery, as in
  the paper and HPCC's model. Rates never exceed the line rate; the timer
  stops once Rc and Rt are both back at line rate.
"""
from __future__ import annotations

from mrc.emulator._jit import njit
from mrc.emulator.state import NEVER
from mrc.units import serialization_ps

INC_BC = 1  # `inc_flags`: the byte counter raised the rate since the last cut
INC_TIMER = 2  # the timer did


@njit(inline="always")
def powi(x, n):
    """x**n for an integer n >= 0 by repeated squaring (IEEE multiplications only: reproducible)."""
    r = 1.0
    while n > 0:
        if n & 1:
            r *= x
        x *= x
        n >>= 1
    return r


@njit
def update_alpha(r, rp, now):
    """Close the alpha intervals that ended by `now` (nothing before the first CNP)."""
    if r["cc_on"] == 0:
        return
    k = (now - r["alpha_t"]) // rp["alpha_ps"]
    if k <= 0:
        return
    g = rp["g"]
    a = r["alpha"]
    n = k
    if r["alpha_cnp"] != 0:
        a = (1.0 - g) * a + g
        n -= 1
        r["alpha_cnp"] = 0
    if n > 0:
        a *= powi(1.0 - g, n)
    r["alpha"] = a
    r["alpha_t"] += k * rp["alpha_ps"]


@njit(inline="always")
def repace(r):
    """The rate changed: the next packet leaves one packet time at the new rate after the last one
    (as HPCC's ns-3 model reschedules on every rate change); a QP paced at a collapsed rate must not
    keep waiting for the old gap once its rate is raised."""
    r["next_send"] = r["tx_at"] + serialization_ps(r["tx_bytes"], r["rate"])


@njit
def decrease(r, rp, now):
    """One rate cut (the caller checked the monitor period)."""
    update_alpha(r, rp, now)
    f = r["inc_flags"]
    if rp["clamp"] != 0 or (f & INC_BC) != 0 or (rp["clamp_time"] != 0 and (f & INC_TIMER) != 0):
        r["target"] = r["rate"]
    nr = int(r["rate"] * (1.0 - r["alpha"] / 2.0))
    r["rate"] = nr if nr > rp["min_rate"] else rp["min_rate"]
    r["last_dec"] = now
    r["dec_pending"] = 0
    r["inc_flags"] = 0
    r["t_cnt"] = 0
    r["bc_cnt"] = 0
    r["bc_bytes"] = 0
    r["inc_at"] = now + rp["inc_ps"]
    r["cuts"] += 1
    repace(r)


@njit
def on_cnp(r, rp, now):
    r["cnps"] += 1
    if r["cc_on"] == 0:
        r["cc_on"] = 1
        r["alpha"] = rp["alpha_init"]
        r["alpha_t"] = now
        r["alpha_cnp"] = 0
    else:
        update_alpha(r, rp, now)
        r["alpha_cnp"] = 1
    if r["last_dec"] >= 0 and now - r["last_dec"] < rp["dec_ps"]:
        r["dec_pending"] = 1
        return
    decrease(r, rp, now)


@njit(inline="always")
def dec_deadline(r, rp):
    """When a remembered CNP cuts the rate (NEVER: none pending)."""
    return r["last_dec"] + rp["dec_ps"] if r["dec_pending"] != 0 else NEVER


@njit
def increase(r, rp, from_timer):
    t = r["t_cnt"]
    b = r["bc_cnt"]
    if from_timer:
        r["t_cnt"] = t + 1
        r["inc_flags"] |= INC_TIMER
    else:
        r["bc_cnt"] = b + 1
        r["inc_flags"] |= INC_BC
    if rp["bc"] > 0:
        mx = t if t > b else b
        mn = b if t > b else t
    else:
        mx = t
        mn = t
    F = rp["F"]
    line = rp["line_rate"]
    if mx >= F:
        if mn > F:
            r["target"] += (mn - F) * rp["rhai"]
        else:
            r["target"] += rp["rai"]
        if r["target"] > line:
            r["target"] = line
    # whole bits/s, rounded up: the rate reaches its target (rounding down it would stop 1 b/s short of
    # the line rate, and the increase timer would never stop)
    r["rate"] = (r["target"] + r["rate"] + 1) // 2
    if r["rate"] > line:
        r["rate"] = line
    repace(r)


@njit(inline="always")
def on_timer(r, rp, now):
    """A remembered cut that is due, then the rate-increase timer; the timer stops back at line rate."""
    if r["dec_pending"] != 0 and now >= r["last_dec"] + rp["dec_ps"]:
        decrease(r, rp, now)
    if now < r["inc_at"]:
        return
    increase(r, rp, True)
    if r["rate"] >= rp["line_rate"] and r["target"] >= rp["line_rate"]:
        r["inc_at"] = NEVER
    else:
        r["inc_at"] = now + rp["inc_ps"]


@njit(inline="always")
def on_sent(r, rp, nbytes):
    """Byte counter: one increase event every ``bc`` bytes sent (off when 0, or at line rate)."""
    if rp["bc"] <= 0 or r["rate"] >= rp["line_rate"]:
        return
    r["bc_bytes"] += nbytes
    while r["bc_bytes"] >= rp["bc"]:
        r["bc_bytes"] -= rp["bc"]
        increase(r, rp, False)
