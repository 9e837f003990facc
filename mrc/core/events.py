"""Appending events to the EVT table (the core's only way to tell the outside world).

Completions must never be lost: when the table is full the core reports it
through ``evt_n[1]`` and the caller (library, emulator) drains after every
call, which keeps the table from filling in practice. EV-state events beyond
the capacity are counted as dropped (``evt_n[2]`` counts those alone), as the
EV Event CQ of mrc_ctl.h does (it "does not support CQ overruns": drop_count
reports them; the library adds ``evt_n[2]`` to every EV event CQ's count).
"""
from __future__ import annotations

from mrc._jit import njit_core
from mrc.core import dtypes as D


@njit_core
def emit(T, kind, qp, now, status, wr_id, byte_len, imm, ev, ev_state, plane, drop_count, value):
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
