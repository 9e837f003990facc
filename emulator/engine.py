"""The compiled main loop: pop the earliest event, hand it to its element, repeat.

`run_chunk(E, F, T, t_stop, max_events)` runs until the next event is later
than `t_stop`, `max_events` were handled, every flow ended, nothing is left,
or the pool / heap needs to grow (it stops *before* an event then, so Python
can grow the arrays and call again). Python (`sim.Simulation`) calls it in
chunks, sampling between them.

Per event kind:

- ``EVT_TX`` (port): the packet left the serialiser (`port.tx_done`); the
  port serialises its next packet (a NIC port asks its scheduler).
- ``EVT_PIPE`` (port): the packet at the head of the wire arrives. At a host
  it is delivered to its endpoint's transport (`dispatch.on_rx`); at a
  switch it is forwarded (`forward.forward`) into an egress port
  (`port.receive`).
- ``EVT_TIMER`` (endpoint): `nic.on_timer`.
- ``EVT_ARRIVAL``: the next flow of the time-sorted start list starts.
- ``EVT_START`` (flow): a trigger started it.
- ``EVT_TRIG`` (trigger): a trigger it depends on fired (`flows.activate`).
- ``EVT_FAIL``: the next failure action (`failures.apply`).
- ``EVT_PFC_PAUSE`` / ``EVT_PFC_RESUME`` (port): a PFC frame arrived.
"""
from __future__ import annotations

import numpy as np

from mrc.emulator._jit import njit
from mrc.emulator import events as EVT
from mrc.emulator import failures, nic, pfc, watch
from mrc.emulator import flows as FL
from mrc.emulator import state as ST
from mrc.emulator.forward import forward
from mrc.emulator.pool import RESERVE, free, trace
from mrc.core.cachelines import prefetch
from mrc.emulator.port import drop, pipe_pop, receive, start_next, tx_done
from mrc.emulator.sched import peek, pop, schedule
from mrc.emulator.transports import dispatch as TP
from mrc.fabric.address import carrier_shift
from mrc.fabric.paths import table_home


@njit
def start_flow(E, F, T, f, now):
    """Flow f's message is posted now: its transport starts it, unless its connection (the endpoints it shares
    with other flows, ``E.flow.conn``) is still sending another message. Then it waits behind that one and
    the ones already waiting (``msg_next``), and starts when the one before it ends (`flows.next_message`):
    a connection sends its messages one after another, each completed before the next starts. (A connection's
    endpoints name no flow until its first message starts; a flow of its own names itself from the start.)"""
    fl = E.flow[f]
    if fl["status"] != ST.FLOW_PENDING:
        return
    ep = fl["ep"]
    cur = E.ep[ep]["flow"]
    if cur >= 0 and cur != f:
        if E.flow[cur]["status"] <= ST.FLOW_RUNNING:  # pending (next in line) or running: wait behind it
            x = cur
            while E.flow[x]["msg_next"] >= 0:
                x = E.flow[x]["msg_next"]
                if x == f:
                    return  # already waiting
            E.flow[x]["msg_next"] = f
            return
    E.ep[ep]["flow"] = f
    E.ep[E.ep[ep]["peer"]]["flow"] = f
    fl["status"] = ST.FLOW_RUNNING
    fl["t_start"] = now
    E.S[ST.S_FLOWS_STARTED] += 1
    TP.flow_start(E, F, T, f, now)
    nic.sync(E, F, T, fl["ep"], now)
    if E.S[ST.S_WAKE_N] > 0:
        nic.drain_wake(E, F, T, now)


@njit(inline="always")
def deliver(E, F, T, i, host, now):
    p = E.pkt
    if p[i]["dst"] != host:
        drop(E, i, -1, ST.C_DROP_NOROUTE, now)
        return
    E.ctr[ST.C_DELIV_PKTS] += 1
    E.ctr[ST.C_DELIV_BYTES] += p[i]["size"]
    if E.trace.shape[0] > 0:
        trace(E, ST.TR_DELIVER, i, -1, now, 0)
    if E.S[ST.S_WATCHING] != 0:
        watch.on_deliver(E, i)
    E.hdr[i]["ecn"] = p[i]["ecn"]
    ep = p[i]["dst_ep"]
    TP.on_rx(E, F, T, ep, i, now)
    free(E, i)
    nic.sync(E, F, T, ep, now)
    if E.S[ST.S_WAKE_N] > 0:
        nic.drain_wake(E, F, T, now)


@njit(inline="always")
def on_pipe(E, F, T, q, now):
    i = pipe_pop(E, q)
    P = E.port
    if P[q]["up"] == 0:
        drop(E, i, q, ST.C_DROP_LINK, now)
        return
    peer = F.port[q]["peer"]
    node = F.port[q]["peer_node"]
    if E.trace.shape[0] > 0:
        trace(E, ST.TR_ARRIVE, i, q, now, 0)
    if (P[q]["kind"] & ST.PK_TO_HOST) != 0:
        deliver(E, F, T, i, node, now)
        return
    E.pkt[i]["in_port"] = peer
    e = forward(E, F, node, i)
    if e < 0:
        drop(E, i, -1, ST.C_DROP_NOROUTE, now)
        return
    receive(E, F, e, i, now)


@njit(inline="always")
def on_tx(E, F, T, q, now):
    tx_done(E, F, q, now)
    if (E.port[q]["kind"] & ST.PK_NIC) != 0:
        nic.try_send(E, F, T, q, now)
    else:
        start_next(E, F, q, now)


@njit(inline="always")
def _prefetch_ahead(E, F, ev):
    """Two events ahead: the rows of the element event's port (engine and fabric) and packet,
    so that the next call, `_prefetch_next`, can read them to find the rows they point to."""
    if (ev & EVT.KIND_MASK) > EVT.EVT_PIPE:
        return
    q = EVT.event_id(ev)
    prefetch(E.port, q)
    prefetch(F.port, q)
    i, endpoint = EVT.event_hint(ev)
    if i >= 0:
        prefetch(E.pkt, i)
        if endpoint != 0 and (ev & EVT.KIND_MASK) == EVT.EVT_PIPE:
            prefetch(E.hdr, i)  # the transport reads the header first


@njit(inline="always")
def _prefetch_next(E, F, T, ev):
    """Ask for the rows the next element event will touch while this one is handled (a packet's
    row has usually left the caches while it crossed a wire, a port's while its packet was on
    the wire): the port and its packet; when an endpoint receives it, the header row; when a
    switch receives it, the slot of its SRv6 table the carrier hashes to; when the port's
    serialiser frees, the packet at the tail of its wire and the one it serialises next (a NIC
    port: the free row it builds its next packet in). The port and packet rows were asked for
    one event earlier (`_prefetch_ahead`), so reading them here rarely waits; they are asked
    again here because the event after next was only a guess then."""
    kind = ev & EVT.KIND_MASK
    if kind > EVT.EVT_PIPE:
        return
    q = EVT.event_id(ev)
    i, endpoint = EVT.event_hint(ev)
    prefetch(E.port, q)
    if i < 0:
        return
    prefetch(E.pkt, i)
    P = E.port
    if kind == EVT.EVT_PIPE:
        if endpoint != 0:
            prefetch(E.hdr, i)
            TP.prefetch(E, T, E.pkt[i]["dst_ep"], i)
        elif E.pkt[i]["fwd"] == ST.FWD_SRV6:
            # the first probe, and the one after a shift (a switch's own uSID, then the next)
            node = F.port[q]["peer_node"]
            hi = E.pkt[i]["hi"]
            prefetch(F.htbl, table_home(F, node, hi >> np.uint64(16)))
            prefetch(F.htbl, table_home(F, node, carrier_shift(hi, E.pkt[i]["lo"])[0] >> np.uint64(16)))
        return
    if P[q]["pipe_n"] > 0:
        prefetch(E.pkt, P[q]["pipe_tail"])
    if endpoint != 0:
        k = E.S[ST.S_FREE_N] - 1
        if k >= 0:
            j = E.free[k]
            prefetch(E.pkt, j)
            prefetch(E.hdr, j)
        if P[q]["ring_n"] > 0:  # the endpoint the NIC's scheduler asks next
            TP.prefetch_tx(E, T, P[q]["ring_head"])
    elif P[q]["pkts1"] > 0:
        prefetch(E.pkt, P[q]["head1"])
    elif P[q]["pkts0"] > 0:
        prefetch(E.pkt, P[q]["head0"])


@njit
def prime(E):
    """Schedule the first flow start and the first failure action."""
    S = E.S
    if S[ST.S_ARR_NEXT] < E.arr_order.shape[0]:
        f = E.arr_order[S[ST.S_ARR_NEXT]]
        schedule(E, E.flow[f]["start"], EVT.event(0, EVT.EVT_ARRIVAL))
    if S[ST.S_ACT_NEXT] < E.act.shape[0]:
        schedule(E, E.act[S[ST.S_ACT_NEXT]]["t"], EVT.event(0, EVT.EVT_FAIL))


@njit
def run_chunk(E, F, T, t_stop, max_events, heap_reserve):
    """Handle events up to `t_stop`; returns a `state.ST_*` status."""
    S = E.S
    n_flows = E.flow.shape[0]
    cap = EVT.heap_capacity(E.heap_t)
    n = 0
    while True:
        if S[ST.S_FLOWS_ENDED] >= n_flows:
            return ST.ST_FLOWS_DONE
        t = peek(E)
        if t == ST.NEVER:
            return ST.ST_IDLE
        if S[ST.S_FREE_N] < RESERVE or cap - S[ST.S_HEAP_N] < heap_reserve:
            return ST.ST_GROW
        if t > t_stop:
            return ST.ST_CHUNK
        if n >= max_events:
            return ST.ST_BUDGET
        t, ev = pop(E)
        S[ST.S_NOW] = t
        n += 1
        S[ST.S_EVENTS] += 1
        kind = ev & EVT.KIND_MASK
        ident = EVT.event_id(ev)
        h_n = S[ST.S_HEAP_N]
        if h_n > 1:
            _prefetch_ahead(E, F, EVT.heap_entry(E.heap, EVT.min_child(E.heap_t, E.heap, 1, h_n)))  # the one after the next
        if h_n > 0:
            _prefetch_next(E, F, T, EVT.heap_entry(E.heap, 0))
        if kind == EVT.EVT_PIPE:
            on_pipe(E, F, T, ident, t)
        elif kind == EVT.EVT_TX:
            on_tx(E, F, T, ident, t)
        elif kind == EVT.EVT_TIMER:
            nic.on_timer(E, F, T, ident, t)
        elif kind == EVT.EVT_ARRIVAL:
            k = S[ST.S_ARR_NEXT]
            S[ST.S_ARR_NEXT] = k + 1
            if k + 1 < E.arr_order.shape[0]:
                schedule(E, E.flow[E.arr_order[k + 1]]["start"], EVT.event(0, EVT.EVT_ARRIVAL))
            start_flow(E, F, T, E.arr_order[k], t)
        elif kind == EVT.EVT_START:
            start_flow(E, F, T, ident, t)
        elif kind == EVT.EVT_TRIG:
            FL.activate(E, ident, t)
        elif kind == EVT.EVT_FAIL:
            a = S[ST.S_ACT_NEXT]
            S[ST.S_ACT_NEXT] = a + 1
            if a + 1 < E.act.shape[0]:
                schedule(E, E.act[a + 1]["t"], EVT.event(0, EVT.EVT_FAIL))
            failures.apply(E, F, T, a, t)
        elif kind == EVT.EVT_PFC_PAUSE:
            pfc.on_pause(E, ident, t)
        elif kind == EVT.EVT_PFC_RESUME:
            if pfc.on_resume(E, ident, t):
                if (E.port[ident]["kind"] & ST.PK_NIC) != 0:
                    nic.kick(E, F, T, ident, t)
                elif E.port[ident]["busy"] == 0:
                    start_next(E, F, ident, t)
