"""How well a sweep uses its workers, and what a cell costs beyond its simulation.

    python benchmarks/sweep_speed.py                       # 40 cells: k=8 permutation, 4 transports x 10 seeds
    python benchmarks/sweep_speed.py --seeds 1-4 --transports roce-ecmp,mrc

Runs the same cells on a local Dask cluster of one worker process, then of two
(each cluster warmed up first: its workers have the compiled code loaded), and
prints:

- time(1), time(2) and the efficiency time(1) / (2 x time(2)) (target >= 0.8), and the workers'
  utilisation with two workers (the simulation loops' time over 2 x time(2)): on a shared machine
  a core taken by another job slows the loops themselves, which the efficiency counts against the
  sweep and the utilisation does not;
- per-cell overhead in a warm worker (target <= 50 ms): what a cell costs through the sweep beyond
  the same work in-process, time(1) / cells minus the cells' mean time on the worker (scheduling,
  moving the cell and its results directory, the driver writing them and the table); and, for
  reference, the cell on the worker beyond its simulation loop (scenario parse, fabric and
  transport set-up, results directory: what `mrc emu run` pays too);
- the load average before and after.
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
    t2, df2 = res[2]
    n = len(df1)
    print(f"efficiency time(1) / (2 x time(2)) = {t1:.2f} / (2 x {t2:.2f}) = {t1 / (2 * t2):.2f}  (target >= 0.8); "
          f"workers busy with loops {df2['sim_wall_s'].sum() / (2 * t2):.0%} of 2 x time(2)")
    print(f"sweep overhead per cell, one warm worker: {t1:.2f} s / {n} - mean cell time on the worker "
          f"{df1['cell_s'].mean() * 1e3:.1f} ms = {(t1 / n - df1['cell_s'].mean()) * 1e3:.1f} ms  (target <= 50 ms)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
