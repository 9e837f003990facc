"""The ablation of MRC's extensions (docs/protocol.md, "Extensions"): each one off in turn, and all of them off
("MRC as specified"), against `mrc` with all of them on, over the same seeds, on the scenarios where they act.

    python benchmarks/ablation.py                                   # link-failure + experiment 7, seeds 1-5
    python benchmarks/ablation.py --scenarios results/r8-link-flap --seeds 1-10   # any scenario
    python benchmarks/ablation.py --doc docs/protocol.md            # fill the <!-- ablation --> block

Every scenario is a sweep (`mrc.emulator.sweep`, docs/sweeps.md) over the variants below, resumed from
``RUNS/<scenario>`` (default RUNS: runs/ablation) on a second run. Each number is the median over the seeds and
its bootstrap 95 % interval (`mrc.emulator.sweeps.stats.median_ci`). A variant whose interval does not overlap
`mrc`'s is marked with `*`.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

import docblocks  # benchmarks/docblocks.py
from mrc.emulator.sweeps.stats import fmt as sfmt
from mrc.emulator.sweeps.stats import median_ci, metric_values

# Every extension of docs/protocol.md, off; the transport spec (name:key=value...) and the row's label.
OFF = [("rack=false", "`rack = false`"),
       ("rto_retire=false", "`rto_retire = false`"),
       ("rev_rotate=false", "`rev_rotate = false`"),
       ("rto_reprobe=false", "`rto_reprobe = false`"),
       ("always_skip_marks=0", "`always_skip_marks = 0`"),
       ("probe_successes=1", "`probe_successes = 1`")]
# "MRC as specified": every extension off (the probe interval is not in the public material; it stays).
SPECIFIED = "mrc:" + ":".join(k for k, _ in OFF)
READMISSION = ("ev_first_probe_us=100", "`ev_first_probe_us = 100` (re-admission off)")
VARIANTS = [("mrc", "`mrc` (all extensions on)")] + [(f"mrc:{k}", lab) for k, lab in OFF + [READMISSION]] \
    + [(SPECIFIED, "all off (\"as specified\")")]

# The controller's live fault localisation only observes (docs/observability.md) and costs most of an MRC
# run's wall time when EVs fail: off here, where nothing reads it.
SETS = ["localize.enabled=false"]
# what each scenario is judged by: (column of the sweep table, header)
FCT = [("fct_us_p99", "FCT p99 us"), ("fct_us_max", "FCT max us"), ("slowdown_p99", "slowdown p99"),
       ("failure0_off_99_us", "99 % off us"), ("counters_timeouts", "timeouts")]
CCT = [("cct_us_max", "slowest ring us"), ("cct_us_mean", "mean ring us"), ("fct_us_max", "max step FCT us"),
       ("counters_drops_link_down", "link-down drops"), ("counters_timeouts", "timeouts")]
SCENARIOS = {
    "link-failure": ("k=8 fat-tree, 128 x 2 MB permutation, one T1-T2 link down at 50 us, permanently", FCT),
    "results/r7-t1-reboot": ("docs/results.md experiment 7: k=8 ring all-reduce (8 rings of 16, 4 MB), a T1 "
                             "switch down for 2 ms at 100 us, 12 of 16 EVs active", CCT),
    "results/r8-link-flap": ("docs/results.md experiment 8: k=8 permutation 128 x 32 MB, one T1-T2 link "
                             "flapping", FCT),
}


def cell_text(v: np.ndarray, ref: tuple | None, count: bool = False) -> str:
    """``median [low, high]`` of `v`, ``*`` when the interval leaves `ref`'s; `count`: whole numbers."""
    med, lo, hi = median_ci(v)
    if np.isnan(med):
        return "-"
    f = (lambda x: f"{x:,.0f}") if count else sfmt
    s = f(med) if np.isnan(lo) else f"{f(med)} [{f(lo)}, {f(hi)}]"
    if ref is not None and not (np.isnan(lo) or np.isnan(ref[1])) and (hi < ref[1] or lo > ref[2]):  # no overlap
        s += " *"
    return s


def ablate(name: str, seeds: str, runs: pathlib.Path, client) -> str:
    from mrc.emulator import sweep

    what, cols = SCENARIOS.get(name, (name, FCT))
    t0 = time.perf_counter()
    df = sweep(name, transports=[v for v, _ in VARIANTS], seeds=seeds, out=runs / name.replace("/", "-"),
               sets=SETS, client=client, resume=True, plots=False,
               echo=lambda line: print(f"  {line}", file=sys.stderr))
    bad = df[df["status"] != "ok"]
    print(f"  {name}: {len(df)} cells, {len(bad)} failed, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    ok = df[df["status"] == "ok"]
    cols = [(c, h) for c, h in cols if c in ok]
    refs = {c: median_ci(metric_values(ok[ok["transport"] == "mrc"], c)) for c, _ in cols}
    rows = ["| variant | " + " | ".join(h for _, h in cols) + " |", "|---|" + "---|" * len(cols)]
    for v, label in VARIANTS:
        g = ok[ok["transport"] == v]
        rows.append(f"| {label} | " + " | ".join(
            cell_text(metric_values(g, c), None if v == "mrc" else refs[c], c.startswith("counters_"))
            for c, _ in cols) + " |")
    cmd = (f"mrc emu sweep {name} --transports {','.join(v for v, _ in VARIANTS)} --seeds {seeds} "
           + " ".join(f"--set {x}" for x in SETS))
    return f"**{name}** ({what}), seeds {seeds}:\n\n`{cmd}`\n\n" + "\n".join(rows)


def fill_doc(page: pathlib.Path, text: str) -> None:
    """Put the tables into `page`'s ``<!-- ablation-tables -->`` block (`docblocks`)."""
    docblocks.fill(page, {"ablation-tables": text})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="link-failure,results/r7-t1-reboot",
                    help="comma-separated scenario names (library or files)")
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--runs", default="runs/ablation")
    ap.add_argument("--doc", default=None, help="page whose <!-- ablation-tables --> block gets the tables")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, default=None, help="local Dask cluster size (default: the core count)")
    g.add_argument("--scheduler", default=None, help="an existing Dask cluster's scheduler (tcp://HOST:PORT)")
    a = ap.parse_args(argv)
    from mrc.emulator.sweeps.runner import cluster

    parts = []
    with cluster(a.workers, a.scheduler) as client:
        for name in [s.strip() for s in a.scenarios.split(",") if s.strip()]:
            parts.append(ablate(name, a.seeds, pathlib.Path(a.runs), client))
            print(parts[-1] + "\n", flush=True)
    text = "\n\n".join(parts) + "\n\n`*`: the median's 95 % interval does not overlap `mrc`'s.\n"
    if a.doc:
        fill_doc(pathlib.Path(a.doc), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
