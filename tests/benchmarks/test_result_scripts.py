"""The pure-Python parts of the scripts that write docs/results.md and docs/protocol.md's ablation
(`benchmarks/results.py`, `benchmarks/ablation.py`): what they keep, mark and refuse."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def scripts():
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("results"), importlib.import_module("ablation")
    finally:
        sys.path.remove(str(BENCH))


def test_as_specified_turns_every_extension_off_and_is_a_row_of_its_own(scripts):
    results, ablation = scripts
    assert ablation.SPECIFIED == "mrc:" + ":".join(k for k, _ in ablation.OFF)
    for key in ("rack=false", "rto_retire=false", "rev_rotate=false", "rto_reprobe=false", "always_skip_marks=0",
                "probe_successes=1"):
        assert key in ablation.SPECIFIED.split(":")
    assert results.SPECIFIED in results.ALL and results.SPECIFIED not in results.T3
    assert "| mrc as specified |" in results.table(["transport", "x"], [[results.SPECIFIED, 1]])


def test_a_partial_run_keeps_the_other_experiments_headlines(scripts, tmp_path):
    results, _ = scripts
    old = {"seeds": {"3": "1-5", "5": "1-10"},
           "headlines": {"3": {"question": "q3", "unit": "us", "values": {"mrc": {"median": 39.2, "ci_low": 39.1,
                                                                                   "ci_high": 46.7}}},
                         "5": {"question": "q5", "unit": "Gb/s", "values": {"mrc": {"median": 92.3, "ci_low": 92.2,
                                                                                     "ci_high": 92.3}}}}}
    (tmp_path / "results.json").write_text(json.dumps(old))
    heads = results.earlier_heads(tmp_path / "results.json", skip=[5])
    assert list(heads) == [3]  # experiment 5 is being re-run: its old headline is dropped
    assert heads[3]["better"] == "lower" and heads[3]["seeds"] == "1-5"
    assert heads[3]["values"]["mrc"] == (39.2, 39.1, 46.7)
    assert results.earlier_heads(tmp_path / "results.json", skip=[])[5]["better"] == "higher"  # a rate
    assert results.earlier_heads(tmp_path / "missing.json", skip=[]) == {}


def test_the_headline_compares_mrc_with_the_alternatives_not_with_itself(scripts):
    results, _ = scripts
    ctx = results.Ctx(None, Path("."), "1-3", Path("."))
    ctx.heads[1] = {"question": "q", "unit": "us", "better": "lower", "seeds": "1-3",
                    "values": {"mrc": (200.0, 190.0, 210.0), results.SPECIFIED: (100.0, 90.0, 110.0),
                               "spray": (300.0, 290.0, 310.0)}}
    text = results.headlines(ctx)
    assert "`spray` 300" in text and "as specified" not in text


def test_the_ablation_marks_a_variant_whose_interval_leaves_mrcs(scripts):
    _, ablation = scripts
    ref = (100.0, 99.0, 101.0)
    assert ablation.cell_text(np.array([100.0, 100.5, 99.5]), ref).endswith("]")
    assert ablation.cell_text(np.array([300.0, 310.0, 305.0, 302.0]), ref).endswith(" *")
    assert ablation.cell_text(np.array([np.nan]), ref) == "-"


def test_the_ablation_refuses_a_page_without_its_block(scripts, tmp_path):
    _, ablation = scripts
    page = tmp_path / "p.md"
    page.write_text("no block here\n")
    with pytest.raises(SystemExit, match="ablation-tables"):
        ablation.fill_doc(page, "table")
    page.write_text("a\n<!-- ablation-tables -->\nold\n<!-- /ablation-tables -->\nb\n")
    ablation.fill_doc(page, "new")
    assert page.read_text() == "a\n<!-- ablation-tables -->\nnew\n<!-- /ablation-tables -->\nb\n"


def test_the_changes_between_two_regenerations_name_what_moved():
    sys.path.insert(0, str(BENCH))
    try:
        rc = importlib.import_module("results_changes")
    finally:
        sys.path.remove(str(BENCH))

    def s(m, lo, hi):
        return {"median": m, "ci_low": lo, "ci_high": hi, "n": 10}
    old = {"1": {"mrc": {"fct_us_p99": s(200.0, 199.0, 201.0), "fct_us_max": s(210.0, 209.0, 211.0)},
                 "reps": {"fct_us_p99": s(320.0, 310.0, 330.0)}}, "seeds": {"1": "1-10"}}
    new = {"1": {"mrc": {"fct_us_p99": s(201.0, 199.5, 202.0), "fct_us_max": s(210.0, 209.0, 211.0)},
                 "reps": {"fct_us_p99": s(210.0, 205.0, 215.0)}, "mrc as specified": {"fct_us_p99": s(1, 1, 1)}}}
    lines = rc.changes(old, new)
    assert lines[0] == "experiment 1"
    assert any(x.startswith("  reps fct_us_p99: 320 [310, 330] -> 210 [205, 215]  (-34.4 %) *") for x in lines)
    assert any(x.startswith("  mrc fct_us_p99:") and not x.endswith("*") for x in lines)  # intervals overlap
    assert "  mrc as specified: added" in lines
    assert not any("fct_us_max" in x for x in rc.changes(old, new, min_change=1.0))  # unchanged: left out
