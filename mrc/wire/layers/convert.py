"""Convert between scapy packets and `PKT` / `NET` rows (field by field, by name)."""
from __future__ import annotations

import ipaddress

import numpy as np
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.packet import NoPayload, Raw

from mrc.wire.constants import EvMode
from mrc.wire.dscp import DEFAULT_DSCP, DscpTable
from mrc.wire.ev import ev_from_wire, ev_to_wire
from mrc.wire.layers.base import REGISTRY
from mrc.wire.layers.transport import BTH
from mrc.wire.layout import carries_payload, headers_after_bth
from mrc.wire.records import NET, PKT


def _v6(a) -> str:
    return str(ipaddress.IPv6Address(bytes(np.asarray(a, dtype=np.uint8))))


def _v4(a) -> str:
    return str(ipaddress.IPv4Address(bytes(np.asarray(a, dtype=np.uint8))[12:]))


def _fill(layer, pkt):
    for f in layer.fields_desc:
        if f.name.startswith("resv") or f.name == "icrc":
            continue
        col = layer.PKT_NAMES.get(f.name, f.name)
        layer.setfieldval(f.name, int(pkt[col]))
    return layer


def build(pkt, net, payload: bytes | None = None):
    """The scapy packet (from the first IP header) for a `PKT` row and a `NET` row."""
    p, n = pkt, net
    mode = EvMode(int(n["ev_mode"]))
    sport, flow = ev_to_wire(int(p["ev"]), mode, int(n["flow_label"]))
    tc = (int(p["dscp"]) << 2) | int(p["ecn"])
    if int(n["ip_version"]) == 4:
        ip = IP(tos=tc, id=0, flags="DF", ttl=int(n["hop_limit"]), src=_v4(n["src"]), dst=_v4(n["dst"]))
    else:
        ip = IPv6(tc=tc, fl=flow, hlim=int(n["hop_limit"]), src=_v6(n["src"]), dst=_v6(n["dst"]), nh=17)
        if mode == EvMode.SRV6:
            outer = IPv6(
                tc=tc, fl=int(n["outer_flow_label"]), hlim=int(n["outer_hop_limit"]),
                src=_v6(n["outer_src"]), dst=_v6(n["outer_dst"]), nh=43 if n["srh"] else 41,
            )
            if n["srh"]:
                last = int(n["srh_lastentry"])
                outer = outer / IPv6ExtHdrSegmentRouting(
                    nh=41, addresses=[_v6(n["srh_segments"][s]) for s in range(last + 1)],
                    segleft=int(n["srh_segleft"]), lastentry=last, tag=int(n["srh_tag"]),
                )
            ip = outer / ip
    stack = ip / UDP(sport=sport, dport=int(n["dport"])) / _fill(BTH(), p)
    for name in headers_after_bth(int(p["opcode"]), int(p["ts"])):
        stack = stack / _fill(REGISTRY[name](), p)
    if payload is None:
        payload = bytes(int(p["payload_len"]))
    if payload:
        stack = stack / Raw(payload)
    return stack


def _addr(dst, text: str, v4: bool = False):
    if v4:
        dst[:] = np.frombuffer(ipaddress.IPv6Address("::ffff:" + text).packed, dtype=np.uint8)
    else:
        dst[:] = np.frombuffer(ipaddress.IPv6Address(text).packed, dtype=np.uint8)


def parse(packet, *, ev_mode: EvMode = EvMode.STEV, dscp: DscpTable = DEFAULT_DSCP):
    """`PKT` row, `NET` row and payload of a scapy packet (scapy's own dissection).

    Raises `DecodeError` where the compiled decoder does on the payload: bytes on a packet kind that
    carries none (an ACK, SACK, NACK, probe, CNP or endpoint packet), a pad count beyond the payload.
    """
    pkts = np.zeros(1, dtype=PKT)
    nets = np.zeros(1, dtype=NET)
    p, n = pkts[0], nets[0]
    ip = packet.getlayer(IPv6) or packet.getlayer(IP)
    if isinstance(ip, IP):
        n["ip_version"], n["ev_mode"], mode = 4, int(EvMode.UDP), EvMode.UDP
        n["hop_limit"] = ip.ttl
        _addr(n["src"], ip.src, True)
        _addr(n["dst"], ip.dst, True)
        tc = ip.tos
        inner = ip
    else:
        n["ip_version"] = 6
        tc = ip.tc
        inner = ip
        if isinstance(ip.payload, (IPv6, IPv6ExtHdrSegmentRouting)):
            mode = EvMode.SRV6
            n["outer_flow_label"], n["outer_hop_limit"] = ip.fl, ip.hlim
            _addr(n["outer_src"], ip.src)
            _addr(n["outer_dst"], ip.dst)
            if isinstance(ip.payload, IPv6ExtHdrSegmentRouting):
                srh = ip.payload
                n["srh"], n["srh_segleft"], n["srh_lastentry"], n["srh_tag"] = 1, srh.segleft, srh.lastentry, srh.tag
                for s, a in enumerate(srh.addresses):
                    _addr(n["srh_segments"][s], a)
            inner = ip.payload.getlayer(IPv6)
        else:
            mode = EvMode(ev_mode)
        n["ev_mode"] = int(mode)
        n["flow_label"], n["hop_limit"] = inner.fl, inner.hlim
        _addr(n["src"], inner.src)
        _addr(n["dst"], inner.dst)
    p["dscp"], p["ecn"] = tc >> 2, tc & 3
    udp = inner.getlayer(UDP)
    n["dport"] = udp.dport
    p["ev"] = ev_from_wire(udp.sport, int(n["flow_label"]), mode)
    layer = udp.payload
    payload = b""
    while not isinstance(layer, NoPayload):
        if isinstance(layer, Raw):
            payload = layer.load
            break
        for col, val in layer.pkt_fields():
            p[col] = val
        layer = layer.payload
    p["payload_len"] = len(payload)
    p["trim"] = int(dscp.trim_of(int(p["dscp"])))
    _check_payload(p)
    return p, n, payload


def _check_payload(p) -> None:
    """The compiled decoder's payload checks (`mrc.wire.parse.check_payload`), with its errors: a record is
    never made of a packet the codec refuses. Dissection itself stays lenient (it shows what is there)."""
    from mrc.wire import errors as E

    if not carries_payload(int(p["opcode"])) and p["payload_len"] > 0:
        raise E.decode_error(E.E_PAYLOAD_NONE, pkt=p)
    if p["trim"] == 0 and p["padcnt"] > p["payload_len"]:
        raise E.decode_error(E.E_PADCNT, pkt=p)
