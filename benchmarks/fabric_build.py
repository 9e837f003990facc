"""Build time and peak memory of a preset fabric (default: the 131,072-host 8-plane design).

    python benchmarks/fabric_build.py [PRESET] [--check]

Prints the wall time of building the `Topology` (arrays, static tables, EV
format; imports excluded and reported apart) and the process's peak resident
set size. Run it in a fresh process: peak RSS is a per-process high-water
mark. With --check, exits 1 if the build takes more than 30 s or the peak RSS
exceeds 2 GB (the issue's limits).
"""
from __future__ import annotations

import argparse
import resource
import sys
import time

LIMIT_S = 30.0
LIMIT_BYTES = 2 * 1024**3


def peak_rss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # Linux reports KiB


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("preset", nargs="?", default="mrc-8plane-131k")
    ap.add_argument("--check", action="store_true", help="fail above 30 s or 2 GB")
    args = ap.parse_args()
    t0 = time.perf_counter()
    from mrc.fabric import from_preset

    t1 = time.perf_counter()
    topo = from_preset(args.preset)
    t2 = time.perf_counter()
    rss = peak_rss_bytes()
    arrays = sum(a.nbytes for a in topo.arrays if hasattr(a, "nbytes"))
    print(f"preset            {args.preset}: {topo.n_hosts} hosts, {topo.n_planes} planes, "
          f"{topo.n_nodes - topo.n_hosts} switches, {topo.n_ports} ports, {len(topo.tbl)} table entries")
    print(f"import            {t1 - t0:.2f} s")
    print(f"build time        {t2 - t1:.2f} s (limit {LIMIT_S:.0f} s)")
    print(f"peak RSS          {rss / 1e6:.0f} MB (limit {LIMIT_BYTES / 1e6:.0f} MB)")
    print(f"fabric arrays     {arrays / 1e6:.0f} MB")
    if args.check and (t2 - t1 > LIMIT_S or rss > LIMIT_BYTES):
        print("over the limit", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
