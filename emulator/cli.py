"""``mrc emu``: run, compare and sweep scenarios, localise faults, write reports, list the scenario library.

    mrc emu run SCENARIO [--transport NAME[:key=value,...]] [--out DIR] [--seed N] [--set key=value ...]
                         [--max-memory SIZE] [--dry-run]
    mrc emu compare SCENARIO --transports a,b[:key=value...] [--out DIR] [--seed N] [--set ...]
    mrc emu sweep SCENARIO [--transports ...] [--seeds 1-10] [--grid KEY=V1,V2 ...] ... (`sweeps.cli`)
    mrc emu localize DIR [--json]
    mrc emu report DIR [--out FILE] [--qps 1,2]
    mrc emu list

SCENARIO is a TOML file or the name of a library scenario (``mrc emu list``).
"""
from __future__ import annotations

import json
import pathlib
import sys

from mrc.cli import plural, subcommands
from mrc.errors import ConfigError


def register(parser):
    from mrc.emulator.sweeps import cli as sweep_cli

    sub = subcommands(parser)
    r = sub.add_parser("run", help="run a scenario and write its results directory",
                       description="Run a scenario (TOML file or library name) and write its results directory.")
    _common(r)
    r.add_argument("--transport", help="run this transport instead of the scenario's: name or "
                   "name:key=value,key=value (e.g. roce-ecmp:lossless=false)")
    r.add_argument("--dry-run", action="store_true", help="check the scenario, print the run's memory estimate "
                   "part by part and the limit it must fit, and stop (nothing is simulated)")
    r.set_defaults(func=cmd_run)
    c = sub.add_parser("compare", help="run one scenario with several transports: one table, one CDF plot",
                       description="Run the same scenario and seed once per transport; print one table and "
                       "write a combined FCT CDF. A transport may carry parameters: name:key=value:key=value.")
    _common(c)
    c.add_argument("--transports", required=True, help="comma-separated transport names (e.g. roce-ecmp,"
                   "roce-ecmp:lossless=false)")
    c.set_defaults(func=cmd_compare)
    sweep_cli.register(sub.add_parser("sweep", help=sweep_cli.HELP, description=sweep_cli.DESCRIPTION))
    lo = sub.add_parser("localize", help="localise failed and gray elements from a run's EV events",
                        description="Redo the controller's fault localisation offline from an MRC run's results "
                        "directory (ev_events.csv, ev_paths.csv, flows.csv, summary.json): ranked suspects with "
                        "score and evidence, and each failure's time to localise.")
    lo.add_argument("dir", help="results directory of an MRC run")
    lo.add_argument("--json", action="store_true", help="print the whole record as JSON")
    lo.add_argument("--min-pairs", type=int, default=None, help="host pairs a suspect needs (default 2)")
    lo.add_argument("--window-us", type=float, default=None, help="only events this recent (default: all)")
    lo.set_defaults(func=cmd_localize)
    rp = sub.add_parser("report", help="write report.html: an interactive page of a run or of several runs",
                        description="Write one self-contained report.html (plotly; opens without a server) for a "
                        "results directory: one run, a directory of runs (compare, demo) or a sweep (DIR/cells/*).")
    rp.add_argument("dir", help="results directory")
    rp.add_argument("--out", help="output file (default DIR/report.html)")
    rp.add_argument("--qps", help="QPs whose EV states to draw, comma-separated (default: the 8 with most EV events)")
    rp.set_defaults(func=cmd_report)
    ls = sub.add_parser("list", help="list the scenario library", description="List the scenarios shipped with "
                        "the package (run them by name).")
    ls.set_defaults(func=cmd_list)


def _common(p):
    p.add_argument("scenario", help="scenario TOML file, or a library scenario name")
    p.add_argument("--out", help="results directory (default: runs/<scenario>/<transport>/seed<N> for run, "
                   "runs/<scenario>/compare-seed<N> for compare)")
    p.add_argument("--seed", type=int, help="seed (overrides the scenario's)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario key, e.g. --set switch.queue_bytes=100000 (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--max-memory", metavar="SIZE", help=MAX_MEMORY_HELP)
    p.add_argument("--no-plots", action="store_true", help="do not write plots and report.html")
    p.add_argument("--plot-format", default="png", help="plot formats: png, pdf, svg or several, comma-separated "
                   "(default png; PNG at 300 dpi)")
    p.add_argument("--capture", metavar="PORTS", help="capture the packets leaving these ports into "
                   "capture.pcapng (comma-separated names or patterns: p0.t1.3:d5, h0, 'p*.t0.*:up*'; window and "
                   "budget: --set capture.start_us=.. capture.end_us=.. capture.max_packets=..)")



MAX_MEMORY_HELP = ("refuse the run (before anything is allocated) if its memory estimate is above SIZE: bytes, or "
                   "a number with K, M, G or T (e.g. 8G); the memory available (MemAvailable) is always a limit. "
                   "Same as --set engine.max_memory=SIZE")


def _progress(args) -> bool:
    return not args.no_progress and sys.stderr.isatty()


def _sets(args) -> list:
    """The --set overrides plus --capture (as ``capture.ports``)."""
    sets = list(args.sets)
    if getattr(args, "max_memory", None) is not None:
        from mrc.emulator import memory

        memory.parse_size(args.max_memory, "--max-memory")
        sets.append(f"engine.max_memory={json.dumps(args.max_memory)}")
    if args.capture is not None:
        ports = [p.strip() for p in args.capture.split(",") if p.strip()]
        if not ports:
            raise ConfigError("--capture", args.capture, "give port names or patterns, e.g. h0,p0.t1.3:d5")
        sets.append("capture.ports=" + json.dumps(ports))
    return sets


def _base(args) -> tuple[dict, str, object]:
    from mrc.emulator import scenario

    data, name, base_dir = scenario.read(args.scenario)
    scenario.apply_sets(data, _sets(args))
    if args.seed is not None:
        data["seed"] = args.seed
    return data, name, base_dir


def _footer(s: dict) -> str:
    sim_s = s["sim"]
    return (f"simulated {sim_s['sim_time_us']:,.1f} us in {sim_s['wall_s']:.2f} s: {sim_s['events']:,} events, "
            f"{sim_s['packet_hops']:,} packet-hops ({s['engine']['packet_hops_per_s'] or 0:,.0f}/s), "
            f"peak RSS {sim_s['peak_rss_mb']:.0f} MB")


def _writable_dir(out: pathlib.Path) -> None:
    """Create the results directory and prove it writable before simulating (so no run's results are lost)."""
    from mrc.emulator.results import writable_dir

    writable_dir(out)


def cmd_run(args) -> int:
    from mrc.emulator import coldstart, localize, plots, results, scenario, sim, summary_table
    from mrc.emulator.transports import spec as tspec

    formats = plots.check_formats(args.plot_format)
    data, name, base_dir = _base(args)
    if args.transport:
        data = tspec.apply(data, args.transport, "--transport", commas=True)
    sc = scenario.parse(data, name, base_dir)
    label = args.transport.strip() if args.transport else sc.transport_name
    if args.dry_run:
        return _dry_run(sc, label)
    out = pathlib.Path(args.out) if args.out else pathlib.Path("runs") / name / tspec.dirname(label) / f"seed{sc.seed}"
    _writable_dir(out)
    print(summary_table.header(sc, label), flush=True)
    cold = coldstart.Compiling()
    run = sim.Simulation(sc).run(progress=_progress(args))
    cold.done(run.sim["wall_s"])
    s = results.write(run, out, plots_too=False if args.no_plots else None, plot_formats=formats)
    print(summary_table.text({label: s}))
    print(_footer(s))
    if s["outcome"]["reasons"]:
        print("not completed: " + ", ".join(f"{n} {k}" for k, n in s["outcome"]["reasons"].items()))
    if run.localization and (run.localization["verdict"]["suspects"] or run.localization["failures"]):
        print("fault localisation (from EV events):")
        print("\n".join(localize.lines(run.localization)))
    if s.get("capture"):
        c = s["capture"]
        print(f"captured {plural(c['packets'], 'packet')} on {plural(len(c['ports']), 'port')} into {out / c['file']}"
              + (f" ({c['missed']:,} more past the budget of {c['max_packets']:,})" if c["missed"] else ""))
    print(f"results: {out}")
    return 0


def _dry_run(sc, label: str) -> int:
    """Print the run's memory estimate (`memory.run_parts`) and its limit; refuse as a run would."""
    import numpy as np

    from mrc.emulator import memory, workloads

    wl, _, _ = np.random.SeedSequence(sc.seed).spawn(3)
    memory.check_workload(sc)
    flows = workloads.build(sc.jobs, sc.topo, np.random.default_rng(wl)).flows
    est = memory.run_parts(sc, flows)
    cap, what = memory.limit(sc.max_memory)
    print(f"{sc.name} ({label}, seed {sc.seed}): {sc.topo.n_hosts:,} hosts, {sc.topo.n_ports:,} ports, "
          f"{len(flows):,} flows; memory estimate:")
    print("\n".join(est.lines()))
    print(f"limit: {what}")
    memory.check(est, sc.max_memory)
    print("fits: the run would start")
    return 0


def cmd_compare(args) -> int:
    from mrc.emulator import coldstart, metrics, plots, results, scenario, sim, summary_table
    from mrc.emulator.transports import spec as tspec

    formats = plots.check_formats(args.plot_format)
    specs = tspec.split(args.transports)
    base, name, base_dir = _base(args)
    scs = [scenario.parse(tspec.apply(base, spec), name, base_dir) for spec in specs]  # all checked first
    out = pathlib.Path(args.out) if args.out else pathlib.Path("runs") / name / f"compare-seed{scs[0].seed}"
    _writable_dir(out)
    for f in ("fct_cdf.png", "fct_cdf.pdf", "fct_cdf.svg", "report.html", "compare.json", "compare.csv"):
        (out / f).unlink(missing_ok=True)
    tables, summaries = {}, {}
    print(summary_table.header(scs[0], args.transports), flush=True)
    cold = coldstart.Compiling()
    for spec, sc in zip(specs, scs):
        run = sim.Simulation(sc).run(progress=_progress(args))
        cold.done(run.sim["wall_s"])
        summaries[spec] = results.write(run, out / tspec.dirname(spec), plots_too=False if args.no_plots else None,
                                        plot_formats=formats)
        tables[spec] = metrics.flow_table(run)
    print(summary_table.text(summaries))
    if not args.no_plots:
        plots.fct_cdf(tables, out / "fct_cdf.png", name, formats=formats)
        from mrc.emulator import report

        report.write(out)
    keep = ("fct_us", "slowdown", "flows", "cct_us", "jobs", "victims", "reroute")
    (out / "compare.json").write_text(json.dumps({k: {kk: v[kk] for kk in keep} for k, v in summaries.items()},
                                                 indent=2, default=results._clean) + "\n")
    _, rows = summary_table.rows(summaries)
    results.write_csv(out / "compare.csv", summary_table.csv_columns(rows))
    print(f"results: {out}")
    return 0


def cmd_localize(args) -> int:
    from mrc.ctl.localizer import Params
    from mrc.emulator import localize, localize_dir

    kw = {k: v for k, v in (("min_pairs", args.min_pairs), ("window_us", args.window_us)) if v is not None}
    rec = localize_dir.from_dir(args.dir, Params(**kw).check())
    if args.json:
        print(json.dumps(rec, indent=2))
        return 0
    v = rec["verdict"]
    print(f"{rec['events']} EV events, {v['bad_paths']} bad paths ({v['unexplained']} unexplained), "
          f"{rec['paths']} paths in use")
    print("\n".join(localize.lines(rec)) or "  no suspect")
    return 0


def cmd_report(args) -> int:
    from mrc.emulator import report

    qps = None
    if args.qps:
        try:
            qps = [int(x) for x in args.qps.split(",") if x.strip()]
        except ValueError:
            raise ConfigError("--qps", args.qps, "comma-separated QP numbers") from None
    path = report.write(args.dir, args.out, qps=qps)
    print(f"report: {path}")
    return 0


def cmd_list(args) -> int:
    import tomllib

    from mrc.emulator import scenarios

    for n in scenarios.names():
        d = tomllib.loads(scenarios.path(n).read_text())
        print(f"{n:34s} {d.get('description', '')}")
    return 0
