"""Priority flow control (IEEE 802.1Qbb) for the lossless RoCE baseline, on the data priority only.

A switch counts, per ingress port, the data bytes that entered through it and
still sit in its buffers (``port.in_bytes``). Above ``pfc_xoff`` it sends a
PAUSE to the upstream egress port (the ingress port's peer); when the count
falls to ``pfc_xon`` it sends a RESUME. A frame reaches the upstream port
after the wire delay plus its own 64 B serialisation (``cfg.pause_ps`` is
that serialisation; MAC control frames bypass the queues). A paused port
sends no data packet (control packets still go: they use another priority);
a paused NIC port's transmit scheduler offers only control packets. Pauses
propagate naturally: a paused port's queue grows, and its own switch pauses
its upstreams in turn.

Lossless buffering is accounted per ingress (XOFF + headroom each, as
lossless switches reserve headroom per ingress priority): a packet is dropped
only if its ingress exceeds ``pfc_limit`` (a headroom too small for the
link's round trip), counted as ``drops_pfc_overflow``. The egress
``queue_bytes`` limit does not apply to data on lossless ports.
"""
from __future__ import annotations

from mrc.emulator._jit import njit
from mrc.emulator import events as EVT
from mrc.emulator import state as ST
from mrc.emulator.sched import schedule


@njit(inline="always")
def _arrival(E, in_port, now):
    """When a frame sent now from `in_port` reaches its peer (it travels on in_port's own wire)."""
    return now + E.port[in_port]["delay"] + E.cfg[0]["pause_ps"]


@njit(inline="always")
def ingress_add(E, F, in_port, nbytes, now):
    """Account `nbytes` of data entering through `in_port`; PAUSE the upstream above XOFF."""
    P = E.port
    b = P[in_port]["in_bytes"] + nbytes
    P[in_port]["in_bytes"] = b
    if b > E.cfg[0]["pfc_xoff"] and P[in_port]["xoff"] == 0:
        P[in_port]["xoff"] = 1
        P[in_port]["pauses_sent"] += 1
        E.ctr[ST.C_PFC_PAUSES] += 1
        up = F.port[in_port]["peer"]
        schedule(E, _arrival(E, in_port, now), EVT.event(up, EVT.EVT_PFC_PAUSE))


@njit(inline="always")
def ingress_remove(E, F, in_port, nbytes, now):
    """Data that entered through `in_port` left the switch; RESUME the upstream at XON."""
    P = E.port
    b = P[in_port]["in_bytes"] - nbytes
    P[in_port]["in_bytes"] = b
    if P[in_port]["xoff"] != 0 and b <= E.cfg[0]["pfc_xon"]:
        P[in_port]["xoff"] = 0
        E.ctr[ST.C_PFC_RESUMES] += 1
        up = F.port[in_port]["peer"]
        schedule(E, _arrival(E, in_port, now), EVT.event(up, EVT.EVT_PFC_RESUME))


@njit
def on_pause(E, q, now):
    P = E.port
    if P[q]["paused"] == 0:
        P[q]["paused"] = 1
        P[q]["paused_since"] = now
        E.S[ST.S_PAUSED_N] += 1


@njit
def on_resume(E, q, now):
    """Returns True if the port was paused (the caller restarts it)."""
    P = E.port
    if P[q]["paused"] == 0:
        return False
    P[q]["paused"] = 0
    P[q]["paused_ps"] += now - P[q]["paused_since"]
    E.S[ST.S_PAUSED_N] -= 1
    return True
