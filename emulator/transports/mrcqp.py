"""The MRC transports in the engine: every QP runs `mrc.core`, nothing here decides protocol.

One flow, or one connection's messages (`pairs`), is one connected QP pair in
the fabric-wide `CoreTables` (``T.core``): QP ``ep`` is endpoint ``ep`` (the requester on the source host has a TX row
and a work request, the responder on the destination an RX row; both have
their EV rows and handle their own control packets). Endpoints from
``mrc_p.n_qp`` on are the host controllers (`mrcctl`). The glue maps the
engine's interface (`transports.dispatch`) onto the core's entry points and
does only what a NIC and its driver do around a protocol engine:

- ``tx_next``: `mrc.core.dispatch.next_packet` for the NIC port's plane writes
  the packet's header row straight into the pool (``E.hdr[i]``); its size on
  the wire is its header stack (outer and inner IPv6, UDP, BTH, the MRC
  headers of its opcode, ICRC: ``mrc_hdr``) plus payload; its class is
  control for SACK / NACK / AETH, data otherwise (as its DSCP says); it is
  routed by the SRv6 carrier of its EV (`mrc.fabric.paths.ev_carrier`: the
  switches then shift and look up), with ``entropy = "hashed"`` by ECMP
  hashing of the EV in its UDP source port and flow label at every switch, or,
  for ``ar``, by adaptive routing (`mrcctl.route_ev`);
- ``on_rx``: `on_packet` with the received header row (trim and ECN as the
  switches left them);
- ``ready_at`` / ``next_deadline`` / ``on_timer``: `tx_ready`, `next_deadline`,
  `on_timer`;
- after every call the core's events are drained: completions end flows
  (`flows.send_done` / `failed`), EV state changes are counted, logged
  (``mrc_evlog``: time, QP, EV, state, drop count) and handed to the
  controller; the receiver's bytes give goodput and ``recv_done``;
- dynamic MPR (transport parameter ``mpr_budget`` > 0; the policy is ours, the
  MRC algorithm is not public): a host's responder QPs that are receiving a
  message share the budget, and each advertises its share, from its next
  packet on (`mrc.core.mpr.set_mpr_dest`; ``mrc_rx_active``, ``mrc_rx_on``).

Counters it keeps for the engine: data packets, retransmissions (and
spurious ones, from the core's QP counters), timeouts, probes, SACKs, NACKs
by reason, EV events.
"""
from __future__ import annotations

import numpy as np

from mrc.core import dispatch as cdisp
from mrc.core import dtypes as D
from mrc.core import evpolicy, evset, mpr, qp as core_qp
from mrc.emulator._jit import njit
from mrc.emulator import flows
from mrc.emulator import state as ST
from mrc.emulator.pool import pkt_new
from mrc.emulator.transports import mrcctl
from mrc.core.cachelines import prefetch, prefetch_lines
from mrc.core.tables import psn_slot
from mrc.wire.constants import OP_MRC_ACKNOWLEDGE, OP_MRC_RELIABILITY_NACK, OP_MRC_RELIABILITY_SACK, NackReason

MP = np.dtype([
    ("n_qp", np.int64),  # QP endpoints are 0 .. n_qp - 1; host h's controller is n_qp + h
    ("mtu", np.int64),
    ("fwd", np.int64),  # state.FWD_SRV6, FWD_ECMP (hashed entropy) or FWD_AR
    ("dscp_ctrl", np.int64),
    ("ctl_timeout", np.int64),  # ps: a port status update unanswered this long is sent again
    ("ctl_retries", np.int64),
    ("ctl_probe", np.int64),  # ps between controller EV probes (0: off)
    ("ctl_probe_ok", np.int64),  # answers in a row that return an EV to GOOD
    ("mpr_budget", np.int64),  # dynamic MPR: units of 128 PSNs a host's receiving responder QPs share (0: off)
    ("mpr_max", np.int64),  # the QPs' configured MPR, the most a share may be
], align=True)

EVL = np.dtype([  # an EV event (mrc_ctl.h: "Only EV_ASSUMED_BAD and EV_GOOD")
    ("t", np.int64),
    ("qp", np.int32),
    ("flow", np.int32),  # the QP's flow (a connection's: its message then)
    ("ev", np.uint32),
    ("drops", np.uint32),  # losses counted on the EV (drop_count)
    ("state", np.uint8),
    ("plane", np.uint8),
], align=True)

NR_TRIMMED = int(NackReason.TRIMMED)
NR_TRIMMED_LASTHOP = int(NackReason.TRIMMED_LASTHOP)
NR_OOR = int(NackReason.PSN_OOR_WINDOW)


@njit
def _rx_join(E, T, resp):
    """Dynamic MPR: responder QP `resp` is receiving a message (counted once)."""
    if T.mrc_rx_on[resp] == 0:
        T.mrc_rx_on[resp] = 1
        T.mrc_rx_active[E.ep[resp]["host"]] += 1


@njit
def _rx_leave(E, T, resp):
    """Dynamic MPR: responder QP `resp` is no longer receiving (its message arrived, or its flow failed)."""
    if T.mrc_rx_on[resp] != 0:
        T.mrc_rx_on[resp] = 0
        T.mrc_rx_active[E.ep[resp]["host"]] -= 1


@njit(inline="always")
def _mpr_follow(E, T, ep):
    """Dynamic MPR: responder QP ep advertises its host's share of ``mpr_budget`` (at least 1, at most ``mpr_max``)."""
    mp = T.mrc_p[0]
    share = mp["mpr_budget"] // max(T.mrc_rx_active[E.ep[ep]["host"]], 1)
    share = min(max(share, 1), mp["mpr_max"])
    if T.core.qp[ep]["mpr_dest"] != share:
        mpr.set_mpr_dest(T.core, ep, share)


@njit
def _failed(E, T, f, now):
    """Flow f failed (its QP in error)."""
    if T.mrc_p[0]["mpr_budget"] > 0:
        _rx_leave(E, T, E.ep[E.flow[f]["ep"]]["peer"])
    flows.failed(E, f, now, ST.WHY_RETRY_EXCEEDED)


@njit
def _drain(E, T, now):
    """Handle the events the core reported (the core table is empty afterwards)."""
    core = T.core
    n = core.evt_n[0]
    for k in range(n):
        e = core.evt[k]
        kind = e["kind"]
        qp = np.int64(e["qp"])
        if kind == D.E_SEND_DONE:
            f = E.ep[qp]["flow"]
            if e["status"] == D.WC_SUCCESS:
                flows.send_done(E, f, now)
            else:
                _failed(E, T, f, now)
        elif kind == D.E_EV_STATE:
            if e["ev_state"] == D.EV_ASSUMED_BAD:
                E.ctr[ST.C_EV_BAD] += 1
                mrcctl.probe_ev(E, T, qp, np.int64(e["value"]), now)
            else:
                E.ctr[ST.C_EV_GOOD] += 1
            m = T.mrc_s[mrcctl.MS_EVLOG_N]
            if m < T.mrc_evlog.shape[0]:
                r = T.mrc_evlog[m]
                r["t"] = now
                r["qp"] = qp
                r["flow"] = E.ep[qp]["flow"]
                r["ev"] = e["ev"]
                r["drops"] = e["drop_count"]
                r["state"] = e["ev_state"]
                r["plane"] = e["plane"]
                T.mrc_s[mrcctl.MS_EVLOG_N] = m + 1
            else:
                E.ctr[ST.C_EVLOG_DROPPED] += 1
        elif kind == D.E_QP_ERROR:
            E.ctr[ST.C_QP_ERRORS] += 1
            _failed(E, T, E.ep[qp]["flow"], now)
    core.evt_n[0] = 0


@njit
def flow_start(E, F, T, f, now):
    """Start flow f's QP pair (both in RTS, the host's current ports) and post its one write. A connection's
    next message (its QPs in RTS already, the one before it complete: `engine.start_flow`) is posted on the
    QPs as they are: their EVs' health, NSCC's window and the PSNs carry on. On a QP in the error state it
    fails at once (a QP in error completes every work request with an error)."""
    core = T.core
    req = np.int64(E.flow[f]["ep"])
    resp = np.int64(E.ep[req]["peer"])
    st = core.qp[req]["state"]
    if st == D.QPS_ERROR or core.qp[resp]["state"] == D.QPS_ERROR:
        flows.failed(E, f, now, ST.WHY_RETRY_EXCEEDED)
        return
    if T.mrc_p[0]["mpr_budget"] > 0:
        _rx_join(E, T, resp)
    if st == D.QPS_RTS:
        core_qp.post_write(core, req, f, D.WR_WRITE, 0, 0, 0, 0, E.flow[f]["size"], 0, now)
        if core.evt_n[0] > 0:
            _drain(E, T, now)
        return
    lr = np.int64(T.mrc_host[E.ep[req]["host"]]["local_ports"])
    ls = np.int64(T.mrc_host[E.ep[resp]["host"]]["local_ports"])
    # RESET -> INIT -> RTR -> RTS as the library's QPs go (`mrc.core.qp.modify`; the profiles and attributes
    # were written at set-up, `mrc_setup`), with the ports known at connection set-up: each end's own, and
    # the peer's
    for qp, own, other in ((req, lr, ls), (resp, ls, lr)):
        pin = core.qp[qp]["ev_pin"]  # mrc-1ev: the ECMP-hashed EV set up for the QP (-1: none)
        core_qp.modify(core, qp, D.QPS_INIT, core_qp.qp_attr(), now)
        core_qp.modify(core, qp, D.QPS_RTR, core_qp.qp_attr(rq_psn=0, dest_qpn=core.qp[E.ep[qp]["peer"]]["qpn"],
                                                            local_ports=own, remote_ports=other), now)
        core_qp.modify(core, qp, D.QPS_RTS, core_qp.qp_attr(sq_psn=0, ev_pin=pin), now)
    E.ep[req]["planes"] = evset.plane_mask(core, req)
    E.ep[resp]["planes"] = evset.plane_mask(core, resp)
    core_qp.post_write(core, req, f, D.WR_WRITE, 0, 0, 0, 0, E.flow[f]["size"], 0, now)
    if core.evt_n[0] > 0:
        _drain(E, T, now)


@njit(inline="always")
def _count_sent(E, T, ep, kind, pkt):
    if kind == cdisp.K_DATA:
        E.ctr[ST.C_DATA_PKTS] += 1
        E.ctr[ST.C_PAYLOAD_SENT] += E.hdr[pkt]["payload_len"]
    elif kind == cdisp.K_RTX:
        E.ctr[ST.C_DATA_PKTS] += 1
        E.ctr[ST.C_PAYLOAD_SENT] += E.hdr[pkt]["payload_len"]
        E.ctr[ST.C_RETX] += 1
        E.flow[E.ep[ep]["flow"]]["retx"] += 1
    elif kind == cdisp.K_PROBE:
        E.ctr[ST.C_PROBES] += 1
    else:
        op = E.hdr[pkt]["opcode"]
        if op == OP_MRC_RELIABILITY_SACK:
            E.ctr[ST.C_ACKS] += 1
        elif op == OP_MRC_RELIABILITY_NACK:
            r = E.hdr[pkt]["nack_reason"]
            if r == NR_TRIMMED:
                E.ctr[ST.C_NACK_TRIMMED] += 1
            elif r == NR_TRIMMED_LASTHOP:
                E.ctr[ST.C_NACK_TRIMMED_LASTHOP] += 1
            elif r == NR_OOR:
                E.ctr[ST.C_NACK_OOR] += 1
            else:
                E.ctr[ST.C_NACK_OTHER] += 1
        elif op == OP_MRC_ACKNOWLEDGE:
            E.ctr[ST.C_NAKS] += 1


# The lines of a QP row an endpoint touches (`mrc.core.dtypes.QP_LINES`): every endpoint its
# scheduling group; a requester, when it sends, its sending group, when a SACK arrives, its
# acknowledgement group; a responder its own group (it takes data and builds SACKs).
_SCHED = D.QP_LINES["sched"]
_REQ_TX = D.QP_LINES["req_tx"]
_REQ_ACK = D.QP_LINES["req_ack"]
_RESP = D.QP_LINES["resp"]


@njit(inline="always")
def _prefetch_qp(core, ep, group):
    prefetch_lines(core.qp, ep, _SCHED[0], _SCHED[1])
    prefetch_lines(core.qp, ep, group[0], group[1])


@njit(inline="always")
def prefetch_ep(E, T, ep, pkt):
    """The rows endpoint ep reads for packet `pkt` (`dispatch.prefetch`; its header row is cached,
    `engine._prefetch_ahead`): the lines of its QP row it reads; at a responder, the PSN's
    tracking slot; at a requester, the transmission the acknowledgement answers (cack_psn +
    ack_psn_offset). The QP's TX and RX rows come from ``mrc_rows``, not from its QP row, which
    is on its way."""
    if ep < T.mrc_p[0]["n_qp"]:
        core = T.core
        hd = E.hdr[pkt]
        r = T.mrc_rows[ep, 1]
        if r >= 0:
            _prefetch_qp(core, ep, _RESP)
            _prefetch_slot(core.rx, r, np.int64(hd["psn"]))
        r = T.mrc_rows[ep, 0]
        if r >= 0:
            _prefetch_qp(core, ep, _REQ_ACK)
            _prefetch_slot(core.tx, r, np.int64(hd["cack_psn"]) + np.int64(hd["ack_psn_offset"]))


# ``mrc_next[slot]``: where the rows a ring slot reads first when next asked to send sit, noted
# when it last sent (a prefetch hint, never read by the protocol): `_at(row, column)`, -1 unknown (for
# the TX slot the column is the PSN, 24 bits). The EV ones are per plane; the TX slot and work
# request, per endpoint, sit in its plane-0 slot.
NX_EV = 0  # the EV row it picks (``core.ev``)
NX_TX = 1  # the TX slot of its next PSN (``core.tx``)
NX_WR = 2  # the work request it segments (``core.wr``)
NX_ORDER = 3  # the entry of its EV visiting order it reads (``core.ev_order``)
N_NX = 4
_COL_BITS = 24
_COL_MASK = (1 << _COL_BITS) - 1


@njit(inline="always")
def _at(row, col):
    """A row and a column (< 2^24) in one ``mrc_next`` entry."""
    return (np.int64(row) << _COL_BITS) | np.int64(col)


@njit(inline="always")
def _prefetch_at(tab, at):
    if at >= 0:
        prefetch(tab[at >> _COL_BITS], at & _COL_MASK)


@njit(inline="always")
def _prefetch_slot(tab, row, psn):
    """PSN `psn`'s slot of `row` in a TX or RX table (`tables.psn_slot`)."""
    tile, col = psn_slot(tab, psn)
    prefetch(tab[tile, row], col)


@njit(inline="always")
def prefetch_tx(E, T, slot):
    """The rows ring slot ``ep * planes + plane`` reads when the NIC next asks it for a packet
    (`dispatch.prefetch_tx`): the lines of its QP row it reads (a requester's sending group, a
    responder's own, which builds its SACKs), and through ``mrc_next`` the EV row it picks, the
    entry of its visiting order that names it, the TX slot it fills and the work request it reads."""
    n_planes = E.cfg[0]["n_planes"]
    ep = slot // n_planes
    if ep < T.mrc_p[0]["n_qp"]:
        core = T.core
        _prefetch_qp(core, ep, _REQ_TX if T.mrc_rows[ep, 0] >= 0 else _RESP)
        nx = T.mrc_next[slot]
        _prefetch_at(core.ev, nx[NX_EV])
        _prefetch_at(core.ev_order, nx[NX_ORDER])
        nx = T.mrc_next[ep * n_planes]
        if nx[NX_TX] >= 0:
            _prefetch_slot(core.tx, nx[NX_TX] >> _COL_BITS, nx[NX_TX] & _COL_MASK)
        _prefetch_at(core.wr, nx[NX_WR])


@njit(inline="always")
def _note_next(T, ep, plane, n_planes):
    """Note in ``mrc_next`` the rows endpoint ep reads first when next asked for a packet on
    `plane` (its QP row and visiting order are cached now: it just sent). In its slot of that
    plane, the EV row and the visiting-order entry (a requester's: its EV policy's
    `evpolicy.next_ev_hint`; a responder's: its reverse EV); in its plane-0 slot, a requester's TX
    slot and work request."""
    core = T.core
    q = core.qp[ep]
    nx = T.mrc_next[ep * n_planes + plane]
    r = np.int64(q["ev_row"])
    if q["tx_row"] >= 0:
        k, o = evpolicy.next_ev_hint(core, ep, plane)
        nx[NX_ORDER] = _at(r, o) if o >= 0 else -1
        nx0 = T.mrc_next[ep * n_planes]
        nx0[NX_TX] = _at(q["tx_row"], q["sq_psn"])
        nx0[NX_WR] = _at(q["wr_row"], np.int64(q["wr_next"]) % core.wr.shape[1])
    else:
        k = np.int64(q["rev_ev"][plane])
    nx[NX_EV] = _at(r, k) if k >= 0 else -1


@njit(inline="always")
def tx_next(E, F, T, ep, now, port, allow_data, pkt):
    """Build endpoint ep's next packet for NIC port `port` into pool row `pkt`; 1 if built."""
    mp = T.mrc_p[0]
    if ep >= mp["n_qp"]:
        return mrcctl.tx_next(E, F, T, ep, now, port, pkt)
    if not allow_data:
        return 0
    core = T.core
    host = E.ep[ep]["host"]
    plane = port - host * E.cfg[0]["n_planes"]
    kind = cdisp.next_packet(core, ep, now, np.int64(1) << plane, E.hdr, pkt)
    if kind == cdisp.K_NONE:
        return 0
    _note_next(T, ep, plane, E.cfg[0]["n_planes"])
    hd = E.hdr[pkt]
    peer = E.ep[ep]["peer"]
    dst = E.ep[peer]["host"]
    size = T.mrc_hdr[hd["opcode"]] + hd["payload_len"]
    cls = ST.CLS_CTRL if kind == cdisp.K_CONTROL else ST.CLS_DATA
    pkt_new(E, pkt, host, dst, peer, E.ep[ep]["flow"], plane, size, cls, hd["ecn"], hd["dscp"], now)
    mrcctl.route_ev(E, F, mp["fwd"], pkt, host, dst, hd["ev"], ep)
    _count_sent(E, T, ep, kind, pkt)
    if core.evt_n[0] > 0:
        _drain(E, T, now)
    return 1


@njit(inline="always")
def ready_at(E, T, ep, now):
    if ep >= T.mrc_p[0]["n_qp"]:
        return now if mrcctl.ready(T, ep - T.mrc_p[0]["n_qp"]) else ST.NEVER
    return now if cdisp.tx_ready(T.core, ep, now) else ST.NEVER


@njit(inline="always")
def next_deadline(E, T, ep):
    n_qp = T.mrc_p[0]["n_qp"]
    if ep >= n_qp:
        return mrcctl.deadline(T, ep - n_qp)
    d = cdisp.next_deadline(T.core, ep)
    # lazy timer: a deadline that moved later (the RTO on every ACK) keeps the armed, earlier timer;
    # it fires early (the core's on_timer then does nothing) and re-arms. The timer heap entry moves
    # only earlier, not on every ACK.
    cur = E.ep[ep]["timer_at"]
    if cur < d:
        return cur
    return d  # the core's "no timer armed" is the engine's NEVER (one value, mrc.core.dtypes)


@njit(inline="always")
def on_rx(E, F, T, ep, pkt, now):
    if ep >= T.mrc_p[0]["n_qp"]:
        mrcctl.on_rx(E, F, T, ep, pkt, now)
        return
    core = T.core
    q = core.qp[ep]
    budget = T.mrc_p[0]["mpr_budget"] > 0
    if budget and T.mrc_rows[ep, 1] >= 0:
        _mpr_follow(E, T, ep)
    rx0 = q["rx_bytes"]
    msn0 = q["rx_msn"]
    spur0 = q["rtx_spurious"]
    cdisp.on_packet(core, ep, E.hdr[pkt], now)
    if q["rx_bytes"] != rx0:
        f = E.ep[ep]["flow"]
        flows.delivered(E, f, q["rx_bytes"] - rx0)
        # a flow of its own is received when its bytes are; a connection's message when the responder
        # completes it (its MSN moves on: the bytes counted are the connection's)
        if (q["rx_bytes"] >= E.flow[f]["size"]) if E.flow[f]["conn"] < 0 else (q["rx_msn"] != msn0):
            flows.recv_done(E, f, now)
            if budget:
                _rx_leave(E, T, ep)
    if q["rtx_spurious"] != spur0:
        E.ctr[ST.C_SPURIOUS] += q["rtx_spurious"] - spur0
    if core.evt_n[0] > 0:
        _drain(E, T, now)


@njit(inline="always")
def on_timer(E, F, T, ep, now):
    if ep >= T.mrc_p[0]["n_qp"]:
        mrcctl.on_timer(E, F, T, ep, now)
        return
    core = T.core
    q = core.qp[ep]
    t0 = q["rtx_timeouts"]
    spur0 = q["rtx_spurious"]
    cdisp.on_timer(core, ep, now)
    if q["rtx_timeouts"] != t0:
        E.ctr[ST.C_TIMEOUTS] += q["rtx_timeouts"] - t0
    if q["rtx_spurious"] != spur0:
        E.ctr[ST.C_SPURIOUS] += q["rtx_spurious"] - spur0
    if core.evt_n[0] > 0:
        _drain(E, T, now)


@njit
def port_event(E, F, T, host, plane, up, now):
    """Host `host`'s NIC port on `plane` went down (up = 0) or came back: its controller acts."""
    m = np.int64(T.mrc_host[host]["local_ports"])
    bit = np.int64(1) << plane
    m = (m | bit) if up else (m & ~bit)
    if m == T.mrc_host[host]["local_ports"]:
        return
    T.mrc_host[host]["local_ports"] = m
    mrcctl.port_status_changed(E, F, T, host, now)
    if T.core.evt_n[0] > 0:
        _drain(E, T, now)
