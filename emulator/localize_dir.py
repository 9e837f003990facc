"""``mrc emu localize DIR``: a run's fault localisation redone offline from its results directory, with the
controller's `mrc.ctl.localizer` (other parameters than the live run's, or a run made without it); the
results are `localize.record`'s, as the live run writes them."""
from __future__ import annotations

import csv
import json
import pathlib

import numpy as np

from mrc.ctl import localizer as CL
from mrc.emulator.keys import Table
from mrc.emulator.localize import record
from mrc.emulator.scenario import parse_failure
from mrc.errors import ConfigError
from mrc.fabric import Topology, resolve
from mrc.units import ps_from_us


def _read_csv(path) -> dict:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise ConfigError("results", str(path), "empty CSV file")
    head, body = rows[0], rows[1:]
    return {h: [r[k] if k < len(r) else "" for r in body] for k, h in enumerate(head)}


def from_dir(path, params: CL.Params | None = None) -> dict:
    """Redo a run's localisation offline from its results directory (``mrc emu localize DIR``): the EV
    events (``ev_events.csv``), the flows' hosts (``flows.csv``), the path counters (``ev_paths.csv``, if
    present) and the scenario's topology and failures (``summary.json``)."""
    d = pathlib.Path(path)
    for need in ("summary.json", "ev_events.csv", "flows.csv"):
        if not (d / need).is_file():
            raise ConfigError("results", str(d), f"no {need}: not the results directory of an MRC run "
                              "(ev_events.csv is written by the MRC transports)")
    try:
        summ = json.loads((d / "summary.json").read_text())
        cfg = summ["config"]
        topo = Topology(resolve(cfg["topology"], where="topology"), ecmp_seed=int(summ.get("seed", 1)))
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError("summary.json", str(d / "summary.json"), f"unreadable: {exc}") from None
    fails = []
    for k, f in enumerate(cfg.get("failures", []) or []):
        fr = parse_failure(Table(f, f"failures[{k}]"), topo)
        fails.append({"index": k, "kind": fr.kind, "target": fr.target, "at_us": fr.at_us, "ports": list(fr.ports)})
    try:
        fl = _read_csv(d / "flows.csv")
        src = np.array(fl["src"], np.int64)
        dst = np.array(fl["dst"], np.int64)
        ev = _read_csv(d / "ev_events.csv")
        t = np.round(np.array(ev["t_us"], float) * 1e6).astype(np.int64)
        qp = np.array(ev["qp"], np.int64)
        names = {"ASSUMED_BAD": CL.EV_ASSUMED_BAD, "GOOD": CL.EV_GOOD}
        state = np.array([names.get(s, -1) for s in ev["state"]], np.int64)
        evs = np.array(ev["ev"], np.int64)
        drops = np.array(ev["drop_count"], np.int64)
    except (ValueError, KeyError) as exc:
        raise ConfigError("results", str(d), f"a CSV file is malformed: {exc}") from None
    # the flow each event's QP carried (QP 2k / 2k + 1 are pair k's ends; a run has at most one pair per flow)
    f = np.array(ev["flow"], np.int64) if "flow" in ev else qp // 2
    if len(qp) and (qp.min() < 0 or qp.max() >= 2 * len(src)):
        bad = int(qp.max()) if qp.max() >= 2 * len(src) else int(qp.min())
        raise ConfigError("ev_events.csv", bad, f"a QP of no flow (the run has {len(src)} flows)")
    if len(f) and (f.min() < 0 or f.max() >= len(src)):
        raise ConfigError("ev_events.csv", int(f.max()) if f.max() >= len(src) else int(f.min()),
                          f"a flow the run does not have (it has {len(src)})")
    req = qp % 2 == 0
    loc = CL.Localizer(topo, params)
    keep = state >= 0
    loc.add_events(t[keep], np.where(req, src[f], dst[f])[keep], np.where(req, dst[f], src[f])[keep], evs[keep],
                   state[keep], drops[keep], qp[keep])
    paths = np.zeros(0, CL.PATHS)
    if (d / "ev_paths.csv").is_file():
        pc = _read_csv(d / "ev_paths.csv")
        paths = np.zeros(len(pc["a"]), CL.PATHS)
        try:
            for k in CL.PATHS.names:
                paths[k] = np.array(pc[k], np.int64)
        except (ValueError, KeyError) as exc:
            raise ConfigError("ev_paths.csv", str(d / "ev_paths.csv"), f"malformed: {exc}") from None
    loc.set_paths(paths)
    if (d / "localization.json").is_file():  # the hosts' NIC port changes, as the live run recorded them
        try:
            for pe in json.loads((d / "localization.json").read_text()).get("port_events", []):
                loc.add_port_event(ps_from_us(pe["t_us"]), int(pe["host"]), int(pe["plane"]), pe["state"] == "up")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError("localization.json", str(d / "localization.json"), f"malformed: {exc}") from None
    end = ps_from_us(float(summ["sim"]["sim_time_us"]))
    loc.update(end)
    return record(loc, loc.verdict(end), fails, loc.p, paths, live=False)
