"""Warm start-up of `mrc emu run` from a fresh process: the process's time minus its simulation loop.

    python benchmarks/startup.py                    # 7 fresh processes, the k=8 permutation (numba cache warm)
    python benchmarks/startup.py --repeat 15 --scenario incast
    python benchmarks/startup.py --preload "import pandas, scipy.linalg, trio, mrc.io, mrc.conformance"

Each process runs ``mrc emu run SCENARIO --no-plots`` (in-process ``mrc.cli.main``); the loop's
wall time is the one the command prints. Printed: start-up = process wall time minus loop, and
start-up CPU = the process's user + system time minus the loop's CPU time (what the start-up
costs whatever else runs on the machine; the wall figure grows with the machine's load), minimum and median over the processes. ``--preload`` imports modules first:
the imports the command used to pay for (every command's module, pandas through pyarrow, scipy
through numba's BLAS probe) put back, to measure what removing them saved. Run it with the numba
cache warm (one ``mrc emu run`` first).
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="fattree-k8-permutation")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--preload", default="", help="Python statements run before the command (see above)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        code = (f"{a.preload}\nimport sys, time\nfrom mrc.cli import main\nfrom mrc.emulator import sim\n"
                "_run = sim.Simulation.run\n"
                "def run(self, *a, **k):\n"
                "    c = time.process_time()\n"
                "    r = _run(self, *a, **k)\n"
                "    print('LOOP_CPU', time.process_time() - c)\n"
                "    return r\n"
                "sim.Simulation.run = run\n"
                f"sys.exit(main(['emu', 'run', {a.scenario!r}, '--no-plots', '--no-progress', '--out', {tmp!r}]))")
        wall, cpu = [], []
        for _ in range(a.repeat):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            w = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            loop = float(re.search(r"in ([0-9.]+) s:", out).group(1))
            loop_cpu = float(re.search(r"LOOP_CPU ([0-9.e-]+)", out).group(1))
            wall.append(w - loop)
            cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime - loop_cpu)
    wall.sort()
    cpu.sort()
    print(f"{a.scenario}{' with ' + a.preload if a.preload else ''}: {a.repeat} processes, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"start-up (wall - loop): min {wall[0]:.2f} s, median {wall[len(wall) // 2]:.2f} s")
    print(f"start-up CPU (user + sys - loop): min {cpu[0]:.2f} s, median {cpu[len(cpu) // 2]:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
