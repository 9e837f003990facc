"""What a regeneration of docs/results.md changed: every figure of two results.json files side by side.

    python benchmarks/results_changes.py OLD.json NEW.json              # every figure both files hold
    python benchmarks/results_changes.py OLD.json NEW.json --min-change 5   # those that moved by 5 % or more
    git show REV:docs/results/results.json > old.json                   # the page as it stood at REV

`benchmarks/results.py` writes results.json: per experiment, per row (a transport, or a loss rate and a
transport), per figure its median over the seeds and the bootstrap 95 % interval. A row prints as
``old median [low, high] -> new median [low, high]  (+x %)``, and ``*`` marks a change whose two intervals
do not overlap (the seeds tell the two apart). Rows and figures only one file holds are listed as added or
removed.
"""
from __future__ import annotations

import argparse
import json
import math
import sys

SKIP = ("seeds", "headlines", "wall_s")


def _fmt(s: dict) -> str:
    def f(v):
        return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.4g}"
    if s.get("ci_low") is None or (isinstance(s.get("ci_low"), float) and math.isnan(s["ci_low"])):
        return f(s.get("median"))
    return f"{f(s.get('median'))} [{f(s['ci_low'])}, {f(s['ci_high'])}]"


def _num(v) -> float:
    return float("nan") if v is None else float(v)


def changes(old: dict, new: dict, min_change: float = 0.0) -> list[str]:
    """The lines of the comparison (see the module docstring)."""
    out = []
    for n in sorted(set(old) | set(new), key=str):
        if n in SKIP:
            continue
        a, b = old.get(n, {}), new.get(n, {})
        if not isinstance(a, dict) or not isinstance(b, dict):
            continue
        lines = []
        for row in list(a) + [r for r in b if r not in a]:
            ra, rb = a.get(row), b.get(row)
            if ra is None or rb is None:
                lines.append(f"  {row}: {'added' if ra is None else 'removed'}")
                continue
            for fig in list(ra) + [x for x in rb if x not in ra]:
                sa, sb = ra.get(fig), rb.get(fig)
                if not isinstance(sa, dict) or not isinstance(sb, dict):
                    if sa is None or sb is None:
                        lines.append(f"  {row} {fig}: {'added' if sa is None else 'removed'}")
                    continue
                ma, mb = _num(sa.get("median")), _num(sb.get("median"))
                pct = (mb - ma) / abs(ma) * 100 if ma and not math.isnan(ma) and not math.isnan(mb) else float("nan")
                if (ma == mb or (math.isnan(ma) and math.isnan(mb))) and min_change > 0:
                    continue  # unchanged (a change of 0 from 0 has no percentage)
                if not math.isnan(pct) and abs(pct) < min_change:
                    continue
                apart = all(not math.isnan(_num(s.get(k))) for s in (sa, sb) for k in ("ci_low", "ci_high")) and (
                    _num(sb["ci_high"]) < _num(sa["ci_low"]) or _num(sb["ci_low"]) > _num(sa["ci_high"]))
                tag = "" if math.isnan(pct) else f"  ({pct:+.1f} %)"
                lines.append(f"  {row} {fig}: {_fmt(sa)} -> {_fmt(sb)}{tag}{' *' if apart else ''}")
        if lines:
            out += [f"experiment {n}"] + lines
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--min-change", type=float, default=0.0, help="list only figures that moved by this many %%")
    a = ap.parse_args(argv)
    try:
        old, new = (json.load(open(p)) for p in (a.old, a.new))
    except (OSError, json.JSONDecodeError) as e:
        ap.error(f"cannot read a results.json: {e}")
    print("\n".join(changes(old, new, a.min_change)) or "no figure changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
