"""How well a sweep uses its workers, and what a cell costs beyond its simulation.

    python benchmarks/sweep_speed.py                       # 40 cells: k=8 permutation, 4 transports x 10 seeds
    python benchmarks/sweep_speed.py --seeds 1-4 --transports roce-ecmp,mrc

Runs the same cells on a local Dask cluster of one worker process, then of two
(each cluster warmed up first: its workers have the compiled code loaded), and
prints:

- time(1), time(2) and the efficiency time(1) / (2 x time(2)) (target >= 0.8);
- per-cell overhead in a warm worker: the cell's time on the worker minus its
  simulation loop (scenario parse, fabric build, set-up, results directory),
  median over the cells; and the end-to-end overhead per cell with one worker,
  (time(1) - sum of the simulation loops) / cells, which adds scheduling and
  writing each cell's files on the driver (target <= 50 ms);
- the load average before and after: the machine is shared, and a busy core
  lowers the two-worker efficiency.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def timed_sweep(client, scenario, transports, seeds, out):
    from mrc.emulator import sweep

    t0 = time.perf_counter()
    df = sweep(scenario, transports=transports, seeds=seeds, out=out, client=client, plots=False,
               echo=lambda *_: None)
    return time.perf_counter() - t0, df


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="fattree-k8-permutation")
    ap.add_argument("--transports", default="roce-ecmp,mrc,spray,ar")
    ap.add_argument("--seeds", default="1-10")
    a = ap.parse_args(argv)
    from distributed import Client, LocalCluster

    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 2):
            with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                              silence_logs=40) as lc, Client(lc) as c:
                timed_sweep(c, a.scenario, a.transports, "1", f"{tmp}/warm{n}")  # every worker loads the code
                t, df = timed_sweep(c, a.scenario, a.transports, a.seeds, f"{tmp}/sweep{n}")
            bad = df[df["status"] != "ok"]
            if len(bad):
                print(bad[["cell", "status", "error"]].to_string(), file=sys.stderr)
                return 1
            res[n] = (t, df)
            over = (df["cell_s"] - df["sim_wall_s"]) * 1e3
            print(f"{n} worker(s): {len(df)} cells in {t:.2f} s; simulation loops {df['sim_wall_s'].sum():.2f} s; "
                  f"per cell in the worker beyond its loop: median {over.median():.1f} ms "
                  f"(p90 {over.quantile(0.9):.1f} ms)", flush=True)
    t1, df1 = res[1]
    t2, _ = res[2]
    n = len(df1)
    print(f"efficiency time(1) / (2 x time(2)) = {t1:.2f} / (2 x {t2:.2f}) = {t1 / (2 * t2):.2f}  (target >= 0.8)")
    print(f"end-to-end overhead per cell, one worker: ({t1:.2f} - {df1['sim_wall_s'].sum():.2f}) / {n} = "
          f"{(t1 - df1['sim_wall_s'].sum()) / n * 1e3:.1f} ms  (target <= 50 ms)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
