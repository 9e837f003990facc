"""The table of runs that `mrc emu run`, `mrc emu compare` and `mrc demo` print and write.

One row per run (label -> `metrics.summary`), as numbers (`rows`: what
``compare.csv`` and ``demo.csv`` hold, null where a figure does not exist) and
as text for the screen (`render`: thousands separators, ``-`` for null).
Columns appear when the runs have them:

- always: flows done and total, FCT p50 / p99 / p99.9 / max, slowdown
  p50 / p99 / max;
- collectives: the slowest collective's completion time (``cct_max_us``);
- victim flows (`metrics.victims`): the worst victim's FCT, throughput and
  slowdown;
- failures: the first failure's reroute times (`metrics.reroute`); every
  failure's are in `reroute_rows`;
- training / trace jobs (the first one; `metrics.summary` ``training``): the
  mean iteration time and its ideal, the slowest group's collective time,
  the communication share of the GPU time, and against the failure-free run
  the GPU-seconds wasted and the job's slowdown;
- several jobs: one row per job in `job_rows`.
"""
from __future__ import annotations

import math

# (key, screen header, digits)
BASE = [("flows_done", "flows done", 0), ("flows_total", "of", 0), ("fct_p50_us", "FCT p50 us", 1),
        ("fct_p99_us", "p99", 1), ("fct_p999_us", "p99.9", 1), ("fct_max_us", "max", 1),
        ("slowdown_p50", "slowdown p50", 2), ("slowdown_p99", "p99", 2), ("slowdown_max", "max", 2)]
CCT = [("cct_max_us", "CCT max us", 1)]
VICTIM = [("victim_fct_us", "victim FCT us", 1), ("victim_gbps", "victim Gb/s", 1),
          ("victim_slowdown", "victim slowdown", 2)]
REROUTE = [("first_steered_away_us", "steered away us", 2), ("off_99_us", "99% off us", 1),
           ("goodput_recovered_us", "goodput back us", 1)]
JOB = [("job", "job", 0), ("kind", "kind", None), ("flows_done", "flows done", 0), ("flows_total", "of", 0),
       ("fct_p50_us", "FCT p50 us", 1), ("fct_p99_us", "p99", 1), ("fct_max_us", "max", 1),
       ("slowdown_p50", "slowdown p50", 2), ("slowdown_p99", "p99", 2), ("cct_max_us", "CCT max us", 1)]
TRAIN = [("iter_us", "iteration us", 1), ("iter_ideal_us", "ideal us", 1), ("slowest_group_us", "slowest group us", 1),
         ("comm_share", "comm share", 3), ("gpu_s_wasted", "GPU-s wasted", 4), ("job_slowdown", "job slowdown", 3)]
RR = [("failure", "failure", 0), ("kind", "kind", None), ("target", "target", None),
      ("affected_flows", "affected flows", 0), *REROUTE]
# printed under a table with reroute times (`mrc emu run | compare`, `mrc demo`); docs/emulator.md, "Reroute"
REROUTE_LEGEND = ("reroute times, us after the failure: steered away = the first packet of an affected flow sent "
                  "clear of the failed element; 99% off = from then on at most 1 % of their packets go to it; "
                  "goodput back = their goodput back within recovery_pct of what it was (0: it never fell that far; "
                  "never: it did not come back, or the traffic was never steered off; -: not measurable) "
                  "(docs/emulator.md)")


def never(reroute: dict) -> set[str]:
    """The reroute times of one failure that are null because the event never happened (shown as ``never``),
    as opposed to null because it cannot be measured (``-``): steered away and 99 % off of a failure that
    affected flows, goodput back of goodput that was measured after the fault (`sweeps.stats` counts the same
    as +infinity)."""
    out = set()
    if (reroute.get("affected_flows") or 0) > 0:
        out |= {k for k in ("first_steered_away_us", "off_99_us") if reroute.get(k) is None}
    if reroute.get("goodput_recovered_us") is None and reroute.get("min_goodput_gbps") is not None:
        out.add("goodput_recovered_us")
    return out


def _worst(values, fn):
    v = [x for x in values if x is not None]
    return fn(v) if v else None


def row(label: str, s: dict) -> dict:
    """The numeric row of one run's summary (every column; `columns` picks the ones to show)."""
    f, sd = s["fct_us"], s["slowdown"]
    cct = s.get("cct_us") or []
    vic = s.get("victims") or []
    rr = (s.get("reroute") or [{}])[0] if s.get("reroute") else {}
    return {"transport": label, "flows_done": s["flows"]["completed"], "flows_total": s["flows"]["total"],
            "fct_p50_us": f["p50"], "fct_p99_us": f["p99"], "fct_p999_us": f.get("p999"), "fct_max_us": f["max"],
            "slowdown_p50": sd["p50"], "slowdown_p99": sd["p99"], "slowdown_max": sd["max"],
            "cct_max_us": None if not cct or any(c is None for c in cct) else max(cct),
            "victim_fct_us": _worst([v["fct_us"] for v in vic], max) if vic else None,
            "victim_gbps": _worst([v["gbps"] for v in vic], min) if vic else None,
            "victim_slowdown": _worst([v["slowdown"] for v in vic], max) if vic else None,
            **{k: rr.get(k) for k, _, _ in REROUTE}, **_training(s)}


def _training(s: dict) -> dict:
    tr = (s.get("training") or [None])[0]
    if tr is None:
        return {k: None for k, _, _ in TRAIN}
    it = [x["time_us"] for x in tr["iterations"]]
    w = tr.get("waste") or {}
    return {"iter_us": None if any(x is None for x in it) else sum(it) / len(it),
            "iter_ideal_us": sum(x["ideal_us"] for x in tr["iterations"]) / len(it),
            "slowest_group_us": (tr["slowest_group"] or {}).get("time_us"), "comm_share": tr["comm_share"],
            "gpu_s_wasted": w.get("gpu_seconds_wasted"), "job_slowdown": w.get("job_slowdown")}


def columns(summaries: dict) -> list:
    """The columns that apply to these runs."""
    ss = list(summaries.values())
    cols = [("transport", "transport", None), *BASE]
    if any(s.get("cct_us") for s in ss):
        cols += CCT
    if any(s.get("victims") for s in ss):
        cols += VICTIM
    if any(s.get("reroute") for s in ss):
        cols += REROUTE
    if any(s.get("training") for s in ss):
        cols += TRAIN if any((s.get("training") or [{}])[0].get("waste") for s in ss) else TRAIN[:4]
    return cols


def rows(summaries: dict) -> tuple[list, list[dict]]:
    """(columns, numeric rows) of the main table."""
    cols = columns(summaries)
    keys = [k for k, _, _ in cols]
    return cols, [{k: row(label, s)[k] for k in keys} for label, s in summaries.items()]


def job_rows(summaries: dict) -> list[dict]:
    """Per run and job (only for scenarios with several jobs)."""
    out = []
    for label, s in summaries.items():
        if len(s.get("jobs") or []) < 2:
            continue
        for j in s["jobs"]:
            out.append({"transport": label, "job": j["index"], "kind": j["kind"], "flows_done": j["completed"],
                        "flows_total": j["flows"], "fct_p50_us": j["fct_us"]["p50"], "fct_p99_us": j["fct_us"]["p99"],
                        "fct_max_us": j["fct_us"]["max"], "slowdown_p50": j["slowdown"]["p50"],
                        "slowdown_p99": j["slowdown"]["p99"], "cct_max_us": j["cct_max_us"]})
    return out


def reroute_rows(summaries: dict) -> list[dict]:
    """Per run and tracked failure: the reroute times."""
    out = []
    for label, s in summaries.items():
        for r in s.get("reroute") or []:
            out.append({"transport": label, "failure": r["index"], "kind": r["kind"], "target": r["target"],
                        "affected_flows": r["affected_flows"], **{k: r.get(k) for k, _, _ in REROUTE}})
    return out


def fmt(v, digits) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if digits is None or isinstance(v, str):
        return str(v)
    return f"{v:,.{digits}f}"


def render(cols: list, rows_: list[dict], nevers: list | None = None) -> str:
    """Aligned text: the first column left, the rest right; ``flows done`` shown as ``done/total``; a null that
    means "never" (`never`; `nevers`: one set of keys per row) as ``never``."""
    show = [c for c in cols if c[0] != "flows_total"]
    cells = []
    for k_row, r in enumerate(rows_):
        nv = nevers[k_row] if nevers else set()
        line = []
        for k, _, d in show:
            if k == "flows_done" and "flows_total" in r:
                line.append(f"{r['flows_done']}/{r['flows_total']}")
            elif r.get(k) is None and k in nv:
                line.append("never")
            else:
                line.append(fmt(r.get(k), d))
        cells.append(line)
    head = [h for _, h, _ in show]
    w = [max(len(x[i]) for x in [head] + cells) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w[i]) if i else c.ljust(w[i]) for i, c in enumerate(x)) for x in [head] + cells)


def text(summaries: dict) -> str:
    """Everything `mrc emu run | compare` and `mrc demo` print: the main table, then per job and per failure
    when there is more to say than the main table's columns."""
    cols, main = rows(summaries)
    first = [never((s.get("reroute") or [{}])[0]) for s in summaries.values()]
    out = [render(cols, main, first)]
    jr = job_rows(summaries)
    if jr:
        out += ["", "per job:", render([("transport", "transport", None), *JOB], jr)]
    rr = reroute_rows(summaries)
    if any(r["failure"] > 0 for r in rr):
        per = [never(r) for s in summaries.values() for r in s.get("reroute") or []]
        out += ["", "reroute per failure:", render([("transport", "transport", None), *RR], rr, per)]
    if any(c[0] == "goodput_recovered_us" for c in cols):
        out += [REROUTE_LEGEND]
    return "\n".join(out)


def routing_text(routing: dict) -> str:
    """The routing repair a run's ECMP forwarding gets (`metrics.routing`), in words."""
    return (f"routing repair after a dead link: {routing['route_detect_us']:,g} us at the switches next to it "
            f"(switch.route_detect_us), {routing['route_converge_us']:,g} us at every other switch "
            "(switch.route_converge_us)")


def header(sc, label: str) -> str:
    """The line printed before a run (`mrc emu run | compare`): the scenario, the transport and seed, and the
    routing defaults a failure comparison depends on (docs/emulator.md, "Routing repair")."""
    from mrc.emulator.metrics import routing

    return (f"{sc.name} ({label}, seed {sc.seed}): {sc.topo.n_hosts:,} hosts, {sc.topo.n_planes} plane(s); "
            + routing_text(routing(sc)))


def csv_columns(rows_: list[dict]) -> dict:
    """Column -> values for `results.write_csv` (numbers stay numbers; null is an empty cell)."""
    keys = list(rows_[0]) if rows_ else []
    return {k: [r.get(k) for r in rows_] for k in keys}
