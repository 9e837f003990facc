"""Responder: direct placement, PSN tracking, SACK/NACK generation, in-order WIMM completions.

Sources and choices (docs/protocol.md):

- Every packet carries its final address (RETH), so data is placed as it
  arrives, in any order (OAI, MANI 4). The R_Key and the range are checked
  against the registered regions first. The range checked is the packet's
  RETH extent, from its address to the end of its message (``dma_len``, see
  `requester`), so any packet of a write that runs past the end of the
  region is refused, even the in-range ones that arrive first. A refused
  write is reported (E_ACCESS_VIOLATION), answered with an AETH NAK "remote
  access error", and the QP enters ERROR, as an IB RC responder does.
  Memory outside the region is never written. (A packet cannot tell where
  its message starts, so of a write that starts *before* the region, the
  in-range packets that arrive before the first one are placed; the write
  still fails.)
- Every other fatal condition (a Write-with-Immediate with no posted
  receive, more than ``max_wimm_dest`` immediates waiting) is also answered
  with an AETH NAK (remote operational error; invalid request) before the QP
  enters ERROR, so the requester fails at once with the cause instead of
  exhausting its retries. A data packet that reaches a QP which failed that
  way repeats the NAK (the first one may have been lost).
- A data packet or probe whose PSN is more than ``MAX_PSN_SPAN`` (255 x 128,
  the widest span a requester may have in flight) from the next PSN expected
  cannot come from the peer: it is counted in ``rx_oow`` and dropped before
  anything else (no NACK, no SACK, no repeated AETH NAK), so a blind forger
  neither ends the QP with a bad R_Key nor turns us into a reflector. Inside
  that band the protocol's answers stand, one answer per packet at most.
- Received PSNs are tracked in a window of ``mpr_track`` x 128 slots above
  ``cack_psn`` (``mpr_dest``, the MPR every SACK advertises, except while a
  dynamic-MPR shrink holds the PSNs sent under the larger window: `mpr`); a
  PSN beyond it gets NACK PSN_OOR_WINDOW; a PSN at or below ``cack_psn`` or
  already in the window is a duplicate (acknowledged, not placed again:
  exactly-once placement).
- Every SACK and NACK says how long the responder held the packet it answers
  (``svc_time``, 64 ns units, never more than the true hold: `svc_time`;
  ``svc_time_report``; an extension in SETH / NETH byte 12, docs/wire.md).
- Trimmed headers (``trim`` set from the DSCP) are answered with NACK
  TRIMMED or TRIMMED_LASTHOP on the control class (MANI 4), unless the QP's
  ``trim_nack_dest`` capability is off (mrc.h ``MRC_QP_TRIM_NACK_DEST``; on
  by default): then the header is only counted and the requester recovers
  as from a silent loss.
- SACKs reflect the triggering packet's EV (``entropy``) and timestamp, set
  M = SKIP_ONCE when it was CE-marked, and ALWAYS_SKIP after
  ``always_skip_marks`` consecutive CE-marked packets on the same EV (our
  rule: MRC's criterion is not public), and carry CC_STATE (``ooo_count`` =
  PSNs received above ``cack_psn``; ``rcvd_bytes`` in units of 256 bytes,
  mod 2^24, as the third-party ns-3 model; ``rcv_cwnd_pen``).
- ACK coalescing (UET htsim behaviour; MRC text not public): a SACK at the
  latest after ``ack_every_pkts`` packets, ``ack_every_bytes`` bytes or
  ``ack_delay_ps``; at once for a CE mark, an AckReq, a duplicate or a probe.
- Write-with-Immediate completions are delivered when ``cack_psn`` passes
  the message's last packet, hence in message order; immediates that
  arrive early wait in their PSN slot. More than ``max_wimm_dest`` waiting,
  or one with no posted receive, is a fatal error (no RNR in MRC).
- Control packets leave on the reverse EV of the plane the trigger arrived
  on (MANI 3.8), refreshed by probes (see `dispatch.next_packet`). A
  duplicate data packet, or a probe after we sent SACKs, says our SACKs may
  not have arrived: that plane's reverse EV is
  dropped and the answer takes another (`evset.drop_rev_ev`, ``rev_rotate``).
"""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core import evset, mpr
from mrc.core import events
from mrc.core.tables import psn_slot
from mrc.core.psn import psn_add, psn_diff
from mrc.core.flush import enter_error
from mrc.wire.constants import (
    ECN_CE, M_ALWAYS_SKIP, M_NONE, M_SKIP_ONCE, OP_MRC_ACKNOWLEDGE, OP_MRC_RELIABILITY_NACK,
    OP_MRC_RELIABILITY_SACK, OP_MRC_WRITE_LAST, OP_MRC_WRITE_LAST_IMM, OP_MRC_WRITE_ONLY, OP_MRC_WRITE_ONLY_IMM,
    SVC_TIME_MAX, SVC_TIME_UNIT_PS, NackReason,
)

NR_TRIMMED = int(NackReason.TRIMMED)
NR_TRIMMED_LASTHOP = int(NackReason.TRIMMED_LASTHOP)
NR_PSN_OOR_WINDOW = int(NackReason.PSN_OOR_WINDOW)
NACK_PROBE_REPLY = 0xFF  # queue entry that is a probe's SACK, not a NACK


@njit_core(inline="always")
def rx_slot(T, q, psn):
    """PSN `psn`'s RX slot of QP row `q` (`tables.psn_slot`)."""
    tile, col = psn_slot(T.rx, psn)
    return T.rx[tile, q["rx_row"], col]


ARRIVAL_TICK_PS = 16_000  # arrivals are noted in 16 ns ticks, mod 2^16 (1.05 ms)


@njit_core(inline="always")
def arrival_tick(now):
    """`now` (ps) in 16 ns ticks mod 2^16: when a packet arrived, kept in 16 bits to time its answer's hold."""
    return (now // ARRIVAL_TICK_PS) & 0xFFFF


@njit_core(inline="always")
def svc_time(q, arrived, now):
    """SETH / NETH ``svc_time`` for an answer sent at `now` to a packet that arrived at tick `arrived`
    (`arrival_tick`): how long the responder held it, in units of `SVC_TIME_UNIT_PS` (64 ns), rounded
    down, at most `SVC_TIME_MAX` (16.32 us); 0 when ``svc_time_report`` is off. Never more than the
    true hold: one tick is taken off for the rounding of the two ends, and a hold the 16-bit ticks
    alias (1.05 ms or more) is beyond the field anyway (extension, docs/protocol.md)."""
    if q["svc_time_report"] == 0:
        return 0
    held = (arrival_tick(now) - i64(arrived)) & 0xFFFF
    units = (held - 1) * ARRIVAL_TICK_PS // SVC_TIME_UNIT_PS if held > 0 else 0
    return units if units < SVC_TIME_MAX else SVC_TIME_MAX


@njit_core
def _queue_control(q, reason, psn, ev, ts, port, m, now):
    n = q["nack_n"]
    if n >= q["nack_reason"].shape[0]:
        q["rx_dropped"] += 1  # queue full: the requester recovers by timeout or probe
        return
    q["nack_at"] = arrival_tick(now)  # the newest entry's arrival: no entry's service time is over-reported
    q["nack_reason"][n] = reason
    q["nack_psn"][n] = psn
    q["nack_ev"][n] = ev
    q["nack_ts"][n] = ts
    q["nack_port"][n] = port
    q["nack_m"][n] = m
    q["nack_n"] = n + 1


@njit_core
def _mark_m(q, ev, ce):
    """M field for a packet on EV `ev`: SKIP_ONCE if CE, ALWAYS_SKIP after a run of marks."""
    h = ev % q["mark_ev"].shape[0]
    if not ce:
        if q["mark_ev"][h] == ev:
            q["mark_cnt"][h] = 0
        return M_NONE
    if q["mark_ev"][h] != ev:
        q["mark_ev"][h] = ev
        q["mark_cnt"][h] = 0
    q["mark_cnt"][h] += 1
    if q["always_skip_marks"] > 0 and q["mark_cnt"][h] >= q["always_skip_marks"]:
        q["mark_cnt"][h] = 0
        return M_ALWAYS_SKIP
    return M_SKIP_ONCE


@njit_core
def _owe_ack(q, p, m, now, immediate):
    if q["ack_pending"] == D.ACK_NONE or m != M_NONE or q["ack_m"] == M_NONE:
        q["ack_trigger_psn"] = p["psn"]
        q["ack_trigger_ev"] = p["ev"]
        q["ack_trigger_ts"] = p["tx_timestamp"]
        q["ack_trigger_port"] = p["port"]
        q["ack_trigger_at"] = arrival_tick(now)
        q["ack_m"] = m
    if immediate:
        q["ack_pending"] = D.ACK_NOW
    elif q["ack_pending"] == D.ACK_NONE:
        q["ack_pending"] = D.ACK_AT_DEADLINE
        q["ack_deadline"] = now + q["ack_delay_ps"]


@njit_core(inline="always")
def psn_plausible(q, psn):
    """Whether a data or probe PSN can come from the peer: at most `D.MAX_PSN_SPAN` from the next PSN
    expected. A requester's PSNs lie in [una_psn, sq_psn), a span below MPR x 128, and una_psn <= our
    cack_psn + 1 <= sq_psn, so anything further is forged (or from a QP that no longer exists)."""
    d = psn_diff(psn, psn_add(q["cack_psn"], 1))
    return -D.MAX_PSN_SPAN <= d <= D.MAX_PSN_SPAN


@njit_core
def _fatal(T, i, syndrome, psn, port, cause, now):
    """Stop: owe the requester an AETH NAK with `syndrome`, then enter ERROR with `cause`."""
    q = T.qp[i]
    q["aeth_pending"] = 1
    q["aeth_syndrome"] = syndrome
    q["aeth_psn"] = psn
    q["ack_trigger_port"] = port
    enter_error(T, i, cause, now)


@njit_core
def _lookup_mr(T, rkey, va, length):
    for m in range(T.mr.shape[0]):
        r = T.mr[m]
        if r["valid"] and r["rkey"] == rkey and (r["access"] & 1):
            if va >= r["va"] and va - r["va"] <= r["length"] and length <= r["length"] - (va - r["va"]):
                return m
            return -1
    return -1


@njit_core
def _deliver(T, i, port, now):
    """Advance cack_psn over received slots; complete messages in order."""
    q = T.qp[i]
    while True:
        nxt = psn_add(q["cack_psn"], 1)
        s = rx_slot(T, q, nxt)
        if (s["flags"] & D.RX_RECEIVED) == 0:
            return
        q["rx_msg_bytes"] += s["length"]
        if s["flags"] & D.RX_LAST:
            q["rx_msn"] = (q["rx_msn"] + 1) & 0xFFFF
            if s["flags"] & D.RX_IMM:
                q["wimm_stashed"] -= 1
                q["rx_rqmsn"] = (q["rx_rqmsn"] + 1) & 0xFFFF
                if q["rq_head"] == q["rq_tail"]:
                    _fatal(T, i, D.AETH_NAK_REMOTE_OP, nxt, port, D.ERR_NO_RECV, now)
                    return
                r = T.rq[q["rq_row"], q["rq_head"] % T.rq.shape[1]]
                if not events.recv_imm(T, i, now, D.WC_SUCCESS, r["wr_id"], q["rx_msg_bytes"], s["imm"]):
                    return  # event table full: deliver on the next packet instead of losing it
                q["rq_head"] += 1
            q["rx_msg_bytes"] = 0
        s["flags"] = 0
        q["rx_held"] -= 1
        q["cack_psn"] = nxt
        if q["ooo_count"] > 0:
            q["ooo_count"] -= 1


@njit_core(inline="always")
def on_data(T, i, p, now):
    """An MRC write packet arrived. Sets ``T.place`` when its payload must be placed."""
    q = T.qp[i]
    T.place[0] = -1
    psn = p["psn"] & D.PSN_MASK
    if not psn_plausible(q, psn):
        q["rx_oow"] += 1
        return
    if (q["state"] != D.QPS_RTR and q["state"] != D.QPS_RTS) or q["rx_row"] < 0:
        q["rx_dropped"] += 1
        if q["state"] == D.QPS_ERROR and q["aeth_syndrome"] != 0:
            q["aeth_pending"] = 1  # the requester still sends: it missed our NAK
            q["ack_trigger_port"] = p["port"]
        return
    q["rx_active_until"] = now + 2 * q["base_rtt"]
    if q["rev_probe_deadline"] == D.NEVER:
        q["rev_probe_deadline"] = now + q["rev_probe_interval_ps"]
    if p["trim"] != 0:
        q["rx_trimmed"] += 1
        if q["trim_nack_dest"] == 0:
            return  # trim NACKs disabled (MRC_QP_TRIM_NACK_DEST off): the requester's loss detection recovers
        reason = NR_TRIMMED_LASTHOP if p["trim"] == 2 else NR_TRIMMED
        _queue_control(q, reason, psn, p["ev"], p["tx_timestamp"], p["port"], 0, now)
        return
    d = psn_diff(psn, psn_add(q["cack_psn"], 1))
    window = mpr.track_window(q)
    if d < 0 or (d < window and (rx_slot(T, q, psn)["flags"] & D.RX_RECEIVED)):
        q["rx_dup"] += 1
        # a retransmission of data we hold: the requester probably missed our SACKs, so the
        # answer (which leaves on this plane, `_owe_ack`) takes another reverse EV
        evset.drop_rev_ev(T, i, i64(p["port"]))
        _owe_ack(q, p, 0, now, True)
        return
    if d >= window:
        q["rx_oor"] += 1
        _queue_control(q, NR_PSN_OOR_WINDOW, psn, p["ev"], p["tx_timestamp"], p["port"], 0, now)
        return
    length = p["payload_len"]
    op = p["opcode"]
    if q["emulate_access"] == 0:
        # the RETH extent: this packet's payload and the rest of its message
        extent = i64(p["dma_len"]) if p["dma_len"] > length else i64(length)
        m = _lookup_mr(T, p["rkey"], p["va"], extent)
        if m < 0:
            events.access_violation(T, i, now, p["va"], extent, p["rkey"], p["ev"], p["port"], psn)
            _fatal(T, i, D.AETH_NAK_REMOTE_ACCESS, psn, p["port"], D.ERR_REMOTE_ACCESS, now)
            return
        T.place[0] = m
        T.place[1] = p["va"] - T.mr[m]["va"]
        T.place[2] = length
        T.place[3] = 0
    s = rx_slot(T, q, psn)
    flags = D.RX_RECEIVED
    last = (op == OP_MRC_WRITE_LAST or op == OP_MRC_WRITE_LAST_IMM
            or op == OP_MRC_WRITE_ONLY or op == OP_MRC_WRITE_ONLY_IMM)
    if last:
        flags |= D.RX_LAST
    if op == OP_MRC_WRITE_LAST_IMM or op == OP_MRC_WRITE_ONLY_IMM:
        flags |= D.RX_IMM
        s["imm"] = p["imm"]
        q["wimm_stashed"] += 1
    s["flags"] = flags
    s["length"] = length
    q["rx_held"] += 1
    q["rx_pkts"] += 1
    q["rx_bytes"] += length
    q["rcvd_bytes"] += length
    if d > 0:
        q["ooo_count"] += 1
    if q["wimm_stashed"] > q["max_wimm_dest"]:
        _fatal(T, i, D.AETH_NAK_INV_REQ, psn, p["port"], D.ERR_WIMM_OVERFLOW, now)
        return
    _deliver(T, i, p["port"], now)
    if q["state"] == D.QPS_ERROR:
        return
    q["ack_pkts"] += 1
    q["ack_bytes"] += length
    m = _mark_m(q, p["ev"], p["ecn"] == ECN_CE)
    immediate = (
        m != 0
        or p["ackreq"] != 0
        or q["ack_pkts"] >= q["ack_every_pkts"]
        or q["ack_bytes"] >= q["ack_every_bytes"]
    )
    _owe_ack(q, p, m, now, immediate)


@njit_core(inline="always")
def on_probe(T, i, p, now):
    """A reliability probe (PETH): answer with a SACK, pr = 1, reflecting the probe's EV."""
    q = T.qp[i]
    if not psn_plausible(q, p["psn"] & D.PSN_MASK):
        q["rx_oow"] += 1
        return
    if q["state"] != D.QPS_RTR and q["state"] != D.QPS_RTS:
        q["rx_dropped"] += 1
        return
    # a probe after we have sent SACKs: the requester probes when it has heard no SACK for a
    # while (or to test an EV it retired, perhaps for want of our SACKs), so the answer (which
    # leaves on this plane) takes another reverse EV (`evset.drop_rev_ev`)
    if q["rx_row"] >= 0 and q["sacks_tx"] > 0:
        evset.drop_rev_ev(T, i, i64(p["port"]))
    # a QP without a receive half (no RX row) answers too: its SACK reports nothing received
    _queue_control(q, NACK_PROBE_REPLY, p["psn"], p["ev"], p["tx_timestamp"], p["port"], 1 if p["ecn"] == ECN_CE else 0,
                   now)


@njit_core
def fill_sack(T, i, out, k, trigger_psn, entropy, ts, m, pr, ev_slot, arrived, now):
    """Build a RELIABILITY_SACK describing the current receive state into out[k]; the packet it answers
    arrived at `arrived` (`arrival_tick`)."""
    q = T.qp[i]
    mpr.settle(q)
    out[k] = T.pkt0[0]
    p = out[k]
    cack = q["cack_psn"]
    p["opcode"] = OP_MRC_RELIABILITY_SACK
    p["dqpn"] = q["dest_qpn"]
    p["pkey"] = 0xFFFF
    p["psn"] = trigger_psn
    p["ext_type"] = 0
    p["m"] = m
    p["pr"] = pr
    off = psn_diff(trigger_psn, cack)
    if off > 32767 or off < -32768:
        off = 0
    p["ack_psn_offset"] = off
    p["entropy"] = entropy
    p["spdcid"] = q["qpn"] & 0xFFFF
    p["dpdcid"] = q["dest_qpn"] & 0xFFFF
    p["cack_psn"] = cack
    p["cc_type"] = 0
    p["mpr"] = q["mpr_dest"] if q["mpr_dest"] < 256 else 255
    p["svc_time"] = svc_time(q, arrived, now)
    window = mpr.track_window(q)
    if off <= 64:
        sack_off = 1
    else:
        sack_off = off - 63
    p["sack_offset"] = sack_off
    base = psn_add(cack, sack_off)
    bits = 0
    held = i64(q["rx_held"])  # slots received beyond cack: once all are found, the rest of the bitmap is 0
    found = 0
    for b in range(64):
        if found >= held or sack_off + b > window or q["rx_row"] < 0:
            break
        if rx_slot(T, q, base + b)["flags"] & D.RX_RECEIVED:
            bits |= 1 << b
            found += 1
    p["sack_bitmap"] = bits
    p["tx_timestamp"] = ts
    p["ooo_count"] = q["ooo_count"] if q["ooo_count"] < 0x7FFF else 0x7FFF
    p["rcv_cwnd_pen"] = q["rcv_cwnd_pen"]
    p["rcvd_bytes"] = (q["rcvd_bytes"] >> 8) & 0xFFFFFF
    e = T.ev[q["ev_row"], ev_slot]
    p["ev"] = e["ev"]
    p["port"] = e["plane"]
    p["dscp"] = q["dscp_ctrl"]
    q["sacks_tx"] += 1


@njit_core
def fill_nack(T, i, out, k, reason, psn, entropy, ts, ev_slot, arrived, now):
    q = T.qp[i]
    out[k] = T.pkt0[0]
    p = out[k]
    p["opcode"] = OP_MRC_RELIABILITY_NACK
    p["dqpn"] = q["dest_qpn"]
    p["pkey"] = 0xFFFF
    p["psn"] = psn
    p["nack_reason"] = reason
    p["entropy"] = entropy
    p["spdcid"] = q["qpn"] & 0xFFFF
    p["dpdcid"] = q["dest_qpn"] & 0xFFFF
    p["nack_psn"] = psn
    p["svc_time"] = svc_time(q, arrived, now)
    p["cc_type"] = 2  # NETH carries no MPR (docs/wire.md): the window rides on every SACK (SETH mpr)
    p["tx_timestamp"] = ts
    e = T.ev[q["ev_row"], ev_slot]
    p["ev"] = e["ev"]
    p["port"] = e["plane"]
    p["dscp"] = q["dscp_ctrl"]
    q["nacks_tx"] += 1


@njit_core
def fill_aeth_nak(T, i, out, k, ev_slot):
    q = T.qp[i]
    out[k] = T.pkt0[0]
    p = out[k]
    p["opcode"] = OP_MRC_ACKNOWLEDGE
    p["dqpn"] = q["dest_qpn"]
    p["pkey"] = 0xFFFF
    p["psn"] = q["aeth_psn"]
    p["aeth_syndrome"] = q["aeth_syndrome"]
    p["aeth_msn"] = q["rx_msn"]
    e = T.ev[q["ev_row"], ev_slot]
    p["ev"] = e["ev"]
    p["port"] = e["plane"]
    p["dscp"] = q["dscp_ctrl"]
