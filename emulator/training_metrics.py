"""Figures of training and trace jobs: iteration times, the ideal, the slowest group, GPU time wasted.

Definitions (docs/emulator.md, "Training jobs"); times from the triggers'
firing times (`workloads.training.JobGraph`):

- host i's iteration k ends when it has every input of iteration k + 1
  (``end[i, k]``); the job's iteration k ends at ``T_k = max_i end[i, k]``
  and lasts ``T_k - T_{k-1}`` (``T_{-1}``: the job's start);
- the ideal of iteration k: its slowest compute plus the most bytes a host
  sends in it at the NIC's full rate (every plane), the collectives'
  bandwidth bound on an idle fabric;
- a host's exposed communication in iteration k: ``end[i, k] - end[i, k-1]
  - compute[i, k]`` (the time it is not computing);
- the slowest group: the group whose collectives took longest in total
  (done minus the latest compute end of its members);
- GPU-seconds wasted against a failure-free run of the same scenario and
  seed (`waste`): ``sum_i (end_i - end_i^base)`` over the job's hosts, a
  host's end being its last iteration's end (a host that never finished
  counts until the end of the run); its split into communication and
  compute, and per iteration the slowdown ``t_k / t_k^base``.
"""
from __future__ import annotations

import numpy as np

from mrc.units import US, ps_from_us


def host_ends(jg, t_fired: np.ndarray, end_ps: int) -> np.ndarray:
    """[n, K] end of each host's iterations, ps (a barrier that never fired: `end_ps`, the run's end)."""
    t = t_fired[jg.ready[:, 1:]].astype(np.int64)
    return np.where(t < 0, end_ps, t)


def job(jg, t_fired: np.ndarray, end_ps: int) -> dict:
    """One job's figures for summary.json."""
    ends = host_ends(jg, t_fired, end_ps)
    n, K = ends.shape
    finished = t_fired[jg.ready[:, 1:]] >= 0
    prev = np.concatenate([np.full((n, 1), jg.start_ps, np.int64), ends[:, :-1]], axis=1)
    comm = np.maximum(ends - prev - jg.compute_ps, 0)
    T = ends.max(axis=0)
    Tprev = np.concatenate([[jg.start_ps], T[:-1]])
    iters = []
    for k in range(K):
        iters.append({"iteration": k, "time_us": float(T[k] - Tprev[k]) / US if finished[:, k].all() else None,
                      "ideal_us": float(jg.ideal_ps[k]) / US,
                      "compute_max_us": float(jg.compute_ps[:, k].max()) / US,
                      "bytes_sent_max": int(jg.sent_bytes[:, k].max()),
                      "comm_exposed_mean_us": float(comm[:, k].mean()) / US})
    slowest = None
    for g in jg.groups:
        tot = 0
        ok = True
        for k, d in enumerate(g.done):
            if t_fired[d] < 0:
                ok = False
                break
            t0 = (prev[g.hosts, k] + jg.compute_ps[g.hosts, k]).max() if jg.kind == "training" else jg.start_ps
            tot += int(t_fired[d]) - int(t0)
        if not ok:
            tot = None
        if slowest is None or (tot is None and slowest["time_us"] is not None) or (
                tot is not None and slowest["time_us"] is not None and tot / US > slowest["time_us"]):
            slowest = {"group": g.name, "kind": g.kind, "hosts": len(g.hosts),
                       "time_us": None if tot is None else tot / US}
    gpu_s = float((ends[:, -1] - jg.start_ps).sum()) / 1e12
    comm_s = float(comm.sum()) / 1e12
    return {"kind": jg.kind, "hosts": int(n), "iterations": iters,
            "finished": bool(finished.all()),
            "job_time_us": float(T[-1] - jg.start_ps) / US,
            "ideal_time_us": float(jg.ideal_ps.sum()) / US,
            "slowest_group": slowest,
            "stragglers": jg.stragglers,
            "gpu_seconds": gpu_s,
            "comm_share": comm_s / gpu_s if gpu_s > 0 else None,
            "_ends": ends, "_comm": comm, "_compute": jg.compute_ps, "_hosts": jg.hosts}


def jobs(run) -> list[dict]:
    """Figures of every training / trace job of a run (`sim.RunData`); internal arrays under ``_`` keys."""
    if not run.jobs:
        return []
    end_ps = ps_from_us(run.sim["sim_time_us"])
    out = []
    for j, jg in sorted(run.jobs.items()):
        d = job(jg, run.trig_fired, end_ps)
        d["job"] = j
        out.append(d)
    return out


HOSTS_CSV = "training_hosts.csv"


def hosts_columns(run_jobs: list) -> dict:
    """The per-host, per-iteration table (``training_hosts.csv``): job, rank, host, iteration, end, compute, comm."""
    cols = {k: [] for k in ("job", "rank", "host", "iteration", "end_us", "compute_us", "comm_us")}
    for d in run_jobs:
        ends, comm, comp = d["_ends"], d["_comm"], d["_compute"]
        n, K = ends.shape
        cols["job"].append(np.full(n * K, d["job"]))
        cols["rank"].append(np.repeat(np.arange(n), K))
        cols["host"].append(np.repeat(d["_hosts"], K))
        cols["iteration"].append(np.tile(np.arange(K), n))
        cols["end_us"].append(ends.ravel() / US)
        cols["compute_us"].append(comp.ravel() / US)
        cols["comm_us"].append(comm.ravel() / US)
    return {k: np.concatenate(v) if v else np.zeros(0) for k, v in cols.items()}


def read_hosts(path, sc) -> list:
    """`jobs`-shaped records (the arrays and the job time) from a failure-free run's ``training_hosts.csv``."""
    import pandas as pd

    from mrc.errors import ConfigError

    df = pd.read_csv(path)
    out = []
    for j, g in df.groupby("job", sort=True):
        n = int(g["rank"].max()) + 1
        K = int(g["iteration"].max()) + 1
        if len(g) != n * K:
            raise ConfigError("metrics.baseline", str(path), f"job {j}: {len(g)} rows, not {n} ranks x {K} iterations")
        g = g.sort_values(["rank", "iteration"])
        ends = np.rint(g["end_us"].to_numpy() * US).astype(np.int64).reshape(n, K)
        comm = np.rint(g["comm_us"].to_numpy() * US).astype(np.int64).reshape(n, K)
        comp = np.rint(g["compute_us"].to_numpy() * US).astype(np.int64).reshape(n, K)
        start = int((ends[:, 0] - comm[:, 0] - comp[:, 0]).min())  # every host's first iteration starts there
        T = ends.max(axis=0)
        Tp = np.concatenate([[start], T[:-1]])
        out.append({"job": int(j), "_ends": ends, "_comm": comm, "job_time_us": float(T[-1] - start) / US,
                    "iterations": [{"time_us": float(T[k] - Tp[k]) / US} for k in range(K)]})
    return out


def waste(mine: dict, base: dict) -> dict:
    """GPU time this job wasted against the same job in a failure-free run (`job` results with arrays)."""
    de = (mine["_ends"][:, -1] - base["_ends"][:, -1]).astype(np.int64)
    dcomm = (mine["_comm"].sum(axis=1) - base["_comm"].sum(axis=1)).astype(np.int64)
    wasted = float(de.sum()) / 1e12
    slow = []
    for a, b in zip(mine["iterations"], base["iterations"]):
        slow.append(None if a["time_us"] is None or not b["time_us"] else a["time_us"] / b["time_us"])
    return {"gpu_seconds_wasted": wasted,
            "gpu_seconds_wasted_comm": float(dcomm.sum()) / 1e12,
            "comm_share_of_waste": float(dcomm.sum()) / float(de.sum()) if de.sum() > 0 else None,
            "hosts_delayed": int((de > 0).sum()),
            "job_slowdown": mine["job_time_us"] / base["job_time_us"] if base["job_time_us"] > 0 else None,
            "iteration_slowdown": slow,
            "baseline_job_time_us": base["job_time_us"]}


def summary(run) -> list:
    """``training`` of summary.json: per training / trace job its figures, and its waste against the baseline."""
    mine = jobs(run)
    base = {d["job"]: d for d in run.baseline} if run.baseline else {}
    out = []
    for d in mine:
        p = public(d)
        b = base.get(d["job"])
        if b is not None:
            if b["_ends"].shape != d["_ends"].shape:
                from mrc.errors import ConfigError

                raise ConfigError("metrics.baseline", run.scenario.metrics.baseline,
                                  f"job {d['job']}: the baseline has {b['_ends'].shape} ranks x iterations, this run "
                                  f"{d['_ends'].shape}")
            p["waste"] = waste(d, b)
        else:
            p["waste"] = None
        out.append(p)
    return out


def public(d: dict) -> dict:
    """A job's figures without its internal arrays (what summary.json holds)."""
    return {k: v for k, v in d.items() if not k.startswith("_")}
