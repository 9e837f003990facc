"""Fluid reference: flow completion times under ideal max-min fair sharing on fixed paths.

What an ideal congestion control would achieve on the paths the flows actually
take (ECMP collisions included): between flow starts and finishes every flow
runs at its max-min fair rate (progressive filling over the links it crosses).
It separates what path collisions cost from what a transport's congestion
control adds: ``slowdown(transport) / slowdown(fluid)`` is the control's own
share. Used by the `roce-ecmp` validation tests and `benchmarks/roce_fairness.py`.

    >>> fct = max_min_fct(paths, wire_bytes, start_ps, capacity_bps)  # per flow, ps

`paths[f]` lists the link (port) ids flow f crosses; `capacity_bps[q]` is link
q's rate. Rates are in bits/s, times in ps (floats: this is a reference, not
the engine).
"""
from __future__ import annotations

import numpy as np


def max_min_rates(active: list[int], paths: list, capacity: np.ndarray) -> dict[int, float]:
    """Max-min fair rate of each active flow (progressive filling)."""
    rate: dict[int, float] = {}
    left = {q: float(capacity[q]) for f in active for q in paths[f]}
    users: dict[int, set] = {}
    for f in active:
        for q in paths[f]:
            users.setdefault(q, set()).add(f)
    todo = set(active)
    while todo:
        # the most constrained link sets the rate of every unfixed flow on it
        q, share = min(((q, left[q] / len(u)) for q, u in users.items() if u), key=lambda x: (x[1], x[0]))
        for f in list(users[q]):
            rate[f] = share
            todo.discard(f)
            for p in paths[f]:
                left[p] -= share
                users[p].discard(f)
    return rate


def max_min_fct(paths: list, wire_bytes, start_ps, capacity_bps) -> np.ndarray:
    """Each flow's time (ps) from its start until its last bit is sent, under max-min sharing."""
    n = len(paths)
    remaining = np.asarray(wire_bytes, np.float64) * 8.0  # bits
    start = np.asarray(start_ps, np.float64)
    cap = np.asarray(capacity_bps, np.float64)
    done = np.full(n, np.nan)
    order = list(np.argsort(start, kind="stable"))
    active: list[int] = []
    t = float(start[order[0]]) if n else 0.0
    while order or active:
        while order and start[order[0]] <= t:
            active.append(int(order.pop(0)))
        if not active:
            t = float(start[order[0]])
            continue
        rate = max_min_rates(active, paths, cap)
        # next event: a flow finishes or one starts
        dt = min(remaining[f] / rate[f] * 1e12 for f in active)
        if order:
            dt = min(dt, float(start[order[0]]) - t)
        for f in active:
            remaining[f] -= rate[f] * dt / 1e12
        t += dt
        for f in list(active):
            if remaining[f] <= 1e-6 * max(1.0, float(wire_bytes[f])):
                done[f] = t - start[f]
                active.remove(f)
    return done
