"""Property: forged packets from an off-path sender never stop an in-process transfer.

An off-path sender does not know the identifiers: each forged packet (a write with random bytes and
R_Key, a SACK acknowledging everything, a NACK of any reason, an AETH NAK, a probe) either names a QPN
that is not the connection's, or names the connection's QPN with a PSN outside its window (the
identifiers are random in real use, `tests/api/test_ids.py`). Sent in any order, mixed with the real
traffic, to either end, they leave the transfer to complete byte for byte. (A forger that knows the
QPN *and* a PSN in the window is on-path; RoCEv2 cannot stop it: docs/real-network.md, "Security".
A wrong source address is the I/O adapter's check: tests/io/test_spoofing.py.)
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from mrc.api import OutPacket
from mrc.core import dtypes as D
from mrc.testing.simnet import Sent
from mrc.wire.constants import NackReason, Opcode
from mrc.wire.records import PKT

from tests.twodevices import TwoDevices

SPAN = D.MAX_PSN_SPAN
KINDS = ["write", "sack", "nack", "aeth", "probe"]

forged = st.fixed_dictionaries({
    "kind": st.sampled_from(KINDS),
    "to_b": st.booleans(),  # the responder's device, or the requester's
    "real_qpn": st.booleans(),
    "qpn": st.integers(0x10, (1 << 24) - 1),
    "psn": st.integers(3 * SPAN, (1 << 24) - 3 * SPAN),  # far from PSN 0, where both windows start
    "rkey": st.integers(0, (1 << 32) - 1),
    "reason": st.sampled_from(list(NackReason)),
    "syndrome": st.integers(0x60, 0x7F),
    "ev": st.integers(0, (1 << 32) - 1),
})


def forge(spec, c, mb) -> tuple[object, bytes]:
    p = np.zeros(1, dtype=PKT)[0]
    dest_qp = c.qb if spec["to_b"] else c.qa
    real = dest_qp.qp_num
    p["dqpn"] = real if spec["real_qpn"] else (spec["qpn"] if spec["qpn"] != real else real ^ 1)
    p["pkey"], p["ev"], p["port"] = 0xFFFF, spec["ev"], 0
    psn = p["psn"] = spec["psn"]
    payload = b""
    kind = spec["kind"]
    if kind == "write":
        payload = bytes([0xEE]) * 512
        p["opcode"], p["payload_len"], p["dma_len"] = int(Opcode.MRC_WRITE_ONLY), 512, 512
        p["rkey"], p["va"] = spec["rkey"], mb.addr
    elif kind == "sack":
        p["opcode"], p["cack_psn"], p["sack_bitmap"], p["entropy"] = int(Opcode.MRC_RELIABILITY_SACK), psn, (1 << 64) - 1, spec["ev"]
    elif kind == "nack":
        p["opcode"], p["nack_psn"], p["nack_reason"] = int(Opcode.MRC_RELIABILITY_NACK), psn, int(spec["reason"])
    elif kind == "aeth":
        p["opcode"], p["aeth_syndrome"] = int(Opcode.MRC_ACKNOWLEDGE), spec["syndrome"]
    else:
        p["opcode"] = int(Opcode.MRC_RELIABILITY_PROBE)
    return OutPacket(p, payload, "B" if spec["to_b"] else "A", 1, 0), payload


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(forged, min_size=1, max_size=60), st.integers(0, 3))
def test_forged_packets_from_off_path_never_stop_a_transfer(specs, every):
    env = TwoDevices()
    c = env.connect()
    n = 120_000
    src = bytearray(np.random.default_rng(1).bytes(n))
    dst = bytearray(n)
    ma, mb = env.a.reg_mr(src), env.b.reg_mr(dst)
    queue = [forge(s, c, mb)[0] for s in specs]
    net = env.net
    routed = [0]

    def route(rec):
        net.default_route(rec)
        routed[0] += 1
        if queue and routed[0] % (every + 1) == 0:  # a forged packet beside every (every+1)-th real one
            net.schedule(Sent(net.now, "X", queue.pop(0)), net.now + 1000)

    net.route_packet = route
    c.qa.post_write(1, ma.sge(0, n), remote_addr=mb.addr, rkey=mb.rkey)
    got = []

    def done():
        got.extend(c.cqa.poll(8))
        return bool(got)

    assert net.run(done, max_time_ps=10**11)
    assert [w.status for w in got] == ["SUCCESS"]
    assert bytes(dst) == bytes(src)
    assert c.qa.state == c.qb.state == "RTS"
