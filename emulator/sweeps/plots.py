"""A sweep's plots (``DIR/plots/``): headline metrics with their 95 % intervals, FCT CDFs across seeds.

- ``vs-<grid key>.png`` (one per grid key): each headline metric against the
  key, one line per transport (and per value of the other grid keys), the
  median with its bootstrap interval as a band;
- ``by-transport.png`` (a sweep without a grid): each headline metric per
  transport, the median with its interval as an error bar;
- ``fct-cdf[-<grid point>].png``: the FCT CDF of every seed, one colour per
  transport, one thin line per seed (how much the seeds disagree is the
  spread of the lines).

A metric whose values span two decades or more gets a log axis (`report.log_axis`: a 1 us MRC
reroute and a 100 ms RoCE one are both readable); a median or an interval end of "never" (a
failure never rerouted, `stats`) is a triangle at the top of the axis marked "never", not
dropped.
"""
from __future__ import annotations

import pathlib

import numpy as np

from mrc.emulator.plots import _plt
from mrc.emulator.sweeps import stats as S


def _finite(v):
    v = np.asarray(v, float)
    return np.where(np.isinf(v), np.nan, v)


def _label(point: tuple) -> str:
    return ", ".join(f"{k}={v}" for k, v in point)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in text)[:120]


def _axis(ax, raw) -> None:
    """A log y axis when the metric's finite values span decades (`report.log_axis`)."""
    from mrc.emulator.sweeps.report import log_axis

    v = np.concatenate([np.asarray(x, float) for x in raw])
    v = v[np.isfinite(v)]
    if log_axis(v):
        if (v == 0).any():  # a 0 (e.g. goodput that never fell) stays on the axis: linear below the smallest value
            ax.set_yscale("symlog", linthresh=float(v[v > 0].min()))
        else:
            ax.set_yscale("log")


def _never(ax, x, med, hi, color=None) -> None:
    """A triangle marked "never" at the top of the axis where the median or the interval's upper end is infinite
    (reroute times that never happened, `stats`), so that the bound is shown, not dropped."""
    med, hi = np.asarray(med, float), np.asarray(hi, float)
    k = np.flatnonzero(np.isinf(med) | np.isinf(hi))
    if not len(k):
        return
    ax.autoscale_view()
    top = ax.get_ylim()[1]
    for j in k:
        ax.plot([x[j]], [top], marker="^", ms=8, color=color or "C3", clip_on=False, zorder=5)
        ax.annotate("never" if np.isinf(med[j]) else "CI: never", (x[j], top), xytext=(0, 6),
                    textcoords="offset points", ha="center", fontsize=7, color=color or "C3")


def metric_plots(st, grid_keys: list[str], out: pathlib.Path, title: str) -> list[pathlib.Path]:
    """``vs-<key>.png`` per grid key, or ``by-transport.png`` without a grid."""
    plt = _plt()
    metrics = list(dict.fromkeys(st["metric"])) if not st.empty else []
    if not metrics:
        return []
    labels = dict(S.HEADLINE)
    written = []
    ncol = min(3, len(metrics))
    nrow = -(-len(metrics) // ncol)
    if not grid_keys:
        fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.0 * nrow), squeeze=False)
        ts = list(dict.fromkeys(st["transport"]))
        for ax, m in zip(axes.flat, metrics):
            g = st[st["metric"] == m].set_index("transport").reindex(ts)
            raw = [g[c].to_numpy(float) for c in ("median", "ci_low", "ci_high")]
            med, lo, hi = (_finite(v) for v in raw)
            x = np.arange(len(ts))
            _axis(ax, raw)
            ax.errorbar(x, med, yerr=[np.nan_to_num(med - lo), np.nan_to_num(hi - med)], fmt="o", capsize=3)
            _never(ax, x, raw[0], raw[2])
            ax.set_xticks(x, ts, rotation=30, ha="right", fontsize=7)
            ax.set_title(labels.get(m, m) + (" (log)" if ax.get_yscale() != "linear" else ""), fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
        for ax in list(axes.flat)[len(metrics):]:
            ax.set_visible(False)
        fig.suptitle(f"{title}: median and 95 % CI over seeds", fontsize=10)
        p = out / "by-transport.png"
        _save(plt, fig, p)
        return [p]
    for key in grid_keys:
        others = [k for k in grid_keys if k != key]
        fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.0 * nrow), squeeze=False)
        for ax, m in zip(axes.flat, metrics):
            g = st[st["metric"] == m]
            _axis(ax, [g[c].to_numpy(float) for c in ("median", "ci_low", "ci_high")])
            for lk, line in g.groupby(["transport", *others], sort=False, dropna=False):
                lk = lk if isinstance(lk, tuple) else (lk,)
                xs = list(line[key])
                numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs)
                x = np.asarray(xs, float) if numeric else np.arange(len(xs))
                order = np.argsort(x, kind="stable")
                raw = [line[c].to_numpy(float)[order] for c in ("median", "ci_low", "ci_high")]
                med, lo, hi = (_finite(v) for v in raw)
                lab = lk[0] + (f" ({_label(tuple(zip(others, lk[1:])))})" if others else "")
                (ln,) = ax.plot(x[order], med, "o-", lw=1.2, ms=3, label=lab)
                ax.fill_between(x[order], lo, hi, color=ln.get_color(), alpha=0.18, lw=0)
                _never(ax, x[order], raw[0], raw[2], color=ln.get_color())
                if not numeric:
                    ax.set_xticks(np.arange(len(xs)), [str(v) for v in xs], fontsize=7)
            ax.set_xlabel(key, fontsize=8)
            ax.set_title(labels.get(m, m) + (" (log)" if ax.get_yscale() != "linear" else ""), fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
        for ax in list(axes.flat)[len(metrics):]:
            ax.set_visible(False)
        axes.flat[0].legend(fontsize=6)
        fig.suptitle(f"{title}: median and 95 % CI over seeds", fontsize=10)
        p = out / f"vs-{_slug(key)}.png"
        _save(plt, fig, p)
        written.append(p)
    return written


def cdf_plots(df, grid_keys: list[str], cells_dir: pathlib.Path, out: pathlib.Path, title: str) -> list[pathlib.Path]:
    """``fct-cdf[-<grid point>].png``: every completed cell's FCT CDF, by transport."""
    plt = _plt()
    ok = df[(df["status"] == "ok") & df["results"].notna()]
    written = []
    groups = ok.groupby(grid_keys, sort=False, dropna=False) if grid_keys else [((), ok)]
    for gk, g in groups:
        gk = gk if isinstance(gk, tuple) else (gk,)
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        colours = {}
        for r in g.to_dict("records"):
            f = cells_dir.parent / r["results"] / "flows.csv"
            if not f.is_file():
                continue
            fct = _fct(f)
            if not len(fct):
                continue
            t = r["transport"]
            first = t not in colours
            colours.setdefault(t, f"C{len(colours) % 10}")
            ax.step(np.sort(fct), np.arange(1, len(fct) + 1) / len(fct), where="post", lw=0.8, alpha=0.5,
                    color=colours[t], label=t if first else None)
        if not colours:
            plt.close(fig)
            continue
        point = tuple(zip(grid_keys, gk))
        ax.set_xscale("log")
        ax.set_xlabel("flow completion time (us)")
        ax.set_ylabel("fraction of flows")
        ax.set_title(f"FCT CDF per seed: {title}" + (f"\n{_label(point)}" if point else ""), fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
        p = out / ("fct-cdf" + (f"-{_slug(_label(point))}" if point else "") + ".png")
        _save(plt, fig, p)
        written.append(p)
    return written


def _fct(path: pathlib.Path) -> np.ndarray:
    import csv

    with open(path, newline="") as fh:
        rows = csv.DictReader(fh)
        v = [float(r["fct_us"]) for r in rows if r.get("fct_us")]
    return np.asarray(v, float)


def _save(plt, fig, path: pathlib.Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
