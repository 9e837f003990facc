"""The packet-level fabric emulator (docs/emulator.md).

    >>> from mrc.emulator import run
    >>> res = run("fattree-k8-permutation", out="runs/k8", seed=3)
    >>> res.summary["fct_us"]["p99"]

`run` loads a scenario (a TOML file, a library name, or a dict), simulates it
in compiled code (`engine`), and returns a `Result` (run data and summary),
writing the results directory when `out` is given. Modules: `scenario`
(TOML schema), `workloads`, `transports`, `build` (tables), `sim` (the
Python driver), `engine` and the element modules (`events`, `sched`,
`pool`, `port`, `aqm`, `pfc`, `forward`, `nic`, `flows`, `failures`),
`metrics`, `results`, `plots`, `cli`; `sweeps` runs many seeds and grids on
Dask (`sweep`).
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Result:
    run: object  # sim.RunData
    summary: dict
    out: object = None  # the results directory, if written


def sweep(scenario, **kwargs):
    """Run a sweep on Dask: `mrc.emulator.sweeps.sweep` (docs/sweeps.md); returns a pandas DataFrame."""
    from mrc.emulator.sweeps import sweep as _sweep

    return _sweep(scenario, **kwargs)


def run(source, out=None, seed: int | None = None, sets=(), progress: bool = False, plots: bool | None = None):
    """Run a scenario; write its results directory to `out` if given."""
    from mrc.emulator import metrics, results, scenario, sim

    sc = scenario.load(source, seed=seed, sets=sets)
    data = sim.Simulation(sc).run(progress=progress)
    if out is not None:
        summ = results.write(data, out, plots_too=plots)
    else:
        summ = metrics.summary(data)
    return Result(data, summ, out)


__all__ = ["Result", "run", "sweep"]
