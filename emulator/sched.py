"""The engine's event queues: `E.heap` (element events) and `E.theap` (one timer per endpoint).

`schedule` adds an element event; `set_timer` moves an endpoint's single
timer (NEVER removes it); `peek` and `pop` take the earliest of both queues
in (time, sequence) order, so simultaneous events run in the order they were
scheduled, whichever queue holds them.
"""
from __future__ import annotations

from mrc.emulator import events as EVT
from mrc.emulator import state as ST
from mrc.emulator._jit import njit
from mrc.emulator.state import NEVER


@njit(inline="always")
def schedule(E, t, ev):
    """Schedule event word `ev` (`events.event(id, kind)`) at time `t`."""
    EVT.heap_push(E.heap_t, E.heap, E.S, ST.S_HEAP_N, ST.S_SEQ, t, ev)


@njit(inline="always")
def set_timer(E, ep, t):
    if t == NEVER:
        EVT.timer_remove(E.theap, E.tpos, E.S, ST.S_THEAP_N, ep)
    else:
        EVT.timer_set(E.theap, E.tpos, E.S, ST.S_THEAP_N, ST.S_SEQ, ep, t)


@njit(inline="always")
def _timer_first(E):
    """True if the timer heap holds the earliest event (both must not be empty together)."""
    if E.S[ST.S_THEAP_N] == 0:
        return False
    if E.S[ST.S_HEAP_N] == 0:
        return True
    a = E.theap[0]
    tb, sb, _ = EVT.heap_top(E.heap_t, E.heap)
    return a["t"] < tb or (a["t"] == tb and a["s"] < sb)


@njit(inline="always")
def peek(E):
    """Time of the earliest event (NEVER if none)."""
    if E.S[ST.S_HEAP_N] == 0 and E.S[ST.S_THEAP_N] == 0:
        return NEVER
    if _timer_first(E):
        return E.theap[0]["t"]
    return EVT.heap_top(E.heap_t, E.heap)[0]


@njit(inline="always")
def pop(E):
    """Remove the earliest event: (t, event word); a timer comes back as event(ep, EVT_TIMER)."""
    if _timer_first(E):
        t, ep = EVT.timer_pop(E.theap, E.tpos, E.S, ST.S_THEAP_N)
        return t, EVT.event(ep, EVT.EVT_TIMER)
    return EVT.heap_pop(E.heap_t, E.heap, E.S, ST.S_HEAP_N)


@njit(inline="always")
def wake(E, ep):
    """Ask the engine to sync endpoint `ep` after the current input (a transport changed its state
    while handling another endpoint's packet or timer); each endpoint is queued once."""
    if E.ep[ep]["woken"] == 0:
        E.ep[ep]["woken"] = 1
        n = E.S[ST.S_WAKE_N]
        E.wake[n] = ep
        E.S[ST.S_WAKE_N] = n + 1
