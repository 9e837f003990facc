"""An off-path sender on loopback: forged packets from another socket address are dropped, by the kernel (the
endpoint's sockets are connected to their peers) or, where that is not possible, by the endpoint (counted).

The forger knows everything a sniffer would (the QPNs, the R_Key, the PSNs in flight: it copies the
headers of the real packets as they arrive) and only lacks the peer's socket address. Real UDP sockets,
port 0, an absolute ``fail_after`` (test_loopback.py's rules).
"""
from __future__ import annotations

import socket

import numpy as np
import pytest
import trio

from mrc.api import OutPacket
from mrc.io import open_endpoint
from mrc.io.transfer import TransferOptions, run_transfer
from mrc.io.transports import UdpEncap
from mrc.wire.constants import ENDPOINT_QPN, NackReason, Opcode

from .conftest import devices, loopback

OPTS = dict(rto_ms=50.0, reorder_window_us=4000.0, ev_probe_interval_ms=2.0, timeout_s=20.0)
DATA = range(0xC6, 0xCC)


class Forger:
    """Hooked on the responder's receive path: for every 4th data packet it sends, from its own socket,
    a write of 0xEE bytes to the next PSN (not yet received: it would be placed) and a NACK UNEXP_EVENT
    for that PSN to the requester (in flight: it would end the QP), framed as the real peers would."""

    def __init__(self, ea, eb, endpoint_requests: bool = False):
        self.ea, self.eb = ea, eb
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sent = 0
        self.seen = 0

    def send(self, frame) -> None:
        if frame is None:
            return
        _, data, addr = frame
        try:
            self.sock.sendto(bytes(data), addr)
            self.sent += 1
        except BlockingIOError:
            pass

    def __call__(self, kind, now, pkt) -> None:
        if kind != "rx" or int(pkt["opcode"]) not in DATA:
            return
        self.seen += 1
        if self.seen % 4:
            return
        port = int(pkt["port"]) + 1
        w = pkt.copy()
        w["psn"] = (int(pkt["psn"]) + 1) & 0xFFFFFF
        w["va"] = int(pkt["va"]) + int(pkt["payload_len"])
        payload = b"\xee" * int(pkt["payload_len"])
        self.send(self.ea.transport.frame(OutPacket(w, payload, self.eb.local_peer(), port, 0)))
        qa = next(iter(self.ea.device._by_qpn))
        n = np.zeros(1, dtype=pkt.dtype)[0]
        n["opcode"], n["dqpn"], n["pkey"], n["ev"], n["port"] = int(Opcode.MRC_RELIABILITY_NACK), qa, 0xFFFF, pkt["ev"], pkt["port"]
        n["psn"] = n["nack_psn"] = w["psn"]
        n["nack_reason"] = int(NackReason.UNEXP_EVENT)
        self.send(self.eb.transport.frame(OutPacket(n, b"", self.ea.local_peer(), port, 0)))


@pytest.fixture(params=["kernel", "python"])
def source_check(request, monkeypatch):
    """Who drops datagrams from other addresses: the kernel (each socket connected to its one peer address, the
    default) or the endpoint's own check (as when a port has several peers, or in native mode)."""
    if request.param == "python":
        monkeypatch.setattr(UdpEncap, "receive_only", lambda self, port, addr: False)
    return request.param


def _dropped_before_us(source_check, sa, sb, forged: int, counted: int) -> None:
    """`forged` datagrams from other addresses were dropped: by the kernel (never seen: nothing counted, both
    endpoints' sockets connected) or by the endpoint (`counted` of them)."""
    if source_check == "kernel":
        assert counted == 0 and sa.sockets_connected == sb.sockets_connected == 2
    else:
        assert counted == forged and sa.sockets_connected == sb.sockets_connected == 0


def test_forged_writes_and_nacks_from_another_address_are_dropped_and_the_transfer_verifies(source_check):
    async def main_():
        da, db = devices(port_gbps=0.25, base_rtt_us=1000)
        with trio.fail_after(60):
            async with open_endpoint(da, loopback()) as ea, open_endpoint(db, loopback()) as eb:
                forger = eb.tracer = Forger(ea, eb)
                report = await run_transfer(ea, eb, TransferOptions(nbytes=2 << 20, **OPTS))
                return report, forger, ea.statistics(), eb.statistics()

    report, forger, sa, sb = trio.run(main_)
    assert forger.sent >= 100
    assert report["verified"], report.get("error")
    _dropped_before_us(source_check, sa, sb, forger.sent, sa.rx_wrong_source + sb.rx_wrong_source)
    if source_check == "kernel":  # nothing beyond what the real peers sent reached either endpoint
        assert sb.rx_datagrams <= sa.tx_datagrams and sa.rx_datagrams <= sb.tx_datagrams
    assert report["requester"]["nacks_rx"] == 0


def test_endpoint_requests_are_answered_only_to_known_peers_and_at_a_bounded_rate(source_check):
    async def main_():
        da, db = devices(port_gbps=0.25, base_rtt_us=1000)
        with trio.fail_after(60):
            async with open_endpoint(da, loopback()) as ea, open_endpoint(db, loopback(), ep_rate=100.0,
                                                                          ep_burst=50) as eb:
                report = await run_transfer(ea, eb, TransferOptions(nbytes=256 << 10, **OPTS))
                req = np.zeros(1, dtype=_pkt_dtype())[0]
                req["opcode"], req["dqpn"], req["pkey"], req["ep_op"] = int(Opcode.MRC_ENDPOINT_REQUEST), ENDPOINT_QPN, 0xFFFF, 1
                # from an unknown address: never answered
                stranger = Forger(ea, eb)
                for _ in range(20):
                    stranger.send(ea.transport.frame(OutPacket(req, b"", eb.local_peer(), 1, 0)))
                # from the requester's own socket (a known peer): answered, at most ep_burst at once
                sock = ea.transport.socks[0]
                frame = ea.transport.frame(OutPacket(req, b"", eb.local_peer(), 1, 0))
                for _ in range(200):
                    await sock.sendto(bytes(frame[1]), frame[2])
                await trio.sleep(0.2)
                return report, ea.statistics(), eb.statistics()

    report, sa, sb = trio.run(main_)
    assert report["verified"]
    _dropped_before_us(source_check, sa, sb, 20, sb.ep_unknown_source + sb.rx_wrong_source)  # before (or after) decoding
    # 200 sent: at most the burst of 50 (shared with the transfer's own EV probes) plus ~100/s of refill
    # while they arrive are answered, the rest refused
    assert 125 <= sb.ep_rate_limited <= 195


def _pkt_dtype():
    from mrc.wire.records import PKT
    return PKT
