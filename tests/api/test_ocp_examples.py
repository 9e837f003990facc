"""The OCP repository's API examples (opencomputeproject/OCP-Multipath-Reliable-Connection, examples/*.md and
examples/ev_expansion), ported step by step through `mrc.api` / `mrc.ctl`: every call in the example's order,
with the example's values.

Where an example cannot be followed to the letter, the port does what its text says and the docstring of
the test lists each such place. The examples were written against an earlier draft of the headers in places
(``ev_op.replace_ev.cur_ev`` / ``ev_op.fields`` where ``mrc_ctl.h`` now has ``ev_op.entries`` and
``ev_fields_op``): the port uses the current header's structs. A C program on a little-endian host that
``memcpy``s a ``uint32_t`` into ``mrc_ctl_ev.val`` writes its bytes low first; the ports do the same
(``struct.pack("<I", ...)``) and read them back the same way, as the examples print them.
"""
from __future__ import annotations

import ipaddress
import struct
from pathlib import Path

import pytest

from mrc.api import (
    IBV_QP_EX_WITH_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, MRC_API_CURRENT_VERSION, ContextAttr, Device,
    IbvQpAttr, IbvQpAttrMask, QpAttr, QpAttrMask, QpCap, QpCapFlags, QpInitAttr, create_context,
)
from mrc.ctl import (
    MRC_CTL_EV_UNPOPULATED, CtlAttrOpt, CtlEv, EpOpType, EpRequest, EvField, EvFieldsOp, EvFieldsOpArgs, EvFmtField,
    EvFmtMode, EvFmtOp, EvFmtOpArgs, EvFmtProfileAttr, EvFmtProfileAttrMask as FM, EvOp, EvOpArgs, EvOpEntry,
    EvProfileAttr, EvProfileAttrMask as M, EvProfileMode, EvState, ProfileState,
)
from mrc.errors import ENOTSUP
from mrc.testing.simnet import SimNet
from mrc.units import US

from tests.twodevices import RTR, RTS

OFFLINE, ONLINE, INIT = ProfileState.OFFLINE, ProfileState.ONLINE, ProfileState.INIT


def u32(ev: CtlEv) -> int:
    """``memcpy(&val, ev.val, sizeof(uint32_t))`` on a little-endian host, as the examples print EVs."""
    return struct.unpack("<I", ev.val[:4])[0]


def ev32(value: int, port: int) -> CtlEv:
    """``memcpy(ev.val, &value, sizeof(uint32_t)); ev.port = port`` on a little-endian host."""
    return CtlEv(struct.pack("<I", value), port)


def open_device(**kw) -> Device:
    """ibv_get_device_list + ibv_open_device(dev_list[0]): the library's device."""
    return Device("mrc0", seed=1, **kw)


def fmt_profile(ctl, fid, mode, widths):
    """The two steps every example takes for an EV Format profile: INIT -> OFFLINE with mode and fields,
    then OFFLINE -> ONLINE."""
    attr = EvFmtProfileAttr(profile_state=OFFLINE, ev_fmt_mode=mode,
                            ev_fmt_op=EvFmtOpArgs(EvFmtOp.MODIFY_FIELDS, [EvFmtField(w) for w in widths], len(widths)))
    ctl.modify_ev_fmt_profile(fid, attr, FM.STATE | FM.MODE | FM.OP)
    ctl.modify_ev_fmt_profile(fid, EvFmtProfileAttr(profile_state=ONLINE), FM.STATE)


def set_state(ctl, ids, state, fmt=False):
    for pid in ids:
        if fmt:
            ctl.modify_ev_fmt_profile(pid, EvFmtProfileAttr(profile_state=state), FM.STATE)
        else:
            ctl.modify_ev_profile(pid, EvProfileAttr(profile_state=state), M.STATE)


def test_mrc_ctl_exp_ev_md():
    """examples/mrc_ctl_exp_ev.md. Differences: the SRv6 and SRv6+SRH sections create only the format profiles
    and say the EV profile is configured "similar to that shown above for STEV", while "Destroying Resources"
    takes ``srv6_profile_id`` and ``srv6_srh_profile_id`` down: the port creates those two explicit profiles
    (ids 2 and 3, eight EVs each, no fields: each EV is its address, and SRH segment) so that the teardown runs
    as written. Replacing EVs 13-42 by 141-170 puts EVs that are already in the array there a second time, which
    mrc_ctl.h allows."""
    dev = open_device()
    mrc_ctl_attr = dev.ctl.query_device()
    assert mrc_ctl_attr.ev.ev_mode_mask & EvProfileMode.EXP
    mrc_ctx = create_context(dev, ContextAttr(mrc_api_version_used=MRC_API_CURRENT_VERSION))
    ctl = mrc_ctx.ctl

    # STEV: the EV Format profile, two 16-bit fields
    ev_fmt_profile_id = 13
    fmt_profile(ctl, ev_fmt_profile_id, EvFmtMode.STEV, [16, 16])

    # the explicit EV profile
    ev_profile_id = 1
    ev_count = mrc_ctl_attr.ev.ev_max_count_profile
    if ev_count % mrc_ctl_attr.ev.ev_count_align != 0:
        ev_count -= ev_count % mrc_ctl_attr.ev.ev_count_align
    ctl.modify_ev_profile(ev_profile_id, EvProfileAttr(
        profile_state=OFFLINE, ev_mode=EvProfileMode.EXP, ev_fmt_profile_id=ev_fmt_profile_id, ev_count=ev_count,
        ev_min_active=ev_count // 4, ev_event_mask=EvState.GOOD | EvState.ASSUMED_BAD),
        M.STATE | M.MODE | M.FMT_ID | M.COUNT | M.MIN_ACTIVE | M.EVENT_MASK)

    # populate: every entry starts unpopulated
    for i in range(ev_count):
        cur_ev = MRC_CTL_EV_UNPOPULATED
        new_ev = ev32((i << 16) | i, 1)
        ctl.modify_ev_profile(ev_profile_id, EvProfileAttr(ev_op=EvOpArgs(EvOp.REPLACE_EV, [
            EvOpEntry(ev=cur_ev, ev_new=new_ev, flags=0)])), M.EV_OP)

    ctl.modify_ev_profile(ev_profile_id, EvProfileAttr(profile_state=ONLINE), M.STATE)

    # deny 13..42
    for i in range(13, 43):
        ev = ev32((i << 16) | i, 1)
        ctl.modify_ev_profile(ev_profile_id, EvProfileAttr(ev_op=EvOpArgs(EvOp.MODIFY_EV_STATE, [
            EvOpEntry(ev=ev, state=EvState.DENIED)])), M.EV_OP)
    assert ctl.query_ev_state(ev_profile_id, ev32((20 << 16) | 20, 1)) == EvState.DENIED

    # replace 13..42 by 141..170 (MODIFY_ONLINE is advertised)
    assert mrc_ctl_attr.opt_attr & CtlAttrOpt.EV_PROFILE_MODIFY_ONLINE
    ev_shift = 128
    for i in range(13, 43):
        old_ev, new_ev = ev32((i << 16) | i, 1), ev32(((i + ev_shift) << 16) | (i + ev_shift), 1)
        ctl.modify_ev_profile(ev_profile_id, EvProfileAttr(ev_op=EvOpArgs(EvOp.REPLACE_EV, [
            EvOpEntry(ev=old_ev, ev_new=new_ev, flags=0)])), M.EV_OP)

    # query the profile, then its array
    attr_mask = M.STATE | M.MODE | M.FMT_ID | M.COUNT | M.MIN_ACTIVE | M.EVENT_MASK
    ev_profile_attr = ctl.query_ev_profile(ev_profile_id, attr_mask)
    assert ev_profile_attr.ev_mode == EvProfileMode.EXP
    assert (ev_profile_attr.profile_state, ev_profile_attr.ev_fmt_profile_id, ev_profile_attr.ev_count,
            ev_profile_attr.ev_min_active, ev_profile_attr.ev_event_mask) == (ONLINE, 13, ev_count, ev_count // 4, 3)
    ev_array = ctl.query_ev_profile(ev_profile_id, M.EV_OP, EvProfileAttr(
        ev_op=EvOpArgs(EvOp.QUERY_EV_ARRAY, entry_count=ev_profile_attr.ev_count))).ev_op.entries
    printed = [(i, u32(e.ev), e.ev.port) for i, e in enumerate(ev_array)]
    expect = [(i, ((j << 16) | j), 1) for i, j in ((i, i + ev_shift if 13 <= i <= 42 else i) for i in range(ev_count))]
    assert printed == expect

    # SRv6: a 32-bit locator and four 16-bit uSIDs (96 bits); the EV profile "similar to STEV"
    srv6_fmt_profile_id, srv6_profile_id = 14, 2
    fmt_profile(ctl, srv6_fmt_profile_id, EvFmtMode.SRV6, [32, 16, 16, 16, 16])
    explicit_profile(ctl, srv6_profile_id, srv6_fmt_profile_id,
                     [CtlEv(bytes.fromhex(f"fc000001000{k}000200030004"), k % 2 + 1) for k in range(8)])
    addr = ctl.ev_table(srv6_profile_id)[3]["expanded"]  # each EV is its address: locator and four uSIDs
    assert addr == int("fc000001" "0003" "0002" "0003" "0004", 16)

    # SRv6+SRH: address (32 + 6 x 16 bits) and SRH segment (32 + 4 x 16 bits), 224 bits
    srv6_srh_fmt_profile_id, srv6_srh_profile_id = 15, 3
    fmt_profile(ctl, srv6_srh_fmt_profile_id, EvFmtMode.SRV6, [32] + [16] * 6 + [32] + [16] * 4)
    explicit_profile(ctl, srv6_srh_profile_id, srv6_srh_fmt_profile_id,
                     [CtlEv(bytes.fromhex(f"fc00000{k}" + "0001" * 6 + "fc000100" + "0002" * 4), k % 2 + 1)
                      for k in range(8)])
    srh = ctl.ev_table(srv6_srh_profile_id)[5]
    assert srh["expanded"] >> 96 == int("fc000005" + "0001" * 6, 16) and srh["expanded"] & ((1 << 96) - 1) == int(
        "fc000100" + "0002" * 4, 16)  # the address, then the SRH segment

    # destroying resources
    set_state(ctl, (ev_profile_id, srv6_profile_id, srv6_srh_profile_id), OFFLINE)
    set_state(ctl, (ev_profile_id, srv6_profile_id, srv6_srh_profile_id), INIT)
    set_state(ctl, (ev_fmt_profile_id, srv6_fmt_profile_id, srv6_srh_fmt_profile_id), OFFLINE, fmt=True)
    set_state(ctl, (ev_fmt_profile_id, srv6_fmt_profile_id, srv6_srh_fmt_profile_id), INIT, fmt=True)
    mrc_ctx.destroy()
    assert ctl.query_device().ev.ev_free_count == ctl.query_device().ev.ev_max_count


def explicit_profile(ctl, pid, fid, evs):
    """An explicit EV profile over format `fid` with the EVs `evs`, as the STEV one is made."""
    ctl.modify_ev_profile(pid, EvProfileAttr(profile_state=OFFLINE, ev_mode=EvProfileMode.EXP, ev_fmt_profile_id=fid,
                                             ev_count=len(evs), ev_min_active=len(evs) // 4,
                                             ev_event_mask=EvState.GOOD | EvState.ASSUMED_BAD),
                          M.STATE | M.MODE | M.FMT_ID | M.COUNT | M.MIN_ACTIVE | M.EVENT_MASK)
    for ev in evs:
        ctl.modify_ev_profile(pid, EvProfileAttr(ev_op=EvOpArgs(EvOp.REPLACE_EV, [
            EvOpEntry(ev=MRC_CTL_EV_UNPOPULATED, ev_new=ev, flags=0)])), M.EV_OP)
    ctl.modify_ev_profile(pid, EvProfileAttr(profile_state=ONLINE), M.STATE)


def gen_profile(ctl, pid, fid, fields, count, mrc_ctl_attr):
    """INIT -> OFFLINE with the generation fields (EV_FIELDS_OP), then ONLINE, as the example's STEV profile."""
    if count > mrc_ctl_attr.ev.ev_max_count_profile:
        count = mrc_ctl_attr.ev.ev_max_count_profile
    if count % mrc_ctl_attr.ev.ev_count_align != 0:
        count -= count % mrc_ctl_attr.ev.ev_count_align
    ctl.modify_ev_profile(pid, EvProfileAttr(
        profile_state=OFFLINE, ev_mode=EvProfileMode.GEN, ev_fmt_profile_id=fid, ev_count=count,
        ev_min_active=count // 4, ev_event_mask=EvState.GOOD | EvState.ASSUMED_BAD,
        ev_fields_op=EvFieldsOpArgs(EvFieldsOp.MODIFY_FIELDS, fields, len(fields))),
        M.STATE | M.MODE | M.FMT_ID | M.COUNT | M.MIN_ACTIVE | M.EVENT_MASK | M.EV_FIELDS_OP)
    ctl.modify_ev_profile(pid, EvProfileAttr(profile_state=ONLINE), M.STATE)
    return count


def test_mrc_ctl_gen_ev_md():
    """examples/mrc_ctl_gen_ev.md. Differences: the fields go in ``ev_fields_op`` (the example's ``ev_op.fields``
    is the draft's name) and the QUERY_FIELDS call too; the SRv6 profile's field assignments all write
    ``ev_fields_srv6[0]`` and pass ``field_count = 2`` while the comments and the count computation describe
    five fields (locator 0xdeadcafe fixed; four uSIDs 0x100..0x400 with the low byte generated): the port
    gives those five; and the teardown's ``srv6_srh_profile_id``, never created, is made "similar to" the
    others (a GEN profile over the SRv6+SRH format)."""
    dev = open_device()
    mrc_ctl_attr = dev.ctl.query_device()
    assert mrc_ctl_attr.ev.ev_mode_mask & EvProfileMode.GEN
    mrc_ctx = create_context(dev, ContextAttr(mrc_api_version_used=MRC_API_CURRENT_VERSION))
    ctl = mrc_ctx.ctl

    ev_fmt_profile_id = 13
    fmt_profile(ctl, ev_fmt_profile_id, EvFmtMode.STEV, [8, 4, 4])
    ev_profile_id = 1
    ev_fields = [EvField(8, 0, 0, 255, 0xFF), EvField(4, 0, 0, 15, 0x0F), EvField(4, 0, 0, 15, 0x0F)]
    ev_count = (ev_fields[0].max_val + 1) * (ev_fields[1].max_val + 1) * (ev_fields[2].max_val + 1)
    assert ev_count == 65536
    ev_count = gen_profile(ctl, ev_profile_id, ev_fmt_profile_id, ev_fields, ev_count, mrc_ctl_attr)

    # query: the attributes, the fields (room for 10), the generated array
    ev_profile_attr = ctl.query_ev_profile(ev_profile_id, M.STATE | M.MODE | M.FMT_ID | M.COUNT)
    assert ev_profile_attr.ev_mode == EvProfileMode.GEN and ev_profile_attr.ev_count == ev_count == 256
    got = ctl.query_ev_profile(ev_profile_id, M.EV_FIELDS_OP, EvProfileAttr(
        ev_fields_op=EvFieldsOpArgs(EvFieldsOp.QUERY_FIELDS, field_count=10)))
    assert got.ev_fields_op.field_count == 3 and got.ev_fields_op.fields == ev_fields
    ev_array = ctl.query_ev_profile(ev_profile_id, M.EV_OP, EvProfileAttr(
        ev_op=EvOpArgs(EvOp.QUERY_EV_ARRAY, entry_count=ev_profile_attr.ev_count))).ev_op.entries
    vals = [u32(e.ev) for e in ev_array]
    assert len(set(vals)) == 256 and all(v >> 16 == 0 for v in vals)  # 16 bits of EV: T0, T1, T2

    # deny the EVs whose T0 field (the lowest 8 bits as printed) is 180-255
    denied = []
    for e in ev_array:
        val = u32(e.ev)
        if 180 <= (val & 0xFF) <= 255:
            ctl.modify_ev_profile(ev_profile_id, EvProfileAttr(ev_op=EvOpArgs(EvOp.MODIFY_EV_STATE, [
                EvOpEntry(ev=e.ev, state=EvState.DENIED)])), M.EV_OP)
            denied.append(e.ev)
    assert denied and all(e["state"] == ("DENIED" if e["ev"] in denied else "GOOD") for e in ctl.ev_table(1))
    assert all(e["value"] >> 8 >= 180 for e in ctl.ev_table(1) if e["ev"] in denied)  # T0 leads the wire value

    # SRv6: a fixed 32-bit locator, four uSIDs of which the high byte is the tier and the low byte generated
    srv6_fmt_profile_id, ev_profile_id_srv6 = 14, 2
    fmt_profile(ctl, srv6_fmt_profile_id, EvFmtMode.SRV6, [32, 16, 16, 16, 16])
    ev_fields_srv6 = [EvField(32, 0xDEADCAFE, 0, 0, 0)] + [EvField(16, t << 8, 0, 255, 0xFF) for t in range(1, 5)]
    count = 1
    for f in ev_fields_srv6[1:]:
        count *= f.max_val + 1
    gen_profile(ctl, ev_profile_id_srv6, srv6_fmt_profile_id, ev_fields_srv6, count, mrc_ctl_attr)
    for e in ctl.ev_table(ev_profile_id_srv6):
        x = e["expanded"]
        assert x >> 64 == 0xDEADCAFE and [(x >> s) & 0xFF00 for s in (48, 32, 16, 0)] == [0x100, 0x200, 0x300, 0x400]

    # SRv6+SRH (224 bits); its EV profile "similar to" the others
    srv6_srh_fmt_profile_id, srv6_srh_profile_id = 15, 3
    fmt_profile(ctl, srv6_srh_fmt_profile_id, EvFmtMode.SRV6, [32] + [16] * 6 + [32] + [16] * 4)
    usid = [EvField(16, t << 8, 0, 255, 0xFF) for t in range(1, 7)]
    gen_profile(ctl, srv6_srh_profile_id, srv6_srh_fmt_profile_id,
                [EvField(32, 0xDEADCAFE)] + usid + [EvField(32, 0xDECAFBAD)] + usid[:4], 1 << 80, mrc_ctl_attr)
    assert len(set(ctl.query_ev_array(srv6_srh_profile_id))) == 256

    set_state(ctl, (1, ev_profile_id_srv6, srv6_srh_profile_id), OFFLINE)
    set_state(ctl, (1, ev_profile_id_srv6, srv6_srh_profile_id), INIT)
    set_state(ctl, (ev_fmt_profile_id, srv6_fmt_profile_id, srv6_srh_fmt_profile_id), OFFLINE, fmt=True)
    set_state(ctl, (ev_fmt_profile_id, srv6_fmt_profile_id, srv6_srh_fmt_profile_id), INIT, fmt=True)
    mrc_ctx.destroy()


def test_mrc_ctl_ev_events_md():
    """examples/mrc_ctl_ev_events.md. The example assumes EV profile 13 exists; the port makes it (explicit, 8
    STEV EVs) on two devices joined by the library's in-memory network, connects a QP pair over it, and makes
    one EV's path lose everything for a while, so that the poll loop has events to print: ASSUMED_BAD, then
    GOOD once probes find the path again."""
    dev = open_device()
    peer = Device("peer", seed=2)
    mrc_ctl_attr = dev.ctl.query_device()
    assert mrc_ctl_attr.opt_attr & CtlAttrOpt.EV_EVENT
    mrc_ctx = create_context(dev, ContextAttr(mrc_api_version_used=MRC_API_CURRENT_VERSION))
    ctl = mrc_ctx.ctl

    evs = [ev32(0x0A000000 | (k << 8) | (k + 1), k % 2 + 1) for k in range(8)]  # the existing profile 13
    for d, mine in ((dev, evs), (peer, [ev32(0x0B000000 | k, k % 2 + 1) for k in range(8)])):
        fmt_profile(d.ctl, 13, EvFmtMode.STEV, [32])
        explicit_profile(d.ctl, 13, 13, mine)
        d.ctl.modify_ev_profile(13, event_mask=0)  # no events yet
        d.ctl.setup_cc_profile(1)

    ev_cq = ctl.create_ev_event_cq(128, None, None, 0)

    ev_profile_id = 13
    ctl.modify_ev_profile(ev_profile_id, EvProfileAttr(ev_event_mask=EvState.GOOD | EvState.ASSUMED_BAD),
                          M.EVENT_MASK)

    net = SimNet([dev, peer], seed=3)
    qa, qb = dev.create_qp(), peer.create_qp()
    for q in (qa, qb):
        q.modify("INIT", ev_profile_id=13, cc_profile_id=1)
    qa.modify("RTR", dest_qp_num=qb.qp_num, remote_address="peer", **RTR)
    qb.modify("RTR", dest_qp_num=qa.qp_num, remote_address="mrc0", **RTR)
    qa.modify("RTS", **{**RTS, "ev_active_target": 8, "ev_probe_interval_ps": 20 * US})
    qb.modify("RTS", **RTS)
    hole = ctl.ev_table(13)[5]  # EV 5, port 2
    net.drop = lambda sent: sent.src == "mrc0" and sent.ev == hole["value"]
    ma, mb = dev.reg_mr(bytearray(40 * 4096)), peer.reg_mr(bytearray(40 * 4096))
    net.post_write(qa, 1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
    assert net.wait_completion(qa.send_cq)[0].ok
    net.drop = None
    net.wait_condition(lambda: ctl.query_ev_state(13, hole["ev"]) == EvState.GOOD)

    printed = []
    while True:  # the poll loop, four at a time
        events = ctl.poll_ev_event(ev_cq, 4)
        assert len(events) >= 0
        if len(events) == 0:
            break
        for e in events:
            ev_val = u32(e.ev)
            printed.append((e.profile_id, ev_val, e.ev.port, e.drop_count, e.state))
    assert printed == [(13, u32(evs[5]), 2, 0, EvState.ASSUMED_BAD), (13, u32(evs[5]), 2, 0, EvState.GOOD)]

    # the drop count: precise here, so the number of events dropped between two delivered ones
    assert mrc_ctl_attr.opt_attr & CtlAttrOpt.EV_EVENT_PRECISE_DROP_CNT
    assert all(drop_count == 0 for *_, drop_count, _ in printed)

    ev_cq.destroy()
    mrc_ctx.destroy()


def test_mrc_ctl_ev_probes_md():
    """examples/mrc_ctl_ev_probes.md. The example's GIDs are IPv4 RoCEv2 GIDs (it writes "10.0.0.1" with
    ``AF_INET6``, which ``inet_pton`` would refuse: the port takes the IPv4-mapped GIDs ::ffff:10.0.0.x the text
    means); three devices with those GIDs are joined by the library's in-memory network. ``ep_rsqs`` in the
    example is ``ep_rsps``."""
    gids = [ipaddress.IPv6Address(f"::ffff:10.0.0.{n}") for n in (1, 2, 3)]
    devs = [Device(f"h{n}", seed=n, address=g) for n, g in enumerate(gids, 1)]
    net = SimNet(devs, seed=5, delay_ps=3 * US)
    dev = devs[0]
    mrc_ctl_attr = dev.ctl.query_device()
    assert mrc_ctl_attr.opt_attr & CtlAttrOpt.EP_OP_EV_PROBE
    mrc_ctx = create_context(dev, ContextAttr(mrc_api_version_used=MRC_API_CURRENT_VERSION))

    ep_reqs = [EpRequest(req_id=1, sgid="10.0.0.1", dgid="10.0.0.2", ev_fmt_mode=EvFmtMode.STEV,
                         req_ev=ev32(0x12345678, 1)),
               EpRequest(req_id=2, sgid="10.0.0.1", dgid="10.0.0.3", ev_fmt_mode=EvFmtMode.STEV,
                         req_ev=ev32(0x87654321, 1))]
    ep_rsps = mrc_ctx.ctl.ep_batch_send_wait(0, EpOpType.EV_PROBE, ep_reqs, 2_000_000, now=net.now,
                                             drive=lambda done, t: net.run(done, max_time_ps=t))
    num_rsps = len(ep_rsps)
    assert num_rsps == 2
    assert sorted((r.req_id, r.port, r.rtt_ns) for r in ep_rsps) == [(1, 1, 6000), (2, 1, 6000)]
    assert all(r.adj_svc_time in (0, 1, False, True) for r in ep_rsps)
    sent = [r for r in net.sent if r.src == gids[0]]
    assert {r.ev for r in sent} == {0x78563412, 0x21436587}  # the EV's bytes as the example's memcpy wrote them
    mrc_ctx.destroy()


def test_mrc_qp_md(monkeypatch):
    """examples/mrc_qp.md. Differences: ``ibv_alloc_pd`` has no counterpart (the library has no protection
    domains; `QpInitAttr.pd` is kept as given); the example names the QP ``qp`` and ``mrc_qp`` and the init
    attributes ``qp_init_attr`` and ``mrc_qp_init_attr``; its RTR mask is written ``(... | MRC_QP_MAX_WIMM_DEST,
    MRC_QP_CAP)``, which C evaluates to MRC_QP_CAP alone: the port ORs all five, as meant. "fill in QP
    attributes..." leaves out the verbs attributes RTR and RTS need (the peer's QPN and address, the PSNs):
    the port adds them. MRC_QP_CAP_DYNAMIC_MPR is set only if the device advertises dynamic MPR (otherwise the
    port checks that asking for it is refused, ENOTSUP)."""
    dev = open_device(max_wr=128)
    mrc_attr = dev.query_device()
    assert mrc_attr.supported
    pd = object()  # ibv_alloc_pd
    mrc_ctx = create_context(dev, ContextAttr(mrc_api_version_used=MRC_API_CURRENT_VERSION))
    dev.ctl.setup_ev_profile(7, count=16)  # what the controller configured out of band
    dev.ctl.setup_cc_profile(9)
    monkeypatch.setenv("MRC_QP_EV_PROFILE_ID", "7")
    monkeypatch.setenv("MRC_QP_CC_PROFILE_ID", "9")

    cq = mrc_ctx.create_cq(128, None, None, 0)
    mrc_qp_init_attr = QpInitAttr(send_cq=cq, recv_cq=cq, sq_sig_all=1, cap=QpCap(128, 128, 1, 1), pd=pd,
                                  send_ops_flags=IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
    qp = mrc_ctx.create_qp(mrc_qp_init_attr)
    assert qp.state == "RESET"

    import os

    ev_profile_id, cc_profile_id = int(os.environ["MRC_QP_EV_PROFILE_ID"]), int(os.environ["MRC_QP_CC_PROFILE_ID"])
    qp.modify_qp(IbvQpAttr(qp_state="INIT"), IbvQpAttrMask.STATE,
                 QpAttr(ev_profile_id=ev_profile_id, cc_profile_id=cc_profile_id, qp_hint=None),
                 QpAttrMask.EV_PROFILE_ID | QpAttrMask.CC_PROFILE_ID | QpAttrMask.HINT)

    verbs = IbvQpAttrMask.STATE | IbvQpAttrMask.DEST_QPN | IbvQpAttrMask.AV | IbvQpAttrMask.RQ_PSN
    rtr_mask = QpAttrMask.MPR | QpAttrMask.MPR_DEST | QpAttrMask.MAX_WIMM | QpAttrMask.MAX_WIMM_DEST | QpAttrMask.CAP
    rtr = QpAttr(mpr=8, mpr_dest=8, max_wimm=128, max_wimm_dest=128, cap=QpCapFlags.DYNAMIC_MPR)
    peer = IbvQpAttr(qp_state="RTR", dest_qp_num=0x1234, remote_address="peer", rq_psn=0)
    if mrc_attr.cap & 2:  # MRC_DEVICE_CAP_DYNAMIC_MPR
        qp.modify_qp(peer, verbs, rtr, rtr_mask)
    else:
        with pytest.raises(ENOTSUP, match="dynamic MPR"):
            qp.modify_qp(peer, verbs, rtr, rtr_mask)
        rtr.cap = 0
        qp.modify_qp(peer, verbs, rtr, rtr_mask)
    assert qp.state == "RTR"
    qp.post_recv(1)  # receives may be posted from RTR on

    qp.modify_qp(IbvQpAttr(qp_state="RTS", sq_psn=0), IbvQpAttrMask.STATE | IbvQpAttrMask.SQ_PSN,
                 QpAttr(mpr=8, max_wimm=128, timeout=8, retry_linear=7, retry_exp=25),
                 QpAttrMask.MPR | QpAttrMask.MAX_WIMM | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT)
    assert qp.state == "RTS"

    ibv_qp_attr, mrc_qp_attr, init = qp.query_qp(
        IbvQpAttrMask.STATE, QpAttrMask.MAX_WIMM | QpAttrMask.MAX_WIMM_DEST | QpAttrMask.MPR | QpAttrMask.MPR_DEST
        | QpAttrMask.TIMEOUT | QpAttrMask.EV_PROFILE_ID | QpAttrMask.CC_PROFILE_ID | QpAttrMask.HINT
        | QpAttrMask.RETRY_CNT | QpAttrMask.CAP | QpAttrMask.VENDOR_CFG)
    assert ibv_qp_attr.qp_state == "RTS"
    assert (mrc_qp_attr.mpr, mrc_qp_attr.mpr_dest, mrc_qp_attr.max_wimm, mrc_qp_attr.max_wimm_dest, mrc_qp_attr.timeout,
            mrc_qp_attr.retry_linear, mrc_qp_attr.retry_exp) == (8, 8, 128, 128, 8, 7, 25)
    assert (mrc_qp_attr.ev_profile_id, mrc_qp_attr.cc_profile_id, mrc_qp_attr.qp_hint) == (7, 9, None)
    assert mrc_qp_attr.vendor_cfg == b"" and init.pd is pd and init.cap.max_send_wr == 128

    qp.destroy()  # mrc_destroy_qp, in RTS
    cq.destroy()
    mrc_ctx.destroy()


# --- examples/ev_expansion --------------------------------------------------------------------------

# Each case of ev_expansion.c: format (mode, widths) and profile fields (width, init_val, min, max, mask).
_STEV16 = ("STEV", [16, 16])
_SRV6 = ("SRv6", [32, 16, 16, 16, 16])
EXPANSION_CASES = {
    "stev_exp": (_STEV16, [EvField(16, 0, 0, 0, 0xFFFF)] * 2),
    "stev_gen_1": (_STEV16, [EvField(16, 0, 0, 0, 0xFFFF)] * 2),
    "stev_gen_2": (("STEV", [32]), [EvField(32, 0, 0, 0, 0xFFFFFFFF)]),
    "stev_gen_with_fixed": (_STEV16, [EvField(16, (i + 1) << 8, 1, 0xF, 0x000F) for i in range(2)]),
    "stev_gen_with_fixed_weird_mask": (_STEV16, [EvField(16, (i + 1) << 12, 1, 0xFF, 0x0F0F) for i in range(2)]),
    "srv6_exp": (_SRV6, [EvField(32, 0xCAFECAFE)] + [EvField(16, 0, 0, 0, 0xFFFF)] * 4),
    "srv6_exp_subset": (_SRV6, [EvField(32, 0xDEADDEAD)] + [EvField(16, 0, 0, 0, 0xFFFF)] * 2),
    "srv6_gen": (_SRV6, [EvField(32, 0x42424242)] + [EvField(4, 0, 1, 0xF, 0xF)] * 4),
    "srv6_gen_with_fixed": (_SRV6, [EvField(32, 0x13131313)] + [EvField(16, i << 8, 1, 0xF, 0x000F) for i in range(1, 5)]),
    "srv6_srh_exp": (("SRv6", [32] + [16] * 6 + [32] + [16] * 2),
                     [EvField(32, 0xCAFECAFE)] + [EvField(16, 0, 0, 0, 0xFFFF)] * 6 + [EvField(32, 0xDECAFBAD)]
                     + [EvField(16, 0, 0, 0, 0xFFFF)] * 2),
}
GOLDEN = Path(__file__).with_name("ev_expansion_c.txt")


def _golden() -> dict:
    out: dict = {}
    for line in GOLDEN.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, raw, exp = line.split()
            out.setdefault(name, []).append((bytes.fromhex(raw), bytes.fromhex(exp)))
    return out


@pytest.mark.parametrize("name", list(EXPANSION_CASES))
def test_ev_expansion_c_cases_expand_as_the_program_prints_them(name):
    """Each case of ev_expansion.c configured through the controller (an explicit profile holding the program's
    eight EVs, whatever the case's mode: expansion does not depend on it): the expansions are the program's
    output, bit for bit (tests/api/ev_expansion_c.txt)."""
    (mode, widths), fields = EXPANSION_CASES[name]
    golden = _golden()[name]
    c = Device(ports=2).ctl
    c.modify_ev_fmt_profile(1, mode=mode, fields=widths, state="OFFLINE")
    c.modify_ev_fmt_profile(1, state="ONLINE")
    c.modify_ev_profile(1, mode="EXP", fmt_id=1, count=8, min_active=1, event_mask=3, fields=fields, state="OFFLINE")
    for raw, _ in golden:
        c.replace_ev(1, MRC_CTL_EV_UNPOPULATED, CtlEv(raw, 1))
    total = sum(widths)
    for e, (raw, exp) in zip(c.ev_table(1), golden):
        assert (e["expanded"] << (256 - total)).to_bytes(32, "big") == exp, (name, raw.hex())
    if "gen" in name:  # the program draws each generated field inside [min_val, max_val]: so does ours
        c.modify_ev_profile(2, mode="GEN", fmt_id=1, count=8, min_active=1, event_mask=3, fields=fields, state="OFFLINE")
        from mrc.ctl.ev_fields import in_range

        assert all(in_range(e.raw, 256, fields) for e in c.query_ev_array(2))
        assert all(in_range(CtlEv(raw).raw, 256, fields) for raw, _ in golden)
