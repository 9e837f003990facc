"""EV path cases at both ends: how long SKIP lasts, backups from the same plane, ALWAYS_SKIP from the
responder, and the responder's reverse (control) EVs.

Requester cases play the IUT requester against a crafted responder (so every
SACK is placed exactly) or against the tester; responder cases play a crafted
requester against the IUT responder.
"""
from __future__ import annotations

import statistics

from ..adapter import EndpointConfig
from ..case import MUST, SHOULD, case
from ..craft import CE, Crafter, ack_for
from ..scenario import drop
from .common import MS, US, evs, first_seen, pattern, post, requester_pair, responder_pair, sends_done
from .responder import EV, respond, sacks

CASES: list = []


# --- SKIP lasts exactly one rotation ----------------------------------------------------------------

def _one_at_a_time(t, n_evs: int = 4):
    """The IUT requester on one plane with `n_evs` active EVs and a window of one packet (CC "none",
    max_cwnd = MTU), so every SACK arrives before the next packet is sent; a crafted responder."""
    sc = t.scenario()
    cfg = EndpointConfig(ports=1, evs=evs(1, n_evs), ev_active=n_evs, mtu=1024, timeout=14,
                         cc={"algorithm": "none", "max_cwnd": 1024, "base_rtt": 8000})
    req = sc.add("req", cfg, iut=True)
    rsp = sc.crafted("rsp", ports=1)
    sc.connect(req, rsp)
    req.ep.post_write(1, pattern(1 << 20), remote_va=0x10000, rkey=0x77, imm=None, now=0)
    return sc, req, rsp, Crafter(rsp, req), [ev for ev, _ in cfg.evs]


@case("requester.skip-one-rotation", SHOULD, registry=CASES,
      ref="notes §3.4 (SKIP 'leaves on: automatically on next rotation' (MANI); spec Figure 5: SACK m = "
          "SKIP_ONCE -> SKIP); §3.3 ('rotates through its active EV set'); §8.1 (EMU reads SKIP as timeout-based: "
          "hence SHOULD)",
      behaviour="An EV whose packet comes back with one SACK M = SKIP_ONCE sits out exactly one rotation of the "
                "active EV set: every other active EV carries a packet before it is used again, and it is used "
                "again in the rotation after (on average six other packets in between over four EVs, as for any "
                "once-per-cycle order).",
      failure="SKIP_ONCE does not skip the EV for exactly one rotation",
      network="crafted responder, one plane, 4 active EVs, one packet in flight; 24 times, one SACK with M = 1 "
              "for a packet on the first EV",
      mutants=["skip-two-rotations", "ignores-ecn", "ecn-retires"])
def _skip_one_rotation(t):
    sc, req, rsp, c, ev_list = _one_at_a_time(t)
    target = ev_list[0]
    gaps, missing, seq = [], [], []  # seq: the EV of every data packet, in send order
    armed_at, marked_at, cack = 8, None, None
    for _ in range(800):
        pkts = [p for p in sc.pull(req) if p.is_data or p.kind == "probe"]
        if not pkts:
            d = req.ep.next_deadline()
            t.expect(d is not None, f"the requester stopped sending after {len(seq)} packets")
            sc.advance(d)
            continue
        for p in pkts:
            sc.advance(sc.now + 1 * US)
            if not p.is_data:  # a probe (none is expected): answer it, it carries no data
                last = cack if cack is not None else (p.psn - 1) & 0xFFFFFF
                sc.inject(req, c.sack(cack=last, trigger=last, entropy=p.ev, ts=p["tx_timestamp"], pr=1))
                continue
            seq.append(p.ev)
            if p.ev == target and marked_at is not None:
                between = seq[marked_at + 1:-1]
                gaps.append(len(between))
                missing.append(sorted(set(ev_list[1:]) - set(between)))
                marked_at, armed_at = None, len(seq) + 4
            mark = p.ev == target and marked_at is None and len(seq) >= armed_at
            if mark:
                marked_at = len(seq) - 1
            sc.inject(req, ack_for(c, [p], cack=p.psn, m=1 if mark else 0))
            cack = p.psn
        if len(gaps) >= 24:
            break
        if marked_at is not None and len(seq) - marked_at > 40:
            t.fail(f"the EV marked once (SKIP_ONCE) carried none of the {len(seq) - marked_at - 1} data packets "
                   f"sent after the mark: it was retired, not skipped for one rotation")
    t.note("others_between", gaps)
    t.expect(len(gaps) >= 24, f"only {len(gaps)} marks could be placed in {len(seq)} packets")
    short = [(g, [hex(e) for e in m]) for g, m in zip(gaps, missing) if m]
    t.expect(not short, f"the marked EV came back before the rotation was over: {len(short)} of {len(gaps)} times "
                        f"some active EVs carried nothing in between (first: {short[0][0]} packets, "
                        f"missing {short[0][1]})" if short else "")
    mean = statistics.mean(gaps)
    t.note("mean_others_between", round(mean, 2))
    t.expect(max(gaps) <= 9, f"the marked EV stayed out for {max(gaps)} other packets (one rotation of 4 EVs "
                             f"allows at most 9)")
    t.expect(4.5 <= mean <= 7.5, f"on average {mean:.2f} other packets between the marked use of the EV and its "
                                 f"next use (one rotation skipped: 6; none: 3; two: 9)")


# --- backups from the same plane -------------------------------------------------------------------

@case("requester.backup-same-plane", MUST, registry=CASES,
      ref="notes §3.2 ('When MRC detects that a path has failed and removes an EV from the active set, it "
          "replaces it with a backup EV from the same plane' (MANI); 'every plane carries the same amount of "
          "traffic'); §3.4 (silent loss -> ASSUMED_BAD)",
      behaviour="With 8 EVs per plane of which 4 are active, an active EV retired by a silent loss is replaced "
                "by a backup EV of the same plane: the plane goes on spraying over 4 EVs (one of them new), the "
                "other plane keeps its 4, and both planes carry equal shares.",
      failure="a retired EV is not replaced by a backup of its own plane",
      network="2 planes, 16 EVs, ev_active 8; after a first lossless write, one active EV of plane 1 is a black "
              "hole for two more writes",
      mutants=["backup-other-plane", "no-backup", "reuses-retired-ev"])
def _backup_same_plane(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=1024, evs=evs(2, 8), ev_active=8, timeout=12))
    post(sc, req, 1, pattern(64 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=20 * MS), "the first write did not complete")
    before = {port: {p.ev for p in first_seen(sc.data_sent(req)) if p.port == port} for port in (1, 2)}
    t.note("active_before", {k: len(v) for k, v in before.items()})
    t.expect(all(len(v) == 4 for v in before.values()),
             f"ev_active = 8 over 2 planes, but the first write used {len(before[1])} / {len(before[2])} EVs on "
             f"planes 1 / 2 (expected 4 each)")
    bad = sorted(before[1])[0]
    sc.route = lambda sc, p: drop(p) if p.src == "req" and p.ev == bad else None
    post(sc, req, 2, pattern(64 * 1024, 1), region)
    t.expect(sc.run(sends_done(req, 2), max_ps=40 * MS), "the second write did not complete")
    since = sc.now
    post(sc, req, 3, pattern(64 * 1024, 2), region)
    t.expect(sc.run(sends_done(req, 3), max_ps=60 * MS), "the third write did not complete")
    pkts = first_seen(sc.data_sent(req, since))
    after = {port: {p.ev for p in pkts if p.port == port} for port in (1, 2)}
    counts = [sum(1 for p in pkts if p.port == port) for port in (1, 2)]
    t.note("active_after", {k: len(v) for k, v in after.items()})
    t.note("packets_per_plane", counts)
    t.expect(bad not in after[1], f"the black-holed EV {bad:#x} still carried data")
    for port in (1, 2):
        own = {ev for ev, p in evs(2, 8) if p == port}
        t.expect(after[port] <= own, f"plane {port} carried EVs of another plane: "
                                     f"{sorted(hex(e) for e in after[port] - own)}")
    # an implementation may retire more than the dead EV on the way (a timeout retiring every EV with data
    # in flight); each retired EV must then have been replaced from its own plane too
    new = after[1] - before[1]
    t.expect(len(after[1]) == 4 and new,
             f"after retiring {bad:#x}, plane 1 sprayed over {len(after[1])} EVs ({len(new)} new), expected 4 with "
             f"a backup of plane 1 in its place")
    t.expect(len(after[2]) == 4, f"plane 2 sprayed over {len(after[2])} EVs when plane 1 lost one, expected its 4")
    t.expect(abs(counts[0] - counts[1]) <= 0.1 * sum(counts) / 2 + 1, f"packets per plane {counts}: not equal")


# --- ALWAYS_SKIP from the responder --------------------------------------------------------------------

@case("responder.always-skip", SHOULD, registry=CASES,
      ref="notes §2.4 (SETH m: 10 = ALWAYS_SKIP); §4 (M: SKIP_ONCE when 'the forward path was ECN-marked', "
          "ALWAYS_SKIP when 'the responder has concluded the path is persistently bad' (MANI); 'Criteria for "
          "ALWAYS_SKIP are not public': hence SHOULD, and 32 marks in a row as 'persistent' is project choice)",
      behaviour="A path whose every packet arrives CE-marked is escalated: the first marked packet is answered "
                "with M = SKIP_ONCE, and within 32 consecutive marks on that EV the responder answers "
                "M = ALWAYS_SKIP, reflecting that EV; packets on a clean EV interleaved with them are always "
                "answered M = NONE.",
      failure="the responder never escalates a persistently marked path to ALWAYS_SKIP, or escalates the "
              "wrong one",
      network="crafted requester; 32 packets on one EV, each CE-marked, alternating with 32 unmarked packets on "
              "another EV, each with AckReq",
      mutants=["never-always-skip", "always-skip-first-mark", "no-ecn-echo", "no-ev-echo"])
def _always_skip_responder(t):
    sc, rsp, req, c, region = responder_pair(t)
    hot, clean = EV[0], EV[1]
    answers = []  # (marked?, SACK)
    for k in range(64):
        marked = k % 2 == 0
        psn = 100 + k
        sc.inject(rsp, c.data(psn, pattern(256, k), va=region.va + 256 * k, rkey=region.rkey, msn=k,
                              ev=hot if marked else clean, ecn=CE if marked else 2))
        got = [s for s in sacks(respond(sc, rsp, 1 * US)) if (s["cack_psn"] + s["ack_psn_offset"]) & 0xFFFFFF == psn]
        t.expect(got, f"no SACK for PSN {psn} (sent with AckReq)")
        answers.append((marked, got[-1]))
    hot_m = [s["m"] for marked, s in answers if marked]
    clean_m = [s["m"] for marked, s in answers if not marked]
    t.note("m_on_marked_path", hot_m)
    t.expect(all(m == 0 for m in clean_m), f"M on the clean EV's SACKs {sorted(set(clean_m))}, expected NONE only")
    t.expect(hot_m[0] == 1, f"the first CE-marked packet was answered M = {hot_m[0]}, expected 1 (SKIP_ONCE: one "
                            f"mark is not a persistently bad path)")
    t.expect(all(m in (1, 2) for m in hot_m), f"M on the marked EV's SACKs {sorted(set(hot_m))}: every marked "
                                              f"packet must be answered SKIP_ONCE or ALWAYS_SKIP")
    always = [s for marked, s in answers if marked and s["m"] == 2]
    t.expect(always, "32 consecutive CE-marked packets on one EV were never answered ALWAYS_SKIP")
    t.expect(all(s["entropy"] == hot for s in always), "an ALWAYS_SKIP SACK reflects another EV than the marked one")


# --- reverse (control) EVs -----------------------------------------------------------------------------

@case("responder.reverse-ev", MUST, registry=CASES,
      ref="notes §3.8 ('a small reverse EV set dedicated to control packets, maintaining at least one EV per "
          "plane. Each RTT that the QP is active inbound but generates no outbound data traffic, the receiver "
          "sends an EV probe using a randomly chosen EV. If the probe is acknowledged, the reverse EV for that "
          "plane is updated' (MANI)); §4 ('Control packets use the reverse EV set'); §3.6 (probes elicit a SACK, "
          "pr = 1)",
      behaviour="A responder that only receives sends its SACKs on EVs of its own EV profile (never on the "
                "requester's EV it reflects), probes EVs of its own while it receives and sends no data, and once "
                "a probe on a plane is answered, that plane's SACKs leave on the probed EV.",
      failure="the responder's control packets do not use, or do not refresh, its reverse EVs",
      network="crafted requester: a packet with AckReq every 2 us on port 1 for 60 us; the first probe on "
              "port 1 on another EV than the SACKs' is answered; 8 more packets",
      mutants=["control-on-forward-ev", "rev-probe-answer-ignored", "no-probes"])
def _reverse_ev(t):
    sc, rsp, req, c, region = responder_pair(t)
    own = {ev: port for ev, port in rsp.cfg.evs}
    out, probe, psn = [], None, 100

    def feed(k):
        nonlocal psn
        sc.inject(rsp, c.data(psn, pattern(128, k), va=region.va + 128 * (k % 256), rkey=region.rkey, msn=k,
                              ev=EV[k % 8]), port=1)
        psn += 1
        return respond(sc, rsp, 2 * US)

    for k in range(30):
        got = feed(k)
        out += got
        on_port1 = [s for s in sacks(out) if s.port == 1]
        for p in got:
            if probe is None and p.kind == "probe" and p.port == 1 and on_port1 and p.ev != on_port1[-1].ev:
                probe = p
        if probe is not None:
            break
    first = sacks(out)
    t.expect(first, "no SACK for packets sent with AckReq")
    strangers = [s for s in first if s.ev not in own]
    t.expect(not strangers, f"SACKs sent on EVs outside the responder's profile: "
                            f"{sorted({hex(s.ev) for s in strangers})[:4]} (the forward EVs are "
                            f"{hex(EV[0])}..{hex(EV[7])})")
    wrong_plane = [s for s in first if own[s.ev] != s.port]
    t.expect(not wrong_plane, f"a SACK left on port {wrong_plane[0].port} with an EV of port "
                              f"{own[wrong_plane[0].ev]}" if wrong_plane else "")
    probes = [p for p in out if p.kind == "probe"]
    t.note("probes_while_receiving", len(probes))
    t.expect(probes, f"no EV probe in {sc.now / US:.0f} us of receiving without sending (one per RTT expected)")
    t.expect(all(p.ev in own for p in probes), "a probe on an EV outside the responder's profile")
    t.expect(probe is not None, "no probe on port 1 on another EV than the SACKs' (nothing to refresh to)")
    old = [s for s in first if s.port == 1][-1].ev
    # the answer: a SACK with pr = 1 reflecting the probe's EV and timestamp; the responder has sent no data,
    # so its cumulative ACK is the PSN before its first (0)
    sc.inject(rsp, c.sack(cack=0xFFFFFF, trigger=0xFFFFFF, entropy=probe.ev, ts=probe["tx_timestamp"], pr=1),
              port=1)
    later = []
    for k in range(30, 38):
        later += sacks(feed(k))
    later = [s for s in later if s.port == 1]
    t.note("reverse_ev_before_after", (hex(old), hex(probe.ev)))
    t.expect(later, "no SACK on port 1 after the probe was answered")
    t.expect(all(s.ev == probe.ev for s in later),
             f"after the probe on {probe.ev:#x} was answered, port 1's SACKs left on "
             f"{sorted({hex(s.ev) for s in later})} (before: {old:#x})")
