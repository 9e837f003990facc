"""`mrc demo` at its tiny scale: table, results directory, plot, reproducibility."""
from __future__ import annotations

import csv
import json
import tomllib

from mrc.cli import main
from mrc.emulator import demo


def test_demo_tiny_writes_table_plot_and_results(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--scale", "tiny", "--out", str(out), "--seed", "3", "--no-progress"]) == 0
    text = capsys.readouterr().out
    for name in ("mrc", "spray", "roce-ecmp"):
        assert any(line.startswith(name + " ") for line in text.splitlines())
        s = json.loads((out / name / "summary.json").read_text())
        assert s["flows"]["completed"] == s["flows"]["total"] == 16
        assert s["seed"] == 3 and s["reroute"] and s["failures"][0]["kind"] == "link-down"
    assert (out / "fct_cdf.png").stat().st_size > 1000
    rows = list(csv.DictReader((out / "demo.csv").open()))
    assert [r["transport"] for r in rows] == ["mrc", "spray", "roce-ecmp"]
    for r in rows:  # numbers, not the screen's strings
        assert int(r["flows_done"]) == 16 and float(r["fct_p99_us"]) > 0 and float(r["first_steered_away_us"]) >= 0
        assert r["off_99_us"] == "" or float(r["off_99_us"]) >= 0  # null (never) is an empty cell, not "-"
    # the scenario file runs as it is
    sc = tomllib.loads((out / "scenario.toml").read_text())
    assert sc["failures"][0]["link"] == demo.scenario_dict("tiny", 3)["failures"][0]["link"]
    from mrc.emulator import scenario
    scenario.parse(sc, "mrc-demo")
    # the failed link is the one most ECMP flows use: roce-ecmp meets it
    d = json.loads((out / "demo.json").read_text())
    assert d["runs"]["roce-ecmp"]["reroute"][0]["affected_flows"] >= 1
    # same seed, same numbers
    again = demo.run_demo(tmp_path / "again", seed=3, scale="tiny", plots_too=False, echo=lambda *_: None)
    for k, v in again.items():
        assert v["fct_us"] == d["runs"][k]["fct_us"]


def test_demo_bad_transport_is_a_config_error(tmp_path, capsys):
    assert main(["demo", "--scale", "tiny", "--out", str(tmp_path), "--transports", "mrc,nope", "--no-progress"]) != 0
    assert "nope" in capsys.readouterr().err


def test_demo_checks_transport_parameters_before_running(tmp_path, capsys):
    assert main(["demo", "--scale", "tiny", "--out", str(tmp_path / "x"), "--transports", "mrc,spray:ev_count=0",
                 "--no-progress"]) != 0
    assert "transport.ev_count" in capsys.readouterr().err
    assert not (tmp_path / "x" / "mrc").exists()
