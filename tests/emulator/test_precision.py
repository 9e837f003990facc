"""Numbers in the CSV files keep the precision of their quantity: no float noise, the same values up to it."""
from __future__ import annotations

import csv
import math

import numpy as np
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from mrc.emulator import precision, results
from tests.emulator.helpers import make, run

FINITE = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)


def test_the_rule_by_column_name():
    assert [precision.decimals(n) for n in ("fct_us", "t_us", "fct_us_p99", "failure0_off_99_us", "cell_s",
                                            "sim_wall_s", "delay_ns", "t_ms")] == [6, 6, 6, 6, 6, 6, 3, 9]
    assert [precision.decimals(n) for n in ("slowdown", "slowdown_p99", "goodput_gbps", "util_mean", "gpu_s_wasted",
                                            "status", "comm_share")] == [None] * 7


def test_float_noise_goes_and_whole_picoseconds_stay():
    assert repr(precision.value("fct_us_p99", 114.32061120000003)) == "114.320611"
    assert repr(precision.value("cell_s", 1.196656689000008)) == "1.196657"
    assert repr(precision.value("slowdown", 1.196656689000008)) == "1.19666"
    assert repr(precision.value("victim_gbps", 1234567.891)) == "1234570.0"
    ps = np.arange(0, 10**12, 987_654_321, dtype=np.int64)
    assert np.array_equal(precision.rounded("t_us", ps / 1e6), ps / 1e6)  # integer ps: bit for bit
    v = np.array([np.nan, np.inf, -np.inf, 0.0])
    assert np.array_equal(precision.rounded("x", v), v, equal_nan=True)
    assert precision.value("x", 3) == 3 and precision.value("x", True) is True and precision.value("x", "a") == "a"


@given(FINITE)
def test_significant_digits_are_those_of_a_correct_rounding(v):
    assert precision.value("slowdown", v) == float(f"{v:.{precision.SIGNIFICANT}g}")


@given(FINITE)
def test_microseconds_keep_six_decimals_and_move_by_at_most_one_tick(v):
    r = precision.value("fct_us", v)
    assert abs(r - v) <= 1e-6 * (1 + 1e-9) + abs(v) * 4e-16
    text = repr(r)
    assert "e" in text or len(text.split(".")[1]) <= 6


def test_a_runs_csvs_against_its_exact_parquet(tmp_path):
    """flows.csv holds flows.parquet's values rounded by the rule, and every real cell of every CSV file of a
    run with samples and a failure holds no more digits than its column's precision."""
    data = make(transport={"name": "mrc"}, workload={"kind": "permutation", "size_bytes": 300_000},
                failures=[{"kind": "link-down", "at_us": 5, "link": ["p0.t0.0", "p0.t1.0"]}],
                metrics_={"sample_us": 1.0})
    r, _, _ = run(data)
    results.write(r, tmp_path, plots_too=False)
    exact = pq.read_table(tmp_path / "flows.parquet").to_pydict()
    with open(tmp_path / "flows.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for k, row in enumerate(rows):
        for name, text in row.items():
            v = exact[name][k]
            if isinstance(v, float) and not math.isnan(v):
                assert float(text) == precision.value(name, v), (name, text, v)
    checked = 0
    for f in sorted(tmp_path.glob("*.csv")):
        with open(f, newline="") as fh:
            for row in csv.DictReader(fh):
                for name, text in row.items():
                    if "." not in text or not text.replace(".", "").replace("-", "").replace("e", "").isdigit():
                        continue
                    checked += 1
                    d = precision.decimals(name)
                    if d is not None:
                        assert len(text.split(".")[1].split("e")[0]) <= d, (f.name, name, text)
                    else:
                        digits = text.split("e")[0].lstrip("-").replace(".", "").strip("0")
                        assert len(digits) <= precision.SIGNIFICANT, (f.name, name, text)
    assert checked > 500
