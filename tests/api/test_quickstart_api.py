"""The helpers a programmer meets first (docs/library.md): one-call profiles and connections, the
in-memory network `mrc.testing.simnet.SimNet`, and reprs that say what an object is."""
from __future__ import annotations

import re

import numpy as np
import pytest

from mrc.api import Device, connect
from mrc.core.setup import QP_DEFAULTS
from mrc.ctl import CtlEv, EpResponse, EvEvent, EvState
from mrc.errors import UsageError
from mrc.testing.simnet import SimNet
from mrc.units import US


def devices(**kw):
    a, b = Device("a", seed=1, **kw), Device("b", seed=2, **kw)
    for dev in (a, b):
        assert len(dev.ctl.setup_ev_profile(1, count=8)) == 8
        dev.ctl.setup_cc_profile(1)
    return a, b


def test_one_call_profiles_are_online_with_the_documented_defaults():
    a, _ = devices()
    ev = a.ctl.query_ev_profile(1)
    assert (ev.profile_state.name, ev.ev_mode.name, ev.ev_count, ev.ev_min_active, ev.ev_event_mask) == (
        "ONLINE", "AUTO", 8, 2, 3)
    assert sorted(e.port for e in a.ctl.query_ev_array(1)) == [1] * 4 + [2] * 4
    cc = a.ctl.query_cc_profile(1)
    assert (cc.profile_state.name, cc.algorithm, cc.cc_config.base_rtt_ns) == ("ONLINE", "uet-1.0-nscc", 8000)
    assert a.ctl.cc_row(1)["base_rtt"] == 8 * US
    a.ctl.setup_cc_profile(2, algorithm="fixed-window", max_cwnd=3 * 4096)
    assert a.ctl.query_cc_profile(2).cc_config.max_cwnd == 3 * 4096
    with pytest.raises(UsageError, match="algorithm fixed-window needs max_cwnd"):
        a.ctl.setup_cc_profile(3, algorithm="fixed-window")
    with pytest.raises(UsageError, match="count = 0 must be an integer in"):
        a.ctl.setup_ev_profile(4, count=0)


def test_connect_takes_a_qp_to_rts_with_the_core_defaults_and_any_attribute_by_name():
    a, b = devices(max_mpr=4)
    qa, qb = a.create_qp(), b.create_qp()
    assert qa.send_cq is qa.recv_cq and len(qa.send_cq) == 0  # a CQ of its own when none is given
    connect(qa, qb, ev_active_target=8, reorder_window_ps=20 * US)
    for q, peer in ((qa, qb), (qb, qa)):
        attrs = q.query()
        assert (attrs["state"], attrs["dest_qp_num"], q.peer.address) == ("RTS", peer.qp_num, peer.device.address)
        assert attrs["mpr"] == 4  # QP_DEFAULTS' 8, capped at the device's max_mpr
        for key in ("max_wimm", "retry_linear", "retry_exp", "timeout"):
            assert attrs[key] == QP_DEFAULTS[key]
        assert attrs["reorder_window_ps"] == 20 * US and attrs["ev_active_target"] == 8
    qa_row, qb_row = a.T.qp[qa.index], b.T.qp[qb.index]
    for tx, rx in ((qa_row, qb_row), (qb_row, qa_row)):  # each side expects the other's first PSN
        assert (int(tx["sq_psn"]) - 1) & 0xFFFFFF == int(rx["cack_psn"])


def test_connect_draws_unguessable_first_psns_unless_the_devices_are_seeded():
    psns = set()
    for _ in range(4):
        a, b = Device("a"), Device("b")
        for dev in (a, b):
            dev.ctl.setup_ev_profile(1, count=4)
            dev.ctl.setup_cc_profile(1)
        qa, qb = a.create_qp(), b.create_qp()
        connect(qa, qb)
        psns.add(int(a.T.qp[qa.index]["sq_psn"]))
    assert len(psns) == 4


def test_connect_refuses_unknown_attributes_and_a_refused_step_leaves_the_qp_in_reset():
    a, b = devices()
    qa, qb = a.create_qp(), b.create_qp()
    with pytest.raises(UsageError, match=r"\['mrp'\] are not QP attributes"):
        qa.connect(qb.qp_num, "b", mrp=4)
    with pytest.raises(UsageError, match="connect: modify_qp to RTS: timeout = 99 must be an integer in"):
        qa.connect(qb.qp_num, "b", timeout=99)
    assert qa.state == "RESET"
    with pytest.raises(UsageError, match="connect: EV profile 5 does not exist"):
        qa.connect(qb.qp_num, "b", ev_profile_id=5)
    assert qa.state == "RESET"
    qa.connect(qb.qp_num, "b")
    with pytest.raises(UsageError, match="is in RTS; connect starts from RESET"):
        qa.connect(qb.qp_num, "b")


def test_simnet_moves_a_verified_write_through_loss_and_reordering():
    a, b = devices()
    qa, qb = a.create_qp(), b.create_qp()
    connect(qa, qb)
    src = np.random.default_rng(5).integers(0, 256, 256 * 1024, dtype=np.uint8)
    dst = np.zeros_like(src)
    ma, mb = a.reg_mr(src), b.reg_mr(dst)
    net = SimNet([a, b], loss=0.05, jitter_ps=3 * US, seed=2)
    net.post_write(qa, 9, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
    (wc,) = net.wait_completion(qa.send_cq)
    assert (wc.wr_id, wc.ok, wc.byte_len) == (9, True, src.size) and (dst == src).all()
    st = net.statistics()
    assert st.dropped > 0 and st.sent == len(net.sent) and st.now_us == net.now / US
    assert qa.statistics()["rtx_pkts"] > 0
    arrivals = [r.arrived for r in net.sent if r.fate == "delivered" and r.src == "a"]
    assert arrivals != sorted(arrivals)  # jitter reordered them


def test_simnet_waits_end_with_a_timeout_that_says_why():
    a, b = devices()
    qa, qb = a.create_qp(), b.create_qp()
    connect(qa, qb)
    net = SimNet([a, b])
    with pytest.raises(TimeoutError, match="cq_has_a_completion still false at .* us \\(the network went idle\\)"):
        net.wait_completion(qa.send_cq)
    buf = bytearray(64 * 4096)
    ma, mb = a.reg_mr(buf), b.reg_mr(bytearray(len(buf)))
    net.drop = lambda sent: True  # nothing gets through: the write cannot complete within 50 us
    net.post_write(qa, 1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
    with pytest.raises(TimeoutError, match="\\(50 us passed\\)"):
        net.wait_completion(qa.send_cq, timeout_ps=50 * US)


@pytest.mark.parametrize("kw, match", [(dict(loss=1.5), "loss = 1.5 must be a probability"),
                                       (dict(delay_ps=-1), "delay_ps = -1 must be a non-negative integer"),
                                       (dict(jitter_ps=0.5), "jitter_ps = 0.5 must be a non-negative integer")])
def test_simnet_refuses_absurd_settings(kw, match):
    with pytest.raises(UsageError, match=match):
        SimNet([Device("a")], **kw)


def test_simnet_refuses_two_devices_at_one_address_and_packets_to_nowhere():
    with pytest.raises(UsageError, match="two devices have the address 'x'"):
        SimNet([Device("a", address="x"), Device("b", address="x")])
    a, b = devices()
    qa, qb = a.create_qp(), b.create_qp()
    qa.connect(qb.qp_num, "nowhere")
    buf = bytearray(4096)
    ma = a.reg_mr(buf)
    net = SimNet([a, b])
    net.post_write(qa, 1, ma.sge(), remote_addr=0, rkey=1)
    with pytest.raises(UsageError, match="addressed to 'nowhere', which is not a device of this network"):
        net.run()


def test_reprs_say_what_each_object_is():
    a, b = devices()
    qa, qb = a.create_qp(), b.create_qp()
    assert re.fullmatch(r"<QueuePair 0x[0-9a-f]+ on 'a' RESET: 0 write\(s\) outstanding, 0 EVs>", repr(qa))
    connect(qa, qb)
    assert re.fullmatch(rf"<QueuePair {qa.qp_num:#x} on 'a' RTS -> QP {qb.qp_num:#x} at 'b': 0 write\(s\) "
                        r"outstanding, 8 EVs>", repr(qa))
    assert repr(a) == "<Device 'a' at 'a': 2 port(s) x 100 Gb/s, MTU 4096 B, 1 QP(s)>"
    mr = a.reg_mr(bytearray(100))
    assert re.fullmatch(r"<MemoryRegion of 100 B at 0x[0-9a-f]+ on 'a': lkey 0x[0-9a-f]+, rkey 0x[0-9a-f]+, .*>", repr(mr))
    assert repr(qa.send_cq) == "<CompletionQueue on 'a': 0 of 1024 entries pending, 0 overrun(s)>"
    assert repr(EvEvent(1, CtlEv.from_int(0xAB, 2), 0, EvState.ASSUMED_BAD, 0x12, 0xAB, 7)) == \
        ("EvEvent(CtlEv(0x000000ab, port=2), state=ASSUMED_BAD, profile_id=1, drop_count=0 event(s), qp=0x12, "
         "value=0xab, losses=7 packet(s))")
    assert repr(EvState.GOOD) == "EvState.GOOD"
    assert repr(SimNet([a, b])).startswith("<SimNet ['a', 'b'] at 0.000 us: delay 2 us, jitter 0 us, loss 0")


def test_ep_response_rtt_is_named_in_ns_and_the_old_spelling_warns():
    r = EpResponse(1, 2, 4000)
    assert r.rtt_ns == 4000
    with pytest.warns(DeprecationWarning, match="use rtt_ns"):
        assert r.rtt == 4000
