"""How long the conformance suite takes: in process, out of process (UDP + JSON lines), and the mutant matrix.

    python benchmarks/conformance_suite.py [--full]

Prints wall-clock seconds (after one warm-up run that loads the compiled core), per group, and the number of
(case, mutant) runs the pruned matrix needs against the full one. Figures are noisy on a shared machine.
"""
from __future__ import annotations

import argparse
import collections
import time

from mrc.conformance.cases import CASES
from mrc.conformance.matrix import mutant_matrix, reference_traces
from mrc.conformance.mutants import MUTANTS
from mrc.conformance.reference import ReferenceAdapter
from mrc.conformance.runner import run_suite
from mrc.conformance.wire_adapter import WireAdapter


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="also time the full (unpruned) mutant matrix")
    args = ap.parse_args()
    run_suite(ReferenceAdapter(), CASES)  # warm-up: numba cache, scapy, fabric
    rep = run_suite(ReferenceAdapter(), CASES)
    per = collections.defaultdict(float)
    for r in rep.results:
        per[r.case.group] += r.seconds
    print(f"cases: {len(CASES)}; reference in process: {rep.seconds:.2f} s "
          f"({1000 * rep.seconds / len(CASES):.1f} ms per case); outcomes {rep.counts()}")
    print("  per group: " + ", ".join(f"{g} {s:.2f} s" for g, s in per.items()))
    t0 = time.perf_counter()
    wire = WireAdapter.spawn()
    spawn = time.perf_counter() - t0
    rep_w = run_suite(wire, CASES)
    wire.close()
    same = [a.outcome for a in rep.results] == [b.outcome for b in rep_w.results]
    print(f"reference out of process (UDP + JSON lines): {rep_w.seconds:.2f} s + {spawn:.2f} s to start the peer; "
          f"same verdicts as in process: {same}")
    traces = reference_traces(CASES)
    m = mutant_matrix(CASES, MUTANTS, reference=traces)
    runs = sum(r.ran for r in m.rows)
    print(f"mutant matrix, pruned: {len(MUTANTS)} mutants, {runs} case runs of {len(MUTANTS) * len(CASES)}, "
          f"{m.seconds:.1f} s, exact: {m.ok}")
    if args.full:
        f = mutant_matrix(CASES, MUTANTS, full=True, reference=traces)
        print(f"mutant matrix, full: {sum(r.ran for r in f.rows)} case runs, {f.seconds:.1f} s, exact: {f.ok}")


if __name__ == "__main__":
    main()
