"""What happens when a flow ends: completion times, failures, and htsim triggers.

Transports call `delivered` (payload reached the receiver in order: goodput,
also per failure for the flows it affects), `send_done` (the sender learnt that every byte arrived: the
flow's FCT ends), `recv_done` (the receiver has every byte) and `failed`.
Triggers follow htsim's ``connection_matrix`` / ``trigger`` semantics: a
flow's ``send_done_trigger`` / ``recv_done_trigger`` activates a trigger; a
``oneshot`` trigger starts all its flows on its first activation, a
``multishot`` one starts its next flow (in file order) on each activation, a
``barrier`` one starts all its flows on its ``count``-th activation. Started
flows are scheduled as ``EVT_START`` events at the current time (htsim's
``triggerIsPending``), which the engine starts in order; a flow with a
``delay`` (a training job's compute phase, `workloads.training`) starts that
much later. A trigger may also target another trigger (a target ``-(u + 1)``):
it is activated by an ``EVT_TRIG`` event at the current time, so dependency
graphs (a group's collective done -> each member's next iteration) need no
recursion and no allocation in compiled code.
"""
from __future__ import annotations

import numpy as np

from mrc.emulator._jit import njit
from mrc.emulator import events as EVT
from mrc.emulator import state as ST
from mrc.emulator.sched import schedule


@njit(inline="always")
def _fire(E, x, now):
    """Start target x of a trigger: flow x after its delay, or trigger -(x + 1) now."""
    if x >= 0:
        schedule(E, now + E.flow[x]["delay"], EVT.event(x, EVT.EVT_START))
    else:
        schedule(E, now, EVT.event(-x - 1, EVT.EVT_TRIG))


@njit
def activate(E, t, now):
    """Activate trigger t."""
    tr = E.trig[t]
    k = tr["kind"]
    first = tr["first"]
    if k == ST.TRIG_ONESHOT:
        if tr["fired"] != 0:
            return
        tr["fired"] = 1
        tr["t_fired"] = now
        for j in range(tr["n"]):
            _fire(E, E.trig_tgt[first + j], now)
    elif k == ST.TRIG_MULTISHOT:
        if tr["next"] >= tr["n"]:
            return
        if tr["fired"] == 0:
            tr["fired"] = 1
            tr["t_fired"] = now
        _fire(E, E.trig_tgt[first + tr["next"]], now)
        tr["next"] += 1
    else:
        if tr["remaining"] <= 0:
            return
        tr["remaining"] -= 1
        if tr["remaining"] == 0:
            tr["fired"] = 1
            tr["t_fired"] = now
            for j in range(tr["n"]):
                _fire(E, E.trig_tgt[first + j], now)


@njit(inline="always")
def delivered(E, f, nbytes):
    """`nbytes` of flow f's payload reached its receiver in order (goodput)."""
    E.ctr[ST.C_GOODPUT_BYTES] += nbytes
    aff = np.int64(E.flow[f]["fail_aff"])
    if aff != 0:
        for k in range(min(E.fstat.shape[0], ST.MAX_TRACKED_FAILURES)):
            if (aff >> k) & 1:
                E.fstat[k]["aff_rx"] += nbytes


@njit
def send_done(E, f, now):
    fl = E.flow[f]
    if fl["status"] != ST.FLOW_RUNNING:
        return
    fl["t_send_done"] = now
    if fl["t_recv_done"] < 0:
        fl["t_recv_done"] = now
    fl["status"] = ST.FLOW_DONE
    E.S[ST.S_FLOWS_ENDED] += 1
    if fl["send_trig"] >= 0:
        activate(E, fl["send_trig"], now)
    if fl["msg_next"] >= 0:
        next_message(E, f, now)


@njit
def recv_done(E, f, now):
    fl = E.flow[f]
    if fl["t_recv_done"] >= 0:
        return
    fl["t_recv_done"] = now
    if fl["recv_trig"] >= 0:
        activate(E, fl["recv_trig"], now)


@njit
def failed(E, f, now, why):
    fl = E.flow[f]
    if fl["status"] != ST.FLOW_RUNNING:
        return
    fl["status"] = ST.FLOW_FAILED
    fl["why"] = why
    fl["t_send_done"] = now
    E.S[ST.S_FLOWS_ENDED] += 1
    if fl["msg_next"] >= 0:
        next_message(E, f, now)


@njit
def next_message(E, f, now):
    """Flow f, a message on a connection, ended: the message waiting behind it (`engine.start_flow`) becomes
    the connection's and starts now (an ``EVT_START`` at the current time)."""
    nxt = E.flow[f]["msg_next"]
    E.flow[f]["msg_next"] = -1
    ep = E.flow[nxt]["ep"]
    E.ep[ep]["flow"] = nxt
    E.ep[E.ep[ep]["peer"]]["flow"] = nxt
    schedule(E, now, EVT.event(nxt, EVT.EVT_START))
