"""How well the controller localises failures from EV events: precision, recall, time to localise.

    python benchmarks/localize_eval.py [--trials N] [--seed S] [--window-us W] [--kinds k1,k2] [--json FILE]

Each trial runs the emulator (``mrc`` transport) on a 2-plane leaf-spine of 32 hosts (8 leaves x 8
spines per plane, 100G) under background traffic (a permutation of long flows on 24 hosts, or on all
32), injects one random failure at a random time in [100, 300) us and lets the controller's live
localiser (`mrc.ctl.localizer`, `mrc.emulator.localize`) watch for `--window-us` after it. Kinds:

- ``link-down``: a random T0-T1 link goes down for good;
- ``switch``: a random switch (T0 or T1) reboots (down for 500 us);
- ``gray-0.1`` ... ``gray-5``: a random T0-T1 link drops that percentage of its packets;
- ``degrade``: a random T0-T1 link runs at 25 % of its rate;
- ``flap``: a random T0-T1 link goes down 30 us in every 100 us;
- ``congestion``: no failure, an incast hotspot only (7 senders to 1 receiver).

Every failure kind runs without and with the hotspot (the incast on the 8 hosts of leaves 6 and 7,
which the background then leaves out; the failure is then put on the background's leaves 0-5). Per kind: recall (the failed element is blamed within the window), precision (of the
elements blamed at the end of the window, the share that is the failed element), the median and p95
time from the failure to the event that made the controller name it, and for ``congestion`` the share
of trials that blamed nothing. Proportions carry Wilson 95 % intervals. Each trial has its own seed
(``--seed`` + trial), so the table is reproducible.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

from mrc.emulator import scenario, sim

FABRIC = {"kind": "leaf-spine", "hosts_per_leaf": 4, "leaves": 8, "spines": 8, "planes": 2, "link_gbps": 100}
KINDS = ("link-down", "switch", "gray-0.1", "gray-0.5", "gray-1", "gray-5", "degrade", "flap", "congestion")
TARGETS = {"link-down": "found within 1 ms, precision >= 0.95", "switch": "found within 1 ms, precision >= 0.95",
           "gray-0.5": "recall >= 0.9", "gray-1": "recall >= 0.9", "gray-5": "recall >= 0.9",
           "congestion": "no healthy element blamed in >= 95 % of trials"}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (float("nan"), float("nan"))
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def trial(kind: str, hotspot: bool, seed: int, window_us: float) -> dict:
    rng = np.random.default_rng(seed)
    at = float(rng.uniform(100, 300))
    # with the hotspot, the background runs on leaves 0-5 (hosts 0-23) and the failure is put where it runs:
    # an element no QP sprays across shows nothing to anybody
    leaves = 6 if hotspot else 8
    plane, leaf, spine = int(rng.integers(2)), int(rng.integers(leaves)), int(rng.integers(8))
    link = [f"p{plane}.t0.{leaf}", f"p{plane}.t1.{spine}"]
    fail = None
    if kind == "link-down":
        fail = {"kind": "link-down", "at_us": at, "link": link}
    elif kind == "switch":
        sw = f"p{plane}.t{int(rng.integers(2))}.{leaf}"
        fail = {"kind": "switch-reboot", "at_us": at, "switch": sw, "duration_us": 500.0}
    elif kind.startswith("gray-"):
        fail = {"kind": "gray-loss", "at_us": at, "link": link, "probability": float(kind[5:]) / 100}
    elif kind == "degrade":
        fail = {"kind": "degrade", "at_us": at, "link": link, "rate_fraction": 0.25}
    elif kind == "flap":
        fail = {"kind": "flap", "at_us": at, "link": link, "period_us": 100.0, "down_us": 30.0}
    background = list(range(24)) if hotspot or kind == "congestion" else list(range(32))
    work = [{"kind": "permutation", "size_bytes": 200_000_000, "hosts": background}]
    if hotspot or kind == "congestion":
        work.append({"kind": "incast", "receiver": 0, "senders": 7, "size_bytes": 4_000_000,
                     "hosts": list(range(24, 32))})
    data = {"name": f"{kind}{'-hotspot' if hotspot else ''}", "seed": seed, "topology": FABRIC,
            "transport": {"name": "mrc"}, "workload": work, "duration_us": at + window_us,
            "metrics": {"sample_us": 20.0, "plots": False}, "failures": [fail] if fail else []}
    sc = scenario.parse(data, data["name"])
    wall = time.perf_counter()
    r = sim.Simulation(sc).run()
    loc = r.localization
    blamed = [s for s in loc["verdict"]["suspects"] if s["verdict"] != "congestion"]
    out = {"kind": kind, "hotspot": hotspot, "seed": seed, "at_us": at, "target": sc.failures[0].target if fail else None,
           "blamed": [s["element"] for s in blamed], "wall_s": time.perf_counter() - wall}
    if fail:
        f = loc["failures"][0]
        from mrc.ctl.localizer import matches

        fp = sc.failures[0].ports
        out["found"] = f["element"] is not None
        out["ttl_us"] = f["time_to_localise_us"]
        out["tp"] = sum(1 for s in blamed if matches(s["ports"], fp))
        out["fp"] = len(blamed) - out["tp"]
        out["verdicts"] = [s["verdict"] for s in blamed if matches(s["ports"], fp)]
    return out


def table(rows: list[dict], window_us: float) -> str:
    lines = ["| kind | hotspot | trials | recall (95% CI) | precision (95% CI) | TTL median us | TTL p95 us | "
             "found within 1 ms | target |", "|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["kind"], r["hotspot"]) for r in rows}, key=lambda k: (KINDS.index(k[0]), k[1]))
    for kind, hot in keys:
        rs = [r for r in rows if r["kind"] == kind and r["hotspot"] == hot]
        n = len(rs)
        if kind == "congestion":
            ok = sum(1 for r in rs if not r["blamed"])
            lo, hi = wilson(ok, n)
            lines.append(f"| congestion (no failure) | yes | {n} | nothing blamed: {ok}/{n} = {ok / n:.2f} "
                         f"({lo:.2f}-{hi:.2f}) | | | | | {TARGETS['congestion']} |")
            continue
        found = sum(1 for r in rs if r["found"])
        tp = sum(r["tp"] for r in rs)
        fp = sum(r["fp"] for r in rs)
        ttl = np.array([r["ttl_us"] for r in rs if r["found"]], float)
        within = sum(1 for r in rs if r["found"] and r["ttl_us"] <= 1000)
        rlo, rhi = wilson(found, n)
        plo, phi = wilson(tp, tp + fp)
        prec = f"{tp / (tp + fp):.2f} ({plo:.2f}-{phi:.2f})" if tp + fp else "-"
        med = f"{np.median(ttl):.1f}" if len(ttl) else "-"
        p95 = f"{np.percentile(ttl, 95):.1f}" if len(ttl) else "-"
        lines.append(f"| {kind} | {'yes' if hot else 'no'} | {n} | {found / n:.2f} ({rlo:.2f}-{rhi:.2f}) | {prec} | "
                     f"{med} | {p95} | {within}/{n} | {TARGETS.get(kind, '')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=10, help="trials per kind and hotspot setting (default 10)")
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--window-us", type=float, default=2000.0, help="observation after the failure (default 2000)")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--json", help="also write every trial as JSON here")
    a = ap.parse_args(argv)
    kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
    bad = [k for k in kinds if k not in KINDS]
    if bad or a.trials < 1 or a.window_us <= 0:
        ap.error(f"kinds from {', '.join(KINDS)}; trials >= 1; window > 0")
    rows = []
    seed = a.seed
    for kind in kinds:
        for hot in ((True,) if kind == "congestion" else (False, True)):
            for _ in range(a.trials):
                r = trial(kind, hot, seed, a.window_us)
                seed += 1
                rows.append(r)
                print(f"{kind:<11} hotspot={'y' if hot else 'n'} seed={r['seed']} target={r['target']} "
                      f"blamed={r['blamed']} ttl={r.get('ttl_us')} ({r['wall_s']:.1f} s)", file=sys.stderr, flush=True)
    print(table(rows, a.window_us))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
