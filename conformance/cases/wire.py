"""Wire cases: header layout and opcodes, RETH / TSETH, reserved bits, ICRC, EV encodings, SRv6 carriers,
and a golden SACK.

Everything the IUT emits is decoded twice, by the compiled codec and by the
scapy layers (independent decoders that must agree), and its ICRC is checked
with `mrc.conformance.packets.icrc_ok` (written here from IBTA Annex A17 over
``zlib.crc32``, independent of the codec's).
"""
from __future__ import annotations

import functools

import numpy as np

from mrc.wire import EvMode
from mrc.wire.constants import Opcode

from ..adapter import EndpointConfig, EvFieldDef
from ..case import MUST, SHOULD, case
from ..packets import icrc_ok, with_icrc, without_udp_checksum
from ..scenario import drop, trimmed
from .common import MS, US, evs, first_seen, pattern, post, requester_pair, responder_pair, sends_done

CASES: list = []


def _exchange(t, complete: bool = True):
    """The IUT as requester (to tester "rsp") and as responder (from tester "snd"), with a loss and a trim
    each way; returns every packet the IUT sent (`complete`: insist that both transfers finish)."""
    sc = t.scenario()
    req = sc.add("req", EndpointConfig(evs=evs(2, 8), mtu=1024), iut=True)
    rsp = sc.add("rsp", EndpointConfig(evs=evs(2, 8, 1), mtu=1024), iut=False)
    snd = sc.add("snd", EndpointConfig(evs=evs(2, 8, 2), mtu=1024), iut=False)
    rcv = sc.add("rcv", EndpointConfig(evs=evs(2, 8, 3), mtu=1024), iut=True)
    sc.connect(req, rsp)
    sc.connect(snd, rcv)
    hit = set()

    def route(sc, p):
        key = (p.src, p.psn) if p.is_data else None
        if key in {("req", 3), ("snd", 3)} and key not in hit:
            hit.add(key)
            return drop(p)
        if key in {("req", 6), ("snd", 6)} and key not in hit:
            hit.add(key)
            return trimmed(p)
        return None

    sc.route = route
    r1, r2 = rsp.ep.reg_mr(1 << 16), rcv.ep.reg_mr(1 << 16)
    rcv.ep.post_recv(1)
    post(sc, req, 1, pattern(12 * 1024), r1)
    post(sc, snd, 1, pattern(12 * 1024, 1), r2, imm=0x55)
    done = sc.run(lambda: req.sends("send") and snd.sends("send"), max_ps=5 * MS)
    t.expect(done or not complete, "the transfers did not complete")
    # then the rarer headers: port status updates and their responses (ERTH / EETH) both ways, and a
    # write past the end of the region, refused with a transport ACK carrying a NAK (AETH)
    sc.set_port(req, 2, False)
    sc.set_port(snd, 2, False)
    sc.run_for(20 * US)
    post(sc, snd, 2, pattern(64, 2), r2, (1 << 16) - 32)
    sc.run_for(20 * US)
    out = [p for p in sc.log if p.src in ("req", "rcv")]
    kinds = {p.kind for p in out}
    t.note("kinds_sent", sorted(kinds))  # the headers this run could check
    t.expect(not complete or {"data", "sack"} <= kinds, f"the IUT sent only {sorted(kinds)}")
    return out


@case("wire.opcode-sequence", MUST, registry=CASES,
      ref="notes §2.3 (MRC opcodes 0xC6-0xCB: WRITE_FIRST / MIDDLE / LAST / LAST_IMM / ONLY / ONLY_IMM)",
      behaviour="A message of one packet is WRITE_ONLY (ONLY_IMM with immediate); a longer one is WRITE_FIRST, "
                "WRITE_MIDDLE..., then WRITE_LAST (LAST_IMM).",
      failure="the opcodes do not follow the message structure",
      network="lossless", mutants=["every-packet-only"])
def _opcodes(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=1024))
    rsp.ep.post_recv(9)
    post(sc, req, 1, pattern(3 * 1024), region)
    post(sc, req, 2, pattern(100, 1), region, 4096)
    post(sc, req, 3, pattern(1500, 2), region, 8192, imm=0x1234)
    t.expect(sc.run(sends_done(req, 3), max_ps=5 * MS), "the writes did not complete")
    msgs: dict = {}
    for p in first_seen(sc.data_sent(req)):
        msgs.setdefault(p["msn"], []).append(Opcode(p.opcode).name.replace("MRC_WRITE_", ""))
    got = [msgs[m] for m in sorted(msgs, key=lambda m: (m - min(msgs)) & 0xFFFF)]
    want = [["FIRST", "MIDDLE", "LAST"], ["ONLY"], ["FIRST", "LAST_IMM"]]
    t.expect(got == want, f"opcodes per message {got}, expected {want}")


@case("wire.reth-every-packet", MUST, registry=CASES,
      ref="notes §2.4 (RETH 'in every data packet', 'virtual address advanced by one Path MTU for each "
          "successive packet'); §1.2 (OAI: 'all MRC packets include their final memory address')",
      behaviour="Every data packet carries a RETH with the target R_Key and the address of its own first "
                "byte: the write's address plus MTU x its index.",
      failure="a data packet's RETH does not give its own address",
      network="lossless", mutants=["reth-va-fixed"])
def _reth(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=1024))
    post(sc, req, 1, pattern(4 * 1024), region, 0x100)
    t.expect(sc.run(sends_done(req, 1), max_ps=5 * MS), "the write did not complete")
    pkts = first_seen(sc.data_sent(req))
    t.expect(len(pkts) == 4, f"{len(pkts)} packets for a 4 KiB write at MTU 1 KiB")
    got = [(p["va"] - region.va, p["rkey"]) for p in pkts]
    want = [(0x100 + 1024 * k, region.rkey) for k in range(4)]
    t.expect(got == want, f"(offset, rkey) per packet {[(hex(a), hex(b)) for a, b in got]}, expected "
                          f"{[(hex(a), hex(b)) for a, b in want]}")
    bad = [p.psn for p in pkts if p["dma_len"] < p["payload_len"]]
    t.expect(not bad, f"RETH DMA length shorter than the payload on PSN(s) {bad}")


@case("wire.tseth-on-data", SHOULD, registry=CASES,
      ref="notes §2.4 (TSETH: 16-bit transmit timestamp 'reflected in the SACK's CC_STATE'; BTH ts bit); §3.5 "
          "(NSCC RTT from the reflected timestamp)",
      behaviour="Data packets and probes carry a TSETH (BTH ts = 1) so SACKs can reflect their timestamp.",
      failure="data packets or probes without TSETH",
      network="one loss and one trim each way", mutants=["no-tseth"])
def _tseth(t):
    pkts = [p for p in _exchange(t) if p.kind in ("data", "probe")]
    bad = [(p.kind, p.psn) for p in pkts if not p["ts"] or p["ftype"] != 1]
    t.expect(not bad, f"{len(bad)} of {len(pkts)} data / probe packets without TSETH (ts = 1, ftype = 1): {bad[:5]}")


@case("wire.decoders-agree", MUST, registry=CASES,
      ref="notes §2.4 (header tables 6-3...6-9, 7-10...7-23: field layouts, reserved bits); IBTA (reserved "
          "fields are sent as 0)",
      behaviour="Every packet the IUT sends decodes identically with two independent decoders (the scapy layers "
                "and the compiled codec), with every reserved field zero.",
      failure="a packet's layout is not the MRC layout",
      network="one loss and one trim each way, then a port down each way and a write past the region's end",
      mutants=["reserved-bits"])
def _decoders(t):
    from scapy.layers.inet6 import IPv6

    from mrc.wire import layers as L

    skip = {"port", "trim"}
    for p in _exchange(t):
        t.expect(p.error is None, f"{p} does not decode: {p.error}")
        sp = IPv6(p.data)
        row, _, payload = L.parse(sp, ev_mode=EvMode[p.ev_mode])
        diff = [n for n in row.dtype.names if n not in skip and int(row[n]) != int(p.pkt[n])]
        t.expect(not diff, f"{p}: scapy and the codec disagree on {diff}")
        t.expect(payload == p.payload, f"{p}: scapy and the codec disagree on the payload")
        layer = sp.getlayer(L.BTH)
        while layer is not None and layer.name != "Raw":
            bad = {f.name: layer.getfieldval(f.name) for f in layer.fields_desc
                   if (f.name.startswith("resv") or (layer.name == "BTH" and f.name in ("r", "tver")))
                   and _nonzero(layer.getfieldval(f.name))}
            t.expect(not bad, f"{p}: reserved field(s) of {layer.name} not zero: {bad}")
            layer = layer.payload if layer.payload.name != "NoPayload" else None


def _nonzero(value) -> bool:
    return any(value) if isinstance(value, (bytes, bytearray)) else bool(value)


@case("wire.icrc-valid", MUST, registry=CASES,
      ref="notes §2.1 (RoCEv2 stack ending in the ICRC); IBTA Annex A17 (ICRC over the masked IP / UDP / BTH "
          "and the rest)",
      behaviour="Every packet the IUT sends carries the right ICRC.",
      failure="a packet with a wrong ICRC",
      network="one loss and one trim each way", mutants=["wrong-icrc"])
def _icrc(t):
    out = _exchange(t, complete=False)
    bad = [p for p in out if not icrc_ok(p.data) and p.kind != "malformed"]
    t.expect(not bad, f"{len(bad)} of {len(out)} packets with a wrong ICRC: {bad[:3]}")


@case("wire.icrc-checked", MUST, registry=CASES,
      ref="IBTA Annex A17 (a packet whose ICRC does not match is discarded); notes §2.1",
      behaviour="A data packet whose ICRC does not match (bad ICRC, or a payload byte changed in flight) is "
                "discarded: not placed, not acknowledged; the intact packet is accepted.",
      failure="a packet with a bad ICRC was accepted",
      network="crafted requester; the damaged packets carry UDP checksum 0", mutants=["no-icrc-check"])
def _icrc_checked(t):
    sc, rsp, req, c, region = responder_pair(t)
    good = c.data(100, pattern(512), va=region.va, rkey=region.rkey, ev=0x0A0B0001)
    # UDP checksum 0 ("not computed"): only the ICRC can tell these packets are damaged
    corrupt = [without_udp_checksum(good[:-1] + bytes([good[-1] ^ 0x01])),
               without_udp_checksum(good[:-100] + bytes([good[-100] ^ 0x80]) + good[-99:])]
    for bad in corrupt:
        sc.inject(rsp, bad)
        out = sc.pull(rsp)
        sc.advance(sc.now + 10 * US)
        out += sc.pull(rsp)
        acks = [p for p in out if p.kind in ("sack", "ack", "nack")]
        t.expect(not acks, f"a packet with a bad ICRC was answered: {acks[0]}" if acks else "")
        t.expect(rsp.ep.read_mr(region) == bytes(region.length), "a packet with a bad ICRC was placed")
    sc.inject(rsp, good)
    out = [p for p in sc.pull(rsp) if p.kind == "sack"]
    t.expect(out and out[-1]["cack_psn"] == 100, "the intact packet was not acknowledged")
    t.expect(rsp.ep.read_mr(region)[:512] == pattern(512), "the intact packet was not placed")


def _ev_encoding(t):
    mode = t.params["mode"]
    ev_list = evs(2, 8, 0, mode)
    sc, req, rsp, region = requester_pair(t, iut=dict(evs=ev_list, ev_mode=mode, mtu=1024))
    post(sc, req, 1, pattern(16 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=5 * MS), "the write did not complete")
    allowed = {ev for ev, _ in ev_list}
    seen = set()
    for p in sc.data_sent(req):
        sport = int.from_bytes(p.data[40:42], "big")
        flow = int.from_bytes(p.data[1:4], "big") & 0xFFFFF
        ev = sport if mode == "UDP" else (sport << 16) | (flow & 0xFFFF)
        seen.add(ev)
    t.expect(seen <= allowed, f"EVs on the wire {sorted(hex(e) for e in seen - allowed)[:4]} are not in the profile "
                              f"(read per {mode}: " + ("UDP source port" if mode == "UDP" else
                                                     "UDP source port << 16 | flow label & 0xffff") + ")")
    t.expect(len(seen) >= 8, f"only {len(seen)} distinct EVs over 16 packets")


for _mode, _need in (("STEV", ()), ("UDP", ("ev_mode_udp",))):
    case(f"wire.ev-encoding[{_mode.lower()}]", MUST, registry=CASES,
         ref="notes §2.2 (mrc_ctl.h EV format modes: STEV 'EV bits spread across IPv6 flow label + UDP src "
             "port' (EMU: src_port[15:0] || flow_lbl[15:0]); UDP 'EV carried entirely in UDP src port')",
         behaviour=f"In {_mode} mode the EV is carried " + ("in the UDP source port (16 bits)." if _mode == "UDP" else
                                                            "as UDP source port (bits 31-16) and the low 16 bits of "
                                                            "the IPv6 flow label (bits 15-0)."),
         failure=f"the EV is not carried as the {_mode} format says",
         network="lossless", mutants=["ev-halves-swapped"], needs=_need, params={"mode": _mode})(_ev_encoding)


@functools.lru_cache(maxsize=1)
def _srv6_topology():
    from mrc.fabric import from_preset

    return from_preset("mrc-2plane-64")


def _srv6_cfg(topo, src: int, dst: int, side: int) -> dict:
    prof = topo.srv6_profile(src, dst)
    fields = [EvFieldDef(f["width"], f["init_val"], f["min_val"], f["max_val"], f["mask"]) for f in prof["fields"]]
    raws = [(topo.make_ev(p, c), p + 1) for c in range(topo.spec.spines) for p in range(topo.spec.planes)]
    return dict(ev_mode="SRV6", ev_format=prof["fmt_widths"], ev_fields=fields, evs=raws, mtu=1024)


@case("wire.srv6-carrier", MUST, registry=CASES,
      ref="notes §2.1 (SRv6 mode: IPv6-in-IPv6, outer DA = uSID path); §5 (uN: match locator + uSID, shift "
          "left 16 bits, /48 static lookup); §2.2 (SRv6 EV format: 32-bit locator + 16-bit uSIDs)",
      behaviour="In SRv6 mode every data packet is IPv6-in-IPv6 whose outer destination is the uSID carrier of "
                "its EV (the profile's expansion); shifted hop by hop through the fabric's static tables it "
                "reaches the destination host, on the plane of the packet's port.",
      failure="the SRv6 carrier does not route the packet to its destination",
      network="lossless; a 2-plane leaf-spine fabric (mrc-2plane-64), host 0 to host 63",
      mutants=["srv6-carrier-reversed"], needs=["ev_mode_srv6", "ev_fields"])
def _srv6(t):
    topo = _srv6_topology()
    src, dst = 0, topo.n_hosts - 1
    sc, req, rsp, region = requester_pair(t, iut=_srv6_cfg(topo, src, dst, 0), tester=_srv6_cfg(topo, dst, src, 1))
    post(sc, req, 1, pattern(16 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=5 * MS), "the write did not complete")
    for p in sc.data_sent(req):
        n = p.net
        t.expect(int(n["ev_mode"]) == int(EvMode.SRV6), f"{p}: not IPv6-in-IPv6")
        carrier = bytes(n["outer_dst"])
        want = topo.carrier(src, dst, p.ev).packed
        t.expect(carrier == want, f"{p}: outer destination {carrier.hex()} is not the carrier {want.hex()} of "
                                  f"EV {p.ev:#x}")
        ports = topo.srv6_route(src, carrier)
        nodes = topo.path_nodes(ports)
        t.expect(nodes[-1] == dst, f"{p}: the carrier leads to node {nodes[-1]}, not host {dst}")
        t.expect(int(topo.port[ports[0]]["plane"]) == p.port - 1, f"{p}: sent on port {p.port} but its carrier "
                                                                 f"is on plane {int(topo.port[ports[0]]['plane'])}")
        t.expect(bytes(n["dst"]) == rsp.address, f"{p}: the inner destination is not the responder")


def golden_sack(*, src: bytes, dst: bytes, dqpn: int, spdcid: int, dpdcid: int, entropy: int, ts: int) -> bytes:
    """The SACK 'PSNs 0-3 and 5-7 received, triggered by PSN 7', written out byte by byte from the notes'
    layouts (mrc-public-notes 2.1 stack, 2.2 STEV EV, 2.3 opcode, 2.4 BTH / SETH / CC_STATE; RFC 8200 IPv6,
    RFC 768 UDP), not from any encoder of the project. The ICRC (IBTA Annex A17) is the suite's own
    `packets.icrc_of`; the UDP checksum (RFC 768 / 1071) is computed here."""
    own_ev = 0x0B0B0001  # the SACK's own path: STEV puts EV bits 31-16 in the UDP source port, 15-0 in the flow label
    ipv6 = bytes([
        0x6B, 0xA0, 0x00, 0x01,  # version 6 | traffic class 0xBA (DSCP 46 control class << 2 | ECN ECT(0)) | flow label 0x00001 (EV bits 15-0)
        0x00, 0x3C,              # payload length 60 = UDP 8 + BTH 12 + SETH 28 + CC_STATE 8 + ICRC 4
        0x11,                    # next header 17: UDP
        0x40,                    # hop limit 64
    ]) + src + dst               # source: the responder; destination: the requester
    udp = bytes([
        0x0B, 0x0B,              # source port 0x0B0B: EV bits 31-16 (notes 2.2, STEV)
        0x12, 0xB7,              # destination port 4791: RoCEv2 (notes 2.1)
        0x00, 0x3C,              # length 60
        0x00, 0x00,              # checksum: computed below, over the pseudo-header and everything after
    ])
    bth = bytes([
        0xDC,                    # opcode RELIABILITY_SACK (notes 2.3)
        0x00,                    # se 0, mig 0, padcnt 0, tver 0
        0xFF, 0xFF,              # pkey
        0x00,                    # resv8a
    ]) + dqpn.to_bytes(3, "big") + bytes([  # destination QP: the requester's
        0x00,                    # A (ack-req) 0 | r 0 | rtx 0 | ts 0 | reserved (notes 2.4, BTH byte 8)
        0x00, 0x00, 0x07,        # PSN 7: the triggering packet
    ])
    seth = bytes([
        0x00, 0x00,              # type 0, next 0, m 00 NONE, reserved, pr 0 (notes 2.4 SETH bytes 0-1)
        0x00, 0x04,              # ack_psn_offset +4: ack_psn = cack_psn + 4 = 7
    ]) + entropy.to_bytes(4, "big") + spdcid.to_bytes(2, "big") + dpdcid.to_bytes(2, "big") + bytes([
        0x00, 0x00, 0x00, 0x03,  # reserved 8 | cack_psn 3: PSNs 0..3 received
        0x00,                    # cc_type 0 | cc_flags 0
        0x08,                    # mpr 8 (units of 128 PSNs)
        0x00, 0x01,              # sack_offset +1: bit b is PSN 3 + 1 + b
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0E,  # sack_bitmap: bits 1, 2, 3 = PSNs 5, 6, 7; bit 0 (PSN 4) clear
    ])
    cc_state = ts.to_bytes(2, "big") + bytes([  # tx_timestamp: PSN 7's TSETH timestamp, reflected
        0x00, 0x00,              # reserved 1 | ooo_count 0
        0x00,                    # r_c 0 | rcv_cwnd_pen 0
        0x00, 0x00, 0x00,        # rcvd_bytes 0
    ])
    data = ipv6 + udp + bth + seth + cc_state + b"\0\0\0\0"  # ICRC placeholder
    assert len(data) == 40 + 60 and (own_ev >> 16, own_ev & 0xFFFF) == (0x0B0B, 0x0001)
    data = with_icrc(data)
    pseudo = src + dst + (60).to_bytes(4, "big") + b"\0\0\0\x11"
    body = data[40:]
    total = sum(int.from_bytes((pseudo + body)[k:k + 2], "big") for k in range(0, len(pseudo + body), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    csum = (~total & 0xFFFF) or 0xFFFF
    return data[:46] + csum.to_bytes(2, "big") + data[48:]


@case("wire.golden-sack", MUST, registry=CASES,
      ref="notes §2.4 (BTH byte 8 flags; SETH table: ack_psn_offset, entropy, cack_psn, mpr, sack_offset, 64-bit "
          "sack_bitmap; bit b = PSN cack + sack_offset + b; CC_STATE); §2.1-2.3 (IPv6 / UDP 4791 / BTH stack, "
          "STEV EV, opcode 0xDC); §3.6; IBTA Annex A17 (ICRC)",
      behaviour="A SACK whose every byte is written out by hand from the notes' header tables, saying 'PSNs 0-3 "
                "and 5-7 received', makes the requester retransmit PSN 4 and nothing else.",
      failure="the requester misreads the SACK layout",
      network="crafted responder; one SACK (golden bytes), nothing else",
      mutants=["sack-bitmap-reversed", "go-back-n", "no-rtx-flag"])
def _golden_sack(t):
    from scapy.layers.inet6 import IPv6

    from mrc.wire.layers import parse

    sc = t.scenario()
    req = sc.add("req", EndpointConfig(evs=evs(2, 4), mtu=1024, timeout=12), iut=True)
    rsp = sc.crafted("rsp")
    sc.connect(req, rsp)
    req.ep.post_write(1, pattern(8 * 1024), remote_va=0x1000, rkey=0x5, imm=None, now=0)
    data = [p for p in sc.pull(req) if p.is_data]
    t.expect([p.psn for p in data] == list(range(8)), f"PSNs sent {[p.psn for p in data]}, expected 0..7")
    last = data[-1]
    wire = golden_sack(src=rsp.address, dst=req.address, dqpn=req.qpn, spdcid=rsp.qpn & 0xFFFF,
                       dpdcid=req.qpn & 0xFFFF, entropy=last.ev, ts=last["tx_timestamp"])
    t.expect(icrc_ok(wire), "tester problem: the golden SACK has a bad ICRC")
    # cross-check against an independent decoder (scapy's dissection): a tester problem if they disagree
    pkt, _, _ = parse(IPv6(wire))
    seen = {k: int(pkt[k]) for k in ("opcode", "psn", "cack_psn", "ack_psn_offset", "sack_offset", "sack_bitmap",
                                      "entropy", "m", "pr", "mpr")}
    want = {"opcode": 0xDC, "psn": 7, "cack_psn": 3, "ack_psn_offset": 4, "sack_offset": 1, "sack_bitmap": 0xE,
            "entropy": last.ev, "m": 0, "pr": 0, "mpr": 8}
    t.expect(seen == want, f"tester problem: the scapy layers read the golden SACK as {seen}")
    sc.advance(last.time + 8 * US)
    sc.inject(req, wire)
    out = []
    for _ in range(400):
        out += [p for p in sc.pull(req) if p.is_data]
        d = req.ep.next_deadline()
        if d is None or d > 200 * US:
            break
        sc.advance(d)
    psns = sorted({p.psn for p in out})
    t.expect(psns == [4], f"retransmitted PSNs {psns} within 200 us, expected [4]")
    t.expect(np.all([p["rtx"] == 1 for p in out]), "a retransmission without the rtx flag")
