"""The validation table of docs/validation.md: our transports against UEC htsim on htsim's own matrices.

    python benchmarks/validation.py                          # k=8, k=16, leaf-spine; 10 seeds; 1 worker
    python benchmarks/validation.py --only k8 --seeds 1-3    # one setup, fewer seeds
    python benchmarks/validation.py --seeds 1-10 --ls-seeds 1-5   # fewer seeds on the 8192-host leaf-spine

Each setup is a sweep (`mrc.emulator.sweep`, docs/sweeps.md) of the library scenario that ships
htsim's ``.cm`` matrix, over ``spray``, ``reps``, ``roce-ecmp`` (and ``mrc-1ev`` on k=8) and the
seeds, kept in ``RUNS/<scenario>`` (default RUNS: runs/validation) and resumed, so a second run re-uses every
cell whose scenario, transport, seed and code are unchanged. Printed (Markdown): per setup and
transport the htsim figures it is compared with (uet-htsim 40ccb05, measured on this machine type:
the project's spec notes, validation-sources 1), our median over the seeds with the range
``[min, max]`` of p50 / p99 / max FCT, the p99 difference from htsim in %, and the median number of
trimmed packets; for the single-path rows the p99 of every seed (ECMP hashing differs per seed).
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

SETUPS = {  # id: (library scenario, label)
    "k8": ("fattree-k8-permutation", "k=8 fat-tree, 128 x 2 MB, 100G"),
    "k16": ("fattree-k16-permutation", "k=16 fat-tree, 1024 x 2 MB, 100G"),
    "ls": ("leafspine-8192-permutation", "8192-host leaf-spine 400G, 8192 x 1 MB"),
}
TRANSPORTS = ["spray", "reps", "roce-ecmp", "mrc-1ev"]
# mrc-1ev's cells take minutes each on k=16 and the leaf-spine on a shared machine: k=8 only
SETUP_TRANSPORTS = {"k8": TRANSPORTS, "k16": TRANSPORTS[:3], "ls": TRANSPORTS[:3]}
# uet-htsim 40ccb05 (htsim_uec -tm FILE -sender_cc_only -end 20000; -paths 128; ECMP = oblivious -paths 1):
# FCT p50 / p99 / max in us and trimmed/retransmitted packets (spec notes, validation-sources 1)
HTSIM = {
    "k8": {"oblivious": (200.1, 221.3, 232.3, 172), "REPS": (196.5, 203.5, 203.9, 8), "ECMP": (368.9, 669.9, 687.8, 2881)},
    "k16": {"oblivious": (200.1, 209.6, 212.8, 628), "REPS": (197.9, 206.4, 208.2, 44),
            "ECMP": (385.6, 767.0, 882.5, 25610)},
    "ls": {"oblivious": (31.9, 34.7, 36.3, None), "REPS": (32.5, 35.3, 36.5, None), "ECMP": (49.7, 113.5, 156.1, 443000)},
}
VERSUS = {"spray": "oblivious", "reps": "REPS", "roce-ecmp": "ECMP", "mrc-1ev": "ECMP"}


def sweep_setup(sid: str, seeds: str, runs: pathlib.Path, workers: int):
    from mrc.emulator import sweep

    name, _ = SETUPS[sid]
    return sweep(name, transports=SETUP_TRANSPORTS[sid], seeds=seeds, out=runs / name, workers=workers, resume=True,
                 plots=False, echo=lambda line: print(f"  {line}", file=sys.stderr))


def _mr(values) -> str:
    v = np.asarray(values, dtype=float)
    return f"{np.median(v):.1f} [{v.min():.1f}, {v.max():.1f}]"


def table(sid: str, df) -> list[str]:
    _, label = SETUPS[sid]
    out = [f"**{label}**", "",
           "| ours | vs htsim | htsim p50 / p99 / max | ours p50 [min, max] | p99 [min, max] | max [min, max] "
           "| p99 vs htsim | seeds | trimmed (htsim retransmitted) |",
           "|---|---|---|---|---|---|---|---|---|"]
    single = []
    for t in TRANSPORTS:
        d = df[(df["transport"] == t) & (df["status"] == "ok")]
        if d.empty:
            continue
        ref = VERSUS[t]
        h50, h99, hmax, hre = HTSIM[sid][ref]
        p99 = float(np.median(d["fct_us_p99"]))
        trims = int(np.median(d["counters_trims"]))
        out.append(f"| `{t}` | {ref} | {h50} / {h99} / {hmax} | {_mr(d['fct_us_p50'])} | {_mr(d['fct_us_p99'])} "
                   f"| {_mr(d['fct_us_max'])} | {100 * (p99 - h99) / h99:+.1f} % | {len(d)} "
                   f"| {trims:,} ({'-' if hre is None else f'{hre:,}'}) |")
        if ref == "ECMP":
            single.append(f"`{t}` p99 per seed (us, sorted): "
                          + ", ".join(f"{x:.0f}" for x in sorted(d["fct_us_p99"])))
    return out + [""] + single + [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="k8,k16,ls", help="setups: k8, k16, ls (comma-separated)")
    ap.add_argument("--seeds", default="1-10", help="seeds of the fat-tree setups (default 1-10)")
    ap.add_argument("--ls-seeds", default=None, help="seeds of the leaf-spine (default: --seeds)")
    ap.add_argument("--runs", default="runs/validation", help="sweep directories (resumed)")
    ap.add_argument("--workers", type=int, default=1, help="local Dask workers (default 1)")
    a = ap.parse_args(argv)
    lines = []
    for sid in [s.strip() for s in a.only.split(",") if s.strip()]:
        if sid not in SETUPS:
            ap.error(f"--only: unknown setup {sid!r} (known: {', '.join(SETUPS)})")
        seeds = a.ls_seeds if sid == "ls" and a.ls_seeds else a.seeds
        lines += table(sid, sweep_setup(sid, seeds, pathlib.Path(a.runs), a.workers))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
