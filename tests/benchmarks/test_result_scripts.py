"""The pure-Python parts of the scripts that write docs/results.md and docs/protocol.md's ablation
(`benchmarks/results.py`, `benchmarks/ablation.py`): what they keep, mark and refuse."""
from __future__ import annotations

import importlib
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


def test_generated_values_and_their_expressions(scripts):
    results, _ = scripts
    J = {"1": {"mrc": {"fct_us_p99": {"median": 193.1, "ci_low": 192.9, "ci_high": 193.2, "n": 10}},
               "roce-ecmp": {"fct_us_p99": {"median": 1029.0, "ci_low": 996.1, "ci_high": 1047.0, "n": 10}}},
         "seeds": {"1": "1-10"}}
    V = results.Values(results.values(J))
    assert V["1/mrc/fct_us_p99"] == "193.1 [192.9, 193.2]" and V["1/mrc/fct_us_p99/m"] == "193.1"
    assert V["1/roce-ecmp/fct_us_p99/m0"] == "1,029"  # a count's form
    assert V["1/roce-ecmp/fct_us_p99 / 1/mrc/fct_us_p99"] == "5.3x"
    assert V["1/roce-ecmp/fct_us_p99 vs 1/mrc/fct_us_p99"] == "+433 %"
    assert "1/spray/fct_us_p99" not in V and V.get("1/spray/fct_us_p99") is None


def test_a_page_is_written_and_checked_through_its_blocks_and_values(scripts, tmp_path):
    results, _ = scripts
    sys.path.insert(0, str(BENCH))
    try:
        doccells = importlib.import_module("doccells")
    finally:
        sys.path.remove(str(BENCH))
    J = {"1": {"mrc": {"fct_us_p99": {"median": 193.1, "ci_low": 192.9, "ci_high": 193.2, "n": 10}}}}
    page = tmp_path / "p.md"
    page.write_text("a\n<!-- table 1 -->\nold\n<!-- /table 1 -->\np99 <!--v 1/mrc/fct_us_p99/m-->0<!--/v--> us\n")
    results.write_page(page, {"table 1": "| x |"}, J)
    assert page.read_text() == ("a\n<!-- table 1 -->\n| x |\n<!-- /table 1 -->\n"
                                "p99 <!--v 1/mrc/fct_us_p99/m-->193.1<!--/v--> us\n")
    assert results.check(page, {"table 1": "| x |"}, J) == []
    J["1"]["mrc"]["fct_us_p99"]["median"] = 200.0  # the records moved: the page is stale
    bad = results.check(page, {"table 1": "| y |"}, J)
    assert len(bad) == 2 and "block 'table 1'" in bad[0] and "'1/mrc/fct_us_p99/m' reads '193.1'" in bad[1]
    page.write_text("<!--v 9/nothing-->1<!--/v-->")
    with pytest.raises(SystemExit, match="no generated value for '9/nothing'"):
        doccells.fill_values(page.read_text(), results.Values(results.values(J)))


def test_the_headline_compares_mrc_with_the_alternatives_not_with_itself(scripts):
    results, _ = scripts
    ctx = results.Ctx(None, (), {}, Path("."), Path("."))
    ctx.heads[1] = {"question": "q", "unit": "us", "better": "lower", "seeds": "1-3",
                    "values": {"mrc": (200.0, 190.0, 210.0), results.SPECIFIED: (100.0, 90.0, 110.0),
                               "spray": (300.0, 290.0, 310.0)}}
    text = results.headlines(ctx)
    assert "`spray` 300" in text and "as specified" not in text
    # the RoCE column is the best RoCE configuration: 8 QPs when they do better
    ctx.heads[1]["values"].update({"roce-ecmp": (900.0, 880.0, 950.0), results.QP8: (600.0, 580.0, 640.0)})
    assert "`roce-ecmp:qps=8` 600" in results.headlines(ctx)


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
