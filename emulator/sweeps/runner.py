"""Running a sweep's cells on Dask distributed and keeping the table.

- Cluster: an existing one (``scheduler``: ``tcp://HOST:PORT``, or a
  ``Client`` passed in), else a ``LocalCluster`` of ``workers`` worker
  processes (default: the core count), one thread each. No pool of our own.
- Warm-up: one worker loads (or, on a cold cache, compiles) the compiled code
  first, then the others load it (`cell.warm`), so workers never compile side by
  side; after that a cell in a worker pays only its simulation.
- Faults: a cell that raises or passes ``cell_timeout_s`` is a row with its
  status and error (`cell.run_cell`). A worker process that dies is restarted
  by its nanny and the scheduler runs its cell again on a live worker; a local
  cluster's scheduler allows that once (``distributed.scheduler.allowed-failures
  = 1``), after which the cell is recorded as ``error`` (``KilledWorker``). An
  existing cluster's scheduler applies its own setting (Dask's default is 3).
- The table is rewritten (atomically, `table.write`) at most every
  `FLUSH_S` seconds and at the end; Ctrl-C cancels what is left, writes the
  table of the cells done and re-raises.
- ``resume``: the cells whose key is in the directory's table with status
  ``ok`` are kept and not run again; the others run.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import sys
import time

from mrc.cli import plural
from mrc.emulator.sweeps import cell as C
from mrc.emulator.sweeps import table as TB
from mrc.emulator.sweeps.spec import Sweep, code_version

FLUSH_S = 2.0
OURS = (TB.PARQUET, TB.CSV, "stats.csv", "sweep.toml")


@contextlib.contextmanager
def cluster(workers: int | None = None, scheduler: str | None = None, client=None):
    """A dask ``Client``: the one given, one connected to `scheduler`, or one of a new ``LocalCluster``."""
    if client is not None:
        yield client
        return
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        from mrc.errors import UsageError

        try:
            c = Client(scheduler, timeout="30s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise UsageError(f"--scheduler {scheduler}: no Dask scheduler answered there ({exc})") from None
        with c:
            yield c
        return
    n = workers or os.cpu_count() or 1
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                          silence_logs=40) as lc, Client(lc) as c:
            yield c


def writable_dir(out: pathlib.Path) -> bool:
    """`results.writable_dir` (here so that the driver imports no more than it needs)."""
    from mrc.emulator.results import writable_dir as _w

    return _w(out)


def _clear(out: pathlib.Path) -> None:
    for name in OURS:
        (out / name).unlink(missing_ok=True)
    for d in ("cells", "plots"):
        shutil.rmtree(out / d, ignore_errors=True)


def _write_cell_files(out: pathlib.Path, c, files: dict) -> str | None:
    if not files:
        return None
    d = out / "cells" / c.dirname
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for name, blob in files.items():
        (d / pathlib.Path(name).name).write_bytes(blob)
    return f"cells/{c.dirname}"


class Progress:
    """Cells done / total, failures, ETA: a live bar on a terminal, else a line every 10 % or 30 s."""

    def __init__(self, total: int, done: int, live: bool, echo):
        self.total, self.done, self.failed, self.echo = total, done, 0, echo
        self.t0 = time.perf_counter()
        self.start_done = done
        self.last_line = 0.0
        self.bar = None
        if live and total:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as P, TextColumn
            from rich.progress import TimeElapsedColumn, TimeRemainingColumn

            self.bar = P(TextColumn("[bold]sweep[/]"), BarColumn(), MofNCompleteColumn(),
                         TextColumn("cells, {task.fields[failed]} failed"), TimeElapsedColumn(), TextColumn("ETA"),
                         TimeRemainingColumn(), transient=False)
            self.bar.start()
            self.task = self.bar.add_task("sweep", total=total, completed=done, failed=0)

    def eta_s(self) -> float | None:
        ran = self.done - self.start_done
        if ran <= 0:
            return None
        return (time.perf_counter() - self.t0) / ran * (self.total - self.done)

    def update(self, failed: bool) -> None:
        self.done += 1
        self.failed += int(failed)
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, failed=self.failed)
            return
        now = time.perf_counter() - self.t0
        step = max(1, self.total // 10)
        if self.done == self.total or self.done % step == 0 or now - self.last_line >= 30:
            self.last_line = now
            eta = self.eta_s()
            self.echo(f"sweep: {self.done:,}/{plural(self.total, 'cell')}, {self.failed:,} failed, {now:.0f} s"
                      + (f", ETA {eta:.0f} s" if eta is not None and self.done < self.total else ""))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _echo_err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def execute(sw: Sweep, out=None, workers=None, scheduler=None, client=None, resume: bool = False,
            progress: bool = False, echo=_echo_err, keep_files: bool = True):
    """Run the cells of `sw` not yet done; returns the table (a pandas DataFrame, every cell of the plan that
    has a row). `out` (a directory) gets ``sweep.toml``, the table and ``cells/``."""
    from mrc.emulator import scenario
    from mrc.emulator.sweeps import spec as SP

    code = code_version()
    cells = sw.cells(code)
    grid_keys = list(sw.grid)
    seen = set()
    first = None
    for c in cells:  # every transport is checked before anything runs (a grid point's error is the cell's)
        if c.transport not in seen:
            seen.add(c.transport)
            sc = scenario.parse(c.data, sw.name, sw.base_dir)
            first = first or sc
    out = pathlib.Path(out) if out is not None else None
    keep_files = keep_files and out is not None
    rows: dict[int, dict] = {}
    created = False
    if out is not None:
        created = writable_dir(out)
        if resume:
            old = TB.read(out)
            if old is not None and "key" in old:
                index = {c.key: c for c in cells}
                for r in TB.records(old):
                    c = index.get(r.get("key"))
                    if c is not None and r.get("status") == "ok":
                        rows[c.index] = {**r, "cell": c.index}

    def begin():
        """The sweep has started (its cluster is up): the directory holds its definition from now on."""
        if out is not None:
            if not resume:
                _clear(out)
            (out / "sweep.toml").write_text(SP.dump(sw))

    todo = [c for c in cells if c.index not in rows]
    echo(f"sweep {sw.name}: {plural(len(cells), 'cell')} ({plural(len(sw.transports), 'transport')} x "
         f"{plural(len(sw.points()), 'grid point')} x {plural(len(sw.seeds), 'seed')}), {len(rows):,} already done, "
         f"{len(todo):,} to run")
    if first is not None:
        from mrc.emulator import metrics, summary_table

        gridded = [k for k in sw.grid if k in ("switch.route_detect_us", "switch.route_converge_us")]
        echo(summary_table.routing_text(metrics.routing(first))
             + (f" ({', '.join(gridded)} as the grid sets)" if gridded else ""))
    bar = None
    last_flush = [0.0]

    def flush(force=False):
        if out is None or (not force and time.perf_counter() - last_flush[0] < FLUSH_S):
            return
        TB.write(TB.frame(list(rows.values()), grid_keys), out)
        last_flush[0] = time.perf_counter()

    def lead(c) -> dict:
        return {"cell": c.index, "key": c.key, "scenario": sw.name, "transport": c.transport, **dict(c.point),
                "seed": c.seed}

    if not todo:
        begin()
    else:
        with contextlib.ExitStack() as stack:
            try:
                cl = stack.enter_context(cluster(workers, scheduler, client))
                addrs = list(cl.scheduler_info()["workers"])
                echo(f"dask: {plural(len(addrs), 'worker')} ({'scheduler ' + scheduler if scheduler else 'local cluster' if client is None else 'client given'})")
                warming = _warm(cl, addrs, echo)  # noqa: F841  (held until the cells are done)
            except BaseException:
                if created:  # a sweep that never started leaves no directory behind
                    with contextlib.suppress(OSError):
                        out.rmdir()
                raise
            begin()
            from distributed import as_completed

            files = sw.files()
            shared = cl.scatter(files, broadcast=True) if files else {}
            futs = {}
            for c in todo:
                task = {"data": c.data, "name": sw.name, "base_dir": str(sw.base_dir) if sw.base_dir else None,
                        "files": shared, "timeout_s": sw.cell_timeout_s, "code_version": code,
                        "keep_files": keep_files}
                futs[cl.submit(C.run_cell, task, key=f"mrc-cell-{c.index}-{c.key}-{time.time_ns()}", pure=False)] = c
            bar = Progress(len(cells), len(rows), progress, echo)
            try:
                for fut in as_completed(futs):
                    c = futs.pop(fut)
                    try:
                        res = fut.result()
                        row = res["row"]
                        row["results"] = _write_cell_files(out, c, res["files"]) if keep_files else None
                    except Exception as exc:  # noqa: BLE001  (KilledWorker, lost scheduler...: recorded)
                        row = {"status": "error", "error": _dask_error(exc), "results": None}
                    rows[c.index] = {**lead(c), **row}
                    bar.update(row["status"] != "ok")
                    fut.release()
                    flush()
            except KeyboardInterrupt:
                bar.close()
                for f in futs:
                    f.cancel()
                flush(force=True)
                echo(f"sweep interrupted: {len(rows):,} of {plural(len(cells), 'cell')} in the table"
                     + (f" ({out / TB.PARQUET}); --resume runs the rest" if out is not None else ""))
                raise
            bar.close()
    df = TB.frame(list(rows.values()), grid_keys)
    if out is not None:
        TB.write(df, out)
    return df


def _dask_error(exc) -> str:
    name = type(exc).__name__
    if name == "KilledWorker":
        return f"KilledWorker: the worker running this cell died, and again on the rerun ({exc})"
    return f"{name}: {exc}"


def _warm(cl, addrs: list, echo) -> list:
    """Load the compiled code on one worker (compiling it if the cache is cold), then on the others."""
    from mrc.emulator import coldstart

    if coldstart.is_cold():
        echo(f"workers: compiling the emulator (numba; first run of this code version): {coldstart.estimate()}")
    if not addrs:
        return []
    first = cl.submit(C.warm, workers=[addrs[0]], allow_other_workers=True, pure=False, key=f"mrc-warm-{time.time_ns()}")
    info = first.result()
    if info["compiled"]:
        echo(f"workers: compiled in {info['seconds']:.0f} s on {info['worker']}")
    rest = [cl.submit(C.warm, workers=[a], allow_other_workers=False, pure=False, key=f"mrc-warm-{a}-{time.time_ns()}")
            for a in addrs[1:]]
    return rest
