"""report.html: written for a run, a directory of runs and a sweep's cells; opened in a real headless
Chromium (Debian's `chromium` and `chromium-driver`): no console errors, every plot drawn."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from mrc.emulator import report, results
from mrc.errors import ConfigError
from tests.emulator.helpers import make, run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
FABRIC = {"kind": "leaf-spine", "hosts_per_leaf": 4, "leaves": 4, "spines": 4, "planes": 2, "link_gbps": 100}


def _scenario(transport):
    return make(topology=FABRIC, transport={"name": transport},
                workload={"kind": "permutation", "size_bytes": 1_000_000},
                failures=[{"kind": "link-down", "at_us": 20, "link": ["p0.t0.1", "p0.t1.2"]}])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("rep")
    for t in ("mrc", "roce-ecmp"):
        r, _, _ = run(_scenario(t))
        results.write(r, base / t, plots_too=True, plot_formats=("png", "svg"))
    return base


def test_run_writes_report_and_plots_with_markers(runs):
    d = runs / "mrc"
    assert (d / "report.html").is_file() and (d / "planes.csv").is_file()
    for name in ("fct_cdf", "slowdown_by_size", "utilisation"):
        assert (d / f"{name}.png").is_file() and (d / f"{name}.svg").is_file()
    svg = (d / "utilisation.svg").read_text()
    assert "(mrc)" in svg and "link-down" in svg and "localised" in svg  # title names the transport; markers
    assert "(roce-ecmp)" in (runs / "roce-ecmp" / "fct_cdf.svg").read_text()
    page = (d / "report.html").read_text()
    assert page.count("Plotly.newPlot") >= 3 and "p0.t0.1-p0.t1.2" in page
    assert "<script src=" not in page  # self-contained: plotly.js inline


def test_report_of_several_runs_and_of_a_sweep(runs, tmp_path):
    out = report.write(runs)
    page = out.read_text()
    assert "mrc" in page and "roce-ecmp" in page and page.count("Plotly.newPlot") >= 4
    cells = tmp_path / "sweep" / "cells"
    cells.mkdir(parents=True)
    shutil.copytree(runs / "mrc", cells / "queue=1")
    shutil.copytree(runs / "roce-ecmp", cells / "queue=2")
    (tmp_path / "sweep" / "sweep.csv").write_text("cell,queue_bytes,fct_p99_us\nqueue=1,1,5.0\nqueue=2,2,6.0\n")
    page = report.write(tmp_path / "sweep").read_text()
    assert "cells/queue=1" in page and "<h2>Sweep</h2>" in page
    with pytest.raises(ConfigError):
        report.write(tmp_path / "empty-none")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError):
        report.write(tmp_path / "empty")


def test_cli_report_and_plot_format(runs, tmp_path, capsys):
    from mrc.cli import main

    assert main(["emu", "report", str(runs / "mrc"), "--out", str(tmp_path / "r.html"), "--qps", "0,1"]) == 0
    assert (tmp_path / "r.html").is_file() and "report:" in capsys.readouterr().out
    assert main(["emu", "report", str(runs), "--qps", "x"]) == 2
    assert main(["emu", "run", "incast", "--plot-format", "gif", "--out", str(tmp_path / "x")]) == 2
    assert "--plot-format" in capsys.readouterr().err


TRAINING = {"kind": "training", "iterations": 2, "compute_us": 10.0, "tp": 4, "dp_bytes": 400_000,
            "rank_order": "tp,dp,ep,pp", "placement": "contiguous"}


@pytest.fixture(scope="module")
def training_runs(tmp_path_factory):
    """A 16-host data-parallel job, healthy and with a gray link its rings cross (baseline: the healthy twin)."""
    base = tmp_path_factory.mktemp("train")
    sums = {}
    for name, failures in (("healthy", []),
                           ("gray", [{"kind": "gray-loss", "at_us": 0, "link": ["p0.t0.0", "p0.t1.0"],
                                      "probability": 0.2}])):
        r, s, _ = run(make(topology=FABRIC, transport={"name": "mrc"}, workload=TRAINING, failures=failures))
        results.write(r, base / name, plots_too=True)
        sums[name] = s["training"][0]
    return base, sums


def test_report_training_section(training_runs, runs):
    """A run with a training job gets the training section: its table holds the iteration times, the ideal, the
    slowest group and the GPU-seconds wasted of summary.json; a run without one gets none."""
    base, sums = training_runs
    page = (base / "gray" / "report.html").read_text()
    g = sums["gray"]
    w = g["waste"]
    assert w["gpu_seconds_wasted"] > 0 and w["hosts_delayed"] > 0  # the failure costs GPU time
    assert "<h2>Training</h2>" in page and report.TRAINING_FIG_ID in page
    table = page[page.index("id='training-table'"):]
    table = table[:table.index("</table>")]
    for x in g["iterations"]:
        assert f"{x['time_us']:,.2f}" in table and f"{x['ideal_us']:,.2f}" in table
    sg = g["slowest_group"]
    assert f"{sg['group']} ({sg['kind']}, {sg['hosts']} hosts)" in table and f"{sg['time_us']:,.2f}" in table
    assert f"{w['gpu_seconds_wasted']:.4g}" in table and f"{w['gpu_seconds_wasted_comm']:.4g}" in table
    assert f"{w['job_slowdown']:,.3f}" in table
    healthy = (base / "healthy" / "report.html").read_text()
    assert "<h2>Training</h2>" in healthy and "no baseline" in healthy  # no failure, no waste figures
    assert "<h2>Training</h2>" not in (runs / "mrc" / "report.html").read_text()


def _browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--disable-background-networking", "--disable-extensions", "--disable-sync", "--no-first-run",
              "--disable-component-update", "--window-size=1400,2400"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)


@pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                    reason="Chromium not installed (Debian packages `chromium` and `chromium-driver`)")
def test_report_in_headless_chromium(runs, tmp_path):
    page = report.write(runs, tmp_path / "report.html")
    drv = _browser()
    try:
        drv.set_page_load_timeout(60)
        drv.get(page.resolve().as_uri())
        drv.execute_script("return document.readyState")
        n_plots = drv.execute_script("return document.querySelectorAll('.js-plotly-plot').length")
        drawn = drv.execute_script(
            "return Array.from(document.querySelectorAll('.js-plotly-plot')).filter("
            "d => d.querySelector('svg.main-svg') && d.getBoundingClientRect().height > 100).length")
        heat = drv.execute_script("return document.querySelectorAll('.js-plotly-plot .hm image, "
                                  ".js-plotly-plot image').length")
        errors = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
        drv.save_screenshot(str(tmp_path / "shot.png"))
    finally:
        drv.quit()
    assert not errors, errors
    assert n_plots >= 4 and drawn == n_plots and heat >= 2
    _assert_screenshot(tmp_path / "shot.png")


@pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                    reason="Chromium not installed (Debian packages `chromium` and `chromium-driver`)")
def test_training_section_in_headless_chromium(training_runs, tmp_path):
    """The report of a healthy and a failed training run side by side, in Chromium: the iteration figure is
    drawn, with one bar per run and iteration at the times of summary.json, and the ideal."""
    base, sums = training_runs
    page = report.write(base, tmp_path / "report.html")
    drv = _browser()
    try:
        drv.set_page_load_timeout(60)
        drv.get(page.resolve().as_uri())
        fig = f"document.getElementById('{report.TRAINING_FIG_ID}')"
        drawn = drv.execute_script(f"const d = {fig}; return !!(d && d.querySelector('svg.main-svg') && "
                                   "d.getBoundingClientRect().height > 100)")
        data = drv.execute_script(f"return {fig}.data.map(t => [t.type, t.name, t.y])")
        bars = drv.execute_script(f"return {fig}.querySelectorAll('.barlayer .point').length")
        errors = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
    finally:
        drv.quit()
    assert not errors, errors
    assert drawn and bars == 2 * 2  # two runs x two iterations
    got = {name: y for kind, name, y in data if kind == "bar"}
    for name, s in sums.items():
        assert got[f"{name} (mrc)"] == pytest.approx([x["time_us"] for x in s["iterations"]])
    ideal = [y for kind, name, y in data if kind == "scatter"]
    assert ideal == [pytest.approx([x["ideal_us"] for x in sums["healthy"]["iterations"]])]


def _sweep_from_runs(runs, d):
    """A sweep's directory made of the module's runs: two seeds per transport (copies), its table as
    `mrc emu sweep` writes it."""
    import json

    from mrc.emulator.sweeps import cell
    from mrc.emulator.sweeps import table as TB

    rows = []
    for t in ("mrc", "roce-ecmp"):
        for seed in (1, 2):
            k = len(rows)
            res = f"cells/{k:05d}-{'abcdef0123456789'[k] * 16}"
            shutil.copytree(runs / t, d / res)
            s = json.loads((d / res / "summary.json").read_text())
            rows.append({"cell": k, "key": res[-16:], "scenario": "test", "transport": t, "seed": seed, "status": "ok",
                         "results": res, "cell_s": 0.5 + k / 3, **cell.flatten(s)})
    TB.write(TB.frame(rows, []), d)
    return d


def test_report_of_a_sweep_names_cells_and_puts_the_statistics_first(runs, tmp_path):
    page = report.write(_sweep_from_runs(runs, tmp_path / "sw")).read_text()
    body = page[page.index("<body>"):]
    assert "id='sweep-stats'" in body[body.index("<table"):body.index("<table") + 60]
    for t in ("mrc", "roce-ecmp"):
        for seed in (1, 2):
            assert f"<td>{t}, seed {seed}</td>" in body  # in the cells table
            assert f"{t}, seed {seed}: " in body  # the FCT CDF's legend
    assert ">cells/0" not in body and "Run mrc, seed 1" in body


@pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                    reason="Chromium not installed (Debian packages `chromium` and `chromium-driver`)")
def test_sweep_report_in_headless_chromium(runs, tmp_path):
    """A sweep's report in Chromium: no console error, every figure drawn, the statistics table the first thing
    after the title and its summary, the metric figures' y axes as the values ask (log where they span decades)."""
    page = report.write(_sweep_from_runs(runs, tmp_path / "sw"))
    drv = _browser()
    try:
        drv.set_page_load_timeout(60)
        drv.get(page.resolve().as_uri())
        first_table = drv.execute_script("return document.querySelector('table').id")
        n_plots = drv.execute_script("return document.querySelectorAll('.js-plotly-plot').length")
        drawn = drv.execute_script(
            "return Array.from(document.querySelectorAll('.js-plotly-plot')).filter("
            "d => d.querySelector('svg.main-svg') && d.getBoundingClientRect().height > 100).length")
        above = drv.execute_script("const t = document.getElementById('sweep-stats').getBoundingClientRect().top;"
                                   "return Array.from(document.querySelectorAll('.js-plotly-plot')).every("
                                   "d => d.getBoundingClientRect().top > t)")
        errors = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
    finally:
        drv.quit()
    assert not errors, errors
    assert first_table == "sweep-stats" and above
    assert n_plots >= 5 and drawn == n_plots


def _assert_screenshot(path):
    from PIL import Image

    img = np.asarray(Image.open(path).convert("RGB"))
    colours = len(np.unique(img.reshape(-1, 3), axis=0))
    non_white = np.mean(np.any(img < 240, axis=2))
    assert colours > 200 and non_white > 0.05  # plots, not a blank page
