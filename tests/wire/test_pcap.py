"""The classic pcap reader at its edges: every bound at, below and above its limit, every way a file can end.

A file is built byte by byte here (not with `write_pcap`), so each test states the header fields it
depends on: byte order, time resolution, snap length, link type.
"""
from __future__ import annotations

import struct

import pytest

from mrc.wire.errors import DecodeError
from mrc.wire.pcap import (LINKTYPE_ETHERNET, LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_RAW, MAGIC_NS, MAGIC_US,
                           MAX_RECORD, read_pcap, write_pcap)

LIBPCAP_MAX = 262_144  # libpcap's MAXIMUM_SNAPLEN: the bound itself, not the module's constant
IP6 = bytes([0x60, 0, 0, 0, 0, 4, 17, 64]) + bytes(32) + b"abcd"  # IPv6 header, payload length 4
IP4 = bytes([0x45, 0, 0, 24]) + bytes(16) + b"wxyz"  # IPv4 header, total length 24


def header(snaplen=65535, linktype=LINKTYPE_RAW, magic=MAGIC_NS, endian="<") -> bytes:
    return struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)


def record(data: bytes, sec=0, frac=0, incl=None, endian="<") -> bytes:
    n = len(data) if incl is None else incl
    return struct.pack(endian + "IIII", sec, frac, n, len(data)) + data


def read(tmp_path, content: bytes) -> list:
    f = tmp_path / "t.pcap"
    f.write_bytes(content)
    return list(read_pcap(f))


def error(rec) -> DecodeError:
    assert isinstance(rec[2], DecodeError), rec
    return rec[2]


# --- how a file may end ------------------------------------------------------------------------------

def test_a_file_of_complete_records_ends_cleanly(tmp_path):
    recs = read(tmp_path, header() + record(IP6) + record(IP6, sec=1))
    assert [(i, t, d) for i, t, d in recs] == [(0, 0, IP6), (1, 1_000_000_000, IP6)]
    assert read(tmp_path, header()) == []  # no record at all


@pytest.mark.parametrize("cut", [1, 8, 15])
def test_a_file_ending_inside_a_record_header_says_so(tmp_path, cut):
    recs = read(tmp_path, header() + record(IP6) + record(IP6)[:cut])
    assert len(recs) == 2 and recs[0][2] == IP6
    e = error(recs[1])
    assert (e.header, e.field) == ("pcap", "record") and "record header" in e.problem
    assert recs[1][0] == 1


@pytest.mark.parametrize("missing", [1, 20, len(IP6)])
def test_a_file_ending_inside_a_packet_says_so(tmp_path, missing):
    rec = record(IP6, sec=2, frac=7)
    recs = read(tmp_path, header() + record(IP6) + rec[: len(rec) - missing])
    assert len(recs) == 2 and recs[0][2] == IP6
    e = error(recs[1])
    assert (e.header, e.field) == ("pcap", "record") and "inside a packet" in e.problem
    assert recs[1][1] == 2_000_000_007  # the record's time is known


@pytest.mark.parametrize("cut", [0, 10, 23])
def test_a_file_shorter_than_the_pcap_header_is_refused(tmp_path, cut):
    f = tmp_path / "t.pcap"
    f.write_bytes(header()[:cut])
    with pytest.raises(DecodeError) as exc:
        list(read_pcap(f))
    assert (exc.value.header, exc.value.field) == ("pcap", "header")


def test_pcapng_or_garbage_is_refused_by_its_magic(tmp_path):
    f = tmp_path / "t.pcap"
    f.write_bytes(struct.pack("<I", 0x0A0D0D0A) + bytes(40))
    with pytest.raises(DecodeError) as exc:
        list(read_pcap(f))
    assert exc.value.field == "magic"


# --- the record length bound: snap length, and libpcap's maximum ----------------------------------------

@pytest.mark.parametrize("snaplen", [44, 100, 1000])
def test_a_record_may_be_as_long_as_the_snap_length_and_no_longer(tmp_path, snaplen):
    fits = IP6 + bytes(snaplen - len(IP6))
    recs = read(tmp_path, header(snaplen=snaplen) + record(fits) + record(fits + b"\0"))
    assert recs[0][2] == fits
    e = error(recs[1])
    assert e.field == "incl_len" and f"claims {snaplen + 1} bytes" in e.problem and "record 1" in e.problem
    assert len(recs) == 2  # nothing is read past a corrupt length


@pytest.mark.parametrize("snaplen", [0, LIBPCAP_MAX, LIBPCAP_MAX + 1, 0xFFFFFFFF])
def test_no_record_beyond_libpcaps_maximum_whatever_the_snap_length_says(tmp_path, snaplen):
    biggest = IP6 + bytes(LIBPCAP_MAX - len(IP6))
    recs = read(tmp_path, header(snaplen=snaplen) + record(biggest) + record(biggest + b"\0"))
    assert recs[0][2] == biggest  # exactly the maximum: read (raw IP keeps trailing bytes)
    e = error(recs[1])
    assert e.field == "incl_len" and f"claims {LIBPCAP_MAX + 1} bytes" in e.problem


def test_maximum_is_libpcaps():
    assert MAX_RECORD == LIBPCAP_MAX


def test_a_claimed_length_is_refused_before_anything_is_read(tmp_path):
    """A header claiming more than the bound with only a few bytes behind it: the length error, not EOF."""
    recs = read(tmp_path, header(snaplen=64) + record(IP6, incl=65))
    assert len(recs) == 1 and error(recs[0]).field == "incl_len"


# --- byte order and time resolution ---------------------------------------------------------------------

@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("magic, scale", [(MAGIC_NS, 1), (MAGIC_US, 1000)])
def test_byte_order_and_resolution(tmp_path, endian, magic, scale):
    content = header(snaplen=200, magic=magic, endian=endian) + record(IP6, sec=3, frac=999, endian=endian)
    content += record(IP6 + bytes(157), endian=endian)  # 201 bytes: above this file's snap length
    recs = read(tmp_path, content)
    assert recs[0] == (0, 3_000_000_000 + 999 * scale, IP6)
    assert error(recs[1]).field == "incl_len"


def test_link_type_uses_its_low_16_bits(tmp_path):
    recs = read(tmp_path, header(linktype=0x00AB0000 | LINKTYPE_IPV6) + record(IP6))
    assert recs[0][2] == IP6


# --- unwrapping link layers ---------------------------------------------------------------------------

@pytest.mark.parametrize("linktype", [LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6])
def test_raw_ip_link_types_are_passed_through_whole(tmp_path, linktype):
    data = IP4 + b"trailer"
    assert read(tmp_path, header(linktype=linktype) + record(data))[0][2] == data


def eth(etype: int, payload: bytes, tags: tuple = ()) -> bytes:
    out = bytes(12)
    for t in tags:
        out += struct.pack("!HH", t, 5)
    return out + struct.pack("!H", etype) + payload


@pytest.mark.parametrize("tags", [(), (0x8100,), (0x88A8, 0x8100)])
def test_ethernet_with_vlan_tags_unwraps_and_drops_padding(tmp_path, tags):
    content = header(linktype=LINKTYPE_ETHERNET)
    content += record(eth(0x86DD, IP6 + bytes(6), tags)) + record(eth(0x0800, IP4 + bytes(22), tags))
    recs = read(tmp_path, content)
    assert [r[2] for r in recs] == [IP6, IP4]


def test_short_ip_behind_ethernet_is_passed_on_for_the_decoder_to_refuse(tmp_path):
    content = header(linktype=LINKTYPE_ETHERNET) + record(eth(0x86DD, IP6[:39])) + record(eth(0x0800, IP4[:19]))
    assert [r[2] for r in read(tmp_path, content)] == [IP6[:39], IP4[:19]]


@pytest.mark.parametrize("frame, problem", [
    (bytes(13), "shorter than its Ethernet header"),
    (bytes(12) + b"\x81\x00\x00\x05\x86", "shorter than its Ethernet header"),  # tag, then a cut EtherType
    (eth(0x0806, bytes(28)), "EtherType 0x0806"),
])
def test_bad_ethernet_frames_are_errors_and_reading_goes_on(tmp_path, frame, problem):
    recs = read(tmp_path, header(linktype=LINKTYPE_ETHERNET) + record(frame) + record(eth(0x86DD, IP6)))
    e = error(recs[0])
    assert e.header == "Ethernet" and problem in e.problem
    assert recs[1] == (1, 0, IP6)


def test_an_unknown_link_type_is_an_error_per_record(tmp_path):
    recs = read(tmp_path, header(linktype=105) + record(IP6) + record(IP6))
    assert [error(r).field for r in recs] == ["linktype", "linktype"] and [r[0] for r in recs] == [0, 1]


def test_written_files_read_back_with_their_times(tmp_path):
    f = tmp_path / "w.pcap"
    assert write_pcap(f, [IP6, IP4], [5, 3_000_000_001]) == 2
    assert list(read_pcap(f)) == [(0, 5, IP6), (1, 3_000_000_001, IP4)]
    assert write_pcap(f, [IP6, IP6, IP6]) == 3
    assert [t for _, t, _ in read_pcap(f)] == [0, 1000, 2000]  # 1 us apart by default
