"""The rotations EV selection walks: planes in turn, and a plane's EVs in seeded cycles.

- Planes in turn (`next_plane`): a caller keeps a cursor (``plane_cursor`` for
  data, ``rev_plane_cursor`` for reverse-EV probes, the triggering packet's
  plane for control packets) and asks for the first plane of a mask at or after
  it. Every caller that walks planes uses it, so "round robin over the planes
  that are up" means one thing (MANI 3.2: "every plane carries the same amount
  of traffic"; taking planes in turn is ours).
- A plane's EVs (`rotation_next`): the plane's slots are visited in a
  pseudo-random order, a permutation re-drawn from the QP's seeded generator
  every cycle and kept in ``ev_order`` (MANI: "pseudo-random EV selection" so
  that QPs sharing a profile do not synchronise). `rotation_peek` reads the
  next entry without advancing (prefetch hints, `evpolicy.next_ev_hint`).
"""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core.rng import below


@njit_core(inline="always")
def plane_slots(q, p):
    """(first slot, number of slots) of plane `p` in QP row `q`'s EV slots (sorted by plane; ``plane_start``)."""
    start = i64(q["plane_start"][p])
    return start, i64(q["plane_start"][p + 1]) - start


@njit_core(inline="always")
def next_plane(planes, start, n_planes):
    """The first plane of bit mask `planes` in the order start, start + 1, ... (mod `n_planes`), or -1."""
    for step in range(n_planes):
        p = (start + step) % n_planes
        if (planes >> p) & 1:
            return p
    return -1


@njit_core
def new_cycle(T, i, p, size):
    """Draw a fresh visiting order for plane `p` (Fisher-Yates over its slots of ``ev_order``)."""
    q = T.qp[i]
    order = T.ev_order[q["ev_row"]]
    start = i64(q["plane_start"][p])
    for j in range(size - 1, 0, -1):
        r = below(T.qp, i, j + 1)
        tmp = order[start + j]
        order[start + j] = order[start + r]
        order[start + r] = tmp
    q["rot_pos"][p] = 0


@njit_core(inline="always")
def rotation_next(T, i, p, start, size):
    """The next slot of plane `p`'s EV rotation (slots start .. start + size - 1), advancing it; a
    finished cycle starts a new shuffled one."""
    q = T.qp[i]
    if q["rot_pos"][p] >= size:
        new_cycle(T, i, p, size)
    order = T.ev_order[q["ev_row"]]
    pos = i64(q["rot_pos"][p])
    k = start + i64(order[start + pos])
    q["rot_pos"][p] = pos + 1
    return k


@njit_core(inline="always")
def rotation_peek(T, i, p):
    """(slot, ``ev_order`` index) `rotation_next` reads next on plane `p`, without advancing: the
    slot is -1 when a new cycle starts next (its shuffle is not drawn yet; the index is then the
    plane's first entry); (-1, -1) for a plane without EVs. Changes nothing."""
    q = T.qp[i]
    start, size = plane_slots(q, p)
    if size <= 0:
        return -1, -1
    pos = i64(q["rot_pos"][p])
    if pos < size:
        return start + i64(T.ev_order[q["ev_row"], start + pos]), start + pos
    return -1, start
