"""A port: two egress queues (data; high-priority control), a serialiser and a wire to the peer.

Queues and wires are singly linked lists through the packet pool (``pkt.next``),
so a port costs a fixed row whatever it holds. Element discipline (htsim's
``Queue`` + ``Pipe``): a port has one ``EVT_TX`` pending while it serialises,
its wire one ``EVT_PIPE`` for the packet at its head; the wire is FIFO with a
constant delay, so arrival order is departure order.

- `receive`: a packet enters the port (switch egress). Down link: drop.
  Data: lossless ports account PFC per ingress (`pfc`); other ports trim
  (`aqm.trim`) or drop when the data queue would exceed ``limit0`` (times
  ``qscale`` on a degraded link); then ECN
  (`aqm.ecn_mark`) if marking on enqueue. Control: drop when the control
  queue would exceed ``limit1``. Then, if idle, start serialising.
- `start_next`: control queue first (strict priority), data unless paused.
- `tx_done`: the packet left: ECN if marking on dequeue (the default, as
  htsim and ns-3 HPCC do), then onto the wire (or lost: link down, gray loss);
  a captured port (``PK_CAPTURE``) keeps a copy first (`capture`).
- `pipe_pop`: the packet at the head of the wire arrives at the peer.
"""
from __future__ import annotations

import numpy as np

from mrc.emulator._jit import njit
from mrc.emulator import aqm, pfc, watch
from mrc.emulator import events as EVT
from mrc.emulator import state as ST
from mrc.emulator.capture import capture
from mrc.emulator.pool import free, rand_u01, trace
from mrc.emulator.sched import schedule
from mrc.units import serialization_ps


@njit
def drop(E, i, q, reason, now):
    """Drop packet i at port q (-1 if none); `reason` is its `state.C_DROP_*` counter."""
    s = E.pkt[i]["size"]
    E.ctr[ST.C_DROP_PKTS] += 1
    E.ctr[ST.C_DROP_BYTES] += s
    E.ctr[reason] += 1
    if q >= 0:
        E.port[q]["drops"] += 1
    if E.trace.shape[0] > 0:
        trace(E, ST.TR_DROP, i, q, now, reason)
    free(E, i)


@njit(inline="always")
def _append(E, q, i, c):
    P = E.port
    p = E.pkt
    p[i]["next"] = -1
    E.S[ST.S_PORT_MOVES] += 1
    if c == ST.CLS_DATA:
        if P[q]["pkts0"] == 0:
            P[q]["head0"] = i
        else:
            p[P[q]["tail0"]]["next"] = i
        P[q]["tail0"] = i
        P[q]["pkts0"] += 1
        b = P[q]["bytes0"] + p[i]["size"]
        P[q]["bytes0"] = b
        if b > P[q]["max_bytes0"]:
            P[q]["max_bytes0"] = b
    else:
        if P[q]["pkts1"] == 0:
            P[q]["head1"] = i
        else:
            p[P[q]["tail1"]]["next"] = i
        P[q]["tail1"] = i
        P[q]["pkts1"] += 1
        b = P[q]["bytes1"] + p[i]["size"]
        P[q]["bytes1"] = b
        if b > P[q]["max_bytes1"]:
            P[q]["max_bytes1"] = b


@njit(inline="always")
def _limit0(E, q):
    """The data queue limit of port q: the switch's, scaled on a degraded link (htsim -failed)."""
    lim = E.cfg[0]["limit0"]
    s = E.port[q]["qscale"]
    if s != 1.0:
        lim = np.int64(lim * s)
    return lim


@njit(inline="always")
def receive(E, F, q, i, now):
    """Packet i (arrived at q's node through ``pkt.in_port``) enters egress port q."""
    P = E.port
    p = E.pkt
    if P[q]["watch"] != 0:
        watch.directed(E, q, i, now)
    if P[q]["up"] == 0:
        drop(E, i, q, ST.C_DROP_LINK, now)
        return
    kind = P[q]["kind"]
    c = p[i]["cls"]
    size = np.int64(p[i]["size"])
    if c == ST.CLS_DATA:
        inp = p[i]["in_port"]
        if (kind & ST.PK_PFC) != 0 and inp >= 0:
            if P[inp]["in_bytes"] + size > E.cfg[0]["pfc_limit"]:
                drop(E, i, q, ST.C_DROP_PFC, now)
                return
            pfc.ingress_add(E, F, inp, size, now)
        elif P[q]["bytes0"] + size > _limit0(E, q):
            if (kind & ST.PK_TRIM) != 0 and aqm.trimmable(E, i):
                aqm.trim(E, q, i)
                if E.trace.shape[0] > 0:
                    trace(E, ST.TR_TRIM, i, q, now, 0)
                c = ST.CLS_CTRL
                size = np.int64(p[i]["size"])
            else:
                drop(E, i, q, ST.C_DROP_QUEUE, now)
                return
        if c == ST.CLS_DATA and (kind & ST.PK_ECN) != 0 and E.cfg[0]["ecn_dequeue"] == 0:
            if aqm.ecn_mark(E, q, i, P[q]["bytes0"]) and E.trace.shape[0] > 0:
                trace(E, ST.TR_MARK, i, q, now, 0)
    if c == ST.CLS_CTRL and P[q]["bytes1"] + size > E.cfg[0]["limit1"]:
        drop(E, i, q, ST.C_DROP_CTRL, now)
        return
    _append(E, q, i, c)
    if P[q]["busy"] == 0:
        start_next(E, F, q, now)


@njit(inline="always")
def _pipe_event(E, q, i):
    """The `EVT_PIPE` event of port q's wire whose head is packet i (delivered to a host: flagged)."""
    return EVT.event_pkt(q, EVT.EVT_PIPE, i, (E.port[q]["kind"] & ST.PK_TO_HOST) != 0)


@njit(inline="always")
def begin_tx(E, F, q, i, now):
    """Start serialising packet i on port q."""
    P = E.port
    P[q]["busy"] = 1
    P[q]["cur"] = i
    nbytes = np.int64(E.pkt[i]["size"]) + E.cfg[0]["framing"]
    schedule(E, now + serialization_ps(nbytes, P[q]["rate"]), EVT.event_pkt(q, EVT.EVT_TX, i, (P[q]["kind"] & ST.PK_NIC) != 0))


@njit(inline="always")
def start_next(E, F, q, now):
    """Serialise the next queued packet of switch port q, if any may go."""
    P = E.port
    p = E.pkt
    if P[q]["pkts1"] > 0:
        i = P[q]["head1"]
        P[q]["head1"] = p[i]["next"]
        P[q]["pkts1"] -= 1
        P[q]["bytes1"] -= p[i]["size"]
    elif P[q]["pkts0"] > 0 and P[q]["paused"] == 0:
        i = P[q]["head0"]
        P[q]["head0"] = p[i]["next"]
        P[q]["pkts0"] -= 1
        size = np.int64(p[i]["size"])
        P[q]["bytes0"] -= size
        inp = p[i]["in_port"]
        if inp >= 0 and (P[q]["kind"] & ST.PK_PFC) != 0:
            pfc.ingress_remove(E, F, inp, size, now)
    else:
        P[q]["busy"] = 0
        return
    E.S[ST.S_PORT_MOVES] += 1
    begin_tx(E, F, q, i, now)


@njit(inline="always")
def tx_done(E, F, q, now):
    """The packet on q's serialiser has left: put it on the wire. Returns its row (or -1 if lost)."""
    P = E.port
    p = E.pkt
    i = P[q]["cur"]
    P[q]["cur"] = -1
    P[q]["busy"] = 0
    s = p[i]["size"]
    P[q]["tx_bytes"] += s
    P[q]["tx_pkts"] += 1
    E.S[ST.S_HOPS] += 1
    if (P[q]["kind"] & ST.PK_ECN) != 0 and p[i]["cls"] == ST.CLS_DATA and E.cfg[0]["ecn_dequeue"] != 0:
        # htsim's ECNQueue: the queue as the packet leaves, itself included
        if aqm.ecn_mark(E, q, i, P[q]["bytes0"] + s) and E.trace.shape[0] > 0:
            trace(E, ST.TR_MARK, i, q, now, 0)
    if E.trace.shape[0] > 0:
        trace(E, ST.TR_DEPART, i, q, now, 0)
    if P[q]["up"] == 0:
        drop(E, i, q, ST.C_DROP_LINK, now)
        return -1
    if (P[q]["kind"] & ST.PK_CAPTURE) != 0:
        capture(E, q, i, now)
    g = P[q]["gray"]
    if g > 0.0 and rand_u01(E) < g:
        drop(E, i, q, ST.C_DROP_GRAY, now)
        return -1
    t = now + P[q]["delay"]
    p[i]["next"] = -1
    if P[q]["pipe_n"] == 0:
        P[q]["pipe_head"] = i
        schedule(E, t, _pipe_event(E, q, i))
    else:
        tail = P[q]["pipe_tail"]
        p[tail]["next"] = i
        p[tail]["next_t"] = t
    P[q]["pipe_tail"] = i
    P[q]["pipe_n"] += 1
    return i


@njit(inline="always")
def pipe_pop(E, q):
    """Take the packet at the head of q's wire; schedules the next arrival."""
    P = E.port
    p = E.pkt
    i = P[q]["pipe_head"]
    n = P[q]["pipe_n"] - 1
    P[q]["pipe_n"] = n
    if n > 0:
        j = p[i]["next"]
        P[q]["pipe_head"] = j
        schedule(E, p[i]["next_t"], _pipe_event(E, q, j))
    p[i]["next"] = -1
    return i


@njit
def flush(E, F, q, now):
    """Drop everything queued at q (its link went down)."""
    P = E.port
    p = E.pkt
    if P[q]["pkts0"] + P[q]["pkts1"] > 0:
        E.S[ST.S_PORT_MOVES] += 1
    while P[q]["pkts1"] > 0:
        i = P[q]["head1"]
        P[q]["head1"] = p[i]["next"]
        P[q]["pkts1"] -= 1
        P[q]["bytes1"] -= p[i]["size"]
        drop(E, i, q, ST.C_DROP_LINK, now)
    while P[q]["pkts0"] > 0:
        i = P[q]["head0"]
        P[q]["head0"] = p[i]["next"]
        P[q]["pkts0"] -= 1
        size = np.int64(p[i]["size"])
        P[q]["bytes0"] -= size
        inp = p[i]["in_port"]
        drop(E, i, q, ST.C_DROP_LINK, now)
        if inp >= 0 and (P[q]["kind"] & ST.PK_PFC) != 0:
            pfc.ingress_remove(E, F, inp, size, now)
