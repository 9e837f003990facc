"""EV selection policies: which EV the next data packet (or reliability probe) takes.

A QP's ``ev_policy`` attribute picks one (`dtypes.EVP_*`); MRC is the default and
the others exist to measure what MRC's choices buy, inside the same transport
(same reliability, congestion control and responder):

==============  ===============================================================
policy          behaviour
==============  ===============================================================
``MRC``         `evset.select_ev`: planes in turn, every active usable EV of a
                plane once per seeded pseudo-random cycle; per-EV health
                (SKIP, ASSUMED_BAD, probes) steers traffic (MRC, notes 3.2-3.4)
``ONE``         one EV per QP, drawn from the QP's seeded generator (what ECMP
                hashing gives a flow). The per-EV state machine still runs:
                when the EV is retired (ASSUMED_BAD, DENIED) or its plane goes
                down the QP moves to another usable EV drawn the same way (a
                single-path transport that repaths on failure, as PRR does).
                SKIP does not move it: a single path has nowhere to go, so the
                skip is consumed and the EV used (ours)
``OBLIVIOUS``   oblivious spraying: planes in turn, and within a plane every
                EV of the profile (active or backup) once per seeded
                pseudo-random cycle (UEC htsim's "oblivious" EV cycling,
                notes 7.3). No path health: ECN marks, trims and losses leave
                the EVs' states alone (`evset.EV_POLICY_INPUT`), so a dead path
                keeps its share of the packets
``REPS``        REPS (Bonato et al., arXiv 2407.21625; notes 7.3; peer notes
                2.6; defaults as UEC htsim's ``UecMpReps``): an unmarked SACK
                returns to a circular buffer of ``reps_buffer`` entries
                (default 8) the EV of every PSN it newly acknowledges
                (``reps_per_psn``, default 1: the paper's one recycled EV per
                acknowledged packet; 0: only the EV the SACK reflects); the
                next packet reuses the oldest fresh entry, ``reps_reuse``
                times (default 1, htsim's usable lifetime), else a random EV.
                A retransmission timeout (the paper's and htsim's per-packet
                "timeout"; RACK's reordering-based losses do not count)
                freezes the buffer for ``reps_freeze_ps`` (default 10 ms,
                htsim's ``exit_freeze_after``): the cached EVs are reused in
                turn whether fresh or not, and good EVs are still admitted
                (htsim); after the freeze the buffer is emptied and the next
                ``reps_explore`` (16) packets take random EVs. No MRC path
                health (as OBLIVIOUS)
==============  ===============================================================

Every policy respects the planes (`evset.plane_mask`: local port up, the peer's
port up) and the NIC's ``port_mask`` (the ports with room): with several planes
a policy's choice is made among the EVs of the plane asked for, which is how a
multi-plane NIC (GetSendParams, notes 3.3) meets a flat-EV-space policy such as
REPS (plane-aware REPS: ours). Random choices come from the QP's own seeded
generator (`rng`), so runs are reproducible.
"""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core import evset
from mrc.core.rng import below

FB_GOOD = 1  # a packet sent on this EV was acknowledged by an unmarked SACK
FB_TIMEOUT = 2  # a packet sent on this EV was declared lost by the retransmission timeout


@njit_core(inline="always")
def select_ev(T, i, port_mask, now):
    """The EV slot for QP `i`'s next data packet or probe on a plane in `port_mask`, or -1."""
    pol = T.qp[i]["ev_policy"]
    if pol == D.EVP_MRC:
        return evset.select_ev(T, i, port_mask, now)
    return select_other(T, i, port_mask, now)


@njit_core
def select_other(T, i, port_mask, now):
    pol = T.qp[i]["ev_policy"]
    if pol == D.EVP_ONE:
        return _select_one(T, i, port_mask, now)
    if pol == D.EVP_OBLIVIOUS:
        return _select_oblivious(T, i, port_mask, now)
    if pol == D.EVP_REPS:
        return _select_reps(T, i, port_mask, now)
    return -1


@njit_core
def start(T, i):
    """Reset the policy's state (requester start)."""
    q = T.qp[i]
    q["ev_pin"] = -1
    q["reps_head"] = 0
    q["reps_n"] = 0
    q["reps_valid"] = 0
    q["reps_fhead"] = 0
    q["reps_frozen"] = 0
    q["reps_explore_left"] = 0
    q["reps_unfreeze"] = D.NO_DEADLINE


# ---------------------------------------------------------------- helpers


@njit_core
def _random_in_plane(T, i, p):
    """A usable EV slot of plane `p` drawn uniformly from the QP's generator (first usable from a
    random start), or -1."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    start = i64(q["plane_start"][p])
    size = i64(q["plane_start"][p + 1]) - start
    if size <= 0:
        return -1
    off = below(T.qp, i, size)
    for j in range(size):
        k = start + (off + j) % size
        if evset.is_usable(row[k]["state"]):
            return k
    return -1


@njit_core
def _planes_allowed(T, i, port_mask):
    return evset.plane_mask(T, i) & port_mask


@njit_core
def _next_plane(T, i, planes):
    """The next plane of `planes` in the QP's plane rotation (advances it), or -1."""
    q = T.qp[i]
    n = i64(q["n_planes"])
    for step in range(n):
        p = (i64(q["plane_cursor"]) + step) % n
        if (planes >> p) & 1:
            q["plane_cursor"] = (p + 1) % n
            return p
    return -1


@njit_core
def _pick_over_planes(T, i, planes, in_rotation):
    """A usable EV from the first plane of `planes` (in the plane rotation) that has one: the next in
    that plane's EV rotation (`in_rotation`, active or backup) or the first from a random start; -1."""
    for _ in range(i64(T.qp[i]["n_planes"])):
        p = _next_plane(T, i, planes)
        if p < 0:
            return -1
        k = _pick_any_in_plane(T, i, p) if in_rotation else _random_in_plane(T, i, p)
        if k >= 0:
            return k
        planes &= ~(i64(1) << p)
    return -1


# ---------------------------------------------------------------- ONE


@njit_core
def _select_one(T, i, port_mask, now):
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


# ---------------------------------------------------------------- OBLIVIOUS


@njit_core
def _pick_any_in_plane(T, i, p):
    """Next usable EV of plane `p` in its rotation, active or backup (oblivious cycling)."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    start = i64(q["plane_start"][p])
    size = i64(q["plane_start"][p + 1]) - start
    if size <= 0:
        return -1
    for _ in range(2 * size + 1):
        k = evset.rotation_next(T, i, p, start, size)
        if evset.is_usable(row[k]["state"]):
            return k
    return -1


@njit_core
def _select_oblivious(T, i, port_mask, now):
    return _pick_over_planes(T, i, _planes_allowed(T, i, port_mask), True)


# ---------------------------------------------------------------- REPS


@njit_core
def _reps_thaw(T, i, now):
    """End a freeze whose time is up: empty the buffer, explore random EVs."""
    q = T.qp[i]
    if q["reps_frozen"] and now >= q["reps_unfreeze"]:
        q["reps_frozen"] = 0
        q["reps_unfreeze"] = D.NO_DEADLINE
        q["reps_head"] = 0
        q["reps_n"] = 0
        q["reps_valid"] = 0
        q["reps_fhead"] = 0
        q["reps_explore_left"] = q["reps_explore"]


@njit_core
def _select_reps(T, i, port_mask, now):
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    planes = _planes_allowed(T, i, port_mask)
    if planes == 0:
        return -1
    _reps_thaw(T, i, now)
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
    return _pick_over_planes(T, i, planes, False)


@njit_core
def feedback(T, i, slot, kind, now):
    """Feedback about EV `slot` for policies that learn from it (REPS): FB_GOOD or FB_TIMEOUT.

    As htsim's ``UecMpReps::processEv``: a timeout freezes (unless frozen or exploring); a good
    EV is admitted frozen or not."""
    q = T.qp[i]
    if q["ev_policy"] != D.EVP_REPS:
        return
    _reps_thaw(T, i, now)
    if kind == FB_TIMEOUT:
        if not q["reps_frozen"] and q["reps_explore_left"] == 0:
            q["reps_frozen"] = 1
            q["reps_fhead"] = 0
            q["reps_unfreeze"] = now + q["reps_freeze_ps"]
        return
    if kind == FB_GOOD and slot >= 0:
        size = i64(q["reps_buffer"])
        pos = i64(q["reps_head"])
        q["reps_buf"][pos] = slot
        q["reps_uses"][pos] = q["reps_reuse"]
        q["reps_valid"] = i64(q["reps_valid"]) | (i64(1) << pos)
        q["reps_head"] = (pos + 1) % size
        if q["reps_n"] < size:
            q["reps_n"] += 1
