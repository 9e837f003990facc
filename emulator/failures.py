"""Failures as timed actions: link down/up, flaps, gray loss, degraded rate, NIC port down, switch reboot.

`expand` turns the validated ``[[failures]]`` entries (`scenario.Failure`)
into a time-sorted table of `state.ACT` rows; the engine applies one row per
``EVT_FAIL`` event (`apply`). Every action acts on a link, i.e. on both of its
ports. A failure's target is a `link` (two adjacent nodes), a `port`, a
`switch` (all its links) or a host NIC port (`host` + `plane`).

=================  ==========================================================
kind               actions
=================  ==========================================================
``link-down``      link down at ``at_us`` (up again after ``duration_us`` if
                   given); routing learns it ``route_detect_us`` later next
                   to the link and ``route_converge_us`` later elsewhere
``link-up``        link up (and routing learns it, same delays)
``flap``           down for ``down_us`` every ``period_us`` (default half the
                   period) until ``until_us`` (default: the end of the run)
``gray-loss``      each packet on the link is lost with ``probability``
                   (for ``duration_us`` if given); routing does not notice
``degrade``        the link runs at ``rate_fraction`` of its speed (0.25:
                   25 %) and, with ``scale_queue`` (default true), its
                   ports' data queue limit and ECN thresholds scale by the
                   same ratio, as htsim's ``-failed`` does
                   (``fat_tree_topology.cpp``); routing does not notice
``nic-port-down``  the host's NIC port on ``plane`` goes down (for
                   ``duration_us`` if given)
``switch-reboot``  every link of ``switch`` down for ``duration_us``
=================  ==========================================================

Packets queued at a port whose link goes down are dropped; packets on the
wire are lost. A host NIC link going down or up is also reported to the
transport (`dispatch.port_event`: the NIC sees its own link at once). Targets
are watched shortly before the fault (which flows use them) and counted from
the fault on: packets directed to them are counted per port (``watch_hits``,
``watch_last``) and tracked per packet (`watch`), which is how `metrics`
measures when traffic was steered away.
"""
from __future__ import annotations

import numpy as np

from mrc.emulator._jit import njit
from mrc.emulator import nic
from mrc.emulator import state as ST
from mrc.emulator.port import flush, start_next
from mrc.emulator.transports import dispatch as TP


def expand(failures, topo, end_ps: int, detect_ps: int, converge_ps: int, prewatch_ps: int = 0) -> np.ndarray:
    """The `ACT` table of a list of `scenario.Failure` (ports already resolved).

    Each failure's ports are watched from `prewatch_ps` before its fault (flows using them then
    are the affected ones, `watch`) and counted from the fault on."""
    rows = []

    def add(t, kind, port, idx, value=0.0):
        if t <= end_ps:
            rows.append((int(t), float(value), int(port), idx, kind))

    def down(t, ports, idx):
        for q in ports:
            add(t, ST.A_LINK_DOWN, q, idx)
            add(t + detect_ps, ST.A_RLOC_DOWN, q, idx)
            add(t + converge_ps, ST.A_RGLOB_DOWN, q, idx)

    def up(t, ports, idx):
        for q in ports:
            add(t, ST.A_LINK_UP, q, idx)
            add(t + detect_ps, ST.A_RLOC_UP, q, idx)
            add(t + converge_ps, ST.A_RGLOB_UP, q, idx)

    for idx, f in enumerate(failures):
        t0 = f.at_ps
        if prewatch_ps > 0 and f.kind != "link-up":
            for q in f.ports:
                add(max(t0 - prewatch_ps, 0), ST.A_PREWATCH, q, idx)
        add(t0, ST.A_MARK, -1, idx)
        for q in f.ports:
            add(t0, ST.A_WATCH, q, idx)
        dur = f.duration_ps
        if f.kind in ("link-down", "nic-port-down", "switch-reboot"):
            down(t0, f.ports, idx)
            if dur is not None:
                up(t0 + dur, f.ports, idx)
        elif f.kind == "link-up":
            up(t0, f.ports, idx)
        elif f.kind == "flap":
            period = f.period_ps
            dwn = f.down_ps
            until = end_ps if f.until_ps is None else f.until_ps
            t = t0
            while t < until and t <= end_ps:
                down(t, f.ports, idx)
                up(min(t + dwn, until), f.ports, idx)
                t += period
        elif f.kind == "gray-loss":
            for q in f.ports:
                add(t0, ST.A_GRAY, q, idx, f.probability)
                if dur is not None:
                    add(t0 + dur, ST.A_GRAY, q, idx, 0.0)
        elif f.kind == "degrade":
            for q in f.ports:
                add(t0, ST.A_RATE, q, idx, f.rate_fraction)
                if f.scale_queue:
                    add(t0, ST.A_QSCALE, q, idx, f.rate_fraction)
                if dur is not None:
                    add(t0 + dur, ST.A_RATE, q, idx, 1.0)
                    if f.scale_queue:
                        add(t0 + dur, ST.A_QSCALE, q, idx, 1.0)
        else:  # pragma: no cover - scenario validation rejects it
            raise ValueError(f.kind)
    act = np.zeros(len(rows), ST.ACT)
    if rows:
        order = sorted(range(len(rows)), key=lambda k: (rows[k][0], k))  # stable: file order at equal times
        for j, k in enumerate(order):
            t, v, q, idx, kind = rows[k]
            act[j] = (t, v, q, idx, kind)
    return act


@njit(inline="always")
def _route_bad(P, q):
    return P[q]["rloc"] == 0 or P[q]["rglob"] == 0


@njit
def _set_route(E, q, field_loc, value):
    P = E.port
    before = _route_bad(P, q)
    if field_loc:
        P[q]["rloc"] = value
    else:
        P[q]["rglob"] = value
    after = _route_bad(P, q)
    if after and not before:
        E.S[ST.S_ROUTE_DOWN] += 1
    elif before and not after:
        E.S[ST.S_ROUTE_DOWN] -= 1


@njit
def _kick(E, F, T, q, now):
    P = E.port
    if P[q]["busy"] != 0:
        return
    if (P[q]["kind"] & ST.PK_NIC) != 0:
        nic.kick(E, F, T, q, now)
    else:
        start_next(E, F, q, now)


@njit
def apply(E, F, T, a, now):
    """Apply failure action a (a row of ``E.act``) to both ports of its link."""
    act = E.act[a]
    k = act["kind"]
    q0 = act["port"]
    if k == ST.A_MARK:
        idx = act["failure"]
        if idx < E.fstat.shape[0] and E.fstat[idx]["t0"] == ST.NEVER:
            E.fstat[idx]["t0"] = now
        E.S[ST.S_WATCHING] = 1
    if q0 < 0:
        return
    P = E.port
    NP = E.cfg[0]["n_planes"]
    for side in range(2):
        q = q0 if side == 0 else F.port[q0]["peer"]
        if k == ST.A_LINK_DOWN:
            if P[q]["up"] != 0:
                P[q]["up"] = 0
                flush(E, F, q, now)
                if (P[q]["kind"] & ST.PK_NIC) != 0:
                    host = F.port[q]["node"]
                    TP.port_event(E, F, T, host, q - host * NP, 0, now)
        elif k == ST.A_LINK_UP:
            if P[q]["up"] == 0:
                P[q]["up"] = 1
                if (P[q]["kind"] & ST.PK_NIC) != 0:
                    host = F.port[q]["node"]
                    TP.port_event(E, F, T, host, q - host * NP, 1, now)
                _kick(E, F, T, q, now)
        elif k == ST.A_RLOC_DOWN:
            _set_route(E, q, True, 0)
        elif k == ST.A_RLOC_UP:
            _set_route(E, q, True, 1)
        elif k == ST.A_RGLOB_DOWN:
            _set_route(E, q, False, 0)
        elif k == ST.A_RGLOB_UP:
            _set_route(E, q, False, 1)
        elif k == ST.A_GRAY:
            P[q]["gray"] = act["value"]
        elif k == ST.A_RATE:
            r = np.int64(F.port[q]["rate"] * act["value"])
            P[q]["rate"] = r if r > 0 else 1
        elif k == ST.A_QSCALE:
            P[q]["qscale"] = act["value"]
        elif k == ST.A_WATCH:
            P[q]["watch"] = ST.WATCH_ON
            P[q]["watch_fail"] = min(act["failure"], 127)
        elif k == ST.A_PREWATCH:
            if P[q]["watch"] == ST.WATCH_NONE:
                P[q]["watch"] = ST.WATCH_PRE
                P[q]["watch_fail"] = min(act["failure"], 127)
            E.S[ST.S_WATCHING] = 1
    if E.S[ST.S_WAKE_N] > 0:
        nic.drain_wake(E, F, T, now)
