"""pcapng: what we write, our reader and tshark read back (interfaces, picosecond times); every block type
of the format read or skipped; malformed and hostile files end in a DecodeError record naming the field and
the block, never a crash or a huge allocation; `mrc pcap decode` reads pcapng."""
from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

from mrc.wire.errors import DecodeError
from mrc.wire.pcap import write_pcap
from mrc.wire.pcapng import read_packets, write_pcapng
from mrc.wire.samples import samples

TSHARK = shutil.which("tshark")


def _write(path, tsresol=12):
    items = samples()[:6]
    ifaces = [("p0.t0.0:up1", "leaf up"), ("h3:nic0", "")]
    pk = [(k % 2, 1_000_000 * k + 7, data) for k, (_, data) in enumerate(items)]
    write_pcapng(path, ifaces, pk, tsresol=tsresol, comment="test")
    return ifaces, pk


@pytest.mark.parametrize("tsresol", [9, 12])
def test_roundtrip(tmp_path, tsresol):
    ifaces, pk = _write(tmp_path / "a.pcapng", tsresol)
    got = list(read_packets(tmp_path / "a.pcapng"))
    assert len(got) == len(pk)
    for (index, t_ns, data, iface), (i, t, d) in zip(got, pk):
        assert data == d and iface == ifaces[i][0]
        assert t_ns == t * 10**9 // 10**tsresol


def test_classic_pcap_still_read(tmp_path):
    items = samples()[:3]
    write_pcap(tmp_path / "c.pcap", [d for _, d in items], [5, 6, 7])
    got = list(read_packets(tmp_path / "c.pcap"))
    assert [d for _, _, d, _ in got] == [d for _, d in items] and [t for _, t, _, _ in got] == [5, 6, 7]


def test_malformed_pcapng_ends_in_a_decode_error(tmp_path):
    _write(tmp_path / "a.pcapng")
    raw = (tmp_path / "a.pcapng").read_bytes()
    cases = {
        "truncated": raw[:-10],
        "bad_trailer": raw[:-4] + struct.pack("<I", 999),
        "garbage_after": raw + b"\x06\x00\x00\x00\xff\xff\xff\x7f" + b"\0" * 20,
        "bad_shb": raw[:8] + b"\x00\x00\x00\x00" + raw[12:],
    }
    for name, data in cases.items():
        p = tmp_path / f"{name}.pcapng"
        p.write_bytes(data)
        got = list(read_packets(p))
        assert got and isinstance(got[-1][2], DecodeError), name
        assert all(isinstance(x[2], bytes) for x in got[:-1]), name


def test_trailing_blocks_that_are_not_packets_are_not_errors(tmp_path):
    _write(tmp_path / "a.pcapng")
    isb = struct.pack("<III", 5, 24, 0) + struct.pack("<II", 0, 0) + struct.pack("<I", 24)  # an interface statistics block
    (tmp_path / "b.pcapng").write_bytes((tmp_path / "a.pcapng").read_bytes() + isb)
    got = list(read_packets(tmp_path / "b.pcapng"))
    assert len(got) == 6 and all(isinstance(x[2], bytes) for x in got)


def test_write_checks_its_arguments(tmp_path):
    with pytest.raises(ValueError):
        write_pcapng(tmp_path / "x", [("a", "")], [(1, 0, b"x")])
    with pytest.raises(ValueError):
        write_pcapng(tmp_path / "x", [("a", "")], [(0, -1, b"x")])
    with pytest.raises(ValueError):
        write_pcapng(tmp_path / "x", [("a", "")], [], tsresol=200)


def test_cli_decode_reads_pcapng(tmp_path, capsys):
    from mrc.cli import main

    _write(tmp_path / "a.pcapng")
    assert main(["pcap", "decode", str(tmp_path / "a.pcapng")]) == 0
    out = capsys.readouterr().out
    assert "[p0.t0.0:up1 at" in out and "[h3:nic0 at" in out and "6 packets, 6 decoded, 0 malformed" in out
    assert main(["pcap", "decode", "--json", str(tmp_path / "a.pcapng")]) == 0
    assert '"interface": "h3:nic0"' in capsys.readouterr().out


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed (Debian package `tshark`)")
def test_tshark_reads_interfaces_and_times(tmp_path):
    ifaces, pk = _write(tmp_path / "a.pcapng", 12)
    res = subprocess.run([TSHARK, "-r", str(tmp_path / "a.pcapng"), "-T", "fields", "-e", "frame.interface_name",
                          "-e", "frame.time_epoch"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    rows = [line.split("\t") for line in res.stdout.strip().splitlines()]
    assert [r[0] for r in rows] == [ifaces[i][0] for i, _, _ in pk]
    assert [round(float(r[1]) * 1e9) for r in rows] == [t // 1000 for _, t, _ in pk]  # Wireshark keeps ns


# --- every block type of the format, and hostile lengths (read without scapy, bounded) -------------------

def _blk(kind: int, body: bytes, end: str = "<") -> bytes:
    body += b"\0" * (-len(body) % 4)
    return struct.pack(end + "II", kind, 12 + len(body)) + body + struct.pack(end + "I", 12 + len(body))


def _shb(end: str = "<") -> bytes:
    return _blk(0x0A0D0D0A, struct.pack(end + "IHHq", 0x1A2B3C4D, 1, 0, -1), end)


def _idb(end: str = "<", snaplen: int = 262144, opts: bytes = b"", linktype: int = 101) -> bytes:
    return _blk(1, struct.pack(end + "HHI", linktype, 0, snaplen) + opts, end)


def _epb(data: bytes, iface: int = 0, ticks: int = 0, end: str = "<", caplen: int | None = None) -> bytes:
    n = len(data) if caplen is None else caplen
    return _blk(6, struct.pack(end + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, n, len(data)) + data, end)


def _pkt(k: int = 0) -> bytes:
    return samples()[k][1]


def _read(tmp_path, raw: bytes, name: str = "x.pcapng"):
    p = tmp_path / name
    p.write_bytes(raw)
    return list(read_packets(p)), p


def test_a_simple_packet_block_is_read_with_no_time(tmp_path):
    got, path = _read(tmp_path, _shb() + _idb() + _blk(3, struct.pack("<I", len(_pkt())) + _pkt()))
    assert [(i, t, d) for i, t, d, _ in got] == [(0, None, _pkt())]
    from mrc.cli import main

    assert main(["pcap", "decode", str(path)]) == 0
    if TSHARK is not None:
        res = subprocess.run([TSHARK, "-r", str(path)], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and len(res.stdout.strip().splitlines()) == 1, res.stderr


def test_every_block_type_is_read_or_skipped(tmp_path):
    """Name Resolution, Interface Statistics, systemd Journal, Decryption Secrets, Custom, local-use and
    unknown blocks carry no packet and are skipped; obsolete Packet Blocks are read."""
    skipped = b"".join(_blk(k, b"\0" * 8) for k in (4, 5, 7, 8, 9, 0x0A, 0x0BAD, 0x40000BAD, 0x80000001, 0x1234))
    pb = _blk(2, struct.pack("<HHIIII", 0, 0, 0, 1000, len(_pkt(1)), len(_pkt(1))) + _pkt(1))
    got, _ = _read(tmp_path, _shb() + _idb() + skipped + _epb(_pkt(0), ticks=5) + pb + skipped)
    assert [(t, d) for _, t, d, _ in got] == [(5000, _pkt(0)), (1_000_000, _pkt(1))]


def test_big_endian_sections_resolutions_and_offsets(tmp_path):
    opts2 = struct.pack(">HH", 9, 1) + bytes([0x80 | 10]) + b"\0" * 3  # if_tsresol 2^-10 s
    opts2 += struct.pack(">HHq", 14, 8, 100) + struct.pack(">HH", 0, 0)  # if_tsoffset 100 s
    raw = _shb() + _idb() + _epb(_pkt(0), ticks=1) + _shb(">") + _idb(">", opts=opts2) + _epb(_pkt(1), 0, 1024, ">")
    got, _ = _read(tmp_path, raw)
    assert [(t, d) for _, t, d, _ in got] == [(1000, _pkt(0)), (101 * 10**9, _pkt(1))]


def test_hostile_lengths_are_refused_with_the_block_and_never_allocated(tmp_path):
    import tracemalloc

    base = _shb() + _idb()
    cases = {
        "caplen_4g": (base + _epb(_pkt(), caplen=0xFFFFFFFF), "captured_packet_length", "block 2 (Enhanced Packet)"),
        "block_4g": (base + struct.pack("<II", 6, 0xFFFFFFF0) + b"\0" * 64, "block_total_length", "block 2"),
        "caplen_past_block": (base + _epb(_pkt(), caplen=len(_pkt()) + 8), "captured_packet_length", "block 2"),
        "above_snaplen": (_shb() + _idb(snaplen=64) + _epb(_pkt()), "captured_packet_length", "snap length 64"),
        "no_interface": (_shb() + _epb(_pkt()), "interface_id", "block 1"),
        "interface_of_an_old_section": (base + _shb() + _epb(_pkt()), "interface_id", "block 3"),
        "short_epb": (base + _blk(6, b"\0" * 8), "block", "block 2"),
        "odd_length": (base + struct.pack("<II", 6, 13) + b"\0" * 13, "block_total_length", "block 2"),
        "option_past_block": (_shb() + _idb(opts=struct.pack("<HH", 2, 400)) + _epb(_pkt()), "option_length",
                              "block 1 (Interface Description)"),
        "version_2": (_blk(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 2, 0, -1)), "major_version", "block 0"),
    }
    for name, (raw, field, where) in cases.items():
        tracemalloc.start()
        got, _ = _read(tmp_path, raw, f"{name}.pcapng")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert got and isinstance(got[-1][2], DecodeError), name
        err = got[-1][2]
        assert err.field == field and where in str(err), (name, str(err))
        assert peak < 4 << 20, (name, peak)


def test_mutated_files_never_raise(tmp_path):
    """Any byte after the magic of a good file changed: the reader yields records, never raises."""
    raw = bytearray(_shb() + _idb() + _epb(_pkt(0), ticks=3) + _blk(3, struct.pack("<I", len(_pkt(1))) + _pkt(1))
                    + _blk(5, b"\0" * 8))
    rng = __import__("random").Random(7)
    p = tmp_path / "m.pcapng"
    for _ in range(400):
        m = bytearray(raw)
        for _ in range(rng.randint(1, 3)):
            m[rng.randrange(4, len(m))] = rng.choice([0, 0xFF, rng.randrange(256)])  # the magic picks the format
        p.write_bytes(bytes(m))
        for _i, t, data, _iface in read_packets(p):
            assert isinstance(data, (bytes, DecodeError)) and (t is None or isinstance(t, int))
