"""The memory estimate of a run (`mrc.emulator.memory`) against the peak RSS the run really reaches.

    python benchmarks/memory_estimate.py                       # the default setups below
    python benchmarks/memory_estimate.py incast fattree-k8-permutation:mrc fattree-k16-permutation+topology.k=48

Each setup (``SCENARIO[:TRANSPORT][+KEY=VALUE...]``) is estimated here, without allocating its tables, then run by
``mrc emu run SCENARIO --no-plots`` in a child process whose peak RSS (``ru_maxrss`` from ``wait4``)
is the measurement. Printed: hosts, flows, the estimate, the measured peak and their ratio. The
compiled code must already be in the cache (a first run compiles it, and compiling takes more memory
than running: run the script twice, or once after any ``mrc emu run``).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

DEFAULT = ["incast", "fattree-k8-permutation", "fattree-k8-permutation:mrc", "fattree-k16-permutation",
           "fattree-k16-permutation:mrc", "fattree-k16-permutation+topology.k=48"]


def estimate(name: str, transport: str | None, sets=()) -> dict:
    import numpy as np

    from mrc.emulator import memory, scenario, workloads
    from mrc.emulator.transports import spec as tspec

    data, stem, base = scenario.read(name)
    scenario.apply_sets(data, sets)
    if transport:
        data = tspec.apply(data, transport)
    sc = scenario.parse(data, stem, base)
    wl, _, _ = np.random.SeedSequence(sc.seed).spawn(3)
    flows = workloads.build(sc.jobs, sc.topo, np.random.default_rng(wl)).flows
    est = memory.run_parts(sc, flows)
    return {"hosts": sc.topo.n_hosts, "flows": len(flows), "estimate": est.total, "transport": sc.transport_name}


def measure(name: str, transport: str | None, sets=()) -> int:
    """Peak RSS (bytes) of ``mrc emu run`` of the setup, in a child process."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "mrc", "emu", "run", name, "--no-plots", "--no-progress", "--out", out]
        if transport:
            cmd += ["--transport", transport]
        for s in sets:
            cmd += ["--set", s]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(p.pid, 0)
        err = p.stderr.read().decode()
        p.stderr.close()
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {err[-2000:]}")
    return usage.ru_maxrss * 1024


def one(setup: str) -> dict:
    head, *sets = setup.split("+")
    name, _, transport = head.partition(":")
    row = estimate(name, transport or None, sets)
    row["setup"] = setup
    row["measured"] = measure(name, transport or None, sets)
    row["ratio"] = row["measured"] / row["estimate"]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("setups", nargs="*", default=DEFAULT, help="SCENARIO[:TRANSPORT][+KEY=VALUE...] "
                    "(default: %(default)s)")
    args = ap.parse_args()
    print(f"{'setup':40s} {'hosts':>7s} {'flows':>7s} {'estimate':>10s} {'peak RSS':>10s} {'RSS/est':>8s}")
    for s in args.setups:
        r = one(s)
        print(f"{s:40s} {r['hosts']:7,d} {r['flows']:7,d} {r['estimate'] / 2**20:8,.0f} MB {r['measured'] / 2**20:8,.0f} MB "
              f"{r['ratio']:8.2f}", flush=True)


if __name__ == "__main__":
    main()
