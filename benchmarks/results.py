"""Regenerate every table and figure of docs/results.md from the committed scenarios, over many seeds.

    python benchmarks/results.py --doc docs/results.md     # all eight experiments, 10 seeds each, into the page
    python benchmarks/results.py --only 4,5 --seeds 1-3    # some of them, fewer seeds (a quick look)
    python benchmarks/results.py --workers 1               # local Dask cluster size (default: the core count)
    python benchmarks/results.py --scheduler tcp://HOST:PORT   # or an existing Dask cluster

Every experiment is a sweep (`mrc.emulator.sweep`, docs/sweeps.md) of its
scenarios (`emulator/scenarios/results/r<N>-*.toml`, library names
`results/r<N>-...`) over its transports and the seeds (default 1-10). The
sweeps live in ``RUNS/<scenario>`` (default RUNS: runs/results) and run with
``resume``: a second run re-uses every cell whose scenario, transport, seed and
code are unchanged, so after a code change this one command regenerates
exactly what changed. Every number in a table is the median over the seeds and
its bootstrap 95 % interval, ``median [low, high]``
(`mrc.emulator.sweeps.stats.median_ci`). Markdown goes to ``OUT/tables.md``
and stdout, the numbers to ``OUT/results.json``, plots to ``OUT/r<N>-*.png``
(default OUT: docs/results). With ``--doc PAGE`` each experiment's tables
replace what stands between ``<!-- table N -->`` and ``<!-- /table N -->`` in
PAGE, and the headline table and its interval sentences the
``<!-- table headlines -->`` block.

Transports: `ALL` (experiments 1, 2, 5, 7, 8), `LOSS_T` (6), `T3` (3), `T4` (4):
add a spec there (``name:key=value``) and it gets its rows everywhere.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

import ablation as _ablation  # benchmarks/ablation.py: the extensions and "MRC as specified"
import docblocks  # benchmarks/docblocks.py
from mrc.emulator import results as R
from mrc.emulator import scenario
from mrc.emulator import scenarios as lib
from mrc.emulator.sweeps.stats import fmt as sfmt
from mrc.emulator.sweeps.stats import median_ci

# `mrc` runs with every extension of docs/protocol.md on; SPECIFIED is `mrc` with all of them off ("MRC as
# specified", benchmarks/ablation.py), a row of its own in every experiment but 3 (the 8192-host runs cost
# ~140 s a cell); LABELS names it in the tables.
SPECIFIED = _ablation.SPECIFIED
LABELS = {SPECIFIED: "mrc as specified"}
ALL = ["roce-ecmp", "roce-ecmp:lossless=false", "mrc", SPECIFIED, "mrc-1ev", "spray", "reps", "ar"]
LOSS_T = ["roce-ecmp", "roce-ecmp:lossless=false", "mrc", SPECIFIED, "spray", "reps", "ar"]
T3 = ["roce-ecmp", "mrc", "mrc-1ev", "spray", "reps", "ar"]
T4 = ["mrc", SPECIFIED, "mrc-1ev", "spray", "reps", "ar", "roce-ecmp", "roce-ecmp:lossless=false"]
BASELINES = ("roce-ecmp", "roce-ecmp:lossless=false")
# published UEC htsim results, 8192-host 400G leaf-spine, NSCC, max FCT in us (simulators-and-setups 5.4)
UEC = {"1 MB": {"32 EV": 38.7, "64 EV": 36.2, "128 EV": 35.4, "target": 34},
       "1 MB, -failed 1": {"32 EV": 42.0, "64 EV": 44.6, "128 EV": 45.4, "target": 34}}


class Ctx:
    def __init__(self, client, runs: pathlib.Path, seeds: str, out: pathlib.Path):
        self.client, self.runs, self.seeds, self.out = client, runs, seeds, out
        self.J: dict = {}
        self.heads: dict = {}  # headline number -> {transport: (median, lo, hi)}, plus "question", "unit"
        self.cache: dict = {}


def scen(name: str) -> dict:
    data, _, _ = scenario.read(lib.path(f"results/{name}"))
    return data


def sweep_of(ctx: Ctx, name: str, transports, data: dict | None = None, label: str | None = None):
    """The sweep of results/`name` (or of `data` under that name) over `transports` and the seeds: its table,
    ``transport`` as an ordered categorical."""
    from mrc.emulator import sweep

    key = (label or name, tuple(transports))
    if key in ctx.cache:
        return ctx.cache[key]
    src = data if data is not None else f"results/{name}"
    if data is not None:
        src = {**data, "name": label or name}
    t0 = time.perf_counter()
    df = sweep(src, transports=list(transports), seeds=ctx.seeds, out=ctx.runs / (label or name),
               client=ctx.client, resume=True, plots=False, echo=lambda line: print(f"  {line}", file=sys.stderr))
    bad = df[df["status"] != "ok"]
    print(f"  {label or name}: {len(df)} cells, {len(bad)} failed, {time.perf_counter() - t0:.0f} s",
          file=sys.stderr, flush=True)
    for r in bad.to_dict("records"):
        print(f"    cell {r['cell']} {r['transport']} seed {r['seed']}: {r['status']}: {r['error']}", file=sys.stderr)
    df = df.copy()
    df["dir"] = [str(ctx.runs / (label or name) / r) if isinstance(r, str) else None for r in df["results"]]
    ctx.cache[key] = df
    return df


def groups(df, transports):
    """transport -> its completed cells, in the order given."""
    ok = df[df["status"] == "ok"]
    return {t: ok[ok["transport"] == t] for t in transports}


def ci(values) -> tuple[float, float, float]:
    return median_ci(np.asarray(list(values), float))


def txt(values, d: int | None = None) -> str:
    """``median [low, high]`` of `values` over the seeds."""
    med, lo, hi = values if isinstance(values, tuple) else ci(values)
    f = (lambda v: sfmt(v)) if d is None else (lambda v: "-" if np.isnan(v) else ("never" if np.isinf(v)
                                                                                   else f"{v:,.{d}f}"))
    return f(med) if np.isnan(lo) else f"{f(med)} [{f(lo)}, {f(hi)}]"


def col(g, name):
    return g[name].astype(float).to_numpy() if name in g else np.array([])


def done_text(g, total_col="flows_total", done_col="flows_completed") -> str:
    d, t = col(g, done_col), col(g, total_col)
    if not len(d):
        return "-"
    lo, hi = int(d.min()), int(d.max())
    return f"{hi}/{int(t.max())}" if lo == hi else f"{lo}-{hi}/{int(t.max())}"


def flows(row) -> dict:
    """The cell's flows.csv as numpy columns."""
    import csv

    with open(pathlib.Path(row["dir"]) / "flows.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = {}
    for k in rows[0] if rows else []:
        vals = [r[k] for r in rows]
        try:
            out[k] = np.array([float(v) if v != "" else np.nan for v in vals])
        except ValueError:
            out[k] = np.array(vals, dtype=object)
    return out


def series(row) -> dict:
    """The cell's timeseries.csv as numpy columns."""
    import csv

    with open(pathlib.Path(row["dir"]) / "timeseries.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {k: np.array([float(r[k]) if r[k] != "" else np.nan for r in rows]) for k in (rows[0] if rows else [])}


def per_cell(g, fn) -> np.ndarray:
    return np.array([fn(r) for r in g.to_dict("records")], float)


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(LABELS.get(c, c)) if isinstance(c, str) else str(c) for c in r) + " |"
            for r in rows]
    return "\n".join(out)


def stat(values) -> dict:
    med, lo, hi = ci(values)
    return {"median": med, "ci_low": lo, "ci_high": hi, "n": int(np.count_nonzero(~np.isnan(np.asarray(values, float))))}


def head(ctx, n, question, unit, per_t: dict, lower_is_better=True):
    """Record headline `n`: per transport the (median, low, high) of its figure."""
    ctx.heads[n] = {"question": question, "unit": unit, "better": "lower" if lower_is_better else "higher",
                    "seeds": ctx.seeds,
                    "values": {t: ci(v) for t, v in per_t.items()}}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    _plt().close(fig)


def cdf_plot(gs: dict, path, title):
    """FCT CDFs, one colour per transport, one thin line per seed."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for k, (t, g) in enumerate(gs.items()):
        for j, r in enumerate(g.to_dict("records")):
            v = flows(r)["fct_us"]
            v = np.sort(v[~np.isnan(v)])
            if len(v):
                ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", color=f"C{k}", lw=0.7, alpha=0.5,
                        label=t if j == 0 else None)
    ax.set_xscale("log")
    ax.set_xlabel("flow completion time (us)")
    ax.set_ylabel("fraction of flows")
    ax.set_title(f"{title} (one line per seed)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    save(fig, path)


def goodput_plot(gs: dict, names, path, xmax, ylabel, title, mark):
    """The fabric's goodput over time under transports `names` (the median over seeds per sample time)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for t in names:
        ss = [series(r) for r in gs[t].to_dict("records")]
        if not ss:
            continue
        n = min(len(s["t_us"]) for s in ss)
        y = np.median(np.stack([s["goodput_gbps"][:n] for s in ss]), axis=0)
        ax.plot(ss[0]["t_us"][:n], y, label=f"{t} (median of {len(ss)} seeds)", lw=1)
    mark(ax)
    ax.set_xlim(0, xmax)
    ax.set_xlabel("time (us)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    save(fig, path)


FCT_HEAD = ["transport", "flows done", "FCT p50 us", "p99", "max", "slowdown p50", "p99", "wall s"]


def fct_row(t, g):
    return [t, done_text(g), txt(col(g, "fct_us_p50")), txt(col(g, "fct_us_p99")), txt(col(g, "fct_us_max")),
            txt(col(g, "slowdown_p50")), txt(col(g, "slowdown_p99")), txt(col(g, "sim_wall_s"), 1)]


RR = [("failure0_affected_flows", "affected flows", 0), ("failure0_first_steered_away_us", "first steered away us", 2),
      ("failure0_off_99_us", "99 % off us", 1), ("failure0_goodput_recovered_us", "goodput recovered us", 1),
      ("failure0_pre_fault_goodput_gbps", "goodput before Gb/s", 0), ("failure0_min_goodput_gbps", "min after Gb/s", 0)]
RR_HEAD = ["transport", "failure", "target"] + [h for _, h, _ in RR]


def reroute_rows(gs: dict):
    from mrc.emulator.sweeps.stats import metric_values

    rows = []
    for t, g in gs.items():
        if not len(g) or "failure0_kind" not in g:
            continue
        r0 = g.iloc[0]
        rows.append([t, r0["failure0_kind"], r0["failure0_target"]]
                    + [txt(metric_values(g, c), d) for c, _, d in RR])
    return rows


def counters(g, keys):
    return [txt(col(g, f"counters_{k}"), 0) for k in keys]


def jstats(g, cols) -> dict:
    return {c: stat(col(g, c)) for c in cols if c in g}


# ---------------------------------------------------------------- experiments


def exp1(ctx):
    gs = groups(sweep_of(ctx, "r1-k16-permutation", ALL), ALL)
    ctx.J["1"] = {t: jstats(g, ["fct_us_p50", "fct_us_p99", "fct_us_max", "slowdown_p50", "slowdown_p99"])
                  for t, g in gs.items()}
    head(ctx, 1, "k=16 permutation 1024 x 2 MB, p99 FCT", "us", {t: col(g, "fct_us_p99") for t, g in gs.items()})
    cdf_plot(gs, ctx.out / "r1-k16-fct-cdf.png", "k=16 fat-tree, permutation 1024 x 2 MB")
    return table(FCT_HEAD, [fct_row(t, g) for t, g in gs.items()])


def exp2(ctx):
    gs = groups(sweep_of(ctx, "r2-k8-allreduce", ALL), ALL)
    rows = []
    for t, g in gs.items():
        rows.append([t, done_text(g, "collectives_total", "collectives_completed"), txt(col(g, "cct_us_min")),
                     txt(col(g, "cct_us_mean")), txt(col(g, "cct_us_max")), txt(col(g, "fct_us_p50")),
                     txt(col(g, "fct_us_p99")), txt(col(g, "fct_us_max")), txt(col(g, "sim_wall_s"), 1)])
    ctx.J["2"] = {t: jstats(g, ["cct_us_min", "cct_us_mean", "cct_us_max", "fct_us_p99"]) for t, g in gs.items()}
    head(ctx, 2, "k=8 ring all-reduce 4 MB, slowest ring", "us", {t: col(g, "cct_us_max") for t, g in gs.items()})
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    names = list(gs)
    med = [ci(col(gs[t], "cct_us_max")) for t in names]
    x = np.arange(len(names))
    ax.bar(x, [m[0] for m in med], color="tab:blue", alpha=0.5, label="slowest ring (median over seeds)")
    ax.errorbar(x, [m[0] for m in med], yerr=[[m[0] - m[1] for m in med], [m[2] - m[0] for m in med]], fmt="none",
                ecolor="k", capsize=3, label="95 % CI")
    ax.plot(x, [ci(col(gs[t], "cct_us_mean"))[0] for t in names], "ko", label="mean of 8 rings (median)")
    ax.set_xticks(x, [n.replace(":lossless=false", "\nlossy") for n in names], fontsize=7)
    ax.set_ylabel("all-reduce completion (us)")
    ax.set_title("k=8 fat-tree, 8 rings x 16 hosts, 4 MB ring all-reduce", fontsize=10)
    ax.legend(fontsize=7)
    save(fig, ctx.out / "r2-k8-allreduce-cct.png")
    return table(["transport", "rings done", "CCT min us", "mean", "max", "step FCT p50 us", "p99", "max", "wall s"],
                 rows)


def exp3(ctx):
    a = groups(sweep_of(ctx, "r3-leafspine-8192", T3), T3)
    b = groups(sweep_of(ctx, "r3-leafspine-8192-failed", T3), T3)
    rows, ctx.J["3"] = [], {}
    for t in T3:
        rows.append([t, txt(col(a[t], "fct_us_p50")), txt(col(a[t], "fct_us_p99")), txt(col(a[t], "fct_us_max")),
                     txt(col(b[t], "fct_us_p50")), txt(col(b[t], "fct_us_p99")), txt(col(b[t], "fct_us_max")),
                     f"{done_text(a[t])} + {done_text(b[t])}",
                     txt(col(a[t], "sim_wall_s") + col(b[t], "sim_wall_s") if len(a[t]) == len(b[t]) else [], 1)])
        ctx.J["3"][t] = {"healthy": jstats(a[t], ["fct_us_p50", "fct_us_p99", "fct_us_max"]),
                         "failed": jstats(b[t], ["fct_us_p50", "fct_us_p99", "fct_us_max"])}
    rows.append(["UEC htsim NSCC, 32 / 64 / 128 EVs (published, one run)", "", "", "38.7 / 36.2 / 35.4", "", "",
                 "42.0 / 44.6 / 45.4", "", ""])
    rows.append(["UEC target", "", "", "34", "", "", "34", "", ""])
    head(ctx, 3, "8192-host leaf-spine 1 MB permutation, max FCT with one spine at 25 %", "us",
         {t: col(b[t], "fct_us_max") for t in T3})
    ctx.heads[3]["also"] = {t: ci(col(a[t], "fct_us_max")) for t in T3}
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    xs = np.arange(len(T3))
    for off, gs, lab in ((-0.2, a, "healthy"), (0.2, b, "one spine at 25 %")):
        m = [ci(col(gs[t], "fct_us_max")) for t in T3]
        ax.bar(xs + off, [v[0] for v in m], 0.4, label=lab,
               yerr=[[v[0] - v[1] if not np.isnan(v[1]) else 0 for v in m],
                     [v[2] - v[0] if not np.isnan(v[2]) else 0 for v in m]], capsize=2)
    ax.axhline(36.2, color="k", ls="--", lw=1, label="UEC NSCC 64 EV healthy (36.2)")
    ax.axhline(44.6, color="r", ls=":", lw=1, label="UEC NSCC 64 EV failed (44.6)")
    ax.set_yscale("log")
    ax.set_xticks(xs, T3, fontsize=8)
    ax.set_ylabel("max FCT (us), median and 95 % CI")
    ax.set_title("8192-host 400G leaf-spine, permutation 8192 x 1 MB", fontsize=10)
    ax.legend(fontsize=7)
    save(fig, ctx.out / "r3-leafspine-tail.png")
    hd = ["transport", "healthy p50 us", "p99", "max", "1 spine at 25 %: p50 us", "p99", "max", "flows done", "wall s"]
    return table(hd, rows) + "\n\nReroute (degraded spine):\n\n" + table(RR_HEAD, reroute_rows(b))


def _goodput(row, t0, t1):
    s = series(row)
    m = (s["t_us"] > t0) & (s["t_us"] <= t1)
    return float(s["goodput_gbps"][m].mean()) if m.any() else float("nan")


def exp4(ctx):
    gs = groups(sweep_of(ctx, "r4-8plane-nic-port", T4), T4)
    rows, ctx.J["4"], ratio = [], {}, {}
    for t, g in gs.items():
        pre = per_cell(g, lambda r: _goodput(r, 100, 200))
        post = per_cell(g, lambda r: _goodput(r, 300, 500))
        failed = col(g, "counters_qp_errors") + col(g, "outcome_failed") if "counters_qp_errors" in g \
            else col(g, "outcome_failed")
        ratio[t] = post / pre
        rows.append([t, txt(pre, 0), txt(post, 0), txt(post / pre, 3), done_text(g), txt(failed, 0),
                     txt(col(g, "fct_us_max"))])
        ctx.J["4"][t] = {"goodput_pre_gbps": stat(pre), "goodput_post_gbps": stat(post), "ratio": stat(post / pre),
                         "qps_failed": stat(failed)}
    head(ctx, 4, "8 planes, one NIC port of h0 lost: goodput after it (300-500 us; 7/8 of 1.6 Tb/s is the most)",
         "Gb/s", {t: per_cell(g, lambda r: _goodput(r, 300, 500)) for t, g in gs.items()}, lower_is_better=False)
    goodput_plot(gs, ("mrc", "roce-ecmp"), ctx.out / "r4-8plane-goodput.png", 1200, "goodput (Gb/s, 5 us windows)",
                 "8 planes: h0 -> h40 and h41 -> h0, 8 QPs each way",
                 lambda ax: ax.axvline(200, color="r", ls=":", lw=1, label="h0 plane-0 port down"))
    hd = ["transport", "goodput 100-200 us Gb/s", "300-500 us", "after / before", "flows done", "QPs failed",
          "max FCT us"]
    return table(hd, rows) + "\n\nReroute:\n\n" + table(RR_HEAD, reroute_rows(gs))


def exp5(ctx):
    gs = groups(sweep_of(ctx, "r5-incast-victim", ALL), ALL)
    rows, ctx.J["5"] = [], {}
    for t, g in gs.items():
        inc_max = per_cell(g, lambda r: float(np.nanmax(np.where(flows(r)["collective"] >= 0, flows(r)["fct_us"],
                                                                 np.nan))))
        rows.append([t, txt(col(g, "victim_fct_us")), txt(col(g, "victim_gbps")), txt(col(g, "victim_slowdown")),
                     txt(col(g, "cct_us_max")), txt(inc_max), *counters(g, ["pfc_pauses", "drops_queue_full", "trims"])])
        ctx.J["5"][t] = jstats(g, ["victim_fct_us", "victim_gbps", "victim_slowdown", "cct_us_max"])
    head(ctx, 5, "7 -> 1 incast, victim flow throughput", "Gb/s", {t: col(g, "victim_gbps") for t, g in gs.items()},
         lower_is_better=False)
    hd = ["transport", "victim FCT us", "victim Gb/s", "victim slowdown", "incast CCT us", "incast max FCT us",
          "PFC pauses", "queue drops", "trims"]
    return table(hd, rows)


def _flow_goodput(r):
    f = flows(r)
    ok = ~np.isnan(f["fct_us"])
    return f["size_bytes"][ok] * 8 / f["fct_us"][ok] / 1e3, f, ok


def exp6(ctx):
    clean = scen("r6-gray-loss-0.1pct")
    clean.pop("failures")
    levels = [("0", sweep_of(ctx, "r6-no-loss", LOSS_T, data=clean, label="r6-no-loss")),
              ("0.1 %", sweep_of(ctx, "r6-gray-loss-0.1pct", LOSS_T)),
              ("1 %", sweep_of(ctx, "r6-gray-loss-1pct", LOSS_T))]
    rows, ctx.J["6"], gp, h = [], {}, {}, {}
    for lab, df in levels:
        for t, g in groups(df, LOSS_T).items():
            mean = per_cell(g, lambda r: _flow_goodput(r)[0].mean())
            agg = per_cell(g, lambda r: (lambda gb, f, ok: f["size_bytes"][ok].sum() * 8
                                         / np.nanmax(f["fct_us"] + f["start_us"]) / 1e3)(*_flow_goodput(r)))
            gp.setdefault(t, []).append(ci(mean))
            if lab == "1 %":
                h[t] = mean
            rows.append([lab, t, done_text(g), txt(mean), txt(agg, 0), txt(col(g, "fct_us_p50")),
                         txt(col(g, "fct_us_p99")), txt(col(g, "fct_us_max")),
                         *counters(g, ["drops_gray", "retransmissions", "timeouts"])])
            ctx.J["6"][f"{lab} {t}"] = {"mean_flow_gbps": stat(mean), "aggregate_gbps": stat(agg),
                                        **jstats(g, ["fct_us_p50", "fct_us_p99", "fct_us_max"])}
    head(ctx, 6, "mean flow goodput with 1 % loss per fabric link", "Gb/s", h, lower_is_better=False)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for t, v in gp.items():
        m = np.array(v)
        (ln,) = ax.plot([0, 1, 2], m[:, 0], "o-", label=t)
        ax.fill_between([0, 1, 2], m[:, 1], m[:, 2], color=ln.get_color(), alpha=0.15, lw=0)
    ax.set_xticks([0, 1, 2], ["no loss", "0.1 % per link", "1 % per link"])
    ax.set_ylabel("mean flow goodput (Gb/s)")
    ax.set_title("k=8 permutation 128 x 2 MB, random loss on fabric links (median, 95 % CI)", fontsize=9)
    ax.legend(fontsize=7)
    save(fig, ctx.out / "r6-gray-loss-goodput.png")
    hd = ["loss per link", "transport", "flows done", "mean flow Gb/s", "aggregate Gb/s", "FCT p50 us", "p99", "max",
          "gray drops", "retransmissions", "timeouts"]
    return table(hd, rows)


def exp7(ctx):
    clean = groups(sweep_of(ctx, "r2-k8-allreduce", ALL), ALL)
    gs = groups(sweep_of(ctx, "r7-t1-reboot", ALL), ALL)
    f7 = scen("r7-t1-reboot")["failures"][0]
    back = f7["at_us"] + f7["duration_us"]

    def stalled(r):
        f = flows(r)
        end = f["start_us"] + f["fct_us"]
        return float(np.count_nonzero((f["start_us"] < back) & (end > back) & (f["fct_us"] > 1000)))

    rows, ctx.J["7"] = [], {}
    for t, g in gs.items():
        rows.append([t, txt(col(clean[t], "cct_us_max")), txt(col(g, "cct_us_max")), txt(col(g, "cct_us_mean")),
                     done_text(g, "collectives_total", "collectives_completed"), txt(col(g, "fct_us_max")),
                     txt(per_cell(g, stalled), 0), *counters(g, ["drops_link_down", "drops_no_route", "timeouts"])])
        ctx.J["7"][t] = {"clean": jstats(clean[t], ["cct_us_max"]), **jstats(g, ["cct_us_max", "cct_us_mean"])}
    head(ctx, 7, "T1 switch down 2 ms during an all-reduce, slowest ring", "us",
         {t: col(g, "cct_us_max") for t, g in gs.items()})
    goodput_plot(gs, ("roce-ecmp", "mrc", "spray", "ar"), ctx.out / "r7-t1-reboot-goodput.png", 4000, "goodput (Gb/s)",
                 "k=8 ring all-reduce, a T1 switch down for 2 ms",
                 lambda ax: ax.axvspan(f7["at_us"], back, color="r", alpha=0.08, label="p0.t1.0 rebooting"))
    hd = ["transport", "CCT max, no failure us", "CCT max, reboot us", "CCT mean, reboot", "rings done",
          "max step FCT us", "steps > 1 ms ending after the reboot", "link-down drops", "no-route drops", "timeouts"]
    return table(hd, rows) + "\n\nReroute:\n\n" + table(RR_HEAD, reroute_rows(gs))


def exp8(ctx):
    gs = groups(sweep_of(ctx, "r8-link-flap", ALL), ALL)
    rows, ctx.J["8"] = [], {}
    for t, g in gs.items():
        rows.append(fct_row(t, g)[:-1] + [txt(col(g, "failure0_packets_directed"), 0),
                                          *counters(g, ["drops_link_down", "timeouts"])])
        ctx.J["8"][t] = jstats(g, ["fct_us_p50", "fct_us_p99", "fct_us_max", "failure0_packets_directed"])
    head(ctx, 8, "one link flapping, permutation 128 x 32 MB, p99 FCT", "us",
         {t: col(g, "fct_us_p99") for t, g in gs.items()})
    cdf_plot(gs, ctx.out / "r8-link-flap-fct-cdf.png", "k=8 permutation 128 x 32 MB, one T1-T2 link flapping")
    hd = FCT_HEAD[:-1] + ["packets to the link after the first fault", "link-down drops", "timeouts"]
    return table(hd, rows) + "\n\nReroute:\n\n" + table(RR_HEAD, reroute_rows(gs))


# ---------------------------------------------------------------- headlines


def overlap(a, b) -> bool:
    return not (np.isnan(a[1]) or np.isnan(b[1])) and a[1] <= b[2] and b[1] <= a[2]


def headlines(ctx) -> str:
    """The headline table (`roce-ecmp`, `mrc`, the best other transport) and a sentence per headline where the
    intervals of `mrc` and the best other transport overlap."""
    rows, notes = [], []
    for n in sorted(ctx.heads):
        h = ctx.heads[n]
        v = {t: x for t, x in h["values"].items() if not np.isnan(x[0])}
        if "mrc" not in v:
            continue
        sign = 1 if h["better"] == "lower" else -1
        others = {t: x for t, x in v.items() if t not in ("mrc", SPECIFIED)}  # the alternatives to MRC
        best = min(others, key=lambda t: sign * others[t][0]) if others else None
        unit = f" {h['unit']}" if h["unit"] else ""
        rows.append([n, h["question"] + f" ({h['seeds']})", txt(v["roce-ecmp"]) + unit if "roce-ecmp" in v else "-",
                     txt(v["mrc"]) + unit, f"`{best}` {txt(others[best])}{unit}" if best else "-"])
        if best and overlap(v["mrc"], others[best]):
            notes.append(f"- **{n}**: the 95 % intervals of `mrc` ({txt(v['mrc'])}) and of `{best}` "
                         f"({txt(others[best])}) overlap: over seeds {h['seeds']} the two are not told apart.")
        elif best:
            ahead = "ahead of" if sign * (v["mrc"][0] - others[best][0]) < 0 else "behind"
            notes.append(f"- **{n}**: `mrc` is {ahead} the best other transport, `{best}`, and the 95 % intervals "
                         f"do not overlap.")
    ctx.J["headlines"] = {str(n): {"question": h["question"], "unit": h["unit"], "better": h["better"],
                                   "seeds": h["seeds"],
                                   "values": {t: dict(zip(("median", "ci_low", "ci_high"), x))
                                              for t, x in h["values"].items()}} for n, h in ctx.heads.items()}
    return (table(["#", "question (seeds)", "`roce-ecmp`", "`mrc`",
                   "best other (by median)"], rows) + "\n\n" + "\n".join(notes))


def earlier_heads(path: pathlib.Path, skip) -> dict:
    """The headlines of the experiments not in `skip` as an earlier run recorded them in `path` (results.json),
    in `Ctx.heads` form: a run of some experiments keeps the others' headlines. Files written before the
    headlines kept "better" and "seeds" take them from the unit (Gb/s: higher is better) and the run's seeds."""
    if not path.is_file():
        return {}
    J = json.loads(path.read_text())
    out = {}
    for n, h in J.get("headlines", {}).items():
        if int(n) in skip:
            continue
        out[int(n)] = {"question": h["question"], "unit": h["unit"],
                       "better": h.get("better", "higher" if h["unit"] == "Gb/s" else "lower"),
                       "seeds": h.get("seeds", J.get("seeds", {}).get(n, "?")),
                       "values": {t: (v["median"], v["ci_low"], v["ci_high"]) for t, v in h["values"].items()}}
    return out


def fill_doc(page: pathlib.Path, tables: dict) -> None:
    """Replace each ``<!-- table N -->`` ... ``<!-- /table N -->`` block of `page` by experiment N's tables."""
    docblocks.fill(page, {f"table {n}": body for n, body in tables.items()})


EXPERIMENTS = {1: exp1, 2: exp2, 3: exp3, 4: exp4, 5: exp5, 6: exp6, 7: exp7, 8: exp8}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated experiment numbers (1-8)")
    ap.add_argument("--seeds", default="1-10", help="seeds of every sweep (default 1-10)")
    ap.add_argument("--seeds-of", action="append", default=[], metavar="N=SEEDS",
                    help="other seeds for experiment N (e.g. 3=1-5; the page says how many each used)")
    ap.add_argument("--out", default="docs/results", help="directory for tables.md, results.json and the PNGs")
    ap.add_argument("--runs", default="runs/results", help="the sweeps' directories (kept: a re-run resumes them)")
    ap.add_argument("--doc", default=None, help="page whose <!-- table N --> ... <!-- /table N --> blocks get the tables")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, default=None, help="local Dask cluster size (default: the core count)")
    g.add_argument("--scheduler", default=None, help="an existing Dask cluster's scheduler (tcp://HOST:PORT)")
    a = ap.parse_args(argv)
    only = sorted({int(v) for v in a.only.split(",") if v.strip()}) or sorted(EXPERIMENTS)
    bad = [n for n in only if n not in EXPERIMENTS]
    if bad:
        ap.error(f"--only {a.only}: no experiment {bad[0]} (1-8)")
    seeds_of = {}
    for item in a.seeds_of:
        k, _, v = item.partition("=")
        if not k.strip().isdigit() or int(k) not in EXPERIMENTS or not v.strip():
            ap.error(f"--seeds-of {item}: write N=SEEDS with N one of 1-8")
        seeds_of[int(k)] = v.strip()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    from mrc.emulator.sweeps.runner import cluster

    md, tables = [], {}
    t0 = time.perf_counter()
    with cluster(a.workers, a.scheduler) as client:
        ctx = Ctx(client, pathlib.Path(a.runs), a.seeds, out)
        for n in only:
            print(f"experiment {n}", file=sys.stderr, flush=True)
            ctx.seeds = seeds_of.get(n, a.seeds)
            ctx.cache.clear() if n != 7 else None  # experiment 7 re-uses experiment 2's no-failure sweep
            text = EXPERIMENTS[n](ctx)
            ctx.J.setdefault("seeds", {})[str(n)] = ctx.seeds
            tables[n] = text
            md.append(f"## Experiment {n}\n\n{text}\n")
            print(md[-1], flush=True)
    partial = len(only) != len(EXPERIMENTS)
    if partial:  # the other experiments' headlines as the last full run recorded them
        ctx.heads = {**earlier_heads(out / "results.json", only), **ctx.heads}
    tables["headlines"] = headlines(ctx)
    md.insert(0, f"## Headlines\n\n{tables['headlines']}\n")
    ctx.J["wall_s"] = time.perf_counter() - t0
    name = "tables.md" if not partial else f"tables-{'-'.join(map(str, only))}.md"
    (out / name).write_text("\n".join(md))
    (out / name.replace("tables", "results").replace(".md", ".json")).write_text(
        json.dumps(ctx.J, indent=1, default=R._clean) + "\n")
    if a.doc:
        if partial and (out / "results.json").is_file():  # results.json: the page's numbers, merged
            J = json.loads((out / "results.json").read_text())
            J.update({k: v for k, v in ctx.J.items() if k not in ("seeds", "headlines")})
            J.setdefault("seeds", {}).update(ctx.J["seeds"])
            J["headlines"] = ctx.J["headlines"]
            (out / "results.json").write_text(json.dumps(J, indent=1, default=R._clean) + "\n")
        fill_doc(pathlib.Path(a.doc), tables)
    print(f"wall {ctx.J['wall_s']:.0f} s; written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
