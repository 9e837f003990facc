"""EV policy ``MRC`` (the default): MRC's spraying with per-EV path health.

Planes in turn (`rotation.next_plane` over the planes that are up and in the
NIC's ``port_mask``, like GetSendParams in MANI 3.3); within a plane every
active usable EV once per seeded pseudo-random cycle (`evset.pick_in_plane`).
Feedback drives the per-EV state machine (`evset.path_evidence`: SKIP after an
ECN-marked SACK or a trim, ASSUMED_BAD after a loss), so traffic leaves a
congested or broken path (MRC, mrc-public-notes 3.2-3.4).
"""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import evset
from mrc.core.rotation import next_plane, rotation_peek

NAME = "MRC"
PATH_HEALTH = True  # feedback moves EV states (SKIP, ASSUMED_BAD)
TAKES_ACKED = False  # no FB_ACKED per acknowledged PSN


@njit_core
def start(T, i):
    """Nothing of its own to reset (the rotations belong to the EV set, `evset.setup_planes`)."""
    return


@njit_core
def select(T, i, port_mask, now):
    """The EV slot for the next data packet, on a plane in `port_mask`, or -1."""
    q = T.qp[i]
    planes = evset.plane_mask(T, i) & port_mask
    n_planes = i64(q["n_planes"])
    while planes != 0:
        p = next_plane(planes, i64(q["plane_cursor"]), n_planes)
        if p < 0:
            return -1
        k = evset.pick_in_plane(T, i, p, now)
        if k >= 0:
            q["plane_cursor"] = (p + 1) % n_planes
            return k
        planes &= ~(i64(1) << p)
    return -1


@njit_core
def feedback(T, i, slot, kind, value, now):
    evset.path_evidence(T, i, slot, kind, value, now)


@njit_core(inline="always")
def hint(T, i, plane):
    """The next entry of the plane's rotation (`select` starts there)."""
    return rotation_peek(T, i, plane)
