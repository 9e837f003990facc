"""`mrc.core.qp.modify`: the one place that checks and applies every QP transition.

Every (state, target) pair, in the library (`mrc.api.QueuePair.modify`) and in the bare core (a table
row moved by `modify` alone, as the emulator and the harness move theirs): either both apply the move
with its effects, or both refuse it, the core with `REFUSED` and nothing changed, the library with the
one EINVAL naming both states.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mrc.core import dtypes as D, evset, nscc, qp as core_qp, setup, tables
from mrc.errors import EINVAL
from tests.twodevices import RTR, RTS, TwoDevices

NAMES = list(D.QP_STATE_NAMES)
STATES = range(len(NAMES))
PORTS = 2


def _lib_attrs(target: int, conn) -> dict:
    """What mrc.h requires for a move to `target` (the QP's peer is the other device's; RTS -> RTS keeps
    its sq_psn)."""
    name = NAMES[target]
    if name == "INIT":
        return dict(ev_profile_id=1, cc_profile_id=1)
    if name == "RTR":
        return dict(dest_qp_num=conn.qb.qp_num, remote_address="B", **RTR)
    if name == "RTS":
        return {k: v for k, v in RTS.items() if k != "sq_psn" or conn.qa.state != "RTS"}
    return {}


def _lib_qp_in(state: int):
    """A library QP in `state`, reached the legal way (ERROR from RTS, with a write outstanding)."""
    env = TwoDevices(ports=PORTS, ev_count=8)
    qa = env.a.create_qp(env.a.create_cq())
    qb = env.b.create_qp(env.b.create_cq())
    conn = type("C", (), {"qa": qa, "qb": qb})
    path = {"RESET": [], "INIT": ["INIT"], "RTR": ["INIT", "RTR"], "RTS": ["INIT", "RTR", "RTS"],
            "ERROR": ["INIT", "RTR", "RTS", "ERROR"]}[NAMES[state]]
    for step in path:
        qa.modify(step, **_lib_attrs(NAMES.index(step), conn))
    return env, conn, qa


def _core_qp_in(state: int):
    """A bare core row in `state`: profiles bound and attributes written as a Device does, moved by `modify`."""
    T = tables.allocate(2, max_ev=8, window=1024, max_wr=4, max_recv=4, n_mr=1, n_cc=1)
    setup.write_cc(T, 0, setup.nscc_profile(base_rtt_ps=8_000_000))
    core_qp.create(T, 0, 0x100, 12345)
    evs = np.arange(8, dtype=np.uint32) + 0x1000
    evset.bind_profile(T, 0, evs, (np.arange(8) // 4).astype(np.uint8), np.zeros(8, np.bool_), PORTS)
    nscc.use_profile(T, 0, 0)
    setup.configure_qp(T, 0, 8, 8_000_000, mpr=8, mpr_dest=8)
    path = {"RESET": [], "INIT": [1], "RTR": [1, 2], "RTS": [1, 2, 3], "ERROR": [1, 2, 3, 4]}[NAMES[state]]
    for step in path:
        assert core_qp.modify(T, 0, step, _core_attrs(step), 0) == 0
    return T


def _core_attrs(target: int):
    return core_qp.qp_attr(sq_psn=7, rq_psn=9, dest_qpn=0x101, local_ports=0b11, rng=777)


def _same(a, b) -> bool:
    """Two QP rows hold the same fields (padding aside: numpy does not copy it)."""
    return all(np.array_equal(a[f], b[f]) for f in a.dtype.names)


def _applied(q, target: int, expect_psns: bool) -> None:
    """The effects a move to `target` leaves in a QP row."""
    assert int(q["state"]) == target
    if NAMES[target] == "RESET":
        assert int(q["n_ev"]) == 0 and int(q["mpr"]) == 0 and int(q["local_ports"]) == 0  # zeroed
        assert int(q["qpn"]) != 0  # its number stays
    if NAMES[target] == "RTR":
        assert int(q["remote_ports"]) == (1 << PORTS) - 1 and int(q["local_ports"]) == (1 << PORTS) - 1
        if expect_psns:
            assert int(q["cack_psn"]) == 8 and int(q["dest_qpn"]) == 0x101
    if NAMES[target] == "ERROR":
        assert int(q["inflight"]) == 0 and int(q["rto_deadline"]) == D.NEVER


@pytest.mark.parametrize("cur", STATES, ids=NAMES)
@pytest.mark.parametrize("target", STATES, ids=NAMES)
def test_every_move_is_applied_or_refused_alike_in_the_library_and_the_core(cur, target):
    # the core alone
    T = _core_qp_in(cur)
    before = T.qp[0:1].copy()
    rc = core_qp.modify(T, 0, target, _core_attrs(target), 0)
    legal = bool(core_qp.QP_FSM[cur, target])
    assert (rc == 0) == legal
    if legal:
        _applied(T.qp[0], target, expect_psns=True)
        if NAMES[target] == "RESET":
            assert int(T.qp[0]["rng"]) == 777
        if NAMES[cur] == "RTR" and NAMES[target] == "RTS":
            assert int(T.qp[0]["sq_psn"]) == 7 and int(T.qp[0]["una_psn"]) == 7
    else:
        assert rc == core_qp.REFUSED
        assert _same(T.qp[0:1], before)  # nothing changed
    # the library
    env, conn, qa = _lib_qp_in(cur)
    before = env.a.T.qp[qa.index:qa.index + 1].copy()
    if legal:
        qa.modify(NAMES[target], **_lib_attrs(target, conn))
        assert qa.state == NAMES[target]
        _applied(env.a.T.qp[qa.index], target, expect_psns=False)
    else:
        with pytest.raises(EINVAL, match=f"cannot go from {NAMES[cur]} to {NAMES[target]}"):
            qa.modify(NAMES[target], **_lib_attrs(target, conn))
        assert _same(env.a.T.qp[qa.index:qa.index + 1], before)


def test_an_unknown_target_is_refused():
    T = _core_qp_in(0)
    assert core_qp.modify(T, 0, 5, _core_attrs(5), 0) == core_qp.REFUSED
    assert core_qp.modify(T, 0, -1, _core_attrs(0), 0) == core_qp.REFUSED


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=12))
def test_any_sequence_of_moves_leaves_the_library_and_the_core_in_the_same_state(targets):
    """Each move of a random sequence: the core refuses it exactly when the library does, and both end
    in the same state (the library's QP row is moved by the same `modify`)."""
    T = _core_qp_in(0)
    env, conn, qa = _lib_qp_in(0)
    for t in targets:
        rc = core_qp.modify(T, 0, t, _core_attrs(t), 0)
        try:
            qa.modify(NAMES[t], **_lib_attrs(t, conn))
            refused = False
        except EINVAL as e:
            assert "cannot go from" in str(e)
            refused = True
        assert refused == (rc == core_qp.REFUSED)
        assert NAMES[int(T.qp[0]["state"])] == qa.state


def test_error_flushes_what_was_posted():
    """to ERROR (the application's move): every posted write completes with WR_FLUSH_ERR."""
    T = _core_qp_in(3)
    for k in range(3):
        assert core_qp.post_write(T, 0, k, D.WR_WRITE, 0, 0, 0, 0, 4096, 0, 0) == 0
    assert core_qp.modify(T, 0, D.QPS_ERROR, _core_attrs(4), 5) == 0
    ev = tables.drain_events(T)
    done = ev[ev["kind"] == D.E_SEND_DONE]
    assert list(done["wr_id"]) == [0, 1, 2] and set(done["status"].tolist()) == {D.WC_WR_FLUSH_ERR}


def test_rts_rebalances_only_when_the_active_sets_can_change():
    """RTR -> RTS and RTS -> RTS rebuild the active sets only if the attributes moved ``ev_active_target``
    so that they can change: a rebalance that can change nothing still draws from the QP's generator, and
    a QP whose profile has fewer EVs than its target (the emulator's default) must start as it did."""
    T = _core_qp_in(2)
    setup.configure_qp(T, 0, 8, 8_000_000, mpr=8, mpr_dest=8, ev_active_target=64)  # more than the 8 EVs
    evset.rebalance(T, 0)  # every usable EV active; the planes still short of their share
    rng = int(T.qp[0]["rng"])
    assert evset.balanced(T, 0)
    assert core_qp.modify(T, 0, D.QPS_RTS, _core_attrs(3), 0) == 0
    assert int(T.qp[0]["rng"]) == rng  # nothing could move: nothing drawn
    setup.configure_qp(T, 0, 8, 8_000_000, mpr=8, mpr_dest=8, ev_active_target=2)  # one per plane
    assert not evset.balanced(T, 0)
    assert core_qp.modify(T, 0, D.QPS_RTS, _core_attrs(3), 0) == 0
    assert list(T.ev[0, :8]["active"].reshape(2, 4).sum(1)) == [1, 1]
    assert evset.balanced(T, 0)
