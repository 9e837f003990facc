"""The decoder's payload checks: no payload on a kind that carries none, no pad count beyond the payload.

Both decoders (the compiled codec and the scapy layers' `parse`) refuse the same packets with the same
`DecodeError`; the encoder refuses to write them. The golden vectors are whole packets, correct in
every other respect (lengths, UDP checksum, ICRC), so the check named is the only thing that fails.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.packet import raw as scapy_raw

from mrc.wire import DecodeError, EncodeError
from mrc.wire.codec import decode, decode_batch, encode
from mrc.wire.constants import EvMode, Opcode
from mrc.wire import layers as L
from mrc.wire.dscp import DEFAULT_DSCP
from mrc.wire.layout import HEADERS_BY_OPCODE, carries_payload
from mrc.wire.records import NET, PKT
from mrc.wire.trim import header_bytes, trim_bytes, trim_record
from tests.wire.strategies import packets

NO_PAYLOAD = sorted(op for op in HEADERS_BY_OPCODE if not carries_payload(op))


def _rows(opcode, payload_len=0, padcnt=0):
    p = np.zeros(1, dtype=PKT)[0]
    p["opcode"], p["psn"], p["dqpn"], p["pkey"] = opcode, 0x000102, 0x000020, 0xFFFF
    p["payload_len"], p["padcnt"], p["dscp"] = payload_len, padcnt, DEFAULT_DSCP.control
    n = np.zeros(1, dtype=NET)[0]
    n["ip_version"], n["ev_mode"], n["dport"], n["hop_limit"] = 6, int(EvMode.STEV), 4791, 64
    n["src"][15], n["dst"][15] = 1, 2
    return p, n


def _crafted(opcode, payload: bytes, padcnt=0) -> bytes:
    """The packet as the scapy layers build it: headers of `opcode`, then `payload`, then a correct ICRC."""
    p, n = _rows(opcode, len(payload), padcnt)
    return scapy_raw(L.build(p, n, payload))


def _vector(template: str, wire: bytes) -> bytes:
    """`template` with its checksum placeholders (x: UDP, y: ICRC) taken from `wire`, checked byte for byte."""
    hexed = template.replace("xxxx", wire[46:48].hex()).replace("yyyyyyyy", wire[-4:].hex())
    return bytes.fromhex(hexed)


def test_golden_sack_with_payload_is_refused_by_both_decoders():
    from scapy.layers.inet6 import IPv6

    wire = _crafted(Opcode.MRC_RELIABILITY_SACK, bytes(range(12)))
    template = (
        "6b800000" "0048" "11" "40"                            # IPv6: tc 0xb8 (DSCP 46, control), plen 72, UDP, hlim 64
        "00000000000000000000000000000001" "00000000000000000000000000000002"  # src ::1, dst ::2
        "0000" "12b7" "0048" "xxxx"                            # UDP: sport 0, dport 4791, len 72, checksum
        "dc" "00" "ffff" "00" "000020" "00" "000102"           # BTH: SACK, padcnt 0, dqpn 0x20, psn 0x102
        + "00" * 36                                            # SETH (28) and CC_STATE (8), all zero
        + "000102030405060708090a0b"                           # 12 payload bytes: a SACK carries none
        + "yyyyyyyy"                                           # ICRC
    )
    assert wire == _vector(template, wire)
    with pytest.raises(DecodeError) as e:
        decode(wire)
    assert str(e.value) == "payload.payload_len: payload of 12 bytes on a MRC_RELIABILITY_SACK packet, which carries none"
    assert (e.value.header, e.value.field) == ("payload", "payload_len")
    with pytest.raises(DecodeError) as s:
        L.parse(IPv6(wire))
    assert str(s.value) == str(e.value)
    # without the payload the same packet is fine
    ok = _crafted(Opcode.MRC_RELIABILITY_SACK, b"")
    assert len(ok) == len(wire) - 12 and decode(ok)[0]["payload_len"] == 0


def test_golden_pad_count_beyond_the_payload_is_refused_by_both_decoders():
    from scapy.layers.inet6 import IPv6

    wire = _crafted(Opcode.MRC_WRITE_ONLY, b"\xab", padcnt=3)
    bth = 40 + 8
    assert wire[bth] == 0xCA and wire[bth + 1] == 0x30  # opcode MRC_WRITE_ONLY; se 0 mig 0 padcnt 11 tver 0000
    assert len(wire) == bth + 12 + 4 + 16 + 1 + 4  # BTH, METH, RETH, 1 payload byte, ICRC
    with pytest.raises(DecodeError) as e:
        decode(wire)
    assert str(e.value) == "BTH.padcnt: pad count 3 exceeds the payload length 1"
    with pytest.raises(DecodeError) as s:
        L.parse(IPv6(wire))
    assert str(s.value) == str(e.value)
    for pad in range(2):  # a pad count within the payload is fine
        assert decode(_crafted(Opcode.MRC_WRITE_ONLY, b"\xab", padcnt=pad))[0]["padcnt"] == pad
    assert decode(_crafted(Opcode.MRC_WRITE_ONLY, b"\xab\xcd\xef", padcnt=3))[0]["payload_len"] == 3


@pytest.mark.parametrize("opcode", NO_PAYLOAD, ids=lambda op: Opcode(op).name)
@pytest.mark.parametrize("n", [1, 4, 12])
def test_every_kind_without_payload_refuses_payload(opcode, n):
    from scapy.layers.inet6 import IPv6

    wire = _crafted(opcode, bytes(n))
    name = Opcode(opcode).name
    want = f"payload.payload_len: payload of {n} bytes on a {name} packet, which carries none"
    for kw in ({}, {"verify_icrc": False, "verify_udp": False}):
        with pytest.raises(DecodeError) as e:
            decode(wire, **kw)
        assert str(e.value) == want
    with pytest.raises(DecodeError) as s:
        L.parse(IPv6(wire))
    assert str(s.value) == want
    # a pad count on such a kind is refused too (there is no payload for it to end)
    with pytest.raises(DecodeError, match=r"BTH\.padcnt: pad count 2 exceeds the payload length 0"):
        decode(_crafted(opcode, b"", padcnt=2))
    assert decode(_crafted(opcode, b""))[0]["payload_len"] == 0


def test_batch_decode_names_the_packet_and_the_values():
    good = _crafted(Opcode.MRC_RELIABILITY_NACK, b"")
    bad = _crafted(Opcode.MRC_RELIABILITY_NACK, bytes(7))
    pad = _crafted(Opcode.MRC_WRITE_ONLY, b"\x01", padcnt=2)
    buf = np.frombuffer(good + bad + pad, dtype=np.uint8).copy()
    offsets = np.cumsum([0, len(good), len(bad), len(pad)]).astype(np.int64)
    with pytest.raises(DecodeError) as e:
        decode_batch(buf, offsets)
    assert str(e.value) == ("packet 1: payload.payload_len: payload of 7 bytes on a MRC_RELIABILITY_NACK packet, "
                            "which carries none") and e.value.index == 1
    pk, _, _, codes = decode_batch(buf, offsets, errors="collect")
    from mrc.wire.errors import E_PADCNT, E_PAYLOAD_NONE, decode_error

    assert list(codes) == [0, E_PAYLOAD_NONE, E_PADCNT]
    assert str(decode_error(int(codes[2]), pkt=pk[2])) == "BTH.padcnt: pad count 2 exceeds the payload length 1"


def test_the_encoder_does_not_write_what_the_decoder_refuses():
    p, n = _rows(Opcode.MRC_RELIABILITY_PROBE, 12)
    with pytest.raises(EncodeError) as e:
        encode(p, n, bytes(12))
    assert str(e.value) == "PKT.payload_len: payload of 12 bytes on a MRC_RELIABILITY_PROBE packet, which carries none"
    p, n = _rows(Opcode.MRC_WRITE_MIDDLE, 2, padcnt=3)
    with pytest.raises(EncodeError, match=r"BTH\.padcnt: pad count 3 exceeds the payload length 2"):
        encode(p, n, b"ab")
    from mrc.io.codec import Codec

    p, n = _rows(Opcode.MRC_ACKNOWLEDGE, 3)
    with pytest.raises(EncodeError, match="MRC_ACKNOWLEDGE packet, which carries none"):
        Codec().encode(p, np.array([n]), b"abc")


def test_trimmed_packets_keep_their_leniency():
    """A trimmed packet has lost its tail: pad bytes may be gone (not checked); a header-only kind cut
    inside its ICRC has no payload, as `trim_record` says."""
    p, n = _rows(Opcode.MRC_WRITE_ONLY, 200, padcnt=3)
    p["dscp"] = DEFAULT_DSCP.data
    data = encode(p, n, bytes(200))
    cut = trim_bytes(data, 40 + 8 + 12 + 4 + 16 + 2)  # 2 payload bytes left, pad count 3
    q, _, pay = decode(cut)
    assert q["payload_len"] == 2 and q["padcnt"] == 3 and q["trim"] != 0
    p, n = _rows(Opcode.MRC_RELIABILITY_PROBE)
    p["dscp"] = DEFAULT_DSCP.data
    pp, nn = np.array([p]), np.array([n])
    hdr = int(header_bytes(pp, 0, nn, 0))
    data = encode(p, n)
    for size in range(hdr, hdr + 5):
        q, _, pay = decode(trim_bytes(data, size))
        assert q["payload_len"] == 0 and pay == b""
        assert q.tobytes() == trim_record(p, n, size).tobytes()


@settings(max_examples=200)
@given(packets(), st.binary(min_size=1, max_size=40), st.integers(0, 3))
def test_both_decoders_agree_on_any_appended_payload_or_pad_count(x, extra, pad):
    """Packets of every kind with payload bytes added and any pad count: the codec and scapy both decode to
    the same row, or both raise the same DecodeError."""
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6

    p, n, payload = x
    p["trim"], p["dscp"] = 0, DEFAULT_DSCP.control  # untrimmed (a trimmed DSCP skips the ICRC)
    p["payload_len"] += len(extra)
    p["padcnt"] = pad
    wire = scapy_raw(L.build(p, n, payload + extra))
    mode = EvMode(int(n["ev_mode"]))
    hint = mode if mode != EvMode.SRV6 else EvMode.STEV
    try:
        want = decode(wire, ev_mode=hint)
    except DecodeError as e:
        want = str(e)
    try:
        got = L.parse((IP if n["ip_version"] == 4 else IPv6)(wire), ev_mode=hint)
    except DecodeError as e:
        got = str(e)
    if isinstance(want, str):
        assert got == want
        assert not carries_payload(int(p["opcode"])) or pad > len(payload) + len(extra)
    else:
        assert not isinstance(got, str), got
        assert got[0].tobytes() == want[0].tobytes() and got[2] == want[2]
        assert carries_payload(int(p["opcode"])) and pad <= len(payload) + len(extra)
