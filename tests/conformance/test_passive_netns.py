"""The namespace fabric's traffic, captured with dumpcap on both hosts' NIC ports, passes the passive check clean.

A native SRv6 transfer (`mrc io transfer --mode native`) from h0 to h3 across ``mrc-2plane-tiny``, once plain and
once with a spine link going down mid-transfer (losses, retransmissions, an EV retired and probed back); the
capture is each host's two NIC interfaces (Ethernet, both directions: a host's view of its conversation), read
as the pcapng dumpcap writes. Needs root, network namespaces and dumpcap (skipped with the reason otherwise).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest
import trio

from mrc.cli import build_parser
from mrc.conformance.passive import check_capture
from mrc.io.cli import run_from_args
from tests.netns_fabric import tiny_fabric

pytestmark = pytest.mark.netns
PREFIX = f"mrcpc{os.getpid() % 100000}-"
DUMPCAP = shutil.which("dumpcap")


@pytest.fixture(scope="module")
def fab():
    if DUMPCAP is None:
        pytest.skip("dumpcap not installed (Debian package `wireshark-common` / `tshark`)")
    yield from tiny_fabric(PREFIX)


def _transfer(*argv: str) -> dict:
    args = build_parser().parse_args(["io", "transfer", "--mode", "native", "--prefix", PREFIX, "--timeout-s", "60",
                                      *argv])
    return trio.run(run_from_args, args)


def _capture(fab, host: str, path):
    ns = fab.ns(fab.topo.parse_node(host))
    p = subprocess.Popen(["ip", "netns", "exec", ns, DUMPCAP, "-q", "-i", "nic0", "-i", "nic1", "-w", str(path)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    line = ""
    while "Capturing on" not in line and time.monotonic() < deadline:
        line = p.stderr.readline()
    assert "Capturing on" in line, line
    return p


@pytest.mark.parametrize("fail", [False, True])
def test_a_native_transfer_captured_at_both_hosts_passes_clean(fab, tmp_path, fail):
    caps = {h: tmp_path / f"{h}.pcapng" for h in ("h0", "h3")}
    procs = [_capture(fab, h, path) for h, path in caps.items()]
    try:
        extra = ("--fail-link", "p0.t0.0:u1", "--fail-at-ms", "20", "--restore-at-ms", "300") if fail else ()
        r = _transfer("--src", "h0", "--dst", "h3", "--bytes", "32M" if fail else "8M", *extra)  # still running at 20 ms
        assert r["verified"], r.get("error")
        time.sleep(0.5)
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=20)
    for host, path in caps.items():
        res = check_capture(path)
        assert res.counts["mrc"] > 1000, (host, res.counts)
        assert [v.line() for v in res.violations] == [], host
        # both directions of the transfer's QP pair are in each host's capture, every plane
        judged = [fr for fr in res.flows if (fr.flow.kind == 0).any()]
        assert judged and all(fr.flow.view.complete for fr in judged), host
        if fail and host == "h0":
            # the sender's capture sees a lost packet and its resend; the receiver's sees the resend alone
            assert sum(fr.retransmissions for fr in res.flows) > 0, host
