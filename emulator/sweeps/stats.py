"""Medians and bootstrap 95 % confidence intervals per (transport, grid point).

For each group of cells (same transport and grid point, one cell per seed) and
each headline metric: the median over the seeds whose cell completed (status
``ok``), and a percentile-bootstrap interval for that median: `RESAMPLES`
resamples of the n values drawn with replacement, the median of each, and the
2.5th and 97.5th percentiles of those medians (``inverted_cdf``: values that
occur, no interpolation). The resampling generator has a fixed seed, so the
same table gives the same intervals. With one seed there is no interval; with
few seeds the interval is coarse (with 10 seeds its ends are near the 2nd and
9th smallest values) and can understate the uncertainty.

Reroute times that never happened (null in a completed cell: traffic of the
affected flows never left the failed element, goodput that fell never came
back) count as +infinity, so that
a transport that never recovers cannot get a good median from the seeds where
it did; an interval end of infinity means "never" for that share of seeds.
"""
from __future__ import annotations

import numpy as np

RESAMPLES = 10_000
LEVEL = 0.95
SEED = 20260101
# headline metrics: (column, label); a column appears in the statistics when the table has it
HEADLINE = [("fct_us_p50", "FCT p50 us"), ("fct_us_p99", "FCT p99 us"), ("fct_us_max", "FCT max us"),
            ("slowdown_p50", "slowdown p50"), ("slowdown_p99", "slowdown p99"), ("cct_us_max", "CCT max us"),
            ("victim_gbps", "victim Gb/s"), ("failure0_first_steered_away_us", "steered away us"),
            ("failure0_off_99_us", "99% off us"), ("failure0_goodput_recovered_us", "goodput back us")]
NEVER_IS_INF = ("first_steered_away_us", "off_99_us", "goodput_recovered_us")


def median_ci(x, resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED) -> tuple[float, float, float]:
    """(median, low, high) of the values `x` (NaN dropped; see the module docstring)."""
    x = np.asarray(x, float)
    x = x[~np.isnan(x)]
    n = len(x)
    if n == 0:
        return (np.nan, np.nan, np.nan)
    med = float(np.median(x))
    if n == 1:
        return (med, np.nan, np.nan)
    rng = np.random.default_rng(seed)
    meds = np.median(x[rng.integers(0, n, (resamples, n))], axis=1)
    a = (1 - level) / 2
    lo, hi = np.quantile(meds, [a, 1 - a], method="inverted_cdf")
    return (med, float(lo), float(hi))


def metric_values(df, column: str) -> np.ndarray:
    """The column over completed cells, reroute times that never happened as +infinity (module docstring):
    a null steered-away or 99 %-off time of a failure that affected flows, a null recovery time of goodput
    that was measured to fall (a null that means "not measurable" stays null)."""
    ok = df[df["status"] == "ok"]
    v = ok[column].astype(float).to_numpy()
    if column.startswith("failure") and column.endswith(NEVER_IS_INF):
        k = column.split("_", 1)[0]
        cond = f"{k}_min_goodput_gbps" if column.endswith("goodput_recovered_us") else f"{k}_affected_flows"
        if cond in ok:
            c = ok[cond].astype(float).to_numpy()
            v = np.where(np.isnan(v) & ~np.isnan(c) & (c > 0 if cond.endswith("affected_flows") else True), np.inf, v)
    return v


def headline(df) -> list[tuple[str, str]]:
    """The headline metrics this table has values of (a reroute time also when it never happened)."""
    out = []
    for c, lab in HEADLINE:
        if c not in df.columns:
            continue
        aff = f"{c.split('_', 1)[0]}_affected_flows"
        if df[c].notna().any() or (c.endswith(NEVER_IS_INF) and aff in df.columns and df[aff].notna().any()):
            out.append((c, lab))
    return out


def summarize(df, grid_keys: list[str], metrics=None):
    """Long table: one row per (transport, grid point, metric): cells, ok, n, median, ci_low, ci_high."""
    import pandas as pd

    metrics = metrics if metrics is not None else [c for c, _ in headline(df)]
    keys = ["transport", *grid_keys]
    out = []
    if df.empty:
        return pd.DataFrame(columns=keys + ["metric", "cells", "ok", "n", "median", "ci_low", "ci_high"])
    for gk, g in df.groupby(keys, sort=False, dropna=False):
        gk = gk if isinstance(gk, tuple) else (gk,)
        ok = int((g["status"] == "ok").sum())
        for m in metrics:
            v = metric_values(g, m)
            med, lo, hi = median_ci(v)
            out.append({**dict(zip(keys, gk)), "metric": m, "cells": len(g), "ok": ok,
                        "n": int((~np.isnan(v)).sum()), "median": med, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(out)


def fmt(v: float) -> str:
    if v is None or np.isnan(v):
        return "-"
    if np.isinf(v):
        return "never"
    a = abs(v)
    return f"{v:,.0f}" if a >= 1000 else f"{v:,.1f}" if a >= 10 else f"{v:,.2f}"


def cell_text(med, lo, hi) -> str:
    """``205.1 [203.9, 207.2]``."""
    if np.isnan(lo):
        return fmt(med)
    return f"{fmt(med)} [{fmt(lo)}, {fmt(hi)}]"


def text(stats, grid_keys: list[str], labels: dict | None = None) -> str:
    """The printed table: a row per (transport, grid point), a column per metric: median [95 % CI]."""
    if stats.empty:
        return "(no cells)"
    labels = labels or dict(HEADLINE)
    keys = ["transport", *grid_keys]
    metrics = list(dict.fromkeys(stats["metric"]))
    head = keys + ["ok"] + [labels.get(m, m) for m in metrics]
    rows = []
    for gk, g in stats.groupby(keys, sort=False, dropna=False):
        gk = gk if isinstance(gk, tuple) else (gk,)
        by = {r["metric"]: r for r in g.to_dict("records")}
        first = next(iter(by.values()))
        rows.append([str(x) for x in gk] + [f"{first['ok']}/{first['cells']}"]
                    + [cell_text(by[m]["median"], by[m]["ci_low"], by[m]["ci_high"]) if m in by else "-"
                       for m in metrics])
    w = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    n = len(keys)
    return "\n".join("  ".join(c.ljust(w[i]) if i < n else c.rjust(w[i]) for i, c in enumerate(r))
                     for r in [head] + rows)
