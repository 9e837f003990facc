"""The committed cells behind the docs' figures, and the generated numbers in the pages' prose.

Every number of docs/results.md, docs/validation.md and the demo table of docs/emulator.md comes from a
generator script (`results.py`, `validation.py`, `demo_table.py`) that runs its sweeps (resumed in ``runs/``,
not committed) and keeps, of each cell, the figures its tables read: the sweep table's columns `keep` selects,
plus the generator's own per-cell figures (``x_*``, computed from the cell's files). They are written to
``docs/cells/<page>/<sweep>.csv``, with the sweep's definition (scenario, transports, seeds, grid) in
``<sweep>.json``, and the page is rendered from these records only. So:

- ``python benchmarks/<script>.py --check`` renders the page again from the committed records (no simulation)
  and fails if the page differs: a page edited by hand, or rendering code that changed, is caught at once;
- `reproduce` re-runs one recorded cell exactly as its sweep ran it (`mrc.emulator.sweeps.cell.run_cell`) and
  lists the figures that moved: code that changes a number is caught (tests/benchmarks/test_docs_reproduce.py
  re-runs the cheapest cell of each page; the slower ones are marked ``slow``).

Numbers in prose are generated too: ``<!--v KEY-->text<!--/v-->`` in a page is replaced by the value KEY
names in the generator's values (`fill_values`), the same text as the tables give it (`fmt_value`).
"""
from __future__ import annotations

import json
import math
import pathlib
import re
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
DIR = ROOT / "docs" / "cells"

KEEP_EXACT = ("cell", "transport", "seed", "status", "sim_wall_s", "sim_sim_time_us", "key")
KEEP_PREFIX = ("fct_us_", "slowdown_", "flows_", "collectives_", "cct_us_", "victim", "failure0_", "counters_",
               "outcome_", "routing_", "x_")
# figures a re-run may change without the code changing (the machine's); the cell key changes with the code
NOT_COMPARED = ("sim_wall_s", "key", "cell")


def keep_columns(df, grid_keys=()) -> list[str]:
    return [c for c in df.columns if c in KEEP_EXACT or c in grid_keys or c.startswith(KEEP_PREFIX)]


def path(page: str, label: str) -> pathlib.Path:
    return DIR / page / f"{label}.csv"


def save(page: str, label: str, df, meta: dict, keep_all: bool = False) -> pathlib.Path:
    """Write the records of sweep `label` (its table `df`, extra columns included; every column with `keep_all`)
    and its definition `meta` (``scenario``, ``transports``, ``seeds``, ``grid``)."""
    grid = list(meta.get("grid") or {})
    p = path(page, label)
    p.parent.mkdir(parents=True, exist_ok=True)
    cols = list(df.columns) if keep_all else keep_columns(df, grid)
    out = df[cols].sort_values(["seed", "cell"]) if "cell" in cols else df[cols]
    out.to_csv(p, index=False, float_format=None)
    p.with_suffix(".json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return p


def load(page: str, label: str):
    """The committed records of sweep `label` as a DataFrame (``transport`` ordered as the sweep's transports),
    with its definition in ``attrs["meta"]``; None if there are none."""
    import pandas as pd

    p = path(page, label)
    if not p.is_file():
        return None
    meta = json.loads(p.with_suffix(".json").read_text())
    df = pd.read_csv(p, dtype=str, keep_default_na=False)
    for c in df.columns:  # numbers back exactly as written (Python's float() reads repr round trip)
        df[c] = _column(df[c].tolist())
    df.attrs["meta"] = meta
    return df


def _column(values: list[str]):
    """A CSV column as numbers when every non-empty cell is one (ints stay ints unless a cell is empty), else
    text (empty cells None)."""
    try:
        nums = [float(v) if v != "" else float("nan") for v in values]
    except ValueError:
        return [v if v != "" else None for v in values]
    if all(v != "" and v.lstrip("-").isdigit() for v in values):
        return [int(v) for v in values]
    return nums


def same(a, b) -> bool:
    """Two recorded values are the same figure (NaN equals NaN; numbers as the CSV keeps them)."""
    fa, fb = _num(a), _num(b)
    if fa is not None and fb is not None:
        return (math.isnan(fa) and math.isnan(fb)) or fa == fb
    return str(a) == str(b)


def _num(v):
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float, np.integer, np.floating)):
        return float(v)
    if v is None:
        return float("nan")
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def reproduce(page: str, label: str, transport: str, seed: int, point: dict | None = None, extras=None) -> dict:
    """Re-run the recorded cell (`label`, `transport`, `seed`, grid `point`) as its sweep did and compare every
    recorded figure but the machine's (`NOT_COMPARED`). `extras(row, directory) -> dict` computes the
    generator's ``x_*`` figures from the cell's results. Returns {"row": the new row, "differ": [(column,
    recorded, now), ...], "cell_s": seconds}."""
    import pandas as pd

    from mrc.emulator.sweeps import cell as C
    from mrc.emulator.sweeps import spec as SP

    rec = load(page, label)
    if rec is None:
        raise FileNotFoundError(f"no committed records for {page}/{label}")
    meta = rec.attrs["meta"]
    point = dict(point or {})
    sel = (rec["transport"] == transport) & (rec["seed"] == seed)
    for k, v in point.items():
        sel &= rec[k].astype(str) == str(v)
    if sel.sum() != 1:
        raise KeyError(f"{page}/{label}: {int(sel.sum())} recorded cells for {transport} seed {seed} {point}")
    old = rec[sel].iloc[0].to_dict()
    sw = SP.make(meta["scenario"], [transport], [seed], grid={k: [v] for k, v in point.items()},
                 sets=meta.get("sets") or ())
    c = sw.cells(SP.code_version())[0]
    res = C.run_cell({"data": c.data, "name": sw.name, "base_dir": str(sw.base_dir) if sw.base_dir else None,
                      "files": sw.files(), "timeout_s": None, "code_version": None, "keep_files": True})
    row = {"cell": c.index, "key": c.key, "transport": transport, **point, "seed": seed, **res["row"]}
    if row["status"] != "ok":
        raise RuntimeError(f"{page}/{label} {transport} seed {seed}: {row['status']}: {row['error']}")
    if extras is not None:
        with tempfile.TemporaryDirectory(prefix="doccell-") as d:
            for name, blob in res["files"].items():
                (pathlib.Path(d) / name).write_bytes(blob)
            row.update(extras(row, pathlib.Path(d)))
    new = pd.DataFrame([row])
    differ = []
    for col, was in old.items():
        if col in NOT_COMPARED or col in point:
            continue
        now = new[col].iloc[0] if col in new else None
        if not same(was, now):
            differ.append((col, was, now))
    return {"row": row, "differ": differ, "cell_s": row.get("cell_s")}


# ---------------------------------------------------------------- generated numbers in prose

_V = re.compile(r"<!--v (?P<key>[^>]*?)-->(?P<text>.*?)<!--/v-->", re.S)


def fill_values(text: str, values: dict, where: str = "page") -> str:
    """Replace the text of every ``<!--v KEY-->...<!--/v-->`` by ``values[KEY]``; a KEY the generator does not
    know is an error naming it (a page that cites a figure nobody computes)."""
    missing = []

    def sub(m):
        key = m.group("key").strip()
        if key not in values:
            missing.append(key)
            return m.group(0)
        return f"<!--v {key}-->{values[key]}<!--/v-->"

    out = _V.sub(sub, text)
    if missing:
        raise SystemExit(f"{where}: no generated value for {', '.join(repr(k) for k in sorted(set(missing)))}")
    return out


def check_page(page: pathlib.Path, blocks: dict, values: dict) -> list[str]:
    """What differs between `page` and a rendering: each generated block (``<!-- NAME -->`` ... ``<!-- /NAME
    -->``) and each inline value; one line per difference (the first differing line of a block)."""
    text = pathlib.Path(page).read_text()
    bad = []
    for name, body in blocks.items():
        m = re.search(rf"<!-- {re.escape(name)} -->\n(.*?)\n<!-- /{re.escape(name)} -->", text, re.S)
        if m is None:
            bad.append(f"{page}: no '<!-- {name} -->' block")
        elif m.group(1) != body:
            a, b = m.group(1).splitlines(), body.splitlines()
            k = next((k for k in range(max(len(a), len(b))) if k >= len(a) or k >= len(b) or a[k] != b[k]), 0)
            bad.append(f"{page}: block '{name}' differs from its records, line {k + 1}:\n  page:    "
                       f"{a[k] if k < len(a) else '(none)'}\n  records: {b[k] if k < len(b) else '(none)'}")
    for key, have, want in stale_values(text, values):
        bad.append(f"{page}: value {key!r} reads {have!r}, its records give {want!r}")
    return bad


def inline_keys(text: str) -> list[str]:
    return [m.group("key").strip() for m in _V.finditer(text)]


def stale_values(text: str, values: dict) -> list[tuple[str, str, str]]:
    """(key, on the page, generated) of every inline value that differs."""
    out = []
    for m in _V.finditer(text):
        key = m.group("key").strip()
        want = values.get(key)
        if want is None or m.group("text") != want:
            out.append((key, m.group("text"), want))
    return out
