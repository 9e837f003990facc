"""The headline training experiment of docs/results.md: a data-parallel job on mrc-8plane-131k, healthy and
under four failures, per transport; GPU-seconds wasted, iteration slowdown, reroute times, and the cost of each
run (wall and CPU time, set-up, peak RSS).

    flock heavy.lock python benchmarks/training_131k.py --out runs/training-131k \\
        [--transports mrc,roce-ecmp] [--failures none,t1-reboot,flap,nic-port,gray-1pct] [--seeds 1-5]
        [--set key=value ...]

Each cell (transport x failure) runs in its own process (so its peak RSS is its own) and writes its results
directory under ``--out``; a failure cell takes the same transport's healthy run as its baseline
(``metrics.baseline``), so the healthy run must come first (the default order). The failed link is chosen per
transport from that transport's own healthy run: the most used plane-0 uplink of host 0's T0 (by bytes sent), so
that the failure touches the transport's traffic (RoCE's hashed flows cross other links than MRC's sprayed
ones); the rebooting T1 is that link's T1, the lost NIC port host 0's busiest one (the plane RoCE hashed its QP
onto). ``cells.json`` under
``--out`` collects every cell's figures (a cell already there is not run again); the script prints the table of
docs/results.md. With ``--seeds`` the matrix runs once per seed under ``OUT/seed<N>`` (each seed's own healthy
runs, failed links and baselines) and the script prints the median over the seeds with its bootstrap 95 %
interval per cell (`mrc.emulator.sweeps.stats.median_ci`, as the rest of docs/results.md).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import resource
import subprocess
import sys
import time

import numpy as np

SCENARIO = "training-131k-dp"
FAILURES = ("none", "t1-reboot", "flap", "nic-port", "gray-1pct")


def failure_tables(kind: str, link: list, at_us: float, nic=(0, 0)) -> list:
    """The [[failures]] of one failure kind (link: the chosen [T0, T1] pair; nic: the chosen (host, plane))."""
    if kind == "none":
        return []
    if kind == "t1-reboot":
        return [{"kind": "switch-reboot", "at_us": at_us, "switch": link[1], "duration_us": 100_000}]
    if kind == "flap":
        return [{"kind": "flap", "at_us": at_us, "link": link, "period_us": 20, "down_us": 8}]
    if kind == "nic-port":
        return [{"kind": "nic-port-down", "at_us": at_us, "host": int(nic[0]), "plane": int(nic[1])}]
    if kind == "gray-1pct":
        return [{"kind": "gray-loss", "at_us": at_us, "link": link, "probability": 0.01}]
    raise SystemExit(f"unknown failure {kind!r}: one of {', '.join(FAILURES)}")


def raw_data(scenario, sets: list) -> dict:
    """The scenario's table with the --set changes, not yet parsed (`scenario.parse` builds the 131k fabric:
    parse once, after the cell's changes)."""
    data, _, _ = scenario.read(SCENARIO)
    scenario.apply_sets(data, sets)
    return data


def cell(args) -> None:
    """One run in this process; prints one JSON line."""
    from mrc.emulator import results, scenario, scenarios, sim
    from mrc.emulator.transports import spec as tspec

    c0 = time.process_time()
    t0 = time.perf_counter()
    data = tspec.apply(raw_data(scenario, args.sets), args.transport)
    info = json.loads(args.cell_info)
    data["failures"] = failure_tables(args.cell, info.get("link"), info["at_us"], info.get("nic") or (0, 0))
    data.setdefault("metrics", {})["plots"] = False
    # the controller's live fault localisation (`emulator.localize`) only observes the run, and its Python
    # analysis between chunks grows with the paths in use: 31 of 34 s of a 512-host T1-reboot cell, far beyond
    # the 10 minutes at 131k. Off here (no localization.json); the run's figures are unchanged.
    data["localize"] = {**data.get("localize", {}), "enabled": False}
    if args.cell != "none":
        data["metrics"]["baseline"] = info["baseline"]
    sc = scenario.parse(data, SCENARIO, scenarios.DIR)
    s = sim.Simulation(sc)
    setup_s = time.perf_counter() - t0
    setup_cpu = time.process_time() - c0
    run = s.run()
    wall = time.perf_counter() - t0
    summ = results.write(run, args.out_dir, plots_too=False)
    topo = sc.topo
    out = {"transport": args.transport, "failure": args.cell, "setup_s": setup_s, "setup_cpu_s": setup_cpu,
           "run_wall_s": run.sim["wall_s"], "total_wall_s": wall, "cpu_s": time.process_time() - c0,
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "packet_hops": run.sim["packet_hops"], "flows": len(run.flows),
           "training": summ["training"], "reroute": summ["reroute"], "outcome": summ["outcome"],
           "failed_link": info.get("link") if args.cell != "none" else None}
    if args.cell == "none":
        # the most used plane-0 uplink of T0 0 (host 0's T0)
        ps = run.port_stats["tx_bytes"]
        t0node = topo.peer_node(topo.nic_port(0, 0))
        ups = [q for q in range(len(topo.port)) if topo.port[q]["node"] == t0node
               and topo.node["tier"][topo.peer_node(q)] == 1]
        q = max(ups, key=lambda x: int(ps[x]))
        out["link"] = [topo.node_name(t0node), topo.node_name(topo.peer_node(q))]
        # host 0's busiest NIC port: the plane its traffic uses (RoCE hashes a QP onto one plane)
        out["nic"] = [0, max(range(topo.n_planes), key=lambda pl: int(ps[topo.nic_port(0, pl)]))]
    print("CELL " + json.dumps(out, default=float), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="runs/training-131k")
    ap.add_argument("--transports", default="mrc,roce-ecmp")
    ap.add_argument("--failures", default=",".join(FAILURES))
    ap.add_argument("--at-us", type=float, default=None, help="failure time (default: 2 us into the first "
                    "iteration's communication)")
    ap.add_argument("--seeds", default=None, help="seeds (1-5, 1,3): one matrix per seed under OUT/seed<N>, then "
                    "the median and bootstrap 95 %% interval over the seeds per cell (default: the scenario's seed)")
    ap.add_argument("--set", dest="sets", action="append", default=[])
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    ap.add_argument("--transport", help=argparse.SUPPRESS)
    ap.add_argument("--cell-info", help=argparse.SUPPRESS)
    ap.add_argument("--out-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cell:
        cell(args)
        return 0
    from mrc.emulator import scenario

    at = args.at_us
    if at is None:
        at = float(raw_data(scenario, args.sets)["workload"]["compute_us"]) + 2.0
    out = pathlib.Path(args.out)
    if args.seeds is None:
        print(table(matrix(args, out, args.sets, at)))
        return 0
    from mrc.emulator.sweeps.spec import parse_seeds

    per_seed = {}
    for seed in parse_seeds(args.seeds):
        print(f"=== seed {seed}", flush=True)
        per_seed[seed] = matrix(args, out / f"seed{seed}", args.sets + [f"seed={seed}"], at)
    print(stats_table(per_seed))
    return 0


def matrix(args, out: pathlib.Path, sets: list, at: float) -> list:
    """Run the cells of one seed not yet in ``out/cells.json``; returns every cell of it."""
    out.mkdir(parents=True, exist_ok=True)
    cells_path = out / "cells.json"
    cells = json.loads(cells_path.read_text()) if cells_path.is_file() else []
    for tp in args.transports.split(","):
        # this transport's own busiest plane-0 uplink of host 0's T0 (its healthy cell's)
        link = next((c["link"] for c in cells if c["transport"] == tp and c.get("link")), None)
        nic = next((c["nic"] for c in cells if c["transport"] == tp and c.get("nic")), None)
        for fk in args.failures.split(","):
            if any(c["transport"] == tp and c["failure"] == fk for c in cells):
                continue
            if fk != "none" and link is None:
                print(f"== {tp} / {fk}: skipped, no healthy {tp} cell under {out} yet (it names the failed link "
                      "and is the baseline): run --failures none first", flush=True)
                continue
            d = out / tp / fk
            info = {"link": link, "nic": nic, "at_us": at, "baseline": str(out / tp / "none")}
            cmd = [sys.executable, __file__, "--cell", fk, "--transport", tp, "--cell-info", json.dumps(info),
                   "--out-dir", str(d)] + sum((["--set", x] for x in sets), [])
            print(f"== {tp} / {fk}", flush=True)
            p = subprocess.run(cmd, capture_output=True, text=True)
            line = next((x for x in p.stdout.splitlines() if x.startswith("CELL ")), None)
            if p.returncode != 0 or line is None:
                print(p.stdout[-2000:], p.stderr[-4000:], flush=True)
                continue
            c = json.loads(line[5:])
            if c.get("link"):
                link = c["link"]
                nic = c.get("nic")
            cells.append(c)
            cells_path.write_text(json.dumps(cells, indent=1) + "\n")
            tr = c["training"][0]
            w = tr.get("waste") or {}
            print(f"   iterations {[x['time_us'] for x in tr['iterations']]} us, wasted "
                  f"{w.get('gpu_seconds_wasted')} GPU-s, wall {c['total_wall_s']:.0f} s, cpu {c['cpu_s']:.0f} s, "
                  f"rss {c['peak_rss_mb']:.0f} MB", flush=True)
    return cells


def stats_table(per_seed: dict) -> str:
    """Markdown: per transport and failure, the median over the seeds and its bootstrap 95 % interval
    (`mrc.emulator.sweeps.stats.median_ci`, as every table of docs/results.md) of the job's first iteration,
    its slowdown, GPU-seconds wasted and the reroute times (a reroute that never happened counts as never)."""
    from mrc.emulator.sweeps.stats import median_ci

    def fmt(v, d):
        m, lo, hi = median_ci(v)
        if np.isnan(m):
            return "-"
        def f(x):
            return "never" if np.isinf(x) else f"{x:,.{d}f}"
        return f(m) if np.isnan(lo) else f"{f(m)} [{f(lo)}, {f(hi)}]"

    keys = list(dict.fromkeys((c["transport"], c["failure"]) for cells in per_seed.values() for c in cells))
    rows = ["| transport | failure | seeds | iteration 0 (us) | job slowdown | GPU-s wasted | hosts delayed | "
            "steered away (us) | 99 % off (us) | job finished |", "|---|---|---|---|---|---|---|---|---|---|"]
    for tp, fk in keys:
        cs = [c for cells in per_seed.values() for c in cells if c["transport"] == tp and c["failure"] == fk]
        trs = [c["training"][0] for c in cs]
        ws = [t.get("waste") or {} for t in trs]
        it0 = [np.inf if t["iterations"][0]["time_us"] is None else t["iterations"][0]["time_us"] for t in trs]

        def rr(key):
            out = []
            for c in cs:
                r = (c.get("reroute") or [{}])[0]
                if r.get("affected_flows"):
                    out.append(np.inf if r.get(key) is None else r[key])
            return out
        nan = float("nan")
        rows.append(f"| {tp} | {fk} | {len(cs)} | {fmt(it0, 1)} | "
                    f"{fmt([nan if w.get('job_slowdown') is None else w['job_slowdown'] for w in ws], 3)} | "
                    f"{fmt([nan if w.get('gpu_seconds_wasted') is None else w['gpu_seconds_wasted'] for w in ws], 4)}"
                    f" | {fmt([w.get('hosts_delayed', nan) for w in ws], 0)} | {fmt(rr('first_steered_away_us'), 2)} | "
                    f"{fmt(rr('off_99_us'), 2)} | {sum(t['finished'] for t in trs)}/{len(trs)} |")
    return "\n".join(rows)


def table(cells: list) -> str:
    """The Markdown table of docs/results.md."""
    rows = ["| transport | failure | iteration times (us) | job slowdown | GPU-s wasted | of which comm | hosts "
            "delayed | steered away (us) | 99 % off (us) | set-up s | run wall s | CPU s | M hops/s | peak RSS GiB |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        tr = c["training"][0]
        w = tr.get("waste") or {}
        rr = (c.get("reroute") or [{}])[0] if c.get("reroute") else {}
        its = ", ".join("-" if x["time_us"] is None else f"{x['time_us']:.1f}" for x in tr["iterations"])

        def f(v, d=2):
            return "-" if v is None else f"{v:,.{d}f}"
        rows.append(f"| {c['transport']} | {c['failure']} | {its} | {f(w.get('job_slowdown'), 3)} | "
                    f"{f(w.get('gpu_seconds_wasted'), 4)} | {f(w.get('gpu_seconds_wasted_comm'), 4)} | "
                    f"{w.get('hosts_delayed', '-')} | {f(rr.get('first_steered_away_us'))} | {f(rr.get('off_99_us'))} | "
                    f"{c['setup_s']:.1f} | {c['run_wall_s']:.0f} | {c['cpu_s']:.0f} | "
                    f"{c['packet_hops'] / max(c['run_wall_s'], 1e-9) / 1e6:.2f} | {c['peak_rss_mb'] / 1024:.2f} |")
    links = {c["transport"]: c["failed_link"] for c in cells if c.get("failed_link")}
    rows += [""] + [f"{tp}: failed link {a}-{b}" for tp, (a, b) in links.items()]
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
