"""Sweeps: many seeds and parameter grids on Dask, one table, medians with confidence intervals (docs/sweeps.md).

    >>> from mrc.emulator import sweep
    >>> df = sweep("fattree-k8-permutation", transports="roce-ecmp,mrc", seeds="1-10",
    ...            grid=["switch.queue_bytes=100000,200000"], out="runs/k8-sweep")
    >>> df.groupby("transport")["fct_us_p99"].median()

Modules: `spec` (the sweep, its cells and keys, ``sweep.toml``), `cell` (one
cell on a worker, the flat row), `runner` (Dask: cluster, warm-up, faults,
progress, the table on disk), `table` (the DataFrame, Parquet and CSV),
`stats` (medians, bootstrap intervals, the printed table), `plots`, `report`
(the sweep's part of ``report.html``), `cli` (``mrc emu sweep``).
"""
from __future__ import annotations

import pathlib


def sweep(scenario, transports=None, seeds="1-10", grid=(), sets=(), out=None, workers=None, scheduler=None,
          client=None, resume=False, cell_timeout=None, progress=False, plots=True, echo=None):
    """Run a sweep; returns its table, a pandas DataFrame with one row per cell (docs/sweeps.md, "The table").

    `scenario`: a TOML file, a library name, a mapping, or a ``sweep.toml``; `transports`: comma-separated specs
    or a list (default: the scenario's); `seeds`: ``"1-10"`` or a list; `grid`: ``["KEY=V1,V2", ...]`` or
    {key: [values]}; `sets`: ``["KEY=VALUE", ...]``; `out`: results directory (``sweep.toml``, the table,
    ``stats.csv``, ``cells/``, ``plots/``, ``report.html``; None: only the returned table); `workers` / `scheduler` / `client`:
    a local cluster of that many processes, an existing cluster's scheduler address, or a dask Client;
    `cell_timeout`: seconds per cell. The statistics are in ``df.attrs["stats"]`` (`stats.summarize`).
    """
    from mrc.emulator.sweeps import runner, spec, stats
    from mrc.emulator.sweeps import table as TB

    sw = spec.make(scenario, transports, seeds, grid, sets, cell_timeout)
    kw = {} if echo is None else {"echo": echo}
    df = runner.execute(sw, out, workers=workers, scheduler=scheduler, client=client, resume=resume,
                        progress=progress, **kw)
    st = stats.summarize(df, list(sw.grid))
    if out is not None:
        out = pathlib.Path(out)
        TB.write_stats(st, out)
        if plots:
            from mrc.emulator.sweeps import plots as P

            P.metric_plots(st, list(sw.grid), out / "plots", sw.name)
            P.cdf_plots(df, list(sw.grid), out / "cells", out / "plots", sw.name)
            from mrc.emulator import report

            report.write(out)
    df.attrs["stats"] = st
    df.attrs["grid"] = list(sw.grid)
    return df


__all__ = ["sweep"]
