"""Real UDP sockets on loopback: port 0, an absolute ``fail_after`` on every run; the command line.

(trio-websocket's rules for network tests: localhost only, port 0, a hard
timeout so that a hang fails instead of stalling the suite.)
"""
from __future__ import annotations

import json
import socket

import numpy as np
import pytest
import trio
from hypothesis import given, settings

from mrc.cli import main
from mrc.io import open_endpoint
from mrc.io.codec import Codec
from mrc.io.transfer import TransferOptions, run_transfer
from mrc.wire.codec import decode, encode
from mrc.wire.constants import EvMode
from mrc.wire.errors import DecodeError
from tests.wire.strategies import packets

from .conftest import devices, loopback

OPTS = dict(rto_ms=50.0, reorder_window_us=4000.0, ev_probe_interval_ms=2.0, timeout_s=20.0)


def _has_ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize("host", ["127.0.0.1", pytest.param("::1", marks=pytest.mark.skipif(
    not _has_ipv6(), reason="no IPv6 loopback"))])
def test_loopback_transfer_is_byte_exact(host):
    async def main_():
        da, db = devices(port_gbps=0.25, base_rtt_us=1000)
        with trio.fail_after(30):
            async with open_endpoint(da, loopback(2, host)) as ea, open_endpoint(db, loopback(2, host)) as eb:
                assert all(a[1] != 0 for a in ea.local_peer().addrs)  # port 0 resolved to the bound port
                report = await run_transfer(ea, eb, TransferOptions(nbytes=4 << 20, **OPTS))
                return report, ea.statistics(), eb.statistics()

    report, sa, sb = trio.run(main_)
    assert report["verified"] and report["goodput_gbps"] > 0
    assert report["requester"]["tx_pkts"] >= 1024
    assert sb.rx_datagrams >= report["requester"]["tx_pkts"] and sb.rx_garbage == 0
    assert sa.tx_errors == sb.tx_errors == 0
    ports = {e["port"] for e in report["requester"]["ev_states"] if e["tx_pkts"]}
    assert ports == {1, 2}  # both NIC ports (sockets) carried data
    assert all(v is not None for v in report["paths_rtt_ms"]["requester"].values())  # every EV answered its probe


def test_a_transfer_that_runs_out_of_time_reports_why_with_its_writes_flushed():
    # 32 MiB at 0.05 Gb/s needs about 5.4 s: a 2.5 s budget ends it with writes still posted. The report says so
    # (the QP is moved to ERROR, which flushes them, so their regions can be deregistered) instead of raising.
    async def main_():
        da, db = devices(port_gbps=0.05, base_rtt_us=1000)
        with trio.fail_after(120):  # a hang guard only
            async with open_endpoint(da, loopback(2)) as ea, open_endpoint(db, loopback(2)) as eb:
                return await run_transfer(ea, eb, TransferOptions(nbytes=32 << 20, **{**OPTS, "timeout_s": 2.5}))

    report = trio.run(main_)
    assert not report["verified"] and report["goodput_gbps"] == 0.0
    assert report["completed"] < report["writes"]
    if report["timed_out"]:
        assert report["error"].startswith("gave up after 2.5 s"), report["error"]
    else:  # a CPU so loaded that the retries ran out first: the report names the failed QP instead
        assert report["error"].startswith("the QP failed: requester ERROR"), report["error"]


def test_garbage_on_a_real_socket_is_counted_and_the_endpoint_keeps_working():
    async def main_():
        da, db = devices(port_gbps=0.25, base_rtt_us=1000)
        with trio.fail_after(30):
            async with open_endpoint(da, loopback()) as ea, open_endpoint(db, loopback()) as eb:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as junk:
                    for data in (b"", b"\x00" * 7, b"\x60" + bytes(200), bytes(range(256)) * 8):
                        for addr in eb.local_peer().addrs:
                            junk.sendto(data, addr)
                while eb.statistics().rx_garbage < 8:  # garbage never reaches the protocol task: poll
                    await trio.sleep(0.001)
                assert eb.statistics().rx_fed == 0
                report = await run_transfer(ea, eb, TransferOptions(nbytes=1 << 20, **OPTS))
                return report, eb.statistics()

    report, st = trio.run(main_)
    assert report["verified"] and st.rx_garbage == 8


def test_the_command_prints_a_json_report(capsys):
    assert main(["io", "transfer", "--bytes", "2M", "--json", "--timeout-s", "30"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["verified"] and r["bytes"] == 2 << 20 and r["mode"] == "udp" and r["writes"] == 2
    assert {"requester", "responder"} <= r["endpoints"].keys()
    assert r["requester"]["ev_states"] and "rtx_pkts" in r["requester"]


def test_the_command_prints_a_readable_report(capsys):
    assert main(["io", "transfer", "--bytes", "1M", "--local", "127.0.0.1:0", "--remote", "127.0.0.1:0",
                 "--cc", "none", "--window", "64K"]) == 0
    out = capsys.readouterr().out
    assert "verified byte for byte: yes" in out and "goodput" in out and "EV 0x" in out


@pytest.mark.parametrize("argv, message", [
    (["--local", "127.0.0.1:0", "--remote", "127.0.0.1:0,127.0.0.1:0"], "one per NIC port"),
    (["--fail-link", "p0.t0.0:u1"], "needs --mode native"),
    (["--bytes", "lots"], "size = 'lots'"),
    (["--remote", "localhost:1,127.0.0.1:0"], "numeric"),
    (["--cc", "none"], "fixed window needs"),
])
def test_the_command_names_what_is_wrong(capsys, argv, message):
    assert main(["io", "transfer", *argv]) == 2
    assert message in capsys.readouterr().err


# --- the hot-path codec is the wire codec ------------------------------------------------------------

@settings(max_examples=200)
@given(packets())
def test_codec_writes_and_reads_exactly_what_the_wire_codec_does(x):
    pkt, net, payload = x
    mode = EvMode(int(net["ev_mode"]))
    hint = EvMode.STEV if mode == EvMode.SRV6 else mode
    c = Codec(ev_mode=hint, dport=0)
    n = np.zeros(1, dtype=net.dtype)
    n[0] = net
    data = bytes(c.encode(pkt, n, payload))
    assert data == encode(pkt, net, payload)
    p, pay = c.decode_untrusted(data, port=1)
    q, _, pay2 = decode(data, ev_mode=hint, dport=0, port=1)
    assert p.tobytes() == q.tobytes() and pay == pay2


@settings(max_examples=50)
@given(packets())
def test_codec_with_checksum_offload_sends_and_accepts_unchecked_packets(x):
    pkt, net, payload = x
    if int(pkt["trim"]):
        return  # a "trimmed" DSCP decides by the ICRC whether the packet was cut
    mode = EvMode(int(net["ev_mode"]))
    hint = EvMode.STEV if mode == EvMode.SRV6 else mode
    c, strict = Codec(ev_mode=hint, dport=0, csum_offload=True), Codec(ev_mode=hint, dport=0)
    n = np.zeros(1, dtype=net.dtype)
    n[0] = net
    data = bytes(c.encode(pkt, n, payload))
    assert data == encode(pkt, net, payload, csum_offload=True) and data[-4:] == bytes(4)
    p, pay = c.decode_untrusted(data)
    q, pay2 = strict.decode_untrusted(encode(pkt, net, payload))
    assert p.tobytes() == q.tobytes() and pay == pay2
    with pytest.raises(DecodeError):
        strict.decode_untrusted(data)


def test_udp_encapsulation_with_checksum_offload_is_byte_exact():
    """Both endpoints leave the inner ICRC to "hardware": the outer UDP checksum covers the bytes."""
    async def main_():
        from mrc.io.transports import UdpEncap

        da, db = devices(port_gbps=0.25, base_rtt_us=1000)
        ta, tb = (UdpEncap(["127.0.0.1:0"] * 2, csum_offload=True) for _ in range(2))
        with trio.fail_after(30):
            async with open_endpoint(da, ta) as ea, open_endpoint(db, tb) as eb:
                report = await run_transfer(ea, eb, TransferOptions(nbytes=1 << 20, **OPTS))
                return report, eb.statistics()

    report, st = trio.run(main_)
    assert report["verified"] and st.rx_garbage == 0


def test_codec_refuses_garbage_like_the_wire_codec():
    c = Codec()
    for data in (b"", b"\x60" * 10, bytes(100)):
        with pytest.raises(DecodeError):
            c.decode_untrusted(data)


def test_an_unreachable_peer_is_reported_not_waited_for_forever():
    async def main_():
        from mrc.io.transports import Peer

        da, db = devices(port_gbps=0.25, base_rtt_us=1000)
        with trio.fail_after(30):
            async with open_endpoint(da, loopback()) as ea, open_endpoint(db, loopback()) as eb:
                ea.local_peer = lambda: Peer.udp("127.0.0.1:9", "127.0.0.1:9")  # the responder answers nowhere
                return await run_transfer(ea, eb, TransferOptions(nbytes=1 << 20, **{**OPTS, "timeout_s": 1.0,
                                                                                     "probe_timeout_s": 0.2}))

    report = trio.run(main_)  # a report, with the reason, never an exception without one
    assert not report["verified"] and "cannot reach each other" in report["error"]
