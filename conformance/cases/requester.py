"""Requester cases, send path: segmentation, PSN / MPR limits, spraying over planes and EVs,
Write-with-Immediate numbering and limits, completions, retransmission marking.

The IUT is the requester; the tester (the reference implementation) is the
responder, so only the requester's behaviour decides the outcome.
"""
from __future__ import annotations

from ..case import MUST, SHOULD, case
from ..scenario import drop
from .common import (MS, US, evs, first_seen, lose_first, pattern, post, requester_pair, retransmissions,
                     sends_done)

CASES: list = []
FIXED = lambda window: {"algorithm": "none", "max_cwnd": window, "base_rtt": 8000}  # noqa: E731


@case("requester.segmentation", MUST, registry=CASES,
      ref="notes §2.4 (RETH: 'VA advanced by one Path MTU for each successive packet'); §3.1 (path MTU)",
      behaviour="A write is cut at the path MTU: every packet but the last carries exactly MTU payload bytes, "
                "PSNs are consecutive from the first PSN across the 24-bit wrap, and the bytes land in place.",
      failure="the write is not segmented at the path MTU",
      network="lossless; first PSN 0xFFFFFE so the write crosses the PSN wrap",
      mutants=["wrong-mtu"])
def _segmentation(t):
    mtu = 4096
    n = 3 * mtu + mtu // 2
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=mtu), a_psn=0xFFFFFE)
    data = pattern(n)
    post(sc, req, 1, data, region)
    t.expect(sc.run(sends_done(req, 1), max_ps=5 * MS), "the write did not complete within 5 ms")
    pkts = first_seen(sc.data_sent(req))
    sizes = [p["payload_len"] for p in pkts]
    t.expect(sizes == [mtu, mtu, mtu, mtu // 2], f"payload sizes {sizes}, expected {[mtu, mtu, mtu, mtu // 2]}")
    psns = [p.psn for p in pkts]
    t.expect(psns == [0xFFFFFE, 0xFFFFFF, 0, 1], f"PSNs {[hex(x) for x in psns]}, expected 0xfffffe, 0xffffff, 0x0, 0x1")
    t.expect(rsp.ep.read_mr(region)[:n] == data, "the bytes placed at the responder differ from the bytes written")
    c = req.sends("send")[0]
    t.expect(c.status == "SUCCESS" and c.byte_len == n, f"completion {c}, expected SUCCESS of {n} bytes")


@case("requester.mpr-limit", MUST, registry=CASES,
      ref="notes §3.1 (MPR: max PSN range in flight, unit 128 PSNs)",
      behaviour="With MPR = 1 the requester never has more than 128 PSNs outstanding, however large its window.",
      failure="more PSNs outstanding than the MPR allows",
      network="every packet from the responder is lost for the first 200 us, then lossless",
      mutants=["ignores-mpr"])
def _mpr(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=1024, mpr=1, cc=FIXED(1 << 20)), tester=dict(mtu=1024))
    sc.route = lambda sc, p: drop(p) if p.src == "rsp" and sc.now < 200 * US else None
    data = pattern(256 * 1024)
    post(sc, req, 1, data, region)
    sc.run_for(200 * US)
    psns = sorted({p.psn for p in sc.data_sent(req)})
    t.note("psns_outstanding", len(psns))
    t.expect(psns, "no data packet was sent")
    t.expect(len(psns) <= 128, f"{len(psns)} distinct PSNs sent without any acknowledgement (MPR 1 = 128)")
    t.expect(sc.run(sends_done(req, 1), max_ps=10 * MS), "the write did not complete once SACKs flowed")
    t.expect(rsp.ep.read_mr(region)[:len(data)] == data, "the bytes placed at the responder differ")


@case("requester.spread-planes", MUST, registry=CASES,
      ref="notes §3.2 (EV profile 'distributed equally across all network planes'; 'every plane carries "
          "the same amount of traffic'); §1.2 (OAI: sprays 'across all of the distinct planes')",
      behaviour="A transfer is sprayed over all planes (NIC ports) in equal shares.",
      failure="the planes do not carry equal shares",
      network="lossless, 4 planes",
      mutants=["single-plane"])
def _planes(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(ports=4, evs=evs(4, 4), mtu=1024), tester=dict(ports=4))
    post(sc, req, 1, pattern(128 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=5 * MS), "the write did not complete within 5 ms")
    pkts = first_seen(sc.data_sent(req))
    counts = [sum(1 for p in pkts if p.port == port) for port in (1, 2, 3, 4)]
    t.note("packets_per_port", counts)
    mean = len(pkts) / 4
    t.expect(max(counts) - min(counts) <= 0.1 * mean + 1, f"packets per port {counts} (128 packets over 4 planes)")


@case("requester.spray-ev-set", SHOULD, registry=CASES,
      ref="notes §3.3 ('rotates through its active EV set, stamping a different EV into each packet'; "
          "pseudo-random selection)",
      behaviour="Packets are sprayed over the whole active EV set: every active EV carries packets, none far "
                "more than its share.",
      failure="the active EV set is not used evenly",
      network="lossless; 32 EVs, all active",
      mutants=["sticky-ev"])
def _spray(t):
    ev_list = evs(2, 16)
    sc, req, rsp, region = requester_pair(t, iut=dict(evs=ev_list, ev_active=32, mtu=1024))
    post(sc, req, 1, pattern(128 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=5 * MS), "the write did not complete within 5 ms")
    pkts = first_seen(sc.data_sent(req))
    counts = {ev: sum(1 for p in pkts if p.ev == ev) for ev, _ in ev_list}
    unused = [hex(ev) for ev, c in counts.items() if c == 0]
    t.note("min_max_per_ev", (min(counts.values()), max(counts.values())))
    t.expect(not unused, f"{len(unused)} of 32 active EVs carried no packet of 128: {unused[:6]}")
    t.expect(max(counts.values()) <= 3 * len(pkts) / 32, f"one EV carried {max(counts.values())} of {len(pkts)} packets")
    strangers = {p.ev for p in pkts} - set(counts)
    t.expect(not strangers, f"packets on EVs outside the profile: {sorted(hex(e) for e in strangers)}")


def _messages(t, sc, req, rsp, region, sizes_imms):
    off = 0
    for k, (size, imm) in enumerate(sizes_imms):
        if imm is not None:
            rsp.ep.post_recv(100 + k)
        post(sc, req, k + 1, pattern(size, k), region, off, imm)
        off += size
    t.expect(sc.run(sends_done(req, len(sizes_imms)), max_ps=5 * MS), "the writes did not complete within 5 ms")


@case("requester.wimm-numbering", SHOULD, registry=CASES,
      ref="notes §2.4 (METH: MSN and RQMSN 'to track in-flight WriteIMM requests'; ImmDt on LAST_IMM / ONLY_IMM)",
      behaviour="Every packet of message k carries MSN = first MSN + k; RQMSN counts the Write-with-Immediate "
                "messages before it; ImmDt (with the posted value) is on the last packet of a WriteIMM only.",
      failure="METH / ImmDt numbering of messages is wrong",
      network="lossless",
      mutants=["rqmsn-equals-msn"])
def _wimm_numbering(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=1024))
    msgs = [(2048, None), (700, 0xA1), (1024, None), (3000, 0xB2)]
    _messages(t, sc, req, rsp, region, msgs)
    per_msg: dict = {}
    for p in first_seen(sc.data_sent(req)):
        per_msg.setdefault(p["msn"], []).append(p)
    t.expect(len(per_msg) == 4, f"{len(per_msg)} distinct MSNs over 4 messages: {sorted(per_msg)}")
    msns = sorted(per_msg, key=lambda m: per_msg[m][0].psn)
    t.expect([(m - msns[0]) & 0xFFFF for m in msns] == [0, 1, 2, 3], f"MSNs {msns} do not count messages")
    rq = [per_msg[m][0]["rqmsn"] for m in msns]
    t.expect(all(len({p["rqmsn"] for p in per_msg[m]}) == 1 for m in msns), "RQMSN changes inside a message")
    steps = [(b - a) & 0xFFFF for a, b in zip(rq, rq[1:])]
    t.expect(steps == [0, 1, 0], f"RQMSN per message {rq}: must step by one after each WriteIMM message only")
    for m, (size, imm) in zip(msns, msgs):
        last = per_msg[m][-1]
        imm_pkts = [p for p in per_msg[m] if p.opcode in (0xC9, 0xCB)]
        if imm is None and imm_pkts:
            t.fail(f"a plain write carried ImmDt (opcode {imm_pkts[0].opcode:#x})")
        elif imm is not None:
            t.expect(imm_pkts == [last] and last["imm"] == imm,
                     f"WriteIMM of {size} bytes: ImmDt on {[p.psn for p in imm_pkts]} (last PSN {last.psn}), "
                     f"imm {last['imm']:#x}, expected {imm:#x} on the last packet only")


@case("requester.max-wimm", MUST, registry=CASES,
      ref="notes §1.3 (OCPGH: 'the hardware must ensure that a maximum configured IMM operations are "
          "outstanding'); §3.1 (max_wimm)",
      behaviour="With max_wimm = 2, no more than two Write-with-Immediate messages are outstanding.",
      failure="more Write-with-Immediate messages outstanding than max_wimm",
      network="every packet from the responder is lost for the first 100 us",
      mutants=["ignores-max-wimm"])
def _max_wimm(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(max_wimm=2))
    sc.route = lambda sc, p: drop(p) if p.src == "rsp" and sc.now < 100 * US else None
    for k in range(5):
        rsp.ep.post_recv(100 + k)
        post(sc, req, k + 1, pattern(200, k), region, 256 * k, imm=0x100 + k)
    sc.run_for(100 * US)
    msgs = {p["msn"] for p in sc.data_sent(req) if p.opcode in (0xC9, 0xCB)}
    t.note("wimm_outstanding", len(msgs))
    t.expect(len(msgs) <= 2, f"{len(msgs)} WriteIMM messages sent before any acknowledgement (max_wimm = 2)")
    t.expect(sc.run(sends_done(req, 5), max_ps=10 * MS), "the writes did not complete once SACKs flowed")


@case("requester.completion-after-ack", MUST, registry=CASES,
      ref="notes §3.6 (reliable delivery: SACK / NACK); IBTA RC semantics (a write completes when acknowledged)",
      behaviour="A write completes only once every packet of it has been acknowledged, never when it was sent.",
      failure="a write completed before it was acknowledged",
      network="every packet from the responder is lost for the first 60 us",
      mutants=["early-completion"])
def _completion_after_ack(t):
    sc, req, rsp, region = requester_pair(t)
    sc.route = lambda sc, p: drop(p) if p.src == "rsp" and sc.now < 60 * US else None
    post(sc, req, 1, pattern(4 * 4096), region)
    sc.run_for(55 * US)
    early = req.sends("send")
    if early:
        t.fail(f"completion {early[0]} by {sc.now / US:.0f} us, before any SACK reached the requester")
    t.expect(sc.run(sends_done(req, 1), max_ps=10 * MS), "the write never completed")
    t.expect(req.sends("send")[0].status == "SUCCESS", f"completion {req.sends('send')[0]}")


def _lossy(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=1024))
    lose = {3, 9}
    sc.route = lose_first(lose)
    data = pattern(16 * 1024)
    post(sc, req, 1, data, region)
    t.expect(sc.run(sends_done(req, 1), max_ps=10 * MS), "the write did not complete")
    t.expect(rsp.ep.read_mr(region)[:len(data)] == data, "the bytes placed at the responder differ")
    pkts = sc.data_sent(req)
    rtx = retransmissions(pkts)
    t.expect({p.psn for p in rtx} >= lose, f"PSNs {sorted(lose)} were lost but retransmitted PSNs are "
                                             f"{sorted({p.psn for p in rtx})}")
    return pkts, rtx, first_seen(pkts), req.cfg


@case("requester.rtx-flag", MUST, registry=CASES,
      ref="notes §2.4 (BTH rtx bit 5); §3.6 (MANI: retransmissions 'marked with an rtx flag in the BTH')",
      behaviour="Every retransmitted packet has the BTH rtx flag set; no first transmission has it.",
      failure="the rtx flag does not mark retransmissions",
      network="the first transmissions of PSNs 3 and 9 are lost",
      mutants=["no-rtx-flag"])
def _rtx_flag(t):
    pkts, rtx, first, _ = _lossy(t)
    bad = [p.psn for p in rtx if not p["rtx"]]
    t.expect(not bad, f"retransmissions of PSN(s) {bad} have rtx = 0")
    bad = [p.psn for p in first if p["rtx"]]
    t.expect(not bad, f"first transmissions of PSN(s) {bad} have rtx = 1")


@case("requester.rtx-dscp", SHOULD, registry=CASES,
      ref="notes §2.6 (retransmissions get their own code point, DSCP_TRIMMABLE_RETX, 'so switches can apply "
          "different queuing or marking policy')",
      behaviour="First transmissions use the data DSCP, retransmissions the retransmission DSCP.",
      failure="retransmissions do not use the retransmission DSCP",
      network="the first transmissions of PSNs 3 and 9 are lost",
      mutants=["rtx-same-dscp"])
def _rtx_dscp(t):
    pkts, rtx, first, cfg = _lossy(t)
    bad = [(p.psn, p["dscp"]) for p in rtx if p["dscp"] != cfg.dscp["retx"]]
    t.expect(not bad, f"retransmissions (PSN, DSCP) {bad}, expected DSCP {cfg.dscp['retx']}")
    bad = [(p.psn, p["dscp"]) for p in first if p["dscp"] != cfg.dscp["data"]]
    t.expect(not bad, f"first transmissions (PSN, DSCP) {bad[:5]}, expected DSCP {cfg.dscp['data']}")
