"""Packet capture: the pcapng of a run holds exactly the packets the engine put on the captured wires,
encoded by mrc.wire as on that wire; tshark and scapy read it; the window and the budget hold."""
from __future__ import annotations

import json
import shutil
import subprocess
from importlib import resources

import numpy as np
import pytest

from mrc.emulator import capture, results
from mrc.emulator import state as ST
from mrc.errors import ConfigError
from mrc.fabric import Topology, resolve
from mrc.units import US
from mrc.wire.codec import decode
from mrc.wire.constants import EvMode, Trim
from mrc.wire.pcapng import read_packets
from tests.emulator.helpers import SMALL_LS, make, run

TSHARK = shutil.which("tshark")
LUA = str(resources.files("mrc.wire") / "dissector" / "mrc.lua")
TOPO2 = {**SMALL_LS, "planes": 2}


def _incast_with_failure(capture_t, **top):
    """MRC on 2 planes: a 6 -> 1 incast (trims at the last hop), a cross flow, a link down mid-run."""
    flows = [{"src": s, "dst": 0, "size_bytes": 200_000} for s in range(4, 10)] + [
        {"src": 1, "dst": 14, "size_bytes": 400_000}]
    return make(topology=TOPO2, transport={"name": "mrc"}, workload={"kind": "flows", "flows": flows},
                switch={"trim_header_bytes": 256},  # MRC's (the leaf-spine default, htsim's 64, cuts MRC headers)
                failures=[{"kind": "link-down", "at_us": 10, "link": ["p0.t0.1", "p0.t1.2"]}],
                metrics_={"trace_flows": list(range(7)), "trace_capacity": 2_000_000}, capture=capture_t, **top)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    out = tmp_path_factory.mktemp("cap")
    data = _incast_with_failure({"ports": ["h4", "p0.t0.0:d0", "p*.t1.2:*"]})
    r, s, _ = run(data)
    results.write(r, out, plots_too=False)
    return r, out


def test_select_ports_names_patterns_and_errors():
    topo = Topology(resolve(TOPO2, where="topology"))
    assert capture.select_ports(topo, ["p0.t0.0:d0"]) == capture.select_ports(topo, ["p0.t0.0:down0"])
    assert capture.select_ports(topo, ["h3"]) == (6, 7)  # both NIC ports
    assert capture.select_ports(topo, ["h3:nic1"]) == (7,)
    t1 = capture.select_ports(topo, ["p1.t1.*"])
    assert len(t1) == 4 * 4 and all(topo.port_name(q).startswith("p1.t1.") for q in t1)
    ups = capture.select_ports(topo, ["p*.t0.*:up*"])
    assert len(ups) == 2 * 4 * 4 and all(":up" in topo.port_name(q) for q in ups)
    assert capture.select_ports(topo, ["p*.t0.*:u1"]) == tuple(q for q in ups if topo.port_name(q).endswith(":up1"))
    assert len(capture.select_ports(topo, ["*"])) == topo.n_ports
    for bad, word in ((["p0.t0.0:d9"], "no such port"), (["p7.t0.*"], "matches no port"), (["x9"], "node"),
                      ([], "a list"), ([3], "port name")):
        with pytest.raises(ConfigError) as e:
            capture.select_ports(topo, bad, "capture.ports")
        assert e.value.key == "capture.ports" and word in str(e.value)


def test_capture_keys_are_checked():
    from mrc.emulator import scenario

    for cap, key in (({"ports": ["h0"], "start_us": 10, "end_us": 5}, "capture.end_us"),
                     ({"ports": ["h0"], "max_packets": 0}, "capture.max_packets"),
                     ({"ports": ["h0"], "bogus": 1}, "capture.bogus"),
                     ({"ports": ["h0"], "start_us": 50}, "capture.start_us"),
                     ({"start_us": 1}, "capture.ports")):
        with pytest.raises(ConfigError) as e:
            scenario.parse(make(capture=cap, duration_us=20.0))
        assert e.value.key == key


def test_off_costs_no_table_and_flags_no_port():
    from mrc.emulator import scenario, sim

    s = sim.Simulation(scenario.parse(make()))
    assert len(s.E.cap) == 0 and not np.any(s.E.port["kind"] & ST.PK_CAPTURE)
    r = s.run()
    assert r.capture == {} and "capture" not in r.summary if hasattr(r, "summary") else True


def test_pcapng_matches_the_engines_own_records(captured):
    r, out = captured
    cap = r.capture["rows"]
    sc = r.scenario
    topo = sc.topo
    assert len(cap) > 500 and r.capture["missed"] == 0
    assert set(np.unique(cap["port"]).tolist()) <= set(sc.capture.ports)
    pk = list(read_packets(out / "capture.pcapng"))
    assert len(pk) == len(cap)
    names = [topo.port_name(int(q)) for q in cap["port"]]
    # every captured packet is a DEPART of the trace (the engine's record of the packet leaving that port)
    tr = r.trace[r.trace["kind"] == ST.TR_DEPART]
    departs = {(int(t), int(q), int(psn), int(op)) for t, q, psn, op in zip(tr["t"], tr["port"], tr["psn"], tr["opcode"])}
    traced = set(range(7))
    trims = ecn = shifted = 0
    for k, (index, t_ns, data, iface) in enumerate(pk):
        row, hdr = cap[k], r.capture["hdr"][k]
        assert iface == names[k] and t_ns == int(row["t"]) // 1000
        assert len(data) == int(row["size"])  # the engine's wire size is the encoding's length
        p, n, _ = decode(data, verify_icrc=row["trim"] == 0)
        assert int(n["ev_mode"]) == int(EvMode.SRV6)
        for f in ("opcode", "psn", "dqpn", "ev"):
            assert int(p[f]) == int(hdr[f]), f
        assert int(p["ecn"]) == int(row["ecn"]) and int(p["dscp"]) == int(row["dscp"])
        assert int(p["trim"]) == int(row["trim"])
        carrier = (int(row["hi"]) << 64 | int(row["lo"])).to_bytes(16, "big")
        assert bytes(n["outer_dst"]) == carrier
        assert bytes(n["src"]) == topo.host_address(int(row["src"]), int(row["plane"])).packed
        assert bytes(n["dst"]) == topo.host_address(int(row["dst"]), int(row["plane"])).packed
        if int(row["flow"]) in traced:
            assert (int(row["t"]), int(row["port"]), int(hdr["psn"]), int(hdr["opcode"])) in departs
        trims += row["trim"] != 0
        ecn += row["ecn"] == 3
        # at a switch the carrier has lost the uSIDs of the switches passed: hop limit one lower each
        if topo.node[int(topo.port[int(row["port"])]["node"])]["kind"] != 0:
            assert int(n["outer_hop_limit"]) < 64
            shifted += 1
    assert trims > 0 and shifted > 0
    tp = cap["trim"] == int(Trim.TRIMMED_LASTHOP)
    assert np.all(cap["size"][tp] == sc.switch.trim_header_bytes)
    summ = json.loads((out / "summary.json").read_text())
    assert summ["capture"]["packets"] == len(cap) and summ["capture"]["ports"] == [topo.port_name(q) for q in sc.capture.ports]


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed (Debian package `tshark`)")
def test_tshark_decodes_the_capture_with_the_dissector(captured):
    r, out = captured
    cap, hdr = r.capture["rows"], r.capture["hdr"]
    res = subprocess.run([TSHARK, "-r", str(out / "capture.pcapng"), "-X", f"lua_script:{LUA}", "-T", "fields",
                          "-e", "frame.interface_name", "-e", "frame.len", "-e", "ipv6.dst", "-e", "mrc.opcode",
                          "-e", "mrc.bth.psn", "-e", "frame.time_epoch", "-E", "separator=/t"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == len(cap)
    topo = r.scenario.topo
    for k, line in enumerate(lines):
        iface, flen, dsts, op, psn, epoch = line.split("\t")
        assert iface == topo.port_name(int(cap["port"][k])) and int(flen) == int(cap["size"][k])
        assert int(op, 0) == int(hdr["opcode"][k])
        carrier = str(__import__("ipaddress").IPv6Address((int(cap["hi"][k]) << 64) | int(cap["lo"][k])))
        assert dsts.split(",")[0] == carrier
        assert int(psn) == int(hdr["psn"][k])  # BTH is whole on every packet, trimmed ones too
        assert abs(float(epoch) * 1e12 - int(cap["t"][k])) < 2e3  # ps in the file; Wireshark keeps ns


# A hand-written leaf-spine (no preset): htsim's 64 B trimmed size, shorter than an MRC packet's headers
HAND_WRITTEN = """name = "hand"
[topology]
kind = "leaf-spine"
hosts_per_leaf = 4
leaves = 2
spines = 2
planes = 2
link_gbps = 100
[transport]
name = "mrc"
[workload]
kind = "incast"
receiver = 0
senders = 7
size_bytes = 200000
"""


@pytest.fixture(scope="module")
def hand_written(tmp_path_factory):
    """`mrc emu run` of the hand-written fabric, every port captured (the trims included)."""
    from mrc.cli import main

    d = tmp_path_factory.mktemp("hand")
    (d / "hand.toml").write_text(HAND_WRITTEN)
    assert main(["emu", "run", str(d / "hand.toml"), "--out", str(d / "o"), "--no-plots", "--no-progress",
                 "--capture", "*"]) == 0
    return d / "o"


def test_a_hand_written_fabric_trims_to_the_headers_and_every_captured_packet_decodes(hand_written, capsys):
    """The trimmed size holds the transport's headers (`trim_headers`: 128 B for MRC) where the preset's 64 B would
    cut them, and `mrc pcap decode` reads every packet of the capture, trimmed ones included."""
    from mrc.cli import main
    from mrc.emulator import scenario
    from mrc.emulator.transports import mrc_setup

    sc = scenario.load(hand_written.parent / "hand.toml")
    assert sc.topo.switch_defaults.trim_header_bytes == 64 < mrc_setup.trim_headers() == 128
    assert sc.switch.trim_header_bytes == 128
    summ = json.loads((hand_written / "summary.json").read_text())
    assert summ["counters"]["trims"] > 0
    capsys.readouterr()
    assert main(["pcap", "decode", str(hand_written / "capture.pcapng")]) == 0
    out = capsys.readouterr().out
    assert "TRIMMED" in out and out.strip().splitlines()[-1].endswith(" 0 malformed"), out[-500:]
    trimmed = 0
    for _, _, data, _ in read_packets(hand_written / "capture.pcapng"):
        p, n, _ = decode(data, verify_icrc=False)
        if p["trim"] != Trim.NONE:  # cut at 128 B: the headers whole, what is left of the payload after them
            trimmed += 1
            assert len(data) == 128 and 0 <= int(p["payload_len"]) <= 4
    assert trimmed > 0


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed (Debian package `tshark`)")
def test_a_hand_written_fabric_capture_decodes_in_tshark(hand_written):
    """tshark with the shipped dissector: no malformed packet, and one MRC tree per packet (no InfiniBand)."""
    res = subprocess.run([TSHARK, "-r", str(hand_written / "capture.pcapng"), "-X", f"lua_script:{LUA}", "-o",
                          "udp.try_heuristic_first:TRUE", "-T", "fields", "-e", "frame.protocols", "-e",
                          "mrc.trimmed", "-e", "_ws.malformed", "-e", "_ws.expert.severity"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    rows = [line.split("\t") for line in res.stdout.splitlines()]
    assert rows and all(r[0].endswith(":mrc") for r in rows), {r[0] for r in rows}
    assert any(r[1] == "1" for r in rows)  # trimmed packets, shown as such
    assert not any(r[2] or r[3] for r in rows), [r for r in rows if r[2] or r[3]][:5]


def test_a_trim_size_below_the_transport_headers_is_refused():
    from mrc.emulator import scenario

    data = make(topology=TOPO2, transport={"name": "mrc"}, switch={"trim_header_bytes": 64})
    with pytest.raises(ConfigError, match="switch.trim_header_bytes") as e:
        scenario.parse(data)
    assert "128" in str(e.value)
    assert scenario.parse(make(topology=TOPO2, transport={"name": "mrc"},
                               switch={"trim_header_bytes": 128})).switch.trim_header_bytes == 128
    # a transport that trims nothing takes any size (the key does not apply), and roce-ecmp's trimmable data
    # (WRITE FIRST: IPv6, UDP, BTH, RETH = 76 B) sets its own floor
    assert scenario.parse(make(switch={"trim_header_bytes": 64})).switch.trim_header_bytes == 64
    with pytest.raises(ConfigError, match="76 bytes"):
        scenario.parse(make(transport={"lossless": False, "trimmable": True},
                            switch={"trim": True, "trim_header_bytes": 64}))


def test_window_and_budget():
    data = _incast_with_failure({"ports": ["*"], "start_us": 5, "end_us": 8, "max_packets": 50})
    r, s, _ = run(data)
    cap = r.capture["rows"]
    assert len(cap) == 50 and r.capture["missed"] > 0 and s["capture"]["missed"] == r.capture["missed"]
    assert cap["t"].min() >= 5 * US and cap["t"].max() < 8 * US
    assert np.all(np.diff(cap["t"]) >= 0)


def test_roce_ecmp_packets_encode_in_udp_mode(tmp_path):
    data = make(topology=TOPO2, workload={"kind": "flows", "flows": [{"src": 0, "dst": 15, "size_bytes": 100_000}]},
                capture={"ports": ["h0", "h15"]})
    r, _, _ = run(data)
    results.write(r, tmp_path, plots_too=False)
    cap = r.capture["rows"]
    pk = list(read_packets(tmp_path / "capture.pcapng"))
    assert len(pk) == len(cap) > 20
    for k, (_, _, data_, _) in enumerate(pk):
        p, n, _ = decode(data_, ev_mode=EvMode.UDP)
        assert len(data_) == int(cap["size"][k])
        assert int(p["ev"]) == int(cap["sport"][k]) and int(n["ev_mode"]) == int(EvMode.UDP)


def test_cli_capture_flag(tmp_path, capsys):
    from mrc.cli import main

    sc = tmp_path / "s.toml"
    sc.write_text('[topology]\nkind = "leaf-spine"\nhosts_per_leaf = 4\nleaves = 4\nspines = 4\nlink_gbps = 100\n'
                  '[transport]\nname = "mrc"\n[workload]\nkind = "flows"\nflows = [{src = 0, dst = 15, size_bytes = 50000}]\n')
    assert main(["emu", "run", str(sc), "--out", str(tmp_path / "o"), "--no-plots", "--capture", "h0,p0.t0.3:d3"]) == 0
    text = capsys.readouterr().out
    assert "captured" in text and (tmp_path / "o" / "capture.pcapng").is_file()
    assert main(["pcap", "decode", str(tmp_path / "o" / "capture.pcapng")]) == 0
    out = capsys.readouterr().out
    assert "[h0:nic0 at" in out and "0 malformed" in out
    assert main(["emu", "run", str(sc), "--out", str(tmp_path / "o2"), "--capture", "nowhere"]) == 2
    assert "capture.ports" in capsys.readouterr().err
