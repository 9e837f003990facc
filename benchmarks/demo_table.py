"""The demo table of docs/emulator.md: what ``mrc demo`` prints with seed 1, from its committed record.

    python benchmarks/demo_table.py --doc docs/emulator.md     # run the demo (seed 1), record it, write the table
    python benchmarks/demo_table.py --check docs/emulator.md   # the page against the committed record (no run)

The demo (`mrc.emulator.demo.run_demo`, its default fabric, transports and seed) runs once per transport; each
transport's row of ``demo.csv`` (`summary_table.rows`: the numbers ``mrc demo`` prints) goes to
``docs/cells/emulator/demo.csv``, and the page's ``<!-- demo table -->`` block is rendered from it, a figure that
does not exist as ``-`` exactly as ``mrc demo`` prints it (`summary_table.fmt`: "goodput never came back" is a
null, never 0). tests/benchmarks/test_docs_reproduce.py re-runs the demo for one transport and compares its row
with the record.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile

import doccells  # benchmarks/doccells.py
import docblocks  # benchmarks/docblocks.py

PAGE = "emulator"
LABEL = "demo"
SEED = 1
# (column of summary_table.rows, header, digits) of the page's table: what `mrc demo` prints
COLUMNS = [("fct_p50_us", "FCT p50 us", 1), ("fct_p99_us", "p99", 1), ("fct_max_us", "max", 1),
           ("slowdown_p99", "slowdown p99", 2), ("first_steered_away_us", "steered away us", 2),
           ("off_99_us", "99 % off the link us", 1), ("goodput_recovered_us", "goodput back us", 1)]


def run_rows(transports: str | None = None, scale: str = "default") -> list[dict]:
    """Run the demo (seed `SEED`) and return its rows as ``demo.csv`` holds them (numbers, None for null)."""
    from mrc.emulator import demo, summary_table

    with tempfile.TemporaryDirectory(prefix="demo-table-") as d:
        summaries = demo.run_demo(d, seed=SEED, transports=transports or demo.DEFAULT_TRANSPORTS, scale=scale,
                                  plots_too=False, echo=lambda line: print(line, file=sys.stderr))
    _, rows = summary_table.rows(summaries)
    return rows


def save(rows: list[dict]) -> pathlib.Path:
    import pandas as pd

    from mrc.emulator import demo

    df = pd.DataFrame(rows)
    df.insert(1, "seed", SEED)
    return doccells.save(PAGE, LABEL, df.assign(status="ok"), {"scenario": "mrc demo", "seed": SEED,
                                                               "transports": demo.DEFAULT_TRANSPORTS.split(","),
                                                               "grid": {}, "sets": []}, keep_all=True)


def load() -> list[dict]:
    df = doccells.load(PAGE, LABEL)
    if df is None:
        raise SystemExit(f"no record of the demo (docs/cells/{PAGE}/{LABEL}.csv): run benchmarks/demo_table.py --doc")
    return [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in df.to_dict("records")]


def render(rows: list[dict]) -> str:
    from mrc.emulator import summary_table

    head = ["transport"] + [h for _, h, _ in COLUMNS]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        out.append("| " + " | ".join([f"`{r['transport']}`"] + [summary_table.fmt(r.get(k), d) for k, _, d in COLUMNS])
                   + " |")
    return "\n".join(out)


def values(rows: list[dict]) -> dict:
    """The numbers the page's prose may cite: ``demo/<transport>/<column>`` as the table prints them."""
    from mrc.emulator import summary_table

    out = {}
    for r in rows:
        for k, v in r.items():
            if k not in ("transport", "seed", "status"):
                out[f"demo/{r['transport']}/{k}"] = summary_table.fmt(v, 2 if "slowdown" in k else 1)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", default=None, help="page whose <!-- demo table --> block (and <!--v demo/...--> values) "
                    "to write")
    ap.add_argument("--check", default=None, metavar="PAGE", help="compare PAGE with the committed record (no run)")
    a = ap.parse_args(argv)
    if a.check:
        rows = load()
        bad = doccells.check_page(pathlib.Path(a.check), {"demo table": render(rows)}, values(rows))
        print("\n".join(bad) or f"{a.check}: the demo table agrees with its record")
        return 1 if bad else 0
    rows = run_rows()
    save(rows)
    rows = load()  # render what the record holds (as the check does)
    print(render(rows))
    print(json.dumps(values(rows), indent=1), file=sys.stderr)
    if a.doc:
        page = pathlib.Path(a.doc)
        docblocks.fill(page, {"demo table": render(rows)})
        page.write_text(doccells.fill_values(page.read_text(), values(rows), str(page)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
