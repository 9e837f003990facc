"""Per-port statistics for the time series in one compiled pass, with no temporaries over the ports, and
no pass at all while no port changed.

`sim.Sampler` (per link group) and `sim.PlaneSampler` (per link group and
plane) each give every port a cell (-1: none). On the 131,072-host preset
that is 4.2 M ports: the numpy version built five temporaries of that size
per sample and sampler (about 0.3 s each); `cell_stats` reads each port once
(86 ms on the 131k preset). A run that waits (a RoCE QP's millisecond
timeout, a job between its phases) still samples every ``metrics.sample_us``;
`PortCells` skips the pass when the engine's change counters say that no byte
left a port and no queue changed since the last pass (``state.S_HOPS``,
``state.S_PORT_MOVES``): every port's utilisation is then 0 and its queue
what it was, so the cells' figures are the last pass's queue figures and zero
utilisation, the same numbers the pass would compute, bit for bit (adding
0.0 leaves a float sum unchanged).
"""
from __future__ import annotations

import numpy as np

from mrc.emulator._jit import njit
from mrc.emulator import state as ST

# (link tier, direction) -> group name of the utilisation / queue series
GROUPS = {(0, 0): "host_up", (0, 1): "t0_down", (1, 0): "t0_up", (1, 1): "t1_down", (2, 0): "t1_up",
          (2, 1): "t2_down"}
ADAPT_EVERY = 2000  # without duration_us or sample_us, the interval doubles every this many samples


def auto_sample_us(sc) -> float:
    """The interval between samples of the time series, in us, for scenario `sc`."""
    if sc.metrics.sample_us is not None:
        return sc.metrics.sample_us
    if sc.duration_us is not None:
        return max(1.0, min(10.0, sc.duration_us / 100)) if sc.duration_us <= 10_000 else sc.duration_us / 1000
    return 10.0


class PortCells:
    """Per cell of ports (``cell[port]``, -1: none): the sum and maximum of their utilisation since the last
    `update` and of their queued bytes, as `cell_stats` computes them, skipping the pass over the ports when
    none changed. ``passes`` and ``skipped`` count the updates that walked the ports and those that did not."""

    def __init__(self, cell: np.ndarray, n_cells: int, rate: np.ndarray):
        self.cell = cell
        self.rate = rate
        self.stats = [np.zeros(n_cells) for _ in range(4)]  # usum, umax, qsum, qmax
        self.prev_tx = np.zeros(len(cell), np.int64)
        self.mark = None  # (S_HOPS, S_PORT_MOVES) at the last pass
        self.passes = 0
        self.skipped = 0

    def update(self, E, dt_s: float) -> list:
        """The cells' [usum, umax, qsum, qmax] over the `dt_s` seconds since the last update."""
        usum, umax, qsum, qmax = self.stats
        mark = (int(E.S[ST.S_HOPS]), int(E.S[ST.S_PORT_MOVES]))
        if mark == self.mark:
            usum[:] = 0.0  # no serialisation ended: tx_bytes (and prev_tx) as at the last pass
            umax[:] = 0.0
            self.skipped += 1  # no queue changed: qsum, qmax as at the last pass
        else:
            P = E.port
            cell_stats(P["tx_bytes"], self.prev_tx, self.rate, P["bytes0"], P["bytes1"], self.cell, dt_s,
                       usum, umax, qsum, qmax)
            self.mark = mark
            self.passes += 1
        return self.stats


@njit
def cell_stats(tx, prev_tx, rate, b0, b1, cell, dt_s, usum, umax, qsum, qmax):
    """Per cell: the sum and maximum of the ports' utilisation since the last sample (bytes whose serialisation
    ended / capacity) and of their queued bytes; ``prev_tx`` becomes ``tx``."""
    for c in range(usum.shape[0]):
        usum[c] = 0.0
        umax[c] = 0.0
        qsum[c] = 0.0
        qmax[c] = 0.0
    for i in range(tx.shape[0]):
        d = tx[i] - prev_tx[i]
        prev_tx[i] = tx[i]
        c = cell[i]
        if c < 0:
            continue
        u = d * 8.0 / (rate[i] * dt_s)
        q = float(b0[i] + b1[i])
        usum[c] += u
        qsum[c] += q
        if u > umax[c]:
            umax[c] = u
        if q > qmax[c]:
            qmax[c] = q
