"""Speed and scale of the emulator on the standard setups (simulators-and-setups 5 and 7).

    python benchmarks/emulator_speed.py            # a, b, c
    python benchmarks/emulator_speed.py a b c d    # d: the 131,072-host 8-plane preset (needs ~10 GB)
    python benchmarks/emulator_speed.py b --transport roce-ecmp:lossless=false
    python benchmarks/emulator_speed.py a b c --transport roce-ecmp,mrc   # side by side, with the ratio
    python benchmarks/emulator_speed.py b --transport roce-ecmp,mrc --repeat 10   # interleaved rounds, median ratio

==  ===========================  ==========================================  ==============================
id  scenario (library)           setup                                       target
==  ===========================  ==========================================  ==============================
a   fattree-k8-permutation       k=8 fat-tree, 128 hosts, 128 x 2 MB
b   fattree-k16-permutation      k=16 fat-tree, 1024 hosts, 1024 x 2 MB      >= 1.0 M packet-hops/s
c   leafspine-8192-permutation   8192-host 400G leaf-spine, 8192 x 1 MB      >= 0.6 M packet-hops/s, <= 1 GB
d   mrc-8plane-131k-permutation  131,072 hosts, 8 planes, 131,072 x 64 KB    <= 16 GB
e   training-dp                  64 hosts, 2 planes: 3 iterations of a 1 MB
                                 ring all-reduce in 8 rings of 8
t   training-131k-dp             131,072 hosts, 8 planes: 3 iterations of a  >= 1.0 M packet-hops/s (mrc),
                                 32 KB all-reduce in 256 rings of 512, on    <= 8 GB, set-up <= 10 s
                                 reused connections
==  ===========================  ==========================================  ==============================

Each setup runs in its own process (so its peak RSS is its own), after a tiny
warm-up run that loads the compiled code from the cache (or compiles it once).
``--transport`` (default roce-ecmp, the scenarios' own) takes a comma-separated
list: each setup then runs once per transport, and every transport after the
first gets the ratio of the first's packet-hops/s to its own (the MRC target:
``mrc`` within 1.5x of ``roce-ecmp``). On a shared machine one run says little:
``--repeat N`` runs N rounds (every transport once per round, interleaved, each
in a fresh process) and ends each setup with the median, minimum and maximum of
the per-round ratios.
Printed per setup: flows, simulated time, events, packet-hops (packets
serialised onto a link), wall time of the simulation loop, events/s,
packet-hops/s, peak RSS, setup time, and the process's CPU time for set-up and
loop (on a machine shared with others, wall time overstates what a run costs). htsim (C++) does 0.28 M and 0.18 M
packet-hops/s on b and c on this machine type (spraying UET transport; see
simulators-and-setups). The machine may be shared: figures are noisy.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

SETUPS = {
    "a": ("fattree-k8-permutation", None, None),
    "b": ("fattree-k16-permutation", 1.0e6, None),
    "c": ("leafspine-8192-permutation", 0.6e6, 1024.0),
    "d": ("mrc-8plane-131k-permutation", None, 16384.0),
    "e": ("training-dp", None, None),
    "t": ("training-131k-dp", 1.0e6, 8192.0),
}


def one(name: str, transport: str | None) -> dict:
    from mrc.emulator import scenario, sim
    from mrc.emulator.transports.spec import parse as parse_transport

    warm = scenario.parse({"topology": {"kind": "leaf-spine", "hosts_per_leaf": 2, "leaves": 2, "spines": 1,
                                        "link_gbps": 100}, "transport": {"name": "roce-ecmp"},
                           "workload": {"kind": "permutation", "size_bytes": 10000}}, "warm-up")
    sim.Simulation(warm).run()
    t0 = time.perf_counter()
    c0 = time.process_time()
    sets = []
    if transport:
        tname, params = parse_transport(transport)
        sets = [f"transport.name=\"{tname}\""] + [f"transport.{k}={json.dumps(v)}" for k, v in params.items()]
    sc = scenario.load(name, sets=sets)
    s = sim.Simulation(sc)
    setup = time.perf_counter() - t0
    c1 = time.process_time()
    r = s.run()
    cpu = time.process_time() - c1
    done = int((r.flows["status"] == 2).sum())
    w = r.sim["wall_s"]
    return {"scenario": name, "hosts": sc.topo.n_hosts, "flows": len(r.flows), "completed": done,
            "sim_us": r.sim["sim_time_us"], "events": r.sim["events"], "hops": r.sim["packet_hops"], "wall_s": w,
            "events_per_s": r.sim["events"] / w, "hops_per_s": r.sim["packet_hops"] / w,
            "rss_mb": r.sim["peak_rss_mb"], "setup_s": setup, "peak_packets": r.sim["peak_packets"],
            "setup_cpu_s": c1 - c0, "cpu_s": cpu, "hops_per_cpu_s": r.sim["packet_hops"] / max(cpu, 1e-9)}


def _run(key: str, tp: str, first: dict | None, first_name: str) -> dict | None:
    """Run setup `key` with transport `tp` in its own process and print its row."""
    name, hops_target, rss_target = SETUPS[key]
    out = subprocess.run([sys.executable, __file__, "--one", name, "--transport", tp], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"{key:2} {name:28} {tp}: failed:\n{out.stderr[-2000:]}")
        return None
    d = json.loads(out.stdout.strip().splitlines()[-1])
    verdict = [tp]
    if first is not None:
        verdict.append(f"{first_name} / {tp} packet-hops/s = {first['hops_per_s'] / d['hops_per_s']:.2f}")
    if hops_target:
        verdict.append(f">= {hops_target / 1e6:.1f} M hops/s: {'yes' if d['hops_per_s'] >= hops_target else 'NO'}")
    if rss_target:
        verdict.append(f"<= {rss_target:.0f} MB: {'yes' if d['rss_mb'] <= rss_target else 'NO'}")
    print(f"{key:2} {name:28} {d['hosts']:>7,} {d['completed']:>6,}/{d['flows']:<6,} {d['sim_us']:>9,.1f} "
          f"{d['events']:>11,} {d['hops']:>11,} {d['wall_s']:>7.2f} {d['events_per_s'] / 1e6:>7.2f} "
          f"{d['hops_per_s'] / 1e6:>8.2f} {d['rss_mb']:>7.0f} {d['setup_s']:>7.2f} {d['cpu_s']:>7.1f} "
          f"{d['hops_per_cpu_s'] / 1e6:>9.2f} {d['setup_cpu_s']:>8.2f}  {'; '.join(verdict)}", flush=True)
    return d


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("setups", nargs="*", default=["a", "b", "c"], help="a b c d e t (default: a b c)")
    ap.add_argument("--transport", default="roce-ecmp",
                    help="transport(s), comma-separated (name[:key=value...]; default roce-ecmp)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds per setup, transports interleaved (default 1)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.transport)))
        return 0
    print(f"{'id':2} {'scenario':28} {'hosts':>7} {'flows':>13} {'sim us':>9} {'events':>11} {'pkt-hops':>11} "
          f"{'wall s':>7} {'M ev/s':>7} {'M hops/s':>8} {'RSS MB':>7} {'setup s':>7} {'CPU s':>7} {'M hops/cpu':>9} "
          f"{'setup cpu':>8}  transport, target", flush=True)
    tps = [t.strip() for t in args.transport.split(",") if t.strip()]
    for key in args.setups:
        if key not in SETUPS:
            ap.error(f"unknown setup {key!r}: choose from {', '.join(SETUPS)}")
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, not {args.repeat}")
    ok = True
    for key in args.setups:
        ratios = {tp: [] for tp in tps[1:]}
        for _ in range(args.repeat):
            first = None
            for tp in tps:
                d = _run(key, tp, first, tps[0])
                ok = ok and d is not None
                if first is not None and d is not None:
                    ratios[tp].append(first["hops_per_s"] / d["hops_per_s"])
                first = first or d
        for tp, rs in ratios.items():
            if args.repeat > 1 and rs:
                print(f"{key:2} {tps[0]} / {tp} packet-hops/s over {len(rs)} rounds: median {statistics.median(rs):.2f} "
                      f"(min {min(rs):.2f}, max {max(rs):.2f})", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
