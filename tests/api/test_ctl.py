"""The controller API (mrc_ctl.h style): profile state machines, EV operations, EV events,
CC profiles, endpoint requests and port status updates, over two in-memory Devices."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.api import Device
from mrc.ctl import EpRequest, EvState
from mrc.errors import ConfigError, UsageError
from mrc.ctl.ev_fields import EvField
from mrc.units import US

from tests.twodevices import RTR, RTS, Conn, explicit_evs

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

def test_ev_format_profile_state_machine():
    c = Device().ctl
    with pytest.raises(UsageError, match="cannot go from INIT to ONLINE"):
        c.modify_ev_format_profile(1, state="ONLINE")
    with pytest.raises(UsageError, match="MODE is required to go OFFLINE"):
        c.modify_ev_format_profile(1, state="OFFLINE")
    with pytest.raises(UsageError, match="MODIFY_FIELDS needs OFFLINE \\(it is INIT\\)"):
        c.modify_ev_format_profile(1, mode="STEV", fields=[16, 16])
    with pytest.raises(ConfigError) as e:
        c.modify_ev_format_profile(1, mode="STEV", fields=[16, 17], state="OFFLINE")
    assert e.value.key == "ev_format.fields"
    assert c.query_ev_format_profile(1)["state"] == "INIT"  # nothing applied from a refused call
    c.modify_ev_format_profile(1, mode="STEV", fields=[16, 16], state="OFFLINE")  # one call, as the OCP examples do
    assert c.query_ev_format_profile(1) == {"state": "OFFLINE", "mode": "STEV", "fields": [16, 16]}
    c.modify_ev_format_profile(2, mode="SRv6", state="OFFLINE")
    with pytest.raises(UsageError, match="MODIFY_FIELDS is required to go ONLINE"):
        c.modify_ev_format_profile(2, state="ONLINE")
    with pytest.raises(ConfigError, match="exceeds 16 bits of UDP"):
        c.modify_ev_format_profile(1, mode="UDP")  # the fields set must fit a new mode
    c.modify_ev_format_profile(1, state="ONLINE")
    for kw, name in ((dict(mode="UDP"), "MODE"), (dict(fields=[8]), "MODIFY_FIELDS")):
        with pytest.raises(UsageError, match=f"{name} cannot change while ONLINE"):
            c.modify_ev_format_profile(1, **kw)
    with pytest.raises(UsageError, match="cannot go from ONLINE to INIT"):
        c.modify_ev_format_profile(1, state="INIT")
    c.modify_ev_profile(1, mode="GEN", fmt_id=1, count=8, min_active=2, event_mask=3,
                        fields=[EvField(16, mask=0xFFFF), EvField(16, mask=0xFFFF)], state="OFFLINE")
    c.modify_ev_profile(1, state="ONLINE")
    with pytest.raises(UsageError, match="EV profile\\(s\\) \\[1\\] use it \\(EBUSY\\)"):
        c.modify_ev_format_profile(1, state="OFFLINE")
    assert c.query_ev_format_profile(1)["state"] == "ONLINE"
    c.modify_ev_profile(1, state="OFFLINE")
    c.modify_ev_format_profile(1, state="OFFLINE")
    c.modify_ev_format_profile(1, state="INIT")
    assert c.query_ev_format_profile(1) == {"state": "INIT", "mode": None, "fields": []}  # INIT clears the config
    with pytest.raises(UsageError, match="format profile 1 is INIT, not ONLINE"):
        c.modify_ev_profile(1, state="ONLINE")


def test_ev_profile_state_machine_and_ebusy():
    dev = Device(ports=2)
    c = dev.ctl
    c.modify_ev_format_profile(1, mode="STEV", fields=[16, 16], state="OFFLINE")
    fields = [EvField(16, mask=0xFFFF), EvField(16, 0x77)]
    with pytest.raises(UsageError, match="format profile 1 is OFFLINE, not ONLINE"):
        c.modify_ev_profile(1, fmt_id=1)
    c.modify_ev_format_profile(1, state="ONLINE")
    for kw, missing in ((dict(), "MODE"), (dict(mode="GEN"), "COUNT"), (dict(mode="GEN", count=8), "FMT_ID"),
                        (dict(mode="GEN", count=8, fmt_id=1), "MODIFY_FIELDS")):
        with pytest.raises(UsageError, match=f"{missing} is required to go OFFLINE"):
            c.modify_ev_profile(1, state="OFFLINE", **kw)
    with pytest.raises(UsageError, match="set FMT_ID before fields"):
        c.modify_ev_profile(2, fields=fields)
    with pytest.raises(UsageError, match="ev_count 300 outside \\[1, 256\\]"):
        c.modify_ev_profile(1, count=300)
    with pytest.raises(UsageError, match="ev_min_active 9 exceeds ev_count 8"):
        c.modify_ev_profile(1, count=8, min_active=9)
    c.modify_ev_profile(1, mode="GEN", count=8, fmt_id=1, fields=fields, state="OFFLINE")
    assert [e["state"] for e in c.query_ev_array(1)] == ["GOOD"] * 8
    assert [e["port"] for e in c.query_ev_array(1)] == [1, 2] * 4
    assert all(e["expanded"] & 0xFFFF == 0x77 for e in c.query_ev_array(1))  # the fixed second field
    with pytest.raises(UsageError, match="MIN_ACTIVE is required to go ONLINE"):
        c.modify_ev_profile(1, state="ONLINE")
    c.modify_ev_profile(1, min_active=2)
    with pytest.raises(UsageError, match="EVENT_MASK is required to go ONLINE"):
        c.modify_ev_profile(1, state="ONLINE")
    with pytest.raises(UsageError, match="only GOOD and ASSUMED_BAD"):
        c.modify_ev_profile(1, event_mask=EvState.DENIED)
    c.modify_ev_profile(1, count=12, event_mask=0)  # OFFLINE: COUNT may change (the array is rebuilt)
    assert len(c.query_ev_array(1)) == 12
    c.modify_ev_profile(1, state="ONLINE")
    for kw, name in ((dict(count=4), "COUNT"), (dict(mode="EXP"), "MODE"), (dict(min_active=1), "MIN_ACTIVE"),
                     (dict(fields=fields), "MODIFY_FIELDS"), (dict(fmt_id=1), "FMT_ID")):
        with pytest.raises(UsageError, match=f"{name} cannot change while ONLINE"):
            c.modify_ev_profile(1, **kw)
    c.modify_ev_profile(1, event_mask=int(EvState.GOOD))  # EVENT_MASK may (MODIFY_ONLINE)
    with pytest.raises(UsageError, match="cannot go from ONLINE to INIT"):
        c.modify_ev_profile(1, state="INIT")
    c.modify_cc_profile(1, algorithm="uet-1.0-nscc", config={}, state="OFFLINE")
    c.modify_cc_profile(1, state="ONLINE")
    qp = bound_qp(dev)
    array = c.query_ev_array(1)
    assert [(e["ev"], e["port"]) for e in qp.ev_states()] == [(e["ev"], e["port"]) for e in array if e["port"] == 1] + \
        [(e["ev"], e["port"]) for e in array if e["port"] == 2]  # the QP's copy, grouped by plane
    with pytest.raises(UsageError, match="1 QP\\(s\\) still use it \\(EBUSY\\)"):
        c.modify_ev_profile(1, state="OFFLINE")
    qp.modify("RESET")  # releases the profiles
    c.modify_ev_profile(1, state="OFFLINE")
    with pytest.raises(UsageError, match="EV profile 1 is OFFLINE, not ONLINE"):
        qp.modify("INIT", ev_profile_id=1, cc_profile_id=1)
    c.modify_ev_profile(1, state="INIT")
    assert c.query_ev_profile(1)["mode"] is None and c.query_ev_profile(1)["count"] == 0


def test_explicit_profile_refuses_online_while_unpopulated():
    dev = Device(ports=2)
    c = dev.ctl
    c.modify_ev_format_profile(1, mode="STEV", fields=[32], state="OFFLINE")
    c.modify_ev_format_profile(1, state="ONLINE")
    c.modify_ev_profile(1, mode="EXP", fmt_id=1, count=4, min_active=1, event_mask=3,
                        fields=[EvField(32, mask=0xFFFFFFFF)], state="OFFLINE")
    assert [e["state"] for e in c.query_ev_array(1)] == ["UNPOPULATED"] * 4
    with pytest.raises(UsageError, match="4 explicit EV\\(s\\) still unpopulated"):
        c.modify_ev_profile(1, state="ONLINE")
    for k in range(3):
        c.replace_ev(1, None, 0x100 + k, port=k % 2 + 1)
    with pytest.raises(UsageError, match="1 explicit EV\\(s\\) still unpopulated"):
        c.modify_ev_profile(1, state="ONLINE")
    c.replace_ev(1, None, 0x103, port=2)
    c.modify_ev_profile(1, state="ONLINE")
    assert [(e["ev"], e["port"], e["state"]) for e in c.query_ev_array(1)] == [
        (0x100, 1, "GOOD"), (0x101, 2, "GOOD"), (0x102, 1, "GOOD"), (0x103, 2, "GOOD")]
    c.modify_ev_profile(2, mode="AUTO", count=4, min_active=1, event_mask=0, state="OFFLINE")
    with pytest.raises(UsageError, match="AUTO profiles have no controller-provided EVs"):
        c.replace_ev(2, None, 5, port=1)


# --- EV operations ---------------------------------------------------------------------------

def tiers_profile(dev: Device, count: int = 4):
    """mrc_ctl_gen_ev.md's three tiers as an explicit profile: T0 8 bits (0-179 valid), T1 and T2 4 bits."""
    c = dev.ctl
    c.modify_ev_format_profile(3, mode="STEV", fields=[8, 4, 4], state="OFFLINE")
    c.modify_ev_format_profile(3, state="ONLINE")
    c.modify_ev_profile(3, mode="EXP", fmt_id=3, count=count, min_active=0, event_mask=3, state="OFFLINE",
                        fields=[EvField(8, 0, 0, 179, 0xFF), EvField(4, 0, 0, 15, 0xF), EvField(4, 0, 0, 15, 0xF)])


def raw(t0: int, t1: int, t2: int) -> int:
    return (t0 << 24) | (t1 << 20) | (t2 << 16)  # pulled MSB first from the 32-bit EV


def test_replace_ev_single_all_copies_and_out_of_range_denied():
    dev = Device(ports=2)
    c = dev.ctl
    tiers_profile(dev)
    assert c.replace_ev(3, None, raw(1, 2, 3), port=1) == 1
    assert c.query_ev_array(3)[0] == {"ev": 0x0123, "raw": raw(1, 2, 3), "expanded": 0x0123, "port": 1, "state": "GOOD"}
    c.replace_ev(3, None, raw(200, 1, 1), port=2)  # T0 = 200 is outside [0, 179]: accepted, DENIED
    assert c.query_ev_array(3)[1]["state"] == "DENIED" and c.query_ev_state(3, 0xC811) == EvState.DENIED
    with pytest.raises(UsageError, match="already in the array"):
        c.replace_ev(3, None, raw(1, 2, 3), port=2)
    with pytest.raises(UsageError, match="all_copies would put EV 0x456 in 2 entries"):
        c.replace_ev(3, None, raw(4, 5, 6), port=1, all_copies=True)
    with pytest.raises(UsageError, match="does not fit the profile's fields"):
        c.replace_ev(3, None, raw(4, 5, 6) | 1, port=1)  # bits the fields do not pull
    with pytest.raises(UsageError, match="port 3 outside"):
        c.replace_ev(3, None, raw(4, 5, 6), port=3)
    with pytest.raises(UsageError, match="EV 0x999 not found"):
        c.replace_ev(3, 0x999, raw(4, 5, 6), port=1)
    assert c.replace_ev(3, 0x0123, raw(7, 8, 9), port=1, all_copies=True) == 1
    assert [e["ev"] for e in c.query_ev_array(3)] == [0x0789, 0xC811, None, None]
    with pytest.raises(UsageError, match="not found"):
        c.modify_ev_state(3, 0x0123, "DENIED")
    c.replace_ev(3, None, raw(1, 1, 1), port=1, state="DENIED")
    c.replace_ev(3, None, raw(2, 2, 2), port=2)
    c.modify_ev_profile(3, state="ONLINE")
    c.modify_cc_profile(1, algorithm="none", config={"max_cwnd": 65536}, state="OFFLINE")
    c.modify_cc_profile(1, state="ONLINE")
    qp = bound_qp(dev, ev_profile=3)
    assert {e["ev"]: e["state"] for e in qp.ev_states()} == {0x0789: "GOOD", 0x0111: "DENIED", 0xC811: "DENIED", 0x0222: "GOOD"}
    # ONLINE (MODIFY_ONLINE): a replacement reaches the bound QP at once; moving it to another plane does not
    c.replace_ev(3, 0x0789, raw(3, 3, 3), port=1)
    assert {e["ev"]: (e["state"], e["port"]) for e in qp.ev_states()}[0x0333] == ("GOOD", 1)
    with pytest.raises(UsageError, match="cannot move EV 0x333 from port 1 to 2 while 1 QP"):
        c.replace_ev(3, 0x0333, raw(4, 4, 4), port=2)


def test_generated_srv6_profile_carries_compact_evs_and_expands_to_usid_addresses(make_two_devices):
    # mrc_ctl_gen_ev.md: fixed 32-bit locator, four uSIDs whose upper byte is the tier number
    env = make_two_devices()
    fields = [EvField(32, 0xDEADCAFE)] + [EvField(16, i << 8, 0, 255, 0xFF) for i in range(1, 5)]
    for dev in (env.a, env.b):
        c = dev.ctl
        c.modify_ev_format_profile(5, mode="SRv6", fields=[32, 16, 16, 16, 16], state="OFFLINE")
        c.modify_ev_format_profile(5, state="ONLINE")
        c.modify_ev_profile(5, mode="GEN", fmt_id=5, count=32, min_active=8, event_mask=3, fields=fields,
                            state="OFFLINE", seed=11)
        c.modify_ev_profile(5, state="ONLINE")
    array = env.a.ctl.query_ev_array(5)
    assert len({e["ev"] for e in array}) == 32 and [e["port"] for e in array] == [1, 2] * 16
    for e in array:
        raw = e["ev"]  # SRv6: the core carries the compact (raw) EV; the wire carries its expansion
        b = [(raw >> s) & 0xFF for s in (24, 16, 8, 0)]
        assert e["expanded"] == (0xDEADCAFE << 64) | sum(((i + 1) << 8 | b[i]) << (48 - 16 * i) for i in range(4))
    cqa, cqb = env.a.create_cq(), env.b.create_cq()
    qa, qb = env.a.create_qp(cqa), env.b.create_qp(cqb)
    for q in (qa, qb):
        q.modify("INIT", ev_profile_id=5, cc_profile_id=1)
    qa.modify("RTR", dest_qp_num=qb.qp_num, remote_address="B", **RTR)
    qb.modify("RTR", dest_qp_num=qa.qp_num, remote_address="A", **RTR)
    qa.modify("RTS", **RTS)
    qb.modify("RTS", **RTS)
    assert {e["ev"] for e in qa.ev_states()} == {e["ev"] for e in array}
    assert transfer(env, Conn(qa, qb, cqa, cqb), 20 * MTU, wr_id=1)
    assert {r.ev for r in env.net.data_sent("A")} <= {e["ev"] for e in array}


def deny_env(make_two_devices, n_pairs: int = 2):
    env = make_two_devices(ev_count=8)
    conns = [env.connect(rts=dict(ev_active_target=8)) for _ in range(n_pairs)]
    return env, conns


def test_denied_ev_reaches_every_bound_qp_and_never_carries_a_packet(make_two_devices):
    env, conns = deny_env(make_two_devices)
    evs = explicit_evs(0, 8)
    denied = evs[2]
    env.a.ctl.modify_ev_state(1, denied, "DENIED", now=env.net.now)
    for c in conns:
        st = {e["ev"]: e for e in c.qa.ev_states()}
        assert st[denied]["state"] == "DENIED" and not st[denied]["active"]
    assert env.a.ctl.query_ev_state(1, denied) == EvState.DENIED
    since = env.net.now
    for n, c in enumerate(conns):
        assert transfer(env, c, 24 * MTU, wr_id=10 + n)
    used = {r.ev for r in env.net.sent if r.src == "A" and r.time >= since}
    data = {r.ev for r in env.net.data_sent("A", since)}
    assert denied not in used  # no data, probe or control packet
    assert data == set(evs) - {denied}  # every other EV carried data
    env.a.ctl.modify_ev_state(1, denied, EvState.GOOD, now=env.net.now)
    assert env.a.ctl.query_ev_state(1, denied) == EvState.GOOD
    since = env.net.now
    for n, c in enumerate(conns):
        assert {e["ev"]: e["state"] for e in c.qa.ev_states()}[denied] == "GOOD"
        assert transfer(env, c, 24 * MTU, wr_id=20 + n)
    assert denied in {r.ev for r in env.net.data_sent("A", since)}


def test_denying_a_whole_plane_keeps_the_other_planes_spraying(make_two_devices):
    env, (conn,) = deny_env(make_two_devices, n_pairs=1)
    for ev in explicit_evs(0, 8)[1::2]:  # every EV of port 2
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
    hole = explicit_evs(0, 8)[5]  # on port 2
    env.net.drop = lambda rec: rec.src == "A" and rec.ev == hole
    assert transfer(env, conn, 40 * MTU, wr_id=1)
    assert env.a.ctl.query_ev_state(1, hole) == EvState.ASSUMED_BAD
    assert {e["ev"]: e["state"] for e in conn.qa.ev_states()}[hole] == "ASSUMED_BAD"
    events = cq.poll()
    assert [(e.profile_id, e.ev, e.port, e.state, e.drop_count) for e in events] == [(1, hole, 2, EvState.ASSUMED_BAD, 0)]
    array = {e["ev"]: e["state"] for e in env.a.ctl.query_ev_array(1)}
    assert array[hole] == "ASSUMED_BAD" and list(array.values()).count("GOOD") == 7
    env.net.drop = None  # the path heals: EV probes bring it back
    assert env.net.run(lambda: env.a.ctl.query_ev_state(1, hole) == EvState.GOOD, max_time_ps=env.net.now + 500 * US)
    assert [(e.ev, e.state) for e in cq.poll()] == [(hole, EvState.GOOD)]


@pytest.mark.parametrize("mask, expected", [(int(EvState.ASSUMED_BAD), ["ASSUMED_BAD"]), (int(EvState.GOOD), ["GOOD"]), (0, [])])
def test_ev_events_follow_the_profile_event_mask(make_two_devices, mask, expected):
    env, conn, cq = blackhole_env(make_two_devices, event_mask=mask)
    hole = explicit_evs(0, 8)[1]
    env.net.drop = lambda rec: rec.src == "A" and rec.ev == hole
    assert transfer(env, conn, 40 * MTU, wr_id=1)
    env.net.drop = None
    assert env.net.run(lambda: env.a.ctl.query_ev_state(1, hole) == EvState.GOOD, max_time_ps=env.net.now + 500 * US)
    assert [e.state.name for e in cq.poll()] == expected


def test_controller_changes_report_good_only_and_drop_counts_when_the_queue_is_full(make_two_devices):
    env = make_two_devices(ev_count=8)
    env.connect()
    cq = env.a.ctl.create_ev_event_cq(2)
    ctl, evs = env.a.ctl, explicit_evs(0, 8)
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


# --- CC profiles -------------------------------------------------------------------------------

def test_cc_profile_state_machine():
    dev = Device()
    c = dev.ctl
    with pytest.raises(UsageError, match="ALGORITHM is required to go OFFLINE"):
        c.modify_cc_profile(1, state="OFFLINE")
    with pytest.raises(UsageError, match="set ALGORITHM before CONFIG"):
        c.modify_cc_profile(1, config={})
    with pytest.raises(UsageError, match="algorithm 'dcqcn' not supported"):
        c.modify_cc_profile(1, algorithm="dcqcn")
    c.modify_cc_profile(1, algorithm="uet-1.0-nscc", state="OFFLINE")
    with pytest.raises(UsageError, match="CONFIG is required to go ONLINE"):
        c.modify_cc_profile(1, state="ONLINE")
    c.modify_cc_profile(1, config={"base_rtt_ns": 4000}, state="ONLINE")
    with pytest.raises(UsageError, match="ALGORITHM cannot change while ONLINE"):
        c.modify_cc_profile(1, algorithm=None)
    c.modify_ev_profile(1, mode="AUTO", count=8, min_active=2, event_mask=0, state="OFFLINE")
    c.modify_ev_profile(1, state="ONLINE")
    qp = bound_qp(dev)
    with pytest.raises(UsageError, match="CC profile 1: 1 QP\\(s\\) still use it \\(EBUSY\\)"):
        c.modify_cc_profile(1, state="OFFLINE")
    qp.modify("ERROR")
    dev.destroy_qp(qp)  # releases the profiles
    c.modify_cc_profile(1, state="OFFLINE")
    c.modify_cc_profile(1, state="INIT")
    assert c.query_cc_profile(1) == {"state": "INIT", "algorithm": None, "config": {}, "qps": 0}


def test_nscc_config_in_ns_becomes_the_core_row_in_ps():
    dev = Device()
    c = dev.ctl
    cfg = {"disable_qa": 1, "adjust_bytes_threshold": 65536, "adjust_period_threshold_ns": 6000, "base_rtt_ns": 5000,
           "eta": 512.0, "fi": 8192.0, "fi_scale": 0.5, "gamma": 0.7, "max_md_jump": 0.4, "max_cwnd": 200_000,
           "qa_gate": 2, "qa_threshold_ns": 12_000, "target_delay_ns": 3000}
    c.modify_cc_profile(4, algorithm="uet-1.0-nscc", config=cfg, state="OFFLINE")
    c.modify_cc_profile(4, state="ONLINE")
    row = dev.T.cc[c._cc_row(4)]
    ps = {k[:-3]: v * 1000 for k, v in cfg.items() if k.endswith("_ns")}
    for key, value in {**{k: v for k, v in cfg.items() if not k.endswith("_ns")}, **ps}.items():
        assert row[key] == pytest.approx(value), key
    c.modify_cc_profile(4, config={**cfg, "target_delay_ns": 2500})  # CONFIG while ONLINE (MODIFY_ONLINE)
    assert row["target_delay"] == 2_500_000
    for bad, match in (({"base_rtt_ns": 2.5}, "base_rtt_ns = 2.5 must be a non-negative integer"),
                       ({"window": 3}, "unknown config field 'window' \\(known: .*base_rtt_ns"),
                       ({"max_md_jump": 2.0}, "cc.max_md_jump = 2.0"),
                       ({"base_rtt_ns": 0}, "cc.base_rtt = 0"),
                       ({"base_rtt_ns": 10, "base_rtt": 10}, "gives both base_rtt_ns and base_rtt")):
        with pytest.raises(UsageError, match=match):
            c.modify_cc_profile(4, config=bad)
    assert row["target_delay"] == 2_500_000  # refused configs change nothing


def test_cc_config_time_fields_without_their_unit_still_work_and_warn():
    c = Device().ctl
    c.modify_cc_profile(1, algorithm="uet-1.0-nscc", state="OFFLINE")
    with pytest.warns(DeprecationWarning, match="'target_delay' is deprecated; use target_delay_ns"):
        c.modify_cc_profile(1, config={"base_rtt_ns": 5000, "target_delay": 3000}, state="ONLINE")
    assert c.query_cc_profile(1)["config"]["target_delay"] == 3_000_000


def test_algorithm_none_needs_max_cwnd_and_keeps_a_fixed_window(make_two_devices):
    env = make_two_devices()
    for dev in (env.a, env.b):
        dev.ctl.modify_cc_profile(2, algorithm=None, state="OFFLINE")
        with pytest.raises(UsageError, match="algorithm none needs max_cwnd"):
            dev.ctl.modify_cc_profile(2, config={"base_rtt_ns": 8000})
        dev.ctl.modify_cc_profile(2, config={"max_cwnd": 3 * MTU}, state="ONLINE")
    cqa, cqb = env.a.create_cq(), env.b.create_cq()
    qa, qb = env.a.create_qp(cqa), env.b.create_qp(cqb)
    for q in (qa, qb):
        q.modify("INIT", ev_profile_id=1, cc_profile_id=2)
    qa.modify("RTR", dest_qp_num=qb.qp_num, remote_address="B", **RTR)
    qb.modify("RTR", dest_qp_num=qa.qp_num, remote_address="A", **RTR)
    qa.modify("RTS", **RTS)
    qb.modify("RTS", **RTS)
    mr = env.a.reg_mr(bytearray(20 * MTU))
    dst = env.b.reg_mr(bytearray(20 * MTU))
    qa.post_write(1, mr.sge(), remote_addr=dst.addr, rkey=dst.rkey)
    peak = []
    env.net.run(lambda: bool(peak.append(qa.statistics()["inflight"]) or len(cqa)))
    assert max(peak) == 3 * MTU and qa.statistics()["cwnd"] == 3 * MTU


# --- endpoint requests -------------------------------------------------------------------------

def test_ev_probe_measures_the_rtt_between_two_devices(make_two_devices):
    env = make_two_devices(delay_ps=3 * US)
    env.net.run_for(1 * US)
    reqs = [EpRequest(1, "B", 1, 0x1234), EpRequest(2, "B", 2, 0x5678)]
    batch = env.a.ctl.ep_batch_send("EV_PROBE", reqs, now=env.net.now, rsp_timeout_ns=100_000)
    assert env.net.run(lambda: batch.done)
    assert sorted((r.req_id, r.port, r.rtt_ns) for r in batch.responses) == [(1, 1, 6000), (2, 2, 6000)]
    assert not batch.timed_out
    env.net.drop = lambda rec: rec.src == "B"  # no answers: the batch times out
    lost = env.a.ctl.ep_batch_send("EV_PROBE", [EpRequest(3, "B", 1, 0x1234)], now=env.net.now, rsp_timeout_ns=50_000)
    start = env.net.now
    env.net.run(lambda: lost.timed_out)
    assert lost.timed_out and lost.responses == [] and env.net.now == start + 50_000_000
    for bad, match in (([EpRequest(4, "B", 1, 1), EpRequest(4, "B", 1, 2)], "unique"),
                       ([EpRequest(5, "B", 3, 1)], "port 3 outside"), ([EpRequest(1 << 16, "B", 1, 1)], "not 16-bit")):
        with pytest.raises(UsageError, match=match):
            env.a.ctl.ep_batch_send("EV_PROBE", bad, now=env.net.now, rsp_timeout_ns=1000)


def test_port_down_reaches_the_peer_and_comes_back(make_two_devices):
    env = make_two_devices(ev_count=16)
    conn = env.connect()
    assert transfer(env, conn, 8 * MTU, wr_id=1, direction="BA")
    env.a.set_port_state(2, False, now=env.net.now)
    assert env.a.get_async_event().kind == "PORT_ERR"
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
    dev = Device(ports=2)
    c = dev.ctl
    c.modify_port(1, admin_enabled=False)
    assert c.query_port(1) == {"admin_state": "DISABLED", "up": False}
    dev.set_port_state(1, True)  # the link is up, but the port is disabled
    assert c.query_port(1)["up"] is False
    dev.set_port_state(1, False)
    c.modify_port(1, admin_enabled=True)
    assert c.query_port(1) == {"admin_state": "ENABLED", "up": False}  # enabled, but the link is down
    dev.set_port_state(1, True)
    assert c.query_port(1)["up"] is True and c.query_device()["port_mask"] == 0b11
    with pytest.raises(UsageError, match="port 3 outside"):
        dev.set_port_state(3, False)


# --- the OCP examples/ev_expansion profiles, configured through the controller ---------------------

def _online_format(c, fid, mode, widths):
    c.modify_ev_format_profile(fid, mode=mode, fields=widths, state="OFFLINE")
    c.modify_ev_format_profile(fid, state="ONLINE")


def test_ev_expansion_srv6_explicit_profile_pulls_64_bits_and_the_core_carries_the_index():
    from tests.core.naive import ev_expand

    dev = Device(ports=2)
    c = dev.ctl
    widths = [32, 16, 16, 16, 16]  # srv6_exp: 32-bit locator, four 16-bit uSIDs
    fields = [EvField(32, 0xCAFECAFE)] + [EvField(16, 0, 0, 0, 0xFFFF)] * 4
    _online_format(c, 7, "SRv6", widths)
    c.modify_ev_profile(7, mode="EXP", fmt_id=7, count=4, min_active=1, event_mask=3, fields=fields, state="OFFLINE")
    usids = [(0x1111, 0x2222, 0x3333, 0x4444), (0xA, 0xB, 0xC, 0xD), (1, 2, 3, 4), (0xFFFF, 0, 0xFFFF, 0)]
    for k, u in enumerate(usids):
        raw = bytes.fromhex("".join(f"{x:04x}" for x in u))  # the EV container's first 8 bytes
        c.replace_ev(7, None, raw, port=k % 2 + 1)
    c.modify_ev_profile(7, state="ONLINE")
    array = c.query_ev_array(7)
    for k, (e, u) in enumerate(zip(array, usids)):
        expected = (0xCAFECAFE << 64) | (u[0] << 48) | (u[1] << 32) | (u[2] << 16) | u[3]
        assert e["expanded"] == expected == ev_expand(e["raw"], 256, widths, [(f.width, f.init_val, f.mask) for f in fields])
        assert e["raw"] == int.from_bytes(bytes.fromhex("".join(f"{x:04x}" for x in u)).ljust(32, b"\0"), "big")
        assert e["ev"] == k  # wide SRv6: the core and the wire's entropy carry the entry index
    with pytest.raises(UsageError, match="already in the array"):
        c.replace_ev(7, 0, bytes.fromhex("000a000b000c000d"), port=1)
    with pytest.raises(UsageError, match="longer than the 32-byte EV container"):
        c.replace_ev(7, 0, bytes(33), port=1)
    assert c.query_device()["ev_max_bits"] == 256


def test_ev_expansion_srv6_srh_explicit_profile_pulls_128_bits():
    dev = Device(ports=2)
    c = dev.ctl
    widths = [32] + [16] * 6 + [32] + [16] * 2  # srv6_srh_exp: address + single-segment SRH, 192 bits
    usid = EvField(16, 0, 0, 0, 0xFFFF)
    fields = [EvField(32, 0xCAFECAFE)] + [usid] * 6 + [EvField(32, 0xDECAFBAD)] + [usid] * 2
    _online_format(c, 8, "SRv6", widths)
    c.modify_ev_profile(8, mode="EXP", fmt_id=8, count=2, min_active=1, event_mask=3, fields=fields, state="OFFLINE")
    c.replace_ev(8, None, bytes(range(1, 17)), port=1)  # 16 bytes: eight 16-bit uSIDs
    c.replace_ev(8, None, bytes(range(17, 33)), port=2)
    e = c.query_ev_array(8)[0]
    u = [int.from_bytes(bytes(range(1, 17))[2 * j:2 * j + 2], "big") for j in range(8)]
    expected = 0xCAFECAFE
    for x in u[:6]:
        expected = (expected << 16) | x
    expected = (expected << 32) | 0xDECAFBAD
    for x in u[6:]:
        expected = (expected << 16) | x
    assert e["expanded"] == expected and e["ev"] == 0


def test_ev_expansion_generated_profiles_through_the_controller():
    from tests.core.naive import ev_expand

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
        array = c.query_ev_array(fid)
        assert len({e["raw"] for e in array}) == 8 and all(e["state"] == "GOOD" for e in array)
        for e in array:
            assert e["expanded"] == ev_expand(e["raw"], 32, widths, [(f.width, f.init_val, f.mask) for f in fields])
            pulled = ev_fields_split(e["raw"], fields)
            assert all(f.min_val <= v <= f.max_val for f, v in zip(fields, pulled) if f.mask)
            assert e["ev"] == (e["expanded"] if mode == "STEV" else e["raw"])  # compact SRv6: the raw EV


def ev_fields_split(raw, fields):
    from mrc.ctl.ev_fields import split_raw

    return split_raw(raw, 32, fields)


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
    assert sorted(e["ev"] for e in qa.ev_states()) == list(range(16))
    assert qa.query()["ev_min_active"] == 4 and qa.query()["ev_event_mask"] == 3  # from the EV profile
    assert transfer(env, Conn(qa, qb, cqa, cqb), 12 * MTU, wr_id=1)
    hole = 5  # EV (index) 5 of device a
    env.net.drop = lambda rec: rec.src == "A" and rec.ev == hole
    env.a.ctl.modify_ev_state(7, 3, "DENIED")
    assert transfer(env, Conn(qa, qb, cqa, cqb), 40 * MTU, wr_id=2)
    assert env.a.ctl.query_ev_state(7, hole) == EvState.ASSUMED_BAD
    assert env.a.ctl.query_ev_state(7, 3) == EvState.DENIED


def test_ev_op_batches_apply_in_order_and_stop_at_the_first_bad_entry():
    from mrc.ctl import EvOpEntry

    dev = Device(ports=2)
    c = dev.ctl
    tiers_profile(dev, count=4)
    got = c.ev_op(3, "REPLACE_EV", [EvOpEntry(None, raw(1, 1, 1), 1), EvOpEntry(None, raw(2, 2, 2), 2)])
    assert got == [1, 1]
    with pytest.raises(UsageError, match="entry 1: .*already in the array"):
        c.ev_op(3, "REPLACE_EV", [EvOpEntry(None, raw(3, 3, 3), 1), EvOpEntry(None, raw(1, 1, 1), 2)])
    assert [e["ev"] for e in c.query_ev_array(3)] == [0x111, 0x222, 0x333, None]  # entry 0 stayed applied
    c.ev_op(3, "REPLACE_EV", [EvOpEntry(None, raw(4, 4, 4), 2, state="DENIED")])
    c.ev_op(3, "MODIFY_EV_STATE", [EvOpEntry(0x111, state="DENIED"), EvOpEntry(0x444, state="GOOD")])
    assert c.ev_op(3, "QUERY_EV_STATE", [EvOpEntry(0x111), EvOpEntry(0x222), EvOpEntry(0x444)]) == [
        EvState.DENIED, EvState.GOOD, EvState.GOOD]
    assert len(c.ev_op(3, "QUERY_EV_ARRAY")) == 4
    with pytest.raises(UsageError, match="op 'SWAP_EV'"):
        c.ev_op(3, "SWAP_EV", [EvOpEntry(0x111)])
    with pytest.raises(UsageError, match="entry 0: MODIFY_EV_STATE needs state"):
        c.ev_op(3, "MODIFY_EV_STATE", [EvOpEntry(0x111)])
