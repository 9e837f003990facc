"""The controller's endpoint protocol: requests a controller sends to its peers' controllers, their answers.

One controller per host (OCP ``mrc_ctl.h``) talks to the controllers of its peers with endpoint
requests on the reserved QP 2 (ENDPOINT_REQUEST / ENDPOINT_RESPONSE, ERTH / EETH; MRC notes
2.3, 2.4, 2.7; docs/glossary.md). This module is that protocol once, for the library (`mrc.ctl`, one host row) and
the emulator (`mrc.emulator.transports.mrcctl`, one host row per host of the fabric). It reads no
clock and does no I/O: it keeps the request table, decides, and builds each packet that leaves
(`fill_packet`) and applies a port status to a QP (`apply_port_status`); the caller keeps time,
schedules, routes the packets and hands over what arrives.

The tables are `mrc.core.ctltable`'s (its names are re-exported here): ``C`` request rows (`REQ`),
each FREE, QUEUED in its host's FIFO to send or WAITING for an answer or a timer; ``H`` one row per
host (`HOST`); ``free`` the free stack; ``s`` the scalars. The table is bounded: a full table
refuses the new row (`DROPPED`) and the caller counts it.

Kinds of row and what happens to them (MRC: the spec's public text; UET: UET 1.0's; ours: an
extension, parameters named):

- PORT_STATUS_UPDATE request (`request_psu`; MRC notes 2.7: a ``port_status_mask`` with one bit
  per local port; OAI: a controller "immediately tells peers"): one per peer; a newer update
  replaces a pending one (ours). It leaves on the first usable EV of a plane both ends have up
  (`pick`) and waits ``timeout``; unanswered it is sent again, at most ``retries`` times (ours).
- EV_PROBE request of an EV that became ASSUMED_BAD (`request_probe`, ours: MANI says EV probes
  "verify a repaired link before its EVs return", the schedule is not public): every
  ``interval`` on that EV; after ``successes`` answers in a row, an EV still ASSUMED_BAD
  goes back to GOOD (`mrc.core.evset.ev_input` with EVI_CTL_GOOD, as MODIFY_EV_STATE GOOD does).
  Once the EV left ASSUMED_BAD by itself, or its QP left RTS, the row is dropped.
- An application's request (`request_user`; ``mrc_ctl.h`` endpoint batch): sent once on the
  EV and port it names, matched by (op, peer, req_id), dropped at its deadline.
- Answers (`respond`; MRC notes 2.4: the answer returns to the sender, echoing op, req_id and the
  timestamp, `fill_packet`: the requester can time the round trip from the answer alone): sent on
  the request's plane, or, when that local port is down, on the same EV's
  twin in a plane that is up (ours; needs the EV's plane field, ``ev_plane_width`` > 0). An answer
  reports how long it waited before it left (`service_time_ns`: EETH ``svc_time``, ns), and the
  requester takes that off its RTT (`adjusted_rtt_ns`; ``mrc_ctl.h`` ``mrc_ctl_ep_rsp.adj_svc_time``:
  "Non-zero if rtt has been adjusted for responder service time").

Hostile input: `check_request` / `check_response` validate what a packet says before any state
changes (op, port status mask, port; an update must report up the port it arrived on); a response
that matches no waiting row (late, duplicate, forged req_id, wrong sender) changes nothing. An update
that passes is still only a claim: it never takes a QP's last plane (`mrc.core.evset.plane_mask`,
``psu_floor``), and a QP that cannot send keeps its retransmission timer (`mrc.core.requester.hold_rto`),
so no sequence of updates leaves a QP with work and no deadline (docs/protocol.md "Liveness").
"""
from __future__ import annotations


from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core import ctltable as TB
from mrc.core import dispatch, evset
from mrc.core.rotation import plane_slots
from mrc.core.ctltable import (  # noqa: F401  (the table's names, re-exported for the callers)
    HOST, N_S, R_FREE, R_QUEUED, R_WAITING, REQ, S_FREE_N, S_REQ_SEQ, S_STAMP, allocate, ready, release,
)
from mrc.wire.constants import ENDPOINT_QPN, OP_MRC_ENDPOINT_REQUEST, OP_MRC_ENDPOINT_RESPONSE, EndpointOp

# kinds of row (``kind``): what the row sends
PSU_REQUEST = 1
PSU_RESPONSE = 2
PROBE_REQUEST = 3
PROBE_RESPONSE = 4

F_USER = 1  # flags: an application's request (`request_user`)

EP_PSU = int(EndpointOp.PORT_STATUS_UPDATE)
EP_PROBE = int(EndpointOp.EV_PROBE)

# results of the request functions
DROPPED = -1  # the table is full: nothing queued (the caller counts it)
NOTHING = -2  # already pending: nothing new

# `check_request` / `check_response`: 0 or the reason a packet is refused
BAD_OP = 1
BAD_MASK = 2
BAD_PORT = 3

# `on_response` outcomes
RSP_UNMATCHED = 0  # late, duplicate or forged: nothing changed
RSP_PSU_DONE = 1
RSP_PROBE_COUNTED = 2  # an EV probe answered; the EV is still probed
RSP_PROBE_DONE = 3  # answered; the EV left ASSUMED_BAD by itself (or its QP left RTS): probing stops
RSP_RESTORED = 4  # answered; enough answers in a row: the EV went back to GOOD
RSP_USER = 5  # an application's request answered (its row's t_sent gives the RTT)

# ---------------------------------------------------------------- events in: what the controller is asked to send


@njit_core
def request_psu(C, H, free, s, h, d, qp, mask):
    """Host h tells peer host d its ports (``mask``), on the EVs of QP `qp` (MRC notes 2.7; OAI).

    A pending update to d (queued or waiting) is replaced: new mask, tries from zero (ours).
    Returns the row, or DROPPED when the table is full."""
    k = H[h]["q_head"]
    while k >= 0:
        if C[k]["kind"] == PSU_REQUEST and C[k]["peer"] == d and C[k]["flags"] == 0:
            C[k]["mask"] = mask
            C[k]["tries"] = 0
            return i64(k)
        k = C[k]["next"]
    k = H[h]["w_head"]
    while k >= 0:
        if C[k]["kind"] == PSU_REQUEST and C[k]["peer"] == d and C[k]["flags"] == 0:
            TB.unlink_waiting(C, H, h, k)
            TB.recompute_deadline(C, H, h)
            C[k]["mask"] = mask
            C[k]["tries"] = 0
            TB.enqueue(C, H, h, k)
            return i64(k)
        k = C[k]["next"]
    r = i64(TB.alloc(C, free, s))
    if r < 0:
        return DROPPED
    C[r]["kind"] = PSU_REQUEST
    C[r]["host"] = h
    C[r]["peer"] = d
    C[r]["qp"] = qp
    C[r]["mask"] = mask
    C[r]["req_id"] = TB.next_req_id(s)
    TB.enqueue(C, H, h, r)
    return r


@njit_core
def request_probe(C, H, free, s, core, h, d, qp, slot, now, interval):
    """EV `slot` of QP `qp` (host h, peer host d) became ASSUMED_BAD: probe it every `interval` (ours).

    The first probe goes one interval from now. Returns the row, NOTHING when that EV is already
    being probed or probing is off (``interval`` <= 0), DROPPED when the table is full."""
    if interval <= 0:
        return NOTHING
    k = H[h]["w_head"]
    while k >= 0:
        if C[k]["kind"] == PROBE_REQUEST and C[k]["qp"] == qp and C[k]["slot"] == slot and C[k]["flags"] == 0:
            return NOTHING
        k = C[k]["next"]
    k = H[h]["q_head"]
    while k >= 0:
        if C[k]["kind"] == PROBE_REQUEST and C[k]["qp"] == qp and C[k]["slot"] == slot and C[k]["flags"] == 0:
            return NOTHING
        k = C[k]["next"]
    r = i64(TB.alloc(C, free, s))
    if r < 0:
        return DROPPED
    e = core.ev[core.qp[qp]["ev_row"], slot]
    C[r]["kind"] = PROBE_REQUEST
    C[r]["host"] = h
    C[r]["peer"] = d
    C[r]["qp"] = qp
    C[r]["slot"] = slot
    C[r]["ev"] = i64(e["ev"])
    C[r]["plane"] = e["plane"]
    C[r]["req_id"] = TB.next_req_id(s)
    C[r]["answered"] = 1  # nothing sent yet: no answer is missing
    TB.wait(C, H, h, r, now + interval)
    return r


@njit_core
def request_user(C, H, free, s, h, d, op, req_id, ev, plane, mask, tc, deadline):
    """An application's endpoint request (``mrc_ctl.h`` endpoint batch; MRC notes 2.4, 2.7): `op` to
    peer d with `req_id`, on EV `ev` of port `plane`, dropped at `deadline`. DROPPED when full."""
    r = i64(TB.alloc(C, free, s))
    if r < 0:
        return DROPPED
    C[r]["kind"] = PSU_REQUEST if op == EP_PSU else PROBE_REQUEST
    C[r]["flags"] = F_USER
    C[r]["host"] = h
    C[r]["peer"] = d
    C[r]["qp"] = -1
    C[r]["slot"] = -1
    C[r]["ev"] = ev
    C[r]["plane"] = plane
    C[r]["mask"] = mask
    C[r]["req_id"] = req_id
    C[r]["tc"] = tc
    C[r]["deadline"] = deadline
    TB.enqueue(C, H, h, r)
    return r


@njit_core
def check_request(H, h, n_ports, op, mask, port):
    """0 when a peer's ENDPOINT_REQUEST that arrived on local port `port` may be acted on, else the reason
    (BAD_*): an op other than PORT_STATUS_UPDATE / EV_PROBE, a port outside [0, n_ports), a
    ``port_status_mask`` with bits beyond the ports, or one that says the port it came through is down
    (plane p joins port p of every host: an update that arrived on plane p left the sender's port p, so
    a mask without bit p contradicts itself; a true update always leaves on a port it reports up, `pick`).
    Checked before any state changes (ours: the notes do not say)."""
    if op != EP_PSU and op != EP_PROBE:
        return BAD_OP
    if port < 0 or port >= n_ports:
        return BAD_PORT
    if op == EP_PSU and ((i64(mask) >> n_ports) != 0 or (i64(mask) >> port) & 1 == 0):
        return BAD_MASK
    return 0


@njit_core
def respond(C, H, free, s, h, src, op, req_id, ev, plane, tc, echo_ts, now):
    """Queue host h's answer to peer src's request, which arrived at `now` (MRC notes 2.4: op, req_id and
    timestamp echoed; the answer carries h's ports). Validate first (`check_request`). Returns the row
    or DROPPED."""
    r = i64(TB.alloc(C, free, s))
    if r < 0:
        return DROPPED
    C[r]["kind"] = PSU_RESPONSE if op == EP_PSU else PROBE_RESPONSE
    C[r]["host"] = h
    C[r]["peer"] = src
    C[r]["qp"] = -1
    C[r]["req_id"] = req_id
    C[r]["ev"] = ev
    C[r]["plane"] = plane
    C[r]["mask"] = H[h]["local_ports"]
    C[r]["tc"] = tc
    C[r]["echo_ts"] = echo_ts
    C[r]["t_rx"] = now
    TB.enqueue(C, H, h, r)
    return r


@njit_core
def service_time_ns(C, r, now):
    """The answer in row r (from `pick`) leaves at `now`: how long it waited since its request arrived, in
    ns (EETH ``svc_time``, 32 bits: at most 2^32 - 1 ns)."""
    t = (now - C[r]["t_rx"]) // 1000
    if t < 0:
        return i64(0)
    return t if t < 0xFFFFFFFF else i64(0xFFFFFFFF)


def adjusted_rtt_ns(rtt_ns: int, svc_time_ns: int) -> tuple[int, bool]:
    """An endpoint request's RTT (ns) less the responder's reported service time, and whether it was adjusted
    (``mrc_ctl_ep_rsp.rtt`` / ``adj_svc_time``). A peer that reports none (0) leaves the RTT as measured; a
    service time longer than the round trip cannot be true and is ignored (the RTT is not adjusted)."""
    if 0 < svc_time_ns <= rtt_ns:
        return rtt_ns - svc_time_ns, True
    return rtt_ns, False


# ---------------------------------------------------------------- events out: what goes on the wire

# the unit of an endpoint request's tx_timestamp (ERTH: 16 bits, wraps at 524 us): the QPs' TSETH unit
# (`mrc.core.setup.QP_DEFAULTS` ``ts_unit_ps``, 8 ns; a test keeps them equal)
TS_UNIT_PS = 8000


@njit_core
def fill_packet(C, H, core, h, r, plane, ev, now, dscp_ctrl, out, k):
    """Row r of host h (from `pick`: it leaves on `plane` with EV `ev` at `now`) as an endpoint packet in
    ``out[k]`` (a `mrc.wire.records.PKT` row), for every user of this module alike; the caller routes it
    and then calls `sent`.

    A request is an ENDPOINT_REQUEST (ERTH) stamped with its sender's time (``tx_timestamp``, `TS_UNIT_PS`,
    16 bits; BTH ts set); an answer an ENDPOINT_RESPONSE (EETH) that echoes the request's stamp (MRC
    notes 2.4: op, req_id and the timestamp come back, so a requester can time the round trip from the
    answer alone; `mrc.ctl` times its applications' requests from its own send times, exact past the
    16-bit wrap, `adjusted_rtt_ns`) and says how long it waited (``svc_time``, `service_time_ns`). The
    ``port_status_mask``: an update's, or an answer's (its host's ports when it was queued); an EV probe
    request carries its host's ports now. DSCP: an application's request its own, an answer its
    request's, the controller's requests `dscp_ctrl`."""
    out[k] = core.pkt0[0]
    p = out[k]
    kind = C[r]["kind"]
    user = C[r]["flags"] & F_USER
    request = kind == PSU_REQUEST or kind == PROBE_REQUEST
    psu = kind == PSU_REQUEST or kind == PSU_RESPONSE
    p["opcode"] = OP_MRC_ENDPOINT_REQUEST if request else OP_MRC_ENDPOINT_RESPONSE
    p["dqpn"] = ENDPOINT_QPN
    p["pkey"] = 0xFFFF
    p["ep_op"] = EP_PSU if psu else EP_PROBE
    p["req_id"] = C[r]["req_id"]
    p["port_status_mask"] = C[r]["mask"] if (psu or user or not request) else H[h]["local_ports"]
    p["ev"] = ev
    p["port"] = plane
    if request:
        p["ts"] = 1
        p["tx_timestamp"] = (now // TS_UNIT_PS) & 0xFFFF
        p["dscp"] = C[r]["tc"] if user else dscp_ctrl
    else:
        p["tx_timestamp"] = C[r]["echo_ts"]
        p["svc_time"] = service_time_ns(C, r, now)
        p["dscp"] = C[r]["tc"]


@njit_core
def apply_port_status(core, qp, mask, remote, now):
    """A port status change reaches QP `qp` if it runs (RTR or RTS): the peer's ports (`remote`: its port
    status update, `mrc.core.dispatch.set_remote_ports`) or the local NIC's (`set_local_ports`). True if
    applied (a QP not connected yet takes the ports known when it is, `mrc.core.qp.modify`)."""
    st = core.qp[qp]["state"]
    if st != D.QPS_RTR and st != D.QPS_RTS:
        return False
    if remote:
        dispatch.set_remote_ports(core, qp, mask, now)
    else:
        dispatch.set_local_ports(core, qp, mask, now)
    return True


@njit_core
def psu_ev(core, qp, plane):
    """A usable EV of `qp` on `plane` (the peer's port up too), or -1."""
    if (evset.plane_mask(core, qp) >> plane) & 1 == 0:
        return i64(-1)
    q = core.qp[qp]
    row = core.ev[q["ev_row"]]
    start, size = plane_slots(q, plane)
    for k in range(start, start + size):
        if evset.is_usable(row[k]["state"]):
            return i64(row[k]["ev"])
    return i64(-1)


@njit_core(inline="always")
def on_plane(ev, plane, shift, width):
    """The EV with its plane field (`width` bits at `shift`) set to `plane`: the same switches there."""
    m = ((i64(1) << width) - 1) << shift
    return (i64(ev) & ~m) | (i64(plane) << shift)


@njit_core
def pick(C, H, free, s, core, h, plane, now, ev_plane_shift, ev_plane_width):
    """The first queued row of host h that may leave on `plane` now, unlinked, and its EV: (row, ev),
    (-1, -1) when none. An application's request past its deadline is dropped here, unsent."""
    local = i64(H[h]["local_ports"])
    prev = -1
    r = H[h]["q_head"]
    ev = i64(-1)
    while r >= 0:
        kind = C[r]["kind"]
        ev = i64(-1)
        if C[r]["flags"] & F_USER:
            if C[r]["deadline"] <= now:
                nxt = C[r]["next"]
                TB.unlink_queued(C, H, h, r, prev)
                TB.release(C, free, s, r)
                r = nxt
                continue
            if C[r]["plane"] == plane:
                ev = C[r]["ev"]
        elif kind == PSU_REQUEST:
            ev = psu_ev(core, C[r]["qp"], plane)
        elif kind == PROBE_REQUEST:
            if C[r]["plane"] == plane:
                ev = C[r]["ev"]
        elif ev_plane_width <= 0:
            if C[r]["plane"] == plane:  # an answer, on the request's EV and port
                ev = C[r]["ev"]
        elif C[r]["plane"] == plane or ((local >> C[r]["plane"]) & 1) == 0:
            ev = on_plane(C[r]["ev"], plane, ev_plane_shift, ev_plane_width)  # or its plane's twin here
        if ev >= 0:
            break
        prev = r
        r = C[r]["next"]
    if r < 0:
        return -1, i64(-1)
    TB.unlink_queued(C, H, h, r, prev)
    return i64(r), ev


@njit_core
def sent(C, H, free, s, h, r, now, timeout, interval):
    """Row r (from `pick`) went out at `now`: a request waits for its answer (an update `timeout`,
    a probe `interval`, an application's request its deadline); an answer is done. Returns its kind."""
    kind = C[r]["kind"]
    if C[r]["flags"] & F_USER:
        C[r]["t_sent"] = now
        TB.wait(C, H, h, r, C[r]["deadline"])
    elif kind == PSU_REQUEST:
        C[r]["tries"] += 1
        C[r]["t_sent"] = now
        TB.wait(C, H, h, r, now + timeout)
    elif kind == PROBE_REQUEST:
        C[r]["t_sent"] = now
        C[r]["answered"] = 0
        TB.wait(C, H, h, r, now + interval)
    else:
        TB.release(C, free, s, r)
    return kind


# ---------------------------------------------------------------- answers and timers


@njit_core
def check_response(op):
    """0 when a peer's ENDPOINT_RESPONSE names a known op, else BAD_OP."""
    return 0 if op == EP_PSU or op == EP_PROBE else BAD_OP


@njit_core
def _probe_over(core, qp, slot):
    return core.ev[core.qp[qp]["ev_row"], slot]["state"] != D.EV_ASSUMED_BAD or core.qp[qp]["state"] != D.QPS_RTS


@njit_core
def on_response(C, H, free, s, core, h, src, op, req_id, successes, now):
    """An ENDPOINT_RESPONSE from peer src for host h: (row, RSP_*). Only a waiting request of the same
    op, peer and req_id matches; anything else is RSP_UNMATCHED and changes nothing. A matched
    probe that completes `successes` answers in a row returns its EV to GOOD (ours)."""
    if check_response(op) != 0:
        return -1, RSP_UNMATCHED
    want = PSU_REQUEST if op == EP_PSU else PROBE_REQUEST
    r = H[h]["w_head"]
    while r >= 0:
        if C[r]["kind"] == want and C[r]["peer"] == src and C[r]["req_id"] == req_id:
            break
        r = C[r]["next"]
    if r < 0:
        return -1, RSP_UNMATCHED
    if C[r]["flags"] & F_USER or want == PSU_REQUEST:
        TB.unlink_waiting(C, H, h, r)
        TB.release(C, free, s, r)
        TB.recompute_deadline(C, H, h)
        return i64(r), (RSP_USER if C[r]["flags"] & F_USER else RSP_PSU_DONE)
    if C[r]["answered"] == 0:
        C[r]["answered"] = 1
        C[r]["ok"] += 1
    qp = C[r]["qp"]
    slot = C[r]["slot"]
    out = RSP_PROBE_COUNTED
    if _probe_over(core, qp, slot):
        out = RSP_PROBE_DONE
    elif C[r]["ok"] >= successes:
        evset.ev_input(core, qp, slot, D.EVI_CTL_GOOD, now)
        out = RSP_RESTORED
    if out != RSP_PROBE_COUNTED:
        TB.unlink_waiting(C, H, h, r)
        TB.release(C, free, s, r)
        TB.recompute_deadline(C, H, h)
    return i64(r), out


@njit_core
def on_timer(C, H, free, s, core, h, now, retries):
    """Host h's waiting rows due at `now`: an update is queued again (dropped after `retries`
    resends, ours); a probe goes again while its EV is ASSUMED_BAD (an unanswered one restarts
    the count of answers in a row); an application's request is dropped (its batch timed out)."""
    r = H[h]["w_head"]
    while r >= 0:
        nxt = C[r]["next"]
        if C[r]["deadline"] <= now:
            TB.unlink_waiting(C, H, h, r)
            if C[r]["flags"] & F_USER:
                TB.release(C, free, s, r)
            elif C[r]["kind"] == PSU_REQUEST:
                if C[r]["tries"] > retries:
                    TB.release(C, free, s, r)
                else:
                    TB.enqueue(C, H, h, r)
            else:
                if _probe_over(core, C[r]["qp"], C[r]["slot"]):
                    TB.release(C, free, s, r)
                else:
                    if C[r]["answered"] == 0:
                        C[r]["ok"] = 0
                    TB.enqueue(C, H, h, r)
        r = nxt
    TB.recompute_deadline(C, H, h)
