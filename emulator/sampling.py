"""Per-port statistics for the time series in one compiled pass, with no temporaries over the ports.

`sim.Sampler` (per link group) and `sim.PlaneSampler` (per link group and
plane) each give every port a cell (-1: none). On the 131,072-host preset
that is 4.2 M ports: the numpy version built five temporaries of that size
per sample and sampler (about 0.3 s each); this pass reads each port once.
"""
from __future__ import annotations

from mrc.emulator._jit import njit


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
