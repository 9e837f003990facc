"""The ``mrc.h`` calls beyond the QP basics, with the header's semantics: versions and contexts, completion
channels (a trio and an asyncio program sleeping on one), async event acknowledgement, the masked
``mrc_query_qp`` / ``mrc_modify_qp``, ``mrc_destroy_qp`` in any state, QP hints, vendor attributes."""
from __future__ import annotations

import asyncio
import select

import pytest
import trio

from mrc.api import (
    MRC_API_CURRENT_VERSION, MRC_API_VER_LATEST, Access, ContextAttr, Device, IbvQpAttr, IbvQpAttrMask, QpAttr,
    QpAttrMask, QpCap, QpCapFlags, QpHintAttr, QpHintAttrMask, QpHintInitAttr, QpInitAttr, api_ver, create_context,
    query_version,
)
from mrc.errors import E2BIG, EAGAIN, EBUSY, EINVAL, ENOTSUP
from mrc.testing.simnet import SimNet

from tests.twodevices import RTR, RTS, setup_profiles

MTU = 4096


def pair():
    a, b = Device("a", seed=1, address="A"), Device("b", seed=2, address="B")
    for side, dev in enumerate((a, b)):
        setup_profiles(dev, ev_count=8, side=side)
    return a, b, SimNet([a, b], seed=3)


def connected(a, b, cq_a=None, cq_b=None):
    qa, qb = a.create_qp(cq_a), b.create_qp(cq_b)
    for q in (qa, qb):
        q.modify("INIT", ev_profile_id=1, cc_profile_id=1)
    qa.modify("RTR", dest_qp_num=qb.qp_num, remote_address="B", **RTR)
    qb.modify("RTR", dest_qp_num=qa.qp_num, remote_address="A", **RTR)
    qa.modify("RTS", **RTS)
    qb.modify("RTS", **RTS)
    return qa, qb


# --- versions and contexts ---------------------------------------------------------------------

def test_versions_follow_mrc_api_ver_h():
    from mrc import ctl

    v = query_version()
    assert (v.current_version, v.last_supported_version, v.vendor_version, v.last_supported_vendor_version) == (
        api_ver(1, 0, 1), 0, api_ver(1, 0, 0), 0)
    assert api_ver(1, 0, 1) == 0x01000001 and MRC_API_VER_LATEST == 0xFFFFFFFF
    assert ctl.query_version().current_version == api_ver(1, 0, 1) == Device().ctl.query_version().current_version
    with pytest.raises(EINVAL, match="minor = 256"):
        api_ver(1, 256, 0)


def test_a_context_records_its_version_and_cleans_up_what_it_created():
    dev = Device()
    for used, got in ((0, MRC_API_CURRENT_VERSION), (MRC_API_VER_LATEST, MRC_API_CURRENT_VERSION),
                      (api_ver(1, 0, 0), api_ver(1, 0, 0))):
        assert create_context(dev, ContextAttr(mrc_api_version_used=used)).api_version == got
    assert create_context(dev, None).api_version == MRC_API_CURRENT_VERSION
    with pytest.raises(EINVAL, match="mrc_api_version_used = 2.0.0: this library supports 0.0.0 to 1.0.1"):
        create_context(dev, ContextAttr(mrc_api_version_used=api_ver(2, 0, 0)))
    setup_profiles(dev, ev_count=4)
    with create_context(dev) as ctx:
        assert ctx.query_device().supported and ctx.ctl is dev.ctl
        ch = ctx.create_comp_channel()
        cq = ctx.create_cq(16, cq_context="mine", channel=ch)
        hint = ctx.create_qp_hint(QpHintInitAttr(QpHintAttr(num_qps_per_peer=2)))
        qp = ctx.create_qp(QpInitAttr(send_cq=cq, recv_cq=cq, cap=QpCap(8, 8)))
        qp.modify("INIT", ev_profile_id=1, cc_profile_id=1, qp_hint=hint)
    assert dev._qps.count(None) == len(dev._qps) and cq.destroyed and ch.destroyed and hint.destroyed
    with pytest.raises(EINVAL, match="destroyed"):
        ctx.create_cq(4)
    with pytest.raises(EINVAL, match="not a context of device"):
        Device().query_device(context=create_context(dev))


# --- completion channels ---------------------------------------------------------------------------

def test_req_notify_queues_one_event_on_the_channel_per_arming():
    a, b, net = pair()
    ch = a.create_comp_channel()
    cq = a.create_cq(64, cq_context={"tag": 7}, channel=ch)
    qa, qb = connected(a, b, cq)
    src, dst = bytearray(3 * MTU), bytearray(3 * MTU)
    ma, mb = a.reg_mr(src), b.reg_mr(dst)
    with pytest.raises(EAGAIN):
        ch.get_cq_event(block=False)
    cq.req_notify()
    for n in range(2):
        net.post_write(qa, n, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
    net.run(lambda: len(cq) == 2)
    assert select.select([ch], [], [], 0)[0] == [ch]  # the descriptor is readable
    got_cq, ctx = ch.get_cq_event(block=False)
    assert got_cq is cq and ctx == {"tag": 7}
    with pytest.raises(EAGAIN):  # one event per arming, however many completions
        ch.get_cq_event(block=False)
    assert select.select([ch], [], [], 0)[0] == []
    with pytest.raises(EBUSY, match="QP\\(s\\) still use it"):
        cq.destroy()
    a.destroy_qp(qa)
    with pytest.raises(EBUSY, match="1 completion event\\(s\\) not acknowledged"):
        cq.destroy()
    with pytest.raises(EINVAL, match="only 1 event"):
        cq.ack_events(2)
    cq.ack_events(1)
    with pytest.raises(EBUSY, match="1 CQ\\(s\\) still use it"):
        ch.destroy()
    cq.destroy()
    ch.destroy()


def test_solicited_only_wakes_for_receives_and_errors_not_for_send_completions():
    a, b, net = pair()
    ch, cha = b.create_comp_channel(), a.create_comp_channel()
    cqa, cqb = a.create_cq(64, channel=cha), b.create_cq(64, channel=ch)
    qa, qb = connected(a, b, cqa, cqb)
    src, dst = bytearray(MTU), bytearray(MTU)
    ma, mb = a.reg_mr(src), b.reg_mr(dst)
    cqa.req_notify(solicited_only=True)
    qb.post_recv(9)
    cqb.req_notify(solicited_only=True)
    net.post_write(qa, 1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey, imm_data=0x77)
    net.run(lambda: len(cqb) == 1 and len(cqa) == 1)
    with pytest.raises(EAGAIN):
        cha.get_cq_event(block=False)  # a send completion is not solicited
    assert ch.get_cq_event(block=False)[0] is cqb  # the receive completion is


def test_a_trio_program_sleeps_on_the_channel_until_a_completion_arrives():
    a, b, net = pair()
    ch = a.create_comp_channel()
    cq = a.create_cq(8, channel=ch)
    qa, qb = connected(a, b, cq)
    ma, mb = a.reg_mr(bytearray(4 * MTU)), b.reg_mr(bytearray(4 * MTU))
    log = []

    async def waiter():
        cq.req_notify()
        await ch.wait()  # trio.lowlevel.wait_readable on the channel's descriptor
        got, _ = ch.get_cq_event(block=False)
        log.append(("woke", len(got.poll())))
        got.ack_events(1)

    async def driver():
        await trio.sleep(0.01)
        net.post_write(qa, 1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
        while not log:
            net.run_for(5_000_000)
            await trio.sleep(0)

    async def main():
        with trio.fail_after(10):
            async with trio.open_nursery() as n:
                n.start_soon(waiter)
                n.start_soon(driver)

    trio.run(main)
    assert log == [("woke", 1)]


def test_an_asyncio_program_sleeps_on_the_channel_too():
    a, b, net = pair()
    ch = a.create_comp_channel()
    cq = a.create_cq(8, channel=ch)
    qa, qb = connected(a, b, cq)
    ma, mb = a.reg_mr(bytearray(MTU)), b.reg_mr(bytearray(MTU))

    async def main():
        cq.req_notify()
        wait = asyncio.ensure_future(ch.wait())
        await asyncio.sleep(0.01)
        assert not wait.done()
        net.post_write(qa, 1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
        net.run(lambda: len(cq) == 1)
        await asyncio.wait_for(wait, 5)
        return ch.get_cq_event(block=False)[0]

    assert asyncio.run(main()) is cq


# --- async events -----------------------------------------------------------------------------------

def test_async_events_name_their_element_and_must_be_acknowledged():
    a, b, net = pair()
    qa, qb = connected(a, b)
    net.drop = lambda rec: rec.src == "A"
    mr = a.reg_mr(bytearray(100))
    qa.modify("RTS", retry_linear=0, retry_exp=0, timeout=0)
    qa.post_write(1, mr.sge(), remote_addr=0x1000, rkey=7)
    net.run(lambda: qa.state == "ERROR")
    e = a.get_async_event()
    assert e.kind == "QP_FATAL" and e.element is qa and e.event_type == "IBV_EVENT_QP_FATAL"
    with pytest.raises(EBUSY, match="async event of QP .* not acknowledged"):
        a.destroy_qp(qa)
    a.ack_async_event(e)
    with pytest.raises(EINVAL, match="acknowledged already"):
        a.ack_async_event(e)
    a.destroy_qp(qa)
    assert a.get_async_event() is None
    with pytest.raises(EAGAIN):
        a.get_async_event(block=True, timeout=0.01)
    a.set_port_state(1, False)
    assert select.select([a.async_fd], [], [], 0)[0] == [a.async_fd]


# --- QPs: masked query and modify, destroy ----------------------------------------------------------------

def test_modify_qp_and_query_qp_with_masks():
    a, b, net = pair()
    qa = a.create_qp()
    S = IbvQpAttrMask
    qa.modify_qp(IbvQpAttr(qp_state="INIT"), S.STATE, QpAttr(ev_profile_id=1, cc_profile_id=1, qp_hint=None),
                 QpAttrMask.EV_PROFILE_ID | QpAttrMask.CC_PROFILE_ID | QpAttrMask.HINT)
    va, ma, init = qa.query_qp()
    assert va.qp_state == "INIT" and (ma.ev_profile_id, ma.cc_profile_id, ma.mpr) == (1, 1, None)
    with pytest.raises(EINVAL, match="IBV_QP_TIMEOUT \\(use MRC_QP_TIMEOUT\\) is not supported"):
        qa.modify_qp(IbvQpAttr(qp_state="RTR"), S.STATE | S.TIMEOUT)
    with pytest.raises(EINVAL, match="cur_qp_state = 'RTR' but QP .* is INIT"):
        qa.modify_qp(IbvQpAttr(qp_state="RTR", cur_qp_state="RTR"), S.STATE | S.CUR_STATE)
    qa.modify_qp(IbvQpAttr(qp_state="RTR", dest_qp_num=0x99, rq_psn=5, remote_address="B", path_mtu=2048),
                 S.STATE | S.DEST_QPN | S.RQ_PSN | S.AV | S.PATH_MTU,
                 QpAttr(mpr=4, mpr_dest=6, max_wimm=32, max_wimm_dest=64, cap=QpCapFlags.TRIM_NACK_DEST_UNSUPPORTED,
                        vendor_cfg=b"ack_every_pkts=2"),
                 QpAttrMask.MPR | QpAttrMask.MPR_DEST | QpAttrMask.MAX_WIMM | QpAttrMask.MAX_WIMM_DEST | QpAttrMask.CAP
                 | QpAttrMask.VENDOR_CFG)
    qa.modify_qp(IbvQpAttr(qp_state="RTS", sq_psn=9), S.STATE | S.SQ_PSN,
                 QpAttr(timeout=6, retry_linear=3, retry_exp=25), QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT)
    va, ma, init = qa.query_qp(S.STATE | S.DEST_QPN | S.AV | S.PATH_MTU, QpAttrMask.MPR | QpAttrMask.MPR_DEST
                               | QpAttrMask.MAX_WIMM | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT | QpAttrMask.CAP
                               | QpAttrMask.VENDOR_CFG)
    assert (va.qp_state, va.dest_qp_num, va.remote_address, va.path_mtu, va.rq_psn) == ("RTS", 0x99, "B", 2048, None)
    assert (ma.mpr, ma.mpr_dest, ma.max_wimm, ma.max_wimm_dest, ma.timeout, ma.retry_linear, ma.retry_exp) == (
        4, 6, 32, None, 6, 3, 25)  # the requester's MPR and WIMM given at RTR (mrc_qp.md) hold at RTS
    assert ma.cap & QpCapFlags.TRIM_NACK_DEST_UNSUPPORTED and ma.vendor_cfg == b"ack_every_pkts=2"
    assert qa.query()["ack_every_pkts"] == 2 and qa.query()["trim_nack_dest"] == 0
    assert init.send_cq is qa.send_cq
    qb = b.create_qp()
    qb.modify("INIT", ev_profile_id=1, cc_profile_id=1)
    with pytest.raises(EINVAL, match="vendor_cfg item 'rack=0': known keys"):  # an RTS attribute at RTR time
        qb.modify("RTR", dest_qp_num=0x55, remote_address="A", vendor_cfg=b"rack=0", **RTR)
    with pytest.raises(EINVAL, match="access"):
        qa.modify_qp(IbvQpAttr(qp_access_flags=16), S.ACCESS_FLAGS)


def test_destroy_qp_works_in_any_state_and_the_handle_dies():
    a, b, net = pair()
    qa, qb = connected(a, b)
    ma, mb = a.reg_mr(bytearray(MTU)), b.reg_mr(bytearray(MTU))
    qa.post_write(1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
    assert qa.state == "RTS"
    with qa:
        pass  # a with block destroys it, in RTS, a write outstanding
    with pytest.raises(EINVAL, match="was destroyed"):
        qa.state
    assert len(a.ctl._evps[1].slots) == 0  # its profiles released
    qa2 = a.create_qp()
    qa2.destroy()  # RESET too


def test_create_qp_takes_the_init_attr_of_the_header():
    dev = Device()
    cq = dev.create_cq(8)
    qp = dev.create_qp(init_attr=QpInitAttr(send_cq=cq, recv_cq=cq, cap=QpCap(16, 16), qp_context=42,
                                            send_ops_flags=3))
    assert qp.qp_context == 42 and qp.get_qpn() == qp.qp_num and qp.query_qp()[2].cap.max_send_wr == 16
    with pytest.raises(EINVAL, match="send_ops_flags = 4: MRC allows"):
        dev.create_qp(init_attr=QpInitAttr(send_cq=cq, send_ops_flags=4))
    with pytest.raises(ENOTSUP, match="sq_sig_all = 0"):
        dev.create_qp(init_attr=QpInitAttr(send_cq=cq, sq_sig_all=0))
    with pytest.raises(EINVAL, match="max_send_sge = 2 outside \\[1, 1\\]"):
        dev.create_qp(cq, cap=QpCap(8, 8, 2))
    with pytest.raises(ENOTSUP, match="protocol_version 2"):
        dev.create_qp(cq, protocol_version=2)
    with pytest.raises(EINVAL, match="comp_vector = 1"):
        dev.create_cq(8, comp_vector=1)


# --- QP hints ---------------------------------------------------------------------------------------------

def test_qp_hints_are_created_queried_modified_and_busy_while_used():
    dev = Device()
    setup_profiles(dev, ev_count=4)
    ctx = create_context(dev)
    assert dev.query_device().max_qp_hint == 64
    hint = ctx.create_qp_hint(QpHintInitAttr(QpHintAttr(num_qps_per_peer=2, num_send_peers=4)))
    got = hint.query(QpHintAttrMask.NUM_QPS_PER_PEER | QpHintAttrMask.NUM_SEND_PEERS)
    assert (got.num_qps_per_peer, got.num_send_peers, got.num_remote_recv_peers) == (2, 4, 0)
    hint.modify(QpHintAttr(num_remote_recv_peers=16), QpHintAttrMask.NUM_REMOTE_RECV_PEERS)
    assert hint.query().num_remote_recv_peers == 16 and hint.query().num_qps_per_peer == 2
    with pytest.raises(EINVAL, match="num_send_peers = -1"):
        hint.modify(QpHintAttr(num_send_peers=-1), QpHintAttrMask.NUM_SEND_PEERS)
    with pytest.raises(EINVAL, match="no vendor keys are defined for QP hints"):
        hint.modify(QpHintAttr(vendor_cfg=b"x=1"), QpHintAttrMask.VENDOR_CFG)
    qp = dev.create_qp()
    qp.modify("INIT", ev_profile_id=1, cc_profile_id=1, qp_hint=hint)
    assert qp.query_qp(0, QpAttrMask.HINT)[1].qp_hint is hint
    with pytest.raises(EBUSY, match="1 QP\\(s\\) use it"):
        hint.destroy()
    qp.destroy()
    hint.destroy()
    with pytest.raises(EINVAL, match="destroyed"):
        hint.query()
    with pytest.raises(EINVAL, match="qp_hint = 5 is not a QpHint"):
        dev.create_qp().modify("INIT", ev_profile_id=1, cc_profile_id=1, qp_hint=5)


def test_query_fields_and_arrays_report_e2big():
    dev = Device()
    setup_profiles(dev, ev_count=4)
    from mrc.ctl import EvOp, EvOpArgs, EvProfileAttr, EvProfileAttrMask

    attr = EvProfileAttr(ev_op=EvOpArgs(EvOp.QUERY_EV_ARRAY, entry_count=3))
    with pytest.raises(E2BIG):
        dev.ctl.query_ev_profile(1, EvProfileAttrMask.EV_OP, attr)
    assert attr.ev_op.entry_count == 4


def test_reg_mr_access_flags_are_checked():
    with pytest.raises(EINVAL, match="access must be Access flags"):
        Device().reg_mr(bytearray(10), access=64)
    assert Device().reg_mr(bytearray(10), access=Access.LOCAL_WRITE).rkey
