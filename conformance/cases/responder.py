"""Responder cases: SACK contents, NACKs, duplicates, windows, placement and memory protection
(Write-with-Immediate completions and errors are in `wimm`).

The IUT is the responder; the requester is crafted by the case (h2spec
style), so every PSN, EV, timestamp and ECN mark is chosen exactly. A case
that needs an acknowledgement sets the BTH AckReq bit on the packet (IBTA:
the responder must acknowledge it), so no ACK-coalescing policy is assumed.
"""
from __future__ import annotations

from ..case import MUST, SHOULD, case
from ..craft import CE, FIRST, LAST, MIDDLE, ONLY_IMM
from ..packets import Packet, trim
from .common import US, pattern, responder_pair

CASES: list = []
EV = [0x0A0B0000 | k for k in range(1, 33)]


def respond(sc, node, within: int = 20 * US) -> list[Packet]:
    """What `node` sends now and during the next `within` ps (its timers fired as they fall due)."""
    out = sc.pull(node)
    end = sc.now + within
    while (d := node.ep.next_deadline()) is not None and d <= end:
        sc.advance(d)
        out += sc.pull(node)
    sc.advance(end)
    return out + sc.pull(node)


def sacks(pkts):
    return [p for p in pkts if p.kind == "sack"]


def nacks(pkts):
    return [p for p in pkts if p.kind == "nack"]


def naks(pkts):
    """Transport ACKs carrying a NAK syndrome (AETH syndrome bits 7-5 = 011), and fatal NACKs."""
    return [p for p in pkts if (p.kind == "ack" and p["aeth_syndrome"] >> 5 == 3)
            or (p.kind == "nack" and p["nack_reason"] == 0x19)]


def error_seen(node) -> bool:
    kinds = {e.kind for e in node.poll_events()}
    return bool(kinds & {"QP_FATAL", "QP_ACCESS_ERR"}) or node.ep.qp_state() == "ERROR"


@case("responder.sack-cack", MUST, registry=CASES,
      ref="notes §2.4 (SETH cack_psn: every PSN up to it received); §4",
      behaviour="After PSNs 100, 101, 102 arrive in order, the SACK says cack_psn = 102.",
      failure="cack_psn does not report the PSNs received in order",
      network="crafted requester, in order",
      mutants=["cack-off-by-one"])
def _cack(t):
    sc, rsp, req, c, region = responder_pair(t)
    for k in range(3):
        sc.inject(rsp, c.data(100 + k, pattern(512, k), va=region.va + 512 * k, rkey=region.rkey, ev=EV[k],
                              ackreq=int(k == 2), opcode=(FIRST, MIDDLE, LAST)[k], dma_len=512 * (3 - k)))
    got = sacks(respond(sc, rsp))
    t.expect(got, "no SACK after a packet with AckReq")
    t.expect(got[-1]["cack_psn"] == 102, f"cack_psn {got[-1]['cack_psn']}, expected 102")
    t.expect(all(p["cack_psn"] <= 102 or p["cack_psn"] > 0xFFFF00 for p in got), "a SACK acknowledged PSNs never sent")


@case("responder.sack-bitmap", MUST, registry=CASES,
      ref="notes §2.4 (SETH sack_offset + 64-bit sack_bitmap, UET ACK_CC layout); §3.6",
      behaviour="With PSNs 100, 101, 103, 105 received, the SACK says cack_psn = 101 and its bitmap (bit b = "
                "PSN cack_psn + sack_offset + b) marks 103 and 105 and nothing else.",
      failure="the SACK bitmap does not describe the PSNs received out of order",
      network="crafted requester; PSNs 102 and 104 missing",
      mutants=["sack-bitmap-empty", "cack-off-by-one", "in-order-only"])
def _bitmap(t):
    sc, rsp, req, c, region = responder_pair(t)
    got_psns = [100, 101, 103, 105]
    for k, psn in enumerate(got_psns):
        sc.inject(rsp, c.data(psn, pattern(256, k), va=region.va + 256 * (psn - 100), rkey=region.rkey, ev=EV[k],
                              msn=psn - 100, ackreq=int(psn == 105)))
    got = sacks(respond(sc, rsp))
    t.expect(got, "no SACK after a packet with AckReq")
    s = got[-1]
    t.expect(s["cack_psn"] == 101, f"cack_psn {s['cack_psn']}, expected 101")
    base = 101 + s["sack_offset"]
    covered = {base + b for b in range(64)}
    t.expect({103, 105} <= covered, f"sack_offset {s['sack_offset']}: the bitmap does not cover PSNs 103 and 105")
    marked = {base + b for b in range(64) if s["sack_bitmap"] >> b & 1}
    t.expect({p for p in marked if p > 101} == {103, 105},
             f"bitmap {s['sack_bitmap']:#x} at offset {s['sack_offset']} marks PSNs {sorted(marked)}, expected [103, 105]")


@case("responder.sack-reflects-ev", MUST, registry=CASES,
      ref="notes §2.4 (SETH entropy: 'reflected EV of the triggering data packet'); §9",
      behaviour="Every SACK carries in `entropy` the EV of the data packet it acknowledges (the PSN "
                "cack_psn + ack_psn_offset).",
      failure="a SACK does not reflect the EV of the packet that triggered it",
      network="crafted requester, 8 packets on 8 EVs, each with AckReq",
      mutants=["no-ev-echo", "in-order-only"])
def _sack_ev(t):
    sc, rsp, req, c, region = responder_pair(t)
    ev_of = {}
    out = []
    for k in range(8):
        psn = 100 + (k ^ 1)  # pairs swapped: some SACKs are triggered out of order
        ev_of[psn] = EV[k + 4]
        sc.inject(rsp, c.data(psn, pattern(200, k), va=region.va + 256 * (psn - 100), rkey=region.rkey,
                              ev=ev_of[psn], msn=psn - 100))
        out += respond(sc, rsp, 1 * US)
    got = sacks(out)
    t.expect(len(got) >= 4, f"{len(got)} SACKs for 8 packets with AckReq")
    for s in got:
        trig = (s["cack_psn"] + s["ack_psn_offset"]) & 0xFFFFFF
        want = ev_of.get(trig)
        t.expect(want is not None, f"SACK ack_psn {trig} (cack {s['cack_psn']} + {s['ack_psn_offset']}) "
                                   f"names no packet sent")
        t.expect(s["entropy"] == want, f"SACK for PSN {trig}: entropy {s['entropy']:#x}, expected {want:#x}")


@case("responder.sack-m-field", MUST, registry=CASES,
      ref="notes §2.4 (SETH m: SKIP_ONCE 'when the forward path was ECN-marked'); §3.5 (ECN 'tagged with the "
          "EV that experienced the congestion')",
      behaviour="A CE-marked data packet is answered with a SACK whose M = SKIP_ONCE, reflecting that packet's "
                "EV; an unmarked one with M = NONE.",
      failure="the SACK M field does not echo the CE mark",
      network="crafted requester; PSN 101 arrives CE-marked",
      mutants=["no-ecn-echo", "no-ev-echo"])
def _m_field(t):
    sc, rsp, req, c, region = responder_pair(t)
    sc.inject(rsp, c.data(100, pattern(256), va=region.va, rkey=region.rkey, ev=EV[0]))
    first = sacks(respond(sc, rsp, 2 * US))
    sc.inject(rsp, c.data(101, pattern(256, 1), va=region.va + 256, rkey=region.rkey, ev=EV[1], msn=1, ecn=CE))
    second = sacks(respond(sc, rsp, 2 * US))
    t.expect(first and second, "no SACK after a packet with AckReq")
    t.expect(first[-1]["m"] == 0, f"M = {first[-1]['m']} for an unmarked packet, expected 0 (NONE)")
    s = second[0]
    t.expect(s["m"] == 1, f"M = {s['m']} for a CE-marked packet, expected 1 (SKIP_ONCE)")
    t.expect(s["entropy"] == EV[1], f"the SKIP_ONCE SACK reflects EV {s['entropy']:#x}, not the marked {EV[1]:#x}")


@case("responder.sack-timestamp", MUST, registry=CASES,
      ref="notes §2.4 (CC_STATE: reflected tx_timestamp of the TSETH); §3.5 (RTT from the reflected timestamp)",
      behaviour="The SACK's CC_STATE carries back the TSETH timestamp of the packet it acknowledges.",
      failure="the SACK does not reflect the TSETH timestamp",
      network="crafted requester",
      mutants=["no-ts-echo"])
def _timestamp(t):
    sc, rsp, req, c, region = responder_pair(t)
    seen = []
    for k, ts in enumerate((0x1111, 0xBEEF, 0x0042)):
        sc.inject(rsp, c.data(100 + k, pattern(128, k), va=region.va + 128 * k, rkey=region.rkey, ev=EV[k], ts=ts,
                              msn=k))
        got = sacks(respond(sc, rsp, 2 * US))
        t.expect(got, "no SACK after a packet with AckReq")
        seen.append(got[-1]["tx_timestamp"])
    t.expect(seen == [0x1111, 0xBEEF, 0x0042], f"reflected timestamps {[hex(x) for x in seen]}, "
                                              f"expected 0x1111, 0xbeef, 0x42")


def _trim_nack(t):
    lasthop = t.params["lasthop"]
    sc, rsp, req, c, region = responder_pair(t)
    whole = Packet(c.data(100, pattern(1024), va=region.va, rkey=region.rkey, ev=EV[3]), "crafted", 1, sc.now,
                   dscp=c.dscp)
    sc.inject(rsp, trim(whole, lasthop=lasthop))
    got = nacks(respond(sc, rsp, 5 * US))
    want = 0x02 if lasthop else 0x01
    t.expect(got, "no NACK for a trimmed packet")
    n = got[0]
    t.expect(n["nack_reason"] == want, f"NACK reason {n['nack_reason']:#x}, expected {want:#x}")
    t.expect(n["nack_psn"] == 100, f"nack_psn {n['nack_psn']}, expected 100")
    t.expect(n["entropy"] == EV[3], f"NACK entropy {n['entropy']:#x}, expected the trimmed packet's EV {EV[3]:#x}")
    t.expect(rsp.ep.read_mr(region) == bytes(region.length), "a trimmed packet's remains were placed in memory")
    sc.inject(rsp, whole.data)
    got = sacks(respond(sc, rsp, 5 * US))
    t.expect(got and got[-1]["cack_psn"] == 100, "the retransmission of the trimmed packet was not acknowledged")


for _lasthop, _code in ((False, "TRIMMED (0x01)"), (True, "TRIMMED_LASTHOP (0x02)")):
    case(f"responder.trim-nack[{'lasthop' if _lasthop else 'fabric'}]", SHOULD, registry=CASES,
         ref="notes §4 ('Trimmed header received -> NACK(TRIMMED or TRIMMED_LASTHOP)'; trim NACKs optional, "
             "MRC_DEVICE_CAP_TRIM_NACK, on by default); §2.5 (codes)",
         behaviour=f"A packet trimmed {'at the last hop' if _lasthop else 'in the fabric'} is answered at once "
                   f"with NACK {_code} naming its PSN and reflecting its EV; nothing of it is placed.",
         failure=f"no correct NACK {_code} for a trimmed packet",
         network=f"crafted requester; PSN 100 arrives trimmed{' at the last hop' if _lasthop else ''}",
         mutants=["no-trim-nack", "no-ev-echo", "cack-off-by-one"] + (["lasthop-as-trimmed"] if _lasthop else []),
         params={"lasthop": _lasthop})(_trim_nack)


@case("responder.control-class", SHOULD, registry=CASES,
      ref="notes §2.6 (control class: SACKs, NACKs, transport ACKs on DSCP_CONTROL, 'neither trimming nor WRED')",
      behaviour="SACKs and NACKs leave with the control DSCP.",
      failure="control packets do not use the control DSCP",
      network="crafted requester; one packet trimmed",
      mutants=["control-on-data-class", "no-trim-nack"])
def _control_class(t):
    sc, rsp, req, c, region = responder_pair(t)
    sc.inject(rsp, c.data(100, pattern(256), va=region.va, rkey=region.rkey, ev=EV[0]))
    whole = Packet(c.data(101, pattern(256, 1), va=region.va + 256, rkey=region.rkey, ev=EV[1], msn=1), "crafted", 1,
                   sc.now, dscp=c.dscp)
    sc.inject(rsp, trim(whole))
    out = [p for p in respond(sc, rsp) if p.kind in ("sack", "nack")]
    t.expect({p.kind for p in out} == {"sack", "nack"}, f"expected a SACK and a NACK, got {[p.kind for p in out]}")
    want = rsp.cfg.dscp["control"]
    bad = [(p.kind, p["dscp"]) for p in out if p["dscp"] != want]
    t.expect(not bad, f"(kind, DSCP) {bad}, expected DSCP {want}")


@case("responder.duplicate-acked", MUST, registry=CASES,
      ref="notes §3.6 (SACK); IBTA RC (a duplicate request is acknowledged again, so a lost ACK is repaired)",
      behaviour="A duplicate of a packet already received is acknowledged again.",
      failure="a duplicate packet is not acknowledged",
      network="crafted requester; PSN 100 arrives twice",
      mutants=["dup-not-acked", "cack-off-by-one"])
def _dup_acked(t):
    sc, rsp, req, c, region = responder_pair(t)
    pkt = c.data(100, pattern(256), va=region.va, rkey=region.rkey, ev=EV[0])
    sc.inject(rsp, pkt)
    t.expect(sacks(respond(sc, rsp, 2 * US)), "no SACK for the first copy")
    sc.inject(rsp, c.data(100, pattern(256), va=region.va, rkey=region.rkey, ev=EV[1], rtx=1))
    again = sacks(respond(sc, rsp, 5 * US))
    t.expect(again, "the duplicate was not acknowledged")
    t.expect(again[-1]["cack_psn"] == 100, f"the duplicate's SACK says cack_psn {again[-1]['cack_psn']}, expected 100")


@case("responder.duplicate-not-replayed", SHOULD, registry=CASES,
      ref="project choice (IBTA RC: duplicates are acknowledged, not executed again); notes §4",
      behaviour="A stale duplicate of a completed Write-with-Immediate neither rewrites memory nor completes "
                "a second time.",
      failure="a duplicate was executed again",
      network="crafted requester; PSN 100 repeated with different bytes after it completed",
      mutants=["dup-replaced"])
def _dup_replay(t):
    sc, rsp, req, c, region = responder_pair(t)
    rsp.ep.post_recv(7)
    rsp.ep.post_recv(8)
    first = pattern(256)
    sc.inject(rsp, c.data(100, first, va=region.va, rkey=region.rkey, ev=EV[0], opcode=ONLY_IMM, imm=0x77))
    respond(sc, rsp, 2 * US)
    got = rsp.sends("recv")
    t.expect([(x.wr_id, x.imm) for x in got] == [(7, 0x77)], f"receive completions {got}")
    sc.inject(rsp, c.data(100, pattern(256, 9), va=region.va, rkey=region.rkey, ev=EV[1], opcode=ONLY_IMM, imm=0x77,
                          rtx=1))
    respond(sc, rsp, 5 * US)
    t.expect(rsp.ep.read_mr(region)[:256] == first, "the duplicate's bytes overwrote the completed write")
    t.expect(len(rsp.sends("recv")) == 1, f"receive completions {rsp.sends('recv')}: the duplicate completed again")


@case("responder.oor-nack", MUST, registry=CASES,
      ref="notes §4 ('out-of-range -> PSN_OOR_WINDOW'); §2.5 (code 0x0B); §3.1 (MPR)",
      behaviour="A PSN beyond the responder's MPR window is NACKed PSN_OOR_WINDOW (naming it, reflecting its "
                "EV) and not placed.",
      failure="a PSN beyond the window is not refused with PSN_OOR_WINDOW",
      network="crafted requester; PSN first + 8 x 128 + 5 with MPR 8",
      mutants=["oor-silent", "no-ev-echo", "in-order-only"])
def _oor(t):
    sc, rsp, req, c, region = responder_pair(t, iut=dict(mpr_dest=8))
    psn = 100 + 8 * 128 + 5
    sc.inject(rsp, c.data(psn, pattern(256), va=region.va, rkey=region.rkey, ev=EV[5]))
    got = nacks(respond(sc, rsp, 5 * US))
    t.expect(got, f"no NACK for PSN {psn}, {psn - 100} beyond the first expected PSN (window 1024)")
    n = got[0]
    t.expect(n["nack_reason"] == 0x0B, f"NACK reason {n['nack_reason']:#x}, expected 0x0b (PSN_OOR_WINDOW)")
    t.expect(n["nack_psn"] == psn and n["entropy"] == EV[5],
             f"NACK names PSN {n['nack_psn']} with entropy {n['entropy']:#x}, expected {psn} and {EV[5]:#x}")
    t.expect(rsp.ep.read_mr(region) == bytes(region.length), "the out-of-window packet was placed")


BOUNDS = {
    "past-end": (lambda r: r.va + r.length - 50, lambda r: r.rkey, ["no-bounds-check"]),
    "before-start": (lambda r: r.va - 64, lambda r: r.rkey, ["no-bounds-check"]),
    "wrong-rkey": (lambda r: r.va, lambda r: r.rkey ^ 0x5A5A5A5A, ["no-rkey-check"]),
}


def _bounds(t):
    va, rkey, _ = BOUNDS[t.params["what"]]
    sc, rsp, req, c, region = responder_pair(t, region=4096)
    sc.inject(rsp, c.data(100, pattern(100), va=va(region), rkey=rkey(region), ev=EV[0]))
    out = respond(sc, rsp, 10 * US)
    t.expect(rsp.ep.read_mr(region) == bytes(region.length), "memory of the region changed")
    acked = [p for p in sacks(out) if p["cack_psn"] == 100]
    t.expect(not acked, "the refused write was acknowledged as received")
    t.expect(error_seen(rsp), "the responder reported no access error (no QP_ACCESS_ERR / QP_FATAL, QP not in ERROR)")


for _what, (_, _, _mutants) in BOUNDS.items():
    case(f"responder.write-refused[{_what}]", MUST, registry=CASES,
         ref="notes §4 (direct placement at the RETH address); IBTA RC (R_Key and bounds check; remote access "
             "error)",
         behaviour=f"A write {_what.replace('-', ' ')} of the registered region is refused: nothing is written, "
                   f"it is not acknowledged, and the responder reports an access error.",
         failure=f"a write {_what.replace('-', ' ')} of the registered region was not refused",
         network="crafted requester", mutants=_mutants, params={"what": _what})(_bounds)


@case("responder.access-error-nak", SHOULD, registry=CASES,
      ref="IBTA RC (NAK Remote Access Error, AETH syndrome 0x62); project choice for MRC (transport ACK kept "
          "'for compatibility', notes §3.6)",
      behaviour="A refused write is answered with a transport ACK carrying a NAK, so the requester fails fast.",
      failure="no NAK for a refused write",
      network="crafted requester; a write past the end of the region",
      mutants=["no-aeth-nak", "no-bounds-check"])
def _access_nak(t):
    sc, rsp, req, c, region = responder_pair(t, region=4096)
    sc.inject(rsp, c.data(100, pattern(100), va=region.va + region.length - 50, rkey=region.rkey, ev=EV[0]))
    got = naks(respond(sc, rsp, 10 * US))
    t.expect(got, "no NAK (AETH syndrome 011xxxxx or NACK UNEXP_EVENT) for a write past the region's end")


@case("responder.write-extent-checked", MUST, registry=CASES,
      ref="notes §4 (placement at the RETH address; every packet carries its final address); IBTA RC (the "
          "whole RDMA write is checked against the R_Key's region)",
      behaviour="A multi-packet write whose extent runs past the region is refused as a whole: not even its "
                "in-range first packet is placed.",
      failure="part of a write running past the region was placed",
      network="crafted requester; FIRST in range, MIDDLE and LAST past the end",
      mutants=["no-bounds-check"])
def _extent(t):
    mtu = 1024
    sc, rsp, req, c, region = responder_pair(t, region=4 * mtu)
    va = region.va + 3 * mtu
    for k, op in enumerate((FIRST, MIDDLE, LAST)):
        sc.inject(rsp, c.data(100 + k, pattern(mtu, k), va=va + k * mtu, rkey=region.rkey, ev=EV[k], opcode=op,
                              dma_len=(3 - k) * mtu, ackreq=int(op == LAST)))
    respond(sc, rsp, 10 * US)
    t.expect(rsp.ep.read_mr(region) == bytes(region.length),
             "bytes of the write were placed in the last KiB of the region although the write runs past its end")
    t.expect(error_seen(rsp), "the responder reported no access error")


@case("responder.placement-any-order", MUST, registry=CASES,
      ref="notes §1.2 (OAI: packets 'include their final memory address so the destination can deliver them to "
          "memory as they arrive'); §4 ('no packet is discarded merely for arriving early')",
      behaviour="The packets of a write arriving in reverse order are all placed, byte-exact, and acknowledged.",
      failure="packets arriving out of order are not placed as they arrive",
      network="crafted requester; LAST first, FIRST last",
      mutants=["in-order-only", "cack-off-by-one"])
def _any_order(t):
    sc, rsp, req, c, region = responder_pair(t)
    data = pattern(4 * 1024)
    ops = (FIRST, MIDDLE, MIDDLE, LAST)
    for k in (3, 2, 1, 0):
        sc.inject(rsp, c.data(100 + k, data[1024 * k:1024 * (k + 1)], va=region.va + 1024 * k, rkey=region.rkey,
                              ev=EV[k], opcode=ops[k], dma_len=1024 * (4 - k), ackreq=1))
    got = sacks(respond(sc, rsp, 10 * US))
    t.expect(rsp.ep.read_mr(region)[:len(data)] == data, "the bytes in memory differ from the write")
    t.expect(got and got[-1]["cack_psn"] == 103, "the write was not fully acknowledged (cack_psn 103)")


@case("responder.probe-answered", MUST, registry=CASES,
      ref="notes §3.6 (reliability probes 'consume no PSNs, and elicit a SACK carrying the responder's current "
          "bitmap and congestion state'); §2.4 (SETH pr bit)",
      behaviour="A reliability probe (PETH) is answered with a SACK marked as a probe response (pr = 1), "
                "reflecting the probe's EV and the current cack_psn.",
      failure="a reliability probe is not answered properly",
      network="crafted requester; probe after PSNs 100-101",
      mutants=["probes-ignored", "cack-off-by-one"])
def _probe(t):
    sc, rsp, req, c, region = responder_pair(t)
    for k in range(2):
        sc.inject(rsp, c.data(100 + k, pattern(128, k), va=region.va + 128 * k, rkey=region.rkey, ev=EV[k], msn=k))
    respond(sc, rsp, 5 * US)
    sc.inject(rsp, c.probe(102, ev=EV[9], probe_id=5))
    got = [p for p in sacks(respond(sc, rsp, 5 * US)) if p["pr"]]
    t.expect(got, "no SACK with pr = 1 answered the probe")
    s = got[0]
    t.expect(s["entropy"] == EV[9], f"the probe's SACK reflects {s['entropy']:#x}, expected the probe's EV {EV[9]:#x}")
    t.expect(s["cack_psn"] == 101, f"the probe's SACK says cack_psn {s['cack_psn']}, expected 101")
