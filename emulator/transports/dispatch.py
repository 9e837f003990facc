"""The transport interface the engine calls, one `elif` per transport (selected by ``ep.tcode``).

A transport is a module of compiled functions over its own state table(s),
bundled in the `Transports` namedtuple. The engine calls, for endpoint `ep`:

- ``flow_start(E, F, T, f, now)``: flow f (whose sending endpoint is
  ``E.flow[f].ep``) starts now;
- ``tx_next(E, F, T, ep, now, port, allow_data, pkt)``: NIC port ``port`` is
  free; build this endpoint's next packet into pool row ``pkt``
  (``pool.pkt_new`` + a route + the ``E.hdr[pkt]`` header row) and return 1,
  or return 0. ``allow_data`` is 0 while PFC pauses the port's data priority;
- ``ready_at(E, F, T, ep, now)``: when it will next have a packet (``NEVER``:
  nothing). The NIC keeps it in its ports' rings while this is <= now;
- ``next_deadline(E, F, T, ep)``: its earliest timer (``NEVER``: none);
- ``on_rx(E, F, T, ep, pkt, now)``: packet ``pkt`` (``E.pkt[pkt]``,
  ``E.hdr[pkt]``) arrived for it; the engine frees the row afterwards;
- ``on_timer(E, F, T, ep, now)``: a deadline passed (may be early: handle
  what is due, nothing else).

- ``prefetch(E, T, ep, pkt)`` (optional): the loop will hand ep packet ``pkt``
  at the next event; ask the caches for its state rows now;
- ``prefetch_tx(E, T, slot)`` (optional): the loop will ask ring slot ``slot``
  (``ep * planes + plane``) for a packet at the next event: the same.

- ``port_event(E, F, T, host, plane, up, now)``: a host's NIC link on
  ``plane`` went down (``up`` = 0) or came back (the NIC sees it at once).

Completion is reported with `flows.send_done` / `recv_done` / `failed`; an
input that changes other endpoints queues them with `sched.wake`.
Adding a transport: its module, a field in `Transports`, a code below, one
`elif` in each function, and its Python setup in `transports/__init__.py`.
"""
from __future__ import annotations

from collections import namedtuple

from mrc.emulator._jit import njit
from mrc.emulator.state import NEVER
from mrc.emulator.transports import mrcqp, roce

TP_NONE = 0
TP_ROCE = 1
TP_MRC = 2  # mrc, mrc-1ev, spray, reps, ar: the MRC core (mrcqp)

Transports = namedtuple("Transports", [
    "roce", "roce_p",
    # MRC: the fabric's CoreTables, parameters, header sizes, host controllers, EV event log,
    # the rows each (endpoint, plane) ring slot reads first when next asked to send (a prefetch
    # hint), each QP's TX and RX row (a copy the prefetches read without the QP row)
    "core", "mrc_p", "mrc_hdr", "mrc_host", "mrc_ctl", "mrc_free", "mrc_s", "mrc_evlog", "mrc_next",
    "mrc_rows",
    # MRC with dynamic MPR (``mpr_budget``): per host the responder QPs receiving a message, per QP whether
    # it is one of them (empty when off)
    "mrc_rx_active", "mrc_rx_on",
])
Transports.__doc__ = "State of every transport (unused ones hold empty tables, so one compiled loop serves all)."


@njit
def flow_start(E, F, T, f, now):
    c = E.ep[E.flow[f]["ep"]]["tcode"]
    if c == TP_ROCE:
        roce.flow_start(E, F, T.roce, T.roce_p, f, now)
    elif c == TP_MRC:
        mrcqp.flow_start(E, F, T, f, now)


@njit(inline="always")
def tx_next(E, F, T, ep, now, port, allow_data, pkt):
    c = E.ep[ep]["tcode"]
    if c == TP_ROCE:
        return roce.tx_next(E, F, T.roce, T.roce_p, ep, now, port, allow_data, pkt)
    if c == TP_MRC:
        return mrcqp.tx_next(E, F, T, ep, now, port, allow_data, pkt)
    return 0


@njit(inline="always")
def ready_at(E, F, T, ep, now):
    c = E.ep[ep]["tcode"]
    if c == TP_ROCE:
        return roce.ready_at(E, T.roce, T.roce_p, ep, now)
    if c == TP_MRC:
        return mrcqp.ready_at(E, T, ep, now)
    return NEVER


@njit(inline="always")
def next_deadline(E, F, T, ep):
    c = E.ep[ep]["tcode"]
    if c == TP_ROCE:
        return roce.next_deadline(E, T.roce, T.roce_p, ep)
    if c == TP_MRC:
        return mrcqp.next_deadline(E, T, ep)
    return NEVER


@njit(inline="always")
def prefetch(E, T, ep, pkt):
    if E.ep[ep]["tcode"] == TP_MRC:
        mrcqp.prefetch_ep(E, T, ep, pkt)


@njit(inline="always")
def prefetch_tx(E, T, slot):
    if E.ep[slot // E.cfg[0]["n_planes"]]["tcode"] == TP_MRC:
        mrcqp.prefetch_tx(E, T, slot)


@njit(inline="always")
def on_rx(E, F, T, ep, pkt, now):
    c = E.ep[ep]["tcode"]
    if c == TP_ROCE:
        roce.on_rx(E, F, T.roce, T.roce_p, ep, pkt, now)
    elif c == TP_MRC:
        mrcqp.on_rx(E, F, T, ep, pkt, now)


@njit(inline="always")
def on_timer(E, F, T, ep, now):
    c = E.ep[ep]["tcode"]
    if c == TP_ROCE:
        roce.on_timer(E, F, T.roce, T.roce_p, ep, now)
    elif c == TP_MRC:
        mrcqp.on_timer(E, F, T, ep, now)


@njit
def port_event(E, F, T, host, plane, up, now):
    if T.mrc_p.shape[0] > 0:
        mrcqp.port_event(E, F, T, host, plane, up, now)
