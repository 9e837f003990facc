"""docs/validation.md: our transports against UEC htsim on htsim's own matrices, and the MRC paper's rows.

    python benchmarks/validation.py --doc docs/validation.md        # k=8, k=16, leaf-spine sweeps (resumed), the page
    python benchmarks/validation.py --doc docs/validation.md --only k8   # sweep k=8; the others from their records
    python benchmarks/validation.py --check docs/validation.md      # the page against the committed records (no run)
    python benchmarks/validation.py --only k8 --seeds 1-3           # a quick look (no page, no records)

Section 1: each setup is a sweep (`mrc.emulator.sweep`, docs/sweeps.md) of the library scenario that ships
htsim's ``.cm`` matrix over `SETUP_TRANSPORTS` and its seeds (`SEEDS`), kept in ``RUNS/<scenario>`` (default
RUNS: runs/validation) and resumed. The figures of every cell go to ``docs/cells/validation/<scenario>.csv``
(`doccells`) and the tables are rendered from those records: per setup and transport the htsim figures it is
compared with (uet-htsim 40ccb05, measured on this machine type: the project's spec notes, validation-sources
1), our median over the seeds with the range ``[min, max]`` of p50 / p99 / max FCT, the p99 difference from
htsim in %, and the median number of trimmed packets; for the rows that meet htsim's ECMP the p99 of every seed.

Section 2 (the MRC paper, row by row) is rendered from docs/results.md's records (`results.py`), so this command
runs no sweep of its own for it. ``--check`` renders both from the committed records and exits 1 where the page
differs; the prose's generated numbers (``<!--v KEY-->``) are checked and written the same way.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

import doccells  # benchmarks/doccells.py
import docblocks  # benchmarks/docblocks.py

PAGE = "validation"
SETUPS = {  # id: (library scenario, label)
    "k8": ("fattree-k8-permutation", "k=8 fat-tree, 128 x 2 MB, 100G"),
    "k16": ("fattree-k16-permutation", "k=16 fat-tree, 1024 x 2 MB, 100G"),
    "ls": ("leafspine-8192-permutation", "8192-host leaf-spine 400G, 8192 x 1 MB"),
}
HASHED = "spray:entropy=hashed"  # htsim's oblivious: 128 entropies (`paths`), hashed at every switch
HASHED1 = "spray:entropy=hashed:paths=1"  # htsim's ECMP: one hashed entropy per QP, NSCC + trimming + SACK
TRANSPORTS = ["spray", HASHED, "reps", "roce-ecmp", "mrc-1ev", HASHED1]
# mrc-1ev's cells take minutes each on k=16 and the leaf-spine on a shared machine: k=8 only
# k=16: the hashed row beside the oblivious one and the rows the page had (`paths=1` and `mrc-1ev` on k=8 only: the
# session's budget, k=16 cells take 1-2 minutes each on the shared machine); the leaf-spine was not re-run
# (docs/validation.md)
SETUP_TRANSPORTS = {"k8": TRANSPORTS, "k16": ["spray", HASHED, "reps", "roce-ecmp"],
                    "ls": ["spray", HASHED, "reps", "roce-ecmp", HASHED1]}
SEEDS = {"k8": "1-10", "k16": "1-10", "ls": "1-5"}
# uet-htsim 40ccb05 (htsim_uec -tm FILE -sender_cc_only -end 20000; -paths 128; ECMP = oblivious -paths 1):
# FCT p50 / p99 / max in us and trimmed/retransmitted packets (spec notes, validation-sources 1)
HTSIM = {
    "k8": {"oblivious": (200.1, 221.3, 232.3, 172), "REPS": (196.5, 203.5, 203.9, 8), "ECMP": (368.9, 669.9, 687.8, 2881)},
    "k16": {"oblivious": (200.1, 209.6, 212.8, 628), "REPS": (197.9, 206.4, 208.2, 44),
            "ECMP": (385.6, 767.0, 882.5, 25610)},
    "ls": {"oblivious": (31.9, 34.7, 36.3, None), "REPS": (32.5, 35.3, 36.5, None), "ECMP": (49.7, 113.5, 156.1, 443000)},
}
VERSUS = {"spray": "oblivious", HASHED: "oblivious", "reps": "REPS", "roce-ecmp": "ECMP", "mrc-1ev": "ECMP",
          HASHED1: "ECMP"}
LABEL = {"spray": "`spray` (source-routed)", HASHED: "`spray:entropy=hashed` (128 hashed entropies)",
         "reps": "`reps`", "roce-ecmp": "`roce-ecmp`", "mrc-1ev": "`mrc-1ev`",
         HASHED1: "`spray:entropy=hashed:paths=1` (one hashed entropy)"}


def sweep_setup(sid: str, seeds: str, runs: pathlib.Path, client, save: bool):
    from mrc.emulator import sweep

    name, _ = SETUPS[sid]
    t0 = time.perf_counter()
    df = sweep(name, transports=SETUP_TRANSPORTS[sid], seeds=seeds, out=runs / name, client=client, resume=True,
               plots=False, echo=lambda line: print(f"  {line}", file=sys.stderr))
    print(f"  {name}: {len(df)} cells, {int((df['status'] != 'ok').sum())} failed, {time.perf_counter() - t0:.0f} s",
          file=sys.stderr, flush=True)
    if save:
        doccells.save(PAGE, name, df, {"scenario": name, "transports": SETUP_TRANSPORTS[sid], "seeds": seeds,
                                       "sets": [], "grid": {}})
    return df


def records(sid: str):
    """The committed records of setup `sid`, or None when it was not run on this code."""
    name, _ = SETUPS[sid]
    df = doccells.load(PAGE, name)
    if df is None:
        return None
    if df.attrs["meta"]["transports"] != SETUP_TRANSPORTS[sid]:
        raise SystemExit(f"docs/cells/{PAGE}/{name}: recorded for {df.attrs['meta']['transports']}, the page wants "
                         f"{SETUP_TRANSPORTS[sid]}: run --only {sid}")
    return df


def _mr(values) -> str:
    v = np.asarray(values, dtype=float)
    return f"{np.median(v):.1f} [{v.min():.1f}, {v.max():.1f}]"


def table(sid: str, df, vals: dict) -> list[str]:
    _, label = SETUPS[sid]
    out = [f"**{label}**", "",
           "| ours | vs htsim | htsim p50 / p99 / max | ours p50 [min, max] | p99 [min, max] | max [min, max] "
           "| p99 vs htsim | seeds | trimmed (htsim retransmitted) |",
           "|---|---|---|---|---|---|---|---|---|"]
    single = []
    for t in SETUP_TRANSPORTS[sid]:
        d = df[(df["transport"] == t) & (df["status"] == "ok")]
        if d.empty:
            continue
        ref = VERSUS[t]
        h50, h99, hmax, hre = HTSIM[sid][ref]
        p99 = float(np.median(d["fct_us_p99"]))
        trims = int(np.median(d["counters_trims"]))
        diff = 100 * (p99 - h99) / h99
        out.append(f"| {LABEL[t]} | {ref} | {h50} / {h99} / {hmax} | {_mr(d['fct_us_p50'])} | {_mr(d['fct_us_p99'])} "
                   f"| {_mr(d['fct_us_max'])} | {diff:+.1f} % | {len(d)} "
                   f"| {trims:,} ({'-' if hre is None else f'{hre:,}'}) |")
        for k, c in (("p50", "fct_us_p50"), ("p99", "fct_us_p99"), ("max", "fct_us_max")):
            vals[f"{sid}/{t}/{k}"] = f"{np.median(d[c]):.1f}"
            vals[f"{sid}/{t}/{k}/range"] = _mr(d[c])
        vals[f"{sid}/{t}/p99 vs htsim"] = f"{diff:+.1f} %"
        vals[f"{sid}/{t}/trims"] = f"{trims:,}"
        vals[f"{sid}/{t}/retransmissions"] = f"{int(np.median(d['counters_retransmissions'])):,}"
        vals[f"{sid}/{t}/spurious"] = f"{int(np.median(d['counters_spurious_retransmissions'])):,}"
        vals[f"{sid}/{t}/seeds"] = str(len(d))
        if ref == "ECMP":
            single.append(f"`{t}` p99 per seed (us, sorted): "
                          + ", ".join(f"{x:.0f}" for x in sorted(d["fct_us_p99"])))
    return out + [""] + single + [""]


def render(client=None, live=(), seeds_of=None, runs=pathlib.Path("runs/validation"), save=True, only_live=False):
    """The page's blocks and values: section 1 from the setups' sweeps (`live`) or records, section 2 from
    docs/results.md's records (with `only_live`: the live setups' tables alone)."""
    seeds_of = seeds_of or {}
    blocks, vals, missing = {}, {}, []
    for sid in SETUPS:
        if only_live and sid not in live:
            continue
        if sid in live and client is not None:
            df = sweep_setup(sid, seeds_of.get(sid, SEEDS[sid]), runs, client, save)
        else:
            df = records(sid)
        if df is None:  # not run on this code: the page keeps its earlier table, said so in the "records" block
            missing.append(sid)
            continue
        blocks[f"validation {sid}"] = "\n".join(table(sid, df, vals)).rstrip("\n")
    blocks["validation records"] = "\n".join(
        [f"- {SETUPS[sid][1]}: " + ("**not re-run on this code**: the table is the previous version's (`spray`, `reps`, "
                                   "`roce-ecmp` before hashed spraying; not checked)" if sid in missing else
                                   f"from the records `docs/cells/{PAGE}/{SETUPS[sid][0]}.csv`, checked by the tests")
         for sid in SETUPS])
    if only_live:
        return blocks, vals
    blocks["paper table"], pvals = paper_table()
    vals.update(pvals)
    return blocks, vals


# ---------------------------------------------------------------- section 2: the MRC paper, from results.md's records


def paper_table() -> tuple[str, dict]:
    """The MRC paper's table (docs/validation.md section 2): every row's our-side figures from docs/results.md's
    committed records (`results.render`), `mrc` and "mrc as specified" side by side."""
    import results as RS

    _, J, _ = RS.render()
    V = RS.Values(RS.values(J))
    S = RS.SPECIFIED
    q8 = RS.QP8

    def v(key):  # a figure whose experiment was not run on this code has no record
        return V.get(key) or "not run"

    def ar(kind, loss, t, size):
        return v(f"10/{kind}{loss} {t} {size}/busbw_gbps")

    rows = []
    rows.append([
        "7 -> 1 cross-spine incast with a victim flow (64 AMD Pollara 400G NICs, Tomahawk 5): MRC leaves the victim "
        "untouched; RoCEv2 + DCQCN costs the victim ~25 % of its throughput with 1 QP and ~75 % with 8 QPs "
        "(another summary: 10 QPs, 1 s intervals down to 100 Gb/s); PFC alone gives it 30-100 Gb/s",
        "`results/r5-incast-victim` (experiment 5): k=8 fat-tree 100G, seven 4 MB senders in seven pods to h0, an "
        "8 MB victim to h0's T0 neighbour; RoCE with 1 and 8 QPs per flow",
        f"victim Gb/s: `mrc` {v('5/mrc/victim_gbps')}, mrc as specified {v(f'5/{S}/victim_gbps')}; `roce-ecmp` "
        f"(PFC + DCQCN) 1 QP {v('5/roce-ecmp/victim_gbps')}, 8 QPs {v(f'5/{q8}/victim_gbps')}; lossy RoCE + DCQCN "
        f"1 QP {v('5/roce-ecmp:lossless=false/victim_gbps')}, 8 QPs "
        f"{v('5/roce-ecmp:qps=8:lossless=false/victim_gbps')}",
        "Scale: 128 hosts at 100G, not 64 at 400G; the victim shares aggregation queues with the incast for its "
        "whole life (PFC pauses from h0's T0 reach them), a heavier incast relative to the victim than 7 x 400G "
        "into 400G with vendor-tuned DCQCN (docs/results.md, experiment 5)"])
    rows.append([
        "Loss injected on all planes, 0.1 % and 1 %, ring all-reduce and all-to-all (4 MB - 16 GB): at 0.1 % MRC "
        "near line rate and RoCE collapses; at 1 % RoCE \"essentially unusable\", MRC about a third of line rate "
        "(figures only)",
        "`results/r10-{allreduce,alltoall}-{4x100g,1x400g}-loss{0.1,1}pct` (experiment 10): 64 hosts, MRC on 4 x 100G "
        "planes, RoCE on one 400G plane, loss on every leaf-spine link of every plane (2 lossy links per "
        "cross-leaf path); all-reduce 1-64 MiB per rank at 0.1 %, 1-16 MiB at 1 %, all-to-all 1-4 MiB",
        f"all-reduce bus Gb/s at 16 MiB, no loss / 0.1 % / 1 %: `mrc` {ar('allreduce', '', 'mrc', '16 MiB')} / "
        f"{ar('allreduce', '-loss0.1pct', 'mrc', '16 MiB')} / {ar('allreduce', '-loss1pct', 'mrc', '16 MiB')}; "
        f"mrc as specified {ar('allreduce', '', S, '16 MiB')} / {ar('allreduce', '-loss0.1pct', S, '16 MiB')} / "
        f"{ar('allreduce', '-loss1pct', S, '16 MiB')}; `roce-ecmp` 1 QP {ar('allreduce', '', 'roce-ecmp', '16 MiB')} / "
        f"{ar('allreduce', '-loss0.1pct', 'roce-ecmp', '16 MiB')} / {ar('allreduce', '-loss1pct', 'roce-ecmp', '16 MiB')}, "
        "16 QPs "
        f"{ar('allreduce', '', RS.QP16, '16 MiB')} / {ar('allreduce', '-loss0.1pct', RS.QP16, '16 MiB')} / "
        f"{ar('allreduce', '-loss1pct', RS.QP16, '16 MiB')}; all-to-all the same, every size: docs/results.md "
        "experiment 10",
        "Scale: 64 hosts as the paper, sizes up to 64 MiB (not 16 GB: a packet-level run of 16 GB per rank does "
        "not fit this machine); the loss is per link (about 0.2 % and 2 % per cross-leaf path)"])
    rows.append([
        "A tier-1 switch reboots during a production run (75,000-GPU job): ~580 k packets dropped, throughput "
        "largely unaffected, recovery \"within seconds\"",
        "`results/r7-t1-reboot` (experiment 7): k=8, ring all-reduce 8 x 16 ranks of 4 MB, one T1 of pod 0 down for "
        "2 ms at 100 us",
        # the routing sensitivity's sweep holds `mrc` and `roce-ecmp` at the default (100 ms) and at 1 ms; the
        # experiment's own table (the other rows) when it is re-run
        f"slowest ring: `mrc` {v('7-routing/mrc 100000/cct_us_max')} us (without the reboot: "
        f"{v('7/mrc/clean/cct_us_max')}); mrc as specified {v(f'7/{S}/cct_us_max')}; `roce-ecmp` "
        f"{v('7-routing/roce-ecmp 100000/cct_us_max')}, 8 QPs {v(f'7/{q8}/cct_us_max')}; with routing converging "
        f"in 1 ms (not 100 ms) `roce-ecmp` {v('7-routing/roce-ecmp 1000/cct_us_max')}",
        "The slowdown is larger because our switch is a quarter of pod 0's uplinks in a 128-host fabric during a "
        "1.2 ms collective, where one T1 of a 131 k-host fabric is a sliver; the drop count is not comparable"])
    rows.append([
        "Four flapping links (50,000-GPU cluster, transceiver glitch): throughput down ~25 % for the minute of "
        "flaps, no QP failed",
        "`results/r8-link-flap-4` (experiment 8): k=8 permutation 128 x 32 MB, four T1-T2 links in four pods each "
        "down 0.7 ms every 2.3 ms; `results/r8-link-flap`: one link",
        f"p99 slowdown, four links: `mrc` {v('8-four/mrc/slowdown_p99')}, mrc as specified "
        f"{v(f'8-four/{S}/slowdown_p99')}, `roce-ecmp` {v('8-four/roce-ecmp/slowdown_p99')}, 8 QPs "
        f"{v(f'8-four/{q8}/slowdown_p99')}; flows failed: `mrc` {v('8-four/mrc/outcome_failed')}, `roce-ecmp` "
        f"{v('8-four/roce-ecmp/outcome_failed')}",
        "4 of 64 core links of a 128-host fabric for 10-20 ms, not 4 links of a 50 k-GPU cluster for a minute "
        "(scale and duration)"])
    rows.append([
        "One MRC QP over 256 paths against 16 RoCE QPs, ring all-reduce (64 x 400G, RoCE on 1 plane with PFC + "
        "DCQCN, MRC on 4 x 100G SRv6 without PFC): MRC better at every large size; all-to-all: MRC better at every "
        "size, 16 RoCE QPs slightly worse than 1",
        "`results/r10-allreduce-{4x100g,1x400g}`, `results/r10-alltoall-{4x100g,1x400g}` (experiment 10): 64 hosts, "
        "8 leaves x 8 spines; MRC 1 QP on 4 x 100G (32 distinct paths per pair), RoCE 1 and 16 QPs per "
        "connection on 1 x 400G (PFC + DCQCN); 256 KiB - 64 MiB per rank",
        f"all-reduce bus Gb/s at 256 KiB / 4 MiB / 64 MiB: `mrc` {ar('allreduce', '', 'mrc', '256 KiB')} / "
        f"{ar('allreduce', '', 'mrc', '4 MiB')} / {ar('allreduce', '', 'mrc', '64 MiB')}; mrc as specified "
        f"{ar('allreduce', '', S, '64 MiB')} at 64 MiB; `roce-ecmp` 1 QP {ar('allreduce', '', 'roce-ecmp', '256 KiB')} / "
        f"{ar('allreduce', '', 'roce-ecmp', '4 MiB')} / {ar('allreduce', '', 'roce-ecmp', '64 MiB')}, 16 QPs "
        f"{ar('allreduce', '', RS.QP16, '256 KiB')} / {ar('allreduce', '', RS.QP16, '4 MiB')} / "
        f"{ar('allreduce', '', RS.QP16, '64 MiB')}; all-to-all at 16 MiB: `mrc` "
        f"{ar('alltoall', '', 'mrc', '16 MiB')}, `roce-ecmp` 1 QP {ar('alltoall', '', 'roce-ecmp', '16 MiB')}, "
        f"16 QPs {ar('alltoall', '', RS.QP16, '16 MiB')}",
        "Our MRC has 32 distinct paths per pair, not 256 (64 hosts, 8 spines x 4 planes); the RoCE and MRC fabrics "
        "have the same capacity per host (400 Gb/s)"])
    rows.append([
        "Point-to-point latency of 2-byte writes (8 x 100G ConnectX-8): 5.09 us through one T0, 6.54 us across a T1",
        "`results/r10-p2p-latency` (experiment 10): the 8-plane design at 64 hosts, 725 ns per link (the presets' "
        "calibration of the difference), NIC latency 1,810 ns each way (calibrated on the first figure)",
        f"one-way latency: `mrc` {v('10/p2p mrc/one_t0_us')} us through one T0, {v('10/p2p mrc/across_t1_us')} us "
        f"across a T1; `roce-ecmp` {v('10/p2p roce-ecmp/one_t0_us')} / {v('10/p2p roce-ecmp/across_t1_us')} us",
        "Calibrated, not predicted: the NIC latency is chosen so that the first figure matches; the second then "
        "follows from two more links and switch passes (1.45 us in the paper, 2 x 725 ns here)"])
    head = ["paper (testbed / production)", "our scenario", "what we get (median [95 % CI] over the seeds)",
            "why any difference"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out), {}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="k8,k16,ls", help="setups whose sweeps run: k8, k16, ls (comma-separated), or "
                    "none; the others are read from their records")
    ap.add_argument("--seeds", default=None, help="seeds of the fat-tree setups (default 1-10)")
    ap.add_argument("--ls-seeds", default=None, help="seeds of the leaf-spine (default 1-5)")
    ap.add_argument("--runs", default="runs/validation", help="sweep directories (resumed)")
    ap.add_argument("--doc", default=None, help="page to write (its blocks and <!--v KEY--> values)")
    ap.add_argument("--check", default=None, metavar="PAGE", help="render from the committed records and exit 1 if "
                    "PAGE differs (no simulation)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, default=2, help="local Dask workers (default 2)")
    g.add_argument("--scheduler", default=None, help="an existing Dask cluster's scheduler (tcp://HOST:PORT)")
    a = ap.parse_args(argv)
    if a.check:
        blocks, vals = render()
        bad = doccells.check_page(pathlib.Path(a.check), blocks, vals)
        print("\n".join(bad) or f"{a.check}: every table and value agrees with its records")
        return 1 if bad else 0
    only = [s.strip() for s in a.only.split(",") if s.strip() and s.strip() != "none"]
    for sid in only:
        if sid not in SETUPS:
            ap.error(f"--only: unknown setup {sid!r} (known: {', '.join(SETUPS)})")
    seeds_of = {}
    if a.seeds:
        seeds_of.update(k8=a.seeds, k16=a.seeds)
    if a.ls_seeds:
        seeds_of["ls"] = a.ls_seeds
    from mrc.emulator.sweeps.runner import cluster

    if not only:  # the page from the records alone: no cluster
        blocks, vals = render()
    else:
        with cluster(a.workers, a.scheduler) as client:
            blocks, vals = render(client, set(only), seeds_of, pathlib.Path(a.runs), save=bool(a.doc) or not seeds_of,
                                  only_live=not a.doc)
    print("\n\n".join(blocks.values()))
    if a.doc:
        page = pathlib.Path(a.doc)
        docblocks.fill(page, blocks)
        page.write_text(doccells.fill_values(page.read_text(), vals, str(page)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
