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

Requests wait in one table (`CQ` rows from a free list): per host a FIFO of
rows to send and a list of rows waiting for an answer or a timer. A full table
drops the new request and counts it (``controller_requests_dropped``).
"""
from __future__ import annotations

import numpy as np

from mrc.core import dispatch as cdisp
from mrc.core import dtypes as D
from mrc.core import evset
from mrc.emulator._jit import njit
from mrc.emulator import state as ST
from mrc.emulator.pool import pkt_new, pkt_route_ar, pkt_route_srv6
from mrc.emulator.sched import wake
from mrc.fabric.paths import ev_carrier
from mrc.wire.constants import ENDPOINT_QPN, OP_MRC_ENDPOINT_REQUEST, OP_MRC_ENDPOINT_RESPONSE, EndpointOp

K_PSU_REQ = 1
K_PSU_RSP = 2
K_EVP_REQ = 3
K_EVP_RSP = 4

CQ_FREE = 0
CQ_QUEUED = 1
CQ_WAIT = 2

EP_PSU = int(EndpointOp.PORT_STATUS_UPDATE)
EP_PROBE = int(EndpointOp.EV_PROBE)

CQ = np.dtype([
    ("t_sent", np.int64),
    ("deadline", np.int64),
    ("ev", np.int64),
    ("next", np.int32),  # next row in its host's queue or waiting list (-1)
    ("host", np.int32),  # the controller that owns the row
    ("peer", np.int32),  # the other host
    ("qp", np.int32),  # PSU: a QP with the peer (its EVs carry the request); EV probe: the QP whose EV it is
    ("slot", np.int32),  # EV probe: the EV's slot in that QP
    ("req_id", np.int32),
    ("mask", np.int32),  # port_status_mask
    ("tries", np.int16),
    ("ok", np.int16),  # EV probe: answers in a row
    ("kind", np.int8),
    ("state", np.int8),
    ("plane", np.int8),
    ("answered", np.int8),
], align=True)

HC = np.dtype([  # per host
    ("deadline", np.int64),  # earliest deadline of its waiting rows (NEVER)
    ("local_ports", np.int32),  # bit p: NIC port p up
    ("q_head", np.int32),
    ("q_tail", np.int32),
    ("w_head", np.int32),
    ("seen", np.int32),  # dedupe stamp (peers of one update)
], align=True)

# the mutable scalars of the MRC transport (T.mrc_s)
MS_FREE_N = 0  # free CQ rows on the stack
MS_EVLOG_N = 1
MS_REQ_SEQ = 2
MS_STAMP = 3
N_MS = 8


# ---------------------------------------------------------------- the request table


@njit
def _alloc(E, T):
    s = T.mrc_s
    n = s[MS_FREE_N]
    if n <= 0:
        E.ctr[ST.C_CTL_DROPPED] += 1
        return -1
    s[MS_FREE_N] = n - 1
    r = T.mrc_free[n - 1]
    T.mrc_ctl[r]["next"] = -1
    T.mrc_ctl[r]["tries"] = 0
    T.mrc_ctl[r]["ok"] = 0
    T.mrc_ctl[r]["answered"] = 0
    return r


@njit
def _release(T, r):
    T.mrc_ctl[r]["state"] = CQ_FREE
    n = T.mrc_s[MS_FREE_N]
    T.mrc_free[n] = r
    T.mrc_s[MS_FREE_N] = n + 1


@njit
def _enqueue(T, h, r):
    C = T.mrc_ctl
    H = T.mrc_host
    C[r]["state"] = CQ_QUEUED
    C[r]["next"] = -1
    if H[h]["q_head"] < 0:
        H[h]["q_head"] = r
    else:
        C[H[h]["q_tail"]]["next"] = r
    H[h]["q_tail"] = r


@njit
def _unlink_queued(T, h, r, prev):
    C = T.mrc_ctl
    H = T.mrc_host
    nxt = C[r]["next"]
    if prev < 0:
        H[h]["q_head"] = nxt
    else:
        C[prev]["next"] = nxt
    if H[h]["q_tail"] == r:
        H[h]["q_tail"] = prev


@njit
def _wait(T, h, r, deadline):
    C = T.mrc_ctl
    C[r]["state"] = CQ_WAIT
    C[r]["deadline"] = deadline
    C[r]["next"] = T.mrc_host[h]["w_head"]
    T.mrc_host[h]["w_head"] = r
    if deadline < T.mrc_host[h]["deadline"]:
        T.mrc_host[h]["deadline"] = deadline


@njit
def _unlink_waiting(T, h, r):
    C = T.mrc_ctl
    prev = -1
    k = T.mrc_host[h]["w_head"]
    while k >= 0:
        if k == r:
            if prev < 0:
                T.mrc_host[h]["w_head"] = C[k]["next"]
            else:
                C[prev]["next"] = C[k]["next"]
            return
        prev = k
        k = C[k]["next"]


@njit
def _recompute_deadline(T, h):
    C = T.mrc_ctl
    d = ST.NEVER
    k = T.mrc_host[h]["w_head"]
    while k >= 0:
        if C[k]["deadline"] < d:
            d = C[k]["deadline"]
        k = C[k]["next"]
    T.mrc_host[h]["deadline"] = d


@njit(inline="always")
def ctl_ep(T, h):
    return T.mrc_p[0]["n_qp"] + h


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
        if core.qp[ep]["state"] != D.QPS_RTS:
            continue  # not started: it takes the current ports when it starts
        cdisp.set_local_ports(core, ep, np.uint32(mask), now)
        E.ep[ep]["planes"] = evset.plane_mask(core, ep)
        wake(E, ep)
        f = E.ep[ep]["flow"]
        if f < 0 or (E.flow[f]["status"] != ST.FLOW_RUNNING and E.flow[f]["conn"] < 0):
            continue  # a flow's own QP pair that ended has no peer to tell; a connection's stays connected
        d = E.ep[E.ep[ep]["peer"]]["host"]
        if T.mrc_host[d]["seen"] == stamp:
            continue
        T.mrc_host[d]["seen"] = stamp
        _request_psu(E, T, h, d, ep, mask, now)


@njit
def _request_psu(E, T, h, d, qp, mask, now):
    C = T.mrc_ctl
    # a pending update to the same peer is replaced by this one
    k = T.mrc_host[h]["q_head"]
    while k >= 0:
        if C[k]["kind"] == K_PSU_REQ and C[k]["peer"] == d:
            C[k]["mask"] = mask
            C[k]["tries"] = 0
            return
        k = C[k]["next"]
    k = T.mrc_host[h]["w_head"]
    while k >= 0:
        if C[k]["kind"] == K_PSU_REQ and C[k]["peer"] == d:
            _unlink_waiting(T, h, k)
            _recompute_deadline(T, h)
            C[k]["mask"] = mask
            C[k]["tries"] = 0
            _enqueue(T, h, k)
            return
        k = C[k]["next"]
    r = _alloc(E, T)
    if r < 0:
        return
    C[r]["kind"] = K_PSU_REQ
    C[r]["host"] = h
    C[r]["peer"] = d
    C[r]["qp"] = qp
    C[r]["mask"] = mask
    C[r]["req_id"] = T.mrc_s[MS_REQ_SEQ] & 0xFFFF
    T.mrc_s[MS_REQ_SEQ] += 1
    _enqueue(T, h, r)


@njit
def probe_ev(E, T, qp, slot, now):
    """EV `slot` of QP `qp` became ASSUMED_BAD: its host's controller will probe it (if enabled)."""
    interval = T.mrc_p[0]["ctl_probe"]
    if interval <= 0:
        return
    C = T.mrc_ctl
    h = E.ep[qp]["host"]
    k = T.mrc_host[h]["w_head"]
    while k >= 0:
        if C[k]["kind"] == K_EVP_REQ and C[k]["qp"] == qp and C[k]["slot"] == slot:
            return
        k = C[k]["next"]
    k = T.mrc_host[h]["q_head"]
    while k >= 0:
        if C[k]["kind"] == K_EVP_REQ and C[k]["qp"] == qp and C[k]["slot"] == slot:
            return
        k = C[k]["next"]
    r = _alloc(E, T)
    if r < 0:
        return
    core = T.core
    e = core.ev[core.qp[qp]["ev_row"], slot]
    C[r]["kind"] = K_EVP_REQ
    C[r]["host"] = h
    C[r]["peer"] = E.ep[E.ep[qp]["peer"]]["host"]
    C[r]["qp"] = qp
    C[r]["slot"] = slot
    C[r]["ev"] = np.int64(e["ev"])
    C[r]["plane"] = e["plane"]
    C[r]["req_id"] = T.mrc_s[MS_REQ_SEQ] & 0xFFFF
    T.mrc_s[MS_REQ_SEQ] += 1
    C[r]["answered"] = 1  # nothing sent yet: the first probe goes one interval from now
    _wait(T, h, r, now + interval)
    wake(E, ctl_ep(T, h))


@njit
def _respond(E, T, h, src, kind, req_id, ev, plane, now):
    r = _alloc(E, T)
    if r < 0:
        return
    C = T.mrc_ctl
    C[r]["kind"] = kind
    C[r]["host"] = h
    C[r]["peer"] = src
    C[r]["qp"] = -1
    C[r]["req_id"] = req_id
    C[r]["ev"] = ev
    C[r]["plane"] = plane
    C[r]["mask"] = T.mrc_host[h]["local_ports"]
    _enqueue(T, h, r)


# ---------------------------------------------------------------- the controller endpoint


@njit
def _psu_ev(T, qp, plane):
    """A usable EV of `qp` on `plane` (the peer's port up too), or -1."""
    core = T.core
    if (evset.plane_mask(core, qp) >> plane) & 1 == 0:
        return np.int64(-1)
    q = core.qp[qp]
    row = core.ev[q["ev_row"]]
    for k in range(np.int64(q["plane_start"][plane]), np.int64(q["plane_start"][plane + 1])):
        if evset.is_usable(row[k]["state"]):
            return np.int64(row[k]["ev"])
    return np.int64(-1)


@njit
def _on_plane(F, ev, plane):
    """The EV with its plane field set to `plane` (the same switches in that plane)."""
    f = F.ev[0]
    m = ((np.int64(1) << f["width"]) - 1) << f["shift"]
    return (np.int64(ev) & ~m) | (np.int64(plane) << f["shift"])


@njit
def ready(T, h):
    return T.mrc_host[h]["q_head"] >= 0


@njit
def tx_next(E, F, T, ep, now, q, i):
    """Host controller `ep` may send on NIC port q: its first queued request or answer that can go."""
    C = T.mrc_ctl
    mp = T.mrc_p[0]
    h = ep - mp["n_qp"]
    NP = E.cfg[0]["n_planes"]
    plane = q - h * NP
    local = np.int64(T.mrc_host[h]["local_ports"])
    prev = -1
    r = T.mrc_host[h]["q_head"]
    while r >= 0:
        kind = C[r]["kind"]
        ev = np.int64(-1)
        if kind == K_PSU_REQ:
            ev = _psu_ev(T, C[r]["qp"], plane)
        elif kind == K_EVP_REQ:
            if C[r]["plane"] == plane:
                ev = C[r]["ev"]
        elif C[r]["plane"] == plane or ((local >> C[r]["plane"]) & 1) == 0:
            ev = _on_plane(F, C[r]["ev"], plane)  # an answer: on the request's EV, or its plane's twin here
        if ev >= 0:
            break
        prev = r
        r = C[r]["next"]
    if r < 0:
        return 0
    _unlink_queued(T, h, r, prev)
    d = C[r]["peer"]
    hd = E.hdr[i]
    E.hdr[i] = T.core.pkt0[0]
    req = kind == K_PSU_REQ or kind == K_EVP_REQ
    hd["opcode"] = OP_MRC_ENDPOINT_REQUEST if req else OP_MRC_ENDPOINT_RESPONSE
    hd["dqpn"] = ENDPOINT_QPN
    hd["pkey"] = 0xFFFF
    hd["ep_op"] = EP_PSU if (kind == K_PSU_REQ or kind == K_PSU_RSP) else EP_PROBE
    hd["req_id"] = C[r]["req_id"]
    hd["port_status_mask"] = C[r]["mask"] if (kind == K_PSU_REQ or kind == K_PSU_RSP) else local
    hd["ts"] = 1
    hd["tx_timestamp"] = (now // 8000) & 0xFFFF
    hd["ev"] = ev
    size = T.mrc_hdr[hd["opcode"]]
    pkt_new(E, i, h, d, ctl_ep(T, d), -1, plane, size, ST.CLS_CTRL, ST.ECN_NOT_ECT, mp["dscp_ctrl"], now)
    if mp["fwd"] == ST.FWD_SRV6:
        hi, lo = ev_carrier(F, h, d, ev)
        pkt_route_srv6(E, i, hi, lo)
    else:
        pkt_route_ar(E, i, 0xC000 | (h & 0x3FFF), 0)
    if kind == K_PSU_REQ:
        E.ctr[ST.C_PSU_SENT] += 1
        C[r]["tries"] += 1
        C[r]["t_sent"] = now
        _wait(T, h, r, now + mp["ctl_timeout"])
    elif kind == K_EVP_REQ:
        E.ctr[ST.C_EP_PROBES] += 1
        C[r]["t_sent"] = now
        C[r]["answered"] = 0
        _wait(T, h, r, now + mp["ctl_probe"])
    else:
        _release(T, r)
    return 1


@njit
def on_rx(E, F, T, ep, i, now):
    """An endpoint request or response arrived for host controller `ep`."""
    core = T.core
    mp = T.mrc_p[0]
    h = ep - mp["n_qp"]
    hd = E.hdr[i]
    src = E.pkt[i]["src"]
    op = hd["ep_op"]
    if hd["opcode"] == OP_MRC_ENDPOINT_REQUEST:
        if op == EP_PSU:
            mask = np.int64(hd["port_status_mask"]) & ((np.int64(1) << E.cfg[0]["n_planes"]) - 1)
            E.ctr[ST.C_PSU_APPLIED] += 1
            n_qp = mp["n_qp"]
            for k in range(E.host_ep_start[h], E.host_ep_start[h + 1]):
                qp = np.int64(E.host_ep[k])
                if qp >= n_qp or core.qp[qp]["state"] != D.QPS_RTS:
                    continue
                if E.ep[E.ep[qp]["peer"]]["host"] != src:
                    continue
                cdisp.set_remote_ports(core, qp, np.uint32(mask), now)
                E.ep[qp]["planes"] = evset.plane_mask(core, qp)
                wake(E, qp)
            _respond(E, T, h, src, K_PSU_RSP, hd["req_id"], np.int64(hd["ev"]), hd["port"], now)
        elif op == EP_PROBE:
            _respond(E, T, h, src, K_EVP_RSP, hd["req_id"], np.int64(hd["ev"]), hd["port"], now)
        return
    if hd["opcode"] != OP_MRC_ENDPOINT_RESPONSE:
        return
    C = T.mrc_ctl
    want = K_PSU_REQ if op == EP_PSU else K_EVP_REQ
    r = T.mrc_host[h]["w_head"]
    while r >= 0:
        if C[r]["kind"] == want and C[r]["peer"] == src and C[r]["req_id"] == hd["req_id"]:
            break
        r = C[r]["next"]
    if r < 0:
        return  # late or duplicate answer
    if want == K_PSU_REQ:
        _unlink_waiting(T, h, r)
        _release(T, r)
        _recompute_deadline(T, h)
        return
    E.ctr[ST.C_EP_PROBE_ANSWERS] += 1
    if C[r]["answered"] == 0:
        C[r]["answered"] = 1
        C[r]["ok"] += 1
    qp = C[r]["qp"]
    slot = C[r]["slot"]
    st = core.ev[core.qp[qp]["ev_row"], slot]["state"]
    done = st != D.EV_ASSUMED_BAD or core.qp[qp]["state"] != D.QPS_RTS
    if not done and C[r]["ok"] >= mp["ctl_probe_ok"]:
        evset.ev_input(core, qp, slot, D.EVI_CTL_GOOD, now)
        E.ctr[ST.C_CTL_RESTORED] += 1
        wake(E, qp)
        done = True
    if done:
        _unlink_waiting(T, h, r)
        _release(T, r)
        _recompute_deadline(T, h)


@njit
def on_timer(E, F, T, ep, now):
    """Host controller `ep`: resend unanswered updates, probe again, drop what is over."""
    core = T.core
    mp = T.mrc_p[0]
    h = ep - mp["n_qp"]
    C = T.mrc_ctl
    r = T.mrc_host[h]["w_head"]
    while r >= 0:
        nxt = C[r]["next"]
        if C[r]["deadline"] <= now:
            _unlink_waiting(T, h, r)
            if C[r]["kind"] == K_PSU_REQ:
                if C[r]["tries"] > mp["ctl_retries"]:
                    _release(T, r)
                else:
                    _enqueue(T, h, r)
            else:
                qp = C[r]["qp"]
                st = core.ev[core.qp[qp]["ev_row"], C[r]["slot"]]["state"]
                if st != D.EV_ASSUMED_BAD or core.qp[qp]["state"] != D.QPS_RTS:
                    _release(T, r)
                else:
                    if C[r]["answered"] == 0:
                        C[r]["ok"] = 0
                    _enqueue(T, h, r)
        r = nxt
    _recompute_deadline(T, h)
