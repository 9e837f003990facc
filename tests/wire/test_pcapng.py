"""pcapng: what we write, scapy's reader and tshark read back (interfaces, picosecond times); malformed
files end in a DecodeError record, never a crash; `mrc pcap decode` reads pcapng."""
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
def test_roundtrip_through_scapys_reader(tmp_path, tsresol):
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
