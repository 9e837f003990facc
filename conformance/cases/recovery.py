"""Requester cases, feedback and recovery: EV penalties (SKIP, ASSUMED_BAD), trims, probes, timers.

The IUT is the requester, the tester (reference) the responder. EV penalties
are observed from outside: an EV the requester skips carries fewer than its
share of the packets of a long transfer; an EV it retires carries none.
"""
from __future__ import annotations

from mrc.wire.constants import NackReason

from ..case import MUST, SHOULD, case
from ..craft import Crafter
from ..scenario import drop, marked, trimmed
from .common import (MS, US, evs, first_seen, lose_first, pattern, post, requester_pair, retransmissions,
                     sends_done, share)

CASES: list = []
ONE_PLANE = dict(ports=1, evs=evs(1, 4), ev_active=4, mtu=1024)
FAIR = 0.25  # one EV of four


def _share_run(t, action, always_skip_marks: int = 0):
    """32 writes of 4 packets, one after the other, over 4 EVs of one plane (so feedback on a write arrives
    before the next is sent, whatever the window); `action` applies to every data packet on the first EV.
    The tester (responder) answers ALWAYS_SKIP after `always_skip_marks` consecutive marks (0: never)."""
    sc, req, rsp, region = requester_pair(t, iut=ONE_PLANE,
                                          tester=dict(options={"always_skip_marks": always_skip_marks}))
    target = ONE_PLANE["evs"][0][0]
    sc.route = lambda sc, p: action(p) if p.src == "req" and p.is_data and p.ev == target else None
    data = pattern(128 * 1024)
    for k in range(32):
        post(sc, req, k + 1, data[4096 * k:4096 * (k + 1)], region, 4096 * k)
        t.expect(sc.run(sends_done(req, k + 1), max_ps=sc.now + 2 * MS), f"write {k + 1} did not complete")
    t.expect(all(c.status == "SUCCESS" for c in req.sends("send")), f"completions {req.sends('send')[:3]}...")
    t.expect(rsp.ep.read_mr(region)[:len(data)] == data, "the bytes placed at the responder differ")
    got = share(sc.data_sent(req), target)
    t.note("share_of_penalised_ev", round(got, 3))
    return got


@case("requester.skip-after-ecn", MUST, registry=CASES,
      ref="notes §3.4 (EV state machine, spec Figure 5: SACK m = SKIP_ONCE -> SKIP); §3.5 (ECN as a "
          "load-balancing signal)",
      behaviour="An EV whose packets come back with SACK M = SKIP_ONCE is skipped, for one rotation at a time: "
                "it carries clearly less than its share, but not nothing (SKIP_ONCE does not retire it).",
      failure="ECN-marked SACKs do not make the requester skip the EV, or they retire it",
      network="every data packet on one EV (of 4, one plane) is CE-marked; 32 writes of 4 packets",
      mutants=["ignores-ecn", "ecn-retires"])
def _skip_ecn(t):
    got = _share_run(t, marked)
    t.expect(got < 0.8 * FAIR, f"the marked EV carried {got:.1%} of the packets (its share is {FAIR:.0%})")
    # skipped every other rotation it carries about 1/7 of the packets; retired (and re-admitted by
    # probes now and then) far fewer
    t.expect(got >= 0.4 * FAIR, f"the marked EV carried {got:.1%} of the packets: more than skipped once per "
                                f"mark, as if SKIP_ONCE retired it")


@case("requester.always-skip-retires", MUST, registry=CASES,
      ref="notes §3.4 (EV state machine, spec Figure 5: SACK m = ALWAYS_SKIP -> ASSUMED_BAD); §3.6 (M field: "
          "ALWAYS_SKIP when 'the responder has concluded the path is persistently bad')",
      behaviour="An EV whose SACKs say M = ALWAYS_SKIP is taken out of service (ASSUMED_BAD, back only through "
                "probes): it carries far less than an EV skipped once per mark.",
      failure="the requester treats ALWAYS_SKIP like SKIP_ONCE (or ignores it)",
      network="every data packet on one EV (of 4, one plane) is CE-marked; the responder answers every mark "
              "with ALWAYS_SKIP; 32 writes of 4 packets",
      mutants=["always-skip-as-skip-once", "ignores-ecn", "reuses-retired-ev"])
def _always_skip(t):
    got = _share_run(t, marked, always_skip_marks=1)
    # skipped once per mark the EV carries about 1/7 of the packets (requester.skip-after-ecn)
    t.expect(got < 0.4 * FAIR, f"the EV answered with ALWAYS_SKIP carried {got:.1%} of the packets, as much as an "
                               f"EV skipped once per mark (its share is {FAIR:.0%})")


@case("requester.resource-nack", MUST, registry=CASES,
      ref="notes §7.1 (UET NACK codes: NO_PKT_BUFFER and the other resource codes are not fatal); UE 1.0.3 "
          "§3.6.12.3 OnNACK (mark_packet_for_rtx for every NACK), §3.6.13.5 NSCC.OnNACK",
      behaviour="A NACK NO_PKT_BUFFER (the responder had no buffer for the packet) makes the requester resend "
                "the packet and go on: the write completes successfully, the QP does not fail.",
      failure="a resource NACK is not retransmitted, or is treated as fatal",
      network="the responder's answer to the first data packet is replaced by NACK NO_PKT_BUFFER",
      mutants=["resource-nack-fatal"])
def _resource_nack(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=1024))
    state = {"done": False}

    def route(sc, p):
        if not state["done"] and p.src == "rsp" and p.opcode == 0xDC:
            state["done"] = True
            first = sc.data_sent(req)[0]
            nack = Crafter(rsp, req).nack(NackReason.NO_PKT_BUFFER, first.psn, entropy=first.ev,
                                          ts=first["tx_timestamp"])
            return [(0, nack, "replaced by NACK NO_PKT_BUFFER")]
        return None
    sc.route = route
    data = pattern(4096)
    post(sc, req, 1, data, region, 0)
    t.expect(sc.run(sends_done(req, 1), max_ps=sc.now + 2 * MS), "the write did not complete")
    t.expect([c.status for c in req.sends("send")] == ["SUCCESS"], f"completions {req.sends('send')}")
    t.expect(state["done"], "tester problem: no SACK to replace")
    t.expect(rsp.ep.read_mr(region)[:len(data)] == data, "the bytes placed at the responder differ")


@case("requester.trimmed-skips-ev", MUST, registry=CASES,
      ref="notes §3.4 (NACK TRIMMED -> SKIP, not TRIMMED_LASTHOP); §9 (TRIMMED NACK => retransmit now + SKIP)",
      behaviour="An EV whose packets are trimmed in the fabric (NACK TRIMMED) is skipped.",
      failure="TRIMMED NACKs do not make the requester skip the EV",
      network="every data packet on one EV (of 4, one plane) is trimmed; 32 writes of 4 packets",
      mutants=["trimmed-as-lasthop"])
def _trim_skip(t):
    got = _share_run(t, trimmed)
    t.expect(got < 0.8 * FAIR, f"the trimmed EV carried {got:.1%} of the packets (its share is {FAIR:.0%})")


@case("requester.lasthop-no-penalty", MUST, registry=CASES,
      ref="notes §3.5 ('trimming + TRIMMED_LASTHOP NACKs (EV not penalised)'); §3.4",
      behaviour="A trim at the last hop (NACK TRIMMED_LASTHOP) does not penalise the EV: it keeps its share.",
      failure="the requester penalises an EV for a last-hop trim",
      network="every data packet on one EV (of 4, one plane) is trimmed at the last hop; 32 writes of 4 packets",
      mutants=["penalises-lasthop", "ignores-trimmed"])
def _lasthop(t):
    got = _share_run(t, lambda p: trimmed(p, lasthop=True))
    t.expect(got >= 0.8 * FAIR, f"the EV trimmed at the last hop carried {got:.1%} of the packets "
                                f"(its share is {FAIR:.0%})")


@case("requester.trimmed-immediate-rtx", MUST, registry=CASES,
      ref="notes §3.6 (TRIMMED NACK -> 'immediate selective retransmit … in a single round-trip rather than "
          "waiting for a timeout')",
      behaviour="A packet NACKed as TRIMMED is retransmitted as soon as the NACK arrives.",
      failure="a trimmed packet is not retransmitted at once",
      network="the first transmission of PSN 5 is trimmed",
      mutants=["ignores-trimmed"])
def _trim_rtx(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=1024))
    done = set()

    def route(sc, p):
        if p.src == "req" and p.is_data and p.psn == 5 and 5 not in done:
            done.add(5)
            return trimmed(p)
        return None

    sc.route = route
    post(sc, req, 1, pattern(16 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=10 * MS), "the write did not complete")
    nacks = [p for p in sc.sent(rsp, "nack") if p.arrived is not None]
    t.expect(nacks, "the responder sent no NACK for the trimmed packet (tester problem)")
    rtx = [p for p in retransmissions(sc.data_sent(req)) if p.psn == 5]
    t.expect(rtx, "PSN 5 was never retransmitted")
    lag = rtx[0].time - nacks[0].arrived
    t.note("rtx_after_nack_us", lag / US)
    t.expect(lag <= 1 * US, f"PSN 5 retransmitted {lag / US:.1f} us after its TRIMMED NACK arrived (limit 1 us)")


def _blackhole(t, **iut):
    cfg = dict(mtu=1024, evs=evs(2, 8), ev_active=16, timeout=12)
    cfg.update(iut)
    sc, req, rsp, region = requester_pair(t, iut=cfg)
    bad = cfg["evs"][0][0]
    return sc, req, rsp, region, bad


@case("requester.silent-loss-retires-ev", MUST, registry=CASES,
      ref="notes §1.2 (OAI: on a loss 'it assumes something on that path may have failed and immediately stops "
          "using it, retransmitting any packets that may have been lost'); §3.4 (timeout -> ASSUMED_BAD)",
      behaviour="After a loss with no trim and no SACK on an EV, the requester stops sending data on that EV "
                "and retransmits the lost packet on another EV.",
      failure="the requester keeps using an EV after a silent loss on it",
      network="every packet on one EV is lost (a black hole)",
      mutants=["reuses-retired-ev", "sack-bitmap-reversed"])
def _silent_loss(t):
    sc, req, rsp, region, bad = _blackhole(t)
    sc.route = lambda sc, p: drop(p) if p.src == "req" and p.ev == bad else None
    data = pattern(64 * 1024)
    post(sc, req, 1, data, region)
    t.expect(sc.run(sends_done(req, 1), max_ps=20 * MS), "the write did not complete")
    t.expect(rsp.ep.read_mr(region)[:len(data)] == data, "the bytes placed at the responder differ")
    pkts = sc.data_sent(req)
    lost = [p for p in pkts if p.ev == bad]
    t.expect(lost, "no packet used the black-holed EV (nothing was tested)")
    repaired = [p for p in retransmissions(pkts) if p.psn in {q.psn for q in lost}]
    t.expect(repaired, "the lost packet was never retransmitted")
    later = [p for p in pkts if p.ev == bad and p.time >= repaired[0].time]
    t.expect(not later, f"{len(later)} data packet(s) sent on the black-holed EV after the loss was repaired "
                        f"(first at {later[0].time / US:.1f} us)" if later else "")
    t.expect(all(p.ev != bad for p in repaired), "a lost packet was retransmitted on the same EV")


@case("requester.probe-recovery", MUST, registry=CASES,
      ref="notes §1.2 (OAI: 'After MRC retires a path, it sends probe packets to check whether there really "
          "was a failure, and if so, whether it has recovered'); §3.4 (ASSUMED_BAD -> GOOD on probe answers)",
      behaviour="The requester probes a retired EV (reliability probes, PETH) and uses it again only after "
                "a probe on it was answered; a healed EV returns to service.",
      failure="a retired EV is not probed back into service",
      network="one EV is a black hole until 150 us, then healthy",
      mutants=["no-probes", "reuses-retired-ev", "sack-bitmap-reversed"])
def _probe_recovery(t):
    sc, req, rsp, region, bad = _blackhole(t)
    sc.route = lambda sc, p: drop(p) if p.src == "req" and p.ev == bad and sc.now < 150 * US else None
    post(sc, req, 1, pattern(64 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=20 * MS), "the first write did not complete")
    sc.run_for(max(0, 3 * MS - sc.now))
    post(sc, req, 2, pattern(64 * 1024, 1), region)
    t.expect(sc.run(sends_done(req, 2), max_ps=30 * MS), "the second write did not complete")
    probes = [p for p in sc.sent(req, "probe") if p.ev == bad]
    t.expect(probes, "no probe was sent on the retired EV")
    answers = [p for p in sc.sent(rsp, "sack") if p["pr"] and p["entropy"] == bad and p.arrived is not None]
    t.expect(answers, "no probe on the retired EV was answered (tester problem: the path healed at 150 us)")
    pkts = sc.data_sent(req)
    data = [p for p in pkts if p.ev == bad]
    on_bad = {p.psn for p in data}
    repairs = [p for p in retransmissions(pkts) if p.psn in on_bad]
    t.expect(repairs, "the packets lost on the black-holed EV were never retransmitted")
    reuse = [p for p in data if repairs[0].time <= p.time < answers[0].arrived]
    t.expect(not reuse, f"data on the EV at {reuse[0].time / US:.1f} us, before any probe on it was answered "
                        f"({answers[0].arrived / US:.1f} us)" if reuse else "")
    back = [p for p in data if p.time >= answers[0].arrived]
    t.note("probes_on_ev", len(probes))
    t.expect(back, "the healed EV carried no data in the second write (never brought back)")


@case("requester.tail-loss-probe", SHOULD, registry=CASES,
      ref="notes §3.6 (reliability probes 'elicit a SACK carrying the responder's current bitmap', used 'when "
          "the sender suspects SACKs have been lost'); UET 1.0 (ACK_REQ / PROBE control packets)",
      behaviour="When the SACK of the last packet is lost, the requester recovers with a reliability probe "
                "well before its retransmission timeout.",
      failure="a lost tail SACK is only recovered by the retransmission timeout",
      network="the first SACK is lost",
      mutants=["no-probes"])
def _tail_probe(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(timeout=12))  # RTO 4.2 ms
    gone = []

    def route(sc, p):
        if p.src == "rsp" and p.kind == "sack" and not gone:
            gone.append(p)
            return []
        return None

    sc.route = route
    post(sc, req, 1, pattern(1000), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=20 * MS), "the write never completed")
    when = sc.now
    t.note("completed_us", when / US)
    t.expect(gone, "no SACK was sent (tester problem)")
    t.expect(sc.sent(req, "probe"), "no reliability probe was sent")
    t.expect(when < 1 * MS, f"completed at {when / US:.0f} us: after the tail SACK was lost, recovery waited "
                            f"for a timeout (RTO 4194 us)")


def _dead_peer(t, retry_linear, retry_exp, writes=1):
    sc, req, rsp, region = requester_pair(t, iut=dict(timeout=0, retry_linear=retry_linear, retry_exp=retry_exp))
    sc.route = lambda sc, p: drop(p) if p.src == "req" else None
    for k in range(writes):
        post(sc, req, k + 1, pattern(300, k), region, 512 * k)
    sc.run(sends_done(req, writes), max_ps=20 * MS)
    times = [p.time for p in sc.data_sent(req) if p.psn == 0]
    return sc, req, times


B = 1_024_000  # the RTO at timeout = 0: 1.024 us x 2^0


@case("requester.rto-backoff", MUST, registry=CASES,
      ref="notes §3.1 (mrc.h: timeout '1.024 * 2^timeout us'; retry_cnt 'Linear (fixed interval) retry limit'; "
          "'Exponential backoff retry limit')",
      behaviour="With no feedback at all, the first retransmission comes one local ACK timeout after the send; "
                "each of the retry_linear retries then waits one timeout, the k-th exponential retry 2^k "
                "timeouts (timeout = 1.024 us x 2^timeout).",
      failure="the retransmission timer does not back off linearly then exponentially",
      network="every packet from the requester is lost",
      mutants=["no-backoff"])
def _rto(t):
    sc, req, times = _dead_peer(t, 2, 3)
    gaps = [b - a for a, b in zip(times, times[1:])]
    want = [B, B, B, 2 * B, 4 * B]  # the send, 2 linear retries, then exponential retries 1 and 2
    t.note("intervals_us", [round(g / US, 3) for g in gaps])
    t.expect(len(gaps) >= len(want), f"only {len(gaps)} retransmissions of PSN 0 (expected {len(want)})")
    bad = [(k, g, w) for k, (g, w) in enumerate(zip(gaps, want)) if not 0.9 * w <= g <= 1.1 * w + 0.2 * US]
    t.expect(not bad, "retransmission intervals (us) " + ", ".join(f"{g / US:.2f}" for g in gaps)
             + "; expected " + ", ".join(f"{w / US:.2f}" for w in want))


@case("requester.retry-exhausted", MUST, registry=CASES,
      ref="notes §3.1 (retry limits; 'exceeding limits -> QP error'); IBTA (RETRY_EXC_ERR, then WR_FLUSH_ERR)",
      behaviour="When the retries run out the QP enters ERROR: the first outstanding write completes with "
                "RETRY_EXC_ERR, the others with WR_FLUSH_ERR, after exactly retry_linear + retry_exp retries.",
      failure="the QP does not fail properly when its retries run out",
      network="every packet from the requester is lost",
      mutants=["no-retry-limit"])
def _retry(t):
    sc, req, times = _dead_peer(t, 2, 2, writes=3)
    got = [(c.wr_id, c.status) for c in req.sends("send")]
    t.expect(got == [(1, "RETRY_EXC_ERR"), (2, "WR_FLUSH_ERR"), (3, "WR_FLUSH_ERR")],
             f"completions {got} by {sc.now / MS:.1f} ms, expected [(1, RETRY_EXC_ERR), (2, WR_FLUSH_ERR), "
             f"(3, WR_FLUSH_ERR)]")
    t.expect(req.ep.qp_state() == "ERROR", f"QP state {req.ep.qp_state()}, expected ERROR")
    t.expect(len(times) - 1 == 4, f"PSN 0 was retransmitted {len(times) - 1} times, expected 2 + 2")


@case("requester.selective-retransmit", MUST, registry=CASES,
      ref="notes §3.6 (MANI: the sender 'retransmits only the missing packets (the zeros in the bitmap)')",
      behaviour="One packet lost in a 16-packet write is the only one retransmitted, once.",
      failure="more than the missing packet was retransmitted",
      network="the first transmission of PSN 5 is lost",
      mutants=["go-back-n", "sack-bitmap-reversed"])
def _selective(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=1024))
    sc.route = lose_first({5})
    data = pattern(16 * 1024)
    post(sc, req, 1, data, region)
    t.expect(sc.run(sends_done(req, 1), max_ps=10 * MS), "the write did not complete")
    t.expect(rsp.ep.read_mr(region)[:len(data)] == data, "the bytes placed at the responder differ")
    rtx = [p.psn for p in retransmissions(sc.data_sent(req))]
    t.expect(rtx == [5], f"retransmitted PSNs {rtx}, expected [5]")


@case("requester.dead-plane-keeps-spraying", MUST, registry=CASES,
      ref="notes §3.2 ('replaces it with a backup EV from the same plane'; planes balanced); §1.2 (OAI: a "
          "transfer sprayed 'across hundreds of paths')",
      behaviour="When every path of one plane fails, the other plane goes on spraying over its whole active "
                "EV set.",
      failure="spraying collapses when one plane's paths are all dead",
      network="every packet the requester sends on port 2 is lost",
      mutants=["sticky-ev", "sack-bitmap-reversed"])
def _dead_plane(t):
    sc, req, rsp, region, _ = _blackhole(t)
    sc.route = lambda sc, p: drop(p) if p.src == "req" and p.port == 2 else None
    post(sc, req, 1, pattern(64 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=30 * MS), "the first write did not complete")
    since = sc.now
    post(sc, req, 2, pattern(64 * 1024, 1), region)
    t.expect(sc.run(sends_done(req, 2), max_ps=40 * MS), "the second write did not complete")
    used = {p.ev for p in first_seen(sc.data_sent(req, since)) if p.port == 1}
    t.note("plane1_evs_used", len(used))
    t.expect(len(used) >= 6, f"the surviving plane sprayed over {len(used)} of its 8 active EVs")
