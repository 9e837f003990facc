"""Figures of a run: FCT and slowdown percentiles, collective completion times, byte accounting, failures.

- FCT of a flow: from its start to the moment its sender learnt that every
  byte arrived (the last ACK; HPCC's and htsim's definition); the time its
  receiver had every byte is reported too (``recv_done_us``).
- Slowdown: FCT / the flow's ideal FCT, the fabric's best and the same for
  every transport (`ideal`: its payload at the rate of all the host's NIC
  ports plus the shortest path's base RTT). The transport's own FCT alone on
  the idle fabric over its own path(s) is ``alone_fct_us`` (a lone flow's FCT
  equals it exactly; tested).
- Per job (`jobs`) and victim flows (`victims`: a flow of an incast job
  outside its incast, the flow the incast may hurt).
- Percentiles: numpy's linear interpolation over completed flows;
  ``p999`` is the 99.9th percentile.
- Collective completion time (CCT): last ``recv_done`` of the collective's
  flows minus its first start (null for a collective that did not finish).
- Bytes: sent (NICs) = delivered + dropped + removed by trimming + in flight.
- Failures: packets directed to the failed ports after the failure (queued,
  dropped or sent there), the time of the last one, and ``steered_away_us``:
  the time from the failure to that last packet, when traffic stopped using
  the ports before the failure ended (otherwise null: never steered away).
- Reroute (`reroute`): per failure, fault -> first packet of an affected flow
  steered away -> 99 % of the affected traffic off the failed element ->
  goodput recovered.
- Training and trace jobs (``training``): iteration times, the ideal, the
  slowest group and the GPU time wasted against the failure-free run
  (`training_metrics`).
"""
from __future__ import annotations

import numpy as np

from mrc import __version__
from mrc.emulator import localize, training_metrics
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
    conn = {"connection": fl["conn"]} if (fl["conn"] >= 0).any() else {}  # only for workloads with connections
    return {
        "flow": np.arange(len(fl)),
        "job": fl["job"],
        "collective": fl["coll"],
        "cm_id": fl["cm_id"],
        **conn,
        "src": fl["src"],
        "dst": fl["dst"],
        "size_bytes": fl["size"],
        "start_us": np.where(started, fl["t_start"] / US, np.nan),
        "end_us": np.where(done, fl["t_send_done"] / US, np.nan),
        "recv_done_us": np.where(recv >= 0, recv / US, np.nan),
        "fct_us": np.where(done, fct / US, np.nan),
        "ideal_fct_us": fl["ideal"] / US,
        "alone_fct_us": fl["alone"] / US,
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


def _windows(run):
    t = np.asarray(run.samples.get("t_us", []), float)
    starts = np.concatenate([[0.0], t[:-1]]) if len(t) else t
    return starts, t


def reroute(run) -> list[dict]:
    """Per failure (the first `state.MAX_TRACKED_FAILURES`): fault -> first packet steered away -> 99 %
    of the affected traffic off the failed element -> goodput recovered (docs/emulator.md, "Reroute").

    - affected flows: data of theirs reached the failed element in the ``reroute_window_us`` before
      the fault or after it;
    - ``first_steered_away_us``: fault -> send time of the first data packet of an affected flow,
      sent after the fault, that reached its host without being directed to the failed element;
    - ``off_99_us``: fault -> end of the first sample window from which on (until the failure
      ended) at most 1 % of the affected flows' data packets sent in a window were directed to
      the failed element (windows without such packets are skipped); null if that never held;
    - ``goodput_recovered_us``: fault -> end of the first window, after the affected flows'
      goodput (``failure<k>_affected_goodput_gbps``: their payload delivered in order) fell below
      (100 - ``recovery_pct``) % of its mean over the last 5 windows before the fault (windows
      the failure was watched in), in which it is back above that; 0 if it never fell; null if
      it never came back. Only windows while the failure lasts and at least
      (100 - ``recovery_pct``) % of the affected flows running at the fault still run, that
      end before the first of those flows has received everything, and by whose end the affected
      flows have delivered at most (100 - ``recovery_pct``) % of their bytes (the offered load must
      be comparable: the last stretch of a transfer drains, its goodput falls in a failure-free run
      too, and that fall is not the failure's). The affected flows, not the whole fabric: a few
      stalled flows among thousands would not move the fabric's goodput.
    """
    sc = run.scenario
    out = []
    if run.fstat is None:
        return out
    starts, ends = _windows(run)
    X = sc.metrics.recovery_pct / 100.0
    fl = run.flows
    for k, f in enumerate(sc.failures[: min(len(run.fstat), ST.MAX_TRACKED_FAILURES)]):
        if f.kind == "link-up":
            continue
        fs = run.fstat[k]
        at = f.at_us
        end = f.at_us + f.duration_us if f.duration_us is not None else run.sim["sim_time_us"]
        if f.kind == "flap":
            end = f.until_us if f.until_us is not None else run.sim["sim_time_us"]
        aff = (fl["fail_aff"] & (1 << k)) != 0
        r = {"index": k, "kind": f.kind, "target": f.target, "at_us": at,
             "affected_flows": int(np.count_nonzero(aff)),
             "affected_packets_sent": int(fs["aff_sent"]), "affected_packets_on_failed": int(fs["aff_directed"]),
             "first_steered_away_us": None, "off_99_us": None, "goodput_recovered_us": None,
             "pre_fault_goodput_gbps": None, "min_goodput_gbps": None, "recovery_pct": sc.metrics.recovery_pct}
        if fs["t0"] < ST.NEVER and fs["first_away"] < ST.NEVER:
            r["first_steered_away_us"] = (int(fs["first_away"]) - int(fs["t0"])) / US
        sent = run.samples.get(f"failure{k}_affected_sent")
        on = run.samples.get(f"failure{k}_affected_on_failed")
        if sent is not None and len(sent):
            after = np.flatnonzero((ends > at) & (starts < end) & (sent > 0))
            if len(after):
                frac = on[after] / sent[after]
                bad = np.flatnonzero(frac > 0.01)
                if len(bad) == 0:
                    r["off_99_us"] = float(max(ends[after[0]] - at, 0.0))
                elif bad[-1] + 1 < len(after):
                    r["off_99_us"] = float(ends[after[bad[-1] + 1]] - at)
        good = np.asarray(run.samples.get(f"failure{k}_affected_goodput_gbps", []), float)
        if len(good):
            watched = at - sc.metrics.reroute_window_us
            pre = np.flatnonzero((ends <= at) & (starts >= watched - 1e-9))[-5:]
            running = np.asarray(run.samples[f"failure{k}_affected_running"], float)
            if len(pre) and good[pre].mean() > 0:
                g0 = float(good[pre].mean())
                r["pre_fault_goodput_gbps"] = g0
                # compare like with like: only while the offered load is about the same, i.e. at least
                # (100 - recovery_pct) % of the affected flows running at the fault still run
                n0 = running[pre[-1]]
                # the first affected flow running at the fault to receive everything
                rd = fl["t_recv_done"][aff & (fl["t_start"] >= 0) & (fl["t_start"] <= at * US)]
                rd = rd[rd > at * US]
                first_done = rd.min() / US if len(rd) else np.inf
                # bytes the affected flows delivered by each window's end (goodput x window), against theirs
                delivered = np.cumsum(good * (ends - starts) * 125.0)
                left = delivered <= (1 - X) * float(fl["size"][aff].sum())
                post = np.flatnonzero((ends > at) & (starts < end) & (running >= (1 - X) * n0)
                                      & (ends <= first_done) & left)
                if len(post):
                    r["min_goodput_gbps"] = float(good[post].min())
                    low = post[good[post] < (1 - X) * g0]
                    if len(low) == 0:
                        r["goodput_recovered_us"] = 0.0
                    else:
                        back = post[(post > low[0]) & (good[post] >= (1 - X) * g0)]
                        if len(back):
                            r["goodput_recovered_us"] = float(ends[back[0]] - at)
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
        "jobs": jobs(run, ft),
        "training": training_metrics.summary(run),
        "victims": victims(run, ft),
        "failures": failures(run),
        "reroute": reroute(run),
        "engine": {"events_per_s": run.sim["events"] / wall if wall > 0 else None,
                   "packet_hops_per_s": run.sim["packet_hops"] / wall if wall > 0 else None,
                   "peak_packets": run.sim["peak_packets"], "pool_rows": run.sim["pool_rows"]},
        "fabric": {"name": sc.topo.spec.name, "hosts": sc.topo.n_hosts, "planes": sc.topo.n_planes,
                   "ports": sc.topo.n_ports},
        "routing": routing(sc),
        "config": sc.data,
        "localization": localize.summary_of(run.localization) if run.localization else None,
        "capture": ({"file": "capture.pcapng", "ports": [sc.topo.port_name(q) for q in sc.capture.ports],
                     "packets": int(len(run.capture["rows"])), "missed": run.capture["missed"],
                     "start_us": sc.capture.start_us, "end_us": sc.capture.end_us,
                     "max_packets": sc.capture.max_packets} if run.capture else None),
    }


def routing(sc) -> dict:
    """How the fabric's routing repairs a dead link (ECMP forwarding; SRv6 tables are static): the switches at
    its ends stop using it ``route_detect_us`` after the event, every other switch ``route_converge_us`` after
    it (`forward`; the defaults and their sources in docs/emulator.md). Printed in every run's header
    (`summary_table.header`) and kept in summary.json: a default that decides a failure comparison."""
    return {"route_detect_us": sc.switch.route_detect_us, "route_converge_us": sc.switch.route_converge_us}


def jobs(run, ft: dict) -> list[dict]:
    """Per job of the scenario: kind, flows, FCT and slowdown percentiles, slowest collective."""
    out = []
    colls = collectives(run)
    for j, job in enumerate(run.scenario.jobs):
        mine = ft["job"] == j
        done = mine & (ft["status"] == "done")
        sd = ft["slowdown"][done]
        cc = [c["cct_us"] for c in colls if c["job"] == j]
        out.append({"index": j, "kind": job.kind, "flows": int(mine.sum()), "completed": int(done.sum()),
                    "fct_us": percentiles(ft["fct_us"][done], ("p50", "p99", "max")),
                    "slowdown": percentiles(sd[~np.isnan(sd)], ("p50", "p99", "max")),
                    "cct_max_us": (None if not cc or any(c is None for c in cc) else max(cc))})
    return out


def victim_flows(run) -> np.ndarray:
    """Indices of the victim flows: flows of an incast job outside its incast (`workloads.generators`)."""
    fl = run.flows
    kinds = np.array([j.kind == "incast" for j in run.scenario.jobs] + [False], bool)
    job = np.where((fl["job"] >= 0) & (fl["job"] < len(run.scenario.jobs)), fl["job"], len(run.scenario.jobs))
    return np.flatnonzero(kinds[job] & (fl["coll"] < 0))


def victims(run, ft: dict) -> list[dict]:
    """Per victim flow: FCT, throughput (payload over FCT) and slowdown (null if it did not complete)."""
    out = []
    for f in victim_flows(run):
        fct = ft["fct_us"][f]
        ok = not np.isnan(fct)
        out.append({"flow": int(f), "job": int(ft["job"][f]), "src": int(ft["src"][f]), "dst": int(ft["dst"][f]),
                    "size_bytes": int(ft["size_bytes"][f]), "fct_us": float(fct) if ok else None,
                    "gbps": float(ft["size_bytes"][f] * 8 / fct / 1e3) if ok and fct > 0 else None,
                    "slowdown": float(ft["slowdown"][f]) if ok else None})
    return out


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
