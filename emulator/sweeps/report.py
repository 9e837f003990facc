"""A sweep's part of ``report.html``: the medians with their 95 % intervals first, then each headline metric
as a figure, then the cells by name; `report.write` adds the runs' own sections after it.

- The statistics table (`stats.summarize` of the table, as ``mrc emu sweep`` prints it): one row per
  transport and grid point, one column per headline metric, ``median [low, high]`` rounded as on screen
  (`stats.fmt`); an interval end that is "never" (a seed whose failure never rerouted, `stats`) reads
  ``never``.
- One figure per headline metric: the median and its interval per transport (and grid point), on a log
  axis when the values span two decades or more (a 1 us MRC reroute beside a 100 ms RoCE one); an
  interval end or a median of "never" is drawn as a triangle at the top of the axis marked "never".
- The cells: one row each, named by transport, grid point and seed (``mrc, switch.queue_bytes=100000,
  seed 3``), with their status and headline values rounded; the runs' sections below use the same names.
"""
from __future__ import annotations

import html
import pathlib

import numpy as np

from mrc.emulator.sweeps import stats as S
from mrc.emulator.sweeps import table as TB

LOG_DECADES = 2.0  # a metric whose finite values span this many decades (max / min >= 100) gets a log axis


class SweepTable:
    """The table of a sweep's directory, its grid keys and statistics, and a name for each cell."""

    def __init__(self, d: pathlib.Path):
        self.dir = pathlib.Path(d)
        self.df = TB.read(self.dir)
        cols = list(self.df.columns)
        lo = cols.index("transport") + 1 if "transport" in cols else None
        hi = cols.index("seed") if "seed" in cols else None
        self.grid = cols[lo:hi] if lo is not None and hi is not None and lo <= hi else []
        self.complete = {"transport", "seed", "status"} <= set(cols)
        self.stats = S.summarize(self.df, self.grid) if self.complete else None

    @staticmethod
    def present(d) -> bool:
        d = pathlib.Path(d)
        return (d / TB.PARQUET).is_file() or (d / TB.CSV).is_file()

    def point(self, r: dict) -> str:
        return ", ".join(f"{k}={_value(r.get(k))}" for k in self.grid)

    def name(self, r: dict) -> str:
        """``transport, key=value, ..., seed N``."""
        parts = [str(r.get("transport"))] + ([self.point(r)] if self.grid else []) + [f"seed {r.get('seed')}"]
        return ", ".join(parts)

    def names(self) -> dict[str, str]:
        """{results directory (relative, ``cells/<dir>``): cell name} for the cells that kept their files."""
        if not self.complete or "results" not in self.df:
            return {}
        return {str(r["results"]): self.name(r) for r in TB.records(self.df) if r.get("results")}


def _value(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _esc(x) -> str:
    return html.escape(str(x))


def stats_table(st, grid: list[str]) -> str:
    """The medians with their intervals: a row per transport and grid point, a column per metric."""
    if st is None or st.empty:
        return "<p>No completed cell: no statistics.</p>"
    labels = dict(S.HEADLINE)
    keys = ["transport", *grid]
    metrics = list(dict.fromkeys(st["metric"]))
    head = keys + ["cells ok"] + [labels.get(m, m) for m in metrics]
    out = ["<table class='tbl' id='sweep-stats'><tr>" + "".join(f"<th>{_esc(h)}</th>" for h in head) + "</tr>"]
    for gk, g in st.groupby(keys, sort=False, dropna=False):
        gk = gk if isinstance(gk, tuple) else (gk,)
        by = {r["metric"]: r for r in g.to_dict("records")}
        first = next(iter(by.values()))
        cells = [_value(x) for x in gk] + [f"{first['ok']}/{first['cells']}"]
        cells += [S.cell_text(by[m]["median"], by[m]["ci_low"], by[m]["ci_high"]) if m in by else "-" for m in metrics]
        out.append("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def log_axis(values) -> bool:
    """True when the finite positive values span `LOG_DECADES` decades or more and none is negative (zeros are
    drawn at the axis' floor, marked 0)."""
    v = np.asarray([x for x in values if x is not None], float)
    v = v[np.isfinite(v)]
    pos = v[v > 0]
    return len(pos) >= 2 and not (v < 0).any() and np.log10(pos.max() / pos.min()) >= LOG_DECADES


def metric_figures(st, grid: list[str]) -> list:
    """(metric, plotly figure) per headline metric: the median and its interval per transport and grid point."""
    import plotly.graph_objects as go

    if st is None or st.empty:
        return []
    labels = dict(S.HEADLINE)
    out = []
    for m in dict.fromkeys(st["metric"]):
        g = st[st["metric"] == m]
        allv = np.concatenate([g[c].to_numpy(float) for c in ("median", "ci_low", "ci_high")])
        finite = allv[np.isfinite(allv)]
        if not len(finite) and not np.isinf(allv).any():
            continue
        log = log_axis(finite)
        top = (finite.max() * (3.0 if log else 1.15)) if len(finite) else 1.0
        floor = finite[finite > 0].min() / 3.0 if log else 0.0  # where a 0 sits on a log axis
        fig = go.Figure()
        for t, tg in g.groupby("transport", sort=False):
            x = [", ".join(f"{k}={_value(v)}" for k, v in zip(grid, r)) for r in tg[grid].itertuples(index=False)] \
                if grid else [str(t)]
            med, lo, hi = (tg[c].to_numpy(float) for c in ("median", "ci_low", "ci_high"))
            fin = np.isfinite(med)
            with np.errstate(invalid="ignore"):
                up = np.where(np.isfinite(hi) & fin, hi - med, 0.0)
                dn = np.where(np.isfinite(lo) & fin, med - lo, 0.0)
            text = [f"median {S.fmt(a)}, 95 % CI [{S.fmt(b)}, {S.fmt(c)}]" if np.isfinite(b) or np.isinf(b) else
                    f"median {S.fmt(a)} (one seed: no interval)" for a, b, c in zip(med, lo, hi)]
            fig.add_trace(go.Scatter(x=[x[k] for k in np.flatnonzero(fin)],
                                     y=np.where(med[fin] <= 0, floor, med[fin]) if log else med[fin], mode="markers",
                                     name=str(t), legendgroup=str(t), marker={"size": 9},
                                     error_y={"type": "data", "symmetric": False, "array": up[fin],
                                              "arrayminus": dn[fin]},
                                     text=[text[k] for k in np.flatnonzero(fin)], hoverinfo="text+name"))
            never = np.flatnonzero(np.isinf(med) | (np.isinf(hi) & fin))
            if len(never):
                fig.add_trace(go.Scatter(x=[x[k] for k in never], y=[top] * len(never), mode="markers+text",
                                         marker={"symbol": "triangle-up", "size": 12}, text=["never"] * len(never),
                                         textposition="top center", name=f"{t}: never", legendgroup=str(t),
                                         hovertext=[("median: never" if np.isinf(med[k]) else
                                                     f"CI upper bound: never ({text[k]})") for k in never],
                                         hoverinfo="text+name", showlegend=False))
        fig.update_layout(title=labels.get(m, m) + " — median and 95 % CI over seeds" + (" (log scale)" if log else ""),
                          yaxis_type="log" if log else "linear", yaxis_title=labels.get(m, m), height=380,
                          legend={"orientation": "h", "y": -0.25})
        out.append((m, fig))
    return out


def cells_table(tab: SweepTable, limit: int = 2000) -> str:
    """The cells by name with their status and rounded headline values."""
    df = tab.df
    if not tab.complete:  # a table this version did not write: its columns as they are
        return _raw_table(df, limit)
    heads = [(c, lab) for c, lab in S.headline(df)]
    head = ["cell", "status"] + [lab for _, lab in heads] + ["cell s", "results"]
    out = ["<table class='tbl' id='sweep-cells'><tr>" + "".join(f"<th>{_esc(h)}</th>" for h in head) + "</tr>"]
    recs = TB.records(df)
    for r in recs[:limit]:
        status = r.get("status") or "-"
        if status != "ok" and r.get("error"):
            status = f"{status}: {r['error']}"
        vals = [S.fmt(np.nan if r.get(c) is None else float(r[c])) for c, _ in heads]
        res = r.get("results")
        link = f"<a href='{_esc(res)}/'>files</a>" if res else "-"
        cs = r.get("cell_s")
        out.append("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in [tab.name(r), status, *vals,
                                                                     "-" if cs is None else f"{cs:.2f}"])
                   + f"<td>{link}</td></tr>")
    out.append("</table>")
    if len(recs) > limit:
        out.append(f"<p>The first {limit:,} of {len(recs):,} cells (all are in sweep.csv).</p>")
    return "\n".join(out)


def _raw_table(df, limit: int) -> str:
    head = list(df.columns)
    out = ["<table class='tbl' id='sweep-cells'><tr>" + "".join(f"<th>{_esc(h)}</th>" for h in head) + "</tr>"]
    for r in TB.records(df)[:limit]:
        out.append("<tr>" + "".join(f"<td>{_esc(_cell(r[h]))}</td>" for h in head) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return S.fmt(v)
    return str(v)
