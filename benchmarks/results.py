"""Regenerate every table and figure of docs/results.md from the committed scenarios.

    python benchmarks/results.py                  # all eight experiments (~20 min of CPU on 2 cores)
    python benchmarks/results.py --only 4,5       # some of them
    python benchmarks/results.py --out runs/res   # tables.md, results.json and PNGs there
    python benchmarks/results.py --runs runs/res  # also keep each run's results directory
    python benchmarks/results.py --doc docs/results.md   # also put the tables into the page

The scenarios are `emulator/scenarios/results/r<N>-*.toml` (library names
`results/r<N>-...`); each experiment runs them once per transport with the
scenario's seed, so the same code and seed give the same numbers bit for bit
(wall times aside). Markdown tables go to ``OUT/tables.md`` and stdout, every
number to ``OUT/results.json``, plots to ``OUT/r<N>-*.png`` (default OUT:
docs/results). With ``--doc PAGE`` each experiment's tables replace what stands
between ``<!-- table N -->`` and ``<!-- /table N -->`` in PAGE.
"""
from __future__ import annotations

import argparse
import copy
import json
import pathlib
import re
import sys
import time

import numpy as np

from mrc.emulator import metrics, results, scenario, sim
from mrc.emulator import scenarios as lib

ALL = ["roce-ecmp", "roce-ecmp:lossless=false", "mrc", "mrc-1ev", "spray", "reps", "ar"]
LOSS_T = ["roce-ecmp", "roce-ecmp:lossless=false", "mrc", "spray", "reps", "ar"]
# published UEC htsim results, 8192-host 400G leaf-spine, NSCC, max FCT in us (simulators-and-setups 5.4)
UEC = {"1 MB": {"32 EV": 38.7, "64 EV": 36.2, "128 EV": 35.4, "target": 34},
       "1 MB, -failed 1": {"32 EV": 42.0, "64 EV": 44.6, "128 EV": 45.4, "target": 34}}


def scen(name: str) -> dict:
    data, _, _ = scenario.read(lib.path(f"results/{name}"))
    return data


def run_one(name: str, spec: str, data: dict | None = None, keep: pathlib.Path | None = None, sets=()):
    """Run library scenario results/`name` (or `data` under that name) with transport `spec`."""
    from mrc.emulator.cli import parse_transport

    d = copy.deepcopy(data) if data is not None else scen(name)
    scenario.apply_sets(d, sets)
    tname, params = parse_transport(spec)
    d["transport"] = {**params, "name": tname}
    sc = scenario.parse(d, name, lib.DIR)
    t0 = time.perf_counter()
    r = sim.Simulation(sc).run(progress=False)
    wall = time.perf_counter() - t0
    if keep is not None:
        s = results.write(r, keep / name / spec.replace(":", "_").replace("=", "-"), plots_too=False)
    else:
        s = metrics.summary(r)
    ft = metrics.flow_table(r)
    print(f"  {name:28s} {spec:26s} {wall:7.1f} s  {s['flows']['completed']}/{s['flows']['total']} flows",
          file=sys.stderr, flush=True)
    return {"s": s, "ft": ft, "samples": {k: np.asarray(v) for k, v in r.samples.items()}, "wall": wall}


def f1(v, d=1):
    return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:,.{d}f}"


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    _plt().close(fig)


def goodput_plot(runs: dict, names, path, xmax, ylabel, title, mark):
    """The fabric's goodput over time under transports `names`, the failure drawn by ``mark(ax)``."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for t in names:
        s = runs[t]["samples"]
        ax.plot(s["t_us"], s["goodput_gbps"], label=t, lw=1)
    mark(ax)
    ax.set_xlim(0, xmax)
    ax.set_xlabel("time (us)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    save(fig, path)


def fct_row(label, x):
    s = x["s"]
    return [label, f"{s['flows']['completed']}/{s['flows']['total']}", f1(s["fct_us"]["p50"]), f1(s["fct_us"]["p99"]),
            f1(s["fct_us"]["max"]), f1(s["slowdown"]["p50"], 2), f1(s["slowdown"]["p99"], 2), f1(x["wall"])]


FCT_HEAD = ["transport", "flows done", "FCT p50 us", "p99", "max", "slowdown p50", "p99", "wall s"]


def cdf_plot(runs: dict, path, title, xlabel="flow completion time (us)"):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, x in runs.items():
        v = np.sort(x["ft"]["fct_us"][~np.isnan(x["ft"]["fct_us"])])
        if len(v):
            ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of flows")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    save(fig, path)


def reroute_rows(label, x):
    rows = []
    for r in x["s"]["reroute"]:
        rows.append([label, r["kind"], r["target"], r["affected_flows"], f1(r["first_steered_away_us"], 2),
                     f1(r["off_99_us"]), f1(r["goodput_recovered_us"]), f1(r["pre_fault_goodput_gbps"], 0),
                     f1(r["min_goodput_gbps"], 0)])
    return rows


RR_HEAD = ["transport", "failure", "target", "affected flows", "first steered away us", "99 % off us",
           "goodput recovered us", "goodput before Gb/s", "min after Gb/s"]


def counters(x, keys):
    c = x["s"]["counters"]
    return [f"{c.get(k, 0):,}" for k in keys]


# ---------------------------------------------------------------- experiments


def exp1(out, keep, J):
    runs = {t: run_one("r1-k16-permutation", t, keep=keep) for t in ALL}
    J["1"] = {t: x["s"]["fct_us"] | {"slowdown": x["s"]["slowdown"], "flows": x["s"]["flows"]} for t, x in runs.items()}
    cdf_plot(runs, out / "r1-k16-fct-cdf.png", "k=16 fat-tree, permutation 1024 x 2 MB")
    return table(FCT_HEAD, [fct_row(t, x) for t, x in runs.items()])


def exp2(out, keep, J, cache):
    runs = {t: run_one("r2-k8-allreduce", t, keep=keep) for t in ALL}
    cache["r2"] = runs
    rows = []
    for t, x in runs.items():
        c = np.array([v for v in x["s"]["cct_us"] if v is not None], float)
        rows.append([t, f"{len(c)}/{len(x['s']['cct_us'])}", f1(c.min()), f1(c.mean()), f1(c.max()),
                     f1(x["s"]["fct_us"]["p50"]), f1(x["s"]["fct_us"]["p99"]), f1(x["s"]["fct_us"]["max"]), f1(x["wall"])])
    J["2"] = {t: {"cct_us": x["s"]["cct_us"], "fct_us": x["s"]["fct_us"]} for t, x in runs.items()}
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    names = list(runs)
    cc = [np.array(runs[t]["s"]["cct_us"], float) for t in names]
    ax.bar(range(len(names)), [c.max() for c in cc], color="tab:blue", alpha=0.5, label="slowest ring")
    ax.plot(range(len(names)), [c.mean() for c in cc], "ko", label="mean of 8 rings")
    ax.set_xticks(range(len(names)), [n.replace(":lossless=false", "\nlossy") for n in names], fontsize=7)
    ax.set_ylabel("all-reduce completion (us)")
    ax.set_title("k=8 fat-tree, 8 rings x 16 hosts, 4 MB ring all-reduce", fontsize=10)
    ax.legend(fontsize=7)
    save(fig, out / "r2-k8-allreduce-cct.png")
    return table(["transport", "rings done", "CCT min us", "mean", "max", "step FCT p50 us", "p99", "max", "wall s"], rows)


def exp3(out, keep, J):
    T3 = ["roce-ecmp", "mrc", "mrc-1ev", "spray", "reps", "ar"]
    rows, J["3"] = [], {}
    runs = {}
    for name in ("r3-leafspine-8192", "r3-leafspine-8192-failed"):
        for t in T3:
            x = run_one(name, t, keep=keep)
            runs[(name, t)] = x
            J["3"][f"{name} {t}"] = x["s"]["fct_us"] | {"flows": x["s"]["flows"], "sim": x["s"]["sim"]}
    for t in T3:
        a, b = runs[("r3-leafspine-8192", t)]["s"], runs[("r3-leafspine-8192-failed", t)]["s"]
        rows.append([t, f1(a["fct_us"]["p50"]), f1(a["fct_us"]["p99"]), f1(a["fct_us"]["max"]),
                     f1(b["fct_us"]["p50"]), f1(b["fct_us"]["p99"]), f1(b["fct_us"]["max"]),
                     f"{a['flows']['completed']}+{b['flows']['completed']}",
                     f1(runs[("r3-leafspine-8192", t)]["wall"] + runs[("r3-leafspine-8192-failed", t)]["wall"])])
    rows.append(["UEC htsim NSCC, 32 / 64 / 128 EVs (published)", "", "", "38.7 / 36.2 / 35.4", "", "",
                 "42.0 / 44.6 / 45.4", "", ""])
    rows.append(["UEC target", "", "", "34", "", "", "34", "", ""])
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    xs = np.arange(len(T3))
    ax.bar(xs - 0.2, [runs[("r3-leafspine-8192", t)]["s"]["fct_us"]["max"] for t in T3], 0.4, label="healthy")
    ax.bar(xs + 0.2, [runs[("r3-leafspine-8192-failed", t)]["s"]["fct_us"]["max"] for t in T3], 0.4,
           label="one spine at 25 %")
    ax.axhline(36.2, color="k", ls="--", lw=1, label="UEC NSCC 64 EV healthy (36.2)")
    ax.axhline(44.6, color="r", ls=":", lw=1, label="UEC NSCC 64 EV failed (44.6)")
    ax.set_yscale("log")
    ax.set_xticks(xs, T3, fontsize=8)
    ax.set_ylabel("max FCT (us)")
    ax.set_title("8192-host 400G leaf-spine, permutation 8192 x 1 MB", fontsize=10)
    ax.legend(fontsize=7)
    save(fig, out / "r3-leafspine-tail.png")
    head = ["transport", "healthy p50 us", "p99", "max", "1 spine at 25 %: p50 us", "p99", "max", "flows done", "wall s"]
    rr = [row for t in T3 for row in reroute_rows(t, runs[("r3-leafspine-8192-failed", t)])]
    for t in T3:
        J["3"][f"r3-leafspine-8192-failed {t}"]["reroute"] = runs[("r3-leafspine-8192-failed", t)]["s"]["reroute"]
    return table(head, rows) + "\n\nReroute (degraded spine):\n\n" + table(RR_HEAD, rr)


def _goodput(x, t0, t1):
    s = x["samples"]
    t = s["t_us"]
    m = (t > t0) & (t <= t1)
    return float(s["goodput_gbps"][m].mean()) if m.any() else float("nan")


def exp4(out, keep, J):
    T4 = ["mrc", "mrc-1ev", "spray", "reps", "ar", "roce-ecmp", "roce-ecmp:lossless=false"]
    runs = {t: run_one("r4-8plane-nic-port", t, keep=keep) for t in T4}
    rows, J["4"] = [], {}
    for t, x in runs.items():
        pre, post = _goodput(x, 100, 200), _goodput(x, 300, 500)
        c = x["s"]["counters"]
        rows.append([t, f1(pre, 0), f1(post, 0), f1(post / pre, 3), f"{x['s']['flows']['completed']}/16",
                     f"{c.get('qp_errors', 0) + x['s']['outcome']['failed']}", f1(x["s"]["fct_us"]["max"])])
        J["4"][t] = {"goodput_pre_gbps": pre, "goodput_post_gbps": post, "reroute": x["s"]["reroute"],
                     "outcome": x["s"]["outcome"], "fct_us": x["s"]["fct_us"]}
    goodput_plot(runs, ("mrc", "roce-ecmp"), out / "r4-8plane-goodput.png", 1200, "goodput (Gb/s, 5 us windows)",
                 "8 planes: h0 -> h40 and h41 -> h0, 8 QPs each way",
                 lambda ax: ax.axvline(200, color="r", ls=":", lw=1, label="h0 plane-0 port down"))
    head = ["transport", "goodput 100-200 us Gb/s", "300-500 us", "after / before", "flows done", "QPs failed",
            "max FCT us"]
    rr = [row for t, x in runs.items() for row in reroute_rows(t, x)]
    return table(head, rows) + "\n\nReroute:\n\n" + table(RR_HEAD, rr)


def exp5(out, keep, J):
    runs = {t: run_one("r5-incast-victim", t, keep=keep) for t in ALL}
    rows, J["5"] = [], {}
    for t, x in runs.items():
        ft = x["ft"]
        v = int(np.flatnonzero(ft["src"] == 120)[0])
        fct = float(ft["fct_us"][v])
        gbps = ft["size_bytes"][v] * 8 / fct / 1e3
        inc = (ft["src"] != 120)
        cct = x["s"]["cct_us"][0] if x["s"]["cct_us"] else None
        rows.append([t, f1(fct), f1(gbps), f1(float(ft["slowdown"][v]), 2), f1(cct),
                     f1(float(np.nanmax(ft["fct_us"][inc]))), *counters(x, ["pfc_pauses", "drops_queue_full", "trims"])])
        J["5"][t] = {"victim_fct_us": fct, "victim_gbps": gbps, "incast_cct_us": cct, "counters": x["s"]["counters"]}
    head = ["transport", "victim FCT us", "victim Gb/s", "victim slowdown", "incast CCT us", "incast max FCT us",
            "PFC pauses", "queue drops", "trims"]
    return table(head, rows)


def exp6(out, keep, J):
    levels = [("0", None), ("0.1 %", "r6-gray-loss-0.1pct"), ("1 %", "r6-gray-loss-1pct")]
    rows, J["6"], gp = [], {}, {}
    for lab, name in levels:
        for t in LOSS_T:
            if name is None:
                d = scen("r6-gray-loss-0.1pct")
                d.pop("failures")
                x = run_one("r6-no-loss", t, data=d, keep=keep)
            else:
                x = run_one(name, t, keep=keep)
            ft = x["ft"]
            ok = ~np.isnan(ft["fct_us"])
            per = ft["size_bytes"][ok] * 8 / ft["fct_us"][ok] / 1e3
            agg = ft["size_bytes"][ok].sum() * 8 / np.nanmax(ft["fct_us"] + ft["start_us"]) / 1e3
            gp.setdefault(t, []).append(per.mean())
            rows.append([lab, t, f"{ok.sum()}/{len(ok)}", f1(per.mean()), f1(agg, 0), f1(x["s"]["fct_us"]["p50"]),
                         f1(x["s"]["fct_us"]["p99"]), f1(x["s"]["fct_us"]["max"]),
                         *counters(x, ["drops_gray", "retransmissions", "timeouts"])])
            J["6"][f"{lab} {t}"] = {"mean_flow_gbps": float(per.mean()), "aggregate_gbps": float(agg),
                                   "fct_us": x["s"]["fct_us"], "counters": x["s"]["counters"]}
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for t, v in gp.items():
        ax.plot([0, 1, 2], v, "o-", label=t)
    ax.set_xticks([0, 1, 2], ["no loss", "0.1 % per link", "1 % per link"])
    ax.set_ylabel("mean flow goodput (Gb/s)")
    ax.set_title("k=8 fat-tree permutation 128 x 2 MB, random loss on fabric links", fontsize=10)
    ax.legend(fontsize=7)
    save(fig, out / "r6-gray-loss-goodput.png")
    head = ["loss per link", "transport", "flows done", "mean flow Gb/s", "aggregate Gb/s", "FCT p50 us", "p99", "max",
            "gray drops", "retransmissions", "timeouts"]
    return table(head, rows)


def exp7(out, keep, J, cache):
    clean = cache.get("r2") or {t: run_one("r2-k8-allreduce", t, keep=keep) for t in ALL}
    runs = {t: run_one("r7-t1-reboot", t, keep=keep) for t in ALL}
    rows, J["7"] = [], {}
    f7 = scen("r7-t1-reboot")["failures"][0]
    for t, x in runs.items():
        c0 = np.array(clean[t]["s"]["cct_us"], float)
        c = np.array([np.nan if v is None else v for v in x["s"]["cct_us"]], float)
        ft = x["ft"]
        back = f7["at_us"] + f7["duration_us"]
        end = ft["start_us"] + ft["fct_us"]
        stalled = int(np.count_nonzero((ft["start_us"] < back) & (end > back) & (ft["fct_us"] > 1000)))
        rows.append([t, f1(c0.max()), f1(np.nanmax(c)), f1(np.nanmean(c)), f"{np.count_nonzero(~np.isnan(c))}/8",
                     f1(x["s"]["fct_us"]["max"]), stalled, *counters(x, ["drops_link_down", "drops_no_route", "timeouts"])])
        J["7"][t] = {"cct_us": x["s"]["cct_us"], "clean_cct_us": clean[t]["s"]["cct_us"], "reroute": x["s"]["reroute"]}
    goodput_plot(runs, ("roce-ecmp", "mrc", "spray", "ar"), out / "r7-t1-reboot-goodput.png", 4000, "goodput (Gb/s)",
                 "k=8 ring all-reduce, a T1 switch down for 2 ms",
                 lambda ax: ax.axvspan(f7["at_us"], f7["at_us"] + f7["duration_us"], color="r", alpha=0.08,
                                       label="p0.t1.0 rebooting"))
    rr = [row for t, x in runs.items() for row in reroute_rows(t, x)]
    head = ["transport", "CCT max, no failure us", "CCT max, reboot us", "CCT mean, reboot", "rings done",
            "max step FCT us", "steps > 1 ms ending after the reboot", "link-down drops", "no-route drops", "timeouts"]
    return table(head, rows) + "\n\nReroute:\n\n" + table(RR_HEAD, rr)


def exp8(out, keep, J):
    runs = {t: run_one("r8-link-flap", t, keep=keep) for t in ALL}
    rows, J["8"] = [], {}
    for t, x in runs.items():
        f = x["s"]["failures"][0]
        rows.append(fct_row(t, x)[:-1] + [f"{f['packets_directed']:,}",
                                          *counters(x, ["drops_link_down", "timeouts"])])
        J["8"][t] = {"fct_us": x["s"]["fct_us"], "outcome": x["s"]["outcome"], "failures": x["s"]["failures"],
                     "reroute": x["s"]["reroute"]}
    cdf_plot(runs, out / "r8-link-flap-fct-cdf.png", "k=8 permutation 128 x 32 MB, one T1-T2 link flapping")
    rr = [row for t, x in runs.items() for row in reroute_rows(t, x)]
    head = FCT_HEAD[:-1] + ["packets to the link after the first fault", "link-down drops", "timeouts"]
    return table(head, rows) + "\n\nReroute:\n\n" + table(RR_HEAD, rr)


def fill_doc(page: pathlib.Path, tables: dict) -> None:
    """Replace each ``<!-- table N -->`` ... ``<!-- /table N -->`` block of `page` by experiment N's tables."""
    text = page.read_text()
    for n, body in tables.items():
        pat = re.compile(rf"<!-- table {n} -->.*?<!-- /table {n} -->", re.S)
        if not pat.search(text):
            raise SystemExit(f"--doc {page}: no '<!-- table {n} -->' ... '<!-- /table {n} -->' block")
        text = pat.sub(lambda _m: f"<!-- table {n} -->\n{body}\n<!-- /table {n} -->", text)
    page.write_text(text)


EXPERIMENTS = {1: exp1, 2: exp2, 3: exp3, 4: exp4, 5: exp5, 6: exp6, 7: exp7, 8: exp8}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated experiment numbers (1-8)")
    ap.add_argument("--out", default="docs/results", help="directory for tables.md, results.json and the PNGs")
    ap.add_argument("--runs", default=None, help="also write each run's results directory under this directory")
    ap.add_argument("--doc", default=None, help="page whose <!-- table N --> ... <!-- /table N --> blocks get the tables")
    a = ap.parse_args(argv)
    only = sorted({int(v) for v in a.only.split(",") if v.strip()}) or sorted(EXPERIMENTS)
    bad = [n for n in only if n not in EXPERIMENTS]
    if bad:
        ap.error(f"--only {a.only}: no experiment {bad[0]} (1-8)")
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    keep = pathlib.Path(a.runs) if a.runs else None
    J, cache, md, tables = {}, {}, [], {}
    t0 = time.perf_counter()
    for n in only:
        print(f"experiment {n}", file=sys.stderr, flush=True)
        fn = EXPERIMENTS[n]
        text = fn(out, keep, J, cache) if n in (2, 7) else fn(out, keep, J)
        tables[n] = text
        md.append(f"## Experiment {n}\n\n{text}\n")
        print(md[-1], flush=True)
    J["wall_s"] = time.perf_counter() - t0
    name = "tables.md" if len(only) == len(EXPERIMENTS) else f"tables-{'-'.join(map(str, only))}.md"
    (out / name).write_text("\n".join(md))
    (out / name.replace("tables", "results").replace(".md", ".json")).write_text(
        json.dumps(J, indent=1, default=results._clean) + "\n")
    if a.doc:
        fill_doc(pathlib.Path(a.doc), tables)
    print(f"wall {J['wall_s']:.0f} s; written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
