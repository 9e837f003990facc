"""One packet of every MRC kind, in every EV mode, plus trimmed variants (`mrc pcap samples`).

Addresses come from the IPv6 documentation prefix (2001:db8::/32) and the
RFC 9800 example uSID block (fcbb:bb00::/32). UDP-mode samples use IPv4 so that
a reader needs no EV-mode hint to decode the file.
"""
from __future__ import annotations

import ipaddress

import numpy as np

from mrc.wire.codec import encode
from mrc.wire.constants import ROCEV2_UDP_PORT, EndpointOp, EvMode, NackReason, Opcode, SackM
from mrc.wire.dscp import DEFAULT_DSCP, DscpTable
from mrc.wire.records import NET, PKT
from mrc.wire.srv6 import carrier
from mrc.wire.trim import trim_bytes

SRC = "2001:db8:0:1::1"
DST = "2001:db8:0:2::1"
BLOCK = 0xFCBBBB00
# T0 (plane 1) -> T1 uplink 2 -> T0 -> destination NIC decapsulation uSID.
PATH = [0x0101, 0x0202, 0x0103, 0x0FE0]
PATH_LONG = [0x0101, 0x0202, 0x0303, 0x0204, 0x0105, 0x0106]
PATH_SRH = [0x0107, 0x0FE0]


def _addr(a, text):
    a[:] = np.frombuffer(ipaddress.ip_address(text).packed if ":" in text else
                         ipaddress.IPv6Address("::ffff:" + text).packed, dtype=np.uint8)


def net_row(mode: EvMode, srh: bool = False) -> np.void:
    n = np.zeros(1, dtype=NET)[0]
    n["ev_mode"] = int(mode)
    n["dport"] = ROCEV2_UDP_PORT
    n["hop_limit"] = 64
    if mode == EvMode.UDP:
        n["ip_version"] = 4
        _addr(n["src"], "192.0.2.1")
        _addr(n["dst"], "198.51.100.1")
        return n
    n["ip_version"] = 6
    _addr(n["src"], SRC)
    _addr(n["dst"], DST)
    if mode == EvMode.SRV6:
        n["outer_hop_limit"] = 64
        n["outer_flow_label"] = 0x2A5A5
        _addr(n["outer_src"], SRC)
        if srh:
            _addr(n["outer_dst"], str(carrier(BLOCK, PATH_LONG)))
            n["srh"], n["srh_segleft"], n["srh_lastentry"] = 1, 1, 0
            _addr(n["srh_segments"][0], str(carrier(BLOCK, PATH_SRH)))
        else:
            _addr(n["outer_dst"], str(carrier(BLOCK, PATH)))
    return n


def _base(opcode, ev, dscp):
    p = np.zeros(1, dtype=PKT)[0]
    p["opcode"] = int(opcode)
    p["pkey"] = 0xFFFF
    p["dqpn"] = 0x000123
    p["ev"] = ev
    p["dscp"] = dscp
    return p


def mrc_packets(mode: EvMode, dscp: DscpTable = DEFAULT_DSCP, payload_len: int = 512):
    """(label, pkt, payload) for each MRC packet kind, with an EV that fits `mode`."""
    ev = 0x0042 if mode == EvMode.UDP else 0x00420007
    out = []
    for k, op in enumerate(range(Opcode.MRC_WRITE_FIRST, Opcode.MRC_WRITE_ONLY_IMM + 1)):
        p = _base(op, ev, dscp.data)
        p["psn"], p["ts"], p["ackreq"] = 1000 + k, 1, int(op in (Opcode.MRC_WRITE_LAST, Opcode.MRC_WRITE_ONLY))
        p["rqmsn"], p["msn"] = 7, 3
        p["tx_timestamp"], p["ftype"] = 0x1234 + k, 1
        p["va"], p["rkey"], p["dma_len"] = 0x7F0000001000 + 4096 * k, 0xBEEF, 4 * payload_len
        p["imm"] = 0xCAFE0000 + k
        p["payload_len"] = payload_len
        out.append((Opcode(op).name, p, bytes(range(256)) * (payload_len // 256) + bytes(payload_len % 256)))
    p = _base(Opcode.MRC_WRITE_MIDDLE, ev, dscp.retx)
    p["psn"], p["rtx"], p["va"], p["rkey"], p["dma_len"], p["payload_len"] = 1001, 1, 0x7F0000002000, 0xBEEF, 2048, payload_len
    out.append(("MRC_WRITE_MIDDLE retransmission, no TSETH", p, bytes(payload_len)))
    p = _base(Opcode.MRC_ACKNOWLEDGE, ev, dscp.control)
    p["psn"], p["aeth_syndrome"], p["aeth_msn"] = 1005, 0x1F, 3
    out.append(("MRC_ACKNOWLEDGE", p, b""))
    p = _base(Opcode.MRC_RELIABILITY_SACK, ev, dscp.control)
    p["psn"], p["m"], p["ack_psn_offset"], p["entropy"] = 1003, int(SackM.SKIP_ONCE), -2, 0x00420007
    p["spdcid"], p["dpdcid"], p["cack_psn"], p["cc_type"], p["mpr"] = 0x11, 0x22, 1001, 1, 8
    p["sack_offset"], p["sack_bitmap"], p["svc_time"] = 0, 0xF0F0_0000_0000_000B, 12
    p["tx_timestamp"], p["ooo_count"], p["rcv_cwnd_pen"], p["rcvd_bytes"] = 0x1236, 2, 16, 4096
    out.append(("MRC_RELIABILITY_SACK", p, b""))
    for reason in NackReason:
        p = _base(Opcode.MRC_RELIABILITY_NACK, ev, dscp.control)
        p["psn"], p["nack_reason"], p["entropy"], p["nack_psn"] = 1002, int(reason), 0x00420007, 1002
        p["spdcid"], p["dpdcid"], p["cc_type"], p["tx_timestamp"], p["svc_time"] = 0x11, 0x22, 2, 0x1235, 3
        out.append((f"MRC_RELIABILITY_NACK {reason.name}", p, b""))
    p = _base(Opcode.MRC_RELIABILITY_PROBE, ev, dscp.data)
    p["psn"], p["probe_id"], p["spdcid"], p["dpdcid"], p["tx_timestamp"], p["ftype"] = 1006, 9, 0x11, 0x22, 0x1240, 1
    out.append(("MRC_RELIABILITY_PROBE", p, b""))
    for op, name in ((EndpointOp.PORT_STATUS_UPDATE, "port status update"), (EndpointOp.EV_PROBE, "EV probe")):
        p = _base(Opcode.MRC_ENDPOINT_REQUEST, ev, dscp.control)
        p["dqpn"], p["ep_op"], p["req_id"], p["port_status_mask"] = 0x2, int(op), 40 + int(op), 0xFD
        p["tx_timestamp"], p["ftype"] = 0x1250, 1
        out.append((f"MRC_ENDPOINT_REQUEST {name}", p, b""))
    p = _base(Opcode.MRC_ENDPOINT_RESPONSE, ev, dscp.control)
    p["dqpn"], p["ep_op"], p["req_id"], p["port_status_mask"], p["svc_time"] = 0x2, int(EndpointOp.EV_PROBE), 41, 0xFF, 850
    p["tx_timestamp"], p["ftype"] = 0x1250, 1
    out.append(("MRC_ENDPOINT_RESPONSE EV probe", p, b""))
    return out


MODES = [
    ("STEV", EvMode.STEV, False),
    ("UDP", EvMode.UDP, False),
    ("SRv6", EvMode.SRV6, False),
    ("SRv6+SRH", EvMode.SRV6, True),
]


def samples(dscp: DscpTable = DEFAULT_DSCP, trim_size: int = 256):
    """[(label, ip_bytes)] : every MRC kind in every EV mode, then trimmed data packets."""
    out = []
    for mode_name, mode, srh in MODES:
        n = net_row(mode, srh)
        for label, p, payload in mrc_packets(mode, dscp):
            out.append((f"{mode_name} {label}", encode(p, n, payload)))
        if mode_name in ("STEV", "SRv6+SRH"):
            p = _base(Opcode.CNP, 0x00420007, dscp.control)
            p["becn"] = 1
            out.append((f"{mode_name} RoCEv2 CNP", encode(p, n)))
    for mode_name, mode, srh in MODES:
        n = net_row(mode, srh)
        label, p, payload = mrc_packets(mode, dscp)[4]  # MRC_WRITE_ONLY
        data = encode(p, n, payload)
        out.append((f"{mode_name} {label} trimmed", trim_bytes(data, trim_size, dscp=dscp)))
        out.append((f"{mode_name} {label} trimmed at last hop", trim_bytes(data, trim_size, lasthop=True, dscp=dscp)))
    return out
