"""The QP state machine (checked and applied here, for every user of the core), posting, the ERROR flush.

States RESET -> INIT -> RTR -> RTS, and RESET and ERROR from anywhere (mrc.h: INIT needs the EV and
CC profiles, RTR the responder's MPR and max WIMM, RTS the requester's MPR, max WIMM, retry counts
and timeout). `QP_FSM[state, target]` is 1 where a QP may move; `modify` checks it and applies the
transition's effects, in one place (h11's rule), for the library (`mrc.api.QueuePair`), the
emulator's MRC glue (`mrc.emulator.transports.mrcqp`) and the test harness (`mrc.testing`):

- to RESET: the QP's row and every table row it owns are zeroed (no state survives a reuse); its
  QP number and rows stay, its generator restarts from ``rng`` (`create` places a new QP);
- to INIT: nothing else (the profiles are bound by the caller first: `evset.bind_profile`);
- INIT -> RTR: the peer's QP number, the responder started at ``rq_psn`` (`setup.start_responder`),
  then the ports known now: the local NIC's (``local_ports``) and the peer's (``remote_ports``; -1: not
  known, every port), through `dispatch.set_local_ports` / `set_remote_ports`;
- RTR -> RTS: the requester started at ``sq_psn`` (`setup.start_requester`; policy ONE starts on
  ``ev_pin`` when one is given); RTS -> RTS changes attributes; both rebalance the active EVs when
  the attributes written before moved ``ev_active_target`` so that the active sets can change
  (`evset.balanced`: a rebalance that can change nothing would still draw from the QP's generator);
- to ERROR: `flush.enter_error` with WR_FLUSH_ERR.

The attributes (`QpAttr`, made by `qp_attr` with every field defaulted) are written by the caller
with `setup.configure_qp` before the move, where they are validated; what `modify` takes is what the
transition itself needs. A move `QP_FSM` does not allow changes nothing and returns `REFUSED`; the
library raises EINVAL for it first (local misuse).

Entering ERROR (`flush.enter_error`, re-exported here) completes every outstanding send WR: the one
that failed with the cause (e.g. RETRY_EXC_ERR), the rest with WR_FLUSH_ERR; posted receives
complete with WR_FLUSH_ERR (IB verbs semantics). Nothing the API accepted is silently dropped.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dispatch, evset
from mrc.core import dtypes as D
from mrc.core.flush import enter_error  # noqa: F401  (re-exported: the ERROR flush)
from mrc.core.requester import hold_rto
from mrc.core.setup import start_requester, start_responder

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

REFUSED = -1  # `modify`: QP_FSM has no such move (nothing changed)

QpAttr = namedtuple("QpAttr", ["sq_psn", "rq_psn", "dest_qpn", "rcv_cwnd_pen", "local_ports", "remote_ports",
                               "ev_pin", "rng"])
QpAttr.__doc__ = """What a transition of `modify` takes (`qp_attr` fills in the defaults): ``sq_psn`` (RTR -> RTS: the
first PSN sent), ``rq_psn`` (INIT -> RTR: the first PSN expected), ``dest_qpn`` (-> RTR: the peer's QP
number), ``rcv_cwnd_pen`` (-> RTR: the receiver's window penalty it advertises, 0-127), ``local_ports`` /
``remote_ports`` (-> RTR: bit p = port p up; -1: every port), ``ev_pin`` (RTR -> RTS, policy ONE: the EV
slot it starts on; -1: drawn), ``rng`` (-> RESET: the generator's new state; 0: kept)."""


@njit_core
def qp_attr(sq_psn=0, rq_psn=0, dest_qpn=0, rcv_cwnd_pen=0, local_ports=-1, remote_ports=-1, ev_pin=-1, rng=0):
    """A `QpAttr` (every field an int64), the fields not given at their defaults."""
    return QpAttr(i64(sq_psn), i64(rq_psn), i64(dest_qpn), i64(rcv_cwnd_pen), i64(local_ports), i64(remote_ports),
                  i64(ev_pin), i64(rng))


@njit_core
def _zero(rows):
    rows.view(np.uint8)[:] = 0


@njit_core
def _own(T, i, qpn, ev_row, tx_row, rx_row, wr_row, rq_row, rng):
    """Row `i` is QP `qpn`, owns these rows of the EV, TX, RX, WR and RQ tables (-1: none), its generator at
    `rng`, in RESET."""
    q = T.qp[i]
    q["qpn"], q["rng"], q["state"] = qpn, rng, D.QPS_RESET
    q["ev_row"], q["tx_row"], q["rx_row"], q["wr_row"], q["rq_row"] = ev_row, tx_row, rx_row, wr_row, rq_row


@njit_core
def _reset(T, i, rng):
    """Row `i` and every table row it owns zeroed; its QP number and rows kept, its generator at `rng` (0: kept)."""
    q = T.qp[i]
    qpn, seed = q["qpn"], (q["rng"] if rng == 0 else rng)
    ev_row, tx_row, rx_row, wr_row, rq_row = q["ev_row"], q["tx_row"], q["rx_row"], q["wr_row"], q["rq_row"]
    if ev_row >= 0:
        _zero(T.ev[ev_row])
        _zero(T.ev_order[ev_row])
    if wr_row >= 0:
        _zero(T.wr[wr_row])
    if rq_row >= 0:
        _zero(T.rq[rq_row])
    for t in range(T.tx.shape[0]):  # tiles of PSN slots (`mrc.core.tables`): the row's slots in every tile
        if tx_row >= 0:
            _zero(T.tx[t, tx_row])
    for t in range(T.rx.shape[0]):
        if rx_row >= 0:
            _zero(T.rx[t, rx_row])
    _zero(T.qp[i:i + 1])
    _own(T, i, qpn, ev_row, tx_row, rx_row, wr_row, rq_row, seed)


@njit_core
def create(T, i, qpn, rng):
    """A new QP in row `i` (RESET), owning row `i` of every table (a Device's layout, and the test harness's),
    with QP number `qpn` and its generator at `rng`."""
    _own(T, i, qpn, i, i, i, i, i, rng)
    _reset(T, i, rng)


@njit_core
def modify(T, i, target, attrs, now):
    """Move QP `i` to state `target` (`D.QPS_*`) with the transition's effects (module docstring): 0, or
    REFUSED (nothing changed) when `QP_FSM` has no such move."""
    q = T.qp[i]
    cur = i64(q["state"])
    if target < 0 or target >= QP_FSM.shape[1] or QP_FSM[cur, target] == 0:
        return REFUSED
    if target == D.QPS_RESET:
        _reset(T, i, attrs.rng)
    elif target == D.QPS_ERROR:
        enter_error(T, i, D.WC_WR_FLUSH_ERR, now)
    elif target == D.QPS_INIT:
        q["state"] = D.QPS_INIT
    elif target == D.QPS_RTR:
        q["dest_qpn"] = attrs.dest_qpn
        q["rcv_cwnd_pen"] = attrs.rcv_cwnd_pen
        start_responder(T, i, attrs.rq_psn, now)
        if attrs.local_ports >= 0:
            dispatch.set_local_ports(T, i, np.uint32(attrs.local_ports), now)  # ports already down stay down
        if attrs.remote_ports >= 0:
            dispatch.set_remote_ports(T, i, np.uint32(attrs.remote_ports), now)
        q["state"] = D.QPS_RTR
    else:  # RTS
        if cur == D.QPS_RTR:
            start_requester(T, i, attrs.sq_psn, now)
            if attrs.ev_pin >= 0:
                q["ev_pin"] = attrs.ev_pin
        if not evset.balanced(T, i):
            evset.rebalance(T, i)  # the active set follows ev_active_target, if the attributes moved it
        q["state"] = D.QPS_RTS
    return 0


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
