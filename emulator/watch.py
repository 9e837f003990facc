"""Watching failed elements: which flows a failure affects and when their traffic leaves it.

A failure's ports are watched from ``metrics.reroute_window_us`` before its
fault (``WATCH_PRE``) and from the fault on (``WATCH_ON``). Every data packet
directed to a watched port (a switch queue it enters, or a NIC port it leaves
from) is seen here (data: a packet with payload, or a trimmed one; probes and
control packets are not traffic here):

- before the fault its flow becomes *affected* by the failure (``FLOW.fail_aff``
  bit k); after the fault too (a flow that starts using the element then);
- after the fault the port counts it (``watch_hits``, ``watch_last``, as
  before), and the packet is marked as directed to failure k's element
  (``pmeta`` bit 56 + k).

At the NIC (`on_send`, while ``S_WATCHING``) a data packet records its send
time and the failures (already at fault) whose affected flow it belongs to
(``pmeta`` bits 48 + k), counted in ``FSTAT.aff_sent``; those later directed
to the failed element are counted in ``FSTAT.aff_directed``. At delivery
(`on_deliver`) a packet of an affected flow that was sent after the fault and
never directed to the failed element is traffic steered away: the earliest
such send time is ``FSTAT.first_away``. `metrics.reroute` turns these into the
reroute times. Only the first ``MAX_TRACKED_FAILURES`` failures are tracked
per packet.
"""
from __future__ import annotations

import numpy as np

from mrc.emulator._jit import njit
from mrc.emulator import state as ST


@njit(inline="always")
def _is_data(E, i):
    """A packet carrying (or, trimmed, having carried) payload: probes and control packets are not."""
    p = E.pkt[i]
    return p["trim"] != 0 or (p["cls"] == ST.CLS_DATA and E.hdr[i]["payload_len"] > 0)


@njit
def directed(E, q, i, now):
    """Packet i is directed to watched port q (it enters its queue, or leaves a NIC through it)."""
    P = E.port
    ph = P[q]["watch"]
    if ph == ST.WATCH_ON:
        P[q]["watch_hits"] += 1
        P[q]["watch_last"] = now
    k = np.int64(P[q]["watch_fail"])
    p = E.pkt[i]
    f = p["flow"]
    if k >= ST.MAX_TRACKED_FAILURES or f < 0 or not _is_data(E, i):
        return
    bit = np.int64(1) << k
    aff = np.int64(E.flow[f]["fail_aff"])
    if aff & bit == 0:
        E.flow[f]["fail_aff"] = aff | bit
        E.S[ST.S_AFF_MARKS] += 1
    if ph != ST.WATCH_ON:
        return
    m = E.pmeta[i]
    dbit = np.int64(1) << (ST.PM_DIR_SHIFT + k)
    if m & dbit == 0:
        E.pmeta[i] = m | dbit
        if (m >> (ST.PM_AFF_SHIFT + k)) & 1:
            E.fstat[k]["aff_directed"] += 1


@njit
def on_send(E, i, now):
    """Packet i leaves its NIC while failures are watched: record its send time and affected failures."""
    p = E.pkt[i]
    m = np.int64(now) & ST.PM_TIME_MASK
    f = p["flow"]
    if f >= 0 and _is_data(E, i):
        aff = np.int64(E.flow[f]["fail_aff"])
        if aff != 0:
            n = min(E.fstat.shape[0], ST.MAX_TRACKED_FAILURES)
            for k in range(n):
                if (aff >> k) & 1 and E.fstat[k]["t0"] <= now:
                    m |= np.int64(1) << (ST.PM_AFF_SHIFT + k)
                    E.fstat[k]["aff_sent"] += 1
    E.pmeta[i] = m


@njit
def on_deliver(E, i):
    """Packet i reached its host: if it is affected traffic that avoided a failed element, note it."""
    m = E.pmeta[i]
    aff = (m >> ST.PM_AFF_SHIFT) & 0x7F
    if aff == 0:
        return
    away = aff & ~((m >> ST.PM_DIR_SHIFT) & 0x7F)
    t = m & ST.PM_TIME_MASK
    for k in range(min(E.fstat.shape[0], ST.MAX_TRACKED_FAILURES)):
        if (away >> k) & 1 and t < E.fstat[k]["first_away"]:
            E.fstat[k]["first_away"] = t
