"""benchmarks/localize_eval.py: the trials it builds, the confusion matrix it prints, and smaller cases of that
matrix run through the emulator (slow): a gray link under a heavy permutation reads gray, a dead link down, an
incast blames nothing, and a replay of a trial's saved inputs gives the live verdict."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def le():
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("localize_eval")
    finally:
        sys.path.remove(str(BENCH))


def test_every_kind_has_a_right_verdict_and_a_scenario(le):
    assert set(le.RIGHT) == set(le.KINDS)
    assert all(v <= set(le.VERDICTS) for v in le.RIGHT.values())
    for fabric in le.FABRICS:
        for kind in le.KINDS:
            data, hot = le.scenario_data(fabric, kind, 1001, 500.0)
            assert bool(data["failures"]) == (kind not in ("incast", "overload"))
            hosts = [h for w in data["workload"] for h in w.get("hosts", [])]
            assert len(hosts) == len(set(hosts))  # jobs on their own hosts
            if hot:  # the failure where the background runs (leaves 0-5), the hotspot on leaves 6-7
                f = data["failures"][0] if data["failures"] else None
                assert f is None or all(int(x.split(".")[2]) < 6 for x in (f.get("link") or [f["switch"]])
                                        if ".t0." in x)
    over, _ = le.scenario_data("4plane", "overload", 1000, 500.0)
    flows = over["workload"][0]["flows"]
    assert len(flows) == 4 * le.HOSTS and all(f["src"] != f["dst"] for f in flows)
    assert np.bincount([f["dst"] for f in flows]).tolist() == [4] * le.HOSTS  # every host receives four


def test_the_table_is_a_confusion_matrix(le):
    rows = [{"fabric": "2plane", "kind": "gray-1", "verdict": v, "right": v == "gray", "others_blamed": o,
             "ttl_us": t} for v, o, t in (("gray", [], 40.0), ("gray", [], 60.0), ("congestion", ["x"], None))]
    rows.append({"fabric": "2plane", "kind": "incast", "verdict": "nothing", "right": True, "others_blamed": [],
                 "ttl_us": None})
    text = le.tables(rows)
    assert "| gray-1 (gray) | 3 |  |  | 2 |  | 1 |  | 2/3 = 0.67" in text
    assert "| 1/3 | 50 |" in text  # another element blamed in one trial; median TTL of the two found
    assert "| incast (congestion / nothing) | 1 |" in text and "1/1 = 1.00" in text


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gray-5", "link-down", "incast"])
def test_smaller_cases_of_the_matrix(le, kind, tmp_path):
    r = le.trial("4plane", kind, 3000, 600.0, keep=str(tmp_path))
    assert r["right"], r
    if kind == "incast":
        assert not r["others_blamed"]
    (replayed,) = le.replay(str(tmp_path))
    assert replayed["verdict"] == r["verdict"] and replayed["others_blamed"] == r["others_blamed"]
