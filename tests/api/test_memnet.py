"""The compiled in-memory network (`mrc.testing.memnet`): many QP pairs driven from compiled code."""
from __future__ import annotations

from mrc.testing import memnet
from mrc.core import dtypes as D
from mrc.errors import ConfigError

import pytest


def test_clean_transfers_complete_with_one_packet_per_mtu_and_no_retransmission():
    T = memnet.build(3, n_planes=2, evs_per_plane=8)
    res = memnet.run(T, msgs=5, msg_bytes=10 * 4096 + 1, depth=2)
    r = res.counters
    assert (res.messages_done, res.bytes_written, res.data_packets) == (15, 15 * (10 * 4096 + 1), 15 * 11)
    assert res.time_us == r["end_ps"] / 1e6 and res.goodput_gbps == pytest.approx(res.bytes_written * 8 / (r["end_ps"] / 1e3))
    assert r["done"] == 15 and r["failed"] == 0
    assert r["data"] == 15 * 11 and r["rtx"] == 0 and r["dropped"] == 0
    for i in range(0, 6, 2):
        assert T.qp[i + 1]["rx_bytes"] == 5 * (10 * 4096 + 1) and T.qp[i]["inflight"] == 0


def test_lossy_trimmed_marked_transfers_complete_and_are_reproducible():
    runs = []
    for _ in range(2):
        T = memnet.build(2, n_planes=2, evs_per_plane=8)
        runs.append(memnet.run(T, msgs=8, msg_bytes=64 * 1024, loss=0.02, trim=0.05, ecn=0.05, seed=4).counters)
        assert all(T.qp[i]["state"] == D.QPS_RTS for i in range(4))
    r = runs[0]
    assert r == runs[1]
    assert r["done"] == 16 and r["failed"] == 0
    assert r["dropped"] > 0 and r["trimmed"] > 0 and r["marked"] > 0 and r["rtx"] >= r["trimmed"]


def test_build_refuses_no_pairs():
    with pytest.raises(ConfigError):
        memnet.build(0)
