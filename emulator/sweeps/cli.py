"""``mrc emu sweep``: many seeds and a parameter grid on Dask; a table, medians with 95 % intervals, plots.

    mrc emu sweep SCENARIO [--transports a,b,...] [--seeds 1-10] [--grid KEY=V1,V2,... ...]
                  [--set KEY=VALUE ...] [--out DIR] [--workers N | --scheduler tcp://HOST:PORT]
                  [--resume] [--cell-timeout-s S] [--no-plots] [--no-progress]
"""
from __future__ import annotations

import pathlib
import sys

from mrc.cli import deprecated_spelling, plural

# HELP goes through argparse's %-formatting (the group's listing), DESCRIPTION is printed as it is
HELP = "run a scenario over seeds x transports x a parameter grid on Dask: table, medians with 95 %% CIs, report"
DESCRIPTION = ("Run every cell (transport x grid point x seed) of a scenario on a Dask cluster (a local one by "
               "default), write one table (DIR/sweep.parquet, DIR/sweep.csv), each cell's results directory "
               "(DIR/cells/), DIR/sweep.toml (re-run with `mrc emu sweep DIR/sweep.toml`), DIR/report.html and "
               "DIR/plots/, and print the median and bootstrap 95 % confidence interval of the headline metrics "
               "per transport and grid point (docs/sweeps.md).")


def register(p):
    p.add_argument("scenario", help="scenario TOML file, library scenario name, or a sweep.toml to run again")
    p.add_argument("--transports", help="comma-separated transports, each name[:key=value...] "
                   "(default: the scenario's)")
    p.add_argument("--seeds", default=None, help="seeds: N, N-M or a comma-separated list of them (default 1-10)")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a scenario key and its values (TOML); repeat for a product of several keys")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario key in every cell (repeatable)")
    p.add_argument("--out", help="results directory (default: runs/<scenario>/sweep, or the sweep.toml's directory)")
    p.add_argument("--max-memory", metavar="SIZE", help="refuse a cell whose memory estimate is above SIZE (e.g. 8G; "
                   "as --set engine.max_memory=SIZE); the memory available is always a limit")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, help="worker processes of the local Dask cluster (default: the core count)")
    g.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask cluster's scheduler, tcp://HOST:PORT")
    p.add_argument("--resume", action="store_true", help="keep the cells already in DIR's table (same scenario, "
                   "transport, seed and code version), run the rest")
    p.add_argument("--cell-timeout-s", type=float, help="wall seconds per cell; a cell over it is "
                   "recorded as a timeout")
    deprecated_spelling(p, "--cell-timeout", "--cell-timeout-s", type=float)
    p.add_argument("--no-plots", action="store_true", help="do not write the PNG plots and report.html")
    p.add_argument("--no-progress", action="store_true", help="no live progress bar (lines instead)")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    from mrc.emulator.sweeps import spec, stats, sweep
    from mrc.errors import ConfigError

    if args.workers is not None and args.workers < 1:
        raise ConfigError("--workers", args.workers, "at least 1")
    src = pathlib.Path(args.scenario)
    from_file = spec._is_sweep_file(src)
    if args.out:
        out = pathlib.Path(args.out)
    elif from_file:
        out = src.parent
    else:
        out = pathlib.Path("runs") / spec.make(args.scenario, args.transports, "1", (), args.sets).name / "sweep"
    seeds = args.seeds if args.seeds is not None else (None if from_file else "1-10")
    if args.max_memory is not None:
        import json

        from mrc.emulator import memory

        memory.parse_size(args.max_memory, "--max-memory")
        args.sets = [*args.sets, f"engine.max_memory={json.dumps(args.max_memory)}"]
    try:
        df = sweep(args.scenario, transports=args.transports, seeds=seeds, grid=args.grid, sets=args.sets, out=out,
                   workers=args.workers, scheduler=args.scheduler, resume=args.resume, cell_timeout=args.cell_timeout_s,
                   progress=not args.no_progress and sys.stderr.isatty(), plots=not args.no_plots)
    except KeyboardInterrupt:
        return 130
    print(stats.text(df.attrs["stats"], df.attrs["grid"]))
    bad = df[df["status"] != "ok"]
    if len(bad):
        print(f"{len(bad):,} of {plural(len(df), 'cell')} failed:")
        for r in bad.head(10).to_dict("records"):
            print(f"  cell {r['cell']} ({r['transport']}, seed {r['seed']}): {r['status']}: {r['error']}")
    print("median [bootstrap 95% CI] over the seeds of each row (docs/sweeps.md, \"Statistics\")")
    print(f"results: {out} (sweep.parquet, sweep.csv, stats.csv, cells/"
          + (", plots/, report.html)" if not args.no_plots else ")"))
    return 0 if not len(bad) else 1
