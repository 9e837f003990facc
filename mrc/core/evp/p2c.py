"""EV policy ``P2C`` (an extension, ours; the worked example of docs/protocol.md "Adding an EV
policy"): the power of two choices over path RTT.

Planes in turn, as MRC (`rotation.next_plane`); within the plane, two active
usable EVs drawn from the QP's seeded generator, and the one whose last RTT
sample (``last_rtt``, set by the SACKs that reflect it) is lower carries the
packet (the first drawn on a tie). "Two random choices" balances load far better
than one (Mitzenmacher, "The Power of Two Choices in Randomized Load
Balancing", IEEE TPDS 12(10), 2001); comparing RTTs steers traffic away from
queues before ECN marks them. An EV without a sample yet has ``last_rtt`` 0 and
is preferred, so every EV gets tried. An EV's RTT is refreshed only when it
carries traffic, so a path that was slow once is taken again only when drawn
twice or against one slower still (about 1/n^2 of a plane's packets for the
slowest of n EVs): a slow path recovers slowly.

MRC's path health is kept: feedback goes to the per-EV state machine
(`evset.path_evidence`), so SKIP and ASSUMED_BAD EVs are passed over as MRC
passes them (a SKIP EV drawn has its skip consumed and is not used this time).
"""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core import evset
from mrc.core.rng import below
from mrc.core.rotation import next_plane, plane_slots

NAME = "P2C"
PATH_HEALTH = True
TAKES_ACKED = False


@njit_core
def start(T, i):
    return


@njit_core
def _draw(T, i, p, now):
    """An active GOOD EV of plane `p`: the first from a random start, consuming the skip of every
    SKIP EV passed (as the rotation does, `evset.pick_in_plane`), or -1."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    start, size = plane_slots(q, p)
    if size <= 0:
        return -1
    off = below(T.qp, i, size)
    for j in range(size):
        k = start + (off + j) % size
        if row[k]["active"] == 0:
            continue
        if row[k]["state"] == D.EV_GOOD:
            return k
        if row[k]["state"] == D.EV_SKIP:
            evset.ev_input(T, i, k, D.EVI_ROTATION, now)
    return -1


@njit_core
def select(T, i, port_mask, now):
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    planes = evset.plane_mask(T, i) & port_mask
    n_planes = i64(q["n_planes"])
    while planes != 0:
        p = next_plane(planes, i64(q["plane_cursor"]), n_planes)
        if p < 0:
            return -1
        a = _draw(T, i, p, now)
        if a >= 0:
            q["plane_cursor"] = (p + 1) % n_planes
            b = _draw(T, i, p, now)
            if b >= 0 and row[b]["last_rtt"] < row[a]["last_rtt"]:
                return b
            return a
        planes &= ~(i64(1) << p)
    return -1


@njit_core
def feedback(T, i, slot, kind, value, now):
    evset.path_evidence(T, i, slot, kind, value, now)


@njit_core
def hint(T, i, plane):
    """Unknown: the EVs are drawn at random."""
    return i64(-1), i64(-1)
