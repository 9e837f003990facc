"""The printed tables work in Linux: mrc-2plane-tiny in network namespaces, UDP over SRv6 uSIDs.

Every node gets a namespace, every link a veth pair named by `tables.ifname`
with the port's link-local address; every node installs exactly the lines
`Topology.iproute2` prints. Hosts add their per-plane address, a route for
the plane's block towards their T0 and one reduced SRv6 encapsulation
(``encap.red``: a single carrier, no SRH) per destination. A datagram and
its reply must cross, and the data must pass through the T1 the EV names.
Needs root and network namespaces (skipped otherwise).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from mrc.fabric import address as AD
from mrc.fabric import from_preset
from mrc.fabric.tables import ifname
from tests.netns_fabric import can_netns

pytestmark = pytest.mark.netns
PREFIX = f"mrcft{os.getpid() % 10000}-"


def _sh(cmd: list[str], check=True):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and r.returncode:
        raise AssertionError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


@pytest.fixture(scope="module")
def fabric():
    reason = can_netns()
    if reason:
        pytest.skip(reason)
    t = from_preset("mrc-2plane-tiny")
    ns = [f"{PREFIX}{n}" for n in range(t.n_nodes)]
    try:
        for n in ns:
            _sh(["ip", "netns", "add", n])
            _sh(["ip", "-n", n, "link", "set", "lo", "up"])
            _sh(["ip", "netns", "exec", n, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"])
        for q in range(t.n_ports):
            peer = int(t.port[q]["peer"])
            if peer < q:
                continue
            a, b = int(t.port[q]["node"]), int(t.port[peer]["node"])
            _sh(["ip", "link", "add", PREFIX + "a", "type", "veth", "peer", "name", PREFIX + "b"])
            _sh(["ip", "link", "set", PREFIX + "a", "netns", ns[a], "name", ifname(t, q)])
            _sh(["ip", "link", "set", PREFIX + "b", "netns", ns[b], "name", ifname(t, peer)])
            for node, port in ((a, q), (b, peer)):
                _sh(["ip", "-n", ns[node], "link", "set", ifname(t, port), "up"])
                _sh(["ip", "-n", ns[node], "-6", "addr", "add", f"{AD.link_local(port)}/64", "dev", ifname(t, port),
                     "nodad"])
        for n in range(t.n_nodes):
            for line in t.iproute2(n):  # exactly the printed commands
                words = line.split()
                assert words[:2] == ["ip", "-6"]
                _sh(["ip", "-n", ns[n], "-6", *words[2:]])
        for h in range(t.n_hosts):
            for p in range(t.n_planes):
                t0_side = AD.link_local(int(t.port[t.nic_port(h, p)]["peer"]))
                addr = f"{t.host_address(h, p)}/128"
                _sh(["ip", "-n", ns[h], "-6", "addr", "add", addr, "dev", f"nic{p}", "nodad"])
                _sh(["ip", "-n", ns[h], "-6", "route", "add", f"5f00:{p}::/32", "via", str(t0_side), "dev", f"nic{p}"])
        yield t, ns
    finally:
        for n in ns:
            _sh(["ip", "netns", "del", n], check=False)


def _rx_packets(ns, ifnames):
    return sum(int(_sh(["ip", "netns", "exec", ns, "cat", f"/sys/class/net/{i}/statistics/rx_packets"]).stdout)
               for i in ifnames)


@pytest.mark.parametrize("src,dst,plane,t1", [(0, 3, 1, 1), (0, 3, 0, 0), (2, 1, 0, 1), (0, 1, 1, 0)])
def test_datagram_and_reply_cross_on_the_evs_path(fabric, src, dst, plane, t1):
    t, ns = fabric
    ev, back = t.make_ev(plane, t1), t.make_ev(plane, 1 - t1)
    a, b = str(t.host_address(src, plane)), str(t.host_address(dst, plane))
    for x, y, e, sa in ((src, dst, ev, a), (dst, src, back, b)):
        _sh(["ip", "-n", ns[x], "-6", "route", "replace", f"{t.host_address(y, plane)}/128", "encap", "seg6", "mode",
             "encap.red", "segs", str(t.carrier(x, y, e)), "dev", f"nic{plane}", "src", sa])
    t1_ns = ns[t.switch(plane, 1, t1)]
    before = _rx_packets(t1_ns, ["d0", "d1"])
    server = subprocess.Popen(
        ["ip", "netns", "exec", ns[dst], sys.executable, "-c",
         "import socket,sys; s=socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind((sys.argv[1], 9000));"
         "s.settimeout(5); d,a=s.recvfrom(64); s.sendto(b'pong:'+d, a); print(a[0])", b],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        client = _sh(["ip", "netns", "exec", ns[src], sys.executable, "-c",
                      "import socket,sys; s=socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind((sys.argv[1], 0));"
                      "s.settimeout(5); s.sendto(b'ping', (sys.argv[2], 9000)); print(s.recvfrom(64)[0].decode())",
                      a, b], check=False)
        out, err = server.communicate(timeout=10)
    finally:
        server.kill()
    assert client.stdout.strip() == "pong:ping", client.stderr + err
    assert out.strip() == a  # the receiver saw the sender's own address: decapsulated
    crossed = _rx_packets(t1_ns, ["d0", "d1"]) - before
    if src // 2 == dst // 2:
        assert crossed == 0  # same T0: no T1 on the path
    else:
        assert crossed >= 1
