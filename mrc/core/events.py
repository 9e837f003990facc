"""Appending events to the EVT table (the core's only way to tell the outside world): one function per
kind of event, named as the event, with that event's fields.

- `send_done` (E_SEND_DONE): a send work request completed: status, wr_id, length, when it was posted;
- `recv_imm` (E_RECV_IMM): a Write-with-Immediate delivered into a posted receive (or the receive
  flushed): status, the receive's wr_id, bytes, the immediate;
- `ev_state` (E_EV_STATE): an EV changed state: the EV, its new state, plane, losses counted on it
  (``drop_count``), its slot (``value``);
- `qp_error` (E_QP_ERROR): the QP entered ERROR, and why (``status``);
- `access_violation` (E_ACCESS_VIOLATION): the responder refused a write outside every registered
  region: va (``wr_id``), extent (``byte_len``), rkey (``imm``), EV, port (``plane``), PSN (``value``).

Completions must never be lost: when the table is full the core reports it
through ``evt_n[1]`` and the caller (library, emulator) drains after every
call, which keeps the table from filling in practice. EV-state events beyond
the capacity are counted as dropped (``evt_n[2]`` counts those alone), as the
EV Event CQ of mrc_ctl.h does (it "does not support CQ overruns": drop_count
reports them; the library adds ``evt_n[2]`` to every EV event CQ's count).
Each function returns False when the table was full (the event was not added).
"""
from __future__ import annotations

from mrc._jit import njit_core
from mrc.core import dtypes as D


@njit_core
def _append(T, kind, qp, now, status, wr_id, byte_len, imm, ev, ev_state, plane, drop_count, value):
    """The one writer of an EVT row (every field; the functions below name the ones their event uses)."""
    n = T.evt_n[0]
    if n >= T.evt.shape[0]:
        T.evt_n[1] += 1
        if kind == D.E_EV_STATE:
            T.evt_n[2] += 1  # the EV event CQs count them into drop_count (mrc_ctl.h)
        return False
    e = T.evt[n]
    e["kind"] = kind
    e["status"] = status
    e["qp"] = qp
    e["time"] = now
    e["wr_id"] = wr_id
    e["byte_len"] = byte_len
    e["imm"] = imm
    e["ev"] = ev
    e["ev_state"] = ev_state
    e["plane"] = plane
    e["drop_count"] = drop_count
    e["value"] = value
    T.evt_n[0] = n + 1
    return True


@njit_core(inline="always")
def send_done(T, i, now, status, wr_id, byte_len, post_time):
    """QP `i`'s send work request `wr_id` (`byte_len` bytes, posted at `post_time`) completed with `status`."""
    return _append(T, D.E_SEND_DONE, i, now, status, wr_id, byte_len, 0, 0, 0, 0, 0, post_time)


@njit_core(inline="always")
def recv_imm(T, i, now, status, wr_id, byte_len, imm):
    """QP `i`'s posted receive `wr_id` completed with `status`: a Write-with-Immediate of `byte_len` bytes and
    immediate `imm` delivered (or the receive flushed)."""
    return _append(T, D.E_RECV_IMM, i, now, status, wr_id, byte_len, imm, 0, 0, 0, 0, 0)


@njit_core(inline="always")
def ev_state(T, i, now, ev, state, plane, drop_count, slot):
    """EV `ev` (slot `slot`, on `plane`) of QP `i` entered `state`, with `drop_count` losses counted on it."""
    return _append(T, D.E_EV_STATE, i, now, 0, 0, 0, 0, ev, state, plane, drop_count, slot)


@njit_core(inline="always")
def qp_error(T, i, now, cause):
    """QP `i` entered ERROR because of `cause` (`D.ERR_*`, a completion status)."""
    return _append(T, D.E_QP_ERROR, i, now, cause, 0, 0, 0, 0, 0, 0, 0, 0)


@njit_core(inline="always")
def access_violation(T, i, now, va, extent, rkey, ev, port, psn):
    """QP `i`'s responder refused the write of PSN `psn` (EV `ev`, port `port`) to `extent` bytes at `va` with
    `rkey`: no registered region allows it."""
    return _append(T, D.E_ACCESS_VIOLATION, i, now, 0, va, extent, rkey, ev, 0, port, 0, psn)
