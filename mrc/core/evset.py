"""The EV set of a QP: per-EV health, the active/backup split, and picking an EV within a plane.

Rules and sources (docs/protocol.md has the full table):

- Per-EV states GOOD / SKIP / ASSUMED_BAD / DENIED and their transitions are
  the per-EV state machine of mrc-public-notes 3.4 (MANI; EMU "spec Figure
  5"). They are one table, `EV_FSM[state, input]`, in the style of h11.
- SKIP lasts until the rotation next reaches the EV ("skip once", MANI).
- The active set is spread evenly over the planes: plane p's share of
  ``ev_active_target`` is target // planes, plus one for the first
  target % planes planes, and at least one. A retired EV is replaced by a
  backup of the same plane (MANI 3.2), so while every plane has backups left
  the per-plane active counts differ by at most one (`rebalance`). A plane
  that runs out of usable EVs keeps the ones it has; the other planes keep
  their full share. Planes never borrow EVs from each other: traffic is
  divided between planes by the plane rotation (`rotation.next_plane`), not by the
  size of their active sets, so every plane keeps carrying the same amount
  of traffic (MANI 3.2: "every plane carries the same amount of traffic").
- ``ev_min_active``: a retirement that would leave fewer usable EVs than this
  is refused (the EV is only skipped once) and counted in ``ev_floor_hits``
  (mrc_ctl.h: "Min number of EVs that must remain active to avoid ... marking
  too many EVs as ASSUMED_BAD"; what happens at the floor is not public: our
  choice).
- Path health from feedback (`path_evidence`): an ECN-marked SACK (M =
  SKIP_ONCE) or a TRIMMED NACK skips the EV, a loss (RACK or timeout) or a SACK
  with M = ALWAYS_SKIP retires it (MANI 3.4-3.6). The policies that keep MRC's
  path health (`evp.mrc`, `evp.one`) feed their evidence here; the others do
  not, and their EVs change state only by probes, the rotation and the
  controller.
- Within a plane (`pick_in_plane`): the EVs are visited in the plane's seeded
  rotation (`rotation.rotation_next`), so every active EV carries one packet
  per cycle. Which plane, and which policy, is `evpolicy`'s.
"""
from __future__ import annotations

import numpy as np

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core import events
from mrc.core.rng import below
from mrc.core.rotation import new_cycle, plane_slots, rotation_next
from mrc.wire.constants import M_ALWAYS_SKIP, M_SKIP_ONCE, NackReason

_G, _S, _B, _X, _U = D.EV_GOOD, D.EV_SKIP, D.EV_ASSUMED_BAD, D.EV_DENIED, D.EV_UNUSED
NR_TRIMMED = int(NackReason.TRIMMED)

# EV_FSM[state, input] -> next state. Inputs are the EVI_* constants, in order:
#           ECN_SACK TRIM  ALWAYS_SKIP LOSS PROBE_OK PROBE_ECN ROTATION CTL_DENY CTL_GOOD CTL_BAD
EV_FSM = np.array(
    [
        [_S, _S, _B, _B, _G, _S, _G, _X, _G, _B],  # GOOD
        [_S, _S, _B, _B, _S, _S, _G, _X, _G, _B],  # SKIP
        [_B, _B, _B, _B, _G, _S, _B, _X, _G, _B],  # ASSUMED_BAD
        [_X, _X, _X, _X, _X, _X, _X, _X, _G, _X],  # DENIED: only the controller brings it back
        [_U, _U, _U, _U, _U, _U, _U, _U, _U, _U],  # UNUSED slot
    ],
    dtype=np.uint8,
)

REV_FRESH_MAX = 64  # fresh reverse EVs owed per plane at most (a burst of evidence)

EVENT_BAD = 1
EVENT_GOOD = 2


@njit_core(inline="always")
def is_usable(state):
    """GOOD or SKIP: may carry traffic (SKIP only after its skip is consumed)."""
    return state == D.EV_GOOD or state == D.EV_SKIP


@njit_core
def usable_count(T, i):
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    n = 0
    for k in range(i64(q["n_ev"])):
        if is_usable(row[k]["state"]):
            n += 1
    return n


@njit_core
def bind_profile(T, i, values, planes, denied, n_planes):
    """QP `i` takes an EV profile (bound at INIT, ``mrc_ctl.h``): slot k carries EV ``values[k]`` on plane
    ``planes[k]`` (slots sorted by plane, `setup_planes`), GOOD, or DENIED where ``denied[k]``; the slots
    past them are cleared. The QP spans `n_planes` planes and keeps half its EVs active, at least one per
    plane (``ev_active_target``, until its attributes say otherwise)."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    row.view(np.uint8)[:] = 0
    n = len(values)
    for k in range(n):
        row[k]["ev"] = values[k]
        row[k]["plane"] = planes[k]
        row[k]["state"] = D.EV_DENIED if denied[k] else D.EV_GOOD
        row[k]["probe_sent"] = -1
    q["n_ev"] = n
    q["n_planes"] = n_planes
    q["ev_active_target"] = min(max(n_planes, n // 2), n)


@njit_core
def set_event_mask(T, i, mask):
    """Which EV state changes QP `i` reports as events (EVENT_BAD | EVENT_GOOD: its profile's event mask)."""
    T.qp[i]["ev_event_mask"] = mask


@njit_core
def setup_planes(T, i):
    """Index the EV slots by plane (slots must be sorted by plane) and start each rotation."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    n_planes = i64(q["n_planes"])
    k = 0
    for p in range(n_planes):
        q["plane_start"][p] = k
        while k < q["n_ev"] and row[k]["plane"] == p:
            k += 1
    for p in range(n_planes, D.MAX_PLANES + 1):
        q["plane_start"][p] = k
    order = T.ev_order[q["ev_row"]]
    for k in range(i64(q["n_ev"])):
        order[k] = k - i64(q["plane_start"][row[k]["plane"]])
        row[k]["probe_sent"] = -1
    for p in range(n_planes):
        size = plane_slots(q, p)[1]
        if size > 0:
            new_cycle(T, i, p, size)
    rebalance(T, i)


@njit_core
def pick_in_plane(T, i, p, now):
    """Next active, usable EV slot of plane `p` in rotation order, or -1."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    start, size = plane_slots(q, p)
    if size <= 0:
        return -1
    for _ in range(2 * size + 1):
        k = rotation_next(T, i, p, start, size)
        e = row[k]
        if e["active"] == 0:
            continue
        if e["state"] == D.EV_GOOD:
            return k
        if e["state"] == D.EV_SKIP:
            ev_input(T, i, k, D.EVI_ROTATION, now)
    return -1


@njit_core(inline="always")
def plane_mask(T, i):
    """Planes this QP may send on now: local port up and the peer's port up.

    The peer's ports are what its port status updates claim (``remote_ports``); our own ports are what
    the NIC sees. With ``psu_floor`` (ours, on by default) a claim that would leave no plane is set
    aside: the QP sends on its own ports that are up, and its timers decide (a dead plane costs a
    retransmission timeout, `loss.on_rto`; a forged claim costs nothing). An update that takes every
    plane is what a forger sends (one spoofed packet would otherwise stop the QP for good, with no
    timer armed), and a true one leaves nothing to lose by trying."""
    q = T.qp[i]
    ours = i64(q["local_ports"]) & ((i64(1) << i64(q["n_planes"])) - 1)
    m = ours & i64(q["remote_ports"])
    if m == 0 and q["psu_floor"] != 0:
        return ours
    return m


@njit_core
def can_send(T, i):
    """Whether some EV of QP `i` may carry a packet now: a usable EV on a plane of `plane_mask`. Every
    EV policy picks among exactly these (`evpolicy`), so False means no packet can leave."""
    planes = plane_mask(T, i)
    if planes == 0:
        return False
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    for k in range(i64(q["n_ev"])):
        if is_usable(row[k]["state"]) and (planes >> row[k]["plane"]) & 1:
            return True
    return False


@njit_core
def drop_rev_ev(T, i, p):
    """Evidence that control packets on plane `p`'s reverse EV are lost: forget it (``rev_rotate``).

    The next control packet of the plane takes the next usable EV of the plane's
    rotation (`dispatch.control_slot`), so each further piece of evidence moves the
    plane's control traffic to another path: each piece of evidence owes the plane
    one control packet on a fresh EV (``rev_fresh``), so answers queued together
    leave on several EVs at once and the first that works carries the SACKs. MRC 3.8 only says reverse EVs are refreshed by probes and data SACKs;
    how to react to lost control packets is ours (UET 1.0 ACKs take the entropy of
    the packet they acknowledge, so no ACK path stays in use for long either).
    """
    q = T.qp[i]
    if q["rev_rotate"] == 0 or p < 0 or p >= q["n_planes"]:
        return
    q["rev_ev"][p] = -1
    q["rev_rotations"] += 1
    # one fresh EV per piece of evidence: answers queued together leave on different EVs
    if q["rev_fresh"][p] < REV_FRESH_MAX:
        q["rev_fresh"][p] += 1


@njit_core
def find_slot(T, i, ev_value):
    """Slot holding EV `ev_value` in this QP's set, or -1."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    for k in range(i64(q["n_ev"])):
        if row[k]["ev"] == ev_value and row[k]["state"] != D.EV_UNUSED:
            return k
    return -1


@njit_core
def find_answered_slot(T, i, ev_value):
    """The slot a probe answer (a SACK with pr = 1) reflecting `ev_value` is for. When the value sits in
    several slots (an EV listed twice in an explicit array, or one value on two ports: mrc_ctl.h names an
    EV by value and port), the one whose probe waits for this answer: an ASSUMED_BAD EV's, the reliability
    probe's or the reverse-EV probe's; otherwise the first (`find_slot`). With unique values: `find_slot`."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    first = -1
    for k in range(i64(q["n_ev"])):
        if row[k]["ev"] != ev_value or row[k]["state"] == D.EV_UNUSED:
            continue
        if (row[k]["state"] == D.EV_ASSUMED_BAD and row[k]["probe_outstanding"]) or k == q["rel_probe_slot"] \
                or k == q["rev_probe_slot"]:
            return k
        if first < 0:
            first = k
    return first


@njit_core
def _report(T, i, k, state, now):
    q = T.qp[i]
    e = T.ev[q["ev_row"], k]
    bit = EVENT_BAD if state == D.EV_ASSUMED_BAD else EVENT_GOOD
    if q["ev_event_mask"] & bit:
        events.ev_state(T, i, now, e["ev"], state, e["plane"], e["losses"], k)


@njit_core
def ev_input(T, i, k, inp, now):
    """Apply input `inp` (EVI_*) to EV slot `k`; returns the new state."""
    q = T.qp[i]
    e = T.ev[q["ev_row"], k]
    old = e["state"]
    new = EV_FSM[old, inp]
    if new == old:
        return old
    if new == D.EV_ASSUMED_BAD and (inp == D.EVI_LOSS or inp == D.EVI_ALWAYS_SKIP) and is_usable(old):
        if usable_count(T, i) - 1 < q["ev_min_active"]:
            q["ev_floor_hits"] += 1
            new = D.EV_SKIP
            if new == old:
                return old
    e["state"] = new
    if new == D.EV_SKIP:
        q["ev_skips"] += 1
    if new == D.EV_ASSUMED_BAD:
        e["bad_since"] = now
        e["probe_ok"] = 0
        e["probe_outstanding"] = 0
        # re-admission: the first probe about one RTT after retirement, to check "whether there
        # really was a failure" (MANI); the later ones every ev_probe_interval_ps (ours)
        e["probe_deadline"] = now + q["ev_first_probe_ps"]
        if e["probe_deadline"] < q["ev_probe_deadline"]:
            q["ev_probe_deadline"] = e["probe_deadline"]
    if is_usable(old) != is_usable(new):
        if not is_usable(new):
            e["active"] = 0
        rebalance(T, i)
    # EV events (mrc_ctl.h): transitions to ASSUMED_BAD and to GOOD as the controller sees
    # states; SKIP is GOOD to the controller, so ASSUMED_BAD -> SKIP is reported as GOOD
    if new == D.EV_ASSUMED_BAD:
        _report(T, i, k, new, now)
    elif is_usable(new) and (old == D.EV_ASSUMED_BAD or old == D.EV_DENIED):
        _report(T, i, k, D.EV_GOOD, now)
    return new


@njit_core
def path_evidence(T, i, k, kind, value, now):
    """MRC path health: the per-EV state machine's input for feedback `kind` (``FB_*``, with its
    `value`, as `evpolicy.on_feedback` gets them) about EV slot `k`. ACKs and unmarked SACKs leave
    the EV alone; SKIP_ONCE -> ECN_SACK, ALWAYS_SKIP -> ALWAYS_SKIP, a TRIMMED NACK -> TRIM_NACK
    (TRIMMED_LASTHOP: no penalty, MANI 3.5), a loss or timeout -> LOSS (MANI 3.4-3.6)."""
    if kind == D.FB_SACK:
        if value == M_SKIP_ONCE:
            ev_input(T, i, k, D.EVI_ECN_SACK, now)
        elif value == M_ALWAYS_SKIP:
            ev_input(T, i, k, D.EVI_ALWAYS_SKIP, now)
    elif kind == D.FB_NACK:
        if value == NR_TRIMMED:
            ev_input(T, i, k, D.EVI_TRIM_NACK, now)
    elif kind == D.FB_LOSS or kind == D.FB_TIMEOUT:
        ev_input(T, i, k, D.EVI_LOSS, now)


@njit_core(inline="always")
def plane_share(q, p):
    """Active EVs plane `p` should have: its share of ``ev_active_target`` (at least one)."""
    n = i64(q["n_planes"])
    target = i64(q["ev_active_target"])
    share = target // n + (1 if p < target % n else 0)
    return share if share > 0 else 1


@njit_core
def rebalance(T, i):
    """Give each plane min(its share, its usable EVs) active EVs, filling from its own backups.

    Unusable EVs (ASSUMED_BAD, DENIED) leave the active set; backups of the
    same plane, taken from a seeded random offset, replace them; surplus
    active EVs (after ``ev_active_target`` shrank) return to the backups.
    """
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    for p in range(i64(q["n_planes"])):
        start, size = plane_slots(q, p)
        if size == 0:
            continue
        want = plane_share(q, p)
        active = 0
        for k in range(start, start + size):
            if row[k]["active"] and is_usable(row[k]["state"]):
                active += 1
            elif row[k]["active"]:
                row[k]["active"] = 0
        if active == want:
            continue
        off = below(T.qp, i, size)
        for j in range(size):
            if active == want:
                break
            k = start + (off + j) % size
            if active < want and row[k]["active"] == 0 and is_usable(row[k]["state"]):
                row[k]["active"] = 1
                active += 1
            elif active > want and row[k]["active"] == 1:
                row[k]["active"] = 0
                active -= 1


@njit_core
def balanced(T, i):
    """Whether `rebalance` would leave QP `i`'s active sets as they are: on every plane no unusable EV is
    active, and the plane has its share of active EVs, or fewer with no usable backup left to add.
    (`rebalance` itself draws its random start whenever a plane is off its share, even when nothing
    can move.)"""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    for p in range(i64(q["n_planes"])):
        start, size = plane_slots(q, p)
        want = plane_share(q, p)
        active = 0
        spare = 0
        for k in range(start, start + size):
            usable = is_usable(row[k]["state"])
            if row[k]["active"] and not usable:
                return False
            if row[k]["active"]:
                active += 1
            elif usable:
                spare += 1
        if size > 0 and (active > want or (active < want and spare > 0)):
            return False
    return True


@njit_core
def active_per_plane(T, i, out):
    """Write the number of active usable EVs of each plane into `out`."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    for p in range(i64(q["n_planes"])):
        c = 0
        start, size = plane_slots(q, p)
        for k in range(start, start + size):
            if row[k]["active"] and is_usable(row[k]["state"]):
                c += 1
        out[p] = c


@njit_core
def next_probe_slot(T, i, now, port_mask):
    """An ASSUMED_BAD EV whose probe is due, on a plane in `port_mask`, or -1.

    Marks it outstanding and schedules its next probe. Clears ``ev_probe_due``
    when no probe is due any more on a plane that is up.
    """
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    planes = plane_mask(T, i)
    found = -1
    still_due = False
    for k in range(i64(q["n_ev"])):
        e = row[k]
        if e["state"] != D.EV_ASSUMED_BAD or (planes >> e["plane"]) & 1 == 0 or e["probe_deadline"] > now:
            continue
        if found < 0 and (port_mask >> e["plane"]) & 1:
            if e["probe_outstanding"]:
                e["probe_ok"] = 0  # the previous probe went unanswered
            e["probe_outstanding"] = 1
            e["probe_deadline"] = now + q["ev_probe_interval_ps"]
            if e["probe_deadline"] < q["ev_probe_deadline"]:
                q["ev_probe_deadline"] = e["probe_deadline"]
            found = k
        else:
            still_due = True
    if not still_due:
        q["ev_probe_due"] = 0
    return found


@njit_core
def planes_back(T, i, gained, now):
    """Planes in bit mask `gained` carry traffic again (the local port and the peer's both up):
    probing of their ASSUMED_BAD EVs resumes. `next_probe_time` and `next_probe_slot` pass over
    EVs whose plane is down, so a probe that fell due meanwhile is due now, and a later one is
    scheduled (without this such an EV was never probed again)."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    for k in range(i64(q["n_ev"])):
        e = row[k]
        if e["state"] != D.EV_ASSUMED_BAD or (gained >> e["plane"]) & 1 == 0:
            continue
        if e["probe_deadline"] <= now:
            q["ev_probe_due"] = 1
        elif e["probe_deadline"] < q["ev_probe_deadline"]:
            q["ev_probe_deadline"] = e["probe_deadline"]


@njit_core
def next_probe_time(T, i, now):
    """Earliest probe time after `now` among ASSUMED_BAD EVs on planes that are up."""
    q = T.qp[i]
    row = T.ev[q["ev_row"]]
    planes = plane_mask(T, i)
    nxt = D.NEVER
    for k in range(i64(q["n_ev"])):
        e = row[k]
        if e["state"] == D.EV_ASSUMED_BAD and (planes >> e["plane"]) & 1 and now < e["probe_deadline"] < nxt:
            nxt = e["probe_deadline"]
    return nxt


@njit_core
def probe_answered(T, i, k, m, now):
    """A probe response (SACK with pr = 1) reflected EV slot `k` with M field `m`."""
    q = T.qp[i]
    e = T.ev[q["ev_row"], k]
    if e["state"] == D.EV_ASSUMED_BAD and e["probe_outstanding"]:
        e["probe_outstanding"] = 0
        e["probe_ok"] += 1
        if e["probe_ok"] >= q["probe_successes"]:
            # the last answer decides: unmarked -> GOOD, ECN-marked (SKIP_ONCE) -> SKIP
            ev_input(T, i, k, D.EVI_PROBE_OK if m == 0 else D.EVI_PROBE_ECN, now)
        else:
            e["probe_deadline"] = now  # probe again at once
            q["ev_probe_due"] = 1
