"""Plots of a run (matplotlib, Agg backend): FCT CDF, slowdown by flow size, utilisation over time.

Each function writes `path` in every format of ``formats`` (``png``, ``pdf``, ``svg``: the suffix
is replaced; PNG at `PNG_DPI`, enough for a paper's column); time axes carry the failures
(shaded from start to end, labelled) and the times the controller localised them (dotted).
"""
from __future__ import annotations

import pathlib

import numpy as np

FORMATS = ("png", "pdf", "svg")
PNG_DPI = 300


def check_formats(text) -> tuple[str, ...]:
    """``"png"`` / ``"png,pdf"`` -> a tuple of formats; `ConfigError` naming ``--plot-format`` otherwise."""
    from mrc.errors import ConfigError

    fmts = tuple(f.strip().lower() for f in (text.split(",") if isinstance(text, str) else text) if f.strip())
    bad = [f for f in fmts if f not in FORMATS]
    if bad or not fmts:
        raise ConfigError("--plot-format", text, f"one or more of {', '.join(FORMATS)} (comma-separated)")
    return fmts


def _save(fig, path, formats=("png",)) -> list[pathlib.Path]:
    plt = _plt()
    out = []
    for fmt in formats:
        p = pathlib.Path(path).with_suffix("." + fmt)
        fig.savefig(p, dpi=PNG_DPI if fmt == "png" else None)
        out.append(p)
    plt.close(fig)
    return out


def mark_failures(ax, failures, localized=None) -> None:
    """Shade each failure (dicts with kind, target, at_us, end_us) and dot where it was localised
    (`localized`: failure index -> time in us)."""
    localized = localized or {}
    for f in failures or ():
        at, end = f.get("at_us"), f.get("end_us")
        if at is None:
            continue
        if end is not None and end > at:
            ax.axvspan(at, end, color="tab:red", alpha=0.08, lw=0)
        ax.axvline(at, color="tab:red", lw=1.0)
        ax.annotate(f"{f.get('kind', 'failure')} {f.get('target', '')}", (at, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(3, -10), textcoords="offset points", fontsize=6, color="tab:red")
        t = localized.get(f.get("index"))
        if t is not None:
            ax.axvline(t, color="tab:purple", lw=1.0, ls=":")
            ax.annotate("localised", (t, 0.0), xycoords=("data", "axes fraction"), xytext=(3, 3),
                        textcoords="offset points", fontsize=6, color="tab:purple")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def fct_cdf(tables: dict, path, title: str, formats=("png",)) -> None:
    """One CDF curve per label (`tables`: label -> `metrics.flow_table`)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, ft in tables.items():
        x = np.sort(ft["fct_us"][~np.isnan(ft["fct_us"])])
        if len(x):
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=f"{label} ({len(x)} flows)")
    ax.set_xscale("log")
    ax.set_xlabel("flow completion time (us)")
    ax.set_ylabel("fraction of flows")
    ax.set_title(f"FCT CDF: {title}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    _save(fig, path, formats)


def slowdown_by_size(ft: dict, path, title: str, bins: int = 10, formats=("png",)) -> None:
    """Median and 99th-percentile slowdown per flow-size bin (log-spaced)."""
    plt = _plt()
    ok = ~np.isnan(ft["slowdown"])
    size = ft["size_bytes"][ok].astype(float)
    sd = ft["slowdown"][ok]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    if len(size):
        lo, hi = size.min(), size.max()
        edges = np.unique(np.geomspace(lo, hi * 1.000001, bins + 1)) if hi > lo else np.array([lo, hi + 1])
        idx = np.clip(np.digitize(size, edges) - 1, 0, len(edges) - 2)
        xs, p50, p99 = [], [], []
        for b in range(len(edges) - 1):
            m = idx == b
            if m.any():
                xs.append(np.sqrt(edges[b] * edges[b + 1]))
                p50.append(np.percentile(sd[m], 50))
                p99.append(np.percentile(sd[m], 99))
        ax.plot(xs, p50, "o-", label="p50")
        ax.plot(xs, p99, "s--", label="p99")
        ax.set_xscale("log")
    ax.set_xlabel("flow size (bytes)")
    ax.set_ylabel("slowdown (FCT / FCT alone)")
    ax.set_title(f"Slowdown by size: {title}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path, formats)


def utilisation(samples: dict, path, title: str, formats=("png",), failures=None, localized=None) -> None:
    """Mean utilisation per link group and goodput over time, with the failures marked."""
    plt = _plt()
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(6.4, 6.0), sharex=True)
    t = samples.get("t_us", np.zeros(0))
    for k, v in samples.items():
        if k.startswith("util_") and k.endswith("_mean"):
            ax.plot(t, v, label=k[5:-5])
    ax.set_ylabel("mean link utilisation")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"Utilisation: {title}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=3)
    if "goodput_gbps" in samples:
        ax2.plot(t, samples["goodput_gbps"], color="k")
    ax2.set_ylabel("goodput (Gb/s)")
    ax2.set_xlabel("time (us)")
    ax2.grid(True, alpha=0.3)
    for a in (ax, ax2):
        mark_failures(a, failures, localized)
    fig.tight_layout()
    _save(fig, path, formats)
