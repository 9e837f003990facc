"""EV policy ``OBLIVIOUS``: oblivious spraying, no path health.

Planes in turn, and within a plane every usable EV of the profile (active or
backup) once per seeded pseudo-random cycle (UEC htsim's "oblivious" EV
cycling, mrc-public-notes 7.3). Feedback is ignored: ECN marks, trims and
losses leave the EVs' states alone, so a dead path keeps its share of the
packets (probes, the rotation and the controller still act).
"""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import evset
from mrc.core.rng import below
from mrc.core.rotation import next_plane, plane_slots, rotation_next, rotation_peek

NAME = "OBLIVIOUS"
PATH_HEALTH = False
TAKES_ACKED = False


@njit_core
def start(T, i):
    return


@njit_core
def pick_any_in_plane(T, i, p):
    """Next usable EV of plane `p` in its rotation, active or backup (oblivious cycling), or -1."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    start, size = plane_slots(q, p)
    if size <= 0:
        return -1
    for _ in range(2 * size + 1):
        k = rotation_next(T, i, p, start, size)
        if evset.is_usable(row[k]["state"]):
            return k
    return -1


@njit_core
def random_in_plane(T, i, p):
    """A usable EV slot of plane `p` drawn uniformly from the QP's generator (first usable from a
    random start), or -1."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    start, size = plane_slots(q, p)
    if size <= 0:
        return -1
    off = below(T.qp, i, size)
    for j in range(size):
        k = start + (off + j) % size
        if evset.is_usable(row[k]["state"]):
            return k
    return -1


@njit_core
def pick_over_planes(T, i, planes, in_rotation):
    """A usable EV from the first plane of `planes` (in the plane rotation, which advances past
    every plane tried) that has one: the next in that plane's EV rotation (`in_rotation`, active or
    backup) or the first from a random start; -1."""
    q = T.qp[i]
    n_planes = i64(q["n_planes"])
    while planes != 0:
        p = next_plane(planes, i64(q["plane_cursor"]), n_planes)
        if p < 0:
            return -1
        q["plane_cursor"] = (p + 1) % n_planes
        k = pick_any_in_plane(T, i, p) if in_rotation else random_in_plane(T, i, p)
        if k >= 0:
            return k
        planes &= ~(i64(1) << p)
    return -1


@njit_core
def select(T, i, port_mask, now):
    return pick_over_planes(T, i, evset.plane_mask(T, i) & port_mask, True)


@njit_core
def feedback(T, i, slot, kind, value, now):
    return


@njit_core
def hint(T, i, plane):
    return rotation_peek(T, i, plane)
