"""Entering ERROR: the QP stops and everything outstanding completes with an error status.

The one place a QP enters ERROR, whoever moves it there: the core itself (retries exhausted, a fatal
NAK, `mrc.core.loss`; an access violation, `mrc.core.responder`) and `mrc.core.qp.modify` (the
application's modify to ERROR). The send WR that failed completes with the cause (e.g.
RETRY_EXC_ERR), the rest with WR_FLUSH_ERR; posted receives complete with WR_FLUSH_ERR (IB verbs
semantics). Nothing the API accepted is silently dropped.
"""
from __future__ import annotations

from mrc._jit import njit_core
from mrc.core import dtypes as D
from mrc.core import events


@njit_core
def enter_error(T, i, cause, now):
    """Move QP `i` to ERROR and complete everything outstanding with an error status."""
    q = T.qp[i]
    if q["state"] == D.QPS_ERROR:
        return
    q["state"] = D.QPS_ERROR
    events.qp_error(T, i, now, cause)
    if q["wr_row"] >= 0:
        cap = T.wr.shape[1]
        first = True
        while q["wr_head"] != q["wr_tail"]:
            w = T.wr[q["wr_row"], q["wr_head"] % cap]
            status = cause if (first and cause < 20) else D.WC_WR_FLUSH_ERR
            if not events.send_done(T, i, now, status, w["wr_id"], w["length"], w["post_time"]):
                break
            first = False
            q["wr_head"] += 1
        q["wr_next"] = q["wr_head"]
    if q["rq_row"] >= 0:
        cap = T.rq.shape[1]
        while q["rq_head"] != q["rq_tail"]:
            r = T.rq[q["rq_row"], q["rq_head"] % cap]
            if not events.recv_imm(T, i, now, D.WC_WR_FLUSH_ERR, r["wr_id"], 0, 0):
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
