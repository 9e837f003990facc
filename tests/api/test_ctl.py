"""The controller API (mrc_ctl.h style): profile state machines, EV operations, EV events,
CC profiles, endpoint requests and port status updates, over two in-memory Devices."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.api import Device
from mrc.ctl import EV_UNPOPULATED, CtlEv, EpRequest, EvFmtMode, EvState, ProfileState
from mrc.errors import E2BIG, EBUSY, EINVAL, ENOENT
from mrc.ctl.ev_fields import EvField
from mrc.units import US

from tests.twodevices import RTR, RTS, Conn, ctl_evs, explicit_evs

MTU = 4096


def bound_qp(dev: Device, ev_profile: int = 1, cc_profile: int = 1):
    qp = dev.create_qp(dev.create_cq())
    qp.modify("INIT", ev_profile_id=ev_profile, cc_profile_id=cc_profile)
    return qp


def transfer(env, conn, nbytes: int, wr_id: int, *, direction: str = "AB", max_time_ps: int | None = None) -> bool:
    """One write of `nbytes` from a to b ("AB") or b to a ("BA"), run until it completes; True on success."""
    src_dev, dst_dev = (env.a, env.b) if direction == "AB" else (env.b, env.a)
    qp, cq = (conn.qa, conn.cqa) if direction == "AB" else (conn.qb, conn.cqb)
    src = bytearray(np.random.default_rng(wr_id).integers(0, 256, nbytes, dtype=np.uint8).tobytes())
    dst = bytearray(nbytes)
    ms, md = src_dev.reg_mr(src), dst_dev.reg_mr(dst)
    qp.post_write(wr_id, ms.sge(), remote_addr=md.addr, rkey=md.rkey)
    got = []
    env.net.run(lambda: bool(got.extend(cq.poll()) or got), max_time_ps=max_time_ps)
    ms.deregister()
    md.deregister()
    return len(got) == 1 and got[0].status == "SUCCESS" and bytes(dst) == bytes(src)


# --- profile state machines ----------------------------------------------------------------

def fmt(c, fid):
    """(state, mode, widths) of an EV format profile."""
    q = c.query_ev_fmt_profile(fid)
    return q.profile_state.name, q.ev_fmt_mode.name if q.ev_fmt_mode else None, [f.width for f in q.ev_fmt_op.fmt_fields]


def test_ev_format_profile_state_machine():
    c = Device().ctl
    with pytest.raises(EINVAL, match="cannot go from INIT to ONLINE"):
        c.modify_ev_fmt_profile(1, state="ONLINE")
    with pytest.raises(EINVAL, match="MODE is required to go OFFLINE"):
        c.modify_ev_fmt_profile(1, state="OFFLINE")
    with pytest.raises(EINVAL, match="MODIFY_FIELDS needs OFFLINE \\(it is INIT\\)"):
        c.modify_ev_fmt_profile(1, mode="STEV", fields=[16, 16])
    with pytest.raises(E2BIG, match="total 33 bits, more than the 32 of STEV"):
        c.modify_ev_fmt_profile(1, mode="STEV", fields=[16, 17], state="OFFLINE")
    with pytest.raises(EINVAL, match="fmt_fields\\[1\\].width = 0"):
        c.modify_ev_fmt_profile(1, mode="STEV", fields=[16, 0], state="OFFLINE")
    assert fmt(c, 1) == ("INIT", None, [])  # nothing applied from a refused call; an unconfigured id is INIT
    c.modify_ev_fmt_profile(1, mode="STEV", fields=[16, 16], state="OFFLINE")  # one call, as the OCP examples do
    assert fmt(c, 1) == ("OFFLINE", "STEV", [16, 16])
    c.modify_ev_fmt_profile(2, mode="SRv6", state="OFFLINE")
    with pytest.raises(EINVAL, match="MODIFY_FIELDS is required to go ONLINE"):
        c.modify_ev_fmt_profile(2, state="ONLINE")
    with pytest.raises(E2BIG, match="more than the 16 of UDP"):
        c.modify_ev_fmt_profile(1, mode="UDP")  # the fields set must fit a new mode
    c.modify_ev_fmt_profile(1, state="ONLINE")
    for kw, name in ((dict(mode="UDP"), "MODE"), (dict(fields=[8]), "MODIFY_FIELDS")):
        with pytest.raises(EINVAL, match=f"{name} cannot change while ONLINE"):
            c.modify_ev_fmt_profile(1, **kw)
    with pytest.raises(EINVAL, match="cannot go from ONLINE to INIT"):
        c.modify_ev_fmt_profile(1, state="INIT")
    c.modify_ev_profile(1, mode="GEN", fmt_id=1, count=8, min_active=2, event_mask=3,
                        fields=[EvField(16, mask=0xFFFF), EvField(16, mask=0xFFFF)], state="OFFLINE")
    c.modify_ev_profile(1, state="ONLINE")
    with pytest.raises(EBUSY, match="EV profile\\(s\\) \\[1\\] use it"):
        c.modify_ev_fmt_profile(1, state="OFFLINE")
    assert fmt(c, 1)[0] == "ONLINE"
    c.modify_ev_profile(1, state="OFFLINE")
    c.modify_ev_fmt_profile(1, state="OFFLINE")
    c.modify_ev_fmt_profile(1, state="INIT")
    assert fmt(c, 1) == ("INIT", None, [])  # INIT clears the config
    with pytest.raises(EINVAL, match="format profile 1 is INIT, not ONLINE"):
        c.modify_ev_profile(1, state="ONLINE")


def test_query_fields_reports_e2big_and_the_count_needed():
    from mrc.ctl import EvFmtOp, EvFmtOpArgs, EvFmtProfileAttr, EvFmtProfileAttrMask

    c = Device().ctl
    c.modify_ev_fmt_profile(4, mode="SRV6", fields=[32, 16, 16, 16, 16], state="OFFLINE")
    attr = EvFmtProfileAttr(ev_fmt_op=EvFmtOpArgs(EvFmtOp.QUERY_FIELDS, fmt_field_count=3))
    with pytest.raises(E2BIG) as e:
        c.query_ev_fmt_profile(4, EvFmtProfileAttrMask.OP, attr)
    assert e.value.required == 5 and attr.ev_fmt_op.fmt_field_count == 5
    got = c.query_ev_fmt_profile(4, EvFmtProfileAttrMask.OP, attr)
    assert [f.width for f in got.ev_fmt_op.fmt_fields] == [32, 16, 16, 16, 16] and got.profile_state is None
    with pytest.raises(EINVAL, match="QUERY_FIELDS only"):
        c.query_ev_fmt_profile(4, EvFmtProfileAttrMask.OP,
                               EvFmtProfileAttr(ev_fmt_op=EvFmtOpArgs(EvFmtOp.MODIFY_FIELDS, [8])))


def test_ev_profile_state_machine_and_ebusy():
    dev = Device(ports=2)
    c = dev.ctl
    c.modify_ev_fmt_profile(1, mode="STEV", fields=[16, 16], state="OFFLINE")
    fields = [EvField(16, mask=0xFFFF), EvField(16, 0x77)]
    with pytest.raises(EINVAL, match="format profile 1 is OFFLINE, not ONLINE"):
        c.modify_ev_profile(1, fmt_id=1)
    c.modify_ev_fmt_profile(1, state="ONLINE")
    for kw, missing in ((dict(), "MODE"), (dict(mode="GEN"), "COUNT"), (dict(mode="GEN", count=8), "FMT_ID"),
                        (dict(mode="GEN", count=8, fmt_id=1), "MODIFY_FIELDS")):
        with pytest.raises(EINVAL, match=f"{missing} is required to go OFFLINE"):
            c.modify_ev_profile(1, state="OFFLINE", **kw)
    with pytest.raises(EINVAL, match="set FMT_ID before fields"):
        c.modify_ev_profile(2, fields=fields)
    with pytest.raises(EINVAL, match="ev_count = 300 must be an integer in \\[1, 256\\]"):
        c.modify_ev_profile(1, count=300)
    with pytest.raises(EINVAL, match="ev_min_active 9 exceeds ev_count 8"):
        c.modify_ev_profile(1, count=8, min_active=9)
    with pytest.raises(EINVAL, match="EV_OP and EV_FIELDS_OP are mutually exclusive"):
        from mrc.ctl import EvFieldsOpArgs, EvOpArgs, EvProfileAttr, EvProfileAttrMask as M

        c.modify_ev_profile(1, EvProfileAttr(ev_op=EvOpArgs(), ev_fields_op=EvFieldsOpArgs()), M.EV_OP | M.EV_FIELDS_OP)
    c.modify_ev_profile(1, mode="GEN", count=8, fmt_id=1, fields=fields, state="OFFLINE")
    table = c.ev_table(1)
    assert [e["state"] for e in table] == ["GOOD"] * 8
    assert [e["port"] for e in table] == [1, 2] * 4
    assert all(e["expanded"] & 0xFFFF == 0x77 for e in table)  # the fixed second field
    with pytest.raises(EINVAL, match="MIN_ACTIVE is required to go ONLINE"):
        c.modify_ev_profile(1, state="ONLINE")
    c.modify_ev_profile(1, min_active=2)
    with pytest.raises(EINVAL, match="EVENT_MASK is required to go ONLINE"):
        c.modify_ev_profile(1, state="ONLINE")
    with pytest.raises(EINVAL, match="only GOOD and ASSUMED_BAD"):
        c.modify_ev_profile(1, event_mask=EvState.DENIED)
    c.modify_ev_profile(1, count=12, event_mask=0)  # OFFLINE: COUNT may change (the array is rebuilt)
    assert len(c.query_ev_array(1)) == 12
    c.modify_ev_profile(1, state="ONLINE")
    for kw, name in ((dict(count=4), "COUNT"), (dict(mode="EXP"), "MODE"), (dict(min_active=1), "MIN_ACTIVE"),
                     (dict(fmt_id=1), "FMT_ID"), (dict(seed=3), "VENDOR_CFG")):
        with pytest.raises(EINVAL, match=f"{name} cannot change while ONLINE"):
            c.modify_ev_profile(1, **kw)
    c.modify_ev_profile(1, event_mask=int(EvState.GOOD))  # EVENT_MASK may (MODIFY_ONLINE)
    with pytest.raises(EINVAL, match="cannot go from ONLINE to INIT"):
        c.modify_ev_profile(1, state="INIT")
    c.modify_cc_profile(1, algorithm="uet-1.0-nscc", config={}, state="OFFLINE")
    c.modify_cc_profile(1, state="ONLINE")
    qp = bound_qp(dev)
    array = c.query_ev_array(1)
    assert [e["ev"] for e in qp.ev_states()] == [e for e in array if e.port == 1] + [e for e in array if e.port == 2]
    with pytest.raises(EBUSY, match="1 QP\\(s\\) still use it"):
        c.modify_ev_profile(1, state="OFFLINE")
    qp.modify("RESET")  # releases the profiles
    c.modify_ev_profile(1, state="OFFLINE")
    with pytest.raises(EINVAL, match="EV profile 1 is OFFLINE, not ONLINE"):
        qp.modify("INIT", ev_profile_id=1, cc_profile_id=1)
    c.modify_ev_profile(1, state="INIT")
    q = c.query_ev_profile(1)
    assert q.ev_mode is None and q.ev_count == 0 and q.profile_state == ProfileState.INIT


def test_ev_count_align_is_reported_and_honoured():
    dev = Device(ports=2, ev_count_align=4)
    c = dev.ctl
    assert c.query_device().ev.ev_count_align == 4
    with pytest.raises(EINVAL, match="ev_count = 6 is not a multiple of ev_count_align = 4"):
        c.modify_ev_profile(1, mode="AUTO", count=6, min_active=1, event_mask=3, state="OFFLINE")
    c.modify_ev_profile(1, mode="AUTO", count=8, min_active=1, event_mask=3, state="OFFLINE")
    assert Device().ctl.query_device().ev.ev_count_align == 1  # never 0: ev_count % ev_count_align is defined


def test_explicit_profile_refuses_online_while_unpopulated():
    dev = Device(ports=2)
    c = dev.ctl
    c.modify_ev_fmt_profile(1, mode="STEV", fields=[32], state="OFFLINE")
    c.modify_ev_fmt_profile(1, state="ONLINE")
    c.modify_ev_profile(1, mode="EXP", fmt_id=1, count=4, min_active=1, event_mask=3,
                        fields=[EvField(32, mask=0xFFFFFFFF)], state="OFFLINE")
    assert c.query_ev_array(1) == [EV_UNPOPULATED] * 4
    assert [e["state"] for e in c.ev_table(1)] == ["UNPOPULATED"] * 4
    with pytest.raises(EINVAL, match="4 explicit EV\\(s\\) still unpopulated"):
        c.modify_ev_profile(1, state="ONLINE")
    evs = [CtlEv.from_int(0x100 + k, k % 2 + 1) for k in range(4)]
    for ev in evs[:3]:
        c.replace_ev(1, EV_UNPOPULATED, ev)
    with pytest.raises(EINVAL, match="1 explicit EV\\(s\\) still unpopulated"):
        c.modify_ev_profile(1, state="ONLINE")
    c.replace_ev(1, EV_UNPOPULATED, evs[3])
    c.modify_ev_profile(1, state="ONLINE")
    assert [(e["ev"], e["value"], e["state"]) for e in c.ev_table(1)] == [
        (evs[0], 0x100, "GOOD"), (evs[1], 0x101, "GOOD"), (evs[2], 0x102, "GOOD"), (evs[3], 0x103, "GOOD")]
    c.modify_ev_profile(2, mode="AUTO", count=4, min_active=1, event_mask=0, state="OFFLINE")
    with pytest.raises(EINVAL, match="AUTO profiles have no controller-provided EVs"):
        c.replace_ev(2, c.query_ev_array(2)[0], CtlEv.from_int(5, 1))


# --- EV operations ---------------------------------------------------------------------------

def tiers_profile(dev: Device, count: int = 4):
    """mrc_ctl_gen_ev.md's three tiers as an explicit profile: T0 8 bits (0-179 valid), T1 and T2 4 bits."""
    c = dev.ctl
    c.modify_ev_fmt_profile(3, mode="STEV", fields=[8, 4, 4], state="OFFLINE")
    c.modify_ev_fmt_profile(3, state="ONLINE")
    c.modify_ev_profile(3, mode="EXP", fmt_id=3, count=count, min_active=0, event_mask=3, state="OFFLINE",
                        fields=[EvField(8, 0, 0, 179, 0xFF), EvField(4, 0, 0, 15, 0xF), EvField(4, 0, 0, 15, 0xF)])


def raw(t0: int, t1: int, t2: int, port: int = 1) -> CtlEv:
    """The EV pulling t0, t1, t2 (MSB first from the value's first bits), on `port`."""
    return CtlEv.from_int((t0 << 24) | (t1 << 20) | (t2 << 16), port)


def test_replace_ev_single_all_copies_and_ranges_only_for_generated_evs():
    dev = Device(ports=2)
    c = dev.ctl
    tiers_profile(dev)
    assert c.replace_ev(3, EV_UNPOPULATED, raw(1, 2, 3)) == 1
    assert c.ev_table(3)[0] == {"ev": raw(1, 2, 3), "value": 0x0123, "expanded": 0x0123, "port": 1, "state": "GOOD"}
    # T0 = 200 is outside [0, 179]: min/max bound generated EVs only (mrc_ctl.h), an explicit EV is taken as given
    c.replace_ev(3, EV_UNPOPULATED, raw(200, 1, 1, port=2))
    assert c.ev_table(3)[1]["state"] == "GOOD" and c.query_ev_state(3, raw(200, 1, 1, port=2)) == EvState.GOOD
    # EVs may repeat in an explicit array; the same value on another port is another EV
    c.replace_ev(3, EV_UNPOPULATED, raw(1, 2, 3))
    c.replace_ev(3, EV_UNPOPULATED, raw(1, 2, 3, port=2))
    assert c.query_ev_array(3) == [raw(1, 2, 3), raw(200, 1, 1, 2), raw(1, 2, 3), raw(1, 2, 3, 2)]
    with pytest.raises(EINVAL, match="does not fit the profile's fields"):
        c.replace_ev(3, raw(1, 2, 3), CtlEv.from_int(((4 << 24) | (5 << 20) | (6 << 16)) | 1, 1))  # bits not pulled
    with pytest.raises(EINVAL, match="port 3 outside"):
        c.replace_ev(3, raw(1, 2, 3), raw(4, 5, 6, port=3))
    with pytest.raises(ENOENT, match="not in the array"):
        c.replace_ev(3, raw(9, 9, 9), raw(4, 5, 6))
    with pytest.raises(ENOENT, match="not in the array"):
        c.replace_ev(3, CtlEv.from_int(0x0123, 1), raw(4, 5, 6))  # the value on the wire is not the EV's name
    assert c.replace_ev(3, raw(1, 2, 3), raw(7, 8, 9), all_copies=True) == 2  # every occurrence on port 1
    assert c.query_ev_array(3) == [raw(7, 8, 9), raw(200, 1, 1, 2), raw(7, 8, 9), raw(1, 2, 3, 2)]
    assert c.replace_ev(3, raw(7, 8, 9), raw(1, 1, 1), state="DENIED") == 1  # one implementation-selected copy
    assert c.query_ev_array(3)[:3] == [raw(1, 1, 1), raw(200, 1, 1, 2), raw(7, 8, 9)]
    with pytest.raises(ENOENT):
        c.modify_ev_state(3, raw(4, 5, 6), "DENIED")
    c.modify_ev_profile(3, state="ONLINE")
    c.modify_cc_profile(1, algorithm="fixed-window", config={"max_cwnd": 65536}, state="OFFLINE")
    c.modify_cc_profile(1, state="ONLINE")
    qp = bound_qp(dev, ev_profile=3)
    assert sorted((e["value"], e["state"]) for e in qp.ev_states()) == [
        (0x0111, "DENIED"), (0x0123, "GOOD"), (0x0789, "GOOD"), (0xC811, "GOOD")]
    # ONLINE (MODIFY_ONLINE): a replacement reaches the bound QP at once; moving it to another plane does not
    c.replace_ev(3, raw(7, 8, 9), raw(3, 3, 3))
    assert {e["value"]: (e["state"], e["port"], e["ev"]) for e in qp.ev_states()}[0x0333] == ("GOOD", 1, raw(3, 3, 3))
    with pytest.raises(EBUSY, match="cannot move EV .* from port 1 to 2 while 1 QP"):
        c.replace_ev(3, raw(3, 3, 3), raw(4, 4, 4, port=2))
    with pytest.raises(EINVAL, match="UNPOPULATED needs an OFFLINE profile"):
        c.replace_ev(3, raw(3, 3, 3), EV_UNPOPULATED)


def test_a_fixed_part_does_not_hide_the_ev_the_controller_installed():
    """Fields with a fixed part (init_val) expand the EV into another value; the controller still names the EV
    by what it gave (issue 30: DENIED on the raw EV it just installed gave ENOENT)."""
    dev = Device(ports=2)
    c = dev.ctl
    c.modify_ev_fmt_profile(1, mode="STEV", fields=[16, 16], state="OFFLINE")
    c.modify_ev_fmt_profile(1, state="ONLINE")
    c.modify_ev_profile(1, mode="EXP", fmt_id=1, count=2, min_active=1, event_mask=3, state="OFFLINE",
                        fields=[EvField(16, 0xAB00, 0, 0, 0x00FF), EvField(16, 0x1234)])
    mine = [CtlEv(b"\x07", 1), CtlEv(b"\x09", 2)]
    for ev in mine:
        c.replace_ev(1, EV_UNPOPULATED, ev)
    c.modify_ev_profile(1, state="ONLINE")
    assert [e["value"] for e in c.ev_table(1)] == [0xAB071234, 0xAB091234]
    c.modify_ev_state(1, mine[0], "DENIED")
    assert c.query_ev_state(1, mine[0]) == EvState.DENIED and c.query_ev_state(1, mine[1]) == EvState.GOOD
    assert c.ev_of(1, 0xAB071234) == mine[0]


def test_generated_srv6_profile_carries_compact_evs_and_expands_to_usid_addresses(make_two_devices):
    # mrc_ctl_gen_ev.md: fixed 32-bit locator, four uSIDs whose upper byte is the tier number
    env = make_two_devices()
    fields = [EvField(32, 0xDEADCAFE)] + [EvField(16, i << 8, 0, 255, 0xFF) for i in range(1, 5)]
    for dev in (env.a, env.b):
        c = dev.ctl
        c.modify_ev_fmt_profile(5, mode="SRv6", fields=[32, 16, 16, 16, 16], state="OFFLINE")
        c.modify_ev_fmt_profile(5, state="ONLINE")
        c.modify_ev_profile(5, mode="GEN", fmt_id=5, count=32, min_active=8, event_mask=3, fields=fields,
                            state="OFFLINE", seed=11)
        c.modify_ev_profile(5, state="ONLINE")
    table = env.a.ctl.ev_table(5)
    assert len({e["ev"] for e in table}) == 32 and [e["port"] for e in table] == [1, 2] * 16
    for e in table:
        value = e["value"]  # SRv6: the core carries the compact (raw) EV, the EV's first 32 bits
        assert value == e["ev"].to_int(32) and e["ev"].val[4:] == bytes(28)
        b = [(value >> s) & 0xFF for s in (24, 16, 8, 0)]
        assert e["expanded"] == (0xDEADCAFE << 64) | sum(((i + 1) << 8 | b[i]) << (48 - 16 * i) for i in range(4))
    cqa, cqb = env.a.create_cq(), env.b.create_cq()
    qa, qb = env.a.create_qp(cqa), env.b.create_qp(cqb)
    for q in (qa, qb):
        q.modify("INIT", ev_profile_id=5, cc_profile_id=1)
    qa.modify("RTR", dest_qp_num=qb.qp_num, remote_address="B", **RTR)
    qb.modify("RTR", dest_qp_num=qa.qp_num, remote_address="A", **RTR)
    qa.modify("RTS", **RTS)
    qb.modify("RTS", **RTS)
    assert {e["value"] for e in qa.ev_states()} == {e["value"] for e in table}
    assert transfer(env, Conn(qa, qb, cqa, cqb), 20 * MTU, wr_id=1)
    assert {r.ev for r in env.net.data_sent("A")} <= {e["value"] for e in table}


def deny_env(make_two_devices, n_pairs: int = 2):
    env = make_two_devices(ev_count=8)
    conns = [env.connect(rts=dict(ev_active_target=8)) for _ in range(n_pairs)]
    return env, conns


def test_denied_ev_reaches_every_bound_qp_and_never_carries_a_packet(make_two_devices):
    env, conns = deny_env(make_two_devices)
    evs, names = explicit_evs(0, 8), ctl_evs(0, 8)
    denied, name = evs[2], names[2]
    env.a.ctl.modify_ev_state(1, name, "DENIED", now=env.net.now)
    for c in conns:
        st = {e["value"]: e for e in c.qa.ev_states()}
        assert st[denied]["state"] == "DENIED" and not st[denied]["active"] and st[denied]["ev"] == name
    assert env.a.ctl.query_ev_state(1, name) == EvState.DENIED
    since = env.net.now
    for n, c in enumerate(conns):
        assert transfer(env, c, 24 * MTU, wr_id=10 + n)
    used = {r.ev for r in env.net.sent if r.src == "A" and r.time >= since}
    data = {r.ev for r in env.net.data_sent("A", since)}
    assert denied not in used  # no data, probe or control packet
    assert data == set(evs) - {denied}  # every other EV carried data
    env.a.ctl.modify_ev_state(1, name, EvState.GOOD, now=env.net.now)
    assert env.a.ctl.query_ev_state(1, name) == EvState.GOOD
    since = env.net.now
    for n, c in enumerate(conns):
        assert {e["value"]: e["state"] for e in c.qa.ev_states()}[denied] == "GOOD"
        assert transfer(env, c, 24 * MTU, wr_id=20 + n)
    assert denied in {r.ev for r in env.net.data_sent("A", since)}


def test_denying_a_whole_plane_keeps_the_other_planes_spraying(make_two_devices):
    env, (conn,) = deny_env(make_two_devices, n_pairs=1)
    for ev in ctl_evs(0, 8)[1::2]:  # every EV of port 2
        env.a.ctl.modify_ev_state(1, ev, "DENIED")
    active = [e for e in conn.qa.ev_states() if e["active"]]
    assert {e["port"] for e in active} == {1} and len(active) == 4  # port 1 keeps its share (target 8 / 2 planes)


def blackhole_env(make_two_devices, event_mask: int = 3):
    env = make_two_devices(ev_count=8, event_mask=event_mask)
    conn = env.connect(rts=dict(ev_active_target=8, ev_probe_interval_ps=20 * US, probe_successes=2))
    cq = env.a.ctl.create_ev_event_cq(16)
    return env, conn, cq


def test_blackholed_ev_is_assumed_bad_then_good_with_events(make_two_devices):
    env, conn, cq = blackhole_env(make_two_devices)
    hole, name = explicit_evs(0, 8)[5], ctl_evs(0, 8)[5]  # on port 2
    env.net.drop = lambda rec: rec.src == "A" and rec.ev == hole
    assert transfer(env, conn, 40 * MTU, wr_id=1)
    assert env.a.ctl.query_ev_state(1, name) == EvState.ASSUMED_BAD
    assert {e["value"]: e["state"] for e in conn.qa.ev_states()}[hole] == "ASSUMED_BAD"
    (event,) = cq.poll()
    # the EV as the controller named it; drop_count counts dropped events (none), losses the packets the path lost
    assert (event.profile_id, event.ev, event.port, event.state, event.drop_count) == (1, name, 2, EvState.ASSUMED_BAD, 0)
    assert event.value == hole and event.qp_num == conn.qa.qp_num and event.losses >= 1
    assert "drop_count=0 event(s)" in repr(event) and "losses=" in repr(event)
    states = {e["ev"]: e["state"] for e in env.a.ctl.ev_table(1)}
    assert states[name] == "ASSUMED_BAD" and list(states.values()).count("GOOD") == 7
    env.net.drop = None  # the path heals: EV probes bring it back
    assert env.net.run(lambda: env.a.ctl.query_ev_state(1, name) == EvState.GOOD, max_time_ps=env.net.now + 500 * US)
    assert [(e.ev, e.state) for e in cq.poll()] == [(name, EvState.GOOD)]


@pytest.mark.parametrize("mask, expected", [(int(EvState.ASSUMED_BAD), ["ASSUMED_BAD"]), (int(EvState.GOOD), ["GOOD"]), (0, [])])
def test_ev_events_follow_the_profile_event_mask(make_two_devices, mask, expected):
    env, conn, cq = blackhole_env(make_two_devices, event_mask=mask)
    hole, name = explicit_evs(0, 8)[1], ctl_evs(0, 8)[1]
    env.net.drop = lambda rec: rec.src == "A" and rec.ev == hole
    assert transfer(env, conn, 40 * MTU, wr_id=1)
    env.net.drop = None
    assert env.net.run(lambda: env.a.ctl.query_ev_state(1, name) == EvState.GOOD, max_time_ps=env.net.now + 500 * US)
    assert [e.state.name for e in cq.poll()] == expected


def test_controller_changes_report_good_only_and_drop_counts_when_the_queue_is_full(make_two_devices):
    env = make_two_devices(ev_count=8)
    env.connect()
    cq = env.a.ctl.create_ev_event_cq(2)
    ctl, evs = env.a.ctl, ctl_evs(0, 8)
    ctl.modify_ev_state(1, evs[0], "DENIED")
    assert len(cq) == 0  # DENIED is not an event state
    for ev in evs[:5]:
        ctl.modify_ev_state(1, ev, "DENIED")
        ctl.modify_ev_state(1, ev, "GOOD")  # DENIED -> GOOD: one GOOD event each
        assert len(cq) <= 2  # never more than cqe queued
    got = cq.poll()
    assert [(e.ev, e.state, e.drop_count) for e in got] == [(evs[0], EvState.GOOD, 0), (evs[1], EvState.GOOD, 0)]
    ctl.modify_ev_state(1, evs[6], "DENIED")
    ctl.modify_ev_state(1, evs[6], "GOOD")
    assert [(e.ev, e.drop_count) for e in cq.poll()] == [(evs[6], 3)]  # evs[2..4] were dropped
    ctl.modify_ev_profile(1, event_mask=int(EvState.ASSUMED_BAD))  # live on the bound QP
    ctl.modify_ev_state(1, evs[7], "DENIED")
    ctl.modify_ev_state(1, evs[7], "GOOD")
    assert cq.poll() == []


def test_ev_events_dropped_inside_the_device_count_into_drop_count(make_two_devices):
    """An EV event the core's event table has no room for is counted (``evt_n[2]``) and reaches every EV event
    CQ's drop_count with the next event delivered (mrc_ctl.h: precise drop counts)."""
    env = make_two_devices(ev_count=8)
    env.connect()
    cq = env.a.ctl.create_ev_event_cq(64)
    ctl, evs, T = env.a.ctl, ctl_evs(0, 8), env.a.T
    ctl.modify_ev_state(1, evs[0], "DENIED")
    T.evt[:]["kind"] = 0  # rows of no event
    T.evt_n[0] = T.evt.shape[0]  # the core's table is full when the EV turns GOOD
    ctl.modify_ev_state(1, evs[0], "GOOD")
    assert len(cq) == 0 and T.evt_n[2] == 0 and ctl.counters["events_dropped"] == 1
    ctl.modify_ev_state(1, evs[1], "DENIED")
    ctl.modify_ev_state(1, evs[1], "GOOD")
    assert [(e.ev, e.drop_count) for e in cq.poll()] == [(evs[1], 1)]
    assert ctl.query_device().opt_attr & 16  # EV_EVENT_PRECISE_DROP_CNT


# --- CC profiles -------------------------------------------------------------------------------

def test_cc_profile_state_machine():
    dev = Device()
    c = dev.ctl
    with pytest.raises(EINVAL, match="ALGORITHM is required to go OFFLINE"):
        c.modify_cc_profile(1, state="OFFLINE")
    with pytest.raises(EINVAL, match="set ALGORITHM before CONFIG"):
        c.modify_cc_profile(1, config={})
    with pytest.raises(EINVAL, match="algorithm 'dcqcn' not supported"):
        c.modify_cc_profile(1, algorithm="dcqcn")
    c.modify_cc_profile(1, algorithm="uet-1.0-nscc", state="OFFLINE")
    with pytest.raises(EINVAL, match="CONFIG is required to go ONLINE"):
        c.modify_cc_profile(1, state="ONLINE")
    c.modify_cc_profile(1, config={"base_rtt_ns": 4000}, state="ONLINE")
    with pytest.raises(EINVAL, match="ALGORITHM cannot change while ONLINE"):
        c.modify_cc_profile(1, algorithm=None)
    c.modify_ev_profile(1, mode="AUTO", count=8, min_active=2, event_mask=0, state="OFFLINE")
    c.modify_ev_profile(1, state="ONLINE")
    qp = bound_qp(dev)
    with pytest.raises(EBUSY, match="CC profile 1: 1 QP\\(s\\) still use it"):
        c.modify_cc_profile(1, state="OFFLINE")
    qp.modify("ERROR")
    dev.destroy_qp(qp)  # releases the profiles
    c.modify_cc_profile(1, state="OFFLINE")
    c.modify_cc_profile(1, state="INIT")
    q = c.query_cc_profile(1)
    assert (q.profile_state, q.algorithm, q.cc_config) == (ProfileState.INIT, None, None)


def test_nscc_config_in_ns_becomes_the_core_row_in_ps():
    from mrc.ctl import CcNsccCfg

    dev = Device()
    c = dev.ctl
    cfg = {"disable_qa": 1, "adjust_bytes_threshold": 65536, "adjust_period_threshold_ns": 6000, "base_rtt_ns": 5000,
           "eta": 512.0, "fi": 8192.0, "fi_scale": 0.5, "gamma": 0.7, "max_md_jump": 0.4, "max_cwnd": 200_000,
           "qa_gate": 2, "qa_threshold_ns": 12_000, "target_delay_ns": 3000}
    c.modify_cc_profile(4, algorithm="uet-1.0-nscc", config=CcNsccCfg(**cfg), state="OFFLINE")
    c.modify_cc_profile(4, state="ONLINE")
    row = c.cc_row(4)
    ps = {k[:-3]: v * 1000 for k, v in cfg.items() if k.endswith("_ns")}
    for key, value in {**{k: v for k, v in cfg.items() if not k.endswith("_ns")}, **ps}.items():
        assert row[key] == pytest.approx(value), key
    assert c.query_cc_profile(4).cc_config == CcNsccCfg(**cfg)  # read back in the header's units
    c.modify_cc_profile(4, config={**cfg, "target_delay_ns": 2500})  # CONFIG while ONLINE (MODIFY_ONLINE)
    assert row["target_delay"] == 2_500_000
    for bad, match in (({"base_rtt_ns": 2.5}, "base_rtt_ns = 2.5 must be an integer"),
                       ({"window": 3}, "unknown config field 'window' \\(known: .*base_rtt_ns"),
                       ({"max_md_jump": 2.0}, "cc.max_md_jump = 2.0"),
                       ({"base_rtt_ns": 0}, "cc.base_rtt = 0"),
                       ({"base_rtt_ns": 10**30}, "base_rtt_ns = 10+ must be an integer in \\[0, 4294967295\\]"),
                       ({"eta": float("nan")}, "eta = nan must be a finite number"),
                       ({"base_rtt_ns": 10, "base_rtt": 10}, "gives both base_rtt_ns and base_rtt")):
        with pytest.raises(EINVAL, match=match):
            c.modify_cc_profile(4, config=bad)
    assert row["target_delay"] == 2_500_000  # refused configs change nothing


def test_cc_vendor_cfg_sets_core_fields_the_header_struct_lacks():
    c = Device().ctl
    c.modify_cc_profile(1, algorithm="uet-1.0-nscc", state="OFFLINE")
    c.modify_cc_profile(1, config={"base_rtt_ns": 8000}, vendor_cfg=b"min_cwnd=8192,fast_increase_delay_ns=400",
                        state="ONLINE")
    assert c.cc_row(1)["min_cwnd"] == 8192 and c.cc_row(1)["fast_increase_delay"] == 400_000
    assert c.query_cc_profile(1).vendor_cfg == b"min_cwnd=8192,fast_increase_delay_ns=400"
    with pytest.raises(EINVAL, match="vendor_cfg item 'bogus=1': known keys"):
        c.modify_cc_profile(1, vendor_cfg=b"bogus=1")


def test_cc_config_time_fields_without_their_unit_still_work_and_warn():
    c = Device().ctl
    c.modify_cc_profile(1, algorithm="uet-1.0-nscc", state="OFFLINE")
    with pytest.warns(DeprecationWarning, match="'target_delay' is deprecated; use target_delay_ns"):
        c.modify_cc_profile(1, config={"base_rtt_ns": 5000, "target_delay": 3000}, state="ONLINE")
    assert c.query_cc_profile(1).cc_config.target_delay_ns == 3000


def _cc_pair(env, algorithm, config):
    for dev in (env.a, env.b):
        dev.ctl.modify_cc_profile(2, algorithm=algorithm, state="OFFLINE")
        dev.ctl.modify_cc_profile(2, config=config, state="ONLINE")
    cqa, cqb = env.a.create_cq(), env.b.create_cq()
    qa, qb = env.a.create_qp(cqa), env.b.create_qp(cqb)
    for q in (qa, qb):
        q.modify("INIT", ev_profile_id=1, cc_profile_id=2)
    qa.modify("RTR", dest_qp_num=qb.qp_num, remote_address="B", **RTR)
    qb.modify("RTR", dest_qp_num=qa.qp_num, remote_address="A", **RTR)
    qa.modify("RTS", **RTS)
    qb.modify("RTS", **RTS)
    mr = env.a.reg_mr(bytearray(40 * MTU))
    dst = env.b.reg_mr(bytearray(40 * MTU))
    qa.post_write(1, mr.sge(), remote_addr=dst.addr, rkey=dst.rkey)
    peak = []
    env.net.run(lambda: bool(peak.append(qa.statistics()["inflight"]) or len(cqa)))
    return qa, cqa, max(peak)


def test_fixed_window_needs_max_cwnd_and_keeps_a_fixed_window(make_two_devices):
    env = make_two_devices()
    env.a.ctl.modify_cc_profile(2, algorithm="fixed-window", state="OFFLINE")
    with pytest.raises(EINVAL, match="algorithm fixed-window needs max_cwnd"):
        env.a.ctl.modify_cc_profile(2, config={"base_rtt_ns": 8000})
    qa, cqa, peak = _cc_pair(env, "fixed-window", {"max_cwnd": 3 * MTU})
    assert peak == 3 * MTU and qa.statistics()["cwnd"] == 3 * MTU and cqa.poll()[0].ok


def test_a_null_algorithm_disables_congestion_control(make_two_devices):
    """mrc_ctl.h: a NULL algorithm disables CC: no max_cwnd needed, the QP is bounded by its MPR window only."""
    env = make_two_devices()
    qa, cqa, peak = _cc_pair(env, None, {})
    assert env.a.ctl.query_cc_profile(2).algorithm is None
    assert qa.statistics()["cwnd"] >= 1 << 40 and cqa.poll()[0].ok
    assert peak == 40 * MTU  # the whole 40-packet write in flight at once (MPR 8 x 128 packets allows it)
    with pytest.warns(DeprecationWarning, match="'none' is deprecated"):
        env.a.ctl.modify_cc_profile(3, algorithm="none", state="OFFLINE")
    assert env.a.ctl.query_cc_profile(3).algorithm == "fixed-window"


# --- endpoint requests -------------------------------------------------------------------------

def test_ev_probe_measures_the_rtt_between_two_devices(make_two_devices):
    env = make_two_devices(delay_ps=3 * US)
    env.net.run_for(1 * US)
    reqs = [EpRequest(1, "B", CtlEv.from_int(0x1234, 1)), EpRequest(2, "B", CtlEv.from_int(0x5678, 2))]
    batch = env.a.ctl.ep_batch_send("EV_PROBE", reqs, now=env.net.now, rsp_timeout_ns=100_000)
    assert env.net.run(lambda: batch.done)
    assert sorted((r.req_id, r.port, r.rtt_ns) for r in batch.responses) == [(1, 1, 6000), (2, 2, 6000)]
    assert not batch.timed_out
    env.net.drop = lambda rec: rec.src == "B"  # no answers: the batch times out
    lost = env.a.ctl.ep_batch_send("EV_PROBE", [EpRequest(3, "B", CtlEv.from_int(0x1234, 1))], now=env.net.now,
                                   rsp_timeout_ns=50_000)
    start = env.net.now
    env.net.run(lambda: lost.timed_out)
    assert lost.timed_out and lost.responses == [] and env.net.now == start + 50_000_000
    for bad, match in (([EpRequest(4, "B", CtlEv.from_int(1, 1)), EpRequest(4, "B", CtlEv.from_int(2, 1))], "unique"),
                       ([EpRequest(5, "B", CtlEv.from_int(1, 3))], "port 3 outside"),
                       ([EpRequest(1 << 16, "B", CtlEv.from_int(1, 1))], "req_id = 65536"),
                       ([EpRequest(6, "B", CtlEv(bytes(5) + b"\x01", 1))], "bits beyond the 32 of a STEV EV"),
                       ([EpRequest(7, "B", CtlEv.from_int(0x12345, 1), ev_fmt_mode=EvFmtMode.UDP)], "16 of a UDP EV"),
                       ([EpRequest(8, "B", 0x1234)], "req_ev = 4660 must be a CtlEv"),
                       ([EpRequest(9, "B", CtlEv.from_int(1, 1), sgid="10.0.0.9")], "sgid '10.0.0.9' is not this")):
        with pytest.raises(EINVAL, match=match):
            env.a.ctl.ep_batch_send("EV_PROBE", bad, now=env.net.now, rsp_timeout_ns=1000)


def test_ep_batch_send_wait_returns_responses_or_etimedout(make_two_devices):
    from mrc.errors import ETIMEDOUT

    env = make_two_devices(delay_ps=3 * US)
    drive = lambda done, t: env.net.run(done, max_time_ps=t)  # noqa: E731
    name = env.a.ctl.query_ev_array(1)[3]  # an EV of the profile travels as the profile's EV does
    rsps = env.a.ctl.ep_batch_send_wait(0, "EV_PROBE", [EpRequest(1, "B", name)], 100_000, now=env.net.now, drive=drive)
    assert [(r.req_id, r.port) for r in rsps] == [(1, name.port)]
    (req,) = [r for r in env.net.sent if r.src == "A" and int(r.out.pkt["dqpn"]) == 2]
    assert req.ev == explicit_evs(0, 16)[3] and int(req.out.pkt["dscp"]) == 0  # the EV's value; req_tc
    env.net.drop = lambda rec: rec.src == "B"
    with pytest.raises(ETIMEDOUT) as e:
        env.a.ctl.ep_batch_send_wait(46, "EV_PROBE", [EpRequest(2, "B", name)], 20_000, now=env.net.now, drive=drive)
    assert e.value.responses == []


def test_srv6_address_evs_travel_with_their_address():
    """An SRv6 EV that is not a profile's EV is its address: the packet carries a tag of it, the OutPacket the
    address (and SRH segment) for the network adapter."""
    dev = Device(ports=2)
    addr = bytes.fromhex("fc000001" "0001" "0002" "0003" "0004") + bytes(4) + bytes.fromhex("fc00000200050006") + bytes(8)
    dev.ctl.ep_batch_send("EV_PROBE", [EpRequest(1, "B", CtlEv(addr, 2), ev_fmt_mode=EvFmtMode.SRV6)], now=0,
                          rsp_timeout_ns=1000)
    (out,) = dev.packets_to_send(0)
    assert out.ev_addr == addr and out.port == 2 and int(out.pkt["ev"]) == __import__("zlib").crc32(addr)


def test_port_status_mask_is_1_based_as_the_header_says(make_two_devices):
    env = make_two_devices()
    conn = env.connect()
    rsps = env.a.ctl.ep_batch_send_wait(0, "PORT_STATUS_UPDATE", [EpRequest(3, "B", ctl_evs(0, 16)[0], port_status=0b10)],
                                        100_000, now=env.net.now, drive=lambda d, t: env.net.run(d, max_time_ps=t))
    assert len(rsps) == 1 and int(env.b.T.qp[conn.qb.index]["remote_ports"]) == 0b01  # bit 1 = port 1 up only
    with pytest.raises(EINVAL, match="bit N is port N"):
        env.a.ctl.ep_batch_send("PORT_STATUS_UPDATE", [EpRequest(4, "B", ctl_evs(0, 16)[0], port_status=0b1)],
                                now=env.net.now, rsp_timeout_ns=1000)


def test_port_down_reaches_the_peer_and_comes_back(make_two_devices):
    env = make_two_devices(ev_count=16)
    conn = env.connect()
    assert transfer(env, conn, 8 * MTU, wr_id=1, direction="BA")
    env.a.set_port_state(2, False, now=env.net.now)
    e = env.a.get_async_event()
    assert e.kind == "PORT_ERR" and e.element == 2 and e.event_type == "IBV_EVENT_PORT_ERR"
    env.a.ack_async_event(e)
    assert env.net.run(lambda: env.b.ctl.counters["port_status_rx"] == 1)
    since = env.net.now
    assert transfer(env, conn, 30 * MTU, wr_id=2, direction="BA")
    assert transfer(env, conn, 30 * MTU, wr_id=3, direction="AB")
    from_b = [r for r in env.net.sent if r.src == "B" and r.time >= since]
    assert from_b and {r.out.port for r in from_b} == {1}  # data and SACKs from the peer avoid the plane
    assert {r.out.port for r in env.net.sent if r.src == "A" and r.time >= since} == {1}
    assert all(r.fate != "link down" for r in from_b)
    env.a.set_port_state(2, True, now=env.net.now)
    assert env.a.get_async_event().kind == "PORT_ACTIVE"
    assert env.net.run(lambda: env.b.ctl.counters["port_status_rx"] == 2)
    since = env.net.now
    assert transfer(env, conn, 30 * MTU, wr_id=4, direction="BA")
    assert {r.out.port for r in env.net.data_sent("B", since)} == {1, 2}


def test_admin_disabled_port_stays_down_until_enabled():
    from mrc.ctl import PortAdminState, PortAttr, PortAttrMask

    dev = Device(ports=2)
    c = dev.ctl
    c.modify_port(1, PortAttr(PortAdminState.DISABLED), PortAttrMask.ADMIN_STATE)
    assert c.query_port(1).port_admin_state == PortAdminState.DISABLED
    assert dev.query_port(1)["state"] == "DOWN"  # mrc_ctl.h: disabled ports report IBV_PORT_DOWN
    dev.set_port_state(1, True)  # the link is up, but the port is disabled
    assert dev.query_port(1)["state"] == "DOWN" and dev.query_port(1)["link_up"]
    dev.set_port_state(1, False)
    c.modify_port(1, admin_enabled=True)
    assert c.query_port(1).port_admin_state == PortAdminState.ENABLED
    assert dev.query_port(1)["state"] == "DOWN"  # enabled, but the link is down
    dev.set_port_state(1, True)
    assert dev.query_port(1)["state"] == "ACTIVE"
    assert c.query_device().phy_port_mask == 0b110  # the ports owned, bit N for port N (1-based), up or down
    with pytest.raises(EINVAL, match="port = 3 must be an integer in \\[1, 2\\]"):
        dev.set_port_state(3, False)
    with pytest.raises(EINVAL, match="port 0 outside"):
        c.query_port(0)
    with pytest.raises(EINVAL, match="only ADMIN_STATE"):
        c.modify_port(1, PortAttr(PortAdminState.DISABLED), 0b10)


def test_device_query_reports_the_header_values():
    from mrc.ctl import CtlAttrOpt, EvProfileMode

    attr = Device(ports=4).ctl.query_device()
    assert attr.phy_port_mask == 0b11110
    assert attr.opt_attr & ~int(sum(CtlAttrOpt)) == 0  # only bits of the enum
    assert not attr.opt_attr & CtlAttrOpt.EV_EXPLICIT_RANGE  # any EVs, not only a contiguous range
    assert attr.ev.ev_mode_mask == int(EvProfileMode.AUTO | EvProfileMode.EXP | EvProfileMode.GEN)
    assert attr.ev.ev_fmt_mode_mask == int(EvFmtMode.STEV | EvFmtMode.SRV6 | EvFmtMode.UDP)
    assert attr.ev.ev_max_width == 256 and attr.cc.algorithms == ("uet-1.0-nscc", "fixed-window")


# --- the OCP examples/ev_expansion profiles, configured through the controller ---------------------

def _online_format(c, fid, mode, widths):
    c.modify_ev_fmt_profile(fid, mode=mode, fields=widths, state="OFFLINE")
    c.modify_ev_fmt_profile(fid, state="ONLINE")


def test_ev_expansion_srv6_explicit_profile_pulls_64_bits_and_the_core_carries_a_tag():
    from tests.core.naive import ev_expand

    dev = Device(ports=2)
    c = dev.ctl
    widths = [32, 16, 16, 16, 16]  # srv6_exp: 32-bit locator, four 16-bit uSIDs
    fields = [EvField(32, 0xCAFECAFE)] + [EvField(16, 0, 0, 0, 0xFFFF)] * 4
    _online_format(c, 7, "SRv6", widths)
    c.modify_ev_profile(7, mode="EXP", fmt_id=7, count=4, min_active=1, event_mask=3, fields=fields, state="OFFLINE")
    usids = [(0x1111, 0x2222, 0x3333, 0x4444), (0xA, 0xB, 0xC, 0xD), (1, 2, 3, 4), (0xFFFF, 0, 0xFFFF, 0)]
    evs = [CtlEv(bytes.fromhex("".join(f"{x:04x}" for x in u)), k % 2 + 1) for k, u in enumerate(usids)]
    for ev in evs:
        c.replace_ev(7, EV_UNPOPULATED, ev)
    c.modify_ev_profile(7, state="ONLINE")
    table = c.ev_table(7)
    for e, ev, u in zip(table, evs, usids):
        expected = (0xCAFECAFE << 64) | (u[0] << 48) | (u[1] << 32) | (u[2] << 16) | u[3]
        assert e["ev"] == ev
        assert e["expanded"] == expected == ev_expand(ev.raw, 256, widths, [(f.width, f.init_val, f.mask) for f in fields])
    # wide SRv6: the path is the address; the 32-bit value the packets carry is a tag, one per distinct EV
    assert len({e["value"] for e in table}) == 4
    c.replace_ev(7, evs[0], evs[1] if evs[1].port == evs[0].port else CtlEv(evs[1].val, evs[0].port))
    assert c.ev_table(7)[0]["value"] != table[0]["value"]
    with pytest.raises(EINVAL, match="longer than the 32-byte"):
        CtlEv(bytes(33), 1)
    assert c.query_device().ev.ev_max_width == 256


def test_ev_expansion_srv6_srh_explicit_profile_pulls_128_bits():
    dev = Device(ports=2)
    c = dev.ctl
    widths = [32] + [16] * 6 + [32] + [16] * 2  # srv6_srh_exp: address + single-segment SRH, 192 bits
    usid = EvField(16, 0, 0, 0, 0xFFFF)
    fields = [EvField(32, 0xCAFECAFE)] + [usid] * 6 + [EvField(32, 0xDECAFBAD)] + [usid] * 2
    _online_format(c, 8, "SRv6", widths)
    c.modify_ev_profile(8, mode="EXP", fmt_id=8, count=2, min_active=1, event_mask=3, fields=fields, state="OFFLINE")
    c.replace_ev(8, EV_UNPOPULATED, CtlEv(bytes(range(1, 17)), 1))  # 16 bytes: eight 16-bit uSIDs
    c.replace_ev(8, EV_UNPOPULATED, CtlEv(bytes(range(17, 33)), 2))
    e = c.ev_table(8)[0]
    u = [int.from_bytes(bytes(range(1, 17))[2 * j:2 * j + 2], "big") for j in range(8)]
    expected = 0xCAFECAFE
    for x in u[:6]:
        expected = (expected << 16) | x
    expected = (expected << 32) | 0xDECAFBAD
    for x in u[6:]:
        expected = (expected << 16) | x
    assert e["expanded"] == expected


def test_ev_expansion_generated_profiles_through_the_controller():
    from tests.core.naive import ev_expand
    from mrc.ctl.ev_fields import split_raw

    dev = Device(ports=2)
    c = dev.ctl
    cases = [  # (format mode, widths, fields) of stev_gen_with_fixed_weird_mask, srv6_gen and srv6_gen_with_fixed
        ("STEV", [16, 16], [EvField(16, (i + 1) << 12, 1, 0xFF, 0x0F0F) for i in range(2)]),
        ("SRv6", [32, 16, 16, 16, 16], [EvField(32, 0x42424242)] + [EvField(4, 0, 1, 0xF, 0xF)] * 4),
        ("SRv6", [32, 16, 16, 16, 16], [EvField(32, 0x13131313)] + [EvField(16, i << 8, 1, 0xF, 0xF) for i in range(1, 5)]),
    ]
    for n, (mode, widths, fields) in enumerate(cases):
        fid = 10 + n
        _online_format(c, fid, mode, widths)
        c.modify_ev_profile(fid, mode="GEN", fmt_id=fid, count=8, min_active=1, event_mask=3, fields=fields,
                            state="OFFLINE", seed=n)
        table = c.ev_table(fid)
        assert len({e["ev"] for e in table}) == 8 and all(e["state"] == "GOOD" for e in table)
        for e in table:
            assert e["expanded"] == ev_expand(e["ev"].raw, 256, widths, [(f.width, f.init_val, f.mask) for f in fields])
            pulled = split_raw(e["ev"].raw, 256, fields)
            assert all(f.min_val <= v <= f.max_val for f, v in zip(fields, pulled) if f.mask)  # GEN: within range
            assert e["value"] == (e["expanded"] if mode == "STEV" else e["ev"].to_int(32))  # compact SRv6: raw bits


def test_a_transfer_over_a_wide_srv6_profile(make_two_devices):
    env = make_two_devices()
    widths = [32, 16, 16, 16, 16]
    fields = [EvField(32, 0xCAFECAFE)] + [EvField(16, 0, 0, 0, 0xFFFF)] * 4
    for side, dev in enumerate((env.a, env.b)):
        c = dev.ctl
        _online_format(c, 7, "SRv6", widths)
        c.modify_ev_profile(7, mode="GEN", fmt_id=7, count=16, min_active=4, event_mask=3, fields=fields,
                            state="OFFLINE", seed=side)
        c.modify_ev_profile(7, state="ONLINE")
    cqa, cqb = env.a.create_cq(), env.b.create_cq()
    qa, qb = env.a.create_qp(cqa), env.b.create_qp(cqb)
    for q in (qa, qb):
        q.modify("INIT", ev_profile_id=7, cc_profile_id=1)
    qa.modify("RTR", dest_qp_num=qb.qp_num, remote_address="B", **RTR)
    qb.modify("RTR", dest_qp_num=qa.qp_num, remote_address="A", **RTR)
    qa.modify("RTS", **RTS)
    qb.modify("RTS", **RTS)
    assert sorted(e["value"] for e in qa.ev_states()) == list(range(1, 17))  # the profile's tags
    assert qa.query()["ev_min_active"] == 4 and qa.query()["ev_event_mask"] == 3  # from the EV profile
    assert transfer(env, Conn(qa, qb, cqa, cqb), 12 * MTU, wr_id=1)
    table = env.a.ctl.ev_table(7)
    hole, denied = table[5], table[3]
    env.net.drop = lambda rec: rec.src == "A" and rec.ev == hole["value"]
    env.a.ctl.modify_ev_state(7, denied["ev"], "DENIED")
    assert transfer(env, Conn(qa, qb, cqa, cqb), 40 * MTU, wr_id=2)
    assert env.a.ctl.query_ev_state(7, hole["ev"]) == EvState.ASSUMED_BAD
    assert env.a.ctl.query_ev_state(7, denied["ev"]) == EvState.DENIED


def test_ev_op_batches_apply_in_order_and_stop_at_the_first_bad_entry():
    from mrc.ctl import EvOp, EvOpArgs, EvOpEntry, EvOpFlags, EvProfileAttr, EvProfileAttrMask as M

    dev = Device(ports=2)
    c = dev.ctl
    tiers_profile(dev, count=4)
    got = c.ev_op(3, "REPLACE_EV", [EvOpEntry(EV_UNPOPULATED, raw(1, 1, 1)), EvOpEntry(EV_UNPOPULATED, raw(2, 2, 2, 2))])
    assert [e.ev_new for e in got] == [raw(1, 1, 1), raw(2, 2, 2, 2)]
    with pytest.raises(EINVAL, match="entry 1: .*port 3 outside") as e:
        c.ev_op(3, "REPLACE_EV", [EvOpEntry(EV_UNPOPULATED, raw(3, 3, 3)), EvOpEntry(EV_UNPOPULATED, raw(1, 1, 1, 3))])
    assert e.value.entry == 1
    assert c.query_ev_array(3) == [raw(1, 1, 1), raw(2, 2, 2, 2), raw(3, 3, 3), EV_UNPOPULATED]  # entry 0 stayed
    c.ev_op(3, "REPLACE_EV", [EvOpEntry(EV_UNPOPULATED, raw(4, 4, 4, 2), state=EvState.DENIED)])
    c.ev_op(3, "MODIFY_EV_STATE", [EvOpEntry(raw(1, 1, 1), state="DENIED"), EvOpEntry(raw(4, 4, 4, 2), state="GOOD")])
    assert [e.state for e in c.ev_op(3, "QUERY_EV_STATE", [EvOpEntry(raw(1, 1, 1)), EvOpEntry(raw(2, 2, 2, 2)),
                                                            EvOpEntry(raw(4, 4, 4, 2))])] == [
        EvState.DENIED, EvState.GOOD, EvState.GOOD]
    assert len(c.ev_op(3, "QUERY_EV_ARRAY")) == 4
    with pytest.raises(EINVAL, match="'SWAP_EV'"):
        c.ev_op(3, "SWAP_EV", [EvOpEntry(raw(1, 1, 1))])
    with pytest.raises(EINVAL, match="entry 0: MODIFY_EV_STATE needs state"):
        c.ev_op(3, "MODIFY_EV_STATE", [EvOpEntry(raw(1, 1, 1))])
    with pytest.raises(ENOENT, match="entry 0: EV .* is not in the array"):
        c.ev_op(3, "QUERY_EV_STATE", [EvOpEntry(raw(9, 9, 9))])
    # the header's struct and mask: ALL_COPIES through modify_ev_profile, QUERY_EV_ARRAY with too small a count
    c.ev_op(3, "REPLACE_EV", [EvOpEntry(raw(3, 3, 3), raw(1, 1, 1))])
    c.modify_ev_profile(3, EvProfileAttr(ev_op=EvOpArgs(EvOp.REPLACE_EV, [EvOpEntry(raw(1, 1, 1), raw(5, 5, 5),
                                                                                       flags=EvOpFlags.ALL_COPIES)])), M.EV_OP)
    assert c.query_ev_array(3) == [raw(5, 5, 5), raw(2, 2, 2, 2), raw(5, 5, 5), raw(4, 4, 4, 2)]
    attr = EvProfileAttr(ev_op=EvOpArgs(EvOp.QUERY_EV_ARRAY, entry_count=2))
    with pytest.raises(E2BIG) as e:
        c.query_ev_profile(3, M.EV_OP, attr)
    assert e.value.required == 4 and attr.ev_op.entry_count == 4
    with pytest.raises(EINVAL, match="QUERY_EV_STATE and QUERY_EV_ARRAY only"):
        c.query_ev_profile(3, M.EV_OP, EvProfileAttr(ev_op=EvOpArgs(EvOp.REPLACE_EV, [EvOpEntry(raw(5, 5, 5), raw(6, 6, 6))])))


def test_replace_ev_online_resends_what_was_in_flight_on_the_old_path(make_two_devices):
    """REPLACE_EV on an ONLINE profile with a running QP: packets in flight on the replaced EV are resent and the
    slot starts afresh on the new path; the write completes and the old EV carries nothing more."""
    env = make_two_devices(ev_count=8)
    conn = env.connect(rts=dict(ev_active_target=8))
    names, values = ctl_evs(0, 8), explicit_evs(0, 8)
    src = bytearray(np.random.default_rng(5).integers(0, 256, 64 * MTU, dtype=np.uint8).tobytes())
    dst = bytearray(len(src))
    ma, mb = env.a.reg_mr(src), env.b.reg_mr(dst)
    conn.qa.post_write(1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
    env.net.drop = lambda rec: rec.src == "A" and rec.ev == values[2]  # the old path loses what is on it
    env.net.run(lambda: conn.qa.statistics()["inflight"] > 8 * MTU)
    before, n_sent = conn.qa.statistics()["rtx_pkts"], len(env.net.sent)
    new = CtlEv.from_int(0x7777, names[2].port)
    env.a.ctl.replace_ev(1, names[2], new, now=env.net.now)
    slot = {e["value"]: e for e in conn.qa.ev_states()}
    assert values[2] not in slot and slot[0x7777]["ev"] == new and slot[0x7777]["losses"] == 0
    since = env.net.now
    got = []
    assert env.net.run(lambda: bool(got.extend(conn.cqa.poll())) or bool(got), max_time_ps=since + 50_000 * US)
    assert got[0].ok and bytes(dst) == bytes(src)
    assert conn.qa.statistics()["rtx_pkts"] > before  # the old path's packets went again
    assert values[2] not in {r.ev for r in env.net.sent[n_sent:] if r.src == "A"}
    assert 0x7777 in {r.ev for r in env.net.data_sent("A", since)}
    assert {e["value"]: e["state"] for e in conn.qa.ev_states()}[0x7777] in ("GOOD", "SKIP")  # not blamed


def test_modify_fields_online_reexpands_the_evs_of_bound_qps():
    dev = Device(ports=2)
    c = dev.ctl
    _online_format(c, 1, "STEV", [16, 16])
    c.modify_ev_profile(1, mode="EXP", fmt_id=1, count=2, min_active=1, event_mask=3, state="OFFLINE",
                        fields=[EvField(16, 0, 0, 0, 0xFFFF), EvField(16, 0x1111)])
    evs = [CtlEv(b"\x00\x05", 1), CtlEv(b"\x00\x06", 2)]
    for ev in evs:
        c.replace_ev(1, EV_UNPOPULATED, ev)
    c.modify_ev_profile(1, state="ONLINE")
    c.setup_cc_profile(1)
    qp = bound_qp(dev)
    assert sorted(e["value"] for e in qp.ev_states()) == [0x00051111, 0x00061111]
    c.modify_ev_profile(1, fields=[EvField(16, 0, 0, 0, 0xFFFF), EvField(16, 0x2222)])  # MODIFY_ONLINE
    assert sorted(e["value"] for e in qp.ev_states()) == [0x00052222, 0x00062222]
    assert [e["ev"] for e in qp.ev_states()] == evs and c.query_ev_state(1, evs[0]) == EvState.GOOD
