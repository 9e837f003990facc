"""The QP state machine, work-request posting and the ERROR flush.

States RESET -> INIT -> RTR -> RTS, and ERROR from anywhere (mrc.h: INIT
needs the EV and CC profiles, RTR the responder's MPR and max WIMM, RTS the
requester's MPR, max WIMM, retry counts and timeout). `QP_FSM[state, target]`
is 1 where ``modify_qp`` may move a QP; the Python API raises on anything
else (local misuse), the compiled code never sees it.

Entering ERROR completes every outstanding send WR: the one that failed with
the cause (e.g. RETRY_EXC_ERR), the rest with WR_FLUSH_ERR; posted receives
complete with WR_FLUSH_ERR (IB verbs semantics). Nothing the API accepted is
silently dropped.
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core.events import emit
from mrc.core.requester import hold_rto

#                   RESET INIT RTR RTS ERROR   (target)
QP_FSM = np.array(
    [
        [1, 1, 0, 0, 1],  # from RESET
        [1, 1, 1, 0, 1],  # from INIT
        [1, 0, 0, 1, 1],  # from RTR
        [1, 0, 0, 1, 1],  # from RTS (RTS -> RTS modifies attributes)
        [1, 0, 0, 0, 1],  # from ERROR
    ],
    dtype=np.uint8,
)


@njit_core
def enter_error(T, i, cause, now):
    """Move QP `i` to ERROR and complete everything outstanding with an error status."""
    q = T.qp[i]
    if q["state"] == D.QPS_ERROR:
        return
    q["state"] = D.QPS_ERROR
    emit(T, D.E_QP_ERROR, i, now, cause, 0, 0, 0, 0, 0, 0, 0, 0)
    if q["wr_row"] >= 0:
        cap = T.wr.shape[1]
        first = True
        while q["wr_head"] != q["wr_tail"]:
            w = T.wr[q["wr_row"], q["wr_head"] % cap]
            status = cause if (first and cause < 20) else D.WC_WR_FLUSH_ERR
            if not emit(T, D.E_SEND_DONE, i, now, status, w["wr_id"], w["length"], 0, 0, 0, 0, 0, w["post_time"]):
                break
            first = False
            q["wr_head"] += 1
        q["wr_next"] = q["wr_head"]
    if q["rq_row"] >= 0:
        cap = T.rq.shape[1]
        while q["rq_head"] != q["rq_tail"]:
            r = T.rq[q["rq_row"], q["rq_head"] % cap]
            if not emit(T, D.E_RECV_IMM, i, now, D.WC_WR_FLUSH_ERR, r["wr_id"], 0, 0, 0, 0, 0, 0, 0):
                break
            q["rq_head"] += 1
    q["inflight"] = 0
    q["n_lost"] = 0
    q["rto_deadline"] = D.NEVER
    q["loss_deadline"] = D.NEVER
    q["rel_probe_deadline"] = D.NEVER
    q["ack_pending"] = D.ACK_NONE
    q["nack_n"] = 0
    q["ev_probe_deadline"] = D.NEVER
    q["rev_probe_deadline"] = D.NEVER
    q["rev_probe_timeout"] = D.NEVER


@njit_core
def post_write(T, i, wr_id, opcode, lkey, laddr, remote_va, rkey, length, imm, now):
    """Queue an RDMA Write (WR_WRITE) or Write-with-Immediate (WR_WRITE_IMM).

    Returns 0, or -1 when the send queue is full (the API checks state and
    arguments before calling).
    """
    q = T.qp[i]
    cap = T.wr.shape[1]
    if q["wr_tail"] - q["wr_head"] >= cap:
        return -1
    w = T.wr[q["wr_row"], q["wr_tail"] % cap]
    w["wr_id"] = wr_id
    w["opcode"] = opcode
    w["status"] = 0
    w["signaled"] = 1
    w["lkey"] = lkey
    w["laddr"] = laddr
    w["remote_va"] = remote_va
    w["rkey"] = rkey
    w["length"] = length
    w["imm"] = imm
    w["segmented"] = 0
    w["npkts"] = 0
    w["post_time"] = now
    q["wr_tail"] += 1
    hold_rto(T, i, now)  # posted while no path is usable: the work is timed from now
    return 0


@njit_core
def post_recv(T, i, wr_id):
    """Post a receive for an incoming Write-with-Immediate; -1 when the receive queue is full."""
    q = T.qp[i]
    cap = T.rq.shape[1]
    if q["rq_tail"] - q["rq_head"] >= cap:
        return -1
    T.rq[q["rq_row"], q["rq_tail"] % cap]["wr_id"] = wr_id
    q["rq_tail"] += 1
    return 0
