"""Controller cases: EV field expansion, DENIED EVs, EV events and their mask, EV state operations,
ev_min_active, port status updates.

The expansion of raw EVs is computed here from the mrc_ctl.h text (notes
§2.2), not by the implementation's code: ``expand`` below.
"""
from __future__ import annotations

from ..adapter import EvFieldDef
from ..case import MUST, SHOULD, case
from ..scenario import drop, marked
from .common import MS, US, evs, pattern, post, requester_pair, sends_done

CASES: list = []

# An STEV format of 8 + 4 + 4 + 16 bits and fields that use every feature of the expansion: a range
# (T0 0..179, as the OCP example), a full field, a sparse mask over fixed init bits, a partial mask.
FORMAT = [8, 4, 4, 16]
FIELDS = [EvFieldDef(8, 0, 0, 179, 0xFF), EvFieldDef(4, 0, 0, 0, 0xF), EvFieldDef(4, 0b1010, 0, 0, 0b0101),
          EvFieldDef(16, 0xBEE0, 0, 0, 0x000F)]


def expand(raw: int, fmt=FORMAT, fields=FIELDS, container: int = 32) -> int:
    """mrc_ctl.h: each field starts at init_val; for each mask bit (most significant first) the next most
    significant bit of the raw EV is pulled into it; the fields are then concatenated, first one highest."""
    pos = container
    value = 0
    for width, f in zip(fmt, fields):
        v = f.init_val
        for bit in range(f.width - 1, -1, -1):
            if f.mask >> bit & 1:
                pos -= 1
                v = (v & ~(1 << bit)) | ((raw >> pos & 1) << bit)
        value = (value << width) | v
    return value


def raw_of(t0: int, t1: int, a: int, b: int) -> int:
    """The raw EV (MSB first) pulling t0 (8 bits), t1 (4), a (2) and b (4)."""
    return (t0 << 24) | (t1 << 20) | (a << 18) | (b << 14)


RAWS = [(raw_of(3 + k, k % 16, k % 4, (5 * k) % 16), k % 2 + 1) for k in range(16)]


def _fields_cfg(raws=RAWS, **kw) -> dict:
    return dict(evs=raws, ev_format=FORMAT, ev_fields=FIELDS, ev_active=len(raws), mtu=1024, **kw)


@case("controller.ev-field-expansion", MUST, registry=CASES,
      ref="notes §2.2 (mrc_ctl.h field expansion: init_val, then for each mask bit pull the next most "
          "significant EV bit; fields concatenated)",
      behaviour="Raw EVs of an EXP profile are expanded field by field (init values, sparse and partial masks) "
                "and the expanded value is what the packets carry.",
      failure="the EVs on the wire are not the field expansion of the profile's raw EVs",
      network="lossless", mutants=["ev-fields-ignored"], needs=["ev_fields"])
def _expansion(t):
    sc, req, rsp, region = requester_pair(t, iut=_fields_cfg())
    post(sc, req, 1, pattern(32 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=5 * MS), "the write did not complete")
    want = {expand(raw) for raw, _ in RAWS}
    seen = {p.ev for p in sc.data_sent(req)}
    t.expect(seen <= want, f"EVs {sorted(hex(e) for e in seen - want)[:4]} are not expansions of the raw EVs "
                           f"(e.g. raw {RAWS[1][0]:#010x} -> {expand(RAWS[1][0]):#010x})")
    t.expect(len(seen) >= 12, f"only {len(seen)} of 16 EVs used over 32 packets")


@case("controller.gen-ev-field-ranges", MUST, registry=CASES,
      ref="notes §2.2 (mrc_ctl.h struct mrc_ctl_ev_field: min_val / max_val are the 'field value for generated "
          "EVs'); OCP examples/mrc_ctl_gen_ev.md (T0 'Maximum of 180 links': max_val 179 caps the generated values)",
      behaviour="A generated (GEN) EV profile's EVs keep every field within its [min_val, max_val]: with T0 "
                "capped at 179, no packet carries an EV whose T0 field is 180-255, and every EV is an expansion "
                "of the fields.",
      failure="a generated EV has a field outside its range (or is not an expansion of the fields)",
      network="lossless", mutants=["ev-fields-ignored", "ev-halves-swapped", "sticky-ev"], needs=["ev_fields"])
def _gen_ranges(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(ev_gen_count=32, ev_format=FORMAT, ev_fields=FIELDS,
                                                      ev_active=32, mtu=1024))
    post(sc, req, 1, pattern(32 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=5 * MS), "the write did not complete")
    seen = {p.ev for p in sc.data_sent(req)}
    out = sorted(hex(e) for e in seen if e >> 24 > 179)
    t.expect(not out, f"EVs {out[:4]} have T0 field > 179 (max_val)")
    t0 = {e >> 24 for e in seen}
    raws = {raw_of(a, b, c, d) for a in t0 for b in range(16) for c in range(4) for d in range(16)}
    wrong = sorted(hex(e) for e in seen - {expand(r) for r in raws})
    t.expect(not wrong, f"EVs {wrong[:4]} are not expansions of the profile's fields")
    t.expect(len(seen) >= 16, f"only {len(seen)} of 32 generated EVs used over 32 packets")


@case("controller.denied-never-used", MUST, registry=CASES,
      ref="notes §3.4 (DENIED: set and cleared by the controller only); §3.9 (MODIFY_EV_STATE)",
      behaviour="An EV the controller sets DENIED mid-transfer carries no packet of any kind from then on; set "
                "GOOD again, it is used again.",
      failure="a DENIED EV carried packets",
      network="lossless", mutants=["uses-denied-ev", "ctl-state-ignored"], needs=["ev_modify"])
def _denied(t):
    ev_list = evs(2, 4)
    sc, req, rsp, region = requester_pair(t, iut=dict(evs=ev_list, ev_active=8, mtu=1024))
    x = ev_list[2][0]
    post(sc, req, 1, pattern(512 * 1024), region)
    sc.run_for(6 * US)
    req.ep.set_ev_state(x, "DENIED", sc.now)
    since = sc.now
    t.expect(sc.run(sends_done(req, 1), max_ps=10 * MS), "the write did not complete")
    used = [p for p in sc.sent(req, since=since) if p.ev == x]
    t.expect(not used, f"{len(used)} packet(s) on the DENIED EV {x:#x}, first {used[0]}" if used else "")
    req.ep.set_ev_state(x, "GOOD", sc.now)
    since = sc.now
    post(sc, req, 2, pattern(32 * 1024, 1), region)
    t.expect(sc.run(sends_done(req, 2), max_ps=20 * MS), "the second write did not complete")
    t.expect(any(p.ev == x for p in sc.data_sent(req, since)), "the EV set GOOD again was not used again")


def _blackhole_until(t, heal_ps, *, mark_after=False, **iut):
    """EV x loses everything until `heal_ps` (then, with `mark_after`, its packets arrive CE-marked)."""
    ev_list = evs(2, 8)
    cfg = dict(evs=ev_list, ev_active=16, mtu=1024, timeout=12, options={"ev_probe_interval_ps": 50 * US})
    cfg.update(iut)
    sc, req, rsp, region = requester_pair(t, iut=cfg, tester=dict(options={"always_skip_marks": 0}))
    x = ev_list[0][0]

    def route(sc, p):
        if p.src != "req" or p.ev != x:
            return None
        if sc.now < heal_ps:
            return drop(p)
        return marked(p) if mark_after else None

    sc.route = route
    post(sc, req, 1, pattern(64 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=20 * MS), "the write did not complete")
    sc.run_for(max(0, 2 * MS - sc.now))
    return sc, req, x


@case("controller.ev-events", MUST, registry=CASES,
      ref="notes §3.2 ('EV events raised only for transitions to ASSUMED_BAD and GOOD'; events carry EV, "
          "drop_count, state); §3.9 (EV event CQ)",
      behaviour="A silent loss that retires an EV raises an ASSUMED_BAD event for it (with its port); its "
                "return after probes raises a GOOD event; no other EV changes state.",
      failure="EV events are missing or wrong",
      network="one EV is a black hole until 150 us", mutants=["no-ev-events", "no-probes"], needs=["ev_events"])
def _events(t):
    sc, req, x = _blackhole_until(t, 150 * US)
    ev_events = [e for e in req.poll_events() if e.kind == "EV_STATE"]
    got = [(e.ev, e.state) for e in ev_events]
    t.expect(got[:1] == [(x, "ASSUMED_BAD")], f"EV events {[(hex(a), b) for a, b in got]}, expected ASSUMED_BAD "
                                              f"then GOOD for {x:#x}")
    t.expect((x, "GOOD") in got[1:], f"no GOOD event for {x:#x} after it healed: {[(hex(a), b) for a, b in got]}")
    t.expect(ev_events[0].port == 1, f"ASSUMED_BAD event on port {ev_events[0].port}, expected the EV's port 1")
    others = {a for a, _ in got} - {x}
    t.expect(not others, f"events for EVs that never failed: {sorted(hex(e) for e in others)}")


@case("controller.good-event-after-marked-probe", MUST, registry=CASES,
      ref="notes §3.4 (ASSUMED_BAD leaves on a probe answer: m = NONE -> GOOD, m = SKIP_ONCE -> SKIP, then GOOD); "
          "§3.2 (EV events for transitions to ASSUMED_BAD and GOOD)",
      behaviour="An EV reported ASSUMED_BAD is reported GOOD when it is back in service, also when its probe "
                "answer came back ECN-marked (ASSUMED_BAD -> SKIP -> GOOD).",
      failure="an EV came back into service without a GOOD event",
      network="one EV is a black hole until 150 us, then its packets arrive CE-marked",
      mutants=["no-ev-events", "no-probes", "ev-halves-swapped", "sack-bitmap-reversed"], needs=["ev_events"])
def _good_via_skip(t):
    sc, req, x = _blackhole_until(t, 150 * US, mark_after=True)
    since = sc.now
    post(sc, req, 2, pattern(64 * 1024, 1), sc.nodes["rsp"].ep.reg_mr(1 << 16))
    t.expect(sc.run(sends_done(req, 2), max_ps=sc.now + 20 * MS), "the second write did not complete")
    t.expect(any(p.ev == x for p in sc.data_sent(req, since)), "tester problem: the EV never came back into service")
    got = [(e.ev, e.state) for e in req.poll_events() if e.kind == "EV_STATE"]
    t.expect((x, "ASSUMED_BAD") in got, f"no ASSUMED_BAD event for {x:#x}")
    t.expect(got.index((x, "GOOD")) > got.index((x, "ASSUMED_BAD")) if (x, "GOOD") in got else False,
             f"{x:#x} carries data again but its events are {[(hex(a), b) for a, b in got]}: no GOOD")


@case("controller.event-mask", MUST, registry=CASES,
      ref="notes §3.9 (EV profile ev_event_mask); OCPGH mrc_ctl.h (events for the states in the mask)",
      behaviour="With the event mask set to GOOD only, the ASSUMED_BAD transition is not reported; the GOOD one is.",
      failure="an EV event outside the profile's event mask was reported",
      network="one EV is a black hole until 150 us", mutants=["ignores-event-mask", "no-ev-events", "no-probes"],
      needs=["ev_events"])
def _mask(t):
    sc, req, x = _blackhole_until(t, 150 * US, ev_event_mask=("GOOD",))
    got = [(e.ev, e.state) for e in req.poll_events() if e.kind == "EV_STATE"]
    t.expect(got == [(x, "GOOD")], f"EV events {[(hex(a), b) for a, b in got]}, expected only GOOD for {x:#x}")


@case("controller.ev-state-query", MUST, registry=CASES,
      ref="notes §3.9 (MODIFY_EV_STATE, QUERY_EV_STATE)",
      behaviour="An EV the controller sets ASSUMED_BAD is reported ASSUMED_BAD and carries no data at once; set "
                "GOOD, it is reported GOOD.",
      failure="MODIFY_EV_STATE / QUERY_EV_STATE do not work",
      network="lossless", mutants=["ctl-state-ignored"], needs=["ev_modify", "ev_query"])
def _query(t):
    ev_list = evs(2, 4)
    sc, req, rsp, region = requester_pair(t, iut=dict(evs=ev_list, ev_active=8, mtu=1024))
    x = ev_list[1][0]
    req.ep.set_ev_state(x, "ASSUMED_BAD", 0)
    st = {e.ev: e.state for e in req.ep.ev_table()}
    t.expect(st.get(x) == "ASSUMED_BAD", f"QUERY says {st.get(x)} after MODIFY_EV_STATE ASSUMED_BAD")
    post(sc, req, 1, pattern(16 * 1024), region)
    sc.run_for(5 * US)
    used = [p for p in sc.data_sent(req) if p.ev == x]
    t.expect(not used, f"{len(used)} data packets on the EV set ASSUMED_BAD")
    req.ep.set_ev_state(x, "GOOD", sc.now)
    st = {e.ev: e.state for e in req.ep.ev_table()}
    t.expect(st.get(x) == "GOOD", f"QUERY says {st.get(x)} after MODIFY_EV_STATE GOOD")


@case("controller.ev-min-active", SHOULD, registry=CASES,
      ref="notes §3.2 (ev_min_active: 'Min number of EVs that must remain active to avoid the situation of "
          "marking too many EVs as ASSUMED_BAD')",
      behaviour="With 4 EVs and ev_min_active = 3, losses on two EVs retire at most one of them.",
      failure="more EVs retired than ev_min_active allows",
      network="two of four EVs are black holes", mutants=["ignores-min-active"], needs=["ev_query"])
def _min_active(t):
    ev_list = evs(1, 4)
    sc, req, rsp, region = requester_pair(t, iut=dict(ports=1, evs=ev_list, ev_active=4, ev_min_active=3,
                                                      mtu=1024, timeout=10))
    dead = {ev_list[0][0], ev_list[1][0]}
    sc.route = lambda sc, p: drop(p) if p.src == "req" and p.ev in dead and sc.now < 1 * MS else None
    post(sc, req, 1, pattern(32 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=20 * MS), "the write did not complete")
    bad = [e for e in req.ep.ev_table() if e.state == "ASSUMED_BAD"]
    t.note("assumed_bad", len(bad))
    t.expect(len(bad) <= 1, f"{len(bad)} EVs ASSUMED_BAD with 4 EVs and ev_min_active 3")


@case("controller.port-status-rx", MUST, registry=CASES,
      ref="notes §2.7 (Port Status Update: 'Peers adjust their EV selection immediately'); §1.2 (OAI: 'tells "
          "peers not to use that plane for inbound traffic')",
      behaviour="When the peer reports (PORT_STATUS_UPDATE) that its port 2 is down, the requester sends "
                "nothing more on plane 2 and completes the transfer on plane 1.",
      failure="the requester keeps using a plane its peer reported down",
      network="the responder's port 2 goes down at 6 us, during a 256-packet write", mutants=["ignores-port-status"])
def _psu_rx(t):
    sc, req, rsp, region = requester_pair(t)
    data = pattern(1 << 20)
    post(sc, req, 1, data, region)
    sc.run_for(6 * US)
    sc.set_port(rsp, 2, False)
    t.expect(sc.run(sends_done(req, 1), max_ps=20 * MS), "the write did not complete")
    psu = [p for p in sc.sent(rsp, "ep_req") if p.arrived is not None]
    t.expect(psu, "tester problem: no port status update reached the requester")
    late = [p for p in sc.sent(req, since=psu[0].arrived) if p.port == 2]
    t.expect(not late, f"{len(late)} packet(s) sent on port 2 after the update arrived, first {late[0]}"
             if late else "")
    t.expect(rsp.ep.read_mr(region)[:len(data)] == data, "the bytes placed at the responder differ")


@case("controller.port-status-tx", MUST, registry=CASES,
      ref="notes §2.7 (Port Status Update 'carrying a port_status_mask bitmap with one bit per local port', "
          "endpoint operation on QP 0x2); §1.2 (OAI: 'immediately tells peers')",
      behaviour="When a local port goes down, the endpoint at once sends its peer a PORT_STATUS_UPDATE (opcode "
                "0xD8, QP 2) on a live port with that port's bit clear, and sends nothing on the dead port; "
                "when it comes back, an update with the bit set follows and the port is used again.",
      failure="peers are not told about a local port going down or up",
      network="the requester's port 2 goes down at 20 us and comes back at 300 us",
      mutants=["no-port-status-tx", "ignores-port-down"], needs=["port_status"])
def _psu_tx(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=1024))
    post(sc, req, 1, pattern(128 * 1024), region)
    sc.run_for(20 * US)
    down_at = sc.now
    sc.set_port(req, 2, False)
    sc.run_for(1 * US)
    upd = [p for p in sc.sent(req, "ep_req", since=down_at) if p["dqpn"] == 2 and p["ep_op"] == 0]
    t.expect(upd, "no PORT_STATUS_UPDATE within 1 us of the port going down")
    t.expect(upd[0].port == 1 and upd[0]["port_status_mask"] & 0b11 == 0b01,
             f"update on port {upd[0].port} with mask {upd[0]['port_status_mask']:#x}, expected port 1, mask 0b01")
    t.expect(sc.run(sends_done(req, 1), max_ps=20 * MS), "the write did not complete with one port")
    dead = [p for p in sc.sent(req, since=down_at) if p.port == 2]
    t.expect(not dead, f"{len(dead)} packet(s) sent on the dead port")
    sc.run_for(max(0, 300 * US - sc.now))
    up_at = sc.now
    sc.set_port(req, 2, True)
    post(sc, req, 2, pattern(64 * 1024, 1), region)
    t.expect(sc.run(sends_done(req, 2), max_ps=20 * MS), "the second write did not complete")
    upd = [p for p in sc.sent(req, "ep_req", since=up_at) if p["ep_op"] == 0]
    t.expect(upd and upd[0]["port_status_mask"] & 0b11 == 0b11, "no update with both ports up after the port "
                                                                  "came back")
    t.expect(any(p.port == 2 for p in sc.data_sent(req, up_at)), "port 2 carried no data after it came back")
