"""The controller's endpoint protocol (`mrc.core.ctlproto`): the request table, each request and answer,
timers, and hostile input refused before any state changes. `tests/emulator/test_ctlproto_paths.py` runs
one exchange through the library and the emulator and compares them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mrc.core import ctlproto as CP, dtypes as D, tables

NEVER = int(D.NEVER)


def _core(n_ev_per_plane=2, planes=2):
    """One QP in RTS with `n_ev_per_plane` GOOD EVs per plane (EV value 0x100 * plane + rank)."""
    T = tables.allocate(1, max_ev=n_ev_per_plane * planes)
    q = T.qp[0]
    q["state"], q["n_ev"], q["n_planes"] = D.QPS_RTS, n_ev_per_plane * planes, planes
    q["local_ports"] = q["remote_ports"] = (1 << planes) - 1
    for p in range(planes + 1):
        q["plane_start"][p] = p * n_ev_per_plane
    for k in range(n_ev_per_plane * planes):
        e = T.ev[0, k]
        e["ev"], e["plane"], e["state"] = 0x100 * (k // n_ev_per_plane) + k % n_ev_per_plane, k // n_ev_per_plane, D.EV_GOOD
    return T


def _snapshot(tabs):
    return [a.copy() for a in tabs]


def _unchanged(before, tabs):
    return all(np.array_equal(a, b) for a, b in zip(before, tabs))


def _rows(C, H, h, head):
    out, r = [], int(H[h][head])
    while r >= 0:
        out.append(r)
        r = int(C[r]["next"])
    return out


def _invariants(C, H, free, s):
    """Every row is free xor in exactly one host list in its state; deadlines are the waiting rows' minimum."""
    n_free = int(s[CP.S_FREE_N])
    seen = list(free[:n_free])
    for h in range(len(H)):
        q, w = _rows(C, H, h, "q_head"), _rows(C, H, h, "w_head")
        assert all(C[r]["state"] == CP.R_QUEUED for r in q) and all(C[r]["state"] == CP.R_WAITING for r in w)
        assert (int(H[h]["q_tail"]) == q[-1]) if q else True
        assert int(H[h]["deadline"]) == min([int(C[r]["deadline"]) for r in w], default=NEVER)
        seen += q + w
    assert sorted(int(r) for r in seen) == list(range(len(C)))  # no row lost, none twice: the buffer is bounded


# ---------------------------------------------------------------- requests


def test_a_port_status_update_leaves_on_a_usable_ev_of_an_up_plane_and_is_resent_until_answered():
    C, H, free, s = tabs = CP.allocate(2, 8, 2)
    T = _core()
    T.ev[0, 0]["state"] = D.EV_ASSUMED_BAD  # plane 0's first EV is out: its second carries the update
    r = CP.request_psu(C, H, free, s, 0, 1, 0, 0b01)
    assert r >= 0 and _rows(C, H, 0, "q_head") == [r] and C[r]["req_id"] == 0
    got, ev = CP.pick(C, H, free, s, T, 0, 0, 1000, 0, 0)
    assert (got, ev) == (r, 0x001)
    assert CP.sent(C, H, free, s, 0, r, 1000, 500, 0) == CP.PSU_REQUEST
    assert C[r]["tries"] == 1 and H[0]["deadline"] == 1500
    for k in range(3):  # unanswered: queued again at each timeout, at most `retries` (2) times
        CP.on_timer(C, H, free, s, T, 0, 1500 + 1000 * k, 2)
        if k < 2:
            assert _rows(C, H, 0, "q_head") == [r]
            CP.pick(C, H, free, s, T, 0, 1, 1500 + 1000 * k, 0, 0)
            CP.sent(C, H, free, s, 0, r, 1500 + 1000 * k, 1000, 0)
        _invariants(*tabs)
    assert int(s[CP.S_FREE_N]) == 8 and H[0]["deadline"] == NEVER  # given up after 1 + 2 tries


def test_a_newer_update_replaces_a_pending_one_and_the_answer_ends_it():
    C, H, free, s = tabs = CP.allocate(2, 8, 2)
    T = _core()
    r = CP.request_psu(C, H, free, s, 0, 1, 0, 0b01)
    CP.pick(C, H, free, s, T, 0, 0, 0, 0, 0)
    CP.sent(C, H, free, s, 0, r, 0, 500, 0)
    assert CP.request_psu(C, H, free, s, 0, 1, 0, 0b11) == r  # the waiting one is replaced, queued again
    assert C[r]["mask"] == 0b11 and C[r]["tries"] == 0 and _rows(C, H, 0, "q_head") == [r]
    CP.pick(C, H, free, s, T, 0, 1, 10, 0, 0)
    CP.sent(C, H, free, s, 0, r, 10, 500, 0)
    assert CP.on_response(C, H, free, s, T, 0, 1, CP.EP_PSU, int(C[r]["req_id"]), 2, 20) == (r, CP.RSP_PSU_DONE)
    assert CP.on_response(C, H, free, s, T, 0, 1, CP.EP_PSU, int(C[r]["req_id"]), 2, 30)[1] == CP.RSP_UNMATCHED
    _invariants(*tabs)
    assert int(s[CP.S_FREE_N]) == 8


def test_an_update_waits_while_no_plane_has_a_usable_ev():
    C, H, free, s = CP.allocate(1, 4, 2)
    T = _core()
    T.qp[0]["remote_ports"] = 0b10  # the peer's port 0 is down: plane 0 carries nothing to it
    CP.request_psu(C, H, free, s, 0, 1, 0, 0b11)
    assert CP.pick(C, H, free, s, T, 0, 0, 0, 0, 0) == (-1, -1)
    assert CP.pick(C, H, free, s, T, 0, 1, 0, 0, 0)[1] == 0x100


def test_probes_of_an_ev_count_answers_in_a_row_and_stop_when_the_ev_recovers_by_itself():
    C, H, free, s = tabs = CP.allocate(1, 8, 2)
    T = _core()
    T.ev[0, 2]["state"] = D.EV_ASSUMED_BAD
    r = CP.request_probe(C, H, free, s, T, 0, 1, 0, 2, 0, 100)
    assert r >= 0 and C[r]["ev"] == 0x100 and C[r]["plane"] == 1 and H[0]["deadline"] == 100
    assert CP.request_probe(C, H, free, s, T, 0, 1, 0, 2, 5, 100) == CP.NOTHING  # one probe per EV
    assert CP.request_probe(C, H, free, s, T, 0, 1, 0, 3, 5, 0) == CP.NOTHING  # interval 0: off
    CP.on_timer(C, H, free, s, T, 0, 100, 7)
    assert CP.pick(C, H, free, s, T, 0, 0, 100, 0, 0) == (-1, -1)  # only on its own plane
    assert CP.pick(C, H, free, s, T, 0, 1, 100, 0, 0) == (r, 0x100)
    CP.sent(C, H, free, s, 0, r, 100, 0, 100)
    assert CP.on_response(C, H, free, s, T, 0, 1, CP.EP_PROBE, int(C[r]["req_id"]), 3, 150) == (r, CP.RSP_PROBE_COUNTED)
    assert C[r]["ok"] == 1
    CP.on_timer(C, H, free, s, T, 0, 200, 7)
    CP.pick(C, H, free, s, T, 0, 1, 200, 0, 0)
    CP.sent(C, H, free, s, 0, r, 200, 0, 100)
    CP.on_timer(C, H, free, s, T, 0, 300, 7)  # no answer this time: the count starts again
    assert C[r]["ok"] == 0
    CP.pick(C, H, free, s, T, 0, 1, 300, 0, 0)
    CP.sent(C, H, free, s, 0, r, 300, 0, 100)
    T.ev[0, 2]["state"] = D.EV_GOOD  # the core's own probes brought it back
    assert CP.on_response(C, H, free, s, T, 0, 1, CP.EP_PROBE, int(C[r]["req_id"]), 3, 350)[1] == CP.RSP_PROBE_DONE
    _invariants(*tabs)
    assert int(s[CP.S_FREE_N]) == 8


def test_an_ev_is_restored_at_exactly_probe_successes_answers():
    C, H, free, s = tabs = CP.allocate(1, 8, 2)
    T = _core()
    T.ev[0, 2]["state"] = D.EV_ASSUMED_BAD
    r = CP.request_probe(C, H, free, s, T, 0, 1, 0, 2, 0, 100)
    outcomes = []
    for n in range(2):
        CP.on_timer(C, H, free, s, T, 0, 100 * (n + 1), 7)
        assert CP.pick(C, H, free, s, T, 0, 1, 100 * (n + 1), 0, 0) == (r, 0x100)
        CP.sent(C, H, free, s, 0, r, 100 * (n + 1), 0, 100)
        outcomes.append(CP.on_response(C, H, free, s, T, 0, 1, CP.EP_PROBE, int(C[r]["req_id"]), 2, 100 * n + 150))
    assert outcomes == [(r, CP.RSP_PROBE_COUNTED), (r, CP.RSP_RESTORED)]  # the 2nd of 2: restored, not a 3rd
    assert T.ev[0, 2]["state"] == D.EV_GOOD
    _invariants(*tabs)
    assert int(s[CP.S_FREE_N]) == 8


def test_a_queued_update_in_the_tables_only_row_is_replaced_not_refused():
    """Row 0 is a row like any other: a newer update to the same peer replaces the one queued there."""
    C, H, free, s = tabs = CP.allocate(1, 1, 2)
    r = CP.request_psu(C, H, free, s, 0, 1, 0, 0b01)
    assert r == 0
    assert CP.request_psu(C, H, free, s, 0, 1, 0, 0b10) == 0 and C[0]["mask"] == 0b10
    assert CP.request_psu(C, H, free, s, 0, 2, 0, 0b10) == CP.DROPPED  # another peer: no room
    _invariants(*tabs)


def test_psu_ev_is_a_usable_ev_of_an_up_plane_or_minus_one():
    T = _core()
    assert CP.psu_ev(T, 0, 1) == 0x100
    T.ev[0, 2]["state"] = D.EV_ASSUMED_BAD
    assert CP.psu_ev(T, 0, 1) == 0x101
    T.ev[0, 3]["state"] = D.EV_DENIED
    assert CP.psu_ev(T, 0, 1) == -1  # no usable EV on the plane
    T.qp[0]["remote_ports"] = 0b10
    assert CP.psu_ev(T, 0, 0) == -1  # the peer's port of the plane is down
    assert CP.psu_ev(T, 0, 1) == -1


@pytest.mark.parametrize("ev, plane, shift, width, out", [
    (0xFFFF_FFFF, 0, 28, 4, 0x0FFF_FFFF), (0x0000_1234, 5, 28, 4, 0x5000_1234), (0x3FFF_FFFF, 2, 28, 2, 0x2FFF_FFFF),
    (0xABCD, 3, 4, 3, 0xABBD), (0xABCD, 0, 0, 0, 0xABCD),
])
def test_on_plane_sets_the_plane_field_and_nothing_else(ev, plane, shift, width, out):
    assert CP.on_plane(ev, plane, shift, width) == out


def test_answers_go_on_the_request_plane_or_its_twin_when_that_port_is_down():
    C, H, free, s = CP.allocate(1, 4, 2)
    T = _core()
    r = CP.respond(C, H, free, s, 0, 3, CP.EP_PROBE, 0x42, 0x0123, 1, 26, 0x3333, 0)
    assert C[r]["mask"] == 0b11 and C[r]["echo_ts"] == 0x3333 and C[r]["tc"] == 26
    assert CP.pick(C, H, free, s, T, 0, 0, 0, 8, 4) == (-1, -1)  # plane 1 is up: the answer waits for it
    H[0]["local_ports"] = 0b01
    assert CP.pick(C, H, free, s, T, 0, 0, 0, 8, 4) == (r, 0x0023)  # plane field (4 bits at 8) set to 0
    assert CP.sent(C, H, free, s, 0, r, 0, 0, 0) == CP.PROBE_RESPONSE and int(s[CP.S_FREE_N]) == 4
    r = CP.respond(C, H, free, s, 0, 3, CP.EP_PROBE, 0x43, 0x0123, 1, 26, 0, 0)
    assert CP.pick(C, H, free, s, T, 0, 0, 0, 0, 0) == (-1, -1)  # no plane field known: its own plane only


def test_an_answer_reports_how_long_it_waited_and_the_requester_takes_it_off():
    """mrc_ctl.h ``mrc_ctl_ep_rsp.adj_svc_time``: "Non-zero if rtt has been adjusted for responder service time"."""
    C, H, free, s = CP.allocate(1, 4, 2)
    T = _core()
    r = CP.respond(C, H, free, s, 0, 3, CP.EP_PROBE, 0x42, 0x0123, 0, 26, 0x3333, 5_000_000)  # arrives at 5 us
    assert CP.pick(C, H, free, s, T, 0, 0, 7_250_999, 0, 0) == (r, 0x0123)
    assert CP.service_time_ns(C, r, 7_250_999) == 2250  # it left 2.25 us later
    assert CP.adjusted_rtt_ns(9000, 2250) == (6750, True)
    assert CP.adjusted_rtt_ns(9000, 0) == (9000, False)  # nothing reported: the RTT as measured
    assert CP.adjusted_rtt_ns(9000, 9001) == (9000, False)  # longer than the round trip: not believed


def test_an_application_request_is_matched_by_op_peer_and_req_id_and_dropped_at_its_deadline():
    C, H, free, s = tabs = CP.allocate(1, 4, 2)
    T = _core()
    r = CP.request_user(C, H, free, s, 0, 5, CP.EP_PROBE, 7, 0xABC, 1, 0, 26, 1000)
    assert CP.pick(C, H, free, s, T, 0, 1, 10, 0, 0) == (r, 0xABC)
    CP.sent(C, H, free, s, 0, r, 10, 0, 0)
    before = _snapshot(tabs)
    for peer, op, req_id in ((4, CP.EP_PROBE, 7), (5, CP.EP_PSU, 7), (5, CP.EP_PROBE, 8), (5, 3, 7)):
        assert CP.on_response(C, H, free, s, T, 0, peer, op, req_id, 2, 20) == (-1, CP.RSP_UNMATCHED)
    assert _unchanged(before, tabs)  # wrong sender, op or id: nothing changed
    assert CP.on_response(C, H, free, s, T, 0, 5, CP.EP_PROBE, 7, 2, 30) == (r, CP.RSP_USER)
    assert C[r]["t_sent"] == 10
    late = CP.request_user(C, H, free, s, 0, 5, CP.EP_PROBE, 9, 1, 0, 0, 26, 50)
    assert CP.pick(C, H, free, s, T, 0, 0, 50, 0, 0) == (-1, -1) and C[late]["state"] == CP.R_FREE  # unsent
    r = CP.request_user(C, H, free, s, 0, 5, CP.EP_PSU, 10, 1, 0, 0b11, 26, 80)
    CP.pick(C, H, free, s, T, 0, 0, 60, 0, 0)
    CP.sent(C, H, free, s, 0, r, 60, 0, 0)
    assert H[0]["deadline"] == 80
    CP.on_timer(C, H, free, s, T, 0, 80, 7)
    assert int(s[CP.S_FREE_N]) == 4 and H[0]["deadline"] == NEVER
    _invariants(*tabs)


def test_a_full_table_drops_new_requests_and_says_so():
    C, H, free, s = tabs = CP.allocate(1, 2, 2)
    T = _core()
    assert CP.request_psu(C, H, free, s, 0, 1, 0, 1) >= 0
    assert CP.respond(C, H, free, s, 0, 1, CP.EP_PROBE, 1, 1, 0, 0, 0, 0) >= 0
    before = _snapshot(tabs)
    assert CP.request_psu(C, H, free, s, 0, 2, 0, 1) == CP.DROPPED
    assert CP.request_probe(C, H, free, s, T, 0, 1, 0, 0, 0, 100) == CP.DROPPED
    assert CP.respond(C, H, free, s, 0, 1, CP.EP_PROBE, 2, 1, 0, 0, 0, 0) == CP.DROPPED
    assert CP.request_user(C, H, free, s, 0, 1, CP.EP_PROBE, 1, 1, 0, 0, 0, 10) == CP.DROPPED
    assert _unchanged(before, tabs)


@pytest.mark.parametrize("op, mask, port, reason", [
    (2, 0, 0, CP.BAD_OP), (3, 0, 0, CP.BAD_OP), (CP.EP_PSU, 0b100, 0, CP.BAD_MASK),
    (CP.EP_PSU, 0xFFFFFFFF, 1, CP.BAD_MASK), (CP.EP_PROBE, 0, 2, CP.BAD_PORT), (CP.EP_PROBE, 0, -1, CP.BAD_PORT),
    (CP.EP_PSU, 0b11, 0, 0), (CP.EP_PROBE, 0xFFFFFFFF, 1, 0),  # a probe's mask is the sender's news, not ours
])
def test_requests_are_checked_before_anything_changes(op, mask, port, reason):
    tabs = CP.allocate(1, 4, 2)
    before = _snapshot(tabs)
    assert CP.check_request(tabs[1], 0, 2, op, mask, port) == reason
    assert _unchanged(before, tabs)
    assert CP.check_response(op) == (CP.BAD_OP if op not in (CP.EP_PSU, CP.EP_PROBE) else 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["psu", "probe", "user", "respond", "pick", "timer", "answer"]),
                          st.integers(0, 3), st.integers(0, 1), st.integers(0, 3)), max_size=60))
def test_any_sequence_keeps_the_table_consistent_and_bounded(steps):
    """Rows are never lost or doubled, lists match states, the host deadline is its waiting rows' minimum."""
    C, H, free, s = tabs = CP.allocate(2, 6, 2)
    T = _core()
    now = 0
    for what, a, b, c in steps:
        now += 50 * c
        h = b
        if what == "psu":
            CP.request_psu(C, H, free, s, h, a, 0, 1 + b)
        elif what == "probe":
            T.ev[0, a]["state"] = D.EV_ASSUMED_BAD
            CP.request_probe(C, H, free, s, T, h, 1, 0, a, now, 100)
        elif what == "user":
            CP.request_user(C, H, free, s, h, a, CP.EP_PROBE if c & 1 else CP.EP_PSU, a, a, b, 0, 0, now + 200)
        elif what == "respond":
            CP.respond(C, H, free, s, h, a, CP.EP_PROBE, a, 0x100 * b, b, 0, 0, 0)
        elif what == "pick":
            r, _ = CP.pick(C, H, free, s, T, h, a & 1, now, 8, 1)
            if r >= 0:
                CP.sent(C, H, free, s, h, r, now, 100, 100)
        elif what == "timer":
            CP.on_timer(C, H, free, s, T, h, now, 2)
        else:
            CP.on_response(C, H, free, s, T, h, a, CP.EP_PROBE if c & 1 else CP.EP_PSU, a, 2, now)
        _invariants(*tabs)


# ---------------------------------------------------------------- the packets (`fill_packet`)


def test_fill_packet_stamps_a_request_and_its_answer_echoes_the_stamp():
    """A request carries its sender's time (`TS_UNIT_PS`, the QPs' TSETH unit); the answer echoes the request's
    stamp (MRC notes 2.4), with the time it waited and its host's ports; the DSCPs as documented."""
    from mrc.core.setup import QP_DEFAULTS
    from mrc.wire.constants import ENDPOINT_QPN, OP_MRC_ENDPOINT_REQUEST, OP_MRC_ENDPOINT_RESPONSE
    from mrc.wire.records import PKT

    assert CP.TS_UNIT_PS == QP_DEFAULTS["ts_unit_ps"]
    T = _core()
    C, H, free, s = CP.allocate(2, 8, 2)
    out = np.zeros(2, PKT)
    now = 1_234_567_890
    CP.request_psu(C, H, free, s, 0, 1, 0, 0b01)
    r, ev = CP.pick(C, H, free, s, T, 0, 0, now, 0, 0)
    CP.fill_packet(C, H, T, 0, r, 0, ev, now, 26, out, 0)
    req = out[0]
    assert (int(req["opcode"]), int(req["dqpn"]), int(req["ep_op"]), int(req["port_status_mask"])) == (
        OP_MRC_ENDPOINT_REQUEST, ENDPOINT_QPN, CP.EP_PSU, 0b01)
    assert int(req["ts"]) == 1 and int(req["tx_timestamp"]) == (now // CP.TS_UNIT_PS) & 0xFFFF
    assert int(req["dscp"]) == 26 and int(req["ev"]) == ev and int(req["port"]) == 0
    # host 1 answers, 3 us after the request arrived
    t_rx = now + 2_000_000
    CP.respond(C, H, free, s, 1, 0, CP.EP_PSU, int(req["req_id"]), ev, 0, 46, int(req["tx_timestamp"]), t_rx)
    r, ev2 = CP.pick(C, H, free, s, T, 1, 0, t_rx + 3_000_000, 0, 0)
    CP.fill_packet(C, H, T, 1, r, 0, ev2, t_rx + 3_000_000, 26, out, 1)
    rsp = out[1]
    assert int(rsp["opcode"]) == OP_MRC_ENDPOINT_RESPONSE and int(rsp["req_id"]) == int(req["req_id"])
    assert int(rsp["tx_timestamp"]) == int(req["tx_timestamp"]) and int(rsp["ts"]) == 0  # the echo
    assert int(rsp["svc_time"]) == 3000 and int(rsp["dscp"]) == 46  # ns waited; the request's DSCP
    assert int(rsp["port_status_mask"]) == int(H[1]["local_ports"])


def test_apply_port_status_reaches_only_a_running_qp():
    T = _core()
    for state, applied in ((D.QPS_RESET, False), (D.QPS_INIT, False), (D.QPS_RTR, True), (D.QPS_RTS, True)):
        T.qp[0]["state"] = state
        T.qp[0]["remote_ports"] = 0b11
        assert bool(CP.apply_port_status(T, 0, np.uint32(0b10), True, 0)) == applied
        assert int(T.qp[0]["remote_ports"]) == (0b10 if applied else 0b11)
    assert CP.apply_port_status(T, 0, np.uint32(0b01), False, 0) and int(T.qp[0]["local_ports"]) == 0b01
