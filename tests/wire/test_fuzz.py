"""Malformed input raises DecodeError (naming header and field) and nothing else."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrc.wire import DecodeError
from mrc.wire.codec import decode, decode_batch, encode
from mrc.wire.constants import EvMode, Opcode
from mrc.wire.records import NET, PKT
from tests.wire.strategies import packets


def _decode_or_decode_error(data, **kw):
    try:
        decode(data, **kw)
    except DecodeError as exc:
        assert exc.header and exc.field and str(exc).startswith(f"{exc.header}.{exc.field}: ")


@settings(max_examples=500)
@given(st.binary(max_size=400))
def test_random_bytes(data):
    _decode_or_decode_error(data)


@settings(max_examples=500)
@given(st.binary(max_size=200).map(lambda b: bytes([0x60]) + b), st.booleans())
def test_random_bytes_that_look_like_ipv6(data, verify):
    _decode_or_decode_error(data, verify_icrc=verify, verify_udp=verify, dport=0)


@settings(max_examples=300)
@given(packets(), st.data())
def test_truncated_valid_packets(x, data):
    p, n, payload = x
    wire = encode(p, n, payload)
    cut = data.draw(st.integers(0, len(wire) - 1))
    with pytest.raises(DecodeError):
        decode(wire[:cut])


@settings(max_examples=500)
@given(packets(), st.data())
def test_bit_flips_of_valid_packets(x, data):
    p, n, payload = x
    wire = bytearray(encode(p, n, payload))
    for _ in range(data.draw(st.integers(1, 4))):
        bit = data.draw(st.integers(0, 8 * len(wire) - 1))
        wire[bit // 8] ^= 1 << (bit % 8)
    _decode_or_decode_error(bytes(wire))
    _decode_or_decode_error(bytes(wire), verify_icrc=False, verify_udp=False, dport=0)


@settings(max_examples=200)
@given(packets(), st.binary(min_size=1, max_size=8))
def test_extra_bytes_after_a_packet(x, extra):
    p, n, payload = x
    _decode_or_decode_error(encode(p, n, payload) + extra)


@settings(max_examples=100)
@given(st.lists(st.binary(max_size=120), min_size=1, max_size=20))
def test_batch_decode_of_garbage_only_reports_codes(chunks):
    buf = np.frombuffer(b"".join(chunks) or b"\0", dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(c) for c in chunks])]).astype(np.int64)
    _, _, _, codes = decode_batch(buf, offsets, errors="collect")
    assert codes.shape == (len(chunks),)


def _ack():
    p = np.zeros(1, dtype=PKT)
    p["opcode"] = Opcode.MRC_ACKNOWLEDGE
    n = np.zeros(1, dtype=NET)
    n["ip_version"], n["dport"], n["hop_limit"] = 6, 4791, 64
    return p[0], n[0]


@pytest.mark.parametrize(
    "mutate,where",
    [
        (lambda b: b[:30], "IPv6.plen"),
        (lambda b: b[:4] + b"\x00\x10" + b[6:], "IPv6.plen"),
        (lambda b: b[:6] + b"\x06" + b[7:], "IPv6.nh"),
        (lambda b: b"\x50" + b[1:], "IP.version"),
        (lambda b: b[:42] + b"\x12\xb6" + b[44:], "UDP.dport"),
        (lambda b: b[:44] + b"\x00\x09" + b[46:], "UDP.len"),
        (lambda b: b[:46] + bytes([b[46] ^ 1]) + b[47:], "UDP.chksum"),
        (lambda b: b[:48] + b"\xcc" + b[49:], "BTH.opcode"),
        (lambda b: b[:-1] + bytes([b[-1] ^ 0x80]), "ICRC.icrc"),
    ],
)
def test_each_malformation_names_its_field(mutate, where):
    data = encode(*_ack())
    with pytest.raises(DecodeError) as info:
        decode(mutate(data), verify_udp=where == "UDP.chksum")
    assert str(info.value).startswith(where), str(info.value)


def test_plain_ipv6_needs_a_known_ev_mode_hint():
    with pytest.raises(DecodeError, match="ev_mode"):
        decode(encode(*_ack()), ev_mode=EvMode.SRV6)
