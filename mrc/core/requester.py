"""Requester send path: segmentation into packets, retransmissions, probes.

- Only RDMA Write and Write-with-Immediate exist (mrc.h README: READ, SEND
  and ATOMIC "are not permitted"); the Python API refuses the others.
- A message is cut at the path MTU (``qp.mtu`` payload bytes). Every packet
  carries METH (msn, rqmsn), TSETH (ts = 1) and a RETH whose virtual address
  advances by the MTU per packet (MANI: RETH in "first, middle, last, and
  only"). RETH ``dma_len`` is the number of message bytes from this packet's
  address to the end of the message (our choice; MRC text not public), so
  every packet tells the responder the rest of its message's extent.
- In flight: PSN span < min(mpr, peer mpr) x 128 and payload bytes <= cwnd
  (at least one packet may always be in flight); the peer's MPR is the one its
  latest SACK advertises, which dynamic MPR changes while the QP runs (`mpr`).
- Retransmissions reuse the PSN, set BTH rtx, take a new EV, and use the
  retransmission DSCP.
- The EV of every packet comes from the QP's selection policy
  (`evpolicy.select_ev`: MRC by default).
"""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core import evset
from mrc.core.evpolicy import select_ev
from mrc.core.nscc import window_open
from mrc.core.psn import psn_add, psn_diff
from mrc.core.tables import psn_slot
from mrc.wire.constants import (
    ECN_ECT0, OP_MRC_RELIABILITY_PROBE, OP_MRC_WRITE_FIRST, OP_MRC_WRITE_LAST, OP_MRC_WRITE_LAST_IMM,
    OP_MRC_WRITE_MIDDLE, OP_MRC_WRITE_ONLY, OP_MRC_WRITE_ONLY_IMM,
)



@njit_core(inline="always")
def tx_slot(T, q, psn):
    """PSN `psn`'s TX slot of QP row `q` (`tables.psn_slot`)."""
    tile, col = psn_slot(T.tx, psn)
    return T.tx[tile, q["tx_row"], col]


@njit_core(inline="always")
def psn_limit(q):
    mpr = q["mpr"]
    if q["peer_mpr"] != 0 and q["peer_mpr"] < mpr:
        mpr = q["peer_mpr"]
    return i64(mpr) * D.MPR_UNIT


@njit_core(inline="always")
def rto_interval(q):
    """Local ACK timeout 1.024 us x 2^timeout (mrc.h); exponential backoff after the linear retries."""
    base = 1_024_000 << i64(q["timeout"])
    extra = i64(q["retries"]) - i64(q["retry_linear"])
    if extra > 0:
        base <<= min(extra, 20)
    return base


@njit_core(inline="always")
def timestamp(q, now):
    return (now // q["ts_unit_ps"]) & 0xFFFF


@njit_core(inline="always")
def clear_packet(T, out, k):
    out[k] = T.pkt0[0]


@njit_core(inline="always")
def _fill_common(q, p, e, now):
    p["dqpn"] = q["dest_qpn"]
    p["tver"] = 0
    p["pkey"] = 0xFFFF
    p["ts"] = 1
    p["tx_timestamp"] = timestamp(q, now)
    p["ftype"] = 1
    p["ev"] = e["ev"]
    p["port"] = e["plane"]
    p["ecn"] = ECN_ECT0
    e["tx_pkts"] += 1


@njit_core
def _fill_data(T, i, out, k, ent, psn, ev_slot, now, is_rtx):
    q = T.qp[i]
    w = T.wr[q["wr_row"], ent["wr"] % T.wr.shape[1]]
    clear_packet(T, out, k)
    _fill_common(q, out[k], T.ev[q["ev_row"], ev_slot], now)
    p = out[k]
    p["opcode"] = ent["opcode"]
    p["psn"] = psn
    p["rtx"] = 1 if is_rtx else 0
    last = (ent["opcode"] == OP_MRC_WRITE_LAST or ent["opcode"] == OP_MRC_WRITE_LAST_IMM
            or ent["opcode"] == OP_MRC_WRITE_ONLY or ent["opcode"] == OP_MRC_WRITE_ONLY_IMM)
    p["ackreq"] = 1 if last else 0
    p["msn"] = ent["msn"]
    p["rqmsn"] = ent["rqmsn"]
    p["va"] = w["remote_va"] + ent["offset"]
    p["rkey"] = w["rkey"]
    p["dma_len"] = w["length"] - ent["offset"]
    if ent["opcode"] == OP_MRC_WRITE_LAST_IMM or ent["opcode"] == OP_MRC_WRITE_ONLY_IMM:
        p["imm"] = w["imm"]
    p["payload_len"] = ent["length"]
    p["dscp"] = q["dscp_rtx"] if is_rtx else q["dscp_data"]
    T.txsrc[0] = ent["wr"]
    T.txsrc[1] = ent["offset"]
    T.txsrc[2] = ent["length"]
    q["tx_pkts"] += 1
    q["tx_bytes"] += ent["length"]
    q["tx_active_until"] = now + q["base_rtt"]


@njit_core(inline="always")
def _arm_after_send(T, i, now, alone):
    """Timers after a transmission; `alone`: the packet is the only one outstanding, so the local ACK
    timeout starts from it (a deadline left from before, held for work that could not leave
    (`hold_rto`) or not yet fired after the last acknowledgement, is not this packet's)."""
    q = T.qp[i]
    if alone or q["rto_deadline"] == D.NEVER:
        q["rto_deadline"] = now + rto_interval(q)
    if q["rel_probe_deadline"] == D.NEVER:
        q["rel_probe_deadline"] = now + probe_timeout(q)


@njit_core
def has_send_work(q):
    """Unacknowledged PSNs, or work requests not yet (fully) sent."""
    return q["tx_row"] >= 0 and (q["wr_next"] != q["wr_tail"] or q["sq_psn"] != q["una_psn"])


@njit_core
def hold_rto(T, i, now):
    """Liveness: a QP in RTS with send work keeps its local ACK timeout armed while no packet can leave.

    No packet can leave when no usable EV sits on a plane the QP may use (`evset.can_send`: its ports
    down, every EV there ASSUMED_BAD or DENIED). With packets in flight the timer runs anyway; with none
    (everything sent was acknowledged, the next work request waits) nothing was armed and the QP waited
    for ever, silent. Held, the timer expires as if a packet had been lost (`loss.on_rto`): a retry is
    counted and after the mrc.h retry schedule (``timeout``, ``retry_linear``, ``retry_exp``) the QP
    enters ERROR (RETRY_EXC_ERR), as an IB RC QP whose port is down does (its packets go nowhere and the
    ACK timer runs). A path that comes back first (a port, a probed EV) lets the work go on."""
    q = T.qp[i]
    if q["state"] != D.QPS_RTS or q["rto_deadline"] != D.NEVER or not has_send_work(q):
        return
    if not evset.can_send(T, i):
        q["rto_deadline"] = now + rto_interval(q)


@njit_core(inline="always")
def probe_timeout(q):
    """Tail-loss probe timeout: no SACK for srtt + reorder window + ACK delay."""
    return q["srtt"] + q["reorder_window_ps"] + q["ack_delay_ps"]


@njit_core
def next_new(T, i, now, port_mask, out, k):
    """Segment the next packet of new data into out[k]; True if one was built."""
    q = T.qp[i]
    cap = T.wr.shape[1]
    if q["wr_next"] == q["wr_tail"]:
        return False
    w = T.wr[q["wr_row"], q["wr_next"] % cap]
    if psn_diff(q["sq_psn"], q["una_psn"]) >= psn_limit(q):
        return False
    is_imm = w["opcode"] == D.WR_WRITE_IMM
    if q["seg_offset"] == 0 and is_imm and q["wimm_inflight"] >= q["max_wimm"]:
        return False
    remaining = i64(w["length"]) - i64(q["seg_offset"])
    length = min(i64(q["mtu"]), remaining)
    if not window_open(T, i, length):
        return False
    slot = select_ev(T, i, port_mask, now)
    if slot < 0:
        hold_rto(T, i, now)  # no EV on these ports; on none at all, the work must not wait unwatched
        return False
    first = q["seg_offset"] == 0
    last = length == remaining
    if first:
        w["msn"] = q["msn"]
        w["first_psn"] = q["sq_psn"]
        w["npkts"] = max(1, (i64(w["length"]) + i64(q["mtu"]) - 1) // i64(q["mtu"]))
    if first and last:
        op = OP_MRC_WRITE_ONLY_IMM if is_imm else OP_MRC_WRITE_ONLY
    elif first:
        op = OP_MRC_WRITE_FIRST
    elif last:
        op = OP_MRC_WRITE_LAST_IMM if is_imm else OP_MRC_WRITE_LAST
    else:
        op = OP_MRC_WRITE_MIDDLE
    psn = q["sq_psn"]
    alone = psn == q["una_psn"]
    ent = tx_slot(T, q, psn)
    ent["state"] = D.TX_INFLIGHT
    ent["opcode"] = op
    ent["rtx"] = 0
    ent["trimmed"] = 0
    ent["ev_slot"] = slot
    ent["wr"] = q["wr_next"]
    ent["offset"] = q["seg_offset"]
    ent["length"] = length
    ent["msn"] = q["msn"]
    ent["rqmsn"] = q["rqmsn"]
    ent["send_time"] = now
    q["tx_seq"] += 1
    ent["seq"] = q["tx_seq"]
    ent["first_seq"] = q["tx_seq"]
    _fill_data(T, i, out, k, ent, psn, slot, now, False)
    q["sq_psn"] = psn_add(psn, 1)
    q["inflight"] += length
    q["seg_offset"] += length
    if last:
        w["last_psn"] = psn
        w["segmented"] = 1
        q["wr_next"] += 1
        q["seg_offset"] = 0
        q["msn"] = (q["msn"] + 1) & 0xFFFF
        if is_imm:
            q["rqmsn"] = (q["rqmsn"] + 1) & 0xFFFF
            q["wimm_inflight"] += 1
    _arm_after_send(T, i, now, alone)
    return True


@njit_core
def next_rtx(T, i, now, port_mask, out, k):
    """Retransmit the lowest PSN waiting in TX_LOST into out[k]; True if one was built."""
    q = T.qp[i]
    if q["n_lost"] <= 0:
        return False
    if psn_diff(q["lost_lo"], q["una_psn"]) < 0:
        q["lost_lo"] = q["una_psn"]
    psn = q["lost_lo"]
    while psn_diff(q["sq_psn"], psn) > 0:
        ent = tx_slot(T, q, psn)
        if ent["state"] == D.TX_LOST:
            break
        psn = psn_add(psn, 1)
    if psn_diff(q["sq_psn"], psn) <= 0:
        q["n_lost"] = 0  # bookkeeping drifted: nothing is actually waiting
        return False
    q["lost_lo"] = psn
    ent = tx_slot(T, q, psn)
    if not window_open(T, i, ent["length"]):
        return False
    slot = select_ev(T, i, port_mask, now)
    if slot < 0:
        return False
    ent["state"] = D.TX_INFLIGHT
    ent["rtx"] += 1
    ent["trimmed"] = 0
    ent["ev_slot"] = slot
    ent["send_time"] = now
    q["tx_seq"] += 1
    ent["seq"] = q["tx_seq"]
    _fill_data(T, i, out, k, ent, psn, slot, now, True)
    q["inflight"] += ent["length"]
    q["n_lost"] -= 1
    q["rtx_pkts"] += 1
    _arm_after_send(T, i, now, False)
    return True


@njit_core
def build_probe(T, i, out, k, ev_slot, now):
    """A reliability probe (PETH) on EV slot `ev_slot`: consumes no PSN, elicits a SACK."""
    q = T.qp[i]
    e = T.ev[q["ev_row"], ev_slot]
    clear_packet(T, out, k)
    _fill_common(q, out[k], e, now)
    e["probe_sent"] = now  # its answer (a SACK with pr = 1 reflecting this EV) gives an RTT sample
    p = out[k]
    p["opcode"] = OP_MRC_RELIABILITY_PROBE
    p["psn"] = q["sq_psn"]
    p["probe_id"] = q["probe_id"]
    p["spdcid"] = q["qpn"] & 0xFFFF
    p["dpdcid"] = q["dest_qpn"] & 0xFFFF
    p["dscp"] = q["dscp_data"]
    q["probe_id"] = (q["probe_id"] + 1) & 0xFFFF
    q["probes_tx"] += 1

