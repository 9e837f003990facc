"""Cache-line helpers: prefetching changes nothing, aligned tables start on a line."""
import numpy as np
from numba import njit

from mrc.cachelines import aligned_zeros, prefetch, prefetch_line
from mrc.core import dtypes as D


@njit(cache=True)
def _touch(ev, order, i):
    prefetch(ev[i], 3)  # one 64-byte row
    prefetch(order, i)  # a whole row of a 2-d table
    prefetch_line(order[i], 90)  # one line
    return order[i, 0] + ev[i, 3]["ev"]


def test_prefetch_compiles_for_rows_and_2d_rows_and_changes_nothing():
    ev = aligned_zeros((4, 8), D.EV)
    ev[2, 3]["ev"] = 7
    order = np.arange(4 * 100, dtype=np.uint16).reshape(4, 100)
    before = (ev.copy(), order.copy())
    assert _touch(ev, order, 2) == 200 + 7
    assert (ev == before[0]).all() and (order == before[1]).all()
    prefetch(order, 1)  # plain Python: nothing happens
    prefetch_line(order[1], 0)


def test_aligned_zeros_starts_on_a_line_and_is_zeroed():
    for shape, dt in (((5,), np.int64), ((3, 7), D.EV), ((11,), np.dtype([("a", np.int32), ("b", np.int8)]))):
        a = aligned_zeros(shape, dt)
        assert a.shape == shape and a.dtype == np.dtype(dt)
        assert a.ctypes.data % 64 == 0
        assert not a.view(np.uint8).any()
    assert D.EV.itemsize == 64
