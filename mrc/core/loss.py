"""Requester feedback: SACK, NACK and transport-ACK processing, loss detection, RTO.

Sources and choices (docs/protocol.md):

- SACK = cumulative ``cack_psn`` (every PSN up to and including it was
  received) + a 64-bit bitmap whose bit b is PSN ``cack_psn + sack_offset +
  b`` (UET ACK_CC layout, mrc-public-notes 2.4). Only the holes are
  retransmitted (MANI 3.6).
- NACK TRIMMED: retransmit now and SKIP the EV; TRIMMED_LASTHOP: retransmit,
  no EV penalty (MANI 3.5/3.6); NSCC takes the trimmed packet's bytes off
  the window (UE 1.0.3 3.6.13.5 NSCC.OnNACK). NO_BITMAP, NO_PKT_BUFFER,
  NO_RESOURCE: the responder lacked resources: retransmit, no EV penalty and
  no window change (NSCC.OnNACK moves cwnd for trims only). PSN_OOR_WINDOW:
  retransmit (NETH has no MPR: the responder's window comes from the SACKs).
  UNEXP_EVENT: fatal, the QP enters ERROR. (UET 1.0 semantics for the codes;
  the reactions are our reading.)
- What SACKs, NACKs and timeouts say about an EV goes to the QP's EV policy,
  and only there (`evpolicy.on_feedback`: FB_SACK, FB_ACKED per newly
  acknowledged PSN for policies that take it, FB_NACK, FB_LOSS, FB_TIMEOUT);
  MRC's reaction (SKIP, ASSUMED_BAD) is `evset.path_evidence`. The packets
  still in flight on a lost packet's EV are resent when that reaction retired it.
- Every SACK, NACK and AETH NAK is checked against the requester's window
  before it changes anything (a peer's packet is hostile until it fits): a
  NACK or AETH NAK must name a PSN that was sent (and, for an AETH NAK or an
  UNEXP_EVENT NACK, one still unacknowledged: what IBTA / UET make fatal is
  fatal only then); a SACK must acknowledge nothing beyond ``sq_psn`` and be
  at most ``MAX_PSN_SPAN`` behind ``una_psn``. Anything else is counted in
  ``rx_oow`` and dropped without an answer (answering would let a forger
  aim our packets at the real peer).
- Loss without a trim ("silent loss") is detected RACK-style (RFC 8985): an
  unacknowledged packet is lost once a packet sent after it (in the QP's
  total send order ``tx_seq``) has been acknowledged and it has been out for
  the last RTT plus ``reorder_window_ps``. Its EV becomes ASSUMED_BAD (MANI: "it assumes
  something on that path may have failed and immediately stops using it,
  retransmitting any packets that may have been lost"): every packet still
  in flight on that EV is retransmitted too. Loss detection by time rather
  than by duplicate count is what UET's spraying-tolerant recovery does.
  NSCC takes each lost packet's bytes off the window (NSCC.OnInferredLoss).
- RTT (MRC notes 3.5: "from TSETH timestamp reflected in CC_STATE or from a
  local send-time database"): a sample is now minus our own send time of the
  transmission the feedback answers (the SACK's trigger PSN cack_psn +
  ack_psn_offset, the NACK's PSN, or for a probe's answer the last probe sent
  on the EV it reflects); a NACK's sample goes to NSCC only, not into
  ``last_rtt`` / ``srtt`` (RACK's RTT is a delivered packet's, RFC 8985); the reflected 16-bit timestamp, which wraps every
  2^16 x ``ts_unit_ps``, only tells which transmission that was (no match, no
  sample: Karn's rule). The responder's service time (SETH / NETH
  ``svc_time``: how long it held the packet before answering, mrc.h
  SVC_TIME) is taken off every sample (``svc_time_peer``); UET 1.0 carries
  the target's service time in ACK_CC's NSCC state for the same purpose (UET
  behaviour; MRC 1.0 text not public). See `_rtt_sample`.
- A retransmission acknowledged sooner than the base RTT after it was sent
  cannot have been the copy that arrived: it is counted as spurious
  (``rtx_spurious`` <= ``rtx_pkts``). A packet declared lost and then
  acknowledged before it was resent is a false loss declaration, counted in
  ``lost_acked``.
- RTO (mrc.h): 1.024 us x 2^timeout without progress; ``retry_linear``
  expiries at that interval, then ``retry_exp`` with doubling intervals
  (25 = unlimited); beyond that the QP enters ERROR and every outstanding
  work request completes with an error status.
"""
from __future__ import annotations

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core import evpolicy, evset, nscc
from mrc.core import events
from mrc.core.psn import psn_add, psn_diff
from mrc.core.flush import enter_error
from mrc.core.requester import hold_rto, probe_timeout, rto_interval, timestamp, tx_slot
from mrc.wire.constants import M_NONE, M_SKIP_ONCE, SVC_TIME_UNIT_PS, NackReason

NR_TRIMMED = int(NackReason.TRIMMED)
NR_TRIMMED_LASTHOP = int(NackReason.TRIMMED_LASTHOP)
NR_UNEXP_EVENT = int(NackReason.UNEXP_EVENT)


@njit_core
def _acked(q, ent, now):
    """Account one PSN leaving flight because it was acknowledged; returns newly acked bytes."""
    st = ent["state"]
    if st == D.TX_INFLIGHT:
        q["inflight"] -= ent["length"]
        if ent["rtx"] > 0 and now - ent["send_time"] < q["base_rtt"]:
            q["rtx_spurious"] += 1
        elif ent["rtx"] == 0 and ent["seq"] > q["rack_seq"]:
            q["rack_seq"] = ent["seq"]
        return ent["length"]
    if st == D.TX_LOST:
        # declared lost, then acknowledged before it was resent: a false loss declaration, not a
        # retransmission (rtx_spurious counts only retransmissions, so it never exceeds rtx_pkts)
        q["n_lost"] -= 1
        q["lost_acked"] += 1
        return ent["length"]
    return 0


@njit_core
def _complete_wrs(T, i, now):
    """Send completions, in order, for every WR whose last PSN is now acknowledged."""
    q = T.qp[i]
    cap = T.wr.shape[1]
    while q["wr_head"] != q["wr_next"]:
        w = T.wr[q["wr_row"], q["wr_head"] % cap]
        if w["segmented"] == 0 or psn_diff(q["una_psn"], w["last_psn"]) <= 0:
            break
        if w["opcode"] == D.WR_WRITE_IMM and q["wimm_inflight"] > 0:
            q["wimm_inflight"] -= 1
        if not events.send_done(T, i, now, D.WC_SUCCESS, w["wr_id"], w["length"], w["post_time"]):
            break  # event table full: complete it on the next call instead of losing it
        q["wr_head"] += 1


@njit_core
def mark_lost(T, i, psn, trimmed):
    q = T.qp[i]
    ent = tx_slot(T, q, psn)
    if ent["state"] != D.TX_INFLIGHT:
        return False
    ent["state"] = D.TX_LOST
    ent["trimmed"] = 1 if trimmed else 0
    q["inflight"] -= ent["length"]
    q["n_lost"] += 1
    if q["n_lost"] == 1 or psn_diff(psn, q["lost_lo"]) < 0:
        q["lost_lo"] = psn
    return True


@njit_core
def _retire_ev_after_loss(T, i, slot, now, timeout):
    """A silent loss on EV `slot`: ASSUMED_BAD, and everything in flight on it is resent.
    `timeout`: declared by the retransmission timeout (REPS freezes on those only), not by RACK."""
    q = T.qp[i]
    e = T.ev[q["ev_row"], slot]
    e["losses"] += 1
    before = e["state"]
    evpolicy.on_feedback(T, i, slot, D.FB_TIMEOUT if timeout else D.FB_LOSS, 0, now)
    after = e["state"]  # the policy decides whether evidence moves EV states (MRC: ASSUMED_BAD)
    if after == D.EV_ASSUMED_BAD and before != D.EV_ASSUMED_BAD:
        psn = q["una_psn"]
        while psn_diff(q["sq_psn"], psn) > 0:
            ent = tx_slot(T, q, psn)
            if ent["state"] == D.TX_INFLIGHT and ent["ev_slot"] == slot:
                mark_lost(T, i, psn, False)
                nscc.loss(q, T.cc[q["cc_profile"]], ent["length"])
            psn = psn_add(psn, 1)


@njit_core
def detect_losses(T, i, now):
    """RACK: declare lost what a later-sent, delivered packet overtook long enough ago."""
    q = T.qp[i]
    q["loss_deadline"] = D.NEVER
    if q["rack_seq"] <= 0 or q["rack"] == 0:
        return
    wait = q["last_rtt"] + q["reorder_window_ps"]
    psn = q["una_psn"]
    while psn_diff(q["sq_psn"], psn) > 0:
        ent = tx_slot(T, q, psn)
        if ent["first_seq"] > q["rack_seq"]:
            break
        if ent["state"] == D.TX_INFLIGHT and ent["seq"] < q["rack_seq"]:
            due = ent["send_time"] + wait
            if now >= due:
                slot = ent["ev_slot"]
                mark_lost(T, i, psn, False)
                q["losses"] += 1
                nscc.loss(q, T.cc[q["cc_profile"]], ent["length"])
                _retire_ev_after_loss(T, i, slot, now, False)
            elif due < q["loss_deadline"]:
                q["loss_deadline"] = due
        psn = psn_add(psn, 1)


@njit_core
def _reprobe_after_timeout(T, i, now):
    """SACKs flow again after a SACK-less timeout: probe at once the EVs retired since it.

    The timeout retired every EV with data in flight, but a lost SACK path looks
    the same as lost data; the EVs whose data did arrive answer their probes and
    come back after ``probe_successes`` answers (about as many RTTs) instead of
    waiting ``ev_probe_interval_ps``. A dead EV's probe is lost and it stays
    ASSUMED_BAD. Ours (``rto_reprobe``); MRC and UET 1.0 texts are silent.
    """
    q = T.qp[i]
    since = q["rto_marked_since"]
    q["rto_marked_since"] = D.NEVER
    if q["rto_reprobe"] == 0:
        return
    row = T.ev[q["ev_row"]]
    for k in range(i64(q["n_ev"])):
        e = row[k]
        if e["state"] == D.EV_ASSUMED_BAD and e["bad_since"] >= since and e["probe_deadline"] > now:
            e["probe_deadline"] = now
            e["probe_ok"] = 0
            e["probe_outstanding"] = 0
            q["ev_probe_due"] = 1
            q["rto_reprobes"] += 1


@njit_core
def _progress(T, i, now):
    q = T.qp[i]
    q["retries"] = 0
    if psn_diff(q["sq_psn"], q["una_psn"]) > 0:
        q["rto_deadline"] = now + rto_interval(q)
        q["rel_probe_deadline"] = now + probe_timeout(q)
    else:
        q["rto_deadline"] = D.NEVER
        q["rel_probe_deadline"] = D.NEVER
        if q["wr_next"] != q["wr_tail"]:
            hold_rto(T, i, now)  # all acknowledged, more to send: armed if it cannot leave


@njit_core(inline="always")
def _rtt_of(q, send_time, reflected_ts, svc, now):
    """``now - send_time`` if the reflected timestamp names that transmission, else -1 (no estimate changes);
    less the responder's service time `svc` (SETH / NETH ``svc_time``, units of 64 ns) when ``svc_time_peer``
    is on and it fits in the sample (a peer cannot have held a packet longer than its round trip: a larger
    value is ignored)."""
    if send_time < 0 or timestamp(q, send_time) != reflected_ts:
        return -1
    rtt = now - send_time
    if rtt < 0:
        rtt = 0
    if q["svc_time_peer"] != 0:
        held = i64(svc) * SVC_TIME_UNIT_PS
        if held <= rtt:
            rtt -= held
    return rtt


@njit_core
def _rtt_sample(q, send_time, reflected_ts, svc, now):
    """RTT sample of the transmission sent at `send_time` that a SACK / NACK / probe answer acknowledges.

    Returns ``now - send_time`` (our own clock: it never aliases) less the time the responder says it
    held the packet before answering (`svc`, `_rtt_of`: the network's round trip, not the peer's ACK
    coalescing or its transmit queue), and updates
    ``last_rtt`` / ``srtt``, or -1 (no sample, nothing updated) when `send_time`
    is unknown (< 0) or the reflected 16-bit TSETH timestamp is not the one that
    transmission carried: the feedback answers another transmission (an earlier
    copy of a retransmitted PSN, whose send time is no longer kept; a probe
    superseded on its EV; a stale duplicate), so, as Karn's rule says, it gives
    no sample. The reflected timestamp alone is never an RTT: it wraps every
    2^16 x ``ts_unit_ps`` (524 us at 8 ns).
    """
    rtt = _rtt_of(q, send_time, reflected_ts, svc, now)
    if rtt < 0:
        return -1
    q["last_rtt"] = rtt
    if q["srtt"] <= 0:
        q["srtt"] = rtt
    else:
        q["srtt"] += (rtt - q["srtt"]) // 8
    return rtt


@njit_core
def _probe_answer(T, i, slot, m, now):
    """A probe's answer (SACK, pr = 1) reflected EV `slot`: an ASSUMED_BAD EV's probe count, or else
    a path of ours that just worked end to end, which becomes its plane's reverse (control) EV."""
    q = T.qp[i]
    e = T.ev[q["ev_row"], slot]
    if e["state"] == D.EV_ASSUMED_BAD:
        evset.probe_answered(T, i, slot, m, now)
    else:
        q["rev_ev"][e["plane"]] = slot
        q["rev_fresh"][e["plane"]] = 0  # a path just proven beats fresh guesses (`evset.drop_rev_ev`)
        if q["rev_probe_slot"] == slot:
            q["rev_probe_slot"] = -1
            q["rev_probe_timeout"] = D.NEVER


@njit_core
def _probe_answer_only(T, i, p, now):
    """A QP with no send half (no TX row: it only receives) gets the answers to its reverse-EV probes."""
    q = T.qp[i]
    slot = evset.find_answered_slot(T, i, p["entropy"])
    if slot < 0:
        q["rx_dropped"] += 1
        return
    q["sacks_rx"] += 1
    e = T.ev[q["ev_row"], slot]
    rtt = _rtt_sample(q, e["probe_sent"], p["tx_timestamp"], p["svc_time"], now)
    if rtt >= 0:
        e["last_rtt"] = rtt
    _probe_answer(T, i, slot, p["m"], now)


@njit_core(inline="always")
def sack_in_window(q, new_una):
    """Whether a SACK whose cumulative ack ends before `new_una` can come from the peer: it acknowledges
    nothing never sent (``new_una`` <= ``sq_psn``) and is at most `D.MAX_PSN_SPAN` older than ``una_psn``."""
    return psn_diff(q["sq_psn"], new_una) >= 0 and psn_diff(q["una_psn"], new_una) <= D.MAX_PSN_SPAN


@njit_core(inline="always")
def on_sack(T, i, p, now):
    """Process a RELIABILITY_SACK (SETH + CC_STATE) addressed to this QP's requester."""
    q = T.qp[i]
    if q["state"] != D.QPS_RTS:
        q["rx_dropped"] += 1
        return
    cack = p["cack_psn"] & D.PSN_MASK
    new_una = psn_add(cack, 1)
    if not sack_in_window(q, new_una):
        q["rx_oow"] += 1
        return
    if q["tx_row"] < 0:
        if p["pr"]:
            _probe_answer_only(T, i, p, now)
        else:
            q["rx_dropped"] += 1
        return
    q["sacks_rx"] += 1
    # the responder's MPR (mrc.core.mpr), from a SACK not behind what we know: one a newer SACK overtook
    # must not reopen a window the responder has since closed
    if p["mpr"] != 0 and psn_diff(new_una, q["una_psn"]) >= 0:
        q["peer_mpr"] = p["mpr"]
    trigger = psn_add(cack, i64(p["ack_psn_offset"]))
    # the transmission this SACK answers (its send time gives the RTT): a probe's answer
    # (pr = 1) reflects the probe's EV (probes consume no PSN); any other SACK's trigger PSN
    # is cack_psn + ack_psn_offset, sent on the EV the SACK reflects
    trig_send = -1
    slot = -1
    if p["pr"]:
        slot = evset.find_answered_slot(T, i, p["entropy"])
        if slot >= 0:
            trig_send = T.ev[q["ev_row"], slot]["probe_sent"]
    elif psn_diff(trigger, q["una_psn"]) >= 0 and psn_diff(q["sq_psn"], trigger) > 0:
        ent = tx_slot(T, q, trigger)
        if ent["state"] != D.TX_FREE and ent["ev_slot"] >= 0 and T.ev[q["ev_row"], ent["ev_slot"]]["ev"] == p["entropy"]:
            trig_send = ent["send_time"]
            slot = ent["ev_slot"]
    # a policy that asks for it (REPS) hears of every PSN this SACK newly acknowledges
    per_psn = evpolicy.takes_acked(T, i)
    newly = 0
    while psn_diff(new_una, q["una_psn"]) > 0:
        ent = tx_slot(T, q, q["una_psn"])
        got = _acked(q, ent, now)
        if per_psn and got > 0:
            evpolicy.on_feedback(T, i, ent["ev_slot"], D.FB_ACKED, p["m"], now)
        newly += got
        ent["state"] = D.TX_FREE
        q["una_psn"] = psn_add(q["una_psn"], 1)
    base = psn_add(cack, i64(p["sack_offset"]))
    bitmap = p["sack_bitmap"]
    for b in range(64):
        if (bitmap >> b) & 1:
            psn = psn_add(base, b)
            if psn_diff(psn, q["una_psn"]) >= 0 and psn_diff(q["sq_psn"], psn) > 0:
                ent = tx_slot(T, q, psn)
                if ent["state"] == D.TX_INFLIGHT or ent["state"] == D.TX_LOST:
                    got = _acked(q, ent, now)
                    if per_psn and got > 0:
                        evpolicy.on_feedback(T, i, ent["ev_slot"], D.FB_ACKED, p["m"], now)
                    newly += got
                    ent["state"] = D.TX_SACKED
    rtt = _rtt_sample(q, trig_send, p["tx_timestamp"], p["svc_time"], now)
    # the EV the SACK reflects: the trigger's slot when it matched, else look it up
    if slot < 0:
        slot = evset.find_slot(T, i, p["entropy"])
    if slot >= 0:
        e = T.ev[q["ev_row"], slot]
        if rtt >= 0:
            e["last_rtt"] = rtt
        if p["pr"]:
            if q["rel_probe_pending"] == 2 and slot == q["rel_probe_slot"]:
                # our reliability probe arrived: everything sent before it was overtaken by it
                q["rel_probe_pending"] = 0
                q["rel_probe_slot"] = -1
                if q["rel_probe_seq"] > q["rack_seq"]:
                    q["rack_seq"] = q["rel_probe_seq"]
            _probe_answer(T, i, slot, p["m"], now)
        if p["m"] == M_SKIP_ONCE:
            q["ecn_sacks_rx"] += 1
            e["ecn_marks"] += 1
        evpolicy.on_feedback(T, i, slot, D.FB_SACK, p["m"], now)
    if newly > 0:
        c = T.cc[q["cc_profile"]]
        nscc.ack_feedback(q, c, newly, rtt, p["m"] != M_NONE, i64(p["rcv_cwnd_pen"]), p["r_c"] != 0, now)
        _progress(T, i, now)
        if q["rto_marked_since"] != D.NEVER:
            _reprobe_after_timeout(T, i, now)
    detect_losses(T, i, now)
    _complete_wrs(T, i, now)


@njit_core(inline="always")
def on_nack(T, i, p, now):
    """Process a RELIABILITY_NACK (NETH)."""
    q = T.qp[i]
    if q["state"] != D.QPS_RTS or q["tx_row"] < 0:
        q["rx_dropped"] += 1
        return
    reason = p["nack_reason"]
    psn = p["nack_psn"] & D.PSN_MASK
    if psn_diff(q["sq_psn"], psn) <= 0 or psn_diff(q["una_psn"], psn) > D.MAX_PSN_SPAN:
        q["rx_oow"] += 1  # never sent, or older than any PSN the peer could still answer: not our peer's
        return
    q["nacks_rx"] += 1
    if psn_diff(psn, q["una_psn"]) < 0:
        return  # stale: already acknowledged
    if reason == NR_UNEXP_EVENT:
        enter_error(T, i, D.ERR_REMOTE_FATAL, now)  # fatal only for a PSN still in flight
        return
    ent = tx_slot(T, q, psn)
    slot = ent["ev_slot"]
    ev_matches = slot >= 0 and T.ev[q["ev_row"], slot]["ev"] == p["entropy"]
    # the NACK's RTT feeds NSCC only: RACK's RTT (last_rtt) and srtt come from delivered packets
    # (RFC 8985 6.2), and a trimmed header crossed the fabric in the priority class, missing the
    # data queues, so it would make RACK declare queued packets lost
    rtt = _rtt_of(q, ent["send_time"] if ev_matches else -1, p["tx_timestamp"], p["svc_time"], now)
    # PSN_OOR_WINDOW: the responder dropped a PSN beyond its window; NETH has no MPR field, so the
    # packet is simply resent (below) and the window is learnt from the SACKs' SETH mpr
    if not mark_lost(T, i, psn, reason == NR_TRIMMED or reason == NR_TRIMMED_LASTHOP):
        return
    trimmed = reason == NR_TRIMMED or reason == NR_TRIMMED_LASTHOP
    if trimmed:
        q["trims_rx"] += 1
        nscc.trim(q, T.cc[q["cc_profile"]], ent["length"], rtt, now)
    if not ev_matches:
        slot = evset.find_slot(T, i, p["entropy"])
    if slot >= 0:
        if trimmed:
            T.ev[q["ev_row"], slot]["trims"] += 1
        evpolicy.on_feedback(T, i, slot, D.FB_NACK, reason, now)  # MRC: TRIMMED skips the EV


@njit_core(inline="always")
def on_aeth(T, i, p, now):
    """Transport ACK (AETH). A NAK syndrome (IBTA 011xxxxx) ends the QP: the oldest outstanding
    write completes with the NAK's status (invalid request, remote access or remote operational
    error), the others with WR_FLUSH_ERR. MRC acknowledges with SACKs, so a positive AETH
    changes nothing."""
    q = T.qp[i]
    if q["state"] != D.QPS_RTS or q["tx_row"] < 0:
        q["rx_dropped"] += 1
        return
    syn = i64(p["aeth_syndrome"])
    if (syn >> 5) == 3:
        psn = p["psn"] & D.PSN_MASK
        if psn_diff(psn, q["una_psn"]) < 0 or psn_diff(q["sq_psn"], psn) <= 0:
            q["rx_oow"] += 1  # a NAK names the PSN refused, which is still unacknowledged: not our peer's
            return
        code = syn & 0x1F
        if code == 1:
            status = D.WC_REM_INV_REQ_ERR
        elif code == 2:
            status = D.WC_REM_ACCESS_ERR
        else:
            status = D.WC_REM_OP_ERR
        q["nacks_rx"] += 1
        enter_error(T, i, status, now)


@njit_core
def _expired(T, i, now):
    """Count one expiry of the local ACK timeout; True when it exceeded the retry limit (the QP is in ERROR)."""
    q = T.qp[i]
    q["retries"] += 1
    q["rtx_timeouts"] += 1
    limit = i64(q["retry_linear"]) + i64(q["retry_exp"])
    if q["retry_exp"] < 25 and q["retries"] > limit:
        enter_error(T, i, D.ERR_RETRY_EXCEEDED, now)
        return True
    return False


@njit_core
def on_rto(T, i, now):
    """The local ACK timeout expired without progress.

    With nothing in flight the timer was held for work that could not leave (`requester.hold_rto`):
    still unable to send, that is an expiry like any other (a retry; ERROR past the limit); able to
    send again, nothing is due."""
    q = T.qp[i]
    q["rto_deadline"] = D.NEVER
    if psn_diff(q["sq_psn"], q["una_psn"]) <= 0:
        if q["wr_next"] != q["wr_tail"] and not evset.can_send(T, i):
            if not _expired(T, i, now):
                q["rto_deadline"] = now + rto_interval(q)
        return
    if _expired(T, i, now):
        return
    # extension `rto_retire` (ours): every EV with data in flight is retired; without it only the
    # EV of the oldest packet in flight, the one the timer was waiting for
    psn = q["una_psn"]
    first = True
    while psn_diff(q["sq_psn"], psn) > 0:
        ent = tx_slot(T, q, psn)
        if ent["state"] == D.TX_INFLIGHT:
            slot = ent["ev_slot"]
            mark_lost(T, i, psn, False)
            q["losses"] += 1
            nscc.loss(q, T.cc[q["cc_profile"]], ent["length"])
            if first or q["rto_retire"] != 0:
                _retire_ev_after_loss(T, i, slot, now, True)
            first = False
        psn = psn_add(psn, 1)
    q["rto_deadline"] = now + rto_interval(q)
    # a timeout without any SACK cannot tell lost data from lost SACKs: remember when it
    # retired EVs (`_reprobe_after_timeout`), and let our own control packets (answers to the
    # peer's probes) try other reverse EVs too
    if q["rto_marked_since"] == D.NEVER:
        q["rto_marked_since"] = now
    for p in range(i64(q["n_planes"])):
        evset.drop_rev_ev(T, i, p)
