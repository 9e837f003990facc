"""``report.html``: one self-contained interactive page of a run, or of several runs side by side.

A results writer beside the PNG plots (`plots`), reading only the files of results directories, so
it opens whatever left them: ``mrc emu run`` (one run), ``mrc emu compare`` and ``mrc demo`` (a
directory of run directories), a sweep (``DIR/cells/<cell>/`` run directories and its table: first
the medians with their 95 % intervals and a figure per headline metric, then the cells named by
transport, grid point and seed; `sweeps.report`). Plotly draws it; plotly.js is written into the page
once (no server, no network). Sections:

- the summary table (per run: flows done, FCT and slowdown percentiles, failures, what the
  controller localised and how fast);
- FCT CDFs, one curve per run (labelled by its transport);
- per run, heatmaps of link utilisation and queue depth over time, one row per link tier and
  plane (``planes.csv``), and goodput over time;
- the EV-state timeline of chosen QPs (default: the QPs with the most EV events): one row per
  (QP, EV), ASSUMED_BAD in red until the EV is GOOD again;
- the localisation: ranked suspects with score, verdict and evidence;
- for runs with a training or trace job (``training`` in summary.json): per job its iteration times
  against the ideal (a figure, one bar per run and iteration, the ideal as a marker), the slowest
  group, GPU-seconds and, against the failure-free run, GPU-seconds wasted, of which communication,
  hosts delayed and the slowdown of the job and of each iteration (a table).

Every time axis carries the failures (red, shaded while they last) and the times the controller
localised them (purple, dotted).
"""
from __future__ import annotations

import csv
import html
import json
import pathlib

import numpy as np

from mrc.cli import plural
from mrc.errors import ConfigError

REPORT_FILE = "report.html"
MAX_RUN_SECTIONS = 12  # runs that get their own heatmaps and timelines (all are in the table and CDFs)
DEFAULT_QPS = 8


def _csv(path: pathlib.Path) -> dict:
    if not path.is_file():
        return {}
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return {}
    head = rows[0]
    return {h: [r[k] if k < len(r) else "" for r in rows[1:]] for k, h in enumerate(head)}


def _num(col, default=np.nan) -> np.ndarray:
    out = np.empty(len(col))
    for k, x in enumerate(col):
        try:
            out[k] = float(x) if x != "" else default
        except ValueError:
            out[k] = default
    return out


def find_runs(d) -> list[tuple[str, pathlib.Path]]:
    """(label, directory) of every run under `d`: `d` itself, its subdirectories, or ``d/cells/*`` (a sweep)."""
    d = pathlib.Path(d)
    if not d.is_dir():
        raise ConfigError("report", str(d), "no such directory")
    if (d / "summary.json").is_file():
        return [(d.name, d)]
    runs = [(s.name, s) for s in sorted(d.iterdir()) if s.is_dir() and (s / "summary.json").is_file()]
    cells = d / "cells"
    if cells.is_dir():
        runs += [(f"cells/{s.name}", s) for s in sorted(cells.iterdir()) if (s / "summary.json").is_file()]
    if not runs:
        raise ConfigError("report", str(d), "no results here: neither summary.json nor run directories "
                          "(DIR/<run>/summary.json, DIR/cells/<cell>/summary.json)")
    return runs


class Run:
    def __init__(self, label: str, path: pathlib.Path):
        self.label, self.path = label, path
        try:
            self.summary = json.loads((path / "summary.json").read_text())
        except ValueError as exc:
            raise ConfigError("report", str(path / "summary.json"), f"not valid JSON: {exc}") from None
        self.transport = str(self.summary.get("transport", "?"))
        self.flows = _csv(path / "flows.csv")
        self.series = _csv(path / "timeseries.csv")
        self.planes = _csv(path / "planes.csv")
        self.ev_events = _csv(path / "ev_events.csv")
        lp = path / "localization.json"
        self.localization = json.loads(lp.read_text()) if lp.is_file() else None
        self.failures = self.summary.get("failures") or []
        loc = self.summary.get("localization") or {}
        self.localized = {f["index"]: f["named_at_us"] for f in loc.get("failures", []) if f.get("named_at_us") is not None}

    @property
    def name(self) -> str:
        if self.label == self.transport or self.label.startswith(self.transport + ","):  # a sweep's cell names it
            return self.label
        return f"{self.label} ({self.transport})"


def _markers(fig, run: Run, rows=None) -> None:
    """Failures (red, shaded while they last) and their localisation (purple, dotted) on a figure's time axes."""
    kw = {} if rows is None else {"row": "all", "col": 1}
    for f in run.failures:
        at = f.get("at_us")
        if at is None:
            continue
        end = f.get("end_us")
        if end is not None and end > at:
            fig.add_vrect(x0=at, x1=end, fillcolor="red", opacity=0.07, line_width=0, **kw)
        fig.add_vline(x=at, line_color="red", line_width=1.5,
                      annotation_text=f"{f.get('kind')} {f.get('target')}", annotation_font_color="red",
                      annotation_font_size=10, **kw)
        t = run.localized.get(f.get("index"))
        if t is not None:
            fig.add_vline(x=t, line_color="purple", line_dash="dot", line_width=1.5, annotation_text="localised",
                          annotation_position="bottom right", annotation_font_color="purple",
                          annotation_font_size=10, **kw)


def _fig_html(fig, first: bool, div_id=None) -> str:
    return fig.to_html(full_html=False, include_plotlyjs="inline" if first else False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})


def _fct_cdf(runs):
    import plotly.graph_objects as go

    fig = go.Figure()
    for r in runs:
        x = np.sort(_num(r.flows.get("fct_us", [])))
        x = x[~np.isnan(x)]
        if len(x):
            fig.add_trace(go.Scatter(x=x, y=np.arange(1, len(x) + 1) / len(x), mode="lines", line_shape="hv",
                                     name=f"{r.name}: {len(x)} flows"))
    fig.update_layout(title="Flow completion time CDF", xaxis_title="FCT (us)", yaxis_title="fraction of flows",
                      xaxis_type="log", height=420, legend={"orientation": "h", "y": -0.25})
    return fig


def _heatmaps(run: Run):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    p = run.planes
    if not p.get("t_us"):
        return None
    t = _num(p["t_us"])
    rows = [f"{g} p{pl}" for g, pl in zip(p["group"], p["plane"])]
    names = list(dict.fromkeys(rows))
    times = np.unique(t)
    ti = np.searchsorted(times, t)
    ri = np.array([names.index(x) for x in rows])
    util = np.full((len(names), len(times)), np.nan)
    queue = np.full((len(names), len(times)), np.nan)
    util[ri, ti] = _num(p["util_mean"])
    queue[ri, ti] = _num(p["queue_max_bytes"]) / 1000.0
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=("mean link utilisation per tier and plane", "largest queue (KB) per tier and plane",
                                        "goodput (Gb/s)"), row_heights=[0.4, 0.4, 0.2])
    fig.add_trace(go.Heatmap(x=times, y=names, z=util, zmin=0, zmax=1, colorscale="Viridis",
                             colorbar={"title": "util", "len": 0.38, "y": 0.81}), row=1, col=1)
    fig.add_trace(go.Heatmap(x=times, y=names, z=queue, colorscale="Inferno",
                             colorbar={"title": "KB", "len": 0.38, "y": 0.39}), row=2, col=1)
    s = run.series
    if s.get("goodput_gbps"):
        fig.add_trace(go.Scatter(x=_num(s["t_us"]), y=_num(s["goodput_gbps"]), mode="lines", name="goodput",
                                 line={"color": "black"}, showlegend=False), row=3, col=1)
    fig.update_xaxes(title_text="time (us)", row=3, col=1)
    fig.update_layout(title=f"Links over time: {run.name}", height=200 + 28 * len(names) * 2)
    _markers(fig, run, rows="all")
    return fig


def chosen_qps(run: Run, qps=None, n: int = DEFAULT_QPS) -> list[int]:
    e = run.ev_events
    if not e.get("qp"):
        return []
    qp = _num(e["qp"]).astype(np.int64)
    if qps:
        return [q for q in qps if q in set(qp.tolist())]
    ids, counts = np.unique(qp, return_counts=True)
    order = np.lexsort((ids, -counts))
    return [int(ids[k]) for k in order[:n]]


def _ev_timeline(run: Run, qps=None):
    import plotly.graph_objects as go

    e = run.ev_events
    chosen = chosen_qps(run, qps)
    if not chosen:
        return None
    t = _num(e["t_us"])
    qp = _num(e["qp"]).astype(np.int64)
    ev = _num(e["ev"]).astype(np.int64)
    state = e["state"]
    role = e.get("role", [""] * len(t))
    end = float(run.summary.get("sim", {}).get("sim_time_us") or (np.nanmax(t) if len(t) else 0))
    xs, ys, texts = [], [], []
    bad_x, bad_y, good_x, good_y = [], [], [], []
    rows = []
    for q in chosen:
        idx = np.flatnonzero(qp == q)
        for v in sorted(set(ev[idx].tolist())):
            k = idx[ev[idx] == v]
            k = k[np.argsort(t[k], kind="stable")]
            label = f"QP {q} ({role[k[0]]}) EV {v:#x}"
            rows.append(label)
            start = None
            for j in k:
                if state[j] == "ASSUMED_BAD":
                    bad_x.append(t[j])
                    bad_y.append(label)
                    start = t[j] if start is None else start
                else:
                    good_x.append(t[j])
                    good_y.append(label)
                    if start is not None:
                        xs += [start, t[j], None]
                        ys += [label, label, None]
                        texts += [f"ASSUMED_BAD {start:.2f}-{t[j]:.2f} us"] * 2 + [None]
                        start = None
            if start is not None:
                xs += [start, end, None]
                ys += [label, label, None]
                texts += [f"ASSUMED_BAD from {start:.2f} us to the end"] * 2 + [None]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"color": "red", "width": 6}, name="ASSUMED_BAD",
                             text=texts, hoverinfo="text"))
    fig.add_trace(go.Scatter(x=bad_x, y=bad_y, mode="markers", marker={"color": "red", "symbol": "x", "size": 8},
                             name="event: ASSUMED_BAD"))
    fig.add_trace(go.Scatter(x=good_x, y=good_y, mode="markers", marker={"color": "green", "size": 8},
                             name="event: GOOD"))
    fig.update_layout(title=f"EV states of QPs {', '.join(map(str, chosen))}: {run.name}", xaxis_title="time (us)",
                      height=160 + 22 * len(rows), yaxis={"categoryorder": "array", "categoryarray": rows[::-1]},
                      legend={"orientation": "h", "y": -0.2})
    fig.update_xaxes(range=[0, end])
    _markers(fig, run)
    return fig


def _fmt(v, digits=1) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "-"
    if isinstance(v, (int, float)):
        return f"{v:,.{digits}f}"
    return html.escape(str(v))


def _summary_table(runs) -> str:
    head = ["run", "transport", "flows done", "FCT p50 us", "p99", "p99.9", "max", "slowdown p50", "p99",
            "failures", "localised"]
    out = ["<table class='tbl'><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for r in runs:
        s = r.summary
        f, sd = s.get("fct_us") or {}, s.get("slowdown") or {}
        fails = "; ".join(f"{x.get('kind')} {x.get('target')} at {x.get('at_us')} us" for x in r.failures) or "-"
        loc = (s.get("localization") or {}).get("failures", [])
        locs = "; ".join(f"{x['element']} after {x['time_to_localise_us']:.2f} us" if x.get("element") else
                         f"failure {x['index']}: not localised" for x in loc) or "-"
        flows = s.get("flows") or {}
        cells = [r.label, r.transport, f"{flows.get('completed', '-')}/{flows.get('total', '-')}",
                 _fmt(f.get("p50")), _fmt(f.get("p99")), _fmt(f.get("p999")), _fmt(f.get("max")),
                 _fmt(sd.get("p50"), 2), _fmt(sd.get("p99"), 2), fails, locs]
        out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _localization_table(run: Run) -> str:
    loc = run.localization
    if not loc:
        return ""
    sus = loc["verdict"]["suspects"]
    if not sus:
        return f"<p>{html.escape(run.name)}: no suspect ({loc['events']} EV events).</p>"
    out = [f"<h3>Localisation: {html.escape(run.name)}</h3><table class='tbl'><tr><th>element</th><th>kind</th>"
           "<th>verdict</th><th>score</th><th>bad paths / in use</th><th>host pairs</th><th>first bad (us)</th>"
           "<th>evidence (first paths: t us, src&rarr;dst, EV)</th></tr>"]
    for s in sus:
        ev = ", ".join(f"{e['t_us']:.2f}: h{e['src']}&rarr;h{e['dst']} EV {e['ev']:#x}" if "ev" in e else
                       html.escape(json.dumps(e)) for e in s["evidence"][:6])
        out.append(f"<tr><td>{html.escape(s['element'])}</td><td>{s['kind']}</td><td>{s['verdict']}</td>"
                   f"<td>{s['score']:.2f}</td><td>{s['bad_paths']}/{s['paths']}</td><td>{s['pairs']}</td>"
                   f"<td>{s['first_us']:.2f}</td><td>{ev}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def _sig(v, digits=4) -> str:
    """`v` to `digits` significant digits ("-" for none): GPU-seconds span 1e-4 (a slice) to 1e+3 (131k hosts)."""
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "-"
    return f"{v:.{digits}g}"


TRAINING_FIG_ID = "training-iterations"


def _training_jobs(runs) -> list:
    """(run, job figures) of every training / trace job of the runs (summary.json's ``training``)."""
    return [(r, j) for r in runs for j in (r.summary.get("training") or [])]


def _training_table(jobs) -> str:
    head = ["run", "transport", "job", "hosts", "iterations (us)", "ideal (us)", "job time (us)", "slowest group",
            "its collectives (us)", "GPU-s", "comm share", "GPU-s wasted", "of which comm", "hosts delayed",
            "job slowdown", "iteration slowdown"]
    out = ["<table class='tbl' id='training-table'><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for r, j in jobs:
        its = j.get("iterations") or []
        times = ", ".join("not finished" if x.get("time_us") is None else _fmt(x["time_us"], 2) for x in its)
        ideal = ", ".join(_fmt(x.get("ideal_us"), 2) for x in its)
        sg = j.get("slowest_group") or {}
        w = j.get("waste") or {}
        slow = ", ".join(_fmt(x, 3) for x in w.get("iteration_slowdown") or []) or "-"
        cells = [r.label, r.transport, f"{j.get('job')} ({j.get('kind')})", j.get("hosts", "-"), times, ideal,
                 _fmt(j.get("job_time_us"), 2),
                 f"{sg.get('group')} ({sg.get('kind')}, {sg.get('hosts')} hosts)" if sg else "-",
                 _fmt(sg.get("time_us"), 2), _sig(j.get("gpu_seconds")), _fmt(j.get("comm_share"), 3),
                 _sig(w.get("gpu_seconds_wasted")) if w else "no baseline",
                 _sig(w.get("gpu_seconds_wasted_comm")), w.get("hosts_delayed", "-"), _fmt(w.get("job_slowdown"), 3),
                 slow]
        out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _training_fig(jobs):
    """Iteration times (bars, one trace per run and job) and their ideal (markers): compute plus the bytes the
    busiest host sends at full NIC rate."""
    import plotly.graph_objects as go

    fig = go.Figure()
    many = len({j.get("job") for _, j in jobs}) > 1
    for r, j in jobs:
        its = j.get("iterations") or []
        x = [x["iteration"] for x in its]
        name = f"{r.name} job {j.get('job')}" if many else r.name
        fig.add_trace(go.Bar(x=x, y=[x_.get("time_us") for x_ in its], name=name,
                             hovertemplate="iteration %{x}: %{y:.2f} us<extra>" + html.escape(name) + "</extra>"))
    seen = set()
    for r, j in jobs:
        its = j.get("iterations") or []
        ideal = tuple(x.get("ideal_us") for x in its)
        if (j.get("job"), ideal) in seen:
            continue
        seen.add((j.get("job"), ideal))
        fig.add_trace(go.Scatter(x=[x["iteration"] for x in its], y=list(ideal), mode="markers+lines",
                                 line={"dash": "dot", "color": "black"},
                                 marker={"symbol": "line-ew-open", "size": 18},
                                 name=f"ideal job {j.get('job')}" if many else "ideal"))
    fig.update_layout(title="Iteration time against the ideal (compute + bandwidth bound on an idle fabric)",
                      xaxis_title="iteration", yaxis_title="time (us)", barmode="group", height=420,
                      xaxis={"dtick": 1}, legend={"orientation": "h", "y": -0.25})
    return fig


def _sweep_parts(d: pathlib.Path):
    """(html before the figures, [(metric, figure)], html after them, {run label: cell name}) of a sweep's
    directory, or None for a directory that is not a sweep (`sweeps.report`)."""
    from mrc.emulator.sweeps import report as SR

    if not SR.SweepTable.present(d):
        return None
    tab = SR.SweepTable(d)
    ok = int((tab.df["status"] == "ok").sum()) if "status" in tab.df else len(tab.df)
    head = [f"<h2>Sweep</h2><p>{plural(len(tab.df), 'cell')}, {ok:,} completed; grid: "
            f"{html.escape(', '.join(tab.grid) or 'none')}. Medians over the seeds of each transport and grid "
            "point with bootstrap 95 % confidence intervals (docs/sweeps.md, \"Statistics\"); <i>never</i>: a "
            "failure that was never rerouted counts as infinitely late.</p>"]
    if tab.stats is not None:
        head.append(SR.stats_table(tab.stats, tab.grid))
    tail = ["<h2>Cells</h2>", SR.cells_table(tab)]
    return "\n".join(head), SR.metric_figures(tab.stats, tab.grid), "\n".join(tail), tab.names()


STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
.tbl{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}.tbl td,.tbl th{border:1px solid #ccc;padding:3px 7px;
text-align:right}.tbl td:first-child,.tbl th:first-child{text-align:left}h2{margin-top:1.6em;border-bottom:1px solid #ddd}"""


def write(d, out=None, qps=None) -> pathlib.Path:
    """Write ``report.html`` for the results under `d` (a run, a directory of runs, a sweep); returns its path."""
    d = pathlib.Path(d)
    found = find_runs(d)
    sweep = _sweep_parts(d)
    names = sweep[3] if sweep else {}
    runs = [Run(names.get(label, label), p) for label, p in found]
    out = pathlib.Path(out) if out is not None else d / REPORT_FILE
    scen = sorted({str(r.summary.get("scenario", "?")) for r in runs})
    seeds = sorted({str(r.summary.get("seed")) for r in runs}, key=lambda s: (len(s), s))
    parts = [f"<h1>MRC emulator report: {html.escape(', '.join(scen))}</h1>",
             f"<p>{plural(len(runs), 'run')} from <code>{html.escape(d.name)}</code>; "
             f"{'seed' if len(seeds) == 1 else 'seeds'} {html.escape(', '.join(seeds))}.</p>"]
    first = True
    figs = []
    if sweep:
        parts.append(sweep[0])
        figs += [("", "", fig) for _, fig in sweep[1]]
        figs.append(("html", sweep[2], None))
    figs.append(("html", "<h2>Summary</h2>\n" + _summary_table(runs), None))
    figs.append(("h2", "Flow completion times", _fct_cdf(runs)))
    tjobs = _training_jobs(runs)
    if tjobs:
        figs.append(("h2", "Training", None))
        figs.append(("training", _training_table(tjobs), _training_fig(tjobs)))
    for r in runs[:MAX_RUN_SECTIONS]:
        figs.append(("h2", f"Run {r.name}", _heatmaps(r)))
        figs.append(("", "", _ev_timeline(r, qps)))
        figs.append(("html", _localization_table(r), None))
    for kind, text, fig in figs:
        if kind == "h2":
            parts.append(f"<h2>{html.escape(text)}</h2>")
        elif kind in ("html", "training"):
            parts.append(text)
        if fig is not None:
            parts.append(_fig_html(fig, first, TRAINING_FIG_ID if kind == "training" else None))
            first = False
    if len(runs) > MAX_RUN_SECTIONS:
        parts.append(f"<p>Heatmaps and timelines of the first {MAX_RUN_SECTIONS} runs only.</p>")
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>MRC report: {html.escape(', '.join(scen))}"
            f"</title><style>{STYLE}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")
    out.write_text(page)
    return out
