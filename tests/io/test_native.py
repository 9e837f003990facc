"""Native SRv6 over the namespace fabric: byte-exact transfers, a spine link failing mid-transfer, tshark.

Each run is what ``mrc io transfer --mode native`` does (the same argument
parser and runner). Needs root and network namespaces (marked ``netns``,
skipped with the reason otherwise); the fabric has a prefix unique to this
process and is removed even when a test fails. The assertions are about
behaviour, not speed: the CPU is shared.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest
import trio

from mrc.cli import build_parser
from mrc.errors import MRCError
from mrc.fabric import load
from mrc.io import transports
from mrc.io.cli import run_from_args
from tests.netns_fabric import tiny_fabric

pytestmark = pytest.mark.netns
PREFIX = f"mrcio{os.getpid() % 100000}-"
TSHARK = shutil.which("tshark")


@pytest.fixture(scope="module")
def fab():
    yield from tiny_fabric(PREFIX)


def transfer(*argv: str) -> dict:
    args = build_parser().parse_args(["io", "transfer", "--mode", "native", "--prefix", PREFIX, "--timeout-s", "60",
                                      *argv])
    return trio.run(run_from_args, args)


@pytest.mark.parametrize("src, dst, n_ev", [("h0", "h3", 4), ("h2", "h1", 4), ("h0", "h1", 2)])
def test_a_native_transfer_crosses_the_fabric_byte_exact(fab, src, dst, n_ev):
    r = transfer("--src", src, "--dst", dst, "--bytes", "4M")
    assert r["verified"] and r["completed"] == r["writes"] == 4
    evs = r["requester"]["ev_states"]
    assert len(evs) == n_ev  # every path between the pair: planes x (T1s, or 1 under one T0)
    assert {e["port"] for e in evs if e["tx_pkts"]} == {1, 2}  # both planes carried data
    assert all(v is not None for v in r["paths_rtt_ms"]["requester"].values())  # each EV's carrier reached dst
    st = r["endpoints"]
    assert st["requester"]["tx_no_route"] == st["requester"]["tx_errors"] == 0
    assert st["responder"]["rx_garbage"] == 0  # the rebuilt headers pass the ICRC


def test_a_spine_link_failing_mid_transfer(fab):
    """p0.t0.0 uplink 1 (to p0.t1.1) goes down at 150 ms and comes back at 700 ms."""
    r = transfer("--src", "h0", "--dst", "h3", "--bytes", "24M", "--fail-link", "p0.t0.0:u1", "--fail-at-ms", "150",
                 "--restore-at-ms", "700")
    assert r["verified"], r.get("error")
    f = r["failure"]
    assert f["link"] == "p0.t0.0:up1 <-> p0.t1.1:down0" and "note" not in f
    assert f["down_ms"] >= 150 and f["up_ms"] >= 700  # never before the times asked for (the core's ps as trio time)
    t = load("mrc-2plane-tiny")
    through = t.make_ev(0, 1)  # plane 0, T1 #1: the only path of h0 -> h3 across that link
    assert [e["ev"] for e in f["evs"]] == [through]
    e = f["evs"][0]
    assert e["assumed_bad_after_ms"] is not None and 0 <= e["assumed_bad_after_ms"] < 500  # the EV went ASSUMED_BAD
    assert e["steered_after_ms"] is not None and e["steered_after_ms"] < 500  # traffic left it: reported
    assert e["good_after_restore_ms"] is not None and e["final_state"] == "GOOD"  # probes brought it back
    assert f["assumed_bad_after_ms"] == e["assumed_bad_after_ms"]
    bad = [x for x in r["ev_events"] if x["side"] == "requester" and x["ev"] == through]
    assert [x["state"] for x in bad][-2:] == ["ASSUMED_BAD", "GOOD"]
    assert r["requester"]["rtx_pkts"] > 0  # what was in flight on the dead path was sent again


def test_a_host_nic_link_failing_uses_port_status(fab):
    """The responder's plane-1 NIC link goes down: its device sees the port go, tells the requester at once."""
    r = transfer("--src", "h0", "--dst", "h3", "--bytes", "16M", "--fail-link", "h3:nic1", "--fail-at-ms", "100",
                 "--restore-at-ms", "500")
    assert r["verified"], r.get("error")
    f = r["failure"]
    assert {e["ev"] for e in f["evs"]} == {0x80000000, 0xC0000000}  # both plane-1 paths end on that link
    assert all(e["steered_after_ms"] is not None for e in f["evs"])
    assert all(e["final_state"] == "GOOD" for e in f["evs"])


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed (Debian package `tshark`)")
def test_tshark_on_a_fabric_link_decodes_carrier_inner_ipv6_udp_and_bth(fab, tmp_path):
    pcap = tmp_path / "spine.pcap"
    ns = fab.ns(fab.topo.switch(0, 1, 1))  # p0.t1.1, link to p0.t0.0: h0's packets on EV (plane 0, T1 #1)
    cap = subprocess.Popen(["ip", "netns", "exec", ns, TSHARK, "-q", "-i", "d0", "-c", "30", "-w", str(pcap)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        line = ""
        while "Capturing on" not in line and time.monotonic() < deadline:
            line = cap.stderr.readline()
        assert "Capturing on" in line
        assert transfer("--src", "h0", "--dst", "h3", "--bytes", "1M")["verified"]
        cap.wait(timeout=20)
    finally:
        cap.kill()
    out = subprocess.run([TSHARK, "-n", "-r", str(pcap), "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,",
                          "-e", "ipv6.dst", "-e", "ipv6.nxt", "-e", "udp.dstport", "-e", "infiniband.bth.opcode",
                          "-e", "infiniband.bth.destqp"], capture_output=True, text=True, check=True, timeout=60).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    up = [r for r in rows if r[0].split(",")[0] == "5f00:0:8001:1001:f001::"]  # the carrier after p0.t0.0's End
    assert up, rows
    for dsts, nxt, dport, opcode, qp in up:
        assert dsts.split(",") == ["5f00:0:8001:1001:f001::", "fd00:0:1:1::1"]  # outer carrier, inner host
        assert nxt.split(",") == ["41", "17"]  # IPv6-in-IPv6, then UDP
        assert dport == "4791" and int(opcode) >= 0xC6 and qp
    assert any(0xC6 <= int(r[3]) <= 0xCB for r in up)  # MRC data packets


def test_native_mode_without_cap_net_raw_says_what_it_needs(monkeypatch):
    def refuse(family, kind=None, proto=0, *, netns=None):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(transports.Datagram, "open", staticmethod(refuse))
    tp = transports.NativeSrv6(load("mrc-2plane-tiny"), 0)
    with pytest.raises(MRCError, match="CAP_NET_RAW"):
        trio.run(tp.open_sockets)
