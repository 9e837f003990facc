"""How well the controller localises failures from EV events, and whether it tells loss from load.

    python benchmarks/localize_eval.py [--seeds N] [--seed S] [--fabrics 2plane,4plane] [--kinds k1,k2]
                                       [--window-us W] [--json FILE] [--from-json FILE]

Each trial runs the emulator (``mrc`` transport) on one of two fabrics: ``2plane``, the ``mrc-2plane-64``
preset (64 hosts, 8 leaves x 8 spines per plane, 100G), and ``4plane``, the same leaf-spine with 4 planes.
Background traffic is a permutation of long flows over every host; in odd seeds an incast hotspot (7 senders
to 1 receiver) runs on the hosts of leaves 6-7 instead, the background and the failure then on leaves 0-5.
One failure is injected at a random time in [100, 300) us and the controller's live localiser
(`mrc.ctl.localizer`, `mrc.emulator.localize`) watches for `--window-us` after it. Kinds (and the verdict that
is right for them):

- ``link-down`` (down): a random T0-T1 link goes down for good;
- ``switch`` (down): a random switch (T0 or T1) reboots (down for 500 us);
- ``flap`` (flapping): a random T0-T1 link goes down 60 us in every 400 us (`FLAP_PERIOD_US`);
- ``gray-0.1`` ... ``gray-5`` (gray): a random T0-T1 link drops that percentage of its packets;
- ``degrade`` (degraded): a random T0-T1 link runs at 25 % of its rate;
- ``incast`` (nothing, or congestion: not blamed): no failure, the incast hotspot beside the background;
- ``overload`` (nothing, or congestion): no failure, four permutations at once on every host (each host sends
  and receives four long flows: its links and the core overloaded four times).

Per trial the verdict is that of the first suspect that names the failed element at the end of the window
(`mrc.ctl.localizer.matches`), "nothing" when none does; for the two congestion kinds, the verdict of the first
*blamed* suspect, "congestion" when only unblamed ones were reported, "nothing" when none. The report is the
confusion matrix per fabric (trials per kind and verdict), the share of trials with the right verdict (Wilson
95 % interval), the trials that blamed another element too, and the median time from the failure to the event
after which the controller first named the element. Each trial's seed is ``--seed`` + its number, so the
tables are reproducible; ``--json`` keeps every trial, ``--from-json`` prints the tables of a saved run.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

VERDICTS = ("down", "flapping", "gray", "degraded", "congestion", "nothing")
KINDS = ("link-down", "switch", "flap", "gray-0.1", "gray-0.5", "gray-1", "gray-5", "degrade", "incast", "overload")
RIGHT = {"link-down": {"down"}, "switch": {"down"}, "flap": {"flapping"}, "degrade": {"degraded"},
         "incast": {"nothing", "congestion"}, "overload": {"nothing", "congestion"},
         **{k: {"gray"} for k in KINDS if k.startswith("gray-")}}
FABRICS = {
    "2plane": {"preset": "mrc-2plane-64"},
    "4plane": {"kind": "leaf-spine", "hosts_per_leaf": 8, "leaves": 8, "spines": 8, "planes": 4, "link_gbps": 100},
}
FABRIC_NAMES = {"2plane": "mrc-2plane-64 (2 planes, 64 hosts, 8 x 8 per plane)",
                "4plane": "4-plane 8 x 8 leaf-spine (64 hosts)"}
HOSTS, HOSTS_PER_LEAF = 64, 8
SIZE = 200_000_000  # bytes per flow: the flows outlast the window
# a flap: down 60 us in every 400 us. Not every 100 us: the core probes an ASSUMED_BAD EV every 100 us
# (`ev_probe_interval_ps`), so with that period every probe falls into a down phase, the EVs never come back,
# and what the controller sees is an outage (it says `down`, rightly from what it sees)
FLAP_PERIOD_US, FLAP_DOWN_US = 400.0, 60.0


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (float("nan"), float("nan"))
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def scenario_data(fabric: str, kind: str, seed: int, window_us: float) -> tuple[dict, bool]:
    """The scenario of one trial (a dict for `mrc.emulator.scenario.parse`) and whether it has the hotspot."""
    rng = np.random.default_rng(seed)
    at = float(rng.uniform(100, 300))
    planes = 4 if fabric == "4plane" else 2
    hotspot = kind == "incast" or (kind != "overload" and seed % 2 == 1)
    leaves = 6 if hotspot else 8  # the failure is put where the background runs: an element nobody crosses is mute
    plane, leaf, spine = int(rng.integers(planes)), int(rng.integers(leaves)), int(rng.integers(8))
    link = [f"p{plane}.t0.{leaf}", f"p{plane}.t1.{spine}"]
    fail = None
    if kind == "link-down":
        fail = {"kind": "link-down", "at_us": at, "link": link}
    elif kind == "switch":
        tier = int(rng.integers(2))
        fail = {"kind": "switch-reboot", "at_us": at, "switch": f"p{plane}.t{tier}.{leaf if tier == 0 else spine}",
                "duration_us": 500.0}
    elif kind.startswith("gray-"):
        fail = {"kind": "gray-loss", "at_us": at, "link": link, "probability": float(kind[5:]) / 100}
    elif kind == "degrade":
        fail = {"kind": "degrade", "at_us": at, "link": link, "rate_fraction": 0.25}
    elif kind == "flap":
        fail = {"kind": "flap", "at_us": at, "link": link, "period_us": FLAP_PERIOD_US, "down_us": FLAP_DOWN_US}
    background = list(range(leaves * HOSTS_PER_LEAF))
    if kind == "overload":  # four permutations at once (one job: jobs need their own hosts)
        flows = []
        for _ in range(4):
            perm = rng.permutation(len(background))
            while (perm == np.arange(len(background))).any():
                perm = rng.permutation(len(background))
            flows += [{"src": int(a), "dst": int(b), "size_bytes": SIZE} for a, b in enumerate(perm)]
        work = [{"kind": "flows", "flows": flows}]
    else:
        work = [{"kind": "permutation", "size_bytes": SIZE, "hosts": background}]
    if hotspot:
        hot = list(range(leaves * HOSTS_PER_LEAF, HOSTS))
        work.append({"kind": "incast", "receiver": 0, "senders": 7, "size_bytes": 4_000_000, "hosts": hot})
    data = {"name": f"{fabric}-{kind}-{seed}", "seed": seed, "topology": dict(FABRICS[fabric]),
            "transport": {"name": "mrc"}, "workload": work, "duration_us": at + window_us,
            "metrics": {"sample_us": 20.0, "plots": False}, "failures": [fail] if fail else []}
    return data, hotspot


def trial(fabric: str, kind: str, seed: int, window_us: float, keep: str | None = None) -> dict:
    """Run one trial; with `keep`, also save what the localiser was given (`replay` redoes its verdict)."""
    from mrc.emulator import localize, scenario, sim

    data, hotspot = scenario_data(fabric, kind, seed, window_us)
    sc = scenario.parse(data, data["name"])
    kept = {}

    class Keep(localize.Live):  # the live localiser, keeping its inputs when the run ends
        def finish(self, T, E, t, failures):
            out = super().finish(T, E, t, failures)
            kept.update(loc=self.loc, t=t)
            return out

    wall = time.perf_counter()
    live, localize.Live = localize.Live, Keep
    try:
        r = sim.Simulation(sc).run()
    finally:
        localize.Live = live
    if keep:
        _save(keep, fabric, kind, seed, hotspot, kept["loc"], kept["t"], sc)
    fails = [{"index": 0, "ports": list(sc.failures[0].ports), "target": sc.failures[0].target}] if sc.failures else []
    out = _row(fabric, kind, seed, hotspot, r.localization["verdict"]["suspects"], fails,
               r.localization["failures"][0]["time_to_localise_us"] if fails else None)
    out["wall_s"] = round(time.perf_counter() - wall, 2)
    return out


def _row(fabric, kind, seed, hotspot, suspects, fails, ttl, matches=None) -> dict:
    if matches is None:
        from mrc.ctl.localizer import matches

    blamed = [s for s in suspects if s["verdict"] != "congestion"]
    out = {"fabric": fabric, "kind": kind, "seed": seed, "hotspot": hotspot,
           "target": fails[0]["target"] if fails else None,
           "blamed": [[s["element"], s["verdict"]] for s in blamed],
           "suspects": [[s["element"], s["verdict"], round(s["score"], 3)] for s in suspects]}
    if fails:
        fp = fails[0]["ports"]
        hit = [s for s in suspects if matches(s["ports"], fp)]
        out["verdict"] = hit[0]["verdict"] if hit else "nothing"
        out["others_blamed"] = [s["element"] for s in blamed if not matches(s["ports"], fp)]
        out["ttl_us"] = ttl
    else:
        out["verdict"] = blamed[0]["verdict"] if blamed else ("congestion" if suspects else "nothing")
        out["others_blamed"] = [s["element"] for s in blamed]
        out["ttl_us"] = None
    out["right"] = out["verdict"] in RIGHT[kind]
    return out


def _save(keep, fabric, kind, seed, hotspot, loc, t, sc) -> None:
    import os

    os.makedirs(keep, exist_ok=True)
    pe = np.array(loc.port_events, np.int64).reshape(-1, 4)
    pa = np.array([(a, b, v) for (a, b), v in loc.pair_active.items()], np.int64).reshape(-1, 3)
    fp = np.array(sc.failures[0].ports if sc.failures else [], np.int64)
    meta = json.dumps({"fabric": fabric, "kind": kind, "seed": seed, "hotspot": hotspot, "t": int(t),
                       "target": sc.failures[0].target if sc.failures else None})
    np.savez_compressed(os.path.join(keep, f"{fabric}-{kind}-{seed}.npz"), events=loc.events, paths=loc.paths,
                        port_events=pe, pair_active=pa, failure_ports=fp, meta=np.array(meta))


def replay(keep: str, module: str | None = None) -> list[dict]:
    """The verdicts of the localiser (this checkout's, or the module file `module`: another version of
    mrc/ctl/localizer.py) on the inputs saved by ``--keep``: no emulator run, the same inputs for both."""
    import glob
    import os

    if module:
        import importlib.util

        spec = importlib.util.spec_from_file_location("localizer_replayed", module)
        CL = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = CL  # dataclasses look their module up
        spec.loader.exec_module(CL)
    else:
        from mrc.ctl import localizer as CL

    from mrc.emulator import scenario

    rows = []
    for path in sorted(glob.glob(os.path.join(keep, "*.npz"))):
        z = np.load(path)
        m = json.loads(str(z["meta"]))
        data, _ = scenario_data(m["fabric"], m["kind"], m["seed"], 1.0)
        loc = CL.Localizer(scenario.parse(data, data["name"]).topo)
        ev = z["events"]
        if len(ev):
            loc.add_events(ev["t"], ev["a"], ev["b"], ev["ev"], ev["state"], ev["drops"], ev["label"])
        for t_, h, p_, up in z["port_events"].tolist():
            loc.add_port_event(t_, h, p_, bool(up))
        for a, b, v in z["pair_active"].tolist():
            loc.note_pair_active(a, b, v)
        loc.set_paths(z["paths"])
        loc.update(m["t"])  # names each element at the event after which the verdict first names it (bisection)
        v = loc.verdict(m["t"])
        fails = [{"index": 0, "ports": z["failure_ports"].tolist(), "target": m["target"],
                  "at_us": data["failures"][0]["at_us"]}] if m["target"] else []
        ttl = None
        if fails:
            named = {n: (at, loc.first_verdict[n].ports) for n, at in loc.named_at.items()}
            ttl = CL.time_to_localise(named, fails)[0]["time_to_localise_us"]
        rows.append(_row(m["fabric"], m["kind"], m["seed"], m["hotspot"], [x.as_dict() for x in v.suspects], fails,
                         ttl, matches=CL.matches))
    return rows


def tables(rows: list[dict]) -> str:
    out = []
    for fabric in [f for f in FABRICS if any(r["fabric"] == f for r in rows)]:
        rs = [r for r in rows if r["fabric"] == fabric]
        out.append(f"**{FABRIC_NAMES[fabric]}**\n")
        out.append("| kind (right verdict) | trials | " + " | ".join(VERDICTS)
                   + " | right (95% CI) | another element blamed | TTL median us |")
        out.append("|---|---|" + "---|" * len(VERDICTS) + "---|---|---|")
        for kind in [k for k in KINDS if any(r["kind"] == k for r in rs)]:
            kr = [r for r in rs if r["kind"] == kind]
            n = len(kr)
            cells = [str(sum(1 for r in kr if r["verdict"] == v) or "") for v in VERDICTS]
            ok = sum(1 for r in kr if r["right"])
            lo, hi = wilson(ok, n)
            other = sum(1 for r in kr if r["others_blamed"])
            ttl = [r["ttl_us"] for r in kr if r.get("ttl_us") is not None]
            med = f"{np.median(ttl):.0f}" if ttl else "-"
            right = " / ".join(sorted(RIGHT[kind]))
            out.append(f"| {kind} ({right}) | {n} | " + " | ".join(cells)
                       + f" | {ok}/{n} = {ok / n:.2f} ({lo:.2f}-{hi:.2f}) | {other}/{n} | {med} |")
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10, help="trials per kind and fabric (default 10)")
    ap.add_argument("--seed", type=int, default=1000, help="seed of the first trial (default 1000)")
    ap.add_argument("--fabrics", default=",".join(FABRICS))
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--window-us", type=float, default=2000.0, help="observation after the failure (default 2000)")
    ap.add_argument("--json", help="also write every trial as JSON here")
    ap.add_argument("--from-json", help="print the tables of the trials saved in this JSON file, run nothing")
    ap.add_argument("--keep", metavar="DIR", help="save each trial's localiser inputs (events, paths) in DIR")
    ap.add_argument("--replay", metavar="DIR", help="the localiser's verdicts on the inputs saved by --keep "
                    "(no emulator run; the times to localise from the final path counters)")
    ap.add_argument("--localizer", metavar="FILE", help="with --replay: this version of mrc/ctl/localizer.py (e.g. "
                    "`git show main:mrc/ctl/localizer.py > old.py`), to compare verdicts on the same inputs")
    a = ap.parse_args(argv)
    if a.from_json:
        with open(a.from_json) as f:
            print(tables(json.load(f)))
        return 0
    if a.replay:
        rows = replay(a.replay, a.localizer)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)
        print(tables(rows))
        return 0
    kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
    fabrics = [f.strip() for f in a.fabrics.split(",") if f.strip()]
    bad = [k for k in kinds if k not in KINDS] + [f for f in fabrics if f not in FABRICS]
    if bad or a.seeds < 1 or a.window_us <= 0:
        ap.error(f"unknown {bad}: kinds from {', '.join(KINDS)}, fabrics from {', '.join(FABRICS)}; seeds >= 1; "
                 "window > 0")
    rows = []
    for k in range(a.seeds):  # seed by seed: a run cut short has every kind and fabric
        for fabric in fabrics:
            for kind in kinds:
                r = trial(fabric, kind, a.seed + k, a.window_us, a.keep)
                rows.append(r)
                print(f"{fabric} {kind:<9} seed={r['seed']} hotspot={'y' if r['hotspot'] else 'n'} "
                      f"target={r['target']} verdict={r['verdict']} others={r['others_blamed']} "
                      f"ttl={r['ttl_us']} ({r['wall_s']:.1f} s)", file=sys.stderr, flush=True)
                if a.json:
                    with open(a.json, "w") as f:
                        json.dump(rows, f, indent=1)
    print(tables(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
