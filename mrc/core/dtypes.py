"""Every state table of the protocol core, and every named constant.

The core keeps its state in numpy structured arrays (``align=True``), one row
per object, so the same functions serve one QP (library) or a million
(emulator). Layout, in the spec's words:

========  ==================================================================
table     one row per
========  ==================================================================
``QP``    queue pair: requester half (sends writes, receives SACK/NACK) and
          responder half (receives writes, sends SACK/NACK); config, timers,
          NSCC state, counters
``EV``    entropy value of a QP (2-D: ``ev[qp.ev_row, k]``): value, plane,
          state GOOD / SKIP / ASSUMED_BAD / DENIED, active or backup, probes;
          ``ev_order[qp.ev_row, k]`` (uint16) holds each plane's visiting order
``TX``    outstanding PSN of a requester (2-D: ``tx[qp.tx_row, psn & mask]``)
``RX``    PSN slot of a responder's tracking window (2-D, same indexing)
``WR``    send work request (2-D ring: ``wr[qp.wr_row, k]``)
``RQ``    posted receive for Write-with-Immediate (2-D ring)
``MR``    registered memory region (1-D; ``rkey`` looked up by the responder)
``CC``    congestion-control profile (NSCC parameters; 1-D)
``EVT``   event the core reports (completions, EV state changes, errors)
========  ==================================================================

Time is integer picoseconds; sizes are bytes; PSNs are 24-bit (kept in
uint32). `tables.py` allocates them; nothing else creates them.
"""
from __future__ import annotations

import numpy as np

from mrc.core.psn import PSN_MASK  # noqa: F401  (24-bit PSNs: one home, mrc.core.psn; D.PSN_MASK for the core)

# --------------------------------------------------------------------------
# QP states (IB verbs state machine as used by mrc.h; see qp.py for the table)
QPS_RESET = 0
QPS_INIT = 1
QPS_RTR = 2
QPS_RTS = 3
QPS_ERROR = 4
QP_STATE_NAMES = ("RESET", "INIT", "RTR", "RTS", "ERROR")

# EV states (mrc_ctl.h names; SKIP is the transient "skip once" state of the
# per-EV state machine, mrc-public-notes 3.4). UNUSED marks an empty slot.
EV_GOOD = 0
EV_SKIP = 1
EV_ASSUMED_BAD = 2
EV_DENIED = 3
EV_UNUSED = 4
EV_STATE_NAMES = ("GOOD", "SKIP", "ASSUMED_BAD", "DENIED", "UNUSED")

# Inputs of the per-EV state machine (evset.EV_FSM is indexed [state, input]).
EVI_ECN_SACK = 0  # SACK with M = SKIP_ONCE reflecting this EV
EVI_TRIM_NACK = 1  # NACK TRIMMED on this EV
EVI_ALWAYS_SKIP = 2  # SACK with M = ALWAYS_SKIP reflecting this EV
EVI_LOSS = 3  # a packet on this EV was lost with no SACK and no trim
EVI_PROBE_OK = 4  # probe answered, M = NONE (enough successes)
EVI_PROBE_ECN = 5  # probe answered, M = SKIP_ONCE
EVI_ROTATION = 6  # the rotation passed a SKIP EV (skip consumed)
EVI_CTL_DENY = 7  # controller: DENIED
EVI_CTL_GOOD = 8  # controller: GOOD
EVI_CTL_BAD = 9  # controller: ASSUMED_BAD
N_EV_INPUTS = 10

# Per-PSN state of the requester's TX window.
TX_FREE = 0
TX_INFLIGHT = 1  # sent, not acknowledged
TX_SACKED = 2  # selectively acknowledged (above cack_psn)
TX_LOST = 3  # declared lost (trim NACK, loss detection, RTO); waits for retransmission

# RX slot flags (responder tracking window).
RX_RECEIVED = 1
RX_LAST = 2  # last packet of a message (LAST / ONLY opcodes)
RX_IMM = 4  # carries immediate data (LAST_IMM / ONLY_IMM)

# Work-request opcodes and status (ibv_wc_status names).
WR_WRITE = 0
WR_WRITE_IMM = 1
WC_SUCCESS = 0
WC_REM_INV_REQ_ERR = 9
WC_REM_ACCESS_ERR = 10
WC_RETRY_EXC_ERR = 12
WC_WR_FLUSH_ERR = 5
WC_REM_OP_ERR = 11
WC_STATUS_NAMES = {0: "SUCCESS", 5: "WR_FLUSH_ERR", 9: "REM_INV_REQ_ERR", 10: "REM_ACCESS_ERR", 11: "REM_OP_ERR",
                   12: "RETRY_EXC_ERR"}

# AETH NAK syndromes the responder sends when it must stop (IBTA: 011 in the top
# three bits = NAK; low five bits = NAK code), and what the requester reports.
AETH_NAK_INV_REQ = 0x61  # code 1, invalid request -> WC_REM_INV_REQ_ERR
AETH_NAK_REMOTE_ACCESS = 0x62  # code 2, remote access error -> WC_REM_ACCESS_ERR
AETH_NAK_REMOTE_OP = 0x63  # code 3, remote operational error -> WC_REM_OP_ERR

# Event kinds (rows of the EVT table).
E_SEND_DONE = 1  # send WR completed (status, wr_id, byte_len)
E_RECV_IMM = 2  # Write-with-Immediate delivered (wr_id of the receive, imm, byte_len)
E_EV_STATE = 3  # EV changed state (ev, ev_state, drop_count = losses on it)
E_QP_ERROR = 4  # QP entered ERROR (status = cause)
E_ACCESS_VIOLATION = 5  # responder refused a write outside the registered region
E_PORT_STATUS = 6  # peer port status update applied (value = mask)

# Reasons a QP went to ERROR (EVT.status of E_QP_ERROR).
ERR_RETRY_EXCEEDED = WC_RETRY_EXC_ERR
ERR_REMOTE_ACCESS = WC_REM_ACCESS_ERR
ERR_WIMM_OVERFLOW = 20  # more Write-with-Immediate stashed than max_wimm_dest
ERR_NO_RECV = 21  # Write-with-Immediate arrived with no posted receive (RNR unsupported)
ERR_REMOTE_FATAL = 22  # NACK UNEXP_EVENT from the peer

# EV selection policies: the QP attribute ``ev_policy`` is a policy's position in the registry
# (`evpolicy.POLICIES`; `evpolicy.EVP_*` name the built-in ones). The feedback a policy gets
# (`evpolicy.on_feedback(T, i, slot, kind, value, now)`), evidence about one EV slot:
FB_ACKED = 1  # a SACK newly acknowledged a PSN last sent on the EV (value: the SACK's M); only to
#               policies that ask for it (TAKES_ACKED), one call per PSN
FB_SACK = 2  # a SACK (or probe answer) reflected the EV (value: its M field)
FB_NACK = 3  # a NACK named a PSN sent on the EV (value: the NACK reason code)
FB_LOSS = 4  # a packet on the EV was declared lost without a SACK or trim: RACK, or an unanswered
#              reverse-EV probe with rev_probe_miss_bad (value 0)
FB_TIMEOUT = 5  # the retransmission timeout declared a packet on the EV lost (value 0)
REPS_MAX_BUFFER = 8

# Congestion control algorithms (CC profile `algorithm`).
CC_NONE = 0  # fixed window (max_cwnd)
CC_NSCC = 1  # "uet-1.0-nscc"
CC_ALGORITHMS = {"none": CC_NONE, "uet-1.0-nscc": CC_NSCC}

# QP.ack_pending: the SACK a responder owes
ACK_NONE = 0  # nothing
ACK_AT_DEADLINE = 1  # coalescing: at ack_deadline
ACK_NOW = 2  # at once (a CE mark, AckReq, a duplicate, a probe)
# MPR (maximum packets outstanding, mrc.h `mpr` / `mpr_dest`) counts in units of 128 packets.
MPR_UNIT = 128
# The widest PSN span a conforming requester has in flight: MPR <= 255 units of 128 PSNs (mrc.h
# bounds; `requester` keeps sq_psn - una_psn below MPR x 128). A packet whose PSN lies further than
# this from a QP's window cannot come from its peer: it is counted (``rx_oow``) and dropped.
MAX_PSN_SPAN = 255 * MPR_UNIT
# The one "never" of the project, in the core and the emulator's engine alike: no timer armed (what the core's
# `next_deadline` returns for a QP with nothing to wait for), an event that has not happened, a queue with nothing
# due. 2^62 ps (about 53 days) rather than int64's maximum, so that a delay added to it cannot overflow; every
# clock the core is driven by (the emulator's picoseconds from 0, the library's monotonic clock) stays far below it.
NEVER = np.int64(2**62)
MAX_PLANES = 8

def _line_grouped(groups):
    """A structured dtype whose field groups each start on a 64-byte line: ``groups`` is
    ``[(name, [(field, type[, shape]), ...]), ...]``. Inside a group fields sit in the order given,
    each at its natural alignment; the row is padded to whole lines. Returns the dtype and
    ``{group: (first line, lines)}``, so code that knows which group it is about to touch can
    ask for those lines only (`mrc.core.cachelines.prefetch_lines`)."""
    names, formats, offsets, lines = [], [], [], {}
    pos = 0
    for group, fields in groups:
        first = pos
        for f in fields:
            t = np.dtype(f[1]) if len(f) == 2 else np.dtype((f[1], f[2]))
            a = t.base.alignment
            pos = (pos + a - 1) // a * a
            names.append(f[0])
            formats.append(t)
            offsets.append(pos)
            pos += t.itemsize
        pos = (pos + 63) // 64 * 64
        lines[group] = (first // 64, (pos - first) // 64)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": pos}, align=True), lines


# The QP row, grouped by who reads it (a row is ~1 KB; the emulator keeps hundreds of thousands):
# every endpoint's scheduling checks (`dispatch.tx_ready`, `next_deadline`) and the fields the
# driver glue reads after every call are group "sched"; a requester that sends reads "req_tx",
# one that takes a SACK or NACK "req_ack"; a responder "resp"; the rest (configuration read at
# set-up, rare paths, counters) is "cold" (`QP_LINES` / `QP_GROUPS` below). An endpoint's packet then touches 5-7 of its 17
# lines, not all of them. The field set is the protocol's; only its placement is tuned.
_QP_GROUPS = [
    ("sched", [
        ("state", np.uint8),
        ("ack_pending", np.uint8),  # a SACK is owed: ACK_NONE, ACK_AT_DEADLINE (coalescing) or ACK_NOW
        ("nack_n", np.uint8),  # queued NACKs (nack_* arrays)
        ("aeth_pending", np.uint8),  # a NAK (remote access error) is owed
        ("ev_probe_due", np.uint8),  # some ASSUMED_BAD EV's probe is due now
        ("rel_probe_pending", np.uint8),  # 0 none, 1 due, 2 sent and awaiting its SACK
        ("rev_probe_due", np.uint8),
        ("n_planes", np.uint8),
        ("rev_probe_slot", np.int16),  # EV slot of the outstanding reverse-EV probe, -1 if none
        ("mpr", np.uint16),  # requester MPR, units of 128 PSNs
        ("peer_mpr", np.uint16),  # responder's advertised MPR (from SACKs)
        ("mpr_dest", np.uint16),  # responder MPR, units of 128 PSNs: what its SACKs advertise (SETH mpr)
        ("ev_row", np.int32),  # row of the EV table, -1 if none
        ("tx_row", np.int32),  # row of the TX table (requester), -1 if none
        ("rx_row", np.int32),  # row of the RX table (responder), -1 if none
        ("wr_row", np.int32),
        ("mtu", np.uint32),  # payload bytes per packet (path MTU)
        ("n_lost", np.int32),  # PSNs in TX_LOST waiting for retransmission
        ("sq_psn", np.uint32),  # next new PSN
        ("una_psn", np.uint32),  # oldest PSN not cumulatively acknowledged
        ("wr_next", np.uint32),  # next WR to segment
        ("wr_tail", np.uint32),  # next free WR slot
        ("rto_deadline", np.int64),
        ("loss_deadline", np.int64),
        ("rel_probe_deadline", np.int64),
        ("ack_deadline", np.int64),
        ("ev_probe_deadline", np.int64),  # earliest future EV-probe time
        ("rev_probe_deadline", np.int64),  # next reverse-EV probe
        ("rev_probe_timeout", np.int64),
        ("inflight", np.int64),  # payload+header bytes in flight
        ("cwnd", np.float64),
        # read by the driver glue after every call, and by both halves
        ("rx_bytes", np.int64),
        ("rtx_spurious", np.int64),
        ("rtx_timeouts", np.int64),
        ("base_rtt", np.int64),
        ("ts_unit_ps", np.int64),  # TSETH timestamp unit
        ("qpn", np.uint32),
        ("dest_qpn", np.uint32),
        ("local_ports", np.uint32),  # bit p: local NIC port (plane) p is up
        ("remote_ports", np.uint32),  # bit p: the peer's port p is up (port status updates)
        ("ev_policy", np.uint8),  # how data EVs are chosen: position in evpolicy.POLICIES
        ("dscp_ctrl", np.uint8),
        ("rev_plane_cursor", np.uint8),
        ("psu_floor", np.uint8),  # 1: a port status update never takes the last plane (`evset.plane_mask`)
        ("mpr_track", np.uint16),  # responder: PSNs tracked above cack_psn, units of 128 (> mpr_dest while a shrink is held)
    ]),
    ("req_tx", [  # requester: segmenting work requests, choosing EVs, sending
        ("tx_seq", np.int64),  # transmissions so far (data, retransmissions, probes): a total send order
        ("tx_pkts", np.int64),
        ("tx_bytes", np.int64),
        ("tx_active_until", np.int64),
        ("rng", np.int64),
        ("rel_probe_seq", np.int64),  # send order of the outstanding reliability probe
        ("seg_offset", np.uint32),  # bytes of wr_next already segmented
        ("start_psn", np.uint32),
        ("msn", np.uint16),  # next message sequence number
        ("rqmsn", np.uint16),  # Write-with-Immediate messages sent so far
        ("wimm_inflight", np.uint16),
        ("max_wimm", np.uint16),
        ("n_ev", np.uint16),
        ("plane_start", np.uint16, (MAX_PLANES + 1,)),  # EV slots of plane p: [plane_start[p], plane_start[p+1])
        ("rot_pos", np.uint16, (MAX_PLANES,)),  # position in each plane's current visiting order
        ("ev_pin", np.int16),  # policy ONE: the EV slot in use (-1: none yet)
        ("rel_probe_slot", np.int16),  # the reliability probe's EV slot
        ("probe_id", np.uint16),
        ("plane_cursor", np.uint8),
        ("dscp_data", np.uint8),
        ("dscp_rtx", np.uint8),
    ]),
    ("req_ack", [  # requester: SACK / NACK processing, loss detection, NSCC
        ("rack_seq", np.int64),  # send order of the latest transmission known delivered (RACK)
        ("srtt", np.int64),
        ("last_rtt", np.int64),
        # NSCC source state (UE 1.0.3 Table 3-77, the specification's names)
        ("avg_delay", np.float64),
        ("inc_bytes", np.float64),
        ("max_wnd", np.float64),  # MaxWnd scaled to the measured base RTT
        ("saved_cwnd", np.float64),  # cwnd when destination flow control began (Restore_Cwnd)
        ("received_bytes", np.int64),  # acked since the last fulfill_adjustment
        ("achieved_bytes", np.int64),  # acked in the current QuickAdapt period
        ("fi_count", np.int64),  # consecutive bytes acked at delay ~= 0 (fast increase)
        ("bytes_to_ignore", np.int64),  # in flight when QuickAdapt last cut the window
        ("bytes_ignored", np.int64),
        ("last_adjust_time", np.int64),
        ("last_dec_time", np.int64),
        ("qa_endtime", np.int64),
        ("rto_marked_since", np.int64),  # first SACK-less timeout since the last progress, NEVER if none
        ("reorder_window_ps", np.int64),  # loss detection: a packet is lost when one sent this much later is acked
        ("sacks_rx", np.int64),
        ("ecn_sacks_rx", np.int64),
        ("ev_skips", np.int64),  # EVs that entered SKIP (ECN-marked SACK, trim NACK, probe answer)
        ("wr_head", np.uint32),  # oldest incomplete WR (ring index, monotonic)
        ("lost_lo", np.uint32),  # lowest PSN that may be TX_LOST
        ("cc_profile", np.int32),
        ("retries", np.uint16),  # RTO expiries since the last progress
        ("hint_share", np.uint16),  # QP hint: QPs sharing this one's bottleneck; NSCC starts at init_cwnd / it (nscc.cc_init)
        ("trigger_qa", np.uint8),
        ("increase_mode", np.uint8),
        ("timeout", np.uint8),  # local ACK timeout exponent: 1.024 us * 2^timeout
        ("retry_linear", np.uint8),  # fixed-interval retries (max 7)
        ("retry_exp", np.uint8),  # exponential-backoff retries (max 25, 25 = infinite)
        ("svc_time_peer", np.uint8),  # 1: RTT samples less the peer's reported service time (mrc.h: cleared by SVC_TIME_DEST_UNSUPPORTED)
    ]),
    ("resp", [  # responder: tracking PSNs, delivering, building SACKs
        ("rcvd_bytes", np.int64),
        ("rx_msg_bytes", np.int64),  # bytes of the message being completed in order
        ("rx_pkts", np.int64),
        ("rx_active_until", np.int64),  # inbound data seen recently (reverse-EV refresh runs)
        ("sacks_tx", np.int64),
        ("ack_delay_ps", np.int64),  # SACK coalescing: ... or this long after the first unacknowledged packet
        ("cack_psn", np.uint32),  # every PSN up to and including this one received
        ("ooo_count", np.uint32),  # PSNs received beyond cack_psn (current window)
        ("rx_held", np.int32),  # RX slots marked received beyond cack_psn (SACK building stops when all are found)
        ("ack_bytes", np.uint32),
        ("ack_every_bytes", np.uint32),  # SACK coalescing: ... or this many payload bytes
        ("ack_trigger_psn", np.uint32),
        ("ack_trigger_ev", np.uint32),
        ("mpr_hold_psn", np.uint32),  # dynamic MPR: the requester may have sent PSNs below this (mrc.core.mpr)
        ("rq_head", np.uint32),
        ("rq_tail", np.uint32),
        ("rq_row", np.int32),
        ("ack_pkts", np.uint16),
        ("ack_every_pkts", np.uint16),  # SACK coalescing: at most this many data packets per SACK
        ("ack_trigger_ts", np.uint16),
        ("ack_trigger_at", np.uint16),  # when the SACK's trigger arrived, 16 ns ticks mod 2^16 (its service time)
        ("nack_at", np.uint16),  # when the newest queued NACK / probe answer's packet arrived, 16 ns ticks mod 2^16
        ("wimm_stashed", np.uint16),
        ("max_wimm_dest", np.uint16),
        ("always_skip_marks", np.uint16),  # consecutive CE marks on one EV before ALWAYS_SKIP (0: never)
        ("rx_msn", np.uint16),  # messages completed
        ("rx_rqmsn", np.uint16),
        ("rev_ev", np.int16, (MAX_PLANES,)),  # reverse (control) EV slot per plane
        ("rev_fresh", np.uint16, (MAX_PLANES,)),  # control packets of the plane still owed a fresh reverse EV
        ("mark_ev", np.uint32, (16,)),  # ALWAYS_SKIP tracker: EV -> consecutive CE marks (direct-mapped)
        ("mark_cnt", np.uint16, (16,)),
        ("ack_trigger_port", np.uint8),
        ("ack_m", np.uint8),
        ("ack_pr", np.uint8),
        ("rcv_cwnd_pen", np.uint8),
        ("emulate_access", np.uint8),  # 1: responder accepts any rkey/va (emulator without memory)
        ("trim_nack_dest", np.uint8),  # 1: the responder answers trimmed headers with NACKs (mrc.h MRC_QP_TRIM_NACK_DEST)
        ("svc_time_report", np.uint8),  # 1: SACKs and NACKs carry the responder's service time (mrc.h MRC_DEVICE_CAP_SVC_TIME)
        ("dynamic_mpr", np.uint8),  # 1: MPR may change while the QP runs (mrc.h MRC_QP_CAP_DYNAMIC_MPR)
    ]),
    ("cold", [  # configuration read at set-up or on rare paths; queued NACKs; REPS; counters
        ("ev_probe_interval_ps", np.int64),
        ("ev_first_probe_ps", np.int64),  # a retired EV's first probe, this long after retirement
        ("rev_probe_interval_ps", np.int64),
        ("reps_freeze_ps", np.int64),  # policy REPS: how long a freeze lasts (config)
        ("reps_unfreeze", np.int64),  # when the current freeze ends
        ("rtx_pkts", np.int64),
        ("nacks_rx", np.int64),
        ("trims_rx", np.int64),  # trim NACKs received (requester)
        ("losses", np.int64),  # packets declared lost without trim
        ("probes_tx", np.int64),
        ("rx_dup", np.int64),
        ("rx_trimmed", np.int64),
        ("rx_oor", np.int64),
        ("rx_dropped", np.int64),  # not accepted in the current QP state
        ("rx_oow", np.int64),  # PSN outside the QP's window (never sent, or beyond any peer's span): dropped unanswered
        ("nacks_tx", np.int64),
        ("ev_floor_hits", np.int64),  # retirements refused by ev_min_active
        ("rev_rotations", np.int64),  # reverse EVs dropped on evidence that control packets were lost
        ("rev_probe_misses", np.int64),  # reverse-EV probes left unanswered
        ("rto_reprobes", np.int64),  # timeout-retired EVs probed at once when SACKs resumed
        ("aeth_psn", np.uint32),
        ("nack_psn", np.uint32, (8,)),
        ("nack_ev", np.uint32, (8,)),
        ("nack_ts", np.uint16, (8,)),
        ("ev_active_target", np.uint16),  # active EVs wanted in total (spread over planes)
        ("ev_min_active", np.uint16),
        ("reps_explore", np.uint16),  # policy REPS: random EVs to explore after a freeze (config)
        ("reps_explore_left", np.uint16),  # random EVs still to explore
        ("reps_buf", np.int16, (REPS_MAX_BUFFER,)),  # EV slots whose SACK came back unmarked
        ("nack_reason", np.uint8, (8,)),
        ("nack_port", np.uint8, (8,)),
        ("nack_m", np.uint8, (8,)),
        ("reps_uses", np.uint8, (REPS_MAX_BUFFER,)),  # reuses left of each entry
        ("aeth_syndrome", np.uint8),
        ("probe_successes", np.uint8),  # probe answers needed to bring an ASSUMED_BAD EV back
        ("rev_rotate", np.uint8),  # 1: drop a plane's reverse EV on evidence its control packets are lost
        ("rev_probe_miss_bad", np.uint8),  # 1: an unanswered reverse-EV probe is a loss on the probed EV
        ("rto_reprobe", np.uint8),
        ("rack", np.uint8),  # 1: RACK loss detection (extension; 0: losses found by RTO, trims and probes only)
        ("rto_retire", np.uint8),  # 1: an RTO retires every EV with data in flight (extension; 0: the oldest's only)  # 1: EVs a SACK-less timeout retired are probed at once when SACKs resume
        ("ev_event_mask", np.uint8),  # bit 0: report ASSUMED_BAD, bit 1: report GOOD
        ("reps_buffer", np.uint8),  # policy REPS: entries of the recycle buffer (<= REPS_MAX_BUFFER)
        ("reps_head", np.uint8),  # next buffer entry written
        ("reps_n", np.uint8),  # entries written so far (<= reps_buffer)
        ("reps_valid", np.uint8),  # bit j: entry j is fresh (not reused yet)
        ("reps_fhead", np.uint8),  # freezing: next entry to reuse
        ("reps_frozen", np.uint8),
        ("reps_reuse", np.uint8),  # times a recycled EV may be reused (config)
        ("reps_per_psn", np.uint8),  # 1: an unmarked SACK recycles the EV of every PSN it newly acks (config)
        ("lost_acked", np.uint32),  # packets declared lost, then acknowledged before they were resent
    ]),
]
QP, QP_LINES = _line_grouped(_QP_GROUPS)
QP_GROUPS = {group: tuple(f[0] for f in fields) for group, fields in _QP_GROUPS}  # group -> its fields

EV = np.dtype(
    [
        # Fields ordered so the row is exactly 64 bytes (one cache line: `tables.allocate`
        # aligns the table); selecting an EV for a packet reads one line.
        ("ev", np.uint32),  # 32-bit EV value (STEV container / compact SRv6 index)
        ("plane", np.uint8),  # NIC port (0-based) this EV leaves on
        ("state", np.uint8),
        ("active", np.uint8),  # 1: in the active set, 0: backup
        ("probe_ok", np.uint8),  # consecutive successful probes while ASSUMED_BAD
        ("probe_outstanding", np.uint8),
        ("losses", np.uint32),  # losses attributed to this EV (EV event drop_count)
        ("probe_deadline", np.int64),
        ("probe_sent", np.int64),  # send time of the last probe on this EV (its answer's RTT), -1 if none
        ("bad_since", np.int64),
        ("tx_pkts", np.int64),
        ("last_rtt", np.int64),
        ("ecn_marks", np.uint32),
        ("trims", np.uint32),
    ],
    align=True,
)
assert EV.itemsize == 64

TX = np.dtype(
    [
        ("state", np.uint8),
        ("opcode", np.uint8),
        ("rtx", np.uint8),  # times retransmitted
        ("trimmed", np.uint8),  # last loss was signalled by a trim NACK
        ("ev_slot", np.int16),
        ("wr", np.uint32),  # ring index of the work request
        ("offset", np.uint32),  # byte offset in the message
        ("length", np.uint32),  # payload bytes
        ("msn", np.uint16),
        ("rqmsn", np.uint16),
        ("send_time", np.int64),  # last transmission
        ("seq", np.int64),  # send order of the last transmission
        ("first_seq", np.int64),  # send order of the first transmission (follows PSN order)
    ],
    align=True,
)

RX = np.dtype([("flags", np.uint8), ("imm", np.uint32), ("length", np.uint32)], align=True)

WR = np.dtype(
    [
        ("wr_id", np.uint64),
        ("opcode", np.uint8),
        ("status", np.uint8),
        ("signaled", np.uint8),
        ("lkey", np.uint32),
        ("laddr", np.uint64),
        ("remote_va", np.uint64),
        ("rkey", np.uint32),
        ("length", np.uint32),
        ("imm", np.uint32),
        ("msn", np.uint16),
        ("first_psn", np.uint32),
        ("last_psn", np.uint32),
        ("npkts", np.uint32),
        ("segmented", np.uint8),
        ("post_time", np.int64),
    ],
    align=True,
)

RQ = np.dtype([("wr_id", np.uint64)], align=True)

MR = np.dtype(
    [
        ("valid", np.uint8),
        ("access", np.uint8),  # bit 0: remote write allowed
        ("lkey", np.uint32),
        ("rkey", np.uint32),
        ("va", np.uint64),
        ("length", np.uint64),
    ],
    align=True,
)

CC = np.dtype(
    [
        # mrc_ctl_cc_nscc_cfg, converted to picoseconds / bytes
        ("algorithm", np.uint8),
        ("disable_qa", np.uint8),
        ("adjust_bytes_threshold", np.int64),
        ("adjust_period_threshold", np.int64),  # ps
        ("base_rtt", np.int64),  # ps
        ("eta", np.float64),  # bytes added once per adjust_period_threshold
        ("fi", np.float64),  # fair-increase gain (bytes)
        ("fi_scale", np.float64),  # fast-increase factor (cwnd += acked * fi_scale)
        ("gamma", np.float64),
        ("max_md_jump", np.float64),  # smallest factor one multiplicative decrease may apply (UE 1.0.3)
        ("max_cwnd", np.int64),
        ("min_cwnd", np.int64),
        ("init_cwnd", np.int64),
        ("qa_gate", np.uint8),
        ("qa_threshold", np.int64),  # ps
        ("target_delay", np.int64),  # ps
        ("pi_gain", np.float64),  # proportional-increase gain alpha, bytes per ps of headroom per acked byte
        ("fast_increase_delay", np.int64),  # ps: below this queuing delay, fast increase
        ("delay_ewma", np.float64),
        ("delay_filter", np.uint8),  # 1: replace unmarked samples above target (htsim update_delay)
        ("delay_filter_low", np.float64),  # ... by this many base RTTs
        ("delay_filter_cap", np.float64),  # ... unless above this many base RTTs
    ],
    align=True,
)

EVT = np.dtype(
    [
        ("kind", np.uint8),
        ("status", np.uint8),
        ("qp", np.int32),
        ("time", np.int64),
        ("wr_id", np.uint64),
        ("byte_len", np.uint64),
        ("imm", np.uint32),
        ("ev", np.uint32),
        ("ev_state", np.uint8),
        ("plane", np.uint8),
        ("drop_count", np.uint32),
        ("value", np.int64),
    ],
    align=True,
)
