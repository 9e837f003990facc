"""The core's entry points (aioquic-style): packets in, packets out, timers.

Everything outside the core drives a QP through these six functions, always
passing the time ``now`` (integer ps):

- ``on_packet(T, i, pkt, now)``: a packet addressed to QP `i` arrived; the
  opcode table (`OPCODE_HANDLER`) picks the handler; the responder's
  placement decision is left in ``T.place``.
- ``next_packet(T, i, now, port_mask, out, k)``: build the next packet QP `i`
  wants to send on a port in `port_mask` into ``out[k]``; returns its kind
  (0: nothing). Order: the responder's control packets (AETH NAK, NACKs,
  probe answers, SACKs), then probes, then retransmissions, then new data.
- ``on_timer(T, i, now)``: handle every deadline that has passed.
- ``next_deadline(T, i)``: the earliest future deadline.
- ``tx_ready(T, i, now)``: whether ``next_packet`` would have something.
- ``next_packets(T, i, now, port_mask, out, kinds, src)``: many ``next_packet``
  calls in one (Python callers pay ~2 us per call to pass the tables).

Port status: ``set_local_ports`` (a NIC port went down or up) and
``set_remote_ports`` (a peer's port status update) remove or restore a plane
at once; packets in flight on a plane that went down are retransmitted
elsewhere (OAI: "recalculates paths to avoid the failed plane").
"""
from __future__ import annotations

import numpy as np

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core import evpolicy, evset, loss, requester, responder
from mrc.core.psn import psn_add, psn_diff
from mrc.core.requester import tx_slot
from mrc.core.rotation import next_plane
from mrc.wire.constants import M_NONE, Opcode

K_NONE = 0
K_DATA = 1
K_RTX = 2
K_CONTROL = 3
K_PROBE = 4

H_NONE = 0
H_DATA = 1
H_PROBE = 2
H_SACK = 3
H_NACK = 4
H_ACK = 5

# opcode -> handler (aioquic's frame table): anything else is dropped and counted.
OPCODE_HANDLER = np.zeros(256, dtype=np.uint8)
for _op in range(int(Opcode.MRC_WRITE_FIRST), int(Opcode.MRC_WRITE_ONLY_IMM) + 1):
    OPCODE_HANDLER[_op] = H_DATA
OPCODE_HANDLER[int(Opcode.MRC_RELIABILITY_PROBE)] = H_PROBE
OPCODE_HANDLER[int(Opcode.MRC_RELIABILITY_SACK)] = H_SACK
OPCODE_HANDLER[int(Opcode.MRC_RELIABILITY_NACK)] = H_NACK
OPCODE_HANDLER[int(Opcode.MRC_ACKNOWLEDGE)] = H_ACK


@njit_core
def on_packet(T, i, pkt, now):
    """Feed one received packet (a PKT record) to QP `i`."""
    T.place[0] = -1
    h = OPCODE_HANDLER[pkt["opcode"]]
    if h == H_DATA:
        responder.on_data(T, i, pkt, now)
    elif h == H_SACK:
        loss.on_sack(T, i, pkt, now)
    elif h == H_NACK:
        loss.on_nack(T, i, pkt, now)
    elif h == H_PROBE:
        responder.on_probe(T, i, pkt, now)
    elif h == H_ACK:
        loss.on_aeth(T, i, pkt, now)
    else:
        T.qp[i]["rx_dropped"] += 1
    return h


@njit_core
def control_slot(T, i, plane_hint, port_mask, now):
    """EV slot for a control packet: the reverse EV of `plane_hint`, else of any plane allowed."""
    q = T.qp[i]
    planes = evset.plane_mask(T, i) & port_mask
    if planes == 0:
        return -1
    n = i64(q["n_planes"])
    while planes != 0:
        p = next_plane(planes, i64(plane_hint), n)
        if p < 0:
            return -1
        k = q["rev_ev"][p]
        if q["rev_fresh"][p] == 0 and k >= 0 and evset.is_usable(T.ev[q["ev_row"], k]["state"]):
            return k
        k = evset.pick_in_plane(T, i, p, now)
        if k >= 0:
            q["rev_ev"][p] = k
            if q["rev_fresh"][p] > 0:
                q["rev_fresh"][p] -= 1  # evidence that control packets were lost: the next EV (`evset.drop_rev_ev`)
            return k
        planes &= ~(i64(1) << p)
    return -1


@njit_core(inline="always")
def _next_control(T, i, now, port_mask, out, k):
    q = T.qp[i]
    if q["aeth_pending"]:
        s = control_slot(T, i, q["ack_trigger_port"], port_mask, now)
        if s >= 0:
            responder.fill_aeth_nak(T, i, out, k, s)
            q["aeth_pending"] = 0
            return K_CONTROL
    if q["state"] == D.QPS_ERROR:
        return K_NONE
    if q["nack_n"] > 0:
        s = control_slot(T, i, q["nack_port"][0], port_mask, now)
        if s >= 0:
            reason = q["nack_reason"][0]
            if reason == responder.NACK_PROBE_REPLY:
                responder.fill_sack(T, i, out, k, q["nack_psn"][0], q["nack_ev"][0], q["nack_ts"][0], q["nack_m"][0], 1, s,
                                    q["nack_at"], now)
            else:
                responder.fill_nack(T, i, out, k, reason, q["nack_psn"][0], q["nack_ev"][0], q["nack_ts"][0], s,
                                    q["nack_at"], now)
            n = q["nack_n"] - 1
            for j in range(n):
                q["nack_reason"][j] = q["nack_reason"][j + 1]
                q["nack_psn"][j] = q["nack_psn"][j + 1]
                q["nack_ev"][j] = q["nack_ev"][j + 1]
                q["nack_ts"][j] = q["nack_ts"][j + 1]
                q["nack_port"][j] = q["nack_port"][j + 1]
                q["nack_m"][j] = q["nack_m"][j + 1]
            q["nack_n"] = n
            return K_CONTROL
    if q["ack_pending"] == D.ACK_NOW or (q["ack_pending"] == D.ACK_AT_DEADLINE and now >= q["ack_deadline"]):
        s = control_slot(T, i, q["ack_trigger_port"], port_mask, now)
        if s >= 0:
            responder.fill_sack(T, i, out, k, q["ack_trigger_psn"], q["ack_trigger_ev"], q["ack_trigger_ts"], q["ack_m"], 0, s,
                                q["ack_trigger_at"], now)
            q["ack_pending"] = D.ACK_NONE
            q["ack_pkts"] = 0
            q["ack_bytes"] = 0
            q["ack_m"] = M_NONE
            return K_CONTROL
    return K_NONE


@njit_core(inline="always")
def _next_probe(T, i, now, port_mask, out, k):
    q = T.qp[i]
    if q["ev_probe_due"]:
        s = evset.next_probe_slot(T, i, now, port_mask)
        if s >= 0:
            requester.build_probe(T, i, out, k, s, now)
            return K_PROBE
    if q["rel_probe_pending"] == 1:
        s = evpolicy.select_ev(T, i, port_mask, now)
        if s >= 0:
            requester.build_probe(T, i, out, k, s, now)
            q["rel_probe_pending"] = 2
            q["tx_seq"] += 1
            q["rel_probe_seq"] = q["tx_seq"]
            q["rel_probe_slot"] = s
            return K_PROBE
    if q["rev_probe_due"] and q["rev_probe_slot"] < 0:
        n = i64(q["n_planes"])
        planes = evset.plane_mask(T, i) & port_mask
        while planes != 0:
            p = next_plane(planes, i64(q["rev_plane_cursor"]), n)
            if p < 0:
                break
            s = evset.pick_in_plane(T, i, p, now)
            if s >= 0:
                requester.build_probe(T, i, out, k, s, now)
                q["rev_plane_cursor"] = (p + 1) % n
                q["rev_probe_slot"] = s
                q["rev_probe_timeout"] = now + 2 * q["srtt"] + q["reorder_window_ps"]
                q["rev_probe_due"] = 0
                return K_PROBE
            planes &= ~(i64(1) << p)
    return K_NONE


@njit_core
def next_packet(T, i, now, port_mask, out, k):
    """Build QP `i`'s next packet for a port in `port_mask` into out[k]; returns its kind."""
    q = T.qp[i]
    # the flags are tested here so that a QP with nothing to send costs no calls
    if q["aeth_pending"] or q["nack_n"] > 0 or q["ack_pending"] != D.ACK_NONE:
        kind = _next_control(T, i, now, port_mask, out, k)
        if kind != K_NONE:
            return kind
    if q["state"] != D.QPS_RTS:
        return K_NONE
    if q["ev_probe_due"] or q["rel_probe_pending"] == 1 or q["rev_probe_due"]:
        kind = _next_probe(T, i, now, port_mask, out, k)
        if kind != K_NONE:
            return kind
    if q["tx_row"] < 0:
        return K_NONE
    if q["n_lost"] > 0 and requester.next_rtx(T, i, now, port_mask, out, k):
        return K_RTX
    if q["wr_next"] != q["wr_tail"] and requester.next_new(T, i, now, port_mask, out, k):
        return K_DATA
    return K_NONE


@njit_core
def next_packets(T, i, now, port_mask, out, kinds, src):
    """Up to ``len(out)`` packets of QP `i` at once (for Python callers: one call instead of many).

    Packet n goes to ``out[n]``, its kind to ``kinds[n]`` and, for data, where its payload
    comes from to ``src[n]`` (WR ring index, byte offset in the message, length; -1 for
    packets without payload). Returns how many were built.
    """
    n = 0
    while n < out.shape[0]:
        kind = next_packet(T, i, now, port_mask, out, n)
        if kind == K_NONE:
            break
        kinds[n] = kind
        if kind == K_DATA or kind == K_RTX:
            src[n, 0] = T.txsrc[0]
            src[n, 1] = T.txsrc[1]
            src[n, 2] = T.txsrc[2]
        else:
            src[n, 0] = -1
            src[n, 1] = -1
            src[n, 2] = -1
        n += 1
    return n


@njit_core
def tx_ready(T, i, now):
    """Would `next_packet` (with every port) produce something now? A cheap hint for schedulers."""
    q = T.qp[i]
    if q["aeth_pending"] or q["nack_n"] > 0 or q["ack_pending"] == D.ACK_NOW:
        return True
    if q["ack_pending"] == D.ACK_AT_DEADLINE and now >= q["ack_deadline"]:
        return True
    if q["state"] != D.QPS_RTS:
        return False
    if q["ev_probe_due"] or q["rel_probe_pending"] == 1 or (q["rev_probe_due"] and q["rev_probe_slot"] < 0):
        return True
    if q["tx_row"] < 0:
        return False
    if q["n_lost"] > 0:
        return q["inflight"] == 0 or q["inflight"] + q["mtu"] <= q["cwnd"]
    if q["wr_next"] != q["wr_tail"] and psn_diff(q["sq_psn"], q["una_psn"]) < requester.psn_limit(q):
        return q["inflight"] == 0 or q["inflight"] + q["mtu"] <= q["cwnd"]
    return False


@njit_core
def on_timer(T, i, now):
    """Handle every deadline of QP `i` at or before `now`."""
    q = T.qp[i]
    if q["state"] == D.QPS_ERROR or q["state"] == D.QPS_RESET:
        return
    if now >= q["rto_deadline"]:
        loss.on_rto(T, i, now)
        if q["state"] == D.QPS_ERROR:
            return
    if now >= q["loss_deadline"]:
        loss.detect_losses(T, i, now)
    if now >= q["rel_probe_deadline"]:
        if q["inflight"] > 0:
            q["rel_probe_pending"] = 1
            q["rel_probe_deadline"] = now + requester.probe_timeout(q)
        else:
            q["rel_probe_deadline"] = D.NEVER
    if q["ack_pending"] == D.ACK_AT_DEADLINE and now >= q["ack_deadline"]:
        q["ack_pending"] = D.ACK_NOW
    if now >= q["ev_probe_deadline"]:
        q["ev_probe_due"] = 1
        q["ev_probe_deadline"] = evset.next_probe_time(T, i, now)
    if q["rev_probe_slot"] >= 0 and now >= q["rev_probe_timeout"]:
        s = q["rev_probe_slot"]
        q["rev_probe_slot"] = -1
        q["rev_probe_timeout"] = D.NEVER
        q["rev_probe_misses"] += 1
        # the probe or its answer was lost; the answer leaves on the peer's own reverse EV,
        # which may be the broken path, so by default (``rev_probe_miss_bad`` = 0) the probed EV
        # is only not adopted: retiring it would hold the peer's path against ours
        if q["rev_probe_miss_bad"]:
            T.ev[q["ev_row"], s]["losses"] += 1
            evpolicy.on_feedback(T, i, s, D.FB_LOSS, 0, now)
    if now >= q["rev_probe_deadline"]:
        if now < q["rx_active_until"] and now >= q["tx_active_until"]:
            q["rev_probe_due"] = 1
            q["rev_probe_deadline"] = now + q["rev_probe_interval_ps"]
        elif now < q["rx_active_until"]:
            q["rev_probe_deadline"] = now + q["rev_probe_interval_ps"]
        else:
            q["rev_probe_deadline"] = D.NEVER


@njit_core
def next_deadline(T, i):
    """Earliest future deadline of QP `i` (NEVER when none)."""
    q = T.qp[i]
    if q["state"] == D.QPS_ERROR or q["state"] == D.QPS_RESET:
        return D.NEVER
    t = q["rto_deadline"]
    if q["loss_deadline"] < t:
        t = q["loss_deadline"]
    if q["rel_probe_deadline"] < t:
        t = q["rel_probe_deadline"]
    if q["ack_pending"] == D.ACK_AT_DEADLINE and q["ack_deadline"] < t:
        t = q["ack_deadline"]
    if q["ev_probe_deadline"] < t:
        t = q["ev_probe_deadline"]
    if q["rev_probe_deadline"] < t:
        t = q["rev_probe_deadline"]
    if q["rev_probe_slot"] >= 0 and q["rev_probe_timeout"] < t:
        t = q["rev_probe_timeout"]
    return t


@njit_core
def replace_ev(T, i, k, value, denied, now):
    """REPLACE_EV on a profile QP `i` uses (`mrc.ctl`): EV slot `k` names another path from now on.

    Packets in flight on the old path are resent, as when their plane goes away (`_evict_plane`):
    what becomes of them says nothing about the new path, and a loss among them must not retire it.
    The slot starts afresh (no counters, no probe, a backup until `evset.rebalance` picks it; GOOD, or
    DENIED when `denied`), and it stops being its plane's reverse EV or the target of a pending
    probe. Late answers to the old path's packets carry the old EV and match nothing. mrc_ctl.h and
    the public notes say nothing of packets in flight on a replaced EV: ours.
    """
    q = T.qp[i]
    if q["tx_row"] >= 0:
        psn = q["una_psn"]
        while psn_diff(q["sq_psn"], psn) > 0:
            ent = tx_slot(T, q, psn)
            if ent["state"] == D.TX_INFLIGHT and ent["ev_slot"] == k:
                loss.mark_lost(T, i, psn, False)
            psn = psn_add(psn, 1)
    e = T.ev[q["ev_row"], k]
    e["ev"] = value
    e["state"] = D.EV_DENIED if denied else D.EV_GOOD
    e["active"] = 0
    e["probe_ok"] = 0
    e["probe_outstanding"] = 0
    e["losses"] = 0
    e["probe_deadline"] = D.NEVER
    e["probe_sent"] = -1
    e["bad_since"] = 0
    e["tx_pkts"] = 0
    e["last_rtt"] = 0
    e["ecn_marks"] = 0
    e["trims"] = 0
    for p in range(i64(q["n_planes"])):
        if q["rev_ev"][p] == k:
            q["rev_ev"][p] = -1
    if q["rev_probe_slot"] == k:
        q["rev_probe_slot"] = -1
        q["rev_probe_timeout"] = D.NEVER
    if q["rel_probe_slot"] == k:
        q["rel_probe_slot"] = -1
        q["rel_probe_pending"] = 0
    evset.rebalance(T, i)


@njit_core
def _evict_plane(T, i, planes_lost):
    """Packets in flight on a plane that just went away are resent on the others."""
    q = T.qp[i]
    if q["tx_row"] < 0:
        return
    psn = q["una_psn"]
    while psn_diff(q["sq_psn"], psn) > 0:
        ent = tx_slot(T, q, psn)
        if ent["state"] == D.TX_INFLIGHT:
            plane = T.ev[q["ev_row"], ent["ev_slot"]]["plane"]
            if (planes_lost >> plane) & 1:
                loss.mark_lost(T, i, psn, False)
        psn = psn_add(psn, 1)


@njit_core
def _ports_changed(T, i, before, now):
    """The planes QP `i` may use went from `before` to `evset.plane_mask` now: packets in flight on a
    plane that left are resent elsewhere, probing resumes on a plane that came back, and work that can
    no longer leave keeps the retransmission timer running (`requester.hold_rto`)."""
    after = evset.plane_mask(T, i)
    lost = before & ~after
    gained = after & ~before
    if lost:
        _evict_plane(T, i, lost)
    if gained:
        evset.planes_back(T, i, gained, now)
    requester.hold_rto(T, i, now)


@njit_core
def set_local_ports(T, i, mask, now):
    """Local NIC ports up (bit p = plane p). Down planes are removed at once, up ones restored."""
    before = evset.plane_mask(T, i)
    T.qp[i]["local_ports"] = mask
    _ports_changed(T, i, before, now)


@njit_core
def set_remote_ports(T, i, mask, now):
    """The peer's port status update: its ports up (bit p = plane p). A claim that would leave the QP no
    plane is kept but set aside while it would (``psu_floor``, `evset.plane_mask`)."""
    before = evset.plane_mask(T, i)
    T.qp[i]["remote_ports"] = mask
    _ports_changed(T, i, before, now)
