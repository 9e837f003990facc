"""The docs' numbers reproduce: every figure of docs/results.md, docs/validation.md and the demo table of
docs/emulator.md is rendered from committed cell records (benchmarks/doccells.py), and a cell run again gives
the recorded figures. A change that moves a number fails here until the page is regenerated
(``python benchmarks/results.py --doc docs/results.md``, ``validation.py --doc docs/validation.md``,
``demo_table.py --doc docs/emulator.md``)."""
from __future__ import annotations

import re

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"

MACHINE_PATH = re.compile("|".join(["/" + "work/", "/" + "root/", "/" + "tmp/"]))  # paths of a machine


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        yield {n: importlib.import_module(n) for n in ("doccells", "results", "validation", "demo_table")}
    finally:
        sys.path.remove(str(BENCH))


# ---------------------------------------------------------------- the pages against their records (no simulation)


def test_results_page_agrees_with_its_records(bench):
    results = bench["results"]
    blocks, J, ctx = results.render()
    assert results.check(ROOT / "docs/results.md", blocks, J) == []
    # every table of the page is rendered from records, or named as not re-run / not run in the records block
    assert set(blocks) | set(ctx.missing) >= set(results.BLOCKS_ORDER) | {"table headlines", "records"}
    assert {"table 5", "table 10 allreduce"} <= set(blocks) - set(ctx.missing)
    for b in ctx.missing:
        assert f"| {b} | **not" in blocks["records"]
    assert len(bench["doccells"].inline_keys((ROOT / "docs/results.md").read_text())) >= 5  # prose generated too


def test_a_part_without_records_is_left_out_and_named(bench, tmp_path, monkeypatch):
    """A table whose sweep has no records is not rendered: the page keeps an earlier table (said so) or says
    "not run"; its experiment's headline is the earlier page's, marked."""
    results, doccells = bench["results"], bench["doccells"]
    for f in ("r5-incast-victim.csv", "r5-incast-victim.json"):
        (tmp_path / "results").mkdir(exist_ok=True)
        (tmp_path / "results" / f).write_bytes((doccells.DIR / "results" / f).read_bytes())
    monkeypatch.setattr(doccells, "DIR", tmp_path)
    blocks, J, ctx = results.render()
    assert "table 5" in blocks and "table 5" not in ctx.missing and "table 1" not in blocks
    assert ctx.missing["table 1"] == "r1-k16-permutation" and ctx.missing["table 7"] == "r2-k8-allreduce"
    assert blocks["routing 4"] == results.NOT_RUN  # a new table: says it was not run
    assert "| table 1 | **not re-run on this code**" in blocks["records"]
    assert "| table 5 | records" in blocks["records"]
    head = {line.split(" | ")[0].strip("| "): line for line in blocks["table headlines"].splitlines()[2:]
            if line.startswith("| ")}
    assert "previous code, not re-run" in head["1"] and "previous code" not in head["5"]
    assert set(J) >= {"5"} and "1" not in J


def test_validation_page_agrees_with_its_records(bench):
    v = bench["validation"]
    blocks, vals = v.render()
    assert bench["doccells"].check_page(ROOT / "docs/validation.md", blocks, vals) == []


def test_demo_table_agrees_with_its_record(bench):
    assert bench["demo_table"].main(["--check", str(ROOT / "docs/emulator.md")]) == 0


def test_every_records_file_has_its_definition_and_no_machine_paths(bench):
    files = sorted((ROOT / "docs/cells").rglob("*.csv"))
    assert len(files) >= 5
    for f in files:
        assert f.with_suffix(".json").is_file(), f
        text = f.read_text()
        assert not MACHINE_PATH.search(text), f


# ---------------------------------------------------------------- cells run again (the cheapest of each page)


def test_a_results_cell_reproduces(bench):
    """Experiment 5, `roce-ecmp` seed 1 (about a second)."""
    r = bench["doccells"].reproduce("results", "r5-incast-victim", "roce-ecmp", 1, extras=bench["results"].x_r5)
    assert r["differ"] == []


def test_a_validation_cell_reproduces(bench):
    """k=8, hashed-entropy spraying, seed 1 (a few seconds)."""
    r = bench["doccells"].reproduce("validation", "fattree-k8-permutation", bench["validation"].HASHED, 1)
    assert r["differ"] == []


def test_the_demo_reproduces_for_one_transport(bench):
    dt = bench["demo_table"]
    rec = {r["transport"]: r for r in dt.load()}
    row = dt.run_rows("roce-ecmp")[0]
    assert {k: v for k, v in row.items()} == {k: v for k, v in rec["roce-ecmp"].items() if k not in ("seed", "status")}


@pytest.mark.slow
@pytest.mark.parametrize("page,label,transport,seed,point", [
    ("results", "r5-incast-victim", "roce-ecmp:qps=8", 1, None),
    ("results", "r10-allreduce-1x400g", "roce-ecmp:qps=16", 1, {"workload.size_bytes": 4194304}),
    ("results", "r7-t1-reboot-routing", "roce-ecmp", 1, {"switch.route_converge_us": 1000.0}),
    ("validation", "fattree-k16-permutation", "spray:entropy=hashed", 1, None),
])
def test_a_larger_cell_reproduces(bench, page, label, transport, seed, point):
    extras = bench["results"].EXTRAS.get(label.replace("-routing", "")) if page == "results" else None
    r = bench["doccells"].reproduce(page, label, transport, seed, point, extras=extras)
    assert r["differ"] == []
