"""What a switch port does to a data packet on enqueue: ECN marking and trimming (one function each).

Selected by the port's kind flags (`state.PK_ECN`, `state.PK_TRIM`), as htsim's
``ECNQueue`` overrides one method of ``Queue``.

- ECN (WRED on the instantaneous data-queue length, htsim / DCQCN style): no
  mark below ``ecn_kmin`` bytes, every ECN-capable packet above ``ecn_kmax``,
  in between with probability ``ecn_pmax * (q - kmin) / (kmax - kmin)``. A
  degraded port (``qscale`` < 1) scales kmin and kmax, as htsim's ``-failed``.
  Applied when the packet leaves (`port.tx_done`, q = the queue with the
  packet itself, as htsim's ECNQueue and ns-3 HPCC mark) or, with
  ``[switch] ecn_mark = "enqueue"``, when it arrives (`port.receive`).
- Trimming: a trimmable data packet (DSCP class DATA or RETX of the
  `mrc.wire.dscp.DscpTable`) that does not fit is cut to ``trim_size`` bytes,
  moved to the control class and re-marked TRIMMED, or TRIMMED_LASTHOP on a
  T0 downlink to its destination host (as `mrc.wire.trim.trim_row` does to a
  row: payload shortened, DSCP and trim code set).
"""
from __future__ import annotations

import numpy as np

from mrc.emulator._jit import njit
from mrc.emulator import state as ST
from mrc.emulator.pool import rand_u01
from mrc.wire.constants import DscpClass, Trim

_DATA = int(DscpClass.DATA)
_RETX = int(DscpClass.RETX)
_TRIMMED = int(Trim.TRIMMED)
_TRIMMED_LASTHOP = int(Trim.TRIMMED_LASTHOP)


@njit(inline="always")
def ecn_mark(E, q, i, qbytes):
    """Mark packet i CE with the WRED probability for a data queue of `qbytes`; returns 1 if marked."""
    p = E.pkt
    if p[i]["ecn"] == ST.ECN_NOT_ECT or p[i]["ecn"] == ST.ECN_CE:
        return 0
    c = E.cfg[0]
    kmin = c["ecn_kmin"]
    kmax = c["ecn_kmax"]
    s = E.port[q]["qscale"]
    if s != 1.0:  # a degraded link's thresholds (htsim -failed)
        kmin = np.int64(kmin * s)
        kmax = np.int64(kmax * s)
    if qbytes <= kmin:
        return 0
    if qbytes < kmax:
        prob = c["ecn_pmax"] * (qbytes - kmin) / (kmax - kmin)
        if rand_u01(E) >= prob:
            return 0
    p[i]["ecn"] = ST.ECN_CE
    E.port[q]["marks"] += 1
    E.ctr[ST.C_ECN_MARKS] += 1
    return 1


@njit(inline="always")
def trimmable(E, i):
    p = E.pkt[i]
    if p["trim"] != 0 or p["cls"] != ST.CLS_DATA:
        return False
    k = E.dscp_classes[p["dscp"] & 63]
    return k == _DATA or k == _RETX


@njit
def trim(E, q, i):
    """Cut packet i to the trimmed size and re-mark it (the caller checked `trimmable`)."""
    c = E.cfg[0]
    p = E.pkt
    size = p[i]["size"]
    keep = c["trim_size"]
    removed = 0
    if size > keep:
        removed = size - keep
        p[i]["size"] = keep
    lasthop = (E.port[q]["kind"] & ST.PK_LASTHOP) != 0
    code = _TRIMMED_LASTHOP if lasthop else _TRIMMED
    dscp = c["dscp_trimmed_lasthop"] if lasthop else c["dscp_trimmed"]
    p[i]["cls"] = ST.CLS_CTRL
    p[i]["trim"] = code
    p[i]["dscp"] = dscp
    h = E.hdr
    pl = h[i]["payload_len"]
    h[i]["payload_len"] = pl - removed if pl > removed else 0
    h[i]["trim"] = code
    h[i]["dscp"] = dscp
    E.port[q]["trims"] += 1
    E.ctr[ST.C_TRIMS] += 1
    E.ctr[ST.C_TRIM_BYTES] += removed
