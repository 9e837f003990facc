"""Cache-line helpers: prefetching changes nothing, aligned tables start on a line; the QP row's
field groups are whole lines and hold what the per-packet paths read."""
import inspect
import re

import numpy as np
import pytest
from numba import njit

from mrc.core.cachelines import aligned_zeros, fill_rows, prefetch, prefetch_line, prefetch_lines
from mrc.core import dispatch, dtypes as D, requester, tables


_RESP = D.QP_LINES["resp"]  # (first line, lines): a global tuple, a constant to the compiler


@njit(cache=True)
def _touch(ev, order, qp, i):
    prefetch(ev[i], 3)  # one 64-byte row
    prefetch(order, i)  # a whole row of a 2-d table
    prefetch_line(order[i], 90)  # one line
    prefetch_lines(qp, i, _RESP[0], _RESP[1])  # some lines of a row
    return order[i, 0] + ev[i, 3]["ev"] + qp[i]["cack_psn"]


def test_prefetch_compiles_for_rows_and_2d_rows_and_changes_nothing():
    ev = aligned_zeros((4, 8), D.EV)
    ev[2, 3]["ev"] = 7
    order = np.arange(4 * 100, dtype=np.uint16).reshape(4, 100)
    qp = tables.allocate(4).qp
    qp[2]["cack_psn"] = 5
    before = (ev.copy(), order.copy(), qp.copy())
    assert _touch(ev, order, qp, 2) == 200 + 7 + 5
    assert (ev == before[0]).all() and (order == before[1]).all() and (qp == before[2]).all()
    prefetch(order, 1)  # plain Python: nothing happens
    prefetch_line(order[1], 0)
    prefetch_lines(qp, 1, 0, 3)


def test_aligned_zeros_starts_on_a_line_and_is_zeroed():
    for shape, dt in (((5,), np.int64), ((3, 7), D.EV), ((11,), np.dtype([("a", np.int32), ("b", np.int8)]))):
        a = aligned_zeros(shape, dt)
        assert a.shape == shape and a.dtype == np.dtype(dt)
        assert a.ctypes.data % 64 == 0
        assert not a.view(np.uint8).any()
    assert D.EV.itemsize == 64


def test_fill_rows_is_the_structured_assignment_byte_for_byte():
    row = np.zeros(1, D.QP)
    row["qpn"], row["tx_row"], row["n_planes"] = 0x123456, -1, 8
    a = aligned_zeros(37, D.QP)
    b = np.zeros(37, D.QP)
    fill_rows(a, row)
    b[:] = row
    assert a.tobytes() == b.tobytes() and a[36]["qpn"] == 0x123456 and a[0]["tx_row"] == -1
    fill_rows(a[:0], row)  # nothing to fill
    with pytest.raises(ValueError, match="fill_rows"):
        fill_rows(a, np.zeros(1, D.EV))  # another dtype
    with pytest.raises(ValueError, match="fill_rows"):
        fill_rows(a, np.zeros(2, D.QP))  # not one row


def test_qp_row_is_whole_lines_and_each_group_starts_on_a_line_and_holds_its_fields():
    assert D.QP.itemsize % 64 == 0 and D.QP.isalignedstruct
    assert tables.allocate(3).qp.ctypes.data % 64 == 0  # so a group's lines are the row's lines
    spans = sorted(D.QP_LINES.values())
    assert spans[0][0] == 0 and sum(n for _, n in spans) == D.QP.itemsize // 64
    assert all(a + n == b for (a, n), (b, _) in zip(spans, spans[1:]))  # contiguous, no overlap
    seen = set()
    for group, names in D.QP_GROUPS.items():
        first, n = D.QP_LINES[group]
        for name in names:
            dt, off = D.QP.fields[name][:2]
            assert first * 64 <= off and off + dt.itemsize <= (first + n) * 64, (group, name)
        seen.update(names)
    assert seen == set(D.QP.names) and len(seen) == len(D.QP.names)  # every field in one group


def _qp_fields(fn):
    return set(re.findall(r'\bq\["(\w+)"\]', inspect.getsource(getattr(fn, "py_func", fn))))  # (plain under NUMBA_DISABLE_JIT)


def test_the_checks_every_endpoint_runs_after_every_event_read_only_the_scheduling_lines():
    # tx_ready and next_deadline run for every endpoint after every packet and timer (the engine's
    # NIC sync); the emulator prefetches the scheduling group for them (mrcqp._prefetch_qp). A
    # field they read that lives elsewhere costs a miss on every event.
    sched = set(D.QP_GROUPS["sched"])
    for fn in (dispatch.tx_ready, dispatch.next_deadline, requester.psn_limit):
        assert _qp_fields(fn) <= sched, (fn.__name__, _qp_fields(fn) - sched)
    assert {"rx_bytes", "rtx_spurious", "rtx_timeouts"} <= sched  # the driver glue's reads
