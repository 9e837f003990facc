"""Regenerate every table, figure and generated number of docs/results.md from the committed scenarios.

    python benchmarks/results.py --doc docs/results.md            # every experiment: sweeps (resumed), records, page
    python benchmarks/results.py --doc docs/results.md --only 5   # sweep experiment 5; the others from their records
    python benchmarks/results.py --check docs/results.md          # the page against the committed records (no run)
    python benchmarks/results.py --only 4 --seeds 1-3 --out runs/r4   # a quick look, no page, no records
    python benchmarks/results.py --workers 1                      # local Dask cluster size (default 2)
    python benchmarks/results.py --scheduler tcp://HOST:PORT      # or an existing Dask cluster

Every experiment is one or more sweeps (`mrc.emulator.sweep`, docs/sweeps.md) of its scenarios
(`emulator/scenarios/results/r<N>-*.toml`, library names ``results/r<N>-...``) over its transports, a grid where
it has one (experiment 10's message sizes, the routing sensitivity's convergence times) and its seeds (`SEEDS`,
as the page states them; ``--seeds`` / ``--seeds-of N=SEEDS`` override). The sweeps live in ``RUNS/<sweep>``
(default RUNS: runs/results) and run with ``resume``: a second run re-uses every cell whose scenario, transport,
seed and code are unchanged, so after a code change this one command regenerates exactly what changed.

Records (`doccells`): of every cell the figures its tables read, plus the per-cell figures computed from its
files (``x_*``: goodput windows, the incast's slowest flow, ...), go to ``docs/cells/results/<sweep>.csv`` with
the sweep's definition; every table, the headlines and every generated number of the page's prose
(``<!--v KEY-->``) are rendered from those records only. ``--doc`` writes them into the page (the ``<!-- table
N -->`` blocks, the headlines, the inline values); ``--check`` renders them from the committed records and exits
1 where the page differs. Plots (``OUT/*.png``, default OUT docs/results) need the cells' files: they are drawn
only when the experiment's sweeps run. Every number in a table is the median over the seeds and its bootstrap
95 % interval, ``median [low, high]`` (`mrc.emulator.sweeps.stats.median_ci`).

Transports: `ALL` (experiments 1, 2, 5, 7, 8), `LOSS_T` (6), `T3` (3), `T4` (4): add a spec there
(``name:key=value``) and it gets its rows everywhere.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

import ablation as _ablation  # benchmarks/ablation.py: the extensions and "MRC as specified"
import doccells  # benchmarks/doccells.py
import docblocks  # benchmarks/docblocks.py
from mrc.emulator import results as R
from mrc.emulator import scenario
from mrc.emulator import scenarios as lib
from mrc.emulator.sweeps.stats import fmt as sfmt
from mrc.emulator.sweeps.stats import median_ci, metric_values

PAGE = "results"  # docs/cells/results
# `mrc` runs with every extension of docs/protocol.md on; SPECIFIED is `mrc` with all of them off ("MRC as
# specified", benchmarks/ablation.py), a row of its own in every experiment but 3 (the 8192-host runs cost
# ~140 s a cell); LABELS names it in the tables.
SPECIFIED = _ablation.SPECIFIED
LABELS = {SPECIFIED: "mrc as specified"}
# RoCE as operators run it: one QP per connection and eight (QP scaling, Meta SIGCOMM'24; docs/emulator.md)
QP8 = "roce-ecmp:qps=8"
QP16 = "roce-ecmp:qps=16"
ALL = ["roce-ecmp", QP8, "roce-ecmp:lossless=false", "mrc", SPECIFIED, "mrc-1ev", "spray", "reps", "ar"]
LOSS_T = ["roce-ecmp", QP8, "roce-ecmp:lossless=false", "mrc", SPECIFIED, "spray", "reps", "ar"]
T3 = ["roce-ecmp", QP8, "mrc", "mrc-1ev", "spray", "reps", "ar"]
T4 = ["mrc", SPECIFIED, "mrc-1ev", "spray", "reps", "ar", "roce-ecmp", QP8, "roce-ecmp:lossless=false"]
T5 = ALL + ["roce-ecmp:qps=8:lossless=false"]  # the paper's victim with 8 RoCE QPs, lossless and lossy
FLAP4_T = ["roce-ecmp", QP8, "mrc", SPECIFIED, "spray", "reps"]
ROCE = ("roce-ecmp", QP8, QP16, "roce-ecmp:lossless=false", "roce-ecmp:qps=8:lossless=false")
# the seeds each experiment runs with (the page says why some have 5: "Cost")
SEEDS = {1: "1-10", 2: "1-10", 3: "1-5", 4: "1-5", 5: "1-10", 6: "1-10", 7: "1-5", 8: "1-5", 10: "1-5"}
# The controller's live fault localisation only observes (docs/observability.md; the figures are the same
# without it) and costs most of an MRC cell's wall time when EVs fail: off in every sweep here.
SETS = ["localize.enabled=false"]
# Routing repair sensitivity of the failure experiments: the remote convergence time (1, 10, 100 ms; 100 ms the
# default) with local repair at its 1 ms default; `roce-ecmp`, and `mrc` for reference (5 seeds: the session's
# budget, docs/results.md "Cost")
ROUTING_GRID = {"switch.route_converge_us": [1000.0, 10000.0, 100000.0]}
ROUTING_T = ["roce-ecmp", "mrc"]
# experiment 10 (the MRC paper's testbed rows; 9 is the training job, benchmarks/training_131k.py): message sizes
# per rank (nccl-tests' sizes): all-reduce 256 KiB - 64 MiB, all-to-all 256 KiB - 16 MiB (RoCE's 64 MiB
# all-to-all costs over a minute of CPU a cell: the campaign's budget, docs/results.md "Cost")
SIZES = {"allreduce": [262144, 1048576, 4194304, 16777216, 67108864],
         "alltoall": [262144, 1048576, 4194304, 16777216]}
# under loss (the session's budget, docs/results.md "Cost"): all-reduce at 0.1 % 1-64 MiB, at 1 % 1-16 MiB (RoCE's
# 64 MiB under 1 % loss runs to the time limit, minutes of CPU a cell); all-to-all 1-4 MiB; a collective not done
# within LOSS_DURATION_US of simulated time counts as not completed
LOSS_SIZES = {"allreduce-loss0.1pct": [1048576, 4194304, 16777216, 67108864],
              "allreduce-loss1pct": [1048576, 4194304, 16777216],
              "alltoall-loss0.1pct": [1048576, 4194304], "alltoall-loss1pct": [1048576, 4194304]}
LOSS_DURATION_US = 300_000
HOSTS9 = 64
# published UEC htsim results, 8192-host 400G leaf-spine, NSCC, max FCT in us (simulators-and-setups 5.4)
UEC = {"1 MB": {"32 EV": 38.7, "64 EV": 36.2, "128 EV": 35.4, "target": 34},
       "1 MB, -failed 1": {"32 EV": 42.0, "64 EV": 44.6, "128 EV": 45.4, "target": 34}}
# the paper's point-to-point latencies (2-byte writes, 8 x 100G ConnectX-8; mrc-public-notes 6, from ARX1), us
P2P_PAPER = {"one T0": 5.09, "across a T1": 6.54}


class Missing(Exception):
    """A sweep an experiment's table reads has no committed records (its experiment was not run on this code)."""

    def __init__(self, label: str):
        super().__init__(f"no records for sweep {label} (docs/cells/{PAGE}/{label}.csv): run its experiment")
        self.label = label


class Ctx:
    """What an experiment reads its sweeps through: the experiments in `live` run theirs on `client` (and write
    their records), the others read the committed records. One context renders the whole page."""

    def __init__(self, client, live, seeds_of: dict, runs: pathlib.Path, out: pathlib.Path, save: bool = True):
        self.client, self.live, self.seeds_of, self.runs, self.out, self.save = client, set(live), seeds_of, runs, out, save
        self.n, self.part = 0, ""  # the experiment and part being rendered
        self.J: dict = {}
        self.heads: dict = {}  # headline number -> {transport: (median, lo, hi)}, plus "question", "unit"
        self.cache: dict = {}
        self.used: list[str] = []  # the sweeps (record files) this rendering read
        self.missing: dict = {}  # block name -> the sweep whose records it lacks (the block is not rendered)

    @property
    def seeds(self) -> str:
        return self.seeds_of.get(self.n, SEEDS.get(self.n, "1-10"))

    @property
    def plots(self) -> bool:
        return self.client is not None and self.part in self.live

    def sweep(self, label: str, transports, grid: dict | None = None, scenario_name: str | None = None,
              own: bool = True, sets=()):
        """The table of sweep `label` (scenario ``results/<scenario_name or label>``) over `transports` (and
        `grid`), ``transport`` as an ordered categorical, ``x_*`` columns from `EXTRAS`. A sweep the experiment
        only borrows (`own` false: experiment 7's failure-free column is experiment 2's) is read from the
        records (or from this rendering, when its experiment ran first)."""
        import pandas as pd

        key = (label, tuple(transports))
        if key in self.cache:
            return self.cache[key]
        src = f"results/{scenario_name or label}"
        meta = {"scenario": src, "transports": list(transports), "seeds": self.seeds, "sets": SETS + list(sets),
                "grid": {k: list(v) for k, v in (grid or {}).items()}}
        if self.client is None or self.part not in self.live or not own:
            df = doccells.load(PAGE, label)
            if df is None:
                raise Missing(label)
            m = df.attrs["meta"]
            if (m["scenario"] != src or m["transports"] != meta["transports"] or m["grid"] != meta["grid"]
                    or m.get("sets", []) != meta["sets"]):
                raise SystemExit(f"docs/cells/{PAGE}/{label}: recorded for {m['transports']} {m['grid']}, the "
                                 f"experiment wants {meta['transports']} {meta['grid']}: run its experiment again")
        else:
            from mrc.emulator import sweep

            t0 = time.perf_counter()
            df = sweep(src, transports=list(transports), seeds=self.seeds, grid=meta["grid"], sets=meta["sets"],
                       out=self.runs / label, client=self.client, resume=True, plots=False,
                       echo=lambda line: print(f"  {line}", file=sys.stderr))
            bad = df[df["status"] != "ok"]
            print(f"  {label}: {len(df)} cells, {len(bad)} failed, {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr, flush=True)
            for r in bad.to_dict("records"):
                print(f"    cell {r['cell']} {r['transport']} seed {r['seed']}: {r['status']}: {r['error']}",
                      file=sys.stderr)
            df = df.copy()
            df["dir"] = [str(self.runs / label / r) if isinstance(r, str) else None for r in df["results"]]
            fn = EXTRAS.get(scenario_name or label)
            if fn is not None:
                ex = [fn(r, pathlib.Path(r["dir"])) if r["status"] == "ok" and r["dir"] else {}
                      for r in df.to_dict("records")]
                for k in sorted({k for e in ex for k in e}):
                    df[k] = [e.get(k, np.nan) for e in ex]
            if self.save:
                doccells.save(PAGE, label, df, meta)
        df["transport"] = pd.Categorical(df["transport"].astype(str), categories=list(transports), ordered=True)
        self.cache[key] = df
        self.used.append(label)
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


def flows(d: pathlib.Path) -> dict:
    """A cell's flows.csv (results directory `d`) as numpy columns."""
    import csv

    with open(pathlib.Path(d) / "flows.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = {}
    for k in rows[0] if rows else []:
        vals = [r[k] for r in rows]
        try:
            out[k] = np.array([float(v) if v != "" else np.nan for v in vals])
        except ValueError:
            out[k] = np.array(vals, dtype=object)
    return out


def series(d: pathlib.Path) -> dict:
    """A cell's timeseries.csv as numpy columns."""
    import csv

    with open(pathlib.Path(d) / "timeseries.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {k: np.array([float(r[k]) if r[k] != "" else np.nan for r in rows]) for k in (rows[0] if rows else [])}


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
                    "seeds": ctx.seeds, "values": {t: ci(v) for t, v in per_t.items()}}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    _plt().close(fig)


def cdf_plot(ctx, gs: dict, path, title):
    """FCT CDFs, one colour per transport, one thin line per seed (needs the cells' files: live runs only)."""
    if not ctx.plots:
        return
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for k, (t, g) in enumerate(gs.items()):
        for j, r in enumerate(g.to_dict("records")):
            v = flows(r["dir"])["fct_us"]
            v = np.sort(v[~np.isnan(v)])
            if len(v):
                ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", color=f"C{k % 10}", lw=0.7, alpha=0.5,
                        label=LABELS.get(t, t) if j == 0 else None)
    ax.set_xscale("log")
    ax.set_xlabel("flow completion time (us)")
    ax.set_ylabel("fraction of flows")
    ax.set_title(f"{title} (one line per seed)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, loc="lower right")
    save(fig, path)


def goodput_plot(ctx, gs: dict, names, path, xmax, ylabel, title, mark):
    """The fabric's goodput over time under transports `names` (the median over seeds per sample time)."""
    if not ctx.plots:
        return
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for t in names:
        ss = [series(r["dir"]) for r in gs[t].to_dict("records")]
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


# ---------------------------------------------------------------- per-cell figures from a cell's files


def _goodput(d, t0, t1):
    s = series(d)
    m = (s["t_us"] > t0) & (s["t_us"] <= t1)
    return float(s["goodput_gbps"][m].mean()) if m.any() else float("nan")


def _flow_goodput(d):
    f = flows(d)
    ok = ~np.isnan(f["fct_us"])
    return f["size_bytes"][ok] * 8 / f["fct_us"][ok] / 1e3, f, ok


def x_r4(row, d) -> dict:
    return {"x_goodput_pre_gbps": _goodput(d, 100, 200), "x_goodput_post_gbps": _goodput(d, 300, 500)}


def x_r5(row, d) -> dict:
    f = flows(d)
    return {"x_incast_max_fct_us": float(np.nanmax(np.where(f["collective"] >= 0, f["fct_us"], np.nan)))}


def x_r6(row, d) -> dict:
    gb, f, ok = _flow_goodput(d)
    return {"x_mean_flow_gbps": float(gb.mean()),
            "x_aggregate_gbps": float(f["size_bytes"][ok].sum() * 8 / np.nanmax(f["fct_us"] + f["start_us"]) / 1e3)}


def x_r7(row, d) -> dict:
    f = flows(d)
    f7 = scen("r7-t1-reboot")["failures"][0]
    back = f7["at_us"] + f7["duration_us"]
    end = f["start_us"] + f["fct_us"]
    return {"x_stalled_steps": float(np.count_nonzero((f["start_us"] < back) & (end > back) & (f["fct_us"] > 1000)))}


def x_p2p(row, d) -> dict:
    """One-way latency of each 2-byte write (its receiver has it: recv - start), as ib_write_lat reports it."""
    f = flows(d)
    one_way = f["recv_done_us"] - f["start_us"]
    return {f"x_latency_flow{k}_us": float(v) for k, v in enumerate(one_way)}


EXTRAS = {"r4-8plane-nic-port": x_r4, "r5-incast-victim": x_r5, "r6-no-loss": x_r6, "r6-gray-loss-0.1pct": x_r6,
          "r6-gray-loss-1pct": x_r6, "r7-t1-reboot": x_r7, "r10-p2p-latency": x_p2p}


def scen(name: str) -> dict:
    data, _, _ = scenario.read(lib.path(f"results/{name}"))
    return data


# ---------------------------------------------------------------- experiments


def exp1(ctx):
    gs = groups(ctx.sweep("r1-k16-permutation", ALL), ALL)
    ctx.J["1"] = {t: jstats(g, ["fct_us_p50", "fct_us_p99", "fct_us_max", "slowdown_p50", "slowdown_p99"])
                  for t, g in gs.items()}
    head(ctx, 1, "k=16 permutation 1024 x 2 MB, p99 FCT", "us", {t: col(g, "fct_us_p99") for t, g in gs.items()})
    cdf_plot(ctx, gs, ctx.out / "r1-k16-fct-cdf.png", "k=16 fat-tree, permutation 1024 x 2 MB")
    return {"table 1": table(FCT_HEAD, [fct_row(t, g) for t, g in gs.items()])}


def exp2(ctx):
    gs = groups(ctx.sweep("r2-k8-allreduce", ALL), ALL)
    rows = []
    for t, g in gs.items():
        rows.append([t, done_text(g, "collectives_total", "collectives_completed"), txt(col(g, "cct_us_min")),
                     txt(col(g, "cct_us_mean")), txt(col(g, "cct_us_max")), txt(col(g, "fct_us_p50")),
                     txt(col(g, "fct_us_p99")), txt(col(g, "fct_us_max")), txt(col(g, "sim_wall_s"), 1)])
    ctx.J["2"] = {t: jstats(g, ["cct_us_min", "cct_us_mean", "cct_us_max", "fct_us_p99"]) for t, g in gs.items()}
    head(ctx, 2, "k=8 ring all-reduce 4 MB, slowest ring", "us", {t: col(g, "cct_us_max") for t, g in gs.items()})
    if ctx.plots:
        plt = _plt()
        fig, ax = plt.subplots(figsize=(6.4, 3.2))
        names = list(gs)
        med = [ci(col(gs[t], "cct_us_max")) for t in names]
        x = np.arange(len(names))
        ax.bar(x, [m[0] for m in med], color="tab:blue", alpha=0.5, label="slowest ring (median over seeds)")
        ax.errorbar(x, [m[0] for m in med], yerr=[[m[0] - m[1] for m in med], [m[2] - m[0] for m in med]],
                    fmt="none", ecolor="k", capsize=3, label="95 % CI")
        ax.plot(x, [ci(col(gs[t], "cct_us_mean"))[0] for t in names], "ko", label="mean of 8 rings (median)")
        ax.set_xticks(x, [LABELS.get(n, n).replace(":lossless=false", "\nlossy").replace(":qps=", "\nqps=")
                          for n in names], fontsize=6)
        ax.set_ylabel("all-reduce completion (us)")
        ax.set_title("k=8 fat-tree, 8 rings x 16 hosts, 4 MB ring all-reduce", fontsize=10)
        ax.legend(fontsize=7)
        save(fig, ctx.out / "r2-k8-allreduce-cct.png")
    hd = ["transport", "rings done", "CCT min us", "mean", "max", "step FCT p50 us", "p99", "max", "wall s"]
    return {"table 2": table(hd, rows)}


def exp3(ctx):
    a = groups(ctx.sweep("r3-leafspine-8192", T3), T3)
    b = groups(ctx.sweep("r3-leafspine-8192-failed", T3), T3)
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
    if ctx.plots:
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
        ax.set_xticks(xs, [t.replace(":qps=", "\nqps=") for t in T3], fontsize=7)
        ax.set_ylabel("max FCT (us), median and 95 % CI")
        ax.set_title("8192-host 400G leaf-spine, permutation 8192 x 1 MB", fontsize=10)
        ax.legend(fontsize=7)
        save(fig, ctx.out / "r3-leafspine-tail.png")
    hd = ["transport", "healthy p50 us", "p99", "max", "1 spine at 25 %: p50 us", "p99", "max", "flows done", "wall s"]
    return {"table 3": table(hd, rows) + "\n\nReroute (degraded spine):\n\n" + table(RR_HEAD, reroute_rows(b))}


def exp4(ctx):
    gs = groups(ctx.sweep("r4-8plane-nic-port", T4), T4)
    rows, ctx.J["4"] = [], {}
    for t, g in gs.items():
        pre, post = col(g, "x_goodput_pre_gbps"), col(g, "x_goodput_post_gbps")
        failed = col(g, "counters_qp_errors") + col(g, "outcome_failed") if "counters_qp_errors" in g \
            else col(g, "outcome_failed")
        rows.append([t, txt(pre, 0), txt(post, 0), txt(post / pre, 3), done_text(g), txt(failed, 0),
                     txt(col(g, "fct_us_max"))])
        ctx.J["4"][t] = {"goodput_pre_gbps": stat(pre), "goodput_post_gbps": stat(post), "ratio": stat(post / pre),
                         "qps_failed": stat(failed), "fct_us_max": stat(col(g, "fct_us_max"))}
    head(ctx, 4, "8 planes, one NIC port of h0 lost: goodput after it (300-500 us; 7/8 of 1.6 Tb/s is the most)",
         "Gb/s", {t: col(g, "x_goodput_post_gbps") for t, g in gs.items()}, lower_is_better=False)
    goodput_plot(ctx, gs, ("mrc", "roce-ecmp"), ctx.out / "r4-8plane-goodput.png", 1200,
                 "goodput (Gb/s, 5 us windows)", "8 planes: h0 -> h40 and h41 -> h0, 8 QPs each way",
                 lambda ax: ax.axvline(200, color="r", ls=":", lw=1, label="h0 plane-0 port down"))
    hd = ["transport", "goodput 100-200 us Gb/s", "300-500 us", "after / before", "flows done", "QPs failed",
          "max FCT us"]
    return {"table 4": table(hd, rows) + "\n\nReroute:\n\n" + table(RR_HEAD, reroute_rows(gs))}


def routing4(ctx):
    return {"routing 4": routing_table(ctx, "4", "r4-8plane-nic-port", [
        ("x_goodput_post_gbps", "goodput 300-500 us Gb/s", 0), ("outcome_failed", "flows failed", 0),
        ("fct_us_max", "max FCT us", None)])}


def exp5(ctx):
    gs = groups(ctx.sweep("r5-incast-victim", T5), T5)
    rows, ctx.J["5"] = [], {}
    for t, g in gs.items():
        rows.append([t, txt(col(g, "victim_fct_us")), txt(col(g, "victim_gbps")), txt(col(g, "victim_slowdown")),
                     txt(col(g, "cct_us_max")), txt(col(g, "x_incast_max_fct_us")),
                     *counters(g, ["pfc_pauses", "drops_queue_full", "trims"])])
        ctx.J["5"][t] = jstats(g, ["victim_fct_us", "victim_gbps", "victim_slowdown", "cct_us_max",
                                   "counters_pfc_pauses"])
    head(ctx, 5, "7 -> 1 incast, victim flow throughput", "Gb/s", {t: col(g, "victim_gbps") for t, g in gs.items()},
         lower_is_better=False)
    hd = ["transport", "victim FCT us", "victim Gb/s", "victim slowdown", "incast CCT us", "incast max FCT us",
          "PFC pauses", "queue drops", "trims"]
    return {"table 5": table(hd, rows)}


def exp6(ctx):
    levels = [("0", ctx.sweep("r6-no-loss", LOSS_T)), ("0.1 %", ctx.sweep("r6-gray-loss-0.1pct", LOSS_T)),
              ("1 %", ctx.sweep("r6-gray-loss-1pct", LOSS_T))]
    rows, ctx.J["6"], gp, h = [], {}, {}, {}
    for lab, df in levels:
        for t, g in groups(df, LOSS_T).items():
            mean, agg = col(g, "x_mean_flow_gbps"), col(g, "x_aggregate_gbps")
            gp.setdefault(t, []).append(ci(mean))
            if lab == "1 %":
                h[t] = mean
            rows.append([lab, t, done_text(g), txt(mean), txt(agg, 0), txt(col(g, "fct_us_p50")),
                         txt(col(g, "fct_us_p99")), txt(col(g, "fct_us_max")),
                         *counters(g, ["drops_gray", "retransmissions", "spurious_retransmissions", "timeouts"])])
            ctx.J["6"][f"{lab} {t}"] = {"mean_flow_gbps": stat(mean), "aggregate_gbps": stat(agg),
                                        **jstats(g, ["fct_us_p50", "fct_us_p99", "fct_us_max",
                                                     "counters_retransmissions", "counters_timeouts"])}
    head(ctx, 6, "mean flow goodput with 1 % loss per fabric link", "Gb/s", h, lower_is_better=False)
    if ctx.plots:
        plt = _plt()
        fig, ax = plt.subplots(figsize=(6, 3.2))
        for t, v in gp.items():
            m = np.array(v)
            (ln,) = ax.plot([0, 1, 2], m[:, 0], "o-", label=LABELS.get(t, t))
            ax.fill_between([0, 1, 2], m[:, 1], m[:, 2], color=ln.get_color(), alpha=0.15, lw=0)
        ax.set_xticks([0, 1, 2], ["no loss", "0.1 % per link", "1 % per link"])
        ax.set_ylabel("mean flow goodput (Gb/s)")
        ax.set_title("k=8 permutation 128 x 2 MB, random loss on fabric links (median, 95 % CI)", fontsize=9)
        ax.legend(fontsize=6)
        save(fig, ctx.out / "r6-gray-loss-goodput.png")
    hd = ["loss per link", "transport", "flows done", "mean flow Gb/s", "aggregate Gb/s", "FCT p50 us", "p99", "max",
          "gray drops", "retransmissions", "spurious", "timeouts"]
    return {"table 6": table(hd, rows)}


def exp7(ctx):
    clean = groups(ctx.sweep("r2-k8-allreduce", ALL, own=False), ALL)
    gs = groups(ctx.sweep("r7-t1-reboot", ALL), ALL)
    f7 = scen("r7-t1-reboot")["failures"][0]
    back = f7["at_us"] + f7["duration_us"]
    rows, ctx.J["7"] = [], {}
    for t, g in gs.items():
        rows.append([t, txt(col(clean[t], "cct_us_max")), txt(col(g, "cct_us_max")), txt(col(g, "cct_us_mean")),
                     done_text(g, "collectives_total", "collectives_completed"), txt(col(g, "fct_us_max")),
                     txt(col(g, "x_stalled_steps"), 0),
                     *counters(g, ["drops_link_down", "drops_no_route", "timeouts"])])
        ctx.J["7"][t] = {"clean": jstats(clean[t], ["cct_us_max"]),
                         **jstats(g, ["cct_us_max", "cct_us_mean", "fct_us_max", "counters_timeouts",
                                      "counters_drops_link_down", "counters_drops_no_route"])}
    head(ctx, 7, "T1 switch down 2 ms during an all-reduce, slowest ring", "us",
         {t: col(g, "cct_us_max") for t, g in gs.items()})
    goodput_plot(ctx, gs, ("roce-ecmp", QP8, "mrc", "spray", "ar"), ctx.out / "r7-t1-reboot-goodput.png", 4000,
                 "goodput (Gb/s)", "k=8 ring all-reduce, a T1 switch down for 2 ms",
                 lambda ax: ax.axvspan(f7["at_us"], back, color="r", alpha=0.08, label="p0.t1.0 rebooting"))
    hd = ["transport", "CCT max, no failure us", "CCT max, reboot us", "CCT mean, reboot", "rings done",
          "max step FCT us", "steps > 1 ms ending after the reboot", "link-down drops", "no-route drops", "timeouts"]
    return {"table 7": table(hd, rows) + "\n\nReroute:\n\n" + table(RR_HEAD, reroute_rows(gs))}


def routing7(ctx):
    return {"routing 7": routing_table(ctx, "7", "r7-t1-reboot", [
        ("cct_us_max", "CCT max us", None), ("cct_us_mean", "CCT mean us", None),
        ("failure0_first_steered_away_us", "first steered away us", 2), ("counters_timeouts", "timeouts", 0)])}


def exp8(ctx):
    gs = groups(ctx.sweep("r8-link-flap", ALL), ALL)
    rows, ctx.J["8"] = [], {}
    for t, g in gs.items():
        rows.append(fct_row(t, g)[:-1] + [txt(col(g, "failure0_packets_directed"), 0),
                                          *counters(g, ["drops_link_down", "timeouts"])])
        ctx.J["8"][t] = jstats(g, ["fct_us_p50", "fct_us_p99", "fct_us_max", "slowdown_p99",
                                   "failure0_packets_directed", "counters_drops_link_down", "counters_timeouts"])
    head(ctx, 8, "one link flapping, permutation 128 x 32 MB, p99 FCT", "us",
         {t: col(g, "fct_us_p99") for t, g in gs.items()})
    cdf_plot(ctx, gs, ctx.out / "r8-link-flap-fct-cdf.png", "k=8 permutation 128 x 32 MB, one T1-T2 link flapping")
    hd = FCT_HEAD[:-1] + ["packets to the link after the first fault", "link-down drops", "timeouts"]
    return {"table 8": table(hd, rows) + "\n\nReroute:\n\n" + table(RR_HEAD, reroute_rows(gs))}


def routing8(ctx):
    return {"routing 8": routing_table(ctx, "8", "r8-link-flap", [
        ("fct_us_p99", "FCT p99 us", None), ("fct_us_max", "max", None), ("counters_timeouts", "timeouts", 0),
        ("outcome_failed", "flows failed", 0)])}


def exp8_four(ctx):
    """The MRC paper's four flapping links."""
    g4 = groups(ctx.sweep("r8-link-flap-4", FLAP4_T), FLAP4_T)
    rows4, ctx.J["8-four"] = [], {}
    for t, g in g4.items():
        rows4.append(fct_row(t, g)[:-1] + [txt(col(g, "counters_drops_link_down"), 0),
                                           txt(col(g, "counters_timeouts"), 0), txt(col(g, "outcome_failed"), 0)])
        ctx.J["8-four"][t] = jstats(g, ["fct_us_p50", "fct_us_p99", "fct_us_max", "slowdown_p99",
                                        "counters_timeouts", "outcome_failed"])
    hd4 = FCT_HEAD[:-1] + ["link-down drops", "timeouts", "flows failed"]
    return {"table 8 four": table(hd4, rows4)}


def routing_table(ctx, n: str, label: str, figures) -> str:
    """Experiment `n`'s failure under the remote convergence times of `ROUTING_GRID` (local repair at its 1 ms
    default): `ROUTING_T` at every grid point, `mrc` among them for reference (its SRv6 paths do not follow
    routing, so its rows should not move)."""
    df = ctx.sweep(f"{label}-routing", ROUTING_T, grid=ROUTING_GRID, scenario_name=label)
    ok = df[df["status"] == "ok"]
    rows, J = [], {}
    for t in ROUTING_T:
        for conv in ROUTING_GRID["switch.route_converge_us"]:
            g = ok[(ok["transport"] == t) & (ok["switch.route_converge_us"].astype(float) == conv)]
            rows.append([t, f"{conv:,g}"] + [txt(metric_values(g, c), d) for c, _, d in figures])
            J[f"{t} {conv:g}"] = {c: stat(metric_values(g, c)) for c, _, _ in figures}
    ctx.J[f"{n}-routing"] = J
    return table(["transport", "route_converge_us"] + [h for _, h, _ in figures], rows)


# ---------------------------------------------------------------- experiment 10: the MRC paper's testbed rows


def _busbw(cct_us, size, kind):
    """NCCL's bus bandwidth (nccl-tests PERFORMANCE.md) in Gb/s: all-reduce 2 (n-1)/n S / t, all-to-all
    (n-1)/n S / t, with S the rank's buffer and t the collective's completion time."""
    n = HOSTS9
    factor = 2 * (n - 1) / n if kind == "allreduce" else (n - 1) / n
    return factor * size * 8 / (np.asarray(cct_us, float) * 1e3)


def _size_text(b):
    return f"{b // 1048576} MiB" if b >= 1048576 else f"{b // 1024} KiB"


COLL_T = {"4x100g": ["mrc", SPECIFIED], "1x400g": ["roce-ecmp", QP16]}


def exp10_coll(kind: str, loss: str):
    """Experiment 10's table of collective `kind` (allreduce, alltoall) at loss level `loss` ("", "-loss0.1pct",
    "-loss1pct"): bus bandwidth per message size, `COLL_T`'s transports on their fabrics."""

    def part(ctx):
        J = ctx.J.setdefault("10", {})
        sizes = SIZES[kind] if not loss else LOSS_SIZES[kind + loss]
        rows, per_t9 = [], {}
        for fab, ts in COLL_T.items():
            label = f"r10-{kind}-{fab}{loss}"
            per_peer = [s // HOSTS9 for s in sizes] if kind == "alltoall" else sizes
            df = ctx.sweep(label, ts, grid={"workload.size_bytes": per_peer},
                           sets=[f"duration_us={LOSS_DURATION_US}"] if loss else ())
            ok = df[df["status"] == "ok"]
            for t in ts:
                cells = []
                for s, p in zip(sizes, per_peer):
                    g = ok[(ok["transport"] == t) & (ok["workload.size_bytes"].astype(int) == p)]
                    bw = _busbw(col(g, "cct_us_max"), s, kind)
                    done = done_text(g, "collectives_total", "collectives_completed")
                    got = bw[~np.isnan(bw)]
                    d = 1 if len(got) and np.median(got) < 10 else 0  # a collapse shows as 2.3, not 2
                    cells.append(txt(bw, d) + (f" ({done})" if done != "1/1" else ""))
                    J[f"{kind}{loss} {t} {_size_text(s)}"] = {"busbw_gbps": stat(bw),
                                                             "cct_us_max": stat(col(g, "cct_us_max"))}
                    if kind == "allreduce" and not loss and s == 16777216:
                        per_t9[t] = bw
                rows.append([t, "4 x 100G" if fab == "4x100g" else "1 x 400G"] + cells)
        if per_t9:
            head(ctx, 10, "64 hosts, ring all-reduce of 16 MiB: bus bandwidth (MRC on 4 x 100G, RoCE on 1 x 400G)",
                 "Gb/s", per_t9, lower_is_better=False)
        hd = ["transport", "fabric"] + [f"{_size_text(s)}: bus Gb/s" for s in sizes]
        return {f"table 10 {kind}{loss}": table(hd, rows)}

    part.__name__ = f"exp10_{kind}{loss}"
    return part


def exp10_latency(ctx):
    """Point-to-point latency of 2-byte writes, one T0 and across a T1, against the paper's."""
    gs = groups(ctx.sweep("r10-p2p-latency", ["mrc", "roce-ecmp"]), ["mrc", "roce-ecmp"])
    rows, J = [], ctx.J.setdefault("10", {})
    for t, g in gs.items():
        a, b = col(g, "x_latency_flow0_us"), col(g, "x_latency_flow1_us")
        rows.append([t, txt(a, 2), txt(b, 2), txt(b - a, 2)])
        J[f"p2p {t}"] = {"one_t0_us": stat(a), "across_t1_us": stat(b)}
    rows.append(["paper (ConnectX-8, 8 x 100G)", f"{P2P_PAPER['one T0']:.2f}", f"{P2P_PAPER['across a T1']:.2f}",
                 f"{P2P_PAPER['across a T1'] - P2P_PAPER['one T0']:.2f}"])
    return {"table 10 latency": table(["transport", "one T0 us", "across a T1 us", "difference us"], rows)}


# ---------------------------------------------------------------- headlines, values


def overlap(a, b) -> bool:
    return not (np.isnan(a[1]) or np.isnan(b[1])) and a[1] <= b[2] and b[1] <= a[2]


def best_of(v: dict, names, sign):
    have = {t: v[t] for t in names if t in v}
    return min(have, key=lambda t: sign * have[t][0]) if have else None


def headlines(ctx) -> str:
    """The headline table (the best RoCE configuration, `mrc`, the best other transport) and a sentence per
    headline where the intervals of `mrc` and the best other transport overlap."""
    rows, notes = [], []
    heads = {**legacy_heads(set(ctx.heads)), **ctx.heads}
    for n in sorted(heads):
        h = heads[n]
        v = {t: x for t, x in h["values"].items() if not np.isnan(x[0])}
        if "mrc" not in v:
            continue
        sign = 1 if h["better"] == "lower" else -1
        roce = best_of(v, ROCE, sign)
        others = {t: x for t, x in v.items() if t not in ("mrc", SPECIFIED)}  # the alternatives to MRC
        best = min(others, key=lambda t: sign * others[t][0]) if others else None
        unit = f" {h['unit']}" if h["unit"] else ""
        mark = " (previous code, not re-run)" if h.get("legacy") else ""
        rows.append([n, h["question"] + f" ({h['seeds']}){mark}",
                     f"`{roce}` {txt(v[roce])}{unit}" if roce else "-",
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
    return (table(["#", "question (seeds)", "best RoCE configuration", "`mrc`",
                   "best other (by median)"], rows) + "\n\n" + "\n".join(notes))


def values(J: dict) -> dict:
    """The generated numbers the page's prose may cite (``<!--v KEY-->``): for every figure of `J` (results.json)
    KEY = ``experiment/row/figure`` (``median [low, high]``), ``.../m`` (the median alone), ``.../m0`` (the median as
    a whole number: counts), ``.../lo``, ``.../hi``;
    and ``A / B`` ratios of two medians (``x`` times), ``A vs B`` their change in % (`expr`)."""
    out = {}

    def walk(prefix, d):
        for k, v in d.items():
            if isinstance(v, dict) and "median" in v:
                m, lo, hi = v["median"], v.get("ci_low"), v.get("ci_high")
                lo = np.nan if lo is None else lo
                hi = np.nan if hi is None else hi
                m = np.nan if m is None else m
                out[f"{prefix}{k}"] = txt((m, lo, hi))
                out[f"{prefix}{k}/m"] = txt((m, np.nan, np.nan))
                out[f"{prefix}{k}/m0"] = "-" if np.isnan(m) else f"{m:,.0f}"  # a count
                out[f"{prefix}{k}/lo"] = txt((lo, np.nan, np.nan))
                out[f"{prefix}{k}/hi"] = txt((hi, np.nan, np.nan))
                out[f"{prefix}{k}/raw"] = m
            elif isinstance(v, dict):
                walk(f"{prefix}{k}/", v)

    for n, d in J.items():
        if n not in ("seeds", "headlines", "wall_s") and isinstance(d, dict):
            walk(f"{n}/", d)
    return out


class Values(dict):
    """`values` plus expressions: ``A / B`` (ratio of medians, one decimal and ``x``), ``A vs B`` (B to A in %)."""

    def __contains__(self, key):
        return self.get(key) is not None

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __missing__(self, key):
        for op in (" / ", " vs "):
            if op in key:
                a, b = (dict.get(self, k.strip() + "/raw") for k in key.split(op, 1))
                if a is None or b is None or not b or np.isnan(a) or np.isnan(b):
                    raise KeyError(key)
                return f"{a / b:,.1f}x" if op == " / " else f"{(a - b) / abs(b) * 100:+.0f} %"
        raise KeyError(key)


# every part of the page: (experiment, the function rendering its blocks); a part whose records are missing is
# left out (`Ctx.missing`) and the page keeps what it had there (the "records" block says which)
PARTS = [(1, exp1), (2, exp2), (3, exp3), (4, exp4), (4, routing4), (5, exp5), (6, exp6), (7, exp7), (7, routing7),
         (8, exp8), (8, routing8), (8, exp8_four)] + [
    (10, exp10_coll(k, loss)) for k in ("allreduce", "alltoall") for loss in ("", "-loss0.1pct", "-loss1pct")] + [
    (10, exp10_latency)]
EXPERIMENTS = sorted({n for n, _ in PARTS})
# the blocks each part renders (for the "records" block when a part's records are missing)
# docs/results/results.json as it stood before the tables were rendered from records (the figures of the tables
# not re-run since: their headlines, and their entries of a new results.json)
LEGACY = pathlib.Path(__file__).resolve().parents[1] / "docs" / "cells" / "results" / "legacy-results.json"
BLOCKS = {"exp1": ["table 1"], "exp2": ["table 2"], "exp3": ["table 3"], "exp4": ["table 4"], "routing4": ["routing 4"],
          "exp5": ["table 5"], "exp6": ["table 6"], "exp7": ["table 7"], "routing7": ["routing 7"],
          "exp8": ["table 8"], "routing8": ["routing 8"], "exp8_four": ["table 8 four"],
          **{f"exp10_{k}{loss}": [f"table 10 {k}{loss}"] for k in ("allreduce", "alltoall")
             for loss in ("", "-loss0.1pct", "-loss1pct")}, "exp10_latency": ["table 10 latency"]}
BLOCKS_ORDER = [b for _, fn in PARTS for b in BLOCKS[fn.__name__]]


def part_names(only) -> set[str]:
    """The parts of experiments `only` (numbers) or named (``routing4``, ``exp10_alltoall``): for ``--only``."""
    names = {fn.__name__ for _, fn in PARTS}
    out = set()
    for v in only:
        v = str(v).strip()
        if v.isdigit():
            if int(v) not in EXPERIMENTS:
                raise ValueError(f"no experiment {v} (one of {', '.join(map(str, EXPERIMENTS))})")
            out |= {fn.__name__ for n, fn in PARTS if n == int(v)}
        elif v in names:
            out.add(v)
        else:
            raise ValueError(f"no experiment or part {v!r} (experiments {', '.join(map(str, EXPERIMENTS))}; parts "
                             f"{', '.join(sorted(names))})")
    return out


def render(client=None, live=(), seeds_of=None, runs=pathlib.Path("runs/results"), out=pathlib.Path("docs/results"),
           save_records=True, only_live=False) -> tuple[dict, dict, Ctx]:
    """Every block of the page ({block name: markdown}), the results.json mapping, and the context: the parts
    named in `live` (`part_names`) run their sweeps on `client`; the others are read from their committed
    records (with `only_live`, left out). A part without records is left out and named in the ``records``
    block; the headlines of an experiment without records are the previous page's (`LEGACY`), marked so."""
    ctx = Ctx(client, live, seeds_of or {}, runs, out, save_records)
    blocks = {}
    for n, fn in PARTS:
        if only_live and fn.__name__ not in ctx.live:
            continue
        ctx.n, ctx.part = n, fn.__name__
        print(f"{fn.__name__}" + (" (sweeps)" if ctx.plots else " (records)"), file=sys.stderr, flush=True)
        try:
            blocks.update(fn(ctx))
        except Missing as e:
            for b in BLOCKS[fn.__name__]:
                ctx.missing[b] = e.label
            continue
        ctx.J.setdefault("seeds", {})[str(n)] = ctx.seeds
    blocks.update({b: NOT_RUN for b in ctx.missing if b not in EARLIER})  # a new table not run says so
    blocks["table headlines"] = headlines(ctx)
    blocks["records"] = records_block(ctx)
    return blocks, ctx.J, ctx


def legacy_heads(done) -> dict:
    """The headlines of the experiments not in `done` as the page gave them before its tables were rendered from
    records (`LEGACY`), in `Ctx.heads` form."""
    if not LEGACY.is_file():
        return {}
    J = json.loads(LEGACY.read_text())
    return {int(n): {"question": h["question"], "unit": h["unit"], "better": h["better"], "seeds": h["seeds"],
                     "legacy": True,
                     "values": {t: (v["median"], v["ci_low"], v["ci_high"]) for t, v in h["values"].items()}}
            for n, h in J.get("headlines", {}).items() if int(n) not in done}


# the tables the page had before its tables were rendered from records: one not re-run keeps its earlier text
EARLIER = {f"table {n}" for n in range(1, 9)}
NOT_RUN = "Not run in this version: it did not fit the session's budget (\"Cost\")."


def records_block(ctx) -> str:
    """Which tables of the page are rendered from committed records (and so checked), and which are not."""
    lines = ["| table | source |", "|---|---|"]
    for b in BLOCKS_ORDER:
        if b not in ctx.missing:
            lines.append(f"| {b} | records (`docs/cells/results/`), checked by the tests |")
        elif b in EARLIER:
            lines.append(f"| {b} | **not re-run on this code**: the previous version's table (no record "
                         f"`{ctx.missing[b]}`; not checked) |")
        else:
            lines.append(f"| {b} | **not run** (no record `{ctx.missing[b]}`) |")
    return "\n".join(lines)


def check(page: pathlib.Path, blocks: dict, J: dict) -> list[str]:
    """What differs between `page` and the rendering (blocks, inline values): one line each."""
    return doccells.check_page(page, blocks, Values(values(J)))


def write_page(page: pathlib.Path, blocks: dict, J: dict) -> None:
    docblocks.fill(page, blocks)
    page.write_text(doccells.fill_values(page.read_text(), Values(values(J)), str(page)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="experiments (1-8, 10) or parts (routing4, exp10_alltoall, ...) whose "
                    "sweeps run, comma-separated, or none; default all; with --doc the others are rendered from their "
                    "committed records, without it only these are printed")
    ap.add_argument("--seeds", default=None, help="seeds of every sweep (default: each experiment's, `SEEDS`)")
    ap.add_argument("--seeds-of", action="append", default=[], metavar="N=SEEDS",
                    help="other seeds for experiment N (e.g. 3=1-10)")
    ap.add_argument("--out", default="docs/results", help="directory for tables.md, results.json and the PNGs")
    ap.add_argument("--runs", default="runs/results", help="the sweeps' directories (kept: a re-run resumes them)")
    ap.add_argument("--doc", default=None, help="page to write: its <!-- table N --> blocks and <!--v KEY--> values")
    ap.add_argument("--check", default=None, metavar="PAGE", help="render from the committed records only and "
                    "exit 1 if PAGE differs (no simulation)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, default=2, help="local Dask cluster size (default 2)")
    g.add_argument("--scheduler", default=None, help="an existing Dask cluster's scheduler (tcp://HOST:PORT)")
    a = ap.parse_args(argv)
    if a.check:
        blocks, J, _ = render()
        bad = check(pathlib.Path(a.check), blocks, J)
        print("\n".join(bad) or f"{a.check}: every table and value agrees with docs/cells/{PAGE}")
        return 1 if bad else 0
    if a.only.strip() == "none":
        only = set()
    else:
        try:
            only = part_names([v for v in a.only.split(",") if v.strip()] if a.only else EXPERIMENTS)
        except ValueError as e:
            ap.error(f"--only {a.only}: {e}")
    seeds_of = {n: a.seeds for n in EXPERIMENTS} if a.seeds else {}
    for item in a.seeds_of:
        k, _, v = item.partition("=")
        if not k.strip().isdigit() or int(k) not in EXPERIMENTS or not v.strip():
            ap.error(f"--seeds-of {item}: write N=SEEDS with N one of 1-{max(EXPERIMENTS)}")
        seeds_of[int(k)] = v.strip()
    if a.seeds and not a.doc:
        print("note: --seeds without --doc: records are not written (they would not match the page)",
              file=sys.stderr)
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    from mrc.emulator.sweeps.runner import cluster

    t0 = time.perf_counter()
    if not only:  # the page from the records alone: no cluster
        blocks, J, ctx = render(None, (), seeds_of, pathlib.Path(a.runs), out)
    else:
        with cluster(a.workers, a.scheduler) as client:
            blocks, J, ctx = render(client, only, seeds_of, pathlib.Path(a.runs), out,
                                    save_records=bool(a.doc) or not seeds_of, only_live=not a.doc)
    md = [f"## {name}\n\n{body}\n" for name, body in blocks.items()]
    J["wall_s"] = time.perf_counter() - t0
    if a.doc:  # the page's numbers (results_changes.py compares two of these); a table not re-run keeps its own
        J = {**{k: v for k, v in json.loads(LEGACY.read_text()).items() if k not in J and k not in ("headlines",
                                                                                                "wall_s")}, **J}
        (out / "tables.md").write_text("\n".join(md))
        (out / "results.json").write_text(json.dumps(J, indent=1, default=R._clean) + "\n")
    print("\n".join(md))
    if a.doc:
        write_page(pathlib.Path(a.doc), blocks, J)
    print(f"wall {J['wall_s']:.0f} s; written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
