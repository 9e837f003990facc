"""How fast `mrc conformance check` reads a large capture: packets per second of CPU, peak memory.

    python benchmarks/passive_check.py [--duration-us 250] [--keep DIR]

Writes a capture with the emulator (the `mrc-2plane-64` preset, a permutation of long `mrc` flows, a gray link
losing 1 % from 50 us, every port captured: about 1.5 M packets and 1.5 GB for the default 250 us), then runs
`mrc conformance check --json` on it in a child process and prints the packets read, the CPU seconds of the
check (user + system of the child), packets per CPU second, the wall time, the child's peak RSS, and the
violations found (0 expected: the emulator's traffic is clean). Target (issue 33): a 1 M-packet capture in
under a minute. The capture goes to a temporary directory, removed at the end unless `--keep`.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SCENARIO = """name = "passive-check-speed"
seed = 7
duration_us = {duration}
[topology]
preset = "mrc-2plane-64"
[transport]
name = "mrc"
mtu = 1024
[workload]
kind = "permutation"
size_bytes = 200000000
[[failures]]
kind = "gray-loss"
at_us = 50
link = ["p0.t0.2", "p0.t1.3"]
probability = 0.01
[capture]
ports = ["*"]
max_packets = 4000000
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration-us", type=float, default=250.0, help="simulated time (default 250 us: ~1.5 M packets)")
    ap.add_argument("--keep", metavar="DIR", help="write the capture here and keep it")
    a = ap.parse_args(argv)
    if not a.duration_us > 0:
        ap.error(f"--duration-us must be > 0, got {a.duration_us}")
    work = a.keep or tempfile.mkdtemp(prefix="mrc-passive-")
    os.makedirs(work, exist_ok=True)
    try:
        scen = os.path.join(work, "scenario.toml")
        with open(scen, "w") as f:
            f.write(SCENARIO.format(duration=a.duration_us))
        out = os.path.join(work, "run")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mrc.cli", "emu", "run", scen, "--out", out, "--no-plots", "--no-progress"], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"capture written in {time.perf_counter() - t0:.1f} s: "
              f"{os.path.getsize(os.path.join(out, 'capture.pcapng')) / 1e9:.2f} GB")
        t0 = time.perf_counter()
        with tempfile.TemporaryFile("w+") as err:
            child = subprocess.Popen([sys.executable, "-m", "mrc.cli", "conformance", "check", "--json",
                                      os.path.join(out, "capture.pcapng")], stdout=subprocess.PIPE, stderr=err,
                                     text=True)
            stdout = child.stdout.read()
            _, status, use = os.wait4(child.pid, 0)  # this child's own CPU time and peak RSS
            child.returncode = os.waitstatus_to_exitcode(status)
            err.seek(0)
            stderr = err.read()
        wall = time.perf_counter() - t0
        if child.returncode not in (0, 1):
            print(stderr.strip(), file=sys.stderr)
            return 2
        doc = json.loads(stdout)
        cpu = use.ru_utime + use.ru_stime
        n = int(doc["packets"]["records"])  # records read (a packet seen at several ports is several records)
        print(f"mrc conformance check: {n:,} packets, {cpu:.1f} s of CPU ({n / cpu:,.0f} packets per CPU second), "
              f"{wall:.1f} s wall, peak RSS {use.ru_maxrss / 1024:.0f} MB, "
              f"{len(doc['violations'])} violations, exit {child.returncode}; load average {os.getloadavg()[0]:.1f}")
        print(f"  records: {doc['packets']}; check's own timer {doc['seconds']} s; QP conversations {len(doc['qps'])}")
        return 0
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
