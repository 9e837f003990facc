"""Speed of the compiled path functions on a preset fabric (default: the 131,072-host design).

    python benchmarks/fabric_routes.py [PRESET] [-n N]

Times, over N random (src, dst, EV) / 5-tuples after a warm-up call:
`paths.ev_route` (structural EV -> ports), `paths.ev_carrier` + `paths.srv6_route`
(carrier built, then every node's static table searched, as switches do),
and `ecmp.ecmp_route` (per-switch hashing). Prints routes per second.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mrc._jit import njit
from mrc.fabric import ecmp as E
from mrc.fabric import from_preset
from mrc.fabric import paths as P


@njit
def _ev_routes(F, src, dst, ev):
    out = np.empty(6, np.int64)
    total = 0
    for i in range(src.shape[0]):
        total += P.ev_route(F, src[i], dst[i], ev[i], out)
    return total


@njit
def _srv6_routes(F, src, dst, ev):
    out = np.empty(6, np.int64)
    total = 0
    for i in range(src.shape[0]):
        hi, lo = P.ev_carrier(F, src[i], dst[i], ev[i])
        total += P.srv6_route(F, src[i], P.ev_field(F, ev[i], 0), hi, lo, out)
    return total


@njit
def _ecmp_routes(F, src, dst, ev):
    out = np.empty(6, np.int64)
    total = 0
    for i in range(src.shape[0]):
        total += E.ecmp_route(F, src[i], dst[i], 0, ev[i] >> 16, ev[i] & 0xFFFF, 17, out)
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("preset", nargs="?", default="mrc-8plane-131k")
    ap.add_argument("-n", type=int, default=1_000_000)
    args = ap.parse_args()
    topo = from_preset(args.preset)
    rng = np.random.default_rng(1)
    src = rng.integers(0, topo.n_hosts, args.n)
    dst = rng.integers(0, topo.n_hosts, args.n)
    ev = rng.choice(topo.ev_format.all_evs(), args.n)
    print(f"preset   {args.preset}, {args.n} random routes")
    for name, fn in [("ev_route", _ev_routes), ("ev_carrier + srv6_route", _srv6_routes),
                     ("ecmp_route", _ecmp_routes)]:
        fn(topo.arrays, src[:10], dst[:10], ev[:10])  # compile / load from cache
        t = time.perf_counter()
        hops = fn(topo.arrays, src, dst, ev)
        dt = time.perf_counter() - t
        print(f"{name:<24} {args.n / dt / 1e6:6.2f} M routes/s  ({hops / args.n:.2f} ports per route)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
