"""Requester send path: segmentation, RETH on every packet, METH, PSN/MPR and cwnd limits."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.core import dispatch, dtypes as D
from mrc.core.psn import psn_add
from mrc.testing.harness import Pair
from mrc.wire.constants import Opcode

MTU = 4096


def opcodes(pkts):
    return [int(p["opcode"]) for _, p in pkts]


def test_message_segmented_at_mtu_with_reth_on_every_packet():
    pair = Pair()
    pair.post_write(0, 3 * MTU + 100, remote_va=0x1_0000_0000, rkey=0x42)
    pkts = pair.collect(0)
    assert opcodes(pkts) == [Opcode.MRC_WRITE_FIRST, Opcode.MRC_WRITE_MIDDLE, Opcode.MRC_WRITE_MIDDLE, Opcode.MRC_WRITE_LAST]
    for n, (_, p) in enumerate(pkts):
        assert p["va"] == 0x1_0000_0000 + n * MTU  # address advances by one MTU per packet
        assert p["rkey"] == 0x42
        assert p["dma_len"] == 3 * MTU + 100 - n * MTU  # bytes from this packet to the end of the message
        assert p["psn"] == n
        assert p["msn"] == 0
        assert p["ts"] == 1 and p["ftype"] == 1
        assert p["rtx"] == 0
    assert [int(p["payload_len"]) for _, p in pkts] == [MTU, MTU, MTU, 100]
    assert pkts[-1][1]["ackreq"] == 1 and pkts[0][1]["ackreq"] == 0


@pytest.mark.parametrize(
    "length, imm, expected",
    [
        (0, None, [Opcode.MRC_WRITE_ONLY]),
        (MTU, None, [Opcode.MRC_WRITE_ONLY]),
        (10, 7, [Opcode.MRC_WRITE_ONLY_IMM]),
        (MTU + 1, 7, [Opcode.MRC_WRITE_FIRST, Opcode.MRC_WRITE_LAST_IMM]),
    ],
)
def test_opcodes_for_sizes_and_immediate(length, imm, expected):
    pair = Pair()
    pair.post_write(0, length, imm=imm)
    pkts = pair.collect(0)
    assert opcodes(pkts) == expected
    if imm is not None:
        assert pkts[-1][1]["imm"] == imm


def test_meth_message_sequence_numbers_count_messages_and_wimm():
    pair = Pair()
    pair.post_write(0, 10, wr_id=1)
    pair.post_write(0, 10, wr_id=2, imm=5)
    pair.post_write(0, 10, wr_id=3)
    pkts = pair.collect(0)
    assert [int(p["msn"]) for _, p in pkts] == [0, 1, 2]
    assert [int(p["rqmsn"]) for _, p in pkts] == [0, 0, 1]


def test_psn_span_bounded_by_mpr():
    cc = {"algorithm": D.CC_NONE}
    from mrc.core import setup

    pair = Pair(mpr=1, cc=setup.fixed_window_profile(window_bytes=1 << 30))
    pair.post_write(0, 1000 * MTU)
    pkts = pair.collect(0)
    assert len(pkts) == 128  # MPR 1 = 128 PSNs
    assert cc  # (profile chosen above)


def test_inflight_bounded_by_cwnd():
    from mrc.core import setup

    pair = Pair(cc=setup.fixed_window_profile(window_bytes=10 * MTU))
    pair.post_write(0, 100 * MTU)
    pkts = pair.collect(0)
    assert len(pkts) == 10
    assert pair.qp(0)["inflight"] == 10 * MTU


def test_psn_wraparound_segments_across_2_24():
    pair = Pair(start_psn=0xFFFFFE)
    pair.post_write(0, 4 * MTU)
    pkts = pair.collect(0)
    assert [int(p["psn"]) for _, p in pkts] == [0xFFFFFE, 0xFFFFFF, 0, 1]
    assert pair.qp(0)["sq_psn"] == psn_add(0xFFFFFE, 4)


def test_each_packet_takes_a_different_ev_spread_over_planes():
    from mrc.core import setup

    pair = Pair(n_planes=4, evs_per_plane=16, cc=setup.fixed_window_profile(window_bytes=64 * MTU))
    pair.post_write(0, 32 * MTU)
    evs = [int(p["ev"]) for _, p in pair.collect(0)]
    assert len(set(evs)) == 32  # one active-set rotation: no EV repeats
    planes = np.bincount([int(p) for p in np.array(evs) >> 28], minlength=4)
    assert planes.tolist() == [8, 8, 8, 8]


def test_qps_sharing_a_profile_do_not_synchronise():
    a = Pair(seed=1, n_planes=1)
    b = Pair(seed=2, n_planes=1)
    for pair in (a, b):
        pair.post_write(0, 16 * MTU)
    ea = [int(p["ev"]) for _, p in a.collect(0)]
    eb = [int(p["ev"]) for _, p in b.collect(0)]
    assert sorted(ea) != ea or sorted(eb) != eb
    assert ea != eb


def test_wimm_in_flight_bounded_by_max_wimm():
    pair = Pair(max_wimm=2)
    for n in range(4):
        pair.post_write(0, 10, wr_id=n, imm=n)
    pkts = pair.collect(0)
    assert len(pkts) == 2  # the third Write-with-Immediate waits for a completion


def test_send_queue_full_is_reported():
    pair = Pair(max_wr=2)
    pair.post_write(0, 1, wr_id=1)
    pair.post_write(0, 1, wr_id=2)
    with pytest.raises(RuntimeError, match="full"):
        pair.post_write(0, 1, wr_id=3)


def test_retransmission_sets_rtx_and_retransmit_dscp():
    pair = Pair(ack_every_pkts=1)
    pair.post_write(0, 3 * MTU)
    pkts = pair.collect(0)
    pair.advance(3_000_000)
    for _, p in pkts[1:]:
        pair.deliver(1, p)  # PSN 0 is lost
    for _, s in pair.collect(1):
        pair.deliver(0, s)
    pair.advance(pair.now + 20_000_000)  # past the reorder window
    again = pair.collect(0)
    rtx = [p for k, p in again if k == dispatch.K_RTX]
    assert [int(p["psn"]) for p in rtx] == [0]
    assert rtx[0]["rtx"] == 1
    assert rtx[0]["dscp"] == pair.qp(0)["dscp_rtx"] != pair.qp(0)["dscp_data"]
    assert rtx[0]["ev"] != pkts[0][1]["ev"]  # a different path


def test_next_packets_batches_exactly_what_next_packet_would_build():
    from mrc.core import setup
    from mrc.wire.records import PKT

    one, many = (Pair(seed=5, cc=setup.fixed_window_profile(window_bytes=40 * MTU)) for _ in range(2))
    for pair in (one, many):
        pair.post_write(0, 30 * MTU + 7)
    singles, srcs = [], []
    while (kind := dispatch.next_packet(one.T, 0, 0, 0xFF, one.out, 0)) != dispatch.K_NONE:
        singles.append((kind, one.out[0].copy()))
        srcs.append(tuple(int(x) for x in one.T.txsrc))
    out, kinds, src = np.zeros(16, dtype=PKT), np.zeros(16, np.int64), np.zeros((16, 3), np.int64)
    got = []
    while (n := dispatch.next_packets(many.T, 0, 0, 0xFF, out, kinds, src)) > 0:
        got += [(int(kinds[k]), out[k].copy(), tuple(int(x) for x in src[k])) for k in range(n)]
    assert len(got) == len(singles) == 31
    assert [(k, p.item()) for k, p, _ in got] == [(k, p.item()) for k, p in singles]  # field by field
    assert [s for _, _, s in got] == srcs and srcs[-1] == (0, 30 * MTU, 7)
