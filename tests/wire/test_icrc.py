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


def _rfc1071_sum(data: bytes) -> int:
    """The one's complement sum of 16-bit big-endian words, the slow obvious way (RFC 1071)."""
    if len(data) % 2:
        data += b"\0"
    s = 0
    for k in range(0, len(data), 2):
        s += (data[k] << 8) | data[k + 1]
        s = (s & 0xFFFF) + (s >> 16)
    return s


@settings(max_examples=300)
@given(st.binary(min_size=0, max_size=600), st.data())
def test_the_word_summing_internet_checksum_equals_rfc_1071(data, d):
    """`ones_sum` adds 32-bit little-endian words and byte-swaps the fold: any start, any length."""
    from mrc.wire.checksum import fold, ones_sum

    start = d.draw(st.integers(0, len(data)))
    end = d.draw(st.integers(start, len(data)))
    acc = d.draw(st.integers(0, 0xFFFF))
    got = int(fold(ones_sum(np.frombuffer(data, dtype=np.uint8), start, end, np.uint64(acc))))
    want = _rfc1071_sum(data[start:end]) + acc
    want = (want & 0xFFFF) + (want >> 16)
    assert got % 0xFFFF == want % 0xFFFF  # 0 and 0xFFFF are the same one's complement number
    assert (got == 0) == (want == 0)


@settings(max_examples=200)
@given(packets())
def test_checksum_offload_leaves_exactly_what_a_nic_fills_in(x):
    """``csum_offload``: the same bytes, ICRC zero and the UDP checksum field holding the folded
    pseudo-header sum (Linux CHECKSUM_PARTIAL). Finishing the UDP sum from that seed over the
    UDP header and payload, and computing the ICRC, gives the software bytes exactly; decoding
    without verification gives the same record."""
    from mrc.wire.checksum import icrc_bytes

    p, n, payload = x
    soft = encode(p, n, payload)
    off = encode(p, n, payload, csum_offload=True)
    ip = _inner_ip_offset(soft)
    v6 = n["ip_version"] == 6
    udp = ip + (40 if v6 else 20)
    assert len(off) == len(soft) and off[-4:] == b"\0\0\0\0"
    assert off[: udp + 6] == soft[: udp + 6] and off[udp + 8 : -4] == soft[udp + 8 : -4]
    length = len(soft) - udp
    pseudo = (soft[ip + 8 : ip + 40] if v6 else soft[ip + 12 : ip + 20]) + struct.pack("!IxxxB", length, 17)
    seed = struct.unpack("!H", off[udp + 6 : udp + 8])[0]
    assert seed == _rfc1071_sum(pseudo)
    # the "hardware": the UDP sum from csum_start (the UDP header, seed in place) over the rest
    body = off[udp : udp + 6] + b"\0\0" + off[udp + 8 : -4] + soft[-4:]
    s = _rfc1071_sum(struct.pack("!H", seed) + body)
    assert struct.unpack("!H", soft[udp + 6 : udp + 8])[0] == ((~s & 0xFFFF) or 0xFFFF)
    assert icrc_bytes(soft[ip:udp], soft[udp : udp + 8], soft[udp + 8 : -4]) == struct.unpack("<I", soft[-4:])[0]
    if p["trim"]:
        return  # a DSCP that says "trimmed" decides by the ICRC whether the packet was cut
    q, m, pay = decode(off, ev_mode=EvMode.UDP if n["ev_mode"] == EvMode.UDP else EvMode.STEV, dport=0,
                       verify_icrc=False, verify_udp=False)
    r, k, pay2 = decode(soft, ev_mode=EvMode.UDP if n["ev_mode"] == EvMode.UDP else EvMode.STEV, dport=0)
    assert q.tobytes() == r.tobytes() and m.tobytes() == k.tobytes() and pay == pay2
    with pytest.raises(DecodeError, match="ICRC"):
        decode(off, ev_mode=EvMode.STEV, dport=0, verify_udp=False)  # software still checks by default


def test_checksum_offload_in_batches_matches_one_by_one():
    from mrc.wire.codec import encode_batch

    p, n, payload = _rc_write()
    pkts = np.zeros(3, dtype=PKT)
    pkts[:] = p
    pkts["psn"] = [1, 2, 3]
    nets = np.zeros(1, dtype=NET)
    nets[0] = n
    arena = np.frombuffer(payload * 3, dtype=np.uint8)
    buf, offsets = encode_batch(pkts, nets, arena, np.arange(3) * len(payload), csum_offload=True)
    for k in range(3):
        assert bytes(buf[offsets[k] : offsets[k + 1]]) == encode(pkts[k], n, payload, csum_offload=True)
