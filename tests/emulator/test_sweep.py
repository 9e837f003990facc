"""`mrc emu sweep` on real Dask processes: a scheduler and two workers started here, and a local cluster.

The cells are tiny (a 4-host leaf-spine, a few flows), so the time goes into starting the processes.
"""
from __future__ import annotations

import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest

from mrc.cli import main
from mrc.emulator import metrics
from mrc.emulator.sweeps import cell, spec, stats
from mrc.emulator.sweeps import table as TB
from mrc.errors import ConfigError

TINY = ('name = "tiny"\nseed = 1\n[topology]\nkind = "leaf-spine"\nhosts_per_leaf = 2\nleaves = 2\nspines = 2\n'
        'link_gbps = 100\n[transport]\nname = "roce-ecmp"\n[workload]\nkind = "permutation"\nsize_bytes = 20000\n')
MACHINE = ("sim_wall_s", "sim_peak_rss_mb", "engine_events_per_s", "engine_packet_hops_per_s")


def _scenario(tmp_path, text=TINY):
    p = tmp_path / "tiny.toml"
    p.write_text(text)
    return p


def _env():
    env = dict(os.environ)
    env["DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES"] = "1"
    root = str(pathlib.Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """A real `dask scheduler` and two `dask worker` processes (with nannies) on localhost."""
    from distributed import Client

    d = tmp_path_factory.mktemp("dask")
    sfile = d / "scheduler.json"
    env = _env()
    procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(sfile)], env=env, cwd=d,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        t0 = time.time()
        while not sfile.exists():
            assert time.time() - t0 < 60, "the scheduler did not start"
            time.sleep(0.1)
        for k in range(2):
            procs.append(subprocess.Popen([sys.executable, "-m", "dask", "worker", "--scheduler-file", str(sfile),
                                           "--nthreads", "1", "--no-dashboard", "--name", f"w{k}",
                                           "--local-directory", str(d)], env=env, cwd=d,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        addr = json.loads(sfile.read_text())["address"]
        with Client(addr, timeout="60s") as c:
            c.wait_for_workers(2, timeout=120)
        yield addr
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def _flat_summary(path):
    s = json.loads(path.read_text())
    return cell.flatten(metrics.comparable(s))


def _same(a, b):
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return a == b


def test_sweep_on_a_real_cluster_equals_emu_run_cell_by_cell(tmp_path, scheduler, capsys):
    p = _scenario(tmp_path)
    out = tmp_path / "sw"
    assert main(["emu", "sweep", str(p), "--transports", "roce-ecmp,mrc", "--seeds", "1-2",
                 "--grid", "workload.size_bytes=20000,60000", "--scheduler", scheduler, "--out", str(out),
                 "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "FCT p99 us" in text and "[" in text and "roce-ecmp" in text
    df = pd.read_parquet(out / "sweep.parquet")
    assert len(df) == 8 and set(df["status"]) == {"ok"} and list(df["cell"]) == list(range(8))
    assert list(pd.read_csv(out / "sweep.csv")["key"]) == list(df["key"])
    assert {"scenario", "transport", "workload.size_bytes", "seed", "fct_us_p99", "slowdown_p50", "sim_events",
            "sim_packet_hops", "sim_wall_s", "sim_peak_rss_mb", "counters_sent_pkts", "error", "worker"} <= set(df)
    assert len(set(df["worker"])) >= 1
    # every cell, run alone with `mrc emu run`, gives the same numbers bit for bit and the same flows.csv
    for r in df.to_dict("records"):
        one = tmp_path / f"one{r['cell']}"
        assert main(["emu", "run", str(p), "--transport", r["transport"], "--seed", str(r["seed"]),
                     "--set", f"workload.size_bytes={r['workload.size_bytes']}", "--out", str(one),
                     "--no-plots", "--no-progress"]) == 0
        want = _flat_summary(one / "summary.json")
        for k, v in want.items():
            if k not in MACHINE:
                assert _same(r[k], v), (r["cell"], k, r[k], v)
        assert (out / r["results"] / "flows.csv").read_bytes() == (one / "flows.csv").read_bytes()
    st = pd.read_csv(out / "stats.csv")
    assert set(st["metric"]) >= {"fct_us_p50", "fct_us_p99", "fct_us_max", "slowdown_p99"}
    assert (st["ci_low"] <= st["median"]).all() and (st["median"] <= st["ci_high"]).all()
    assert (out / "plots" / "vs-workload.size_bytes.png").stat().st_size > 1000
    assert list((out / "plots").glob("fct-cdf-*.png"))
    # sweep.toml runs the same sweep again: with --resume nothing runs
    assert main(["emu", "sweep", str(out / "sweep.toml"), "--scheduler", scheduler, "--resume",
                 "--no-progress", "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert "8 cells" in err and "8 already done, 0 to run" in err
    again = pd.read_parquet(out / "sweep.parquet")
    pd.testing.assert_frame_equal(again, df)


def test_a_failing_cell_is_recorded_and_the_rest_complete(tmp_path, scheduler, capsys):
    p = _scenario(tmp_path)
    out = tmp_path / "sw"
    # size 0 is not a valid flow size: those cells raise on the worker; a huge flow passes the time limit
    assert main(["emu", "sweep", str(p), "--seeds", "1-2", "--grid", "workload.size_bytes=20000,0,5000000000",
                 "--set", "engine.chunk_events=1000", "--cell-timeout-s", "1.5", "--scheduler", scheduler,
                 "--out", str(out), "--no-plots", "--no-progress"]) == 1
    df = pd.read_parquet(out / "sweep.parquet")
    by = {v: g for v, g in df.groupby("workload.size_bytes")}
    assert set(by[20000]["status"]) == {"ok"} and by[20000]["fct_us_p99"].notna().all()
    assert set(by[0]["status"]) == {"error"}
    assert all("workload.size_bytes" in e for e in by[0]["error"])
    assert set(by[5000000000]["status"]) == {"timeout"}
    assert all("time limit" in e for e in by[5000000000]["error"])
    assert "cells failed" in capsys.readouterr().out
    # --resume runs the failed cells again, not the completed ones
    before = df[df["status"] == "ok"][["key", "worker", "cell_s"]].reset_index(drop=True)
    assert main(["emu", "sweep", str(out / "sweep.toml"), "--scheduler", scheduler, "--resume",
                 "--no-plots", "--no-progress"]) == 1
    assert "2 already done, 4 to run" in capsys.readouterr().err
    after = pd.read_parquet(out / "sweep.parquet")
    kept = after[after["key"].isin(before["key"])][["key", "worker", "cell_s"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, before)


def test_a_worker_killed_mid_sweep_loses_no_cell(tmp_path, scheduler):
    from distributed import Client

    p = _scenario(tmp_path, TINY.replace("size_bytes = 20000", "size_bytes = 20000000"))  # cells of ~0.2 s
    out = tmp_path / "sw"
    killed = {}

    def kill_one():
        with Client(scheduler, timeout="30s") as c:
            pids = c.run(os.getpid)
            t0 = time.time()
            while time.time() - t0 < 60:
                busy = {w: ts for w, ts in c.processing().items() if any("mrc-cell" in str(t) for t in ts)}
                if busy:
                    w = sorted(busy)[0]
                    os.kill(pids[w], signal.SIGKILL)
                    killed["worker"] = w
                    return
                time.sleep(0.02)

    th = threading.Thread(target=kill_one)
    th.start()
    rc = main(["emu", "sweep", str(p), "--transports", "roce-ecmp,mrc", "--seeds", "1-4", "--scheduler", scheduler,
               "--out", str(out), "--no-plots", "--no-progress"])
    th.join()
    assert killed, "no worker was busy with a cell"
    assert rc == 0
    df = pd.read_parquet(out / "sweep.parquet")
    assert len(df) == 8 and set(df["status"]) == {"ok"}
    assert all((out / r / "summary.json").exists() for r in df["results"])
    with Client(scheduler, timeout="30s") as c:  # the nanny replaced the worker
        c.wait_for_workers(2, timeout=60)


def test_ctrl_c_leaves_a_valid_partial_table_and_resume_finishes(tmp_path):
    # enough cells that the sweep is still running when the interrupt arrives (the first table is written
    # after the first cell; 40 cells could all be done by then on an idle machine)
    n = 400
    p = _scenario(tmp_path, TINY.replace("size_bytes = 20000", "size_bytes = 2000000"))
    # On the project's CI machine a SIGINT sent just after the first table was written was once not acted on (the
    # sweep ran its 400 cells to the end and exited 0; not reproduced here, where the sweep stops 1.2 s after it).
    # What this test checks is what an interrupted sweep leaves behind, so such a run is tried again, twice at most.
    for attempt in range(3):
        out = tmp_path / f"sw{attempt}"
        cmd = [sys.executable, "-m", "mrc", "emu", "sweep", str(p), "--seeds", f"1-{n}", "--workers", "1",
               "--out", str(out), "--no-plots", "--no-progress"]
        proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t0 = time.time()
        while not (out / "sweep.parquet").exists():
            assert proc.poll() is None and time.time() - t0 < 120, proc.stderr.read() if proc.poll() is not None else ""
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        if not (proc.returncode == 0 and f"{n}/{n} cells" in err):
            break
    assert proc.returncode == 130, err
    assert "interrupted" in err
    df = pd.read_parquet(out / "sweep.parquet")
    assert 1 <= len(df) < n and set(df["status"]) == {"ok"}
    assert list(pd.read_csv(out / "sweep.csv")["key"]) == list(df["key"])
    done = len(df)
    from mrc.emulator import sweep

    lines = []
    full = sweep(out / "sweep.toml", out=out, resume=True, workers=1, plots=False, echo=lines.append)
    assert len(full) == n and set(full["status"]) == {"ok"}
    assert any(f"{done} already done, {n - done} to run" in line for line in lines)


# ---------------------------------------------------------------- pieces


def test_seeds_and_grid_parsing():
    assert spec.parse_seeds("1-3,7,2") == [1, 2, 3, 7]
    for bad in ("", "3-1", "x", "-4"):
        with pytest.raises(ConfigError, match="--seeds"):
            spec.parse_seeds(bad)
    assert spec.parse_grid(["switch.queue_bytes=1,2", "transport.lossless=true,false"]) == {
        "switch.queue_bytes": [1, 2], "transport.lossless": [True, False]}
    for bad, what in ((["seed=1,2"], "--seeds"), (["transport.name=a,b"], "--transports"), (["x"], "KEY=V1"),
                      (["a=1", "a=2"], "twice"), (["a=1,1"], "twice"), (["a="], "at least one")):
        with pytest.raises(ConfigError, match=what):
            spec.parse_grid(bad)


def test_cell_keys_follow_scenario_transport_seed_and_code(tmp_path):
    sw = spec.make(str(_scenario(tmp_path)), "roce-ecmp,mrc", "1-2", ["workload.size_bytes=1000,2000"])
    a = sw.cells("v1")
    assert len(a) == 8 and len({c.key for c in a}) == 8
    assert [c.key for c in sw.cells("v1")] == [c.key for c in a]
    assert not {c.key for c in sw.cells("v2")} & {c.key for c in a}
    assert [c.seed for c in a] == [1] * 4 + [2] * 4  # seeds outermost
    assert a[1].data["transport"] == {"name": "mrc"} and a[2].data["workload"]["size_bytes"] == 2000
    # sweep.toml holds the whole definition
    (tmp_path / "sweep.toml").write_text(spec.dump(sw))
    assert [c.key for c in spec.make(str(tmp_path / "sweep.toml")).cells("v1")] == [c.key for c in a]


def test_cell_keys_follow_the_content_of_a_cm_file(tmp_path):
    (tmp_path / "m.cm").write_text("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 1000\n")
    text = TINY.replace('kind = "permutation"\nsize_bytes = 20000\n', 'kind = "cm"\nfile = "m.cm"\n')
    sw = spec.make(str(_scenario(tmp_path, text)), None, "1")
    k1 = sw.cells("v")[0].key
    (tmp_path / "m.cm").write_text("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 2000\n")
    assert sw.cells("v")[0].key != k1 and "m.cm" in sw.files()


def test_bootstrap_interval():
    med, lo, hi = stats.median_ci([5.0] * 10)
    assert med == lo == hi == 5.0
    x = np.arange(1, 11, dtype=float)
    med, lo, hi = stats.median_ci(x)
    assert med == 5.5 and 1 <= lo < med < hi <= 10
    assert stats.median_ci(x) == (med, lo, hi)  # fixed resampling seed
    assert math.isnan(stats.median_ci([3.0])[1]) and math.isnan(stats.median_ci([])[0])
    assert stats.median_ci([1.0, 2.0, np.nan, 3.0])[0] == 2.0
    assert stats.median_ci([1.0, np.inf, np.inf])[0] == np.inf


def test_never_rerouted_counts_as_infinitely_late():
    df = pd.DataFrame({"status": ["ok", "ok", "ok", "error"], "transport": ["a"] * 4,
                       "failure0_affected_flows": [3, 3, 3, None], "failure0_off_99_us": [10.0, None, None, None],
                       "failure0_min_goodput_gbps": [5.0, 4.0, None, None],
                       "failure0_goodput_recovered_us": [20.0, None, None, None]})
    v = stats.metric_values(df, "failure0_off_99_us")
    assert list(v[:1]) == [10.0] and np.isinf(v[1:]).all() and len(v) == 3
    g = stats.metric_values(df, "failure0_goodput_recovered_us")  # no measured fall: not "never"
    assert g[0] == 20.0 and np.isinf(g[1]) and np.isnan(g[2])
    st = stats.summarize(df, [], ["failure0_off_99_us"])
    assert np.isinf(st["median"][0]) and "never" in stats.text(st, [])


def test_flatten_names_and_table_round_trip(tmp_path):
    s = {"fct_us": {"p50": 1.0, "p99": None}, "slowdown": {"p50": 1.1}, "flows": {"total": 2, "completed": 2},
         "outcome": {"failed": 0, "unfinished": 0, "reasons": {}}, "cct_us": [3.0, 5.0],
         "collectives": [{"cct_us": 3.0}, {"cct_us": 5.0}],
         "jobs": [{"index": 0, "kind": "incast", "flows": 1}, {"index": 1, "kind": "permutation", "flows": 1}],
         "victims": [{"flow": 1, "fct_us": 9.0, "gbps": 40.0, "slowdown": 2.0}],
         "reroute": [{"index": 0, "affected_flows": 1, "first_steered_away_us": 0.5, "off_99_us": None,
                      "goodput_recovered_us": 2.0, "pre_fault_goodput_gbps": 1.0, "min_goodput_gbps": 0.5}]}
    row = cell.flatten(s)
    assert row["fct_us_p50"] == 1.0 and row["fct_us_p99"] is None and row["cct_us_max"] == 5.0
    assert row["job1_kind"] == "permutation" and row["victim_gbps"] == 40.0
    assert row["failure0_first_steered_away_us"] == 0.5 and row["failure0_off_99_us"] is None
    df = TB.frame([{"cell": 1, "key": "b", "seed": 2, "status": "ok", **row},
                   {"cell": 0, "key": "a", "seed": 1, "status": "error", "error": "x"}], [])
    TB.write(df, tmp_path)
    back = TB.read(tmp_path)
    assert list(back["cell"]) == [0, 1] and back["fct_us_p50"][1] == 1.0 and back["error"][0] == "x"
    assert not list(tmp_path.glob(".*.tmp"))


def test_bad_sweep_arguments_exit_2_naming_them(tmp_path, capsys):
    p = _scenario(tmp_path)
    assert main(["emu", "sweep", str(p), "--transports", "nope", "--out", str(tmp_path / "o")]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["emu", "sweep", str(p), "--set", "switch.bufer=1", "--out", str(tmp_path / "o")]) == 2
    assert "switch.bufer" in capsys.readouterr().err
    assert main(["emu", "sweep", str(p), "--seeds", "9-1", "--out", str(tmp_path / "o")]) == 2
    assert main(["emu", "sweep", str(p), "--workers", "0", "--out", str(tmp_path / "o")]) == 2
    assert main(["emu", "sweep", str(p), "--cell-timeout-s", "-1", "--out", str(tmp_path / "o")]) == 2
    assert main(["emu", "sweep", str(p), "--scheduler", "tcp://127.0.0.1:9", "--out", str(tmp_path / "o")]) == 2
    assert "--scheduler tcp://127.0.0.1:9" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # a sweep that never started leaves no directory (no stray sweep.toml)
    # an earlier sweep's directory is left as it was
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "sweep.toml").write_text("# an earlier sweep\n")
    (tmp_path / "o" / "sweep.csv").write_text("cell\n0\n")
    assert main(["emu", "sweep", str(p), "--scheduler", "tcp://127.0.0.1:9", "--out", str(tmp_path / "o")]) == 2
    assert (tmp_path / "o" / "sweep.toml").read_text() == "# an earlier sweep\n"
    assert (tmp_path / "o" / "sweep.csv").is_file()


def test_hostile_sweep_files_and_input_files_are_refused(tmp_path, capsys):
    bad = tmp_path / "sweep.toml"
    bad.write_text('[sweep]\nseeds = "1-3"\n[scenario]\nname = "x"\n')
    with pytest.raises(ConfigError, match="sweep.seeds"):
        spec.load(bad)
    bad.write_text("[sweep]\nseeds = [1]\n")
    assert main(["emu", "sweep", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "[scenario]" in capsys.readouterr().err
    # a workload file named outside the scenario's directory is not written anywhere on a worker
    with pytest.raises(ValueError, match="not a relative path"):
        cell._materialise({"../../escape.cm": b"Nodes 2\n"})
    res = cell.run_cell({"data": {"name": "x"}, "name": "x", "files": {"/abs.cm": b""}, "code_version": None})
    assert res["row"]["status"] == "error" and "not a relative path" in res["row"]["error"]


# ---------------------------------------------------------------- what a sweep writes for a reader

FAILURE = TINY + '[[failures]]\nkind = "link-down"\nat_us = 5\nlink = ["p0.t0.0", "p0.t1.0"]\n'


@pytest.fixture(scope="module")
def failure_sweep(tmp_path_factory, scheduler):
    """RoCE (lossy, routing repairs after 1 ms) and MRC around a link failure, three seeds."""
    d = tmp_path_factory.mktemp("fsw")
    p = d / "tiny.toml"
    p.write_text(FAILURE.replace("size_bytes = 20000", "size_bytes = 2000000"))
    assert main(["emu", "sweep", str(p), "--transports", "mrc,roce-ecmp:lossless=false", "--seeds", "1-3",
                 "--scheduler", scheduler, "--out", str(d / "sw"), "--no-progress"]) == 0
    return d / "sw"


def test_the_sweep_writes_a_report_with_the_statistics_first(failure_sweep):
    """report.html: the medians with their intervals before anything else, every cell named by transport, grid
    point and seed (no hash), values rounded as on screen; `mrc emu report` of the sweep writes the same page."""
    import re

    page = (failure_sweep / "report.html").read_text()
    body = page[page.index("<body>"):]
    first_table = body.index("<table")
    assert "id='sweep-stats'" in body[first_table:first_table + 60]  # the statistics come first
    assert first_table < body.index("Plotly.newPlot") < body.index("id='sweep-cells'")
    df = pd.read_parquet(failure_sweep / "sweep.parquet")
    cells = body[body.index("id='sweep-cells'"):]
    cells = cells[:cells.index("</table>")]
    for r in df.to_dict("records"):
        assert f"<td>{r['transport']}, seed {r['seed']}</td>" in cells
    shown = re.sub(r"<[^>]+>", " ", cells)
    assert "cells/0" not in shown  # the directories are links, not names
    stats_html = body[body.index("id='sweep-stats'"):]
    stats_html = stats_html[:stats_html.index("</table>")]
    assert not re.search(r"\d\.\d{3,}", re.sub(r"<[^>]+>", " ", stats_html))  # rounded: at most 2 decimals
    st = stats.summarize(df, [])
    row = st[(st["transport"] == "mrc") & (st["metric"] == "fct_us_p99")].iloc[0]
    assert stats.cell_text(row["median"], row["ci_low"], row["ci_high"]) in stats_html
    assert (failure_sweep / "plots" / "by-transport.png").stat().st_size > 1000
    again = failure_sweep / "again.html"
    assert main(["emu", "report", str(failure_sweep), "--out", str(again)]) == 0
    assert "id='sweep-stats'" in again.read_text()


def test_sweep_csvs_carry_the_precision_of_each_quantity(failure_sweep):
    """sweep.csv and stats.csv: times to the picosecond (6 decimals of a microsecond), other reals to 6
    significant digits; the same numbers as the Parquet table up to that precision."""
    import csv

    from mrc.emulator import precision

    exact = pd.read_parquet(failure_sweep / "sweep.parquet")
    with open(failure_sweep / "sweep.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    checked = 0
    for r, (_, e) in zip(rows, exact.iterrows()):
        for k, text in r.items():
            v = e[k]
            if not isinstance(v, (float, np.floating)) or np.isnan(v) or text in ("", "inf"):
                continue
            checked += 1
            d = precision.decimals(k)
            digits = text.split("e")[0].lstrip("-").replace(".", "").strip("0")
            if d is None:
                assert len(digits) <= precision.SIGNIFICANT, (k, text)
            else:
                assert "." not in text or len(text.split(".")[1]) <= d, (k, text)
            assert float(text) == precision.value(k, float(v)), (k, text, v)
    assert checked > 50
    st = pd.read_csv(failure_sweep / "stats.csv")
    for m, v in zip(st["metric"], st["median"]):
        if np.isfinite(v):
            assert v == precision.value(m, v)


def test_sweep_plots_use_log_axes_across_decades_and_show_never(monkeypatch, tmp_path):
    """by-transport.png: a reroute of 1 us beside one of 127 ms on a log axis; an interval bound of "never" is
    drawn and marked, not dropped; the report's figure likewise."""
    from mrc.emulator.sweeps import plots as P
    from mrc.emulator.sweeps import report as SR

    st = pd.DataFrame([
        {"transport": "mrc", "metric": "failure0_off_99_us", "cells": 3, "ok": 3, "n": 3,
         "median": 1.2, "ci_low": 0.9, "ci_high": 1.6},
        {"transport": "spray", "metric": "failure0_off_99_us", "cells": 3, "ok": 3, "n": 3,
         "median": 88.0, "ci_low": 80.0, "ci_high": float("inf")},
        {"transport": "roce-ecmp", "metric": "failure0_off_99_us", "cells": 3, "ok": 3, "n": 3,
         "median": 127_000.0, "ci_low": 126_000.0, "ci_high": 128_000.0},
        {"transport": "mrc", "metric": "fct_us_p99", "cells": 3, "ok": 3, "n": 3, "median": 100.0, "ci_low": 99.0,
         "ci_high": 101.0},
        {"transport": "spray", "metric": "fct_us_p99", "cells": 3, "ok": 3, "n": 3, "median": 150.0,
         "ci_low": 140.0, "ci_high": 160.0},
        {"transport": "roce-ecmp", "metric": "fct_us_p99", "cells": 3, "ok": 3, "n": 3, "median": 900.0,
         "ci_low": 800.0, "ci_high": 1000.0},
    ])
    figs = []
    monkeypatch.setattr(P, "_save", lambda plt, fig, path: figs.append(fig))
    P.metric_plots(st, [], tmp_path, "t")
    (fig,) = figs
    by_title = {ax.get_title(): ax for ax in fig.axes if ax.get_visible()}
    reroute = next(ax for t, ax in by_title.items() if t.startswith("99% off us"))
    fct = next(ax for t, ax in by_title.items() if t.startswith("FCT p99 us"))
    assert reroute.get_yscale() == "log" and fct.get_yscale() == "linear"
    assert any("never" in t.get_text() for t in reroute.texts)
    out = dict(SR.metric_figures(st, []))
    assert out["failure0_off_99_us"].layout.yaxis.type == "log"
    assert out["fct_us_p99"].layout.yaxis.type == "linear"
    texts = [t for tr in out["failure0_off_99_us"].data for t in (tr.text or []) if isinstance(t, str)]
    assert "never" in texts
    html = SR.stats_table(st, [])
    assert "88.0 [80.0, never]" in html and "127,000 [126,000, 128,000]" in html
