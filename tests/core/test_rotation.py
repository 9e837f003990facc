"""The rotations (`rotation`): planes in turn and each plane's seeded EV visiting order."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from mrc.core import rotation
from mrc.testing.harness import Pair


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 8), planes=st.integers(0, 255), start=st.integers(0, 20))
def test_next_plane_is_the_first_plane_of_the_mask_in_cyclic_order(n, planes, start):
    planes &= (1 << n) - 1
    want = next(((start + s) % n for s in range(n) if (planes >> ((start + s) % n)) & 1), -1)
    assert rotation.next_plane(planes, start, n) == want


def test_rotation_peek_names_what_rotation_next_takes_and_changes_nothing():
    pair = Pair(n_planes=2, evs_per_plane=5, seed=9)
    T = pair.T
    q = T.qp[0]
    for step in range(40):
        p = step % 2
        start = int(q["plane_start"][p])
        size = int(q["plane_start"][p + 1]) - start
        before = (T.qp[0].tobytes(), T.ev_order[0].tobytes())
        k, o = (int(x) for x in rotation.rotation_peek(T, 0, p))
        assert (T.qp[0].tobytes(), T.ev_order[0].tobytes()) == before
        got = int(rotation.rotation_next(T, 0, p, start, size))
        if k >= 0:
            assert k == got and o == start + int(q["rot_pos"][p]) - 1
        else:
            assert o == start and int(q["rot_pos"][p]) == 1  # a new cycle was drawn
