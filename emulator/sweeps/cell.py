"""One cell of a sweep, as a Dask worker runs it, and the flat row it returns.

`run_cell` takes a plain mapping (the cell's scenario mapping, the files it
reads, the time limit, the driver's code version) and returns its row and its
results directory as bytes: the driver writes them under ``DIR/cells/``, so
workers on other machines need no shared file system. Whatever the cell does,
`run_cell` returns: an exception becomes status ``error`` with its text, the
time limit status ``timeout``, a worker whose code differs from the driver's
status ``error`` naming both versions.

The worker process keeps the compiled code loaded between cells (numba loads it
on the first cell; `warm` does that before the sweep starts), so a cell in a
warm worker costs its simulation plus a few milliseconds.
"""
from __future__ import annotations

import hashlib
import math
import os
import pathlib
import socket
import tempfile
import time
import traceback

_FILES_DIR: pathlib.Path | None = None


def flatten(s: dict) -> dict:
    """A run's `metrics.summary` as one flat row: ``fct_us_p99``, ``counters_trims``, ``job1_fct_us_max``,
    ``victim_gbps`` (the worst victim), ``failure0_off_99_us``, ... (docs/sweeps.md lists them)."""
    row: dict = {}

    def put(prefix, d):
        for k, v in d.items():
            if isinstance(v, dict):
                put(f"{prefix}{k}_", v)
            elif v is None or isinstance(v, (int, float, str, bool)):
                row[f"{prefix}{k}"] = v

    for part in ("fct_us", "slowdown", "flows", "sim", "counters", "bytes", "packets", "engine", "fabric", "routing"):
        put(f"{part}_", s.get(part) or {})
    out = s.get("outcome") or {}
    row["outcome_failed"] = out.get("failed")
    row["outcome_unfinished"] = out.get("unfinished")
    row["outcome_reasons"] = "; ".join(f"{n} {k}" for k, n in (out.get("reasons") or {}).items()) or None
    colls = s.get("collectives") or []
    if colls:
        done = [c["cct_us"] for c in colls if c["cct_us"] is not None]
        row["collectives_total"] = len(colls)
        row["collectives_completed"] = len(done)
        row["cct_us_min"] = min(done) if done else None
        row["cct_us_mean"] = sum(done) / len(done) if done else None
        row["cct_us_max"] = max(done) if len(done) == len(colls) else None
    jobs = s.get("jobs") or []
    if len(jobs) > 1:
        for j in jobs:
            put(f"job{j['index']}_", {k: v for k, v in j.items() if k != "index"})
    vic = s.get("victims") or []
    if vic:
        fct = [v["fct_us"] for v in vic]
        gb = [v["gbps"] for v in vic]
        sd = [v["slowdown"] for v in vic]
        row["victims"] = len(vic)
        row["victim_fct_us"] = None if None in fct else max(fct)
        row["victim_gbps"] = None if None in gb else min(gb)
        row["victim_slowdown"] = None if None in sd else max(sd)
        if len(vic) > 1:
            for k, v in enumerate(vic):
                put(f"victim{k}_", v)
    for f in s.get("failures") or []:
        put(f"failure{f['index']}_", {k: f[k] for k in ("kind", "target", "at_us", "packets_directed",
                                                         "last_packet_us", "steered_away_us")})
    for r in s.get("reroute") or []:
        put(f"failure{r['index']}_", {k: r[k] for k in ("affected_flows", "first_steered_away_us", "off_99_us",
                                                         "goodput_recovered_us", "pre_fault_goodput_gbps",
                                                         "min_goodput_gbps")})
    for k, v in list(row.items()):
        if isinstance(v, float) and math.isnan(v):
            row[k] = None
    return row


def _materialise(files: dict) -> pathlib.Path | None:
    """Write the cell's input files once per worker process (by content) and return their directory."""
    global _FILES_DIR
    if not files:
        return None
    if _FILES_DIR is None:
        _FILES_DIR = pathlib.Path(tempfile.mkdtemp(prefix="mrc-sweep-files-"))
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name])
    d = _FILES_DIR / h.hexdigest()[:16]
    if not d.is_dir():
        tmp = pathlib.Path(tempfile.mkdtemp(dir=_FILES_DIR))
        for name, blob in files.items():
            p = (tmp / name).resolve()
            if tmp.resolve() not in p.parents:
                raise ValueError(f"workload file {name!r}: not a relative path inside the scenario's directory")
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(blob)
        try:
            tmp.rename(d)
        except OSError:  # another thread of this process got there first
            pass
    return d


def run_cell(task: dict) -> dict:
    """Run one cell (`task`: data, name, base_dir, files, timeout_s, code_version, keep_files) on this worker;
    returns {"row": ..., "files": {name: bytes}}."""
    from mrc.emulator.sweeps.spec import code_version

    t0 = time.perf_counter()
    row: dict = {"status": "ok", "error": None, "worker": f"{socket.gethostname()}:{os.getpid()}"}
    files: dict = {}
    try:
        mine = code_version()
        row["code_version"] = mine
        if task.get("code_version") and task["code_version"] != mine:
            raise RuntimeError(f"this worker runs code version {mine}, the sweep {task['code_version']}: "
                               "install the same code on every machine")
        from mrc.emulator import results, scenario, sim

        base = _materialise(task.get("files") or {}) or task.get("base_dir")
        sc = scenario.parse(task["data"], task["name"], base)
        timeout = task.get("timeout_s")
        run = sim.Simulation(sc).run(deadline=t0 + timeout if timeout else None)
        with tempfile.TemporaryDirectory(prefix="mrc-cell-") as d:
            s = results.write(run, d, plots_too=False)
            if task.get("keep_files", True):
                files = {p.name: p.read_bytes() for p in sorted(pathlib.Path(d).iterdir()) if p.is_file()}
        row.update(flatten(s))
    except Exception as exc:  # noqa: BLE001  (every failure of a cell is recorded, the sweep goes on)
        from mrc.emulator.sim import RunTimeout

        row["status"] = "timeout" if isinstance(exc, RunTimeout) else "error"
        where = [f"{pathlib.Path(f.filename).name}:{f.lineno} {f.name}" for f in traceback.extract_tb(exc.__traceback__)]
        row["error"] = f"{type(exc).__name__}: {exc}" + (f" (at {' <- '.join(reversed(where[-3:]))})" if where else "")
    row["cell_s"] = time.perf_counter() - t0
    return {"row": row, "files": files}


def warm() -> dict:
    """Load (or compile) the compiled code in this worker: two tiny runs, one per transport family."""
    from mrc.emulator import coldstart, scenario, sim

    t0 = time.perf_counter()
    cold = coldstart.is_cold()
    for name in ("roce-ecmp", "mrc"):
        d = {"topology": {"kind": "leaf-spine", "hosts_per_leaf": 2, "leaves": 2, "spines": 2, "planes": 2,
                          "link_gbps": 100},
             "transport": {"name": name}, "workload": {"kind": "permutation", "size_bytes": 8192}}
        sim.Simulation(scenario.parse(d, "warm-up")).run()
    s = time.perf_counter() - t0
    if cold:
        coldstart.record(s)
    return {"worker": f"{socket.gethostname()}:{os.getpid()}", "seconds": s, "compiled": cold}
