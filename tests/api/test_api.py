"""The library API (mrc.h style): QP state machine, posting, placement, completions, errors, counters.

Every scenario runs two `Device`s over the in-memory network of tests/twodevices.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from mrc.api import Device, QpCap, SendOpcode
from mrc.errors import MRCError, UsageError
from mrc.units import US

from tests.twodevices import RTR, RTS

MTU = 4096


def pattern(n: int, seed: int = 0) -> bytearray:
    return bytearray(np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes())


def completions(cq, n):
    """A predicate for net.run: `cq` holds at least `n` completions (polled into the returned list)."""
    got: list = []

    def done():
        got.extend(cq.poll(64))
        return len(got) >= n

    return got, done


# --- QP state machine ---------------------------------------------------------------------

def test_qp_state_machine_requires_the_mrc_h_attributes(two_devices):
    dev = two_devices.a
    cq = dev.create_cq()
    qp = dev.create_qp(cq)
    assert qp.state == "RESET"
    with pytest.raises(UsageError, match="cannot go from RESET to RTR"):
        qp.modify("RTR", dest_qp_num=5, remote_address="B", **RTR)
    with pytest.raises(UsageError, match="missing \\['cc_profile_id'\\]"):
        qp.modify("INIT", ev_profile_id=1)
    with pytest.raises(UsageError, match="EV profile 9 does not exist"):
        qp.modify("INIT", ev_profile_id=9, cc_profile_id=1)
    assert qp.state == "RESET"
    qp.modify("INIT", ev_profile_id=1, cc_profile_id=1, qp_hint=None)
    assert qp.state == "INIT"
    with pytest.raises(UsageError, match="cannot go from INIT to RTS"):
        qp.modify("RTS", **RTS)
    with pytest.raises(UsageError, match="missing \\['mpr_dest', 'max_wimm_dest'\\]"):
        qp.modify("RTR", dest_qp_num=5, remote_address="B", rq_psn=0)
    with pytest.raises(UsageError, match="mpr_dest = 9 must be an integer in \\[1, 8\\]"):
        qp.modify("RTR", dest_qp_num=5, remote_address="B", **{**RTR, "mpr_dest": 9})  # device max_mpr is 8
    with pytest.raises(UsageError, match="rq_psn = 16777216"):
        qp.modify("RTR", dest_qp_num=5, remote_address="B", **{**RTR, "rq_psn": 1 << 24})
    with pytest.raises(UsageError, match="\\['timeout'\\] not allowed"):
        qp.modify("RTR", dest_qp_num=5, remote_address="B", timeout=3, **RTR)
    assert qp.state == "INIT"
    qp.modify("RTR", dest_qp_num=5, remote_address="B", **RTR)
    assert qp.state == "RTR" and qp.query()["dest_qp_num"] == 5
    with pytest.raises(UsageError, match="missing \\['retry_exp', 'timeout'\\]"):
        qp.modify("RTS", sq_psn=0, mpr=8, max_wimm=16, retry_linear=7)
    for key, bad in (("timeout", 25), ("retry_linear", 8), ("retry_exp", 26), ("mpr", 0), ("max_wimm", -1)):
        with pytest.raises(UsageError, match=f"{key} = {bad} must be an integer"):
            qp.modify("RTS", **{**RTS, key: bad})
    assert qp.state == "RTR"
    qp.modify("RTS", **{**RTS, "timeout": 3, "retry_linear": 2, "retry_exp": 25})
    attrs = qp.query()
    assert (attrs["state"], attrs["timeout"], attrs["retry_linear"], attrs["retry_exp"], attrs["mpr"]) == ("RTS", 3, 2, 25, 8)
    qp.modify("RTS", timeout=6)  # RTS -> RTS changes attributes
    assert qp.query()["timeout"] == 6
    with pytest.raises(UsageError, match="sq_psn cannot change"):
        qp.modify("RTS", sq_psn=7)
    with pytest.raises(UsageError, match="cannot go from RTS to RTR"):
        qp.modify("RTR", dest_qp_num=5, remote_address="B", **RTR)
    with pytest.raises(UsageError, match="unknown state"):
        qp.modify("SQD")
    qp.modify("ERROR")
    assert qp.state == "ERROR"
    with pytest.raises(UsageError, match="cannot go from ERROR to RTS"):
        qp.modify("RTS", **RTS)
    with pytest.raises(UsageError, match="writes need RTS"):
        qp.post_write(1, (0, 0, 0), remote_addr=0, rkey=0)
    qp.modify("RESET")
    assert qp.state == "RESET" and qp.query()["ev_profile_id"] is None
    qp.modify("INIT", ev_profile_id=1, cc_profile_id=1)
    assert qp.state == "INIT"


def test_reset_discards_all_state_and_the_qp_can_reconnect(make_two_devices):
    env = make_two_devices()
    c = env.connect()
    src, dst = pattern(3 * MTU), bytearray(3 * MTU)
    ma, mb = env.a.reg_mr(src), env.b.reg_mr(dst)
    c.qa.post_write(1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
    got, done = completions(c.cqa, 1)
    assert env.net.run(done)
    assert bytes(dst) == bytes(src)
    c.qa.post_write(2, ma.sge(0, 100), remote_addr=mb.addr, rkey=mb.rkey)  # outstanding, then discarded
    for q in (c.qa, c.qb):
        q.modify("RESET")
        assert q.statistics()["tx_pkts"] == 0 and q.statistics()["inflight"] == 0
    dst[:] = bytes(len(dst))
    for q in (c.qa, c.qb):
        q.modify("INIT", ev_profile_id=1, cc_profile_id=1)
    c.qa.modify("RTR", dest_qp_num=c.qb.qp_num, remote_address="B", **{**RTR, "rq_psn": 5000})
    c.qb.modify("RTR", dest_qp_num=c.qa.qp_num, remote_address="A", **{**RTR, "rq_psn": 0xFFFFF0})
    c.qa.modify("RTS", **{**RTS, "sq_psn": 0xFFFFF0})
    c.qb.modify("RTS", **{**RTS, "sq_psn": 5000})
    c.qa.post_write(3, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
    got, done = completions(c.cqa, 1)
    assert env.net.run(done)
    assert [(w.wr_id, w.status) for w in got] == [(3, "SUCCESS")]  # wr 2 was discarded by RESET, not completed
    assert bytes(dst) == bytes(src)


def test_the_timestamp_unit_is_an_rts_attribute_checked_like_the_others(make_two_devices):
    env = make_two_devices()
    c = env.connect()
    for bad in (0, -8, (1 << 40) + 1, 8.0, True, "8ns"):
        with pytest.raises(UsageError, match=f"ts_unit_ps = {bad!r} must be an integer in \\[1, {1 << 40}\\]"):
            c.qa.modify("RTS", ts_unit_ps=bad)
    assert c.qa.query()["ts_unit_ps"] == 8000  # the default, untouched by the refused changes
    c.qa.modify("RTS", ts_unit_ps=1_000_000)
    assert c.qa.query()["ts_unit_ps"] == 1_000_000
    src, dst = pattern(MTU), bytearray(MTU)
    ma, mb = env.a.reg_mr(src), env.b.reg_mr(dst)
    c.qa.post_write(1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
    now = 12_345 * 1_000_000 + 999
    (out,) = env.a.packets_to_send(now)
    assert out.pkt["tx_timestamp"] == 12_345  # TSETH in the QP's unit


# --- posting -------------------------------------------------------------------------------

@pytest.mark.parametrize("opcode", ["SEND", "SEND_WITH_IMM", "RDMA_READ", "ATOMIC_CMP_AND_SWP", "ATOMIC_FETCH_AND_ADD"])
def test_post_send_refuses_everything_but_writes(two_devices, opcode):
    c = two_devices.connect()
    mr = two_devices.a.reg_mr(bytearray(64))
    with pytest.raises(UsageError, match=f"opcode {opcode} is not permitted"):
        c.qa.post_send(opcode, 1, mr.sge(), remote_addr=0, rkey=1)
    with pytest.raises(UsageError, match=f"opcode {opcode} is not permitted"):
        c.qa.post_send(SendOpcode(opcode), 1, mr.sge(), remote_addr=0, rkey=1)
    assert c.qa.statistics()["tx_pkts"] == 0 and two_devices.a.packets_to_send(0) == []


def test_post_send_argument_errors(two_devices):
    c = two_devices.connect()
    mr = two_devices.a.reg_mr(bytearray(64))
    with pytest.raises(UsageError, match="unknown opcode 'WRITE'"):
        c.qa.post_send("WRITE", 1, mr.sge(), remote_addr=0, rkey=1)
    with pytest.raises(UsageError, match="needs imm_data"):
        c.qa.post_send("RDMA_WRITE_WITH_IMM", 1, mr.sge(), remote_addr=0, rkey=1)
    with pytest.raises(UsageError, match="imm_data given for RDMA_WRITE"):
        c.qa.post_send("RDMA_WRITE", 1, mr.sge(), remote_addr=0, rkey=1, imm_data=3)
    with pytest.raises(UsageError, match="imm_data 4294967296 is not a 32-bit value"):
        c.qa.post_write(1, mr.sge(), remote_addr=0, rkey=1, imm_data=1 << 32)
    with pytest.raises(UsageError, match="rkey 4294967296 is not a 32-bit value"):
        c.qa.post_write(1, mr.sge(), remote_addr=0, rkey=1 << 32)
    with pytest.raises(UsageError, match="wr_id -1"):
        c.qa.post_write(-1, mr.sge(), remote_addr=0, rkey=1)


def test_bad_sges_and_unregistered_lkeys(two_devices):
    c = two_devices.connect()
    mr = two_devices.a.reg_mr(bytearray(64))
    with pytest.raises(UsageError, match="exceeds the region's 64 bytes"):
        mr.sge(60, 8)
    with pytest.raises(UsageError, match="outside region"):
        c.qa.post_write(1, (mr.addr + 60, 8, mr.lkey), remote_addr=0, rkey=1)
    with pytest.raises(UsageError, match="outside region"):
        c.qa.post_write(1, (mr.addr - 1, 8, mr.lkey), remote_addr=0, rkey=1)
    with pytest.raises(UsageError, match="outside region"):
        c.qa.post_write(1, (mr.addr, -1, mr.lkey), remote_addr=0, rkey=1)
    with pytest.raises(UsageError, match="is not a registered region"):
        c.qa.post_write(1, (mr.addr, 8, mr.lkey ^ 1), remote_addr=0, rkey=1)
    with pytest.raises(UsageError, match="must be an \\(addr, length, lkey\\) tuple"):
        c.qa.post_write(1, (mr.addr, 8), remote_addr=0, rkey=1)
    with pytest.raises(UsageError, match="read-only"):
        two_devices.a.reg_mr(bytes(16))
    c.qa.post_write(1, mr.sge(), remote_addr=0, rkey=1)
    with pytest.raises(UsageError, match="outstanding write"):
        mr.deregister()
    assert c.qa.statistics()["tx_pkts"] == 0


def test_full_send_and_receive_queues(two_devices):
    c = two_devices.connect(cap=QpCap(max_send_wr=2, max_recv_wr=1))
    mr = two_devices.a.reg_mr(bytearray(64))
    c.qa.post_write(1, mr.sge(), remote_addr=0, rkey=1)
    c.qa.post_write(2, mr.sge(), remote_addr=0, rkey=1)
    with pytest.raises(UsageError, match="send queue of QP .* is full \\(2 WRs outstanding\\)"):
        c.qa.post_write(3, mr.sge(), remote_addr=0, rkey=1)
    c.qb.post_recv(1)
    with pytest.raises(UsageError, match="receive queue of QP .* is full"):
        c.qb.post_recv(2)
    with pytest.raises(UsageError, match="max_send_wr = 65 outside"):
        two_devices.a.create_qp(c.cqa, cap=QpCap(max_send_wr=65))


# --- data path -----------------------------------------------------------------------------

def test_writes_land_byte_exact_and_complete_in_order(make_two_devices):
    env = make_two_devices(jitter_ps=3 * US)
    c = env.connect()
    src, dst = pattern(40_000, seed=1), bytearray(50_000)
    ma, mb = env.a.reg_mr(src), env.b.reg_mr(dst)
    pieces = [(0, 1), (1, 4096), (4097, 4095), (8192, 20_000), (28_192, 11_808)]
    for n, (off, length) in enumerate(pieces):
        c.qa.post_write(100 + n, ma.sge(off, length), remote_addr=mb.addr + off + 5000, rkey=mb.rkey)
    got, done = completions(c.cqa, len(pieces))
    assert env.net.run(done)
    assert [(w.wr_id, w.status, w.byte_len) for w in got] == [(100 + n, "SUCCESS", ln) for n, (_, ln) in enumerate(pieces)]
    assert bytes(dst[5000:45_000]) == bytes(src)
    assert bytes(dst[:5000]) == bytes(5000) and bytes(dst[45_000:]) == bytes(5000)  # nothing outside the target


def test_write_with_immediate_completions_in_message_order_under_reordering(make_two_devices):
    env = make_two_devices(jitter_ps=8 * US, net_seed=3)
    c = env.connect()
    sizes = [9000, 1, 4096, 12_000, 700, 20_000]
    src, dst = pattern(sum(sizes), seed=2), bytearray(sum(sizes))
    ma, mb = env.a.reg_mr(src), env.b.reg_mr(dst)
    for n in range(len(sizes)):
        c.qb.post_recv(500 + n)
    off = 0
    for n, size in enumerate(sizes):
        c.qa.post_send("RDMA_WRITE_WITH_IMM", n, ma.sge(off, size), remote_addr=mb.addr + off, rkey=mb.rkey,
                       imm_data=0xABC000 + n)
        off += size
    got, done = completions(c.cqb, len(sizes))
    assert env.net.run(done)
    assert [(w.wr_id, w.opcode.name, w.imm_data, w.byte_len, w.status) for w in got] == [
        (500 + n, "RECV_RDMA_WITH_IMM", 0xABC000 + n, size, "SUCCESS") for n, size in enumerate(sizes)]
    assert bytes(dst) == bytes(src)
    arrivals = sorted((r.arrived, int(r.pkt["psn"])) for r in env.net.data_sent("A") if r.arrived is not None)
    psns = [p for _, p in arrivals]
    assert psns != sorted(psns)  # the network really reordered the packets


def lossy_run(make_two_devices, seed):
    env = make_two_devices(jitter_ps=4 * US, loss=0.05, net_seed=seed)
    c = env.connect()
    src, dst = pattern(200_000, seed=seed), bytearray(200_000)
    ma, mb = env.a.reg_mr(src), env.b.reg_mr(dst)
    for n in range(4):
        c.qa.post_write(n, ma.sge(50_000 * n, 50_000), remote_addr=mb.addr + 50_000 * n, rkey=mb.rkey)
    got, done = completions(c.cqa, 4)
    assert env.net.run(done)
    assert [(w.wr_id, w.status) for w in got] == [(n, "SUCCESS") for n in range(4)]
    assert bytes(dst) == bytes(src)
    assert any(r.fate == "dropped" for r in env.net.sent) and c.qa.statistics()["rtx_pkts"] > 0
    return [(r.time, r.src, int(r.pkt["opcode"]), int(r.pkt["psn"]), r.ev, r.fate) for r in env.net.sent]


def test_writes_survive_random_loss_and_reordering_and_runs_are_reproducible(make_two_devices):
    first = lossy_run(make_two_devices, seed=11)
    assert lossy_run(make_two_devices, seed=11) == first  # same seeds, same packets at the same times
    assert lossy_run(make_two_devices, seed=12) != first


# --- access errors -------------------------------------------------------------------------

def _access_error_case(env, *, remote_addr, rkey, length):
    c = env.connect()
    src, dst = pattern(length, seed=4), bytearray(3 * MTU)
    ma, mb = env.a.reg_mr(src), env.b.reg_mr(dst)
    c.qa.post_write(1, ma.sge(), remote_addr=remote_addr(mb), rkey=rkey(mb))
    c.qa.post_write(2, ma.sge(0, 10), remote_addr=mb.addr, rkey=mb.rkey)
    got, done = completions(c.cqa, 2)
    assert env.net.run(done, max_time_ps=10_000 * US)
    events = []
    while (e := env.b.get_async_event()) is not None:
        events.append(e)
    return c, got, events, dst


@pytest.mark.parametrize(
    "case",
    [
        dict(remote_addr=lambda mb: mb.addr, rkey=lambda mb: mb.rkey ^ 0x5A5A, length=100),  # wrong rkey
        dict(remote_addr=lambda mb: mb.addr + 3 * MTU - 50, rkey=lambda mb: mb.rkey, length=100),  # past the end
        dict(remote_addr=lambda mb: mb.addr - 8, rkey=lambda mb: mb.rkey, length=100),  # before the start
    ],
    ids=["wrong-rkey", "past-end", "before-start"],
)
def test_write_outside_the_region_is_refused_and_reported(make_two_devices, case):
    c, got, events, dst = _access_error_case(make_two_devices(), **case)
    assert bytes(dst) == bytes(len(dst))  # destination memory untouched
    assert [(e.kind, e.qp_num) for e in events] == [("QP_ACCESS_ERR", c.qb.qp_num), ("QP_FATAL", c.qb.qp_num)]
    assert "refused" in events[0].detail
    assert c.qb.state == "ERROR" and c.qa.state == "ERROR"
    assert [(w.wr_id, w.status) for w in got] == [(1, "REM_ACCESS_ERR"), (2, "WR_FLUSH_ERR")]


def test_multi_packet_write_past_the_end_places_nothing(make_two_devices):
    c, got, events, dst = _access_error_case(
        make_two_devices(), remote_addr=lambda mb: mb.addr + MTU, rkey=lambda mb: mb.rkey, length=3 * MTU)
    assert [(w.wr_id, w.status) for w in got] == [(1, "REM_ACCESS_ERR"), (2, "WR_FLUSH_ERR")]
    assert bytes(dst) == bytes(len(dst))


def test_write_with_immediate_without_a_posted_receive_fails_fast_at_the_requester(make_two_devices):
    env = make_two_devices()
    c = env.connect(rts=dict(timeout=4, retry_linear=3, retry_exp=3))
    ma, mb = env.a.reg_mr(bytearray(100)), env.b.reg_mr(bytearray(100))
    c.qa.post_send("RDMA_WRITE_WITH_IMM", 1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey, imm_data=5)
    got, done = completions(c.cqa, 1)
    assert env.net.run(done)
    assert c.qb.state == "ERROR"  # no RNR in MRC: fatal at the responder
    assert got[0].status == "REM_OP_ERR"  # NAK remote operational error, as an IB responder sends
    assert env.net.now < 1_024_000 << 4  # before the first RTO


# --- retry exhaustion ----------------------------------------------------------------------

def test_dead_peer_ends_in_retry_exceeded_after_linear_then_exponential_retries(make_two_devices):
    env = make_two_devices()
    c = env.connect(rts=dict(timeout=0, retry_linear=2, retry_exp=2))
    env.net.drop = lambda rec: rec.src == "A"  # the peer hears nothing
    mr = env.a.reg_mr(pattern(300))
    for n in range(3):
        c.qa.post_write(n, mr.sge(100 * n, 100), remote_addr=0x1000, rkey=7)
    got, done = completions(c.cqa, 3)
    assert env.net.run(done)
    assert [(w.wr_id, w.status) for w in got] == [(0, "RETRY_EXC_ERR"), (1, "WR_FLUSH_ERR"), (2, "WR_FLUSH_ERR")]
    assert c.qa.state == "ERROR"
    b = 1_024_000  # RTO = 1.024 us x 2^0
    # the first transmission, 2 linear retries at 1 x RTO, 2 exponential ones at 2 and 4 x RTO, then give up
    sends = sorted({r.time for r in env.net.data_sent("A")})
    assert sends == [0, b, 2 * b, 3 * b, 5 * b]
    assert env.net.now == 9 * b
    stats = c.qa.statistics()
    assert stats["rtx_timeouts"] == 2 + 2 + 1 and stats["rtx_pkts"] == 4 * 3
    assert env.a.get_async_event().kind == "QP_FATAL"


# --- counters ------------------------------------------------------------------------------

def test_statistics_count_packets_bytes_sacks_and_retransmissions(make_two_devices):
    env = make_two_devices()
    c = env.connect()
    size = 10 * MTU + 10
    src, dst = pattern(size), bytearray(size)
    ma, mb = env.a.reg_mr(src), env.b.reg_mr(dst)
    c.qa.post_write(1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
    got, done = completions(c.cqa, 1)
    assert env.net.run(done)
    sa, sb = c.qa.statistics(), c.qb.statistics()
    assert (sa["tx_pkts"], sa["tx_bytes"], sa["rtx_pkts"], sa["inflight"]) == (11, size, 0, 0)
    assert (sb["rx_pkts"], sb["rx_bytes"], sb["rx_dup"]) == (11, size, 0)
    assert sa["sacks_rx"] >= 1 and sb["sacks_tx"] >= sa["sacks_rx"]
    # now lose the first transmission of one data packet: exactly one retransmission repairs it
    lost = []

    def drop(rec):
        if rec.is_data and not lost and int(rec.pkt["psn"]) == 13:
            lost.append(rec)
            return True
        return False

    env.net.drop = drop
    c.qa.post_write(2, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
    got, done = completions(c.cqa, 1)
    assert env.net.run(done)
    assert got[0].status == "SUCCESS" and len(lost) == 1
    sa2, sb2 = c.qa.statistics(), c.qb.statistics()
    assert sa2["tx_pkts"] - sa["tx_pkts"] == 11 + sa2["rtx_pkts"]
    assert sa2["rtx_pkts"] >= 1 and sa2["losses"] + sa2["rtx_timeouts"] >= 1
    assert sb2["rx_pkts"] - sb["rx_pkts"] + sb2["rx_dup"] == sa2["tx_pkts"] - sa["tx_pkts"] - 1
    assert bytes(dst) == bytes(src)


def test_device_limits_are_reported_and_enforced():
    dev = Device(max_mpr=4, max_qp=2)
    attr = dev.query_device()
    assert attr.max_mpr == 4 and attr.max_qp == 2
    cq = dev.create_cq()
    dev.create_qp(cq)
    dev.create_qp(cq)
    with pytest.raises(UsageError, match="all 2 QPs are in use"):
        dev.create_qp(cq)
    with pytest.raises(UsageError, match="cqe = 0 must be in"):
        dev.create_cq(0)
    with pytest.raises(MRCError, match="ports must be in"):
        Device(ports=9)


def test_trim_nack_capability_is_advertised_and_set_per_qp(two_devices):
    from mrc.api import MRC_DEVICE_CAP_DYNAMIC_MPR, MRC_DEVICE_CAP_TRIM_NACK

    attr = two_devices.a.query_device()
    assert attr.cap & MRC_DEVICE_CAP_TRIM_NACK
    c = two_devices.connect(rtr=dict(trim_nack_dest=0))
    assert c.qa.query()["trim_nack_dest"] == 0
    qp = two_devices.a.create_qp(c.cqa)
    qp.modify("INIT", ev_profile_id=1, cc_profile_id=1)
    with pytest.raises(UsageError, match="trim_nack_dest = 2 must be an integer in \\[0, 1\\]"):
        qp.modify("RTR", dest_qp_num=5, remote_address="B", trim_nack_dest=2, **RTR)
    # dynamic MPR: accepted exactly when the device advertises it (mrc.api.corefeatures asks the core)
    from mrc.api import QpCapFlags
    from mrc.errors import ENOTSUP

    if attr.cap & MRC_DEVICE_CAP_DYNAMIC_MPR:
        qp.modify("RTR", dest_qp_num=5, remote_address="B", cap=QpCapFlags.DYNAMIC_MPR, **RTR)
        assert qp.query_qp()[1].cap & QpCapFlags.DYNAMIC_MPR
    else:
        with pytest.raises(ENOTSUP, match="dynamic MPR .* not supported by this device"):
            qp.modify("RTR", dest_qp_num=5, remote_address="B", cap=QpCapFlags.DYNAMIC_MPR, **RTR)
