"""The NIC: one port per plane, serialisation at port rate, a round-robin transmit scheduler across endpoints.

Each NIC port keeps a ring (FIFO linked list) of the (endpoint, plane) slots
that have something to send on it; slot ``ep * planes + plane`` links to
``E.ring[slot]``. When the port is free it takes the slot at the head, asks
the endpoint's transport for one packet (`dispatch.tx_next`), puts the
endpoint back at the tail if it still has more (`dispatch.ready_at` <= now)
and serialises the packet: one packet per endpoint per turn, as a NIC's
QP scheduler does. Endpoints that have nothing until later (pacing) leave the
ring and set a timer instead.

`sync` is what the engine calls after any input to an endpoint (a packet, a
timer, a flow start): it queues the endpoint where it has something to send
and (re)arms its one timer event (aioquic's "transmit, then re-arm the
timer"). A NIC port whose link is down sends nothing; a paused one (PFC)
offers only control packets.
"""
from __future__ import annotations

from mrc.emulator._jit import njit
from mrc.emulator import state as ST
from mrc.emulator import watch
from mrc.emulator.pool import alloc, free
from mrc.emulator.port import begin_tx
from mrc.emulator.sched import set_timer
from mrc.emulator.state import NEVER
from mrc.emulator.transports import dispatch as TP


@njit(inline="always")
def _ring_push(E, q, slot):
    P = E.port
    E.ring[slot] = -1
    if P[q]["ring_n"] == 0:
        P[q]["ring_head"] = slot
    else:
        E.ring[P[q]["ring_tail"]] = slot
    P[q]["ring_tail"] = slot
    P[q]["ring_n"] += 1


@njit(inline="always")
def _ring_pop(E, q):
    P = E.port
    slot = P[q]["ring_head"]
    P[q]["ring_head"] = E.ring[slot]
    P[q]["ring_n"] -= 1
    return slot


@njit(inline="always")
def arm(E, F, T, ep, now, ready):
    """Make sure endpoint ep's timer fires by its next deadline (or when it is ready again)."""
    d = TP.next_deadline(E, F, T, ep)
    if ready > now and ready < d:
        d = ready
    if d != E.ep[ep]["timer_at"]:
        E.ep[ep]["timer_at"] = d
        set_timer(E, ep, d)


@njit
def try_send(E, F, T, q, now):
    """NIC port q is idle: serialise the next packet of its ring, if any endpoint has one."""
    P = E.port
    if P[q]["busy"] != 0 or P[q]["up"] == 0:
        return
    NP = E.cfg[0]["n_planes"]
    allow_data = P[q]["paused"] == 0
    for _ in range(P[q]["ring_n"]):
        if P[q]["ring_n"] == 0:
            break
        slot = _ring_pop(E, q)
        ep = slot // NP
        plane = slot - ep * NP
        E.ep[ep]["in_ring"] &= ~(1 << plane)
        i = alloc(E)
        built = TP.tx_next(E, F, T, ep, now, q, allow_data, i)
        r = TP.ready_at(E, F, T, ep, now)
        if r <= now and (E.ep[ep]["planes"] >> plane) & 1:  # it may have left this port's plane
            _ring_push(E, q, slot)
            E.ep[ep]["in_ring"] |= 1 << plane
        arm(E, F, T, ep, now, r)
        if built:
            s = E.pkt[i]["size"]
            E.ctr[ST.C_SENT_PKTS] += 1
            E.ctr[ST.C_SENT_BYTES] += s
            if E.S[ST.S_WATCHING] != 0:
                watch.on_send(E, i, now)
                if P[q]["watch"] != 0:
                    watch.directed(E, q, i, now)
            begin_tx(E, F, q, i, now)
            return
        free(E, i)


@njit
def sync(E, F, T, ep, now):
    """After any input to endpoint ep: queue it where it can send, kick idle ports, re-arm its timer."""
    r = TP.ready_at(E, F, T, ep, now)
    if r <= now:
        NP = E.cfg[0]["n_planes"]
        host = E.ep[ep]["host"]
        planes = E.ep[ep]["planes"]
        for p in range(NP):
            if (planes >> p) & 1 == 0:
                continue
            q = host * NP + p
            if (E.ep[ep]["in_ring"] >> p) & 1 == 0:
                _ring_push(E, q, ep * NP + p)
                E.ep[ep]["in_ring"] |= 1 << p
            if E.port[q]["busy"] == 0:
                try_send(E, F, T, q, now)
        r = TP.ready_at(E, F, T, ep, now)
    arm(E, F, T, ep, now, r)


@njit(inline="always")
def on_timer(E, F, T, ep, now):
    """Endpoint ep's timer fired (it was taken off the timer heap)."""
    E.ep[ep]["timer_at"] = NEVER
    TP.on_timer(E, F, T, ep, now)
    sync(E, F, T, ep, now)
    if E.S[ST.S_WAKE_N] > 0:
        drain_wake(E, F, T, now)


@njit
def drain_wake(E, F, T, now):
    """Sync the endpoints a transport queued in ``E.wake`` while handling an input (their state changed)."""
    S = E.S
    while S[ST.S_WAKE_N] > 0:
        S[ST.S_WAKE_N] -= 1
        ep = E.wake[S[ST.S_WAKE_N]]
        E.ep[ep]["woken"] = 0
        sync(E, F, T, ep, now)


@njit
def kick(E, F, T, q, now):
    """Restart NIC port q (its link came up, or PFC resumed it): a call, kept out of the hot loop."""
    try_send(E, F, T, q, now)
