"""ICRC: agreement with scapy's own RoCEv2 implementation, masking, SRv6 coverage, UDP checksum."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrc.wire import DecodeError
from mrc.wire.codec import decode, encode
from mrc.wire.constants import EvMode, Opcode
from mrc.wire.records import NET, PKT
from tests.wire.strategies import packets


def _rc_write(payload=b"hello world!"):
    p = np.zeros(1, dtype=PKT)[0]
    p["opcode"], p["pkey"], p["dqpn"], p["psn"], p["ackreq"] = Opcode.RC_RDMA_WRITE_ONLY, 0xFFFF, 0x11, 0x22, 1
    p["va"], p["rkey"], p["dma_len"], p["payload_len"], p["ev"] = 0x1000, 0x2000, len(payload), len(payload), 0xC0DE0123
    n = np.zeros(1, dtype=NET)[0]
    n["ip_version"], n["dport"], n["hop_limit"], n["flow_label"] = 6, 4791, 64, 0x123
    n["src"][15], n["dst"][15] = 1, 2
    return p, n, payload


def test_icrc_equals_scapy_contrib_roce():
    """scapy.contrib.roce computes RoCEv2 ICRC independently (checked there against a ConnectX capture)."""
    from scapy.contrib.roce import BTH as RoceBTH
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6
    from scapy.packet import Raw, raw

    p, n, payload = _rc_write()
    ours = encode(p, n, payload)
    ip = IPv6(ours)
    theirs = IPv6(src=ip.src, dst=ip.dst, tc=ip.tc, fl=ip.fl, hlim=ip.hlim) / UDP(sport=ip[UDP].sport, dport=4791) / RoceBTH(
        opcode=int(p["opcode"]), pkey=0xFFFF, dqpn=0x11, psn=0x22, ackreq=1
    ) / Raw(ours[48 + 12 : -4])
    b = raw(theirs)
    from scapy.packet import split_layers

    split_layers(UDP, RoceBTH, dport=4791)  # leave UDP 4791 to mrc.wire.layers for the other tests
    # scapy.contrib.roce packs the CRC reversed into a big-endian field: the same 4 bytes on the wire.
    assert b[-4:] == ours[-4:]
    assert b[:46] == ours[:46]


@settings(max_examples=100)
@given(packets(), st.integers(0, 255), st.integers(0, 0xFFFFF), st.integers(0, 255))
def test_icrc_ignores_the_masked_fields(x, tc, fl, hl):
    p, n, payload = x
    if n["ip_version"] != 6:
        return
    data = bytearray(encode(p, n, payload))
    ip = _inner_ip_offset(bytes(data))  # the IPv6 header that carries UDP
    data[ip] = 0x60 | (tc >> 4)
    data[ip + 1] = ((tc & 0xF) << 4) | (fl >> 16)
    data[ip + 2 : ip + 4] = struct.pack("!H", fl & 0xFFFF)
    data[ip + 7] = hl
    data[ip + 48 + 4] ^= 0xC0  # BTH resv8a: fecn / becn bits
    data[ip + 46 : ip + 48] = b"\x00\x00"  # UDP checksum 0 = not computed (accepted)
    decode(bytes(data), ev_mode=EvMode.STEV, verify_udp=False)  # ICRC still valid


def _inner_ip_offset(data: bytes) -> int:
    pos = 0
    if data[0] >> 4 == 4:
        return 0
    while data[pos + 6] != 17:
        nh = data[pos + 6]
        pos += 40
        if nh == 43:
            pos += 8 + 8 * data[pos + 1]
    return pos


@settings(max_examples=100)
@given(packets(mode=EvMode.SRV6), st.binary(min_size=16, max_size=16))
def test_srv6_outer_header_is_not_covered(x, new_dst):
    """A transit switch rewrites the outer destination (uSID shift): the ICRC stays valid."""
    p, n, payload = x
    data = bytearray(encode(p, n, payload))
    data[24:40] = new_dst
    data[7] = (data[7] - 1) % 256
    q, m, _ = decode(bytes(data))
    assert bytes(m["outer_dst"]) == new_dst and q["psn"] == p["psn"]


@settings(max_examples=100)
@given(packets(), st.data())
def test_covered_bytes_break_the_icrc(x, data):
    p, n, payload = x
    if p["trim"]:
        return  # a DSCP that says "trimmed" turns the ICRC check off (tested in test_trim.py)
    wire = bytearray(encode(p, n, payload))
    bth = _inner_ip_offset(bytes(wire)) + (20 if n["ip_version"] == 4 else 40) + 8
    k = data.draw(st.integers(bth + 5, len(wire) - 1))  # past resv8a
    wire[k] ^= 1 << data.draw(st.integers(0, 7))
    with pytest.raises(DecodeError):
        decode(bytes(wire), verify_udp=False, dport=0)


def test_ipv4_header_and_udp_checksums():
    from scapy.layers.inet import IP

    p, n, payload = _rc_write()
    n["ip_version"], n["ev_mode"] = 4, EvMode.UDP
    n["src"][12:] = [192, 0, 2, 1]
    n["dst"][12:] = [198, 51, 100, 1]
    p["ev"] = 0xC0DE
    data = encode(p, n, payload)
    pkt = IP(data)
    del pkt.chksum
    del pkt["UDP"].chksum
    assert bytes(pkt)[:28] == data[:28]  # scapy recomputes the same IPv4 and UDP checksums
