"""``mrc emu``: run and compare scenarios, list the scenario library.

    mrc emu run SCENARIO [--out DIR] [--seed N] [--set key=value ...] [--no-progress]
    mrc emu compare SCENARIO --transports a,b[:key=value...] [--out DIR] [--seed N] [--set ...]
    mrc emu list

SCENARIO is a TOML file or the name of a library scenario (``mrc emu list``).
"""
from __future__ import annotations

import json
import pathlib
import sys

from mrc.cli import subcommands
from mrc.errors import ConfigError


def register(parser):
    sub = subcommands(parser)
    r = sub.add_parser("run", help="run a scenario and write its results directory",
                       description="Run a scenario (TOML file or library name) and write its results directory.")
    _common(r)
    r.set_defaults(func=cmd_run)
    c = sub.add_parser("compare", help="run one scenario with several transports: one table, one CDF plot",
                       description="Run the same scenario and seed once per transport; print one table and "
                       "write a combined FCT CDF. A transport may carry parameters: name:key=value:key=value.")
    _common(c)
    c.add_argument("--transports", required=True, help="comma-separated transport names (e.g. roce-ecmp,"
                   "roce-ecmp:lossless=false)")
    c.set_defaults(func=cmd_compare)
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
    p.add_argument("--out", help="results directory (default: runs/<scenario name>)")
    p.add_argument("--seed", type=int, help="seed (overrides the scenario's)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario key, e.g. --set switch.queue_bytes=100000 (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-plots", action="store_true", help="do not write plots and report.html")
    p.add_argument("--plot-format", default="png", help="plot formats: png, pdf, svg or several, comma-separated "
                   "(default png; PNG at 300 dpi)")
    p.add_argument("--capture", metavar="PORTS", help="capture the packets leaving these ports into "
                   "capture.pcapng (comma-separated names or patterns: p0.t1.3:d5, h0, 'p*.t0.*:up*'; window and "
                   "budget: --set capture.start_us=.. capture.end_us=.. capture.max_packets=..)")


def _progress(args) -> bool:
    return not args.no_progress and sys.stderr.isatty()


def _fmt(v, digits=1):
    return "-" if v is None else f"{v:,.{digits}f}"


def _row(label, s):
    f, sd = s["fct_us"], s["slowdown"]
    cct = s["cct_us"]
    cct_s = "-" if not cct else ("-" if any(x is None for x in cct) else _fmt(max(cct)))
    return [label, f"{s['flows']['completed']}/{s['flows']['total']}", _fmt(f["p50"]), _fmt(f["p99"]),
            _fmt(f["p999"]), _fmt(f["max"]), _fmt(sd["p50"], 2), _fmt(sd["p99"], 2), cct_s]


HEAD = ["transport", "flows done", "FCT p50 us", "p99", "p99.9", "max", "slowdown p50", "p99", "CCT max us"]


def _table(rows):
    w = [max(len(str(r[k])) for r in [HEAD] + rows) for k in range(len(HEAD))]
    lines = ["  ".join(str(c).rjust(w[k]) if k else str(c).ljust(w[k]) for k, c in enumerate(r)) for r in [HEAD] + rows]
    return "\n".join(lines)


def _default_out(args, name):
    return pathlib.Path(args.out) if args.out else pathlib.Path("runs") / name


def _sets(args) -> list:
    """The --set overrides plus --capture (as ``capture.ports``)."""
    sets = list(args.sets)
    if args.capture is not None:
        ports = [p.strip() for p in args.capture.split(",") if p.strip()]
        if not ports:
            raise ConfigError("--capture", args.capture, "give port names or patterns, e.g. h0,p0.t1.3:d5")
        sets.append("capture.ports=" + json.dumps(ports))
    return sets


def cmd_run(args) -> int:
    from mrc.emulator import localize, plots, results, scenario, sim

    sc = scenario.load(args.scenario, seed=args.seed, sets=_sets(args))
    out = _default_out(args, sc.name)
    formats = plots.check_formats(args.plot_format)
    data = sim.Simulation(sc).run(progress=_progress(args))
    s = results.write(data, out, plots_too=False if args.no_plots else None, plot_formats=formats)
    print(_table([_row(sc.transport_name, s)]))
    sim_s = s["sim"]
    print(f"simulated {sim_s['sim_time_us']:,.1f} us in {sim_s['wall_s']:.2f} s: {sim_s['events']:,} events, "
          f"{sim_s['packet_hops']:,} packet-hops ({s['engine']['packet_hops_per_s'] or 0:,.0f}/s), "
          f"peak RSS {sim_s['peak_rss_mb']:.0f} MB")
    if s["outcome"]["reasons"]:
        print("not completed: " + ", ".join(f"{n} {k}" for k, n in s["outcome"]["reasons"].items()))
    if data.localization and (data.localization["verdict"]["suspects"] or data.localization["failures"]):
        print("fault localisation (from EV events):")
        print("\n".join(localize.lines(data.localization)))
    if s.get("capture"):
        c = s["capture"]
        print(f"captured {c['packets']:,} packets on {len(c['ports'])} port(s) into {out / c['file']}"
              + (f" ({c['missed']:,} more past the budget of {c['max_packets']:,})" if c["missed"] else ""))
    print(f"results: {out}")
    return 0


def parse_transport(spec: str) -> tuple[str, dict]:
    from mrc.emulator.scenario import _toml_value

    parts = spec.strip().split(":")
    name = parts[0].strip()
    if not name:
        raise ConfigError("--transports", spec, "empty transport name")
    params = {}
    for p in parts[1:]:
        if "=" not in p:
            raise ConfigError("--transports", spec, f"{p!r}: write key=value after the name")
        k, _, v = p.partition("=")
        params[k.strip()] = _toml_value(v.strip())
    return name, params


def cmd_compare(args) -> int:
    from mrc.emulator import metrics, plots, results, scenario, sim

    formats = plots.check_formats(args.plot_format)
    specs = [s for s in args.transports.split(",") if s.strip()]
    if not specs:
        raise ConfigError("--transports", args.transports, "give at least one transport")
    base, name, base_dir = scenario.read(args.scenario)
    scenario.apply_sets(base, _sets(args))
    if args.seed is not None:
        base["seed"] = args.seed
    out = _default_out(args, name)
    rows, tables, summaries = [], {}, {}
    for spec in specs:
        tname, params = parse_transport(spec)
        data = json.loads(json.dumps(base))
        given = data.get("transport", {}) if isinstance(data.get("transport"), dict) else {}
        data["transport"] = ({**given, **params, "name": tname} if given.get("name") == tname
                             else {**params, "name": tname})
        sc = scenario.parse(data, name, base_dir)
        run = sim.Simulation(sc).run(progress=_progress(args))
        label = spec.strip()
        s = results.write(run, out / label.replace(":", "_").replace("=", "-"),
                          plots_too=False if args.no_plots else None, plot_formats=formats)
        summaries[label] = s
        tables[label] = metrics.flow_table(run)
        rows.append(_row(label, s))
    print(_table(rows))
    out.mkdir(parents=True, exist_ok=True)
    if not args.no_plots:
        plots.fct_cdf(tables, out / "fct_cdf.png", name, formats=formats)
        from mrc.emulator import report

        report.write(out)
    (out / "compare.json").write_text(json.dumps({k: {kk: v[kk] for kk in ("fct_us", "slowdown", "flows", "cct_us")}
                                                  for k, v in summaries.items()}, indent=2) + "\n")
    results.write_csv(out / "compare.csv", {h: [r[k] for r in rows] for k, h in enumerate(
        ["transport", "flows_done", "fct_p50_us", "fct_p99_us", "fct_p999_us", "fct_max_us", "slowdown_p50",
         "slowdown_p99", "cct_max_us"])})
    print(f"results: {out}")
    return 0


def cmd_localize(args) -> int:
    from mrc.ctl_localize import Params
    from mrc.emulator import localize

    kw = {k: v for k, v in (("min_pairs", args.min_pairs), ("window_us", args.window_us)) if v is not None}
    rec = localize.from_dir(args.dir, Params(**kw).check())
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
