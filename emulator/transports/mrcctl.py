"""The MRC controller of every host, as `mrc.ctl` models one (compiled, one table for the fabric).

A controller per host owns the host's NIC port state and talks to its peers'
controllers with endpoint requests, real packets through the fabric on the
reserved QP number 2 (mrc-public-notes 2.7; `mrc.ctl.endpoint`):

- **Port status updates.** When a NIC port of host h goes down or comes back
  (the ``nic-port-down`` failure: the NIC sees its link at once), every QP on h
  gets `mrc.core.dispatch.set_local_ports` at once (OAI: the NIC "recalculates
  paths to avoid the failed plane"), and h's controller sends one
  PORT_STATUS_UPDATE (ERTH, ``port_status_mask`` = its ports up) to the
  controller of every peer host of its running QPs, on a usable EV of a plane
  that is still up (as `mrc.ctl` does: "immediately tells peers"). A peer
  applies it to each of its QPs with h (`set_remote_ports`) and answers
  (EETH); an update not answered within ``ctl_timeout_us`` is sent again, at
  most ``ctl_retries`` times (timeout: mrc.ctl's 1 ms; retries: ours). A newer
  update to the same peer replaces a pending one.
- **EV probes.** When an EV of one of h's QPs becomes ASSUMED_BAD (an EV event),
  the controller probes that EV's path with endpoint EV probes every
  ``ctl_probe_us`` (ERTH EV_PROBE; the answer, EETH, returns on the same EV
  value, which in these fabrics names the same switches both ways). After
  ``ctl_probe_successes`` answered probes in a row, an EV still ASSUMED_BAD is
  returned to GOOD (MODIFY_EV_STATE GOOD: MANI, EV probes "verify a repaired
  link before its EVs return"); once the EV left ASSUMED_BAD by itself (the
  core's own probes) the controller stops. Interval and count: ours.

The protocol itself (the request table, what each request and answer does,
timers, validation of what arrives) is `mrc.core.ctlproto`, the same functions
`mrc.ctl` drives, which also build the packets (`ctlproto.fill_packet`); this
module is the glue: it finds a host's QPs, routes the packets, wakes endpoints
and counts. Requests wait in one table for
the fabric (``mrc_ctl``, `ctlproto.REQ` rows from a free list; ``mrc_host``,
`ctlproto.HOST` rows): per host a FIFO of rows to send and a list of rows
waiting for an answer or a timer. A full table drops the new request and
counts it (``controller_requests_dropped``); a request that fails the core's
checks is dropped unanswered.
"""
from __future__ import annotations

import numpy as np

from mrc.core import ctlproto as CP
from mrc.core import evset
from mrc.emulator._jit import njit
from mrc.emulator import state as ST
from mrc.emulator.pool import pkt_new, pkt_route_ar, pkt_route_ecmp, pkt_route_srv6
from mrc.emulator.sched import wake
from mrc.fabric.paths import ev_carrier
from mrc.wire.constants import OP_MRC_ENDPOINT_REQUEST, OP_MRC_ENDPOINT_RESPONSE

CQ = CP.REQ  # the tables' dtypes are the core's
HC = CP.HOST

# the mutable scalars of the MRC transport (T.mrc_s): the core's (`ctlproto.S_*`) and the EV-log count
MS_FREE_N = CP.S_FREE_N
MS_EVLOG_N = 1
MS_REQ_SEQ = CP.S_REQ_SEQ
MS_STAMP = CP.S_STAMP
N_MS = 8


@njit(inline="always")
def ctl_ep(T, h):
    return T.mrc_p[0]["n_qp"] + h


@njit(inline="always")
def _counted(E, r):
    if r == CP.DROPPED:
        E.ctr[ST.C_CTL_DROPPED] += 1


# ---------------------------------------------------------------- requests


@njit
def port_status_changed(E, F, T, h, now):
    """Host h's NIC ports changed (``mrc_host.local_ports`` already updated): apply locally, tell peers."""
    core = T.core
    n_qp = T.mrc_p[0]["n_qp"]
    mask = np.int64(T.mrc_host[h]["local_ports"])
    T.mrc_s[MS_STAMP] += 1
    stamp = T.mrc_s[MS_STAMP]
    for k in range(E.host_ep_start[h], E.host_ep_start[h + 1]):
        ep = np.int64(E.host_ep[k])
        if ep >= n_qp:
            E.ep[ep]["planes"] = mask
            wake(E, ep)
            continue
        if not CP.apply_port_status(core, ep, np.uint32(mask), False, now):
            continue  # not started: it takes the current ports when it starts
        E.ep[ep]["planes"] = evset.plane_mask(core, ep)
        wake(E, ep)
        f = E.ep[ep]["flow"]
        if f < 0 or (E.flow[f]["status"] != ST.FLOW_RUNNING and E.flow[f]["conn"] < 0):
            continue  # a flow's own QP pair that ended has no peer to tell; a connection's stays connected
        d = E.ep[E.ep[ep]["peer"]]["host"]
        if T.mrc_host[d]["seen"] == stamp:
            continue
        T.mrc_host[d]["seen"] = stamp
        _counted(E, CP.request_psu(T.mrc_ctl, T.mrc_host, T.mrc_free, T.mrc_s, h, d, ep, mask))


@njit
def probe_ev(E, T, qp, slot, now):
    """EV `slot` of QP `qp` became ASSUMED_BAD: its host's controller will probe it (if enabled)."""
    h = E.ep[qp]["host"]
    r = CP.request_probe(T.mrc_ctl, T.mrc_host, T.mrc_free, T.mrc_s, T.core, h, E.ep[E.ep[qp]["peer"]]["host"],
                         qp, slot, now, T.mrc_p[0]["ctl_probe"])
    _counted(E, r)
    if r >= 0:
        wake(E, ctl_ep(T, h))


# ---------------------------------------------------------------- the controller endpoint


@njit
def ready(T, h):
    return CP.ready(T.mrc_host, h)


@njit
def deadline(T, h):
    """Host controller h's earliest timer (NEVER: none)."""
    return T.mrc_host[h]["deadline"]


@njit(inline="always")
def route_ev(E, F, fwd, pkt, src, dst, ev, key):
    """Route packet `pkt` of an MRC endpoint by its EV: SRv6 (the EV's carrier, `mrc.fabric.paths.ev_carrier`;
    the switches shift and look up), hashed entropy (``entropy = "hashed"``: the EV rides in the UDP source port
    and flow label as in the STEV mode, `mrc.wire.ev`, and every switch hashes them with its own seed, ECMP per
    hop, `forward`), or adaptive routing (`ar`; `key` spreads the ECMP repair's tie-breaks)."""
    if fwd == ST.FWD_SRV6:
        hi, lo = ev_carrier(F, src, dst, ev)
        pkt_route_srv6(E, pkt, hi, lo)
    elif fwd == ST.FWD_ECMP:
        e = np.int64(ev)
        pkt_route_ecmp(E, pkt, (e >> 16) & 0xFFFF, e & 0xFFFF)
    else:
        pkt_route_ar(E, pkt, 0xC000 | (key & 0x3FFF), 0)


@njit
def tx_next(E, F, T, ep, now, port, pkt):
    """Host controller `ep` may send on NIC port `port`: its first queued request or answer that can go."""
    C = T.mrc_ctl
    mp = T.mrc_p[0]
    h = ep - mp["n_qp"]
    plane = port - h * E.cfg[0]["n_planes"]
    fe = F.ev[0]
    r, ev = CP.pick(C, T.mrc_host, T.mrc_free, T.mrc_s, T.core, h, plane, now, fe["shift"], fe["width"])
    if r < 0:
        return 0
    kind = C[r]["kind"]
    d = C[r]["peer"]
    CP.fill_packet(C, T.mrc_host, T.core, h, r, plane, ev, now, mp["dscp_ctrl"], E.hdr, pkt)
    hd = E.hdr[pkt]
    pkt_new(E, pkt, h, d, ctl_ep(T, d), -1, plane, T.mrc_hdr[hd["opcode"]], ST.CLS_CTRL, ST.ECN_NOT_ECT, hd["dscp"], now)
    route_ev(E, F, mp["fwd"], pkt, h, d, ev, h)
    CP.sent(C, T.mrc_host, T.mrc_free, T.mrc_s, h, r, now, mp["ctl_timeout"], mp["ctl_probe"])
    if kind == CP.PSU_REQUEST:
        E.ctr[ST.C_PSU_SENT] += 1
    elif kind == CP.PROBE_REQUEST:
        E.ctr[ST.C_EP_PROBES] += 1
    return 1


@njit
def on_rx(E, F, T, ep, pkt, now):
    """An endpoint request or response arrived for host controller `ep`."""
    core = T.core
    mp = T.mrc_p[0]
    h = ep - mp["n_qp"]
    hd = E.hdr[pkt]
    src = E.pkt[pkt]["src"]
    op = hd["ep_op"]
    n_planes = E.cfg[0]["n_planes"]
    if hd["opcode"] == OP_MRC_ENDPOINT_REQUEST:
        if CP.check_request(T.mrc_host, h, n_planes, op, hd["port_status_mask"], hd["port"]) != 0:
            return  # refused before any state changed
        if op == CP.EP_PSU:
            mask = np.int64(hd["port_status_mask"])
            E.ctr[ST.C_PSU_APPLIED] += 1
            n_qp = mp["n_qp"]
            for k in range(E.host_ep_start[h], E.host_ep_start[h + 1]):
                qp = np.int64(E.host_ep[k])
                if qp >= n_qp or E.ep[E.ep[qp]["peer"]]["host"] != src:
                    continue
                if not CP.apply_port_status(core, qp, np.uint32(mask), True, now):
                    continue
                E.ep[qp]["planes"] = evset.plane_mask(core, qp)
                wake(E, qp)
        _counted(E, CP.respond(T.mrc_ctl, T.mrc_host, T.mrc_free, T.mrc_s, h, src, op, hd["req_id"], np.int64(hd["ev"]),
                               hd["port"], hd["dscp"], hd["tx_timestamp"], now))
        return
    if hd["opcode"] != OP_MRC_ENDPOINT_RESPONSE:
        return
    r, out = CP.on_response(T.mrc_ctl, T.mrc_host, T.mrc_free, T.mrc_s, core, h, src, op, hd["req_id"],
                            mp["ctl_probe_ok"], now)
    if out == CP.RSP_PROBE_COUNTED or out == CP.RSP_PROBE_DONE or out == CP.RSP_RESTORED:
        E.ctr[ST.C_EP_PROBE_ANSWERS] += 1
    if out == CP.RSP_RESTORED:
        E.ctr[ST.C_CTL_RESTORED] += 1
        wake(E, T.mrc_ctl[r]["qp"])


@njit
def on_timer(E, F, T, ep, now):
    """Host controller `ep`: resend unanswered updates, probe again, drop what is over."""
    CP.on_timer(T.mrc_ctl, T.mrc_host, T.mrc_free, T.mrc_s, T.core, ep - T.mrc_p[0]["n_qp"], now,
                T.mrc_p[0]["ctl_retries"])
