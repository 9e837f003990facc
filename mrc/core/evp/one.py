"""EV policy ``ONE``: one EV per QP (what ECMP hashing gives a flow), moved only when it dies.

The EV is drawn from the QP's seeded generator. The per-EV state machine still
runs (`evset.path_evidence`): when the EV is retired (ASSUMED_BAD, DENIED) or
its plane goes down the QP moves to another usable EV drawn the same way (a
single-path transport that repaths on failure, as PRR does). SKIP does not move
it: a single path has nowhere to go, so the skip is consumed and the EV used
(ours; isolates what spraying buys).
"""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core import evset
from mrc.core.rng import below

NAME = "ONE"
PATH_HEALTH = True
TAKES_ACKED = False


@njit_core
def start(T, i):
    T.qp[i]["ev_pin"] = -1


@njit_core
def _repin(T, i, planes):
    """A usable EV slot on a plane in `planes`, drawn from the QP's generator, or -1."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    n = i64(q["n_ev"])
    if n <= 0:
        return -1
    off = below(T.qp, i, n)
    for j in range(n):
        k = (off + j) % n
        if evset.is_usable(row[k]["state"]) and (planes >> row[k]["plane"]) & 1:
            return k
    return -1


@njit_core
def select(T, i, port_mask, now):
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    planes = evset.plane_mask(T, i)
    k = i64(q["ev_pin"])
    if k < 0 or not evset.is_usable(row[k]["state"]) or (planes >> row[k]["plane"]) & 1 == 0:
        k = _repin(T, i, planes)
        q["ev_pin"] = k
        if k < 0:
            return -1
    if (port_mask >> row[k]["plane"]) & 1 == 0:
        return -1
    if row[k]["state"] == D.EV_SKIP:
        evset.ev_input(T, i, k, D.EVI_ROTATION, now)  # the skip is consumed: there is no other path
    return k


@njit_core
def feedback(T, i, slot, kind, value, now):
    evset.path_evidence(T, i, slot, kind, value, now)


@njit_core
def hint(T, i, plane):
    """The pinned EV, if it leaves on `plane`."""
    k = i64(T.qp[i]["ev_pin"])
    if k >= 0 and T.ev[T.qp[i]["ev_row"], k]["plane"] == plane:
        return k, i64(-1)
    return i64(-1), i64(-1)
