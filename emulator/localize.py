"""The controller's fault localisation, live in the emulator (`mrc.ctl.localizer` on the run's EV events).

For the MRC transports (`Simulation.run` between chunks): the EV events logged since the last
chunk (``mrc_evlog``) become `Localizer` events (QP -> its host and its peer's); when any is
ASSUMED_BAD, the paths in use are refreshed from the QPs' EV rows (each EV's packets sent,
losses, ECN-marked acknowledgements, trims: what QUERY_EV_STATE returns) and the verdict is
updated, so every element blamed gets the time of the event that first named it. At the end
the final verdict, those times and each failure's time to localise go into the results
(``localization.json``, ``summary.json["localization"]``); ``ev_paths.csv`` keeps the path
counters so that ``mrc emu localize DIR`` can redo the analysis offline.

Cost: nothing for runs without EV events; per chunk with new bad events, one pass over the
EV rows of the QPs (``paths_limit`` rows at most, else the paths are read once at the end).

Scenario keys (``[localize]``): ``enabled`` (default true for MRC transports) and the
`mrc.ctl.localizer.Params` (``min_pairs``, ``min_paths``, ``alpha``, ``window_us``, ``down_still``,
``down_ratio``, ``outage_us``, ``burst_gap_us``, ``congestion_min``, ``load_ratio``, ``loss_ratio``,
``compare_min_tx``, ``congestion_ratio``, ``saturated_min``, ``burst_loss_ratio``, ``stuck_us``, ``outage_share``,
``outage_repeat``, ``degraded_ratio``, ``degraded_min``, ``evidence_max``), plus ``paths_limit``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from mrc.ctl import localizer as CL
from mrc.errors import ConfigError

PATHS_LIMIT = 2_000_000


@dataclasses.dataclass(frozen=True)
class LocalizeConfig:
    enabled: bool = True
    params: CL.Params = CL.Params()
    paths_limit: int = PATHS_LIMIT


def parse(t) -> LocalizeConfig:
    """The ``[localize]`` table (a `keys.Table`)."""
    enabled = t.bool("enabled", True)
    kw = {}
    for f in dataclasses.fields(CL.Params):
        if not t.has(f.name):
            continue
        if f.name in CL.INT_PARAMS:
            kw[f.name] = t.int(f.name, lo=1)
        else:
            kw[f.name] = t.num(f.name, lo=0, lo_open=f.name == "window_us")
    limit = t.int("paths_limit", PATHS_LIMIT, lo=0)
    t.done()
    try:
        params = CL.Params(**kw).check()
    except ConfigError as exc:
        raise ConfigError(exc.key.replace("localize.", t.key("")), exc.value, exc.problem) from None
    return LocalizeConfig(enabled, params, limit)


PATHS_BLOCK = 1 << 14  # QPs per block of `paths_table`


def paths_table(T, E) -> np.ndarray:
    """`mrc.ctl.localizer.PATHS` rows for every EV of every QP that sent on it (both QPs of a flow count
    on the flow's host pair). Built `PATHS_BLOCK` QPs at a time, copying only the EV rows that sent: at
    131,072 flows x 256 EVs a copy of every EV row was a 4.3 GB transient at the end of the run."""
    mp = T.mrc_p
    if not len(mp):
        return np.zeros(0, CL.PATHS)
    n_qp = int(mp[0]["n_qp"])
    fl = E.flow
    tx_pkts = T.core.ev["tx_pkts"]
    parts = []
    for a in range(0, n_qp, PATHS_BLOCK):
        b = min(n_qp, a + PATHS_BLOCK)
        q = T.core.qp[a:b]
        n_ev = q["n_ev"].astype(np.int64)
        rows = np.repeat(q["ev_row"].astype(np.int64), n_ev)
        slots = np.arange(int(n_ev.sum())) - np.repeat(np.cumsum(n_ev) - n_ev, n_ev)
        keep = tx_pkts[rows, slots] > 0
        evr = T.core.ev[rows[keep], slots[keep]]
        # QP 2k is pair k's requester, 2k + 1 its responder; both ends name the pair's (current) flow
        flow = np.repeat(E.ep["flow"][a:b].astype(np.int64), n_ev)[keep]
        out = np.zeros(len(evr), CL.PATHS)
        out["a"] = fl["src"][flow]
        out["b"] = fl["dst"][flow]
        out["ev"] = evr["ev"]
        out["tx"] = evr["tx_pkts"]
        out["losses"] = evr["losses"]
        out["marks"] = evr["ecn_marks"]
        out["trims"] = evr["trims"]
        parts.append(out)
    return np.concatenate(parts) if parts else np.zeros(0, CL.PATHS)


def n_path_rows(T) -> int:
    mp = T.mrc_p
    if not len(mp):
        return 0
    return int(T.core.qp[: int(mp[0]["n_qp"])]["n_ev"].sum())


def events_of(evlog: np.ndarray, flows: np.ndarray):
    """(t, local host, remote host, EV, state, drops, QP) of `mrc_evlog` rows."""
    qp = evlog["qp"].astype(np.int64)
    f = evlog["flow"].astype(np.int64)
    req = qp % 2 == 0
    local = np.where(req, flows["src"][f], flows["dst"][f])
    remote = np.where(req, flows["dst"][f], flows["src"][f])
    return evlog["t"], local, remote, evlog["ev"], evlog["state"], evlog["drops"], qp


class Live:
    """One run's localiser, fed between chunks."""

    def __init__(self, sc, T, E):
        self.cfg: LocalizeConfig = sc.localize
        self.loc = CL.Localizer(sc.topo, self.cfg.params)
        self.seen = 0
        self.live_paths = n_path_rows(T) <= self.cfg.paths_limit
        self.verdicts = 0
        self.ports = T.mrc_host["local_ports"].copy()  # what each host knows of its own NIC ports
        self.n_planes = int(sc.topo.n_planes)

    def _port_events(self, T, t: int) -> bool:
        """NIC port changes the hosts saw since the last chunk (timed at the chunk: the host knows at once,
        this analysis looks once per chunk)."""
        now = T.mrc_host["local_ports"]
        changed = np.flatnonzero(now != self.ports)
        for h in changed.tolist():
            diff = int(now[h]) ^ int(self.ports[h])
            for p in range(self.n_planes):
                if diff >> p & 1:
                    self.loc.add_port_event(t, h, p, bool(int(now[h]) >> p & 1))
        self.ports = now.copy()
        return len(changed) > 0

    def step(self, T, E, t: int) -> None:
        from mrc.emulator.transports import mrcctl

        ports = self._port_events(T, t)
        n = int(T.mrc_s[mrcctl.MS_EVLOG_N])
        if n <= self.seen and not ports:
            return
        new = T.mrc_evlog[self.seen:n]
        self.seen = n
        self.loc.add_events(*events_of(new, E.flow))
        if not ports and not np.any(new["state"] == CL.EV_ASSUMED_BAD):
            return
        if self.live_paths:
            self.loc.set_paths(paths_table(T, E))
        self.loc.update(t)
        self.verdicts += 1

    def finish(self, T, E, t: int, failures: list):
        """The run's localisation record (``localization.json``) and the paths table it ended with."""
        self.step(T, E, t)
        paths = paths_table(T, E)
        self.loc.set_paths(paths)
        self.loc.update(t)
        v = self.loc.verdict(t)
        return record(self.loc, v, failures, self.cfg.params, paths, live=True), paths


def record(loc: CL.Localizer, v: CL.Verdict, failures: list, params: CL.Params, paths, live: bool) -> dict:
    named = {name: (at, loc.first_verdict[name].ports) for name, at in loc.named_at.items()}
    ttl = CL.time_to_localise(named, failures)
    return {
        "port_events": [{"t_us": t / 1e6, "host": h, "plane": p, "state": "up" if up else "down"}
                        for t, h, p, up in loc.port_events],
        "live": live,
        "params": dataclasses.asdict(params),
        "verdict": v.as_dict(),
        "named_at_us": {k: at for k, (at, _) in named.items()},
        "failures": [{**t, "kind": f["kind"], "target": f["target"], "at_us": f["at_us"]}
                     for t, f in zip(ttl, failures)],
        "paths": int(len(paths)),
        "events": int(len(loc.events)),
    }


def summary_of(rec: dict) -> dict:
    """The short form for summary.json: blamed suspects and per failure the time to localise."""
    return {
        "suspects": [{k: s[k] for k in ("element", "kind", "verdict", "score", "bad_paths", "paths", "pairs",
                                        "first_us")} for s in rec["verdict"]["suspects"]],
        "failures": [{k: f[k] for k in ("index", "target", "element", "named_at_us", "time_to_localise_us")}
                     for f in rec["failures"]],
    }


def lines(rec: dict) -> list[str]:
    """What `mrc emu run` prints."""
    out = []
    for s in rec["verdict"]["suspects"]:
        blame = "" if s["verdict"] != "congestion" else " (not blamed)"
        out.append(f"  {s['element']:<24} {s['kind']:<8} {s['verdict']:<10}{blame} score {s['score']:.2f}  "
                   f"{s['bad_paths']}/{s['paths']} paths bad from {s['pairs']} host pairs, first at "
                   f"{s['first_us']:,.1f} us")
    for f in rec["failures"]:
        if f["element"] is None:
            out.append(f"  failure {f['index']} ({f['kind']} {f['target']} at {f['at_us']:g} us): not localised")
        else:
            out.append(f"  failure {f['index']} ({f['kind']} {f['target']} at {f['at_us']:g} us): localised to "
                       f"{f['element']} at {f['named_at_us']:,.2f} us, {f['time_to_localise_us']:,.2f} us after it")
    return out


def _read_csv(path) -> dict:
    import csv

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
    import json
    import pathlib

    from mrc.emulator.keys import Table
    from mrc.emulator.scenario import parse_failure
    from mrc.fabric import Topology, resolve

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
                loc.add_port_event(int(round(pe["t_us"] * 1e6)), int(pe["host"]), int(pe["plane"]), pe["state"] == "up")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError("localization.json", str(d / "localization.json"), f"malformed: {exc}") from None
    end = int(round(float(summ["sim"]["sim_time_us"]) * 1e6))
    loc.update(end)
    return record(loc, loc.verdict(end), fails, loc.p, paths, live=False)
