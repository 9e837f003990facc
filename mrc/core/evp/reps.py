"""EV policy ``REPS``: recycle the EVs whose packets were acknowledged unmarked.

REPS (Bonato et al., arXiv 2407.21625; mrc-public-notes 7.3; defaults as UEC
htsim's ``UecMpReps``): an unmarked SACK returns to a circular buffer of
``reps_buffer`` entries (default 8) the EV of every PSN it newly acknowledges
(``reps_per_psn``, default 1: the paper's one recycled EV per acknowledged
packet; 0: only the EV the SACK reflects); the next packet reuses the oldest
fresh entry, ``reps_reuse`` times (default 1, htsim's usable lifetime), else a
random EV. A retransmission timeout (the paper's and htsim's per-packet
"timeout"; RACK's reordering-based losses do not count) freezes the buffer for
``reps_freeze_ps`` (default 10 ms, htsim's ``exit_freeze_after``): the cached
EVs are reused in turn whether fresh or not, and good EVs are still admitted
(htsim); after the freeze the buffer is emptied and the next ``reps_explore``
(16) packets take random EVs. No MRC path health (as OBLIVIOUS).

With several planes the choice is made among the EVs of the plane asked for
(REPS treats EVs as one flat space; plane-aware REPS is ours).
"""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core import evset
from mrc.core.evp.oblivious import pick_over_planes
from mrc.wire.constants import M_NONE

NAME = "REPS"
PATH_HEALTH = False
TAKES_ACKED = True  # reps_per_psn recycles the EV of every PSN a SACK newly acknowledges


@njit_core
def start(T, i):
    q = T.qp[i]
    q["reps_head"] = 0
    q["reps_n"] = 0
    q["reps_valid"] = 0
    q["reps_fhead"] = 0
    q["reps_frozen"] = 0
    q["reps_explore_left"] = 0
    q["reps_unfreeze"] = D.NEVER


@njit_core
def _thaw(T, i, now):
    """End a freeze whose time is up: empty the buffer, explore random EVs."""
    q = T.qp[i]
    if q["reps_frozen"] and now >= q["reps_unfreeze"]:
        q["reps_frozen"] = 0
        q["reps_unfreeze"] = D.NEVER
        q["reps_head"] = 0
        q["reps_n"] = 0
        q["reps_valid"] = 0
        q["reps_fhead"] = 0
        q["reps_explore_left"] = q["reps_explore"]


@njit_core
def select(T, i, port_mask, now):
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    planes = evset.plane_mask(T, i) & port_mask
    if planes == 0:
        return -1
    _thaw(T, i, now)
    n = i64(q["reps_n"])
    size = i64(q["reps_buffer"])
    if q["reps_explore_left"] == 0 and n > 0:
        if q["reps_frozen"]:
            # reuse the cached EVs in turn, fresh or not
            for j in range(n):
                pos = (i64(q["reps_fhead"]) + j) % n
                k = i64(q["reps_buf"][pos])
                if evset.is_usable(row[k]["state"]) and (planes >> row[k]["plane"]) & 1:
                    q["reps_fhead"] = (pos + 1) % n
                    q["reps_valid"] = i64(q["reps_valid"]) & ~(i64(1) << pos)
                    return k
        else:
            # the oldest fresh entry (entries are written at reps_head, oldest first after it)
            for j in range(n):
                pos = (i64(q["reps_head"]) + size - n + j) % size
                if (q["reps_valid"] >> pos) & 1 == 0:
                    continue
                k = i64(q["reps_buf"][pos])
                if evset.is_usable(row[k]["state"]) and (planes >> row[k]["plane"]) & 1:
                    q["reps_uses"][pos] -= 1
                    if q["reps_uses"][pos] == 0:
                        q["reps_valid"] = i64(q["reps_valid"]) & ~(i64(1) << pos)
                    return k
    if q["reps_explore_left"] > 0:
        q["reps_explore_left"] -= 1
    return pick_over_planes(T, i, planes, False)


@njit_core
def _admit(T, i, slot, now):
    """A good EV enters the buffer, frozen or not (htsim's ``UecMpReps::processEv``)."""
    q = T.qp[i]
    _thaw(T, i, now)
    if slot >= 0:
        size = i64(q["reps_buffer"])
        pos = i64(q["reps_head"])
        q["reps_buf"][pos] = slot
        q["reps_uses"][pos] = q["reps_reuse"]
        q["reps_valid"] = i64(q["reps_valid"]) | (i64(1) << pos)
        q["reps_head"] = (pos + 1) % size
        if q["reps_n"] < size:
            q["reps_n"] += 1


@njit_core
def feedback(T, i, slot, kind, value, now):
    """Unmarked acknowledgements recycle EVs (per PSN with ``reps_per_psn``, else the SACK's own
    EV); a timeout freezes (unless frozen or exploring). NACKs and RACK losses are ignored."""
    q = T.qp[i]
    if kind == D.FB_TIMEOUT:
        _thaw(T, i, now)
        if not q["reps_frozen"] and q["reps_explore_left"] == 0:
            q["reps_frozen"] = 1
            q["reps_fhead"] = 0
            q["reps_unfreeze"] = now + q["reps_freeze_ps"]
    elif kind == D.FB_ACKED:
        if value == M_NONE and q["reps_per_psn"] != 0:
            _admit(T, i, slot, now)
    elif kind == D.FB_SACK:
        if value == M_NONE and q["reps_per_psn"] == 0:
            _admit(T, i, slot, now)


@njit_core
def hint(T, i, plane):
    """The oldest fresh buffer entry on `plane` when not frozen or exploring (what `select` takes
    first), else unknown (a random EV)."""
    q = T.qp[i]
    n = i64(q["reps_n"])
    if q["reps_frozen"] or q["reps_explore_left"] > 0 or n == 0:
        return i64(-1), i64(-1)
    size = i64(q["reps_buffer"])
    row = T.ev[q["ev_row"]]
    for j in range(n):
        pos = (i64(q["reps_head"]) + size - n + j) % size
        if (q["reps_valid"] >> pos) & 1:
            k = i64(q["reps_buf"][pos])
            if row[k]["plane"] == plane and evset.is_usable(row[k]["state"]):
                return k, i64(-1)
    return i64(-1), i64(-1)
