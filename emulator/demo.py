"""``mrc demo``: MRC against ECMP on a small multi-plane fabric with a link failure mid-run.

    mrc demo [--out DIR] [--seed N] [--transports mrc,spray,roce-ecmp] [--scale tiny|small|default]
             [--no-progress]

One scenario (`scenario_dict`): a 4-plane leaf-spine of 64 hosts at 100G
(8 leaves x 8 spines per plane), a permutation of 4 MB flows, and one
leaf-spine link going down 20 us into the run: the one that carries the
most flows under ECMP hashing (`busiest_ecmp_link`), so that the baseline
meets the failure too. It runs once per
transport with the same seed (default: ``mrc``, ``spray``, ``roce-ecmp``
with its defaults, lossless RoCE over ECMP with DCQCN, whose routing repairs
the failure after ``route_detect_us``), prints one table (FCT p50 / p99 /
max, slowdown, and the reroute time of the failure) and writes:

- ``DIR/scenario.toml``: the scenario (``mrc emu run DIR/scenario.toml``
  re-runs it with the scenario's transport; ``mrc emu compare`` with others);
- ``DIR/<transport>/``: each run's results directory (`results.write`, its plots but no
  ``report.html`` of its own);
- ``DIR/fct_cdf.png``: the FCT CDFs of all transports on one plot; ``DIR/report.html``: the
  interactive report of all the runs;
- ``DIR/demo.csv`` (numbers: `summary_table.rows`) and ``DIR/demo.json``: the table.

``--scale tiny`` (16 hosts, 2 planes, 256 KB flows) and ``small`` (32 hosts)
are for tests and slow machines.
"""
from __future__ import annotations

import json
import pathlib
import sys

from mrc.errors import ConfigError

SCALES = {  # hosts_per_leaf, leaves, spines, planes, flow bytes
    "tiny": (4, 4, 4, 2, 256_000),
    "small": (4, 8, 8, 4, 1_000_000),
    "default": (8, 8, 8, 4, 4_000_000),
}
FAIL_AT_US = 20.0
DEFAULT_TRANSPORTS = "mrc,spray,roce-ecmp"


def busiest_ecmp_link(data: dict) -> list[str]:
    """The leaf-to-spine link that carries the most flows of the scenario under `roce-ecmp`'s hashing
    (each flow's plane and UDP source port as that transport draws them from the seed)."""
    from mrc.emulator import scenario, sim

    d = json.loads(json.dumps(data))
    d["transport"] = {"name": "roce-ecmp"}
    d.pop("failures", None)
    simu = sim.Simulation(scenario.parse(d, "mrc-demo"))
    topo, R = simu.sc.topo, simu.T.roce
    count: dict[int, int] = {}
    for fl in simu.E.flow:
        ep = int(fl["ep"])
        route = topo.ecmp_route(int(fl["src"]), int(fl["dst"]), int(R[ep]["plane"]), int(R[ep]["sport"]), 0)
        if len(route) > 2:  # leaves the source leaf upwards
            count[int(route[1])] = count.get(int(route[1]), 0) + 1
    q = min(count, key=lambda p: (-count[p], p)) if count else topo.n_hosts * topo.n_planes
    return [topo.node_name(int(topo.port[q]["node"])), topo.node_name(topo.peer_node(q))]


def scenario_stub(scale: str) -> dict:
    """The demo's fabric and a one-flow workload (to check transport parameters cheaply)."""
    hpl, leaves, spines, planes, size = SCALES[scale]
    return {"topology": {"kind": "leaf-spine", "hosts_per_leaf": hpl, "leaves": leaves, "spines": spines,
                         "planes": planes, "link_gbps": 100},
            "workload": {"kind": "flows", "flows": [{"src": 0, "dst": 1, "size_bytes": 1}]}}


def scenario_dict(scale: str = "default", seed: int = 1, transport: str = "mrc") -> dict:
    """The demo's scenario as a scenario mapping (`mrc.emulator.scenario.parse`)."""
    if scale not in SCALES:
        raise ConfigError("--scale", scale, f"one of {', '.join(SCALES)}")
    hpl, leaves, spines, planes, size = SCALES[scale]
    d = {
        "name": "mrc-demo",
        "description": f"{planes}-plane leaf-spine, {hpl * leaves} hosts at 100G, permutation of {size // 1000} KB "
                       f"flows, one leaf-spine link down at {FAIL_AT_US:g} us",
        "seed": seed,
        "topology": {"kind": "leaf-spine", "hosts_per_leaf": hpl, "leaves": leaves, "spines": spines,
                     "planes": planes, "link_gbps": 100},
        "transport": {"name": transport},
        "workload": {"kind": "permutation", "size_bytes": size},
        "metrics": {"sample_us": 2.0},
    }
    d["failures"] = [{"kind": "link-down", "at_us": FAIL_AT_US, "link": busiest_ecmp_link(d)}]
    return d


def register(parser):
    parser.description = ("Run MRC, oblivious spraying and RoCE over ECMP on a small multi-plane fabric with a "
                          "link failure mid-run; print FCT percentiles and reroute times, write plots and results.")
    parser.add_argument("--out", default="mrc-demo-results", help="results directory (default: mrc-demo-results)")
    parser.add_argument("--seed", type=int, default=1, help="seed (default 1): same seed, same numbers")
    parser.add_argument("--transports", default=DEFAULT_TRANSPORTS,
                        help=f"comma-separated transports (default {DEFAULT_TRANSPORTS}; any of `mrc emu`'s, "
                        "with name:key=value parameters)")
    parser.add_argument("--scale", default="default", choices=list(SCALES),
                        help="fabric size: default (64 hosts, 4 planes), small (32 hosts), tiny (16 hosts, 2 "
                        "planes; for tests)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-plots", action="store_true", help="do not write plots and report.html")
    parser.add_argument("--plot-format", default="png", help="plot formats: png, pdf, svg or several, "
                        "comma-separated (default png)")
    parser.set_defaults(func=cmd_demo)


def _toml(d: dict, prefix: str = "") -> str:
    """A scenario mapping as TOML (scalars, lists of scalars, tables, one array of tables)."""
    def val(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return repr(v)

    lines, tables = [], []
    for k, v in d.items():
        if isinstance(v, dict):
            tables.append((f"[{prefix}{k}]", v))
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            tables.extend((f"[[{prefix}{k}]]", x) for x in v)
        else:
            lines.append(f"{k} = {val(v)}")
    out = "\n".join(lines) + "\n"
    for head, t in tables:
        out += f"\n{head}\n" + "\n".join(f"{k} = {val(v)}" for k, v in t.items()) + "\n"
    return out


def run_demo(out, seed: int = 1, transports: str = DEFAULT_TRANSPORTS, scale: str = "default",
             progress: bool = False, plots_too: bool = True, echo=print, plot_formats=("png",)) -> dict:
    """Run the demo; returns {label: summary}. `echo` prints the lines shown on screen."""
    from mrc.emulator import coldstart, metrics, plots, results, scenario, sim, summary_table
    from mrc.emulator.transports import spec as tspec

    if scale not in SCALES:
        raise ConfigError("--scale", scale, f"one of {', '.join(SCALES)}")
    specs = tspec.split(transports)
    parsed = [tspec.parse(t) for t in specs]
    for name, params in parsed:  # every transport and its parameters are checked before the first run
        scenario.parse({**scenario_stub(scale), "transport": {**params, "name": name}}, "mrc-demo")
    out = pathlib.Path(out)
    results.writable_dir(out)
    base = scenario_dict(scale, seed, parsed[0][0])
    (out / "scenario.toml").write_text(_toml(base))
    sc0 = scenario.parse(json.loads(json.dumps(base)), "mrc-demo")
    echo(f"mrc demo: {base['description']}; seed {seed}")
    echo(f"fabric: {sc0.topo.spec.name}, {sc0.topo.n_hosts} hosts; transports: {', '.join(specs)}")
    echo(summary_table.routing_text(metrics.routing(sc0)))
    tables, summaries = {}, {}
    cold = coldstart.Compiling()
    for k, (spec, (name, params)) in enumerate(zip(specs, parsed)):
        data = json.loads(json.dumps(base))
        data["transport"] = {**params, "name": name}
        sc = scenario.parse(data, "mrc-demo")
        if progress:
            echo(f"[{k + 1}/{len(specs)}] {spec}")
        run = sim.Simulation(sc).run(progress=progress)
        cold.done(run.sim["wall_s"])
        # no report.html per run: the demo's own (below) has every run's sections (a quarter of a warm demo's
        # CPU time went into writing the same figures twice)
        s = results.write(run, out / tspec.dirname(spec), plots_too=plots_too, plot_formats=plot_formats,
                          report=False)
        summaries[spec] = s
        tables[spec] = metrics.flow_table(run)
    echo(summary_table.text(summaries))
    if plots_too:
        topo = base["topology"]
        plots.fct_cdf(tables, out / "fct_cdf.png", f"mrc demo, {topo['hosts_per_leaf'] * topo['leaves']} hosts, "
                      f"{topo['planes']} planes, link down at {FAIL_AT_US:g} us", formats=plot_formats)
        from mrc.emulator import report

        report.write(out)
    keep = ("fct_us", "slowdown", "flows", "reroute", "counters", "sim")
    (out / "demo.json").write_text(json.dumps({"scenario": base, "runs": {k: {kk: v[kk] for kk in keep}
                                                                           for k, v in summaries.items()}},
                                              indent=2, default=results._clean) + "\n")
    _, rows = summary_table.rows(summaries)
    results.write_csv(out / "demo.csv", summary_table.csv_columns(rows))
    echo(f"results: {out}" + (f" (FCT CDF: {out / 'fct_cdf.png'}; interactive report: {out / 'report.html'})"
                              if plots_too else ""))
    return summaries


def cmd_demo(args) -> int:
    from mrc.emulator.plots import check_formats

    run_demo(args.out, seed=args.seed, transports=args.transports, scale=args.scale,
             progress=not args.no_progress and sys.stderr.isatty(), plots_too=not args.no_plots,
             plot_formats=check_formats(args.plot_format))
    return 0
