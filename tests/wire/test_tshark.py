"""Wireshark agrees with us: tshark's own IPv6 / SRH / UDP / BTH decode, and our Lua dissector's fields.

With the Lua script, a packet with an MRC opcode is the script's alone (one "MRC" tree, BTH included; no
InfiniBand tree beside it) and any other opcode goes to Wireshark's InfiniBand dissector."""
from __future__ import annotations

import ipaddress
import shutil
import subprocess
from importlib import resources

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrc.wire.codec import decode
from mrc.wire.constants import EvMode, Trim
from mrc.wire.ev import ev_to_wire
from mrc.wire.layout import headers_after_bth
from mrc.wire.pcap import write_pcap
from mrc.wire.samples import samples
from tests.wire.strategies import packets

TSHARK = shutil.which("tshark")
pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed (Debian package `tshark`)")
LUA = str(resources.files("mrc.wire") / "dissector" / "mrc.lua")

# tshark field -> PKT column (BTH as Wireshark's built-in InfiniBand dissector names it)
BTH = {
    "infiniband.bth.opcode": "opcode", "infiniband.bth.se": "se", "infiniband.bth.m": "mig",
    "infiniband.bth.padcnt": "padcnt", "infiniband.bth.tver": "tver", "infiniband.bth.p_key": "pkey",
    "infiniband.bth.destqp": "dqpn", "infiniband.bth.a": "ackreq", "infiniband.bth.psn": "psn",
}
# Lua field -> (PKT column, headers that carry it)
MRC = {
    "mrc.opcode": ("opcode", {"BTH"}), "mrc.bth.se": ("se", {"BTH"}), "mrc.bth.m": ("mig", {"BTH"}),
    "mrc.bth.padcnt": ("padcnt", {"BTH"}), "mrc.bth.tver": ("tver", {"BTH"}), "mrc.bth.p_key": ("pkey", {"BTH"}),
    "mrc.bth.fecn": ("fecn", {"BTH"}), "mrc.bth.becn": ("becn", {"BTH"}), "mrc.bth.destqp": ("dqpn", {"BTH"}),
    "mrc.bth.psn": ("psn", {"BTH"}),
    "mrc.bth.ackreq": ("ackreq", {"BTH"}), "mrc.bth.r": ("bth_r", {"BTH"}),
    "mrc.bth.rtx": ("rtx", {"BTH"}), "mrc.bth.ts": ("ts", {"BTH"}),
    "mrc.meth.rqmsn": ("rqmsn", {"METH"}), "mrc.meth.msn": ("msn", {"METH"}),
    "mrc.tseth.tx_timestamp": ("tx_timestamp", {"TSETH"}), "mrc.tseth.tsr": ("tsr", {"TSETH"}),
    "mrc.tseth.ftype": ("ftype", {"TSETH"}),
    "mrc.reth.va": ("va", {"RETH"}), "mrc.reth.rkey": ("rkey", {"RETH"}), "mrc.reth.dma_len": ("dma_len", {"RETH"}),
    "mrc.immdt.imm": ("imm", {"ImmDt"}),
    "mrc.aeth.syndrome": ("aeth_syndrome", {"AETH"}), "mrc.aeth.msn": ("aeth_msn", {"AETH"}),
    "mrc.ext.type": ("ext_type", {"SETH", "NETH", "PETH"}), "mrc.ext.next": ("ext_next", {"SETH", "NETH", "PETH"}),
    "mrc.ext.m": ("m", {"SETH", "NETH", "PETH"}), "mrc.ext.pr": ("pr", {"SETH", "NETH", "PETH"}),
    "mrc.ext.entropy": ("entropy", {"SETH", "NETH"}), "mrc.ext.spdcid": ("spdcid", {"SETH", "NETH", "PETH"}),
    "mrc.ext.dpdcid": ("dpdcid", {"SETH", "NETH", "PETH"}), "mrc.ext.cc_type": ("cc_type", {"SETH", "NETH"}),
    "mrc.ext.cc_flags": ("cc_flags", {"SETH", "NETH"}), "mrc.ext.svc_time": ("svc_time", {"SETH", "NETH"}),
    "mrc.ext.vendor": ("vendor", {"NETH", "PETH", "ERTH", "EETH"}),
    "mrc.ext.tx_timestamp": ("tx_timestamp", {"NETH", "PETH", "ERTH", "EETH"}),
    "mrc.ext.tsr": ("tsr", {"PETH", "ERTH", "EETH"}), "mrc.ext.ftype": ("ftype", {"PETH", "ERTH", "EETH"}),
    "mrc.seth.ack_psn_offset": ("ack_psn_offset", {"SETH"}), "mrc.seth.cack_psn": ("cack_psn", {"SETH"}),
    "mrc.seth.mpr": ("mpr", {"SETH"}), "mrc.seth.sack_offset": ("sack_offset", {"SETH"}),
    "mrc.seth.sack_bitmap": ("sack_bitmap", {"SETH"}),
    "mrc.cc_state.tx_timestamp": ("tx_timestamp", {"CC_STATE"}), "mrc.cc_state.ooo_count": ("ooo_count", {"CC_STATE"}),
    "mrc.cc_state.r_c": ("r_c", {"CC_STATE"}), "mrc.cc_state.rcv_cwnd_pen": ("rcv_cwnd_pen", {"CC_STATE"}),
    "mrc.cc_state.rcvd_bytes": ("rcvd_bytes", {"CC_STATE"}),
    "mrc.neth.nack_reason": ("nack_reason", {"NETH"}), "mrc.neth.nack_psn": ("nack_psn", {"NETH"}),
    "mrc.peth.probe_id": ("probe_id", {"PETH"}),
    "mrc.ep.op": ("ep_op", {"ERTH", "EETH"}), "mrc.ep.req_id": ("req_id", {"ERTH", "EETH"}),
    "mrc.ep.port_status_mask": ("port_status_mask", {"ERTH", "EETH"}), "mrc.eeth.svc_time": ("svc_time", {"EETH"}),
}
NETF = ["ipv6.src", "ipv6.dst", "ipv6.flow", "ipv6.hlim", "ipv6.tclass", "ipv6.routing.segleft",
        "ipv6.routing.srh.last_entry", "ipv6.routing.srh.addr", "ip.src", "ip.dst", "ip.ttl", "ip.dsfield.dscp",
        "udp.srcport", "udp.dstport", "udp.length"]


def tshark(pcap, fields, lua=False):
    cmd = [TSHARK, "-n", "-r", str(pcap), "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"]
    if lua:
        # the script's UDP heuristic sends port 4791 to Wireshark's InfiniBand dissector even
        # when the EV put a well-known port (which tshark tries first) in the source port
        cmd[1:1] = ["-X", f"lua_script:{LUA}", "-o", "udp.try_heuristic_first:TRUE"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
    return [dict(zip(fields, line.split("\t"))) for line in out.splitlines()]


def _num(text):
    if text in ("True", "False"):
        return int(text == "True")
    return int(text, 0)


def _addr(a):
    b = bytes(np.asarray(a, dtype=np.uint8))
    return ipaddress.ip_address(b[12:] if b[:12] == b"\0" * 10 + b"\xff\xff" else b)


def _expected_net(p, n, length):
    mode = EvMode(int(n["ev_mode"]))
    sport, _ = ev_to_wire(int(p["ev"]), mode, int(n["flow_label"]))
    tc = (int(p["dscp"]) << 2) | int(p["ecn"])
    e = {"udp.srcport": [sport], "udp.dstport": [int(n["dport"])]}
    if n["ip_version"] == 4:
        e.update({"ip.src": [_addr(n["src"])], "ip.dst": [_addr(n["dst"])], "ip.ttl": [int(n["hop_limit"])],
                  "ip.dsfield.dscp": [int(p["dscp"])]})
        e["udp.length"] = [length - 20]
        return e
    outer = mode == EvMode.SRV6
    srcs, dsts = [_addr(n["src"])], [_addr(n["dst"])]
    flows, hlims = [int(n["flow_label"])], [int(n["hop_limit"])]
    if outer:
        srcs.insert(0, _addr(n["outer_src"]))
        dsts.insert(0, _addr(n["outer_dst"]))
        flows.insert(0, int(n["outer_flow_label"]))
        hlims.insert(0, int(n["outer_hop_limit"]))
    e.update({"ipv6.src": srcs, "ipv6.dst": dsts, "ipv6.flow": flows, "ipv6.hlim": hlims,
              "ipv6.tclass": [tc] * len(srcs)})
    if n["srh"]:
        last = int(n["srh_lastentry"])
        e["ipv6.routing.segleft"] = [int(n["srh_segleft"])]
        e["ipv6.routing.srh.last_entry"] = [last]
        e["ipv6.routing.srh.addr"] = [_addr(n["srh_segments"][s]) for s in range(last + 1)]
    return e


def _parse(field, text):
    if not text:
        return []
    vals = text.split(",")
    if field.endswith((".src", ".dst", ".addr")):
        return [ipaddress.ip_address(v) for v in vals]
    return [_num(v) for v in vals]


def check(pcap, wires, hints, lua_for_builtin=False):
    """tshark's own fields (IP, UDP; BTH by InfiniBand, except on MRC opcodes once the script is loaded) and the
    script's fields agree with our decoder on every packet."""
    builtin = tshark(pcap, NETF + list(BTH), lua=lua_for_builtin)
    lua = tshark(pcap, list(MRC) + ["mrc.payload_len", "mrc.icrc", "mrc.trimmed", "frame.protocols"], lua=True)
    assert len(builtin) == len(lua) == len(wires)
    for k, (data, hint) in enumerate(zip(wires, hints)):
        p, n, _ = decode(data, ev_mode=hint)
        for field, want in _expected_net(p, n, len(data)).items():
            assert _parse(field, builtin[k][field]) == want, (k, field)
        is_mrc = int(p["opcode"]) >= 0xC6
        ib = not (is_mrc and lua_for_builtin)  # the script takes MRC opcodes from InfiniBand
        for field, col in BTH.items():
            assert _parse(field, builtin[k][field]) == ([int(p[col])] if ib else []), (k, field)
        layers = lua[k]["frame.protocols"].split(":")
        assert ("infiniband" in layers) == (not is_mrc), (k, layers)  # one tree per packet, never both
        present = {"BTH", *headers_after_bth(int(p["opcode"]), int(p["ts"]))}
        for field, (col, hdrs) in MRC.items():
            want = [int(p[col])] if is_mrc and hdrs & present else []
            assert _parse(field, lua[k][field]) == want, (k, field, lua[k][field])
        trimmed = p["trim"] != Trim.NONE
        if is_mrc:
            assert lua[k]["mrc.trimmed"] == ("1" if trimmed else ""), k
            assert (lua[k]["mrc.icrc"] == "") == trimmed, k  # a trimmed packet has no ICRC
            if not trimmed:
                assert _parse("mrc.icrc", lua[k]["mrc.icrc"]) == [int.from_bytes(data[-4:], "big")], k
                assert _parse("mrc.payload_len", lua[k]["mrc.payload_len"]) == [int(p["payload_len"])]


def test_samples_agree_with_tshark(tmp_path):
    """Plain tshark, no script: the samples' EVs put port 66 in the UDP source port."""
    items = samples()
    f = tmp_path / "samples.pcap"
    write_pcap(f, [d for _, d in items])
    check(f, [d for _, d in items], [EvMode.STEV] * len(items))


@settings(max_examples=4, deadline=None)
@given(st.lists(packets(), min_size=10, max_size=25))
def test_random_packets_agree_with_tshark(tmp_path_factory, xs):
    from mrc.wire.codec import encode

    wires = [encode(p, n, pay) for p, n, pay in xs]
    hints = [EvMode.UDP if n["ev_mode"] == EvMode.UDP else EvMode.STEV for _, n, _ in xs]
    f = tmp_path_factory.mktemp("tshark") / "random.pcap"
    write_pcap(f, wires)
    check(f, wires, hints, lua_for_builtin=True)


def test_an_exception_above_bth_does_not_make_tshark_dissect_bth_twice(tmp_path):
    """Found by random exploration: RC SEND_LAST to QP 2, every other field zero.

    Wireshark's InfiniBand dissector offers the payload of RC SEND packets to a QP other than
    the management QPs 0 and 1 to the RPC-over-RDMA heuristic, which throws "malformed" on a
    payload that is not RPC-over-RDMA. Our Lua heuristic used to let that exception escape:
    the heuristic then counted as declined and UDP dissected the packet again by its port, so
    tshark listed every BTH field twice. The bytes were right all along (plain tshark shows
    one BTH); the script now claims the datagram whatever happens above BTH.
    """
    from mrc.wire.codec import encode
    from mrc.wire.constants import Opcode
    from mrc.wire.records import NET, PKT

    wires = []
    for op in (Opcode.RC_SEND_LAST, Opcode.RC_SEND_ONLY, Opcode.RC_SEND_LAST, Opcode.RC_SEND_FIRST):
        p = np.zeros(1, dtype=PKT)[0]
        p["opcode"], p["dqpn"] = op, 2
        n = np.zeros(1, dtype=NET)[0]
        n["ev_mode"], n["ip_version"], n["dport"] = int(EvMode.STEV), 6, 4791
        wires.append(encode(p, n, None))
    f = tmp_path / "send_to_qp2.pcap"
    write_pcap(f, wires)
    for lua in (False, True):
        rows = tshark(f, ["frame.protocols", "infiniband.bth.opcode", "infiniband.bth.destqp"], lua=lua)
        assert [r["infiniband.bth.opcode"] for r in rows] == ["2", "4", "2", "0"], lua  # one BTH each
        assert [r["infiniband.bth.destqp"] for r in rows] == ["0x000002"] * 4, lua
        assert "rpcordma" in rows[0]["frame.protocols"].split(":"), rows[0]  # the reason: RPC-over-RDMA looked
    check(f, wires, [EvMode.STEV] * len(wires), lua_for_builtin=True)


def test_the_dissector_flags_payload_on_a_kind_that_carries_none(tmp_path):
    """The decoders refuse it (tests/wire/test_payload_checks.py); the dissector shows it, flagged malformed."""
    from scapy.packet import raw

    from mrc.wire.constants import Opcode
    from mrc.wire.layers import build
    from mrc.wire.records import NET, PKT

    wires = []
    for op, extra in ((Opcode.MRC_RELIABILITY_SACK, 12), (Opcode.MRC_RELIABILITY_NACK, 0), (Opcode.MRC_ACKNOWLEDGE, 3)):
        p = np.zeros(1, dtype=PKT)[0]
        p["opcode"], p["payload_len"] = op, extra
        n = np.zeros(1, dtype=NET)[0]
        n["ev_mode"], n["ip_version"], n["dport"] = int(EvMode.STEV), 6, 4791
        wires.append(raw(build(p, n, bytes(extra))))
    f = tmp_path / "payload_on_control.pcap"
    write_pcap(f, wires)
    rows = tshark(f, ["_ws.expert.message", "mrc.payload_len"], lua=True)
    assert [r["mrc.payload_len"] for r in rows] == ["12", "0", "3"]
    assert "payload of 12 bytes on a MRC_RELIABILITY_SACK packet, which carries none" in rows[0]["_ws.expert.message"]
    assert "carries none" not in rows[1]["_ws.expert.message"]
    assert "payload of 3 bytes on a MRC_ACKNOWLEDGE packet, which carries none" in rows[2]["_ws.expert.message"]
