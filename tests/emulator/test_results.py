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


def test_every_run_prints_and_keeps_its_routing_repair_defaults(tmp_path, capsys):
    """The two routing delays decide how long ECMP traffic meets a dead link: printed before the run (the header
    line) and kept in summary.json (and so in a sweep's table, `routing_*`), the defaults and any override."""
    from mrc.emulator.sweeps.cell import flatten

    p = _toml(tmp_path)
    assert main(["emu", "run", str(p), "--out", str(tmp_path / "o"), "--no-plots"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("s (roce-ecmp, seed 3): 16 hosts") and "1,000 us at the switches next to it" in first
    assert "100,000 us at every other switch (switch.route_converge_us)" in first
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["routing"] == {"route_detect_us": 1000.0, "route_converge_us": 100000.0}
    assert main(["emu", "run", str(p), "--out", str(tmp_path / "o2"), "--no-plots",
                 "--set", "switch.route_converge_us=2000", "--set", "switch.route_detect_us=10"]) == 0
    assert "10 us at the switches next to it" in capsys.readouterr().out.splitlines()[0]
    s2 = json.loads((tmp_path / "o2" / "summary.json").read_text())
    assert s2["routing"] == {"route_detect_us": 10.0, "route_converge_us": 2000.0}
    row = flatten(s2)
    assert row["routing_route_detect_us"] == 10.0 and row["routing_route_converge_us"] == 2000.0


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


def test_compare_csv_holds_numbers_and_the_screen_keeps_its_formatting(tmp_path, capsys):
    p = _toml(tmp_path)
    out = tmp_path / "c"
    assert main(["emu", "compare", str(p), "--transports", "roce-ecmp,mrc", "--out", str(out), "--no-plots"]) == 0
    assert "16/16" in capsys.readouterr().out
    rows = list(csv.DictReader(open(out / "compare.csv")))
    for r in rows:
        assert int(r["flows_done"]) == int(r["flows_total"]) == 16
        for k in ("fct_p50_us", "fct_p99_us", "fct_max_us", "slowdown_p50", "slowdown_p99"):
            float(r[k])  # a number, not "2,137.5" or "-"
        assert "," not in r["fct_max_us"] and "cct_max_us" not in r  # no collectives: no such column


def test_run_takes_a_transport_spec_and_names_its_directory(tmp_path, capsys, monkeypatch):
    p = _toml(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["emu", "run", str(p), "--transport", "roce-ecmp:lossless=false,dcqcn=false", "--no-plots"]) == 0
    d = tmp_path / "runs" / "s" / "roce-ecmp_lossless-false_dcqcn-false" / "seed3"
    cfg = json.loads((d / "summary.json").read_text())["config"]["transport"]
    assert cfg == {"name": "roce-ecmp", "lossless": False, "dcqcn": False}
    assert str(d.relative_to(tmp_path)) in capsys.readouterr().out
    assert main(["emu", "run", str(p), "--transport", "mrc", "--seed", "4", "--no-plots"]) == 0
    assert (tmp_path / "runs" / "s" / "mrc" / "seed4" / "ev_events.csv").exists()
    assert main(["emu", "run", str(p), "--transport", "roce-ecmp:oops"]) == 2
    assert "--transport" in capsys.readouterr().err


def test_a_run_never_keeps_an_earlier_runs_files(tmp_path):
    p = _toml(tmp_path)
    out = tmp_path / "o"
    assert main(["emu", "run", str(p), "--transport", "mrc", "--out", str(out)]) == 0
    assert (out / "fct_cdf.png").exists() and (out / "ev_events.csv").exists()
    (out / "notes.txt").write_text("mine")
    assert main(["emu", "run", str(p), "--out", str(out), "--no-plots"]) == 0  # roce-ecmp, no plots
    assert not (out / "fct_cdf.png").exists() and not (out / "ev_events.csv").exists()
    assert json.loads((out / "summary.json").read_text())["transport"] == "roce-ecmp"
    assert (out / "notes.txt").read_text() == "mine"  # not ours: left alone


def test_tables_show_victim_job_and_reroute_columns_when_the_scenario_has_them(tmp_path, capsys):
    p = tmp_path / "v.toml"
    p.write_text('seed = 2\n[topology]\nkind = "leaf-spine"\nhosts_per_leaf = 4\nleaves = 4\nspines = 4\n'
                 'link_gbps = 100\n[transport]\nname = "mrc"\n'
                 '[[workload]]\nkind = "incast"\nhosts = [0, 1, 2, 3, 4, 5, 6, 7]\nsize_bytes = 100000\n'
                 'senders = 4\nvictim_src = 6\nvictim_dst = 1\nvictim_size_bytes = 200000\n'
                 '[[workload]]\nkind = "permutation"\nhosts = [8, 9, 10, 11, 12, 13, 14, 15]\nsize_bytes = 100000\n'
                 '[[failures]]\nkind = "link-down"\nat_us = 3\nlink = ["p0.t0.0", "p0.t1.1"]\n'
                 '[[failures]]\nkind = "link-down"\nat_us = 4\nlink = ["p0.t0.2", "p0.t1.2"]\n')
    out = tmp_path / "c"
    assert main(["emu", "compare", str(p), "--transports", "mrc,spray", "--out", str(out), "--no-plots"]) == 0
    text = capsys.readouterr().out
    for col in ("victim Gb/s", "CCT max us", "steered away us", "99% off us", "per job:", "reroute per failure:"):
        assert col in text, col
    rows = list(csv.DictReader(open(out / "compare.csv")))
    assert float(rows[0]["victim_gbps"]) > 0 and float(rows[0]["cct_max_us"]) > 0
    s = json.loads((out / "mrc" / "summary.json").read_text())
    assert [j["kind"] for j in s["jobs"]] == ["incast", "permutation"]
    assert len(s["victims"]) == 1 and s["victims"][0]["src"] == 6 and s["victims"][0]["dst"] == 1
    assert json.loads((out / "compare.json").read_text())["spray"]["victims"][0]["gbps"] > 0


def test_a_cold_start_says_it_is_compiling_and_for_how_long(tmp_path, monkeypatch):
    from mrc.emulator import coldstart

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "key"))
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    said = []
    c = coldstart.Compiling(said.append)
    assert c.cold and "compiling" in said[0] and coldstart.DEFAULT_ESTIMATE in said[0]
    coldstart.record(200.0)  # a whole compile: the next cold start quotes it
    said.clear()
    assert not coldstart.Compiling(said.append).cold and not said
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "other-key"))
    coldstart.Compiling(said.append)
    assert "3.3 minutes" in said[0]


def test_the_emu_command_imports_only_what_it_runs(tmp_path):
    import subprocess
    import sys

    code = ("import sys\nfrom mrc.cli import main\n"
            f"main(['emu', 'run', {str(_toml(tmp_path))!r}, '--out', {str(tmp_path / 'o')!r}, '--no-plots'])\n"
            "print(sorted(m for m in ('trio', 'mrc.conformance', 'mrc.io', 'scapy', 'pandas', 'scipy.linalg',"
            " 'mrc.ctl.controller', 'mrc.api.device')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"  # flows.parquet is written without pandas, too


def test_write_csv_writes_what_the_cell_by_cell_conversion_writes(tmp_path):
    """`results.write_csv` converts numeric columns in one call; the bytes are those of writing each value
    through `results._clean` (NaN and None: an empty cell) and `precision.value` (the digits of the column's
    quantity), for every column kind a run writes."""
    import pytest

    from mrc.emulator import precision, results

    cols = {"f": np.array([0.1, np.nan, 1e300, -0.0, np.inf, 3.0]), "f_nonan": np.linspace(0, 1, 6),
            "t_us": np.array([114.32061120000003, 1e-7, 2.5e6, np.nan, 0.0, 1 / 3]),
            "f32": np.array([0.1, 2, 3, 4, 5, np.nan], np.float32), "i": np.arange(-3, 3),
            "u": np.arange(6, dtype=np.uint8), "b": np.array([True, False] * 3),
            "s": np.array(["a", "b,c", "d\"e", "", "x", "y"], dtype=object),
            "o": [None, 1, np.int64(2), np.float64(np.nan), "z", 2.5]}
    results.write_csv(tmp_path / "new.csv", cols)
    with open(tmp_path / "ref.csv", "w", newline="") as f:  # the reference: value by value
        w = csv.writer(f)
        w.writerow(list(cols))
        for i in range(6):
            w.writerow(["" if (x := results._clean(c[i])) is None else precision.value(k, x) for k, c in cols.items()])
    assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "ref.csv").read_bytes()
    with pytest.raises(ValueError):
        results.write_csv(tmp_path / "bad.csv", {"a": np.arange(3), "b": np.arange(2)})
