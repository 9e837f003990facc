"""Liveness under port status updates: no update, forged or true, leaves a QP with work and no deadline.

A port status update (PSU) carries no secret: anyone who can send from the peer's address can send one
(docs/real-network.md, "Security"). One with mask 0 used to stop a transfer for good: every plane gone,
the in-flight packets acknowledged, nothing armed. Now (docs/protocol.md, "Liveness"): an update that
says the port it came through is down is refused (`ctlproto.check_request`); a claim that would leave a
QP no plane is set aside (``psu_floor``, `evset.plane_mask`); a QP that cannot send keeps its
retransmission timer and ends in ERROR after the retry schedule (`requester.hold_rto`).
"""
from __future__ import annotations

import numpy as np

from mrc.api import OutPacket
from mrc.core import dtypes as D
from mrc.testing.simnet import Sent
from mrc.units import US
from mrc.wire.constants import ENDPOINT_QPN, EndpointOp, Opcode
from mrc.wire.records import PKT

from tests.twodevices import RTS, TwoDevices

MTU = 4096


def psu(mask: int, port: int, req_id: int = 0x4242):
    """An ENDPOINT_REQUEST PORT_STATUS_UPDATE as a forger writes it (no secret needed), sent on `port` (1-based)."""
    p = np.zeros(1, dtype=PKT)[0]
    p["opcode"], p["dqpn"], p["pkey"] = int(Opcode.MRC_ENDPOINT_REQUEST), ENDPOINT_QPN, 0xFFFF
    p["ep_op"], p["req_id"], p["port_status_mask"], p["port"] = int(EndpointOp.PORT_STATUS_UPDATE), req_id, mask, port - 1
    return p


def spoof(env, *, src: str, dest: str, mask: int, port: int) -> None:
    """Deliver a forged update from `src`'s address to `dest` now, through the network (as a packet on `port`)."""
    env.net.schedule(Sent(env.net.now, src, OutPacket(psu(mask, port), b"", dest, port, ENDPOINT_QPN)), env.net.now)


def start_writes(env, conn, n: int, size: int):
    src = bytearray(np.random.default_rng(1).integers(0, 256, n * size, dtype=np.uint8).tobytes())
    dst = bytearray(n * size)
    ms, md = env.a.reg_mr(src), env.b.reg_mr(dst)
    for k in range(n):
        conn.qa.post_write(k + 1, (ms.addr + k * size, size, ms.lkey), remote_addr=md.addr + k * size, rkey=md.rkey)
    return src, dst


def never_silent(env, conn) -> None:
    """The QPs' core rows: RTS with send work implies a deadline armed."""
    from mrc.core import dispatch

    for dev, qp in ((env.a, conn.qa), (env.b, conn.qb)):
        q = dev.T.qp[qp.index]
        work = q["tx_row"] >= 0 and (q["wr_next"] != q["wr_tail"] or q["sq_psn"] != q["una_psn"])
        if q["state"] == D.QPS_RTS and work:
            assert dispatch.next_deadline(dev.T, qp.index) < D.NEVER, f"{dev.name}: QP with work and no deadline"


def run_checked(env, conn, until, max_time_ps: int) -> bool:
    """Run the network step by step until `until()` or `max_time_ps`, checking `never_silent` at every step."""
    net = env.net
    for _ in range(200_000):
        net.pump()
        never_silent(env, conn)
        if until():
            return True
        t = net.next_time()
        if t is None or t > max_time_ps:
            return bool(until())
        net._advance(t)
    return False


def test_a_forged_update_with_mask_0_from_the_responders_address_is_refused_and_the_transfer_completes():
    env = TwoDevices(ports=2)
    conn = env.connect()
    src, dst = start_writes(env, conn, 64, 16 * 1024)
    done = []
    env.net.run(lambda: conn.qa.statistics()["tx_pkts"] > 60)  # well into the transfer
    for port in (1, 2):
        spoof(env, src="B", dest="A", mask=0, port=port)
    assert run_checked(env, conn, lambda: bool(done.extend(conn.cqa.poll()) or len(done) == 64), env.net.now + 50_000 * US)
    assert [c.status for c in done] == ["SUCCESS"] * 64 and bytes(dst) == bytes(src)
    assert env.a.ctl.counters["ep_rejected"] == 2  # an update that says its own port is down contradicts itself
    assert int(env.a.T.qp[conn.qa.index]["remote_ports"]) == 0b11


def test_a_claim_that_would_leave_no_plane_is_set_aside():
    """A forged, well-formed update (B has only port 1) and then A's own port 1 going down: the claim would
    leave A no plane. It is set aside while it would; the transfer goes on over port 2, which is up at both ends."""
    env = TwoDevices(ports=2)
    conn = env.connect()
    src, dst = start_writes(env, conn, 32, 16 * 1024)
    env.net.run(lambda: conn.qa.statistics()["tx_pkts"] > 30)
    spoof(env, src="B", dest="A", mask=0b01, port=1)
    env.net.run(lambda: env.a.ctl.counters["port_status_rx"] == 1)
    assert int(env.a.T.qp[conn.qa.index]["remote_ports"]) == 0b01
    env.a.set_port_state(1, False, now=env.net.now)
    since = env.net.now + 1  # what the last step sent before the port went down is not counted
    done = []
    assert run_checked(env, conn, lambda: bool(done.extend(conn.cqa.poll()) or len(done) == 32), env.net.now + 50_000 * US)
    assert [c.status for c in done] == ["SUCCESS"] * 32 and bytes(dst) == bytes(src)
    assert {r.out.port for r in env.net.data_sent("A", since)} == {2}


def test_without_the_floor_a_qp_with_no_plane_ends_in_error_within_its_retry_schedule():
    """The ablation of ``psu_floor``: the claim is applied as given, A has no plane. It still never waits
    silently: the retransmission timer runs, and the QP ends in RETRY_EXC_ERR within the mrc.h schedule."""
    env = TwoDevices(ports=2)
    rts = dict(RTS, retry_linear=3, retry_exp=3)
    conn = env.connect(rts=dict(rts, psu_floor=0))
    start_writes(env, conn, 32, 16 * 1024)
    env.net.run(lambda: conn.qa.statistics()["tx_pkts"] > 30)
    spoof(env, src="B", dest="A", mask=0b01, port=1)
    env.net.run(lambda: env.a.ctl.counters["port_status_rx"] == 1)
    env.a.set_port_state(1, False, now=env.net.now)
    start = env.net.now
    # the schedule: retry_linear expiries at 1.024 us x 2^timeout, then retry_exp doubling ones, plus one RTO
    rto = 1_024_000 << rts["timeout"]
    bound = rto * (1 + rts["retry_linear"]) + sum(rto << k for k in range(1, rts["retry_exp"] + 2))
    done = []
    assert run_checked(env, conn, lambda: conn.qa.state == "ERROR", start + bound)
    assert env.net.now - start <= bound
    done.extend(conn.cqa.poll(64))
    assert done and done[0].status == "RETRY_EXC_ERR" and {c.status for c in done[1:]} <= {"WR_FLUSH_ERR"}
