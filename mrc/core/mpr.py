"""Dynamic MPR: the PSN window a requester may have outstanding, changed while the QP runs.

What the public material says (docs/protocol.md, "Dynamic MPR"):

- MPR ("maximum PSN range") counts in units of 128 PSNs: the requester's ``mpr`` (given at RTS)
  and the responder's ``mpr_dest`` (given at RTR) (``mrc.h`` ``mrc_qp_attr.mpr``).
- ``MRC_QP_CAP_DYNAMIC_MPR`` "Enable Dynamic MPR on this QP (req & rsp role)", "effective only if
  both peers enable it" (``mrc.h``); the device advertises it with ``MRC_DEVICE_CAP_DYNAMIC_MPR``.
  MANI: it lets "the responder adjust the in-flight PSN window at runtime".
- What carries it: the responder's MPR in every SACK (SETH ``mpr``, notes 2.4), as UET 1.0's target
  advertises its MPR in every ACK_CC (notes 7.1).

How this core does it (the rules a change must keep; QP attribute ``dynamic_mpr``):

- Requester: a new PSN only below ``una_psn + min(mpr, advertised) x 128`` (`requester.psn_limit`).
  It takes the advertised value from a SACK whose cumulative ack is not behind what it already
  knows (`loss.on_sack`), so a SACK overtaken by a newer one cannot reopen a window the responder
  closed. A smaller window stops new PSNs at once; what is in flight stays and drains.
- Responder (`set_mpr_dest`): a larger ``mpr_dest`` is tracked and advertised at once. A smaller one
  is advertised at once, but the responder keeps tracking every PSN the requester may already
  have sent under the larger window, up to ``cack_psn + 1 + old window`` when it changed
  (``mpr_hold_psn``, exclusive; the largest such bound when shrinks follow each other). The
  tracking window ``mpr_track`` comes down to ``mpr_dest`` once ``cack_psn`` has advanced so far
  that the smaller window covers every such PSN (`settle`, at every SACK). A shrink therefore never
  turns a packet sent under the old window into a PSN_OOR_WINDOW NACK and a retransmission.

Both ends must enable it, as ``mrc.h`` says: the application sets the capability on both QPs
(as ``examples/mrc_qp.md`` does at RTR). Nothing on the wire negotiates it; a requester of this
core always follows the SACKs' ``mpr`` (UET 1.0 behaviour: the initiator obeys the target's MPR),
so a peer that shrinks its window costs an unaware requester of ours nothing but the wait.
"""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core.psn import psn_add, psn_diff


@njit_core(inline="always")
def track_window(q):
    """PSNs the responder tracks above ``cack_psn`` (``mpr_track`` x 128): beyond it, PSN_OOR_WINDOW."""
    return i64(q["mpr_track"]) * D.MPR_UNIT


@njit_core(inline="always")
def settle(q):
    """End a shrink's hold once the advertised window from ``cack_psn`` covers every PSN held."""
    if q["mpr_track"] != q["mpr_dest"]:
        if psn_diff(q["mpr_hold_psn"], psn_add(q["cack_psn"], 1)) <= i64(q["mpr_dest"]) * D.MPR_UNIT:
            q["mpr_track"] = q["mpr_dest"]


@njit_core
def start(q):
    """At RTR: track and advertise ``mpr_dest``, nothing held."""
    q["mpr_track"] = q["mpr_dest"]
    q["mpr_hold_psn"] = 0


@njit_core
def set_mpr_dest(T, i, mpr_dest):
    """The responder's MPR becomes `mpr_dest` (units of 128 PSNs) now; the next SACK advertises it.

    The caller checks the value (`mrc.core.setup.modify_mpr`: 1..255, within the RX table's window,
    ``dynamic_mpr`` on). A shrink holds the PSNs the requester may have sent under the old window."""
    q = T.qp[i]
    old = i64(q["mpr_dest"])
    new = i64(mpr_dest)
    if new < old:
        bound = psn_add(q["cack_psn"], 1 + old * D.MPR_UNIT)
        if q["mpr_track"] == q["mpr_dest"] or psn_diff(bound, q["mpr_hold_psn"]) > 0:
            q["mpr_hold_psn"] = bound
    elif new > i64(q["mpr_track"]):
        q["mpr_track"] = new
    q["mpr_dest"] = new
    settle(q)


@njit_core
def set_mpr(T, i, mpr):
    """The requester's own MPR becomes `mpr`: new PSNs stay below una_psn + min(mpr, advertised) x 128."""
    T.qp[i]["mpr"] = mpr
