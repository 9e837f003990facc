"""Figures of a run: FCT and slowdown percentiles, collective completion times, byte accounting, failures.

- FCT of a flow: from its start to the moment its sender learnt that every
  byte arrived (the last ACK; HPCC's and htsim's definition); the time its
  receiver had every byte is reported too (``recv_done_us``).
- Slowdown: FCT / FCT alone on the idle fabric, where the latter is the
  flow's bytes on the wire at its NIC's line rate plus its path's base RTT
  (computed by the transport from the path: propagation both ways, the
  largest packet's serialisation on every hop after the NIC, the ACK's on
  every hop). A lone single-packet flow on an idle fabric has slowdown 1
  exactly; a longer one 1 to within a few ACK serialisations (tested).
- Percentiles: numpy's linear interpolation over completed flows;
  ``p999`` is the 99.9th percentile.
- Collective completion time (CCT): last ``recv_done`` of the collective's
  flows minus its first start (null for a collective that did not finish).
- Bytes: sent (NICs) = delivered + dropped + removed by trimming + in flight.
- Failures: packets directed to the failed ports after the failure (queued,
  dropped or sent there), the time of the last one, and ``steered_away_us``:
  the time from the failure to that last packet, when traffic stopped using
  the ports before the failure ended (otherwise null: never steered away).
"""
from __future__ import annotations

import numpy as np

from mrc import __version__
from mrc.emulator import state as ST
from mrc.units import US


def percentiles(x: np.ndarray, keys=("p50", "p90", "p99", "p999", "max", "mean")) -> dict:
    q = {"p50": 50, "p90": 90, "p99": 99, "p999": 99.9}
    out = {}
    for k in keys:
        if len(x) == 0:
            out[k] = None
        elif k == "max":
            out[k] = float(np.max(x))
        elif k == "mean":
            out[k] = float(np.mean(x))
        else:
            out[k] = float(np.percentile(x, q[k]))
    return out


def flow_table(run) -> dict:
    """Per-flow columns (numpy arrays), in flow order."""
    fl = run.flows
    done = fl["status"] == ST.FLOW_DONE
    started = fl["t_start"] >= 0
    fct = np.where(done, fl["t_send_done"] - fl["t_start"], -1)
    recv = np.where(fl["t_recv_done"] >= 0, fl["t_recv_done"], -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        slow = np.where(done & (fl["ideal"] > 0), fct / np.maximum(fl["ideal"], 1), np.nan)
    return {
        "flow": np.arange(len(fl)),
        "job": fl["job"],
        "collective": fl["coll"],
        "cm_id": fl["cm_id"],
        "src": fl["src"],
        "dst": fl["dst"],
        "size_bytes": fl["size"],
        "start_us": np.where(started, fl["t_start"] / US, np.nan),
        "end_us": np.where(done, fl["t_send_done"] / US, np.nan),
        "recv_done_us": np.where(recv >= 0, recv / US, np.nan),
        "fct_us": np.where(done, fct / US, np.nan),
        "ideal_fct_us": fl["ideal"] / US,
        "slowdown": slow,
        "retransmissions": fl["retx"],
        "status": np.array(ST.FLOW_STATUS_NAMES, dtype=object)[fl["status"]],
        "reason": np.array(ST.WHY_NAMES, dtype=object)[fl["why"]],
    }


def collectives(run) -> list[dict]:
    fl = run.flows
    out = []
    for c in run.collectives:
        f = fl[c.flows]
        complete = bool(np.all(f["status"] == ST.FLOW_DONE) and np.all(f["t_recv_done"] >= 0))
        start = int(f["t_start"][f["t_start"] >= 0].min()) if np.any(f["t_start"] >= 0) else None
        end = int(f["t_recv_done"].max()) if complete else None
        out.append({"name": c.name, "job": c.job, "kind": c.kind, "flows": len(c.flows),
                    "start_us": None if start is None else start / US,
                    "end_us": None if end is None else end / US,
                    "cct_us": (end - start) / US if complete and start is not None else None,
                    "completed": complete})
    return out


def failures(run) -> list[dict]:
    sc = run.scenario
    out = []
    for rec in run.failures:
        r = dict(rec)
        f = sc.failures[rec["index"]]
        end_us = f.at_us + f.duration_us if f.duration_us is not None else run.sim["sim_time_us"]
        if f.kind == "flap" and f.until_us is not None:
            end_us = f.until_us
        last = rec["last_packet_us"]
        sample = run.samples["t_us"][1] - run.samples["t_us"][0] if len(run.samples.get("t_us", [])) > 1 else 0.0
        steered = None
        if f.kind != "link-up":
            if last is None or last < f.at_us:
                steered = 0.0
            elif last + sample < end_us:
                steered = last - f.at_us
        r["steered_away_us"] = steered
        r["end_us"] = end_us
        out.append(r)
    return out


def summary(run) -> dict:
    """The run's `summary.json` (keys in docs/emulator.md)."""
    sc = run.scenario
    ft = flow_table(run)
    done = run.flows["status"] == ST.FLOW_DONE
    fct = ft["fct_us"][done]
    slow = ft["slowdown"][done]
    slow = slow[~np.isnan(slow)]
    colls = collectives(run)
    c = run.counters
    wall = run.sim["wall_s"]
    inflight = run.inflight
    return {
        "scenario": sc.name,
        "seed": sc.seed,
        "transport": sc.transport_name,
        "version": __version__,
        "fct_us": percentiles(fct),
        "slowdown": percentiles(slow, ("p50", "p99", "p999", "max")),
        "flows": {"total": int(len(run.flows)), "completed": int(done.sum())},
        "cct_us": [x["cct_us"] for x in colls] if colls else None,
        "sim": {"events": run.sim["events"], "packet_hops": run.sim["packet_hops"], "wall_s": wall,
                "sim_time_us": run.sim["sim_time_us"], "peak_rss_mb": run.sim["peak_rss_mb"]},
        # --- further detail (also stable, documented in docs/emulator.md)
        "outcome": {
            "failed": int((run.flows["status"] == ST.FLOW_FAILED).sum()),
            "unfinished": int(((run.flows["status"] == ST.FLOW_RUNNING) | (run.flows["status"] == ST.FLOW_PENDING)).sum()),
            "reasons": _reasons(run.flows),
        },
        "counters": c,
        "bytes": {"sent": c["sent_bytes"], "delivered": c["delivered_bytes"], "dropped": c["dropped_bytes"],
                  "trimmed_away": c["trimmed_bytes_removed"], "in_flight": inflight["bytes"]},
        "packets": {"sent": c["sent_pkts"], "delivered": c["delivered_pkts"], "dropped": c["dropped_pkts"],
                    "in_flight": inflight["packets"]},
        "collectives": colls,
        "failures": failures(run),
        "engine": {"events_per_s": run.sim["events"] / wall if wall > 0 else None,
                   "packet_hops_per_s": run.sim["packet_hops"] / wall if wall > 0 else None,
                   "peak_packets": run.sim["peak_packets"], "pool_rows": run.sim["pool_rows"]},
        "fabric": {"name": sc.topo.spec.name, "hosts": sc.topo.n_hosts, "planes": sc.topo.n_planes,
                   "ports": sc.topo.n_ports},
        "config": sc.data,
    }


def _reasons(fl) -> dict:
    out: dict[str, int] = {}
    for w in np.unique(fl["why"]):
        if w != ST.WHY_NONE:
            out[ST.WHY_NAMES[w]] = int((fl["why"] == w).sum())
    return out


MACHINE_KEYS = (("sim", "wall_s"), ("sim", "peak_rss_mb"), ("engine", "events_per_s"),
                ("engine", "packet_hops_per_s"))


def comparable(summary_dict: dict) -> dict:
    """The summary without the figures that depend on the machine (wall time, memory, rates)."""
    import copy

    d = copy.deepcopy(summary_dict)
    for a, b in MACHINE_KEYS:
        d.get(a, {}).pop(b, None)
    return d
