"""DCQCN rate control (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015).

Reaction point (the sender's NIC), per QP, rates in bits/s:

- on a CNP (at most one rate decrease per ``dec_ps``): target ``Rt = Rc``,
  current ``Rc = Rc * (1 - alpha / 2)`` (not below ``min_rate``), increase
  counters reset, rate-increase timer restarted;
- alpha: per ``alpha_ps`` interval, ``alpha = (1 - g) * alpha + g`` if a CNP
  arrived in it, else ``alpha = (1 - g) * alpha`` (the interval form of the
  NVIDIA ConnectX implementation that the ns-3 HPCC/ConWeave model follows).
  Evaluated lazily when needed, with exact repeated multiplication, so no
  event per interval and the same bits on every machine;
- increase events (timer every ``inc_ps``; byte counter every ``bc`` bytes
  sent, 0 = off): stage = the counters; below ``F`` fast recovery
  ``Rc = (Rt + Rc) / 2``; at ``F`` additive ``Rt += rai``; above ``F``
  hyper ``Rt += (stage - F) * rhai``, then ``Rc = (Rt + Rc) / 2`` (with the
  byte counter on: fast while max(T, BC) < F, hyper when min(T, BC) > F, as
  in the paper).

Defaults (`transports.roce.DEFAULTS`) are the ns-3 HPCC repository's DCQCN
settings (alibaba-edu/High-Precision-Congestion-Control, ``simulation/run.py``):
g = 1/256, alpha interval 1 us, decrease interval 4 us, increase timer 300 us,
F = 5, rai = 5 Mb/s x (link Gb/s / 25), rhai = 50 Mb/s x (link Gb/s / 25).
"""
from __future__ import annotations

from mrc.emulator._jit import njit
from mrc.emulator.state import NEVER


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
    """Close the alpha intervals that ended before `now` (row `r` of the ROCE table)."""
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


@njit
def on_cnp(r, rp, now):
    update_alpha(r, rp, now)
    r["alpha_cnp"] = 1
    if r["last_dec"] >= 0 and now - r["last_dec"] < rp["dec_ps"]:
        return
    r["last_dec"] = now
    r["target"] = r["rate"]
    nr = int(r["rate"] * (1.0 - r["alpha"] / 2.0))
    r["rate"] = nr if nr > rp["min_rate"] else rp["min_rate"]
    r["t_cnt"] = 0
    r["bc_cnt"] = 0
    r["bc_bytes"] = 0
    r["inc_at"] = now + rp["inc_ps"]


@njit
def increase(r, rp, from_timer):
    if from_timer:
        r["t_cnt"] += 1
    else:
        r["bc_cnt"] += 1
    if rp["bc"] > 0:
        mx = max(r["t_cnt"], r["bc_cnt"])
        mn = min(r["t_cnt"], r["bc_cnt"])
    else:
        mx = r["t_cnt"]
        mn = r["t_cnt"]
    F = rp["F"]
    line = rp["line_rate"]
    if mx >= F:
        if mn > F:
            r["target"] += (mn - F) * rp["rhai"]
        else:
            r["target"] += rp["rai"]
        if r["target"] > line:
            r["target"] = line
    r["rate"] = (r["target"] + r["rate"]) // 2
    if r["rate"] > line:
        r["rate"] = line


@njit(inline="always")
def on_timer(r, rp, now):
    """Rate-increase timer; stops once back at line rate."""
    if now < r["inc_at"]:
        return
    increase(r, rp, True)
    if r["rate"] >= rp["line_rate"] and r["target"] >= rp["line_rate"]:
        r["inc_at"] = NEVER
    else:
        r["inc_at"] = now + rp["inc_ps"]


@njit(inline="always")
def on_sent(r, rp, nbytes):
    """Byte counter: one increase event every ``bc`` bytes sent (off when 0)."""
    if rp["bc"] <= 0 or r["rate"] >= rp["line_rate"]:
        return
    r["bc_bytes"] += nbytes
    while r["bc_bytes"] >= rp["bc"]:
        r["bc_bytes"] -= rp["bc"]
        increase(r, rp, False)
