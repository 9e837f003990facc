"""Results directory, summary keys, determinism, and the `mrc emu` commands."""
from __future__ import annotations

import csv
import json

import numpy as np

from mrc.cli import main
from mrc.emulator import metrics
from mrc.emulator import run as emu_run
from tests.emulator.helpers import make, run

SCEN = make(workload={"kind": "permutation", "size_bytes": 200_000},
            failures=[{"kind": "link-down", "at_us": 5.0, "duration_us": 20.0, "link": ["p0.t0.0", "p0.t1.1"]}],
            transport={"lossless": False})

LISTED = {
    "scenario": None, "seed": None, "transport": None, "version": None,
    "fct_us": {"p50", "p90", "p99", "p999", "max", "mean"},
    "slowdown": {"p50", "p99", "p999", "max"},
    "flows": {"total", "completed"},
    "cct_us": None,
    "sim": {"events", "packet_hops", "wall_s", "sim_time_us", "peak_rss_mb"},
}


def test_same_seed_same_numbers_bit_for_bit():
    r1, s1, _ = run(SCEN)
    r2, s2, _ = run(SCEN)
    assert metrics.comparable(s1) == metrics.comparable(s2)
    assert np.array_equal(r1.flows, r2.flows)
    for k in r1.samples:
        assert np.array_equal(r1.samples[k], r2.samples[k])
    other = dict(SCEN, seed=2)
    r3, s3, _ = run(other)
    assert not np.array_equal(r1.flows["t_send_done"], r3.flows["t_send_done"])


def test_results_directory(tmp_path):
    res = emu_run(dict(SCEN, metrics={"trace_flows": [0]}), out=tmp_path / "r")
    out = tmp_path / "r"
    s = json.loads((out / "summary.json").read_text())
    for k, sub in LISTED.items():
        assert k in s
        if sub is not None:
            assert set(s[k]) == sub, k
    assert s["transport"] == "roce-ecmp" and s["seed"] == 1 and s["flows"]["total"] == 16
    assert s == json.loads(json.dumps(res.summary, default=float))
    assert s["cct_us"] is None
    rows = list(csv.DictReader(open(out / "flows.csv")))
    assert len(rows) == 16
    assert {"flow", "src", "dst", "size_bytes", "start_us", "fct_us", "slowdown", "status", "reason",
            "retransmissions", "ideal_fct_us", "recv_done_us"} <= set(rows[0])
    ts = list(csv.DictReader(open(out / "timeseries.csv")))
    assert ts and "util_t0_up_mean" in ts[0] and "queue_t0_down_max_bytes" in ts[0] and "failure0_packets" in ts[0]
    assert list(csv.DictReader(open(out / "failures.csv")))[0]["kind"] == "link-down"
    assert list(csv.DictReader(open(out / "trace.csv")))
    assert {r["group"] for r in csv.DictReader(open(out / "links.csv"))} == {"host_up", "t0_down", "t0_up",
                                                                             "t1_down"}
    for png in ("fct_cdf.png", "slowdown_by_size.png", "utilisation.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    try:
        import pyarrow.parquet as pq
    except ImportError:
        assert not (out / "flows.parquet").exists()
    else:
        assert pq.read_table(out / "flows.parquet").num_rows == 16


def test_collective_times_in_summary(tmp_path):
    res = emu_run(make(workload={"kind": "allreduce-ring", "size_bytes": 100_000, "groups": 2}), plots=False)
    assert len(res.summary["cct_us"]) == 2 and all(c > 0 for c in res.summary["cct_us"])
    assert res.summary["collectives"][0]["completed"]


def _toml(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('seed = 3\n[topology]\nkind = "leaf-spine"\nhosts_per_leaf = 4\nleaves = 4\nspines = 4\n'
                 'link_gbps = 100\n[transport]\nname = "roce-ecmp"\n[workload]\nkind = "permutation"\n'
                 'size_bytes = 50000\n')
    return p


def test_cli_run(tmp_path, capsys):
    p = _toml(tmp_path)
    assert main(["emu", "run", str(p), "--out", str(tmp_path / "o"), "--set", "switch.queue_bytes=80000",
                 "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "roce-ecmp" in out and "16/16" in out and "packet-hops" in out
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["seed"] == 3 and s["config"]["switch"]["queue_bytes"] == 80000
    assert not (tmp_path / "o" / "fct_cdf.png").exists()


def test_cli_errors_exit_2_naming_the_key(tmp_path, capsys):
    p = _toml(tmp_path)
    assert main(["emu", "run", str(p), "--set", "switch.bufer=1", "--out", str(tmp_path / "o")]) == 2
    assert "switch.bufer" in capsys.readouterr().err
    assert main(["emu", "run", "no-such-scenario"]) == 2


def test_cli_compare(tmp_path, capsys):
    p = _toml(tmp_path)
    out = tmp_path / "c"
    assert main(["emu", "compare", str(p), "--transports", "roce-ecmp,roce-ecmp:lossless=false:dcqcn=false",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "roce-ecmp:lossless=false:dcqcn=false" in text
    rows = list(csv.DictReader(open(out / "compare.csv")))
    assert [r["transport"] for r in rows] == ["roce-ecmp", "roce-ecmp:lossless=false:dcqcn=false"]
    assert (out / "fct_cdf.png").exists() and (out / "roce-ecmp" / "summary.json").exists()
    cmp = json.loads((out / "compare.json").read_text())
    assert set(cmp) == {"roce-ecmp", "roce-ecmp:lossless=false:dcqcn=false"}
    assert main(["emu", "compare", str(p), "--transports", "roce-ecmp:oops"]) == 2


def test_cli_list(capsys):
    assert main(["emu", "list"]) == 0
    out = capsys.readouterr().out
    assert "fattree-k16-permutation" in out and "incast" in out


def test_progress_bar_runs(capsys):
    res = emu_run(make(workload={"kind": "permutation", "size_bytes": 20_000}), progress=True)
    assert res.summary["flows"]["completed"] == 16
    assert "flows 16/16" in capsys.readouterr().out
