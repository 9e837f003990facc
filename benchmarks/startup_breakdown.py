"""Where a warm `mrc emu run`'s start-up CPU goes, part by part (docs/emulator.md, "Start-up").

    python benchmarks/startup_breakdown.py                       # 5 fresh processes, the k=8 permutation
    python benchmarks/startup_breakdown.py --scenario incast --repeat 7

Each fresh process times, in CPU seconds (`time.process_time`, its own threads): the interpreter's start
(the process's CPU before the script's first line), importing numpy, importing numba (with `mrc._jit`,
which sets the cache directory), importing the command's modules (`mrc.emulator.cli`, `sim`,
`results`), and within that the numba dispatchers they create (one per compiled function, counted
apart), then the run: each cached function loaded (numba's ``Cache.load_overload``, by name), the loop
(`Simulation.run` less the loads inside it) and the rest of the command (scenario, fabric, set-up,
results). `benchmarks/startup.py` reports the total less the loop; here the engine's own load, inside
`Simulation.run`, is shown on its own line. Medians over the processes, with the load average. Run it
with the numba cache warm (one ``mrc emu run`` of the scenario first).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, resource, sys, tempfile, time
ru = resource.getrusage(resource.RUSAGE_SELF)
out = {"interpreter": ru.ru_utime + ru.ru_stime}
clock = time.process_time
t = clock(); import numpy; out["numpy"] = clock() - t
t = clock(); import numba, mrc._jit; out["numba"] = clock() - t
from numba.core import caching, dispatcher
made = [0, 0.0]
_init = dispatcher.Dispatcher.__init__
def init(self, *a, **k):
    c = clock(); _init(self, *a, **k); made[0] += 1; made[1] += clock() - c
dispatcher.Dispatcher.__init__ = init
loads = {}
_load = caching.Cache.load_overload
def load(self, sig, ctx):
    c = clock(); r = _load(self, sig, ctx)
    name = f"{self._py_func.__module__.rpartition('.')[2]}.{self._py_func.__qualname__}"
    loads[name] = loads.get(name, 0.0) + clock() - c
    return r
caching.Cache.load_overload = load
t = clock()
from mrc.cli import main
from mrc.emulator import cli, results, sim
out["imports"] = clock() - t - made[1]
out["dispatchers"] = made[1]
out["n_dispatchers"] = made[0]
loop = [0.0]
_run = sim.Simulation.run
def run(self, *a, **k):
    c = clock(); before = sum(loads.values()); r = _run(self, *a, **k)
    loop[0] += clock() - c - (sum(loads.values()) - before)
    return r
sim.Simulation.run = run
t = clock()
with tempfile.TemporaryDirectory() as d:
    main(["emu", "run", SCENARIO, "--no-plots", "--no-progress", "--out", d])
total = clock() - t
out["loop"] = loop[0]
out["cache loads"] = sum(loads.values())
out["loads"] = loads
out["rest of the command"] = total - loop[0] - sum(loads.values())
print("BREAKDOWN " + json.dumps(out))
"""

PARTS = ("interpreter", "numpy", "numba", "imports", "dispatchers", "cache loads", "rest of the command", "loop")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="fattree-k8-permutation")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    runs = []
    for _ in range(a.repeat):
        r = subprocess.run([sys.executable, "-c", CHILD.replace("SCENARIO", repr(a.scenario))],
                           capture_output=True, text=True, check=True)
        line = next(x for x in r.stdout.splitlines() if x.startswith("BREAKDOWN "))
        runs.append(json.loads(line.split(" ", 1)[1]))
    print(f"{a.scenario}: {a.repeat} processes, load average {os.getloadavg()[0]:.1f}; CPU seconds, median (min-max)")
    for part in PARTS:
        v = [r[part] for r in runs]
        extra = f"  ({runs[0]['n_dispatchers']} dispatchers)" if part == "dispatchers" else ""
        print(f"  {part:<22} {statistics.median(v):6.3f}  ({min(v):.3f}-{max(v):.3f}){extra}")
    startup = [sum(r[p] for p in PARTS if p != "loop") for r in runs]
    print(f"  {'start-up (all but loop)':<22} {statistics.median(startup):6.3f}  ({min(startup):.3f}-{max(startup):.3f})")
    names = sorted({n for r in runs for n in r["loads"]}, key=lambda n: -statistics.median(r["loads"].get(n, 0.0)
                                                                                           for r in runs))
    print("  cached functions loaded (median s): " + ", ".join(
        f"{n} {statistics.median(r['loads'].get(n, 0.0) for r in runs):.3f}" for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
