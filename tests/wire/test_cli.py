"""`mrc pcap samples` and `mrc pcap decode`, and the pcap reader."""
from __future__ import annotations

import json
import struct

from mrc.cli import main
from mrc.wire.pcap import read_pcap, write_pcap
from mrc.wire.samples import samples


def test_samples_then_decode(tmp_path, capsys):
    # In-process (no subprocess). As the first test of tests/wire it loads the compiled codec:
    # with a cold numba cache that is the codec's one-time compile (~14 s on the shared 2-core
    # machine), whichever test comes first; with a warm cache the test takes ~0.3 s.
    f = tmp_path / "s.pcap"
    assert main(["pcap", "samples", str(f)]) == 0
    n = len(samples())
    assert f"wrote {n} packets" in capsys.readouterr().out
    assert main(["pcap", "decode", str(f)]) == 0
    out = capsys.readouterr().out
    assert f"{n} packets, {n} decoded, 0 malformed" in out
    for word in ("MRC_RELIABILITY_SACK", "NO_PKT_BUFFER", "uSIDs 0101 0202 0103 0fe0", "SRH    segleft=1",
                 "TRIMMED_LASTHOP", "EV_PROBE", "192.0.2.1 -> 198.51.100.1"):
        assert word in out, word


def test_decode_json_lines(tmp_path, capsys):
    f = tmp_path / "s.pcap"
    main(["pcap", "samples", str(f)])
    capsys.readouterr()
    main(["pcap", "decode", "--json", str(f)])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == len(samples())
    sack = next(r for r in rows if r["opcode_name"] == "MRC_RELIABILITY_SACK")
    assert sack["SETH"]["sack_bitmap"] == 0xF0F0_0000_0000_000B and sack["CC_STATE"]["rcvd_bytes"] == 4096
    assert {r["ev_mode"] for r in rows} == {"STEV", "UDP", "SRV6"}
    assert any(r["trim"] == "TRIMMED" for r in rows)


def test_a_malformed_packet_is_reported_and_decoding_continues(tmp_path, capsys):
    good = [data for _, data in samples()[:3]]
    bad = bytearray(good[1])
    bad[60] ^= 0xFF
    f = tmp_path / "m.pcap"
    write_pcap(f, [good[0], bytes(bad), good[2], b"\x60\x00"])
    assert main(["pcap", "decode", str(f)]) == 1
    out = capsys.readouterr().out
    assert "#1   malformed: UDP.chksum" in out
    assert "#3   malformed: IPv6.plen" in out
    assert "4 packets, 2 decoded, 2 malformed" in out


def test_read_pcap_handles_vlan_raw_ip_and_microseconds(tmp_path):
    ip = samples()[7][1]
    f = tmp_path / "v.pcap"
    frame = b"\x02" * 12 + b"\x81\x00\x00\x05" + b"\x86\xdd" + ip + b"\0\0\0\0"  # VLAN tag + FCS-like trailer
    with open(f, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        fh.write(struct.pack("<IIII", 1, 5, len(frame), len(frame)) + frame)
    [(i, t, data)] = list(read_pcap(f))
    assert data == ip and t == 1_000_005_000
    g = tmp_path / "r.pcap"
    with open(g, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101))
        fh.write(struct.pack("<IIII", 0, 0, len(ip), len(ip)) + ip)
    assert list(read_pcap(g))[0][2] == ip


def test_decode_of_a_non_pcap_file_is_a_clean_error(tmp_path, capsys):
    f = tmp_path / "x.pcap"
    f.write_bytes(b"not a pcap file at all, clearly")
    assert main(["pcap", "decode", str(f)]) == 2
    assert "pcap.magic" in capsys.readouterr().err


def test_read_pcap_refuses_a_record_longer_than_the_snap_length(tmp_path):
    import struct

    from mrc.wire.errors import DecodeError

    f = tmp_path / "huge.pcap"
    write_pcap(f, [bytes(60)])
    with open(f, "ab") as out:  # a second record claiming ~4 GiB
        out.write(struct.pack("<IIII", 0, 0, 0xFFFFFFF0, 0xFFFFFFF0) + bytes(16))
    records = list(read_pcap(f))
    assert len(records) == 2 and not isinstance(records[0][2], DecodeError)
    err = records[1][2]
    assert isinstance(err, DecodeError) and "record 1" in str(err) and "incl_len" in str(err)
