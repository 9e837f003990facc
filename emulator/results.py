"""The results directory of a run.

=====================  ========================================================
file                   content
=====================  ========================================================
``summary.json``       `metrics.summary`: scenario, seed, transport, version,
                       fct_us, slowdown, flows, cct_us, sim, and the detail
                       keys (outcome, counters, bytes, packets, collectives,
                       failures, engine, fabric, config)
``flows.csv``          one row per flow (`metrics.flow_table`); also
                       ``flows.parquet`` (exact values; the CSV files keep the
                       digits each quantity has, `precision`)
``collectives.csv``    one row per collective
``timeseries.csv``     the samples: utilisation and queue occupancy per link
                       group, goodput, drops, marks, PFC, per-failure packets,
                       chosen ports
``planes.csv``         the same per link group and plane (long form: t_us, group,
                       plane, utilisation and queue mean / max): the heatmaps
``links.csv``          per link group: ports, bytes sent, max queue, drops,
                       trims, ECN marks, PFC pauses and paused time
``failures.csv``       one row per failure (time, target, steered away, and the
                       reroute times of `metrics.reroute`)
``ev_events.csv``      MRC transports: every EV event (time, QP, flow, role,
                       host, EV, plane, state, drop count)
``ev_paths.csv``       MRC transports: per host pair and EV in use, the EV's
                       counters (packets, losses, ECN marks, trims)
``localization.json``  MRC transports: the controller's fault localisation
                       (`localize`): suspects, evidence, time to localise
``trace.csv``          packet trace, when tracing was on (with each packet's EV
                       and plane)
``capture.pcapng``     ``[capture]``: the packets that left the captured ports,
                       encoded as on their wires (`capture`)
``fct_cdf.png``        FCT CDF; ``slowdown_by_size.png``; ``utilisation.png``
=====================  ========================================================
"""
from __future__ import annotations

import csv
import json
import math
import pathlib

import numpy as np

from mrc.core import dtypes as D
from mrc.emulator import capture, metrics, plots, precision, training_metrics
from mrc.emulator import state as ST
from mrc.emulator.sampling import GROUPS


def writable_dir(out: pathlib.Path, key: str = "--out") -> bool:
    """Create the results directory `out` and prove it writable before anything runs (so no run's results are
    lost at the end); a path that is a file, or a directory that cannot be made or written, is a `ConfigError`
    naming `key`. Returns whether the directory was created here."""
    from mrc.errors import ConfigError

    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(key, str(out), "cannot create or write this directory: it is a file (give a directory "
                          "for the results)")
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".mrc-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(key, str(out), f"cannot create or write this directory: {exc.strerror or exc}") from None
    return created


def _clean(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return None if math.isnan(v) else float(v)
    return v


def _cells(name: str, c) -> list:
    """A column's values as `csv` writes them: numbers as Python numbers rounded to the precision of the column's
    quantity (`precision`: no float noise), NaN and None as an empty cell. Numeric numpy columns convert in one
    call (``tolist``), the same values `_clean` and `precision.value` give one by one: a run sampled for long writes
    millions of cells (1 s at 5 us: planes.csv, 9.6 M rows on the 131k preset)."""
    if isinstance(c, np.ndarray) and c.ndim == 1 and c.dtype.kind in "iub":
        return c.tolist()
    if isinstance(c, np.ndarray) and c.ndim == 1 and c.dtype.kind == "f":
        c = precision.rounded(name, c)
        nan = np.isnan(c)
        if not nan.any():
            return c.tolist()
        v = c.astype(object)
        v[nan] = ""
        return v.tolist()
    return ["" if (x := _clean(v)) is None else precision.value(name, x) for v in c]


def write_csv(path: pathlib.Path, columns: dict) -> None:
    """`columns` (name -> values) as a CSV file; real numbers with the precision of their quantity
    (`mrc.emulator.precision`, docs/emulator.md "Numbers in the CSV files")."""
    names = list(columns)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        w.writerows(zip(*[_cells(k, columns[k]) for k in names], strict=True))


def _arrow_column(pa, v: np.ndarray):
    """A numpy column as an arrow array, built from its buffers: ``pa.array`` would import pandas (0.4 s)
    whenever pandas is installed, to ask whether the column is a pandas object."""
    v = np.asarray(v)
    if v.dtype.kind in "iuf":
        v = np.ascontiguousarray(v)
        return pa.Array.from_buffers(pa.from_numpy_dtype(v.dtype), len(v), [None, pa.py_buffer(v)])
    if v.dtype.kind == "b":
        return pa.Array.from_buffers(pa.bool_(), len(v), [None, pa.py_buffer(np.packbits(v, bitorder="little"))])
    if v.dtype.kind in "OU" and all(isinstance(x, str) for x in v):
        data = [x.encode() for x in v]
        offsets = np.zeros(len(data) + 1, np.int64)
        np.cumsum([len(b) for b in data], out=offsets[1:])
        if offsets[-1] < 2**31:  # a string column's 32-bit offsets, directly (a cast imports pyarrow.compute, 0.2 s)
            return pa.Array.from_buffers(pa.string(), len(data), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                                  pa.py_buffer(b"".join(data))])
        return pa.Array.from_buffers(pa.large_string(), len(data),
                                     [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]).cast(pa.string())
    return pa.array(list(v))


def write_parquet(path: pathlib.Path, columns: dict) -> None:
    # pyarrow is a main dependency (pyproject.toml); imported here, not at module level, because it costs
    # a third of a second and only a run that writes its results needs it
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = list(columns)
    pq.write_table(pa.Table.from_arrays([_arrow_column(pa, columns[k]) for k in names], names=names), path)


# every file `write` may produce: a new run into a directory removes the earlier run's first
FILES = ("summary.json", "flows.csv", "flows.parquet", "collectives.csv", "timeseries.csv", "links.csv",
         "planes.csv", "failures.csv", "ev_events.csv", "ev_paths.csv", "localization.json", "trace.csv",
         "capture.pcapng", "report.html") + tuple(f"{plot}.{fmt}" for plot in ("fct_cdf", "slowdown_by_size",
                                                                               "utilisation")
                                                  for fmt in ("png", "pdf", "svg"))


def clear(out: pathlib.Path) -> None:
    """Remove the files of an earlier run from `out` (only the names `write` writes)."""
    for name in FILES:
        (out / name).unlink(missing_ok=True)


def link_groups(run) -> dict:
    fp = run.scenario.topo.port
    ps = run.port_stats
    rows = {k: [] for k in ("group", "ports", "tx_bytes", "max_queue_bytes", "drops", "trims", "ecn_marks",
                            "pfc_pauses_sent", "paused_us")}
    for (tier, d), name in GROUPS.items():
        idx = np.flatnonzero((fp["tier"] == tier) & (fp["dir"] == d))
        if not len(idx):
            continue
        rows["group"].append(name)
        rows["ports"].append(len(idx))
        rows["tx_bytes"].append(int(ps["tx_bytes"][idx].sum()))
        rows["max_queue_bytes"].append(int((ps["max_bytes0"][idx] + ps["max_bytes1"][idx]).max()))
        rows["drops"].append(int(ps["drops"][idx].sum()))
        rows["trims"].append(int(ps["trims"][idx].sum()))
        rows["ecn_marks"].append(int(ps["marks"][idx].sum()))
        rows["pfc_pauses_sent"].append(int(ps["pauses_sent"][idx].sum()))
        rows["paused_us"].append(float(ps["paused_ps"][idx].sum() / 1e6))
    return {k: np.asarray(v, dtype=object if k == "group" else None) for k, v in rows.items()}


def write(run, out, plots_too: bool | None = None, plot_formats=("png",), report: bool = True) -> dict:
    """Write the results directory; returns the summary. `plot_formats`: the plots' formats (`plots.FORMATS`);
    `report`: also the interactive ``report.html`` (`report.write`) when plots are on."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    clear(out)
    summ = metrics.summary(run)
    (out / "summary.json").write_text(json.dumps(summ, indent=2, default=_clean) + "\n")
    ft = metrics.flow_table(run)
    write_csv(out / "flows.csv", ft)
    write_parquet(out / "flows.parquet", ft)
    colls = summ["collectives"]
    if colls:
        write_csv(out / "collectives.csv", {k: [c[k] for c in colls] for k in colls[0]})
    if run.jobs:
        write_csv(out / training_metrics.HOSTS_CSV, training_metrics.hosts_columns(training_metrics.jobs(run)))
    if run.samples:
        write_csv(out / "timeseries.csv", run.samples)
    write_csv(out / "links.csv", link_groups(run))
    if run.plane_samples and len(run.plane_samples["t_us"]):
        write_csv(out / "planes.csv", run.plane_samples)
    if summ["failures"]:
        keys = ["index", "kind", "target", "at_us", "duration_us", "end_us", "packets_directed",
                "last_packet_us", "steered_away_us"]
        cols = {k: [f[k] for f in summ["failures"]] for k in keys}
        rr = {r["index"]: r for r in summ["reroute"]}
        for k in ("affected_flows", "first_steered_away_us", "off_99_us", "goodput_recovered_us",
                  "pre_fault_goodput_gbps", "min_goodput_gbps"):
            cols[k] = [rr.get(f["index"], {}).get(k) for f in summ["failures"]]
        write_csv(out / "failures.csv", cols)
    ev = run.extra.get("ev_events") if run.extra else None
    if ev is not None:
        fl = run.flows
        qp = ev["qp"].astype(np.int64)
        flow = ev["flow"].astype(np.int64)  # QP 2k is pair k's requester, 2k + 1 its responder
        write_csv(out / "ev_events.csv", {
            "t_us": ev["t"] / 1e6, "qp": qp, "flow": flow, "role": np.where(qp % 2 == 0, "requester", "responder"),
            "host": np.where(qp % 2 == 0, fl["src"][flow], fl["dst"][flow]) if len(ev) else qp,
            "ev": ev["ev"], "plane": ev["plane"],
            "state": np.array([D.EV_STATE_NAMES[x] for x in ev["state"]], dtype=object),
            "drop_count": ev["drops"]})
    if len(run.trace):
        tr = run.trace
        kinds = {ST.TR_ARRIVE: "arrive", ST.TR_DEPART: "depart", ST.TR_DROP: "drop", ST.TR_TRIM: "trim",
                 ST.TR_DELIVER: "deliver", ST.TR_MARK: "ecn-mark"}
        write_csv(out / "trace.csv", {"t_us": tr["t"] / 1e6, "event": np.array([kinds[k] for k in tr["kind"]]),
                                      "port": tr["port"], "flow": tr["flow"], "psn": tr["psn"],
                                      "ev": tr["ev"], "plane": tr["plane"],
                                      "opcode": tr["opcode"], "size": tr["size"], "cls": tr["cls"],
                                      "dscp": tr["dscp"], "trim": tr["trim"], "reason": tr["reason"]})
    paths = run.extra.get("ev_paths") if run.extra else None
    if paths is not None:
        write_csv(out / "ev_paths.csv", {k: paths[k] for k in paths.dtype.names})
    if run.localization:
        (out / "localization.json").write_text(json.dumps(run.localization, indent=2, default=_clean) + "\n")
    if run.capture:
        cap = run.capture
        sc = run.scenario
        capture.write_pcapng(out / capture.PCAPNG_FILE, sc.topo, cap["rows"], cap["hdr"], sc.capture.ports,
                             dscp=sc.switch.dscp, comment=f"{sc.name} seed {sc.seed} transport {sc.transport_name}")
    if plots_too if plots_too is not None else run.scenario.metrics.plots:
        sc = run.scenario
        title = f"{sc.name} ({sc.transport_name})"
        localized = {f["index"]: f["named_at_us"] for f in (summ.get("localization") or {}).get("failures", [])
                     if f["named_at_us"] is not None}
        plots.fct_cdf({sc.transport_name: ft}, out / "fct_cdf.png", title, formats=plot_formats)
        plots.slowdown_by_size(ft, out / "slowdown_by_size.png", title, formats=plot_formats)
        plots.utilisation(run.samples, out / "utilisation.png", title, formats=plot_formats,
                          failures=summ["failures"], localized=localized)
        if report:
            from mrc.emulator import report as html_report

            html_report.write(out)
    return summ
