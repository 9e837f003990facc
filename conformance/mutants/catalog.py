"""The mutants, one row each: name, the bug, and the lens that produces it (see `base`)."""
from __future__ import annotations

from mrc.wire import EvMode

from ..adapter import Completion
from ..packets import opcode_of
from .base import Mutant, View, region_of, swap_ev
from .ctl import CTL_MUTANTS

SACK, NACK, PROBE, ACK, EP_REQ, EP_RSP = 0xDC, 0xDD, 0xDE, 0xD1, 0xD8, 0xD9
TRIMMED, LASTHOP, NO_BITMAP, OOR, UNEXP = 0x01, 0x02, 0x06, 0x0B, 0x19
LAST_OPS = {0xC8: 0xCA, 0xC9: 0xCB, 0xC6: 0xCA, 0xC7: 0xCA}  # -> ONLY / ONLY_IMM
DATA = frozenset(range(0xC6, 0xCC))
LAST = frozenset({0xC8, 0xC9, 0xCA, 0xCB})
IMM = frozenset({0xC9, 0xCB})
IMM_OPS = IMM


def _t(*tokens):
    return frozenset(tokens)


_TX_ANY = _t(("tx", "*"))
_TX_DATA = frozenset(("tx", op) for op in DATA)
_RX_DATA = frozenset(("rx", op) for op in DATA)
_TX_RTX = _t(("tx", "rtx"))
_FEEDBACK = _t(("rx", SACK), ("rx", NACK), ("tx", "rtx"))


def _cfg(**changes):
    return lambda cfg: cfg.replace(**changes)


def _cc(**changes):
    return lambda cfg: cfg.replace(cc={**cfg.cc, **changes})


def _when(opcode, **fields):
    """tx / rx lens: on packets of `opcode`, set `fields` (values or functions of the View)."""
    def fn(ep, v: View):
        if v.opcode == opcode:
            v.set(**{k: (f(v) if callable(f) else f) for k, f in fields.items()})
    return fn


def _drop(pred):
    return lambda ep, v: False if pred(v) else None


def _nack_reason(frm, to):
    return lambda ep, v: v.set(nack_reason=to) if v.opcode == NACK and v["nack_reason"] == frm else None


# --- lenses with state ------------------------------------------------------------------------

def _no_backoff(cfg):
    return cfg.replace(retry_linear=min(7, cfg.retry_linear + cfg.retry_exp), retry_exp=0)


def _ignores_mpr_rx(ep, v):
    if v.opcode == SACK:  # only SETH carries an MPR (NETH has none)
        v.set(mpr=255)


def _ev_swap_tx(ep, v):
    v.set(ev=swap_ev(v["ev"], ep.inner.mode))


def _ev_swap_rx(ep, v):
    if v.opcode in (SACK, NACK):
        v.set(entropy=swap_ev(v["entropy"], ep.inner.mode))


def _reth_fixed(ep, v):
    if not v.is_data:
        return
    base = ep.scratch.setdefault("base", {})
    if v.opcode in (0xC6, 0xCA, 0xCB):
        base[v["msn"]] = v["va"]
    elif v["msn"] in base:
        v.set(va=base[v["msn"]])


def _every_only(ep, v):
    if v.opcode in LAST_OPS:
        v.set(opcode=LAST_OPS[v.opcode])


ECN_LATE_PS = 24_000_000  # 24 us: four times the cases' 6 us target delay (the delay average needs ~30 samples)


def _ecn_late_receive(ep, data, port, now):
    """ECN-marked SACKs (M = SKIP_ONCE) are timestamped 24 us late, so their RTT sample says the delay is high."""
    if opcode_of(data) == SACK:
        v = View(ep, data, port)
        if v.pkt is not None and v["m"] == 1:
            ep.altered += 1
            now += ECN_LATE_PS
    ep.inner.receive(data, port, now)


def _unmarked_late_receive(ep, data, port, now):
    """Unmarked SACKs are timestamped 24 us late: their delay is always above the target, so every
    increase is a fair increase."""
    if opcode_of(data) == SACK:
        v = View(ep, data, port)
        if v.pkt is not None and v["m"] == 0:
            ep.altered += 1
            now += ECN_LATE_PS
    ep.inner.receive(data, port, now)


def _cack_off_by_one(ep, v):
    if v.opcode == SACK:
        v.set(cack_psn=(v["cack_psn"] - 1) & 0xFFFFFF, ack_psn_offset=v["ack_psn_offset"] + 1)


def _bitmap_reversed(ep, v):
    if v.opcode == SACK:
        v.set(sack_bitmap=int(f"{v['sack_bitmap']:064b}"[::-1], 2))


def _single_plane(ep, now):
    return ep.inner.transmit(now, port_mask=1)


def _bad_ev(state):
    """Every third data packet re-stamped with an EV the QP holds in `state` (and sent on its port)."""
    def fn(ep, v):
        if not v.is_data:
            return
        n = ep.scratch["n"] = ep.scratch.get("n", 0) + 1
        bad = [e for e in ep.inner.ev_table() if e.state == state]
        if bad and n % 3 == 0:
            v.set(ev=bad[0].ev, port=bad[0].port - 1)
            v.port = bad[0].port
    return fn


def _sticky(ep, v):
    if v.is_data:
        first = {}
        for e in ep.inner.ev_table():
            first.setdefault(e.port, e.ev)
        v.set(ev=first[v.port])


def _seen_before(ep, v) -> bool:
    seen = ep.scratch.setdefault("psns", set())
    dup = v["psn"] in seen
    if int(v.pkt["trim"]) == 0:
        seen.add(v["psn"])
    return dup


def _dup_not_acked_rx(ep, v):
    if v.is_data:
        ep.scratch["mute"] = _seen_before(ep, v)


def _dup_not_acked_tx(ep, v):
    if v.opcode == SACK and ep.scratch.get("mute"):
        return False


def _dup_replaced(ep, v):
    if v.is_data and _seen_before(ep, v) and v["payload_len"]:
        where = region_of(ep, v["va"])
        if where is not None:
            buf, off = where
            buf[off:off + v["payload_len"]] = v.payload
            ep.altered += 1


def _no_rkey_check(ep, v):
    if v.is_data:
        keys = {mr.rkey for mr, *_ in ep.inner._regions.values()}
        if keys and v["rkey"] not in keys:
            v.set(rkey=next(iter(keys)))


def _in_order_only(ep, v):
    if not v.is_data or int(v.pkt["trim"]):
        return None
    nxt = ep.scratch.setdefault("next", ep.scratch.get("rq_psn", 0))
    d = (v["psn"] - nxt) & 0xFFFFFF
    if d == 0:
        ep.scratch["next"] = (nxt + 1) & 0xFFFFFF
    elif d < 1 << 23:
        return False  # ahead of the next expected PSN: a go-back-N receiver discards it
    return None


def _no_bounds_reg_mr(ep, length):
    return ep.inner.reg_mr(length, slack=1 << 16)


def _wimm_arrival_rx(ep, v):
    if v.opcode in IMM_OPS and not _seen_before(ep, v):
        q = ep.scratch.setdefault("recvs", [])
        if q:
            ep.scratch.setdefault("early", []).append(Completion("recv", q.pop(0), "SUCCESS", v["payload_len"],
                                                                 v["imm"]))
            ep.altered += 1


def _wimm_arrival_post_recv(ep, wr_id):
    ep.scratch.setdefault("recvs", []).append(wr_id)
    ep.inner.post_recv(wr_id)


def _wimm_arrival_poll(ep):
    real = [c for c in ep.inner.poll() if not (c.kind == "recv" and c.status == "SUCCESS")]
    early, ep.scratch["early"] = ep.scratch.get("early", []), []
    return early + real


def _auto_post_recv(ep, v):
    if v.opcode in IMM_OPS and not _seen_before(ep, v):
        posted = ep.scratch.get("posted", 0)
        used = ep.scratch["used"] = ep.scratch.get("used", 0) + 1
        if used > posted:
            ep.inner.post_recv(0xA070)
            ep.scratch["posted"] = posted + 1


def _count_post_recv(ep, wr_id):
    ep.scratch["posted"] = ep.scratch.get("posted", 0) + 1
    ep.inner.post_recv(wr_id)


def _early_post(ep, wr_id, data, *, remote_va, rkey, imm, now):
    ep.scratch.setdefault("wrs", []).append(wr_id)
    ep.inner.post_write(wr_id, data, remote_va=remote_va, rkey=rkey, imm=imm, now=now)


def _early_tx(ep, v):
    if v.opcode in (0xC8, 0xC9, 0xCA, 0xCB) and not v["rtx"]:
        wrs = ep.scratch.get("wrs", [])
        if wrs:
            ep.scratch.setdefault("done", []).append(Completion("send", wrs.pop(0), "SUCCESS", 0))


def _early_poll(ep):
    done = ep.scratch.setdefault("reported", set())
    fake, ep.scratch["done"] = ep.scratch.get("done", []), []
    done.update(c.wr_id for c in fake)
    return fake + [c for c in ep.inner.poll() if not (c.kind == "send" and c.wr_id in done)]


def _no_ev_events(ep):
    return [e for e in ep.inner.events() if e.kind != "EV_STATE"]


def _is_psu(v):
    return v.opcode == EP_REQ and v["ep_op"] == 0


def _is_nak(v):
    return (v.opcode == ACK and v["aeth_syndrome"] >> 5 == 3) or (v.opcode == NACK and v["nack_reason"] == UNEXP)


def _qp_row(ep):
    """The reference QP's core row, read only (a lens looks at state; it never changes it)."""
    return ep.inner.dev.T.qp[ep.inner.qp.index]


def _skip_twice_receive(ep, data, port, now):
    """Remember each SKIP_ONCE SACK (by the EV it reflects) so `_skip_twice_transmit` can feed it again."""
    if opcode_of(data) == SACK:
        v = View(ep, data, port)
        if v.pkt is not None and v["m"] == 1:
            ep.scratch.setdefault("again", {})[v["entropy"]] = (data, port)
    ep.inner.receive(data, port, now)


def _skip_twice_transmit(ep, now):
    """Once a skipped EV's skip was consumed by the rotation (SKIP -> GOOD), its SKIP_ONCE SACK is fed again:
    the EV sits out a second rotation."""
    out = ep.inner.transmit(now)
    again = ep.scratch.get("again")
    if again:
        states = {e.ev: e.state for e in ep.inner.ev_table()}
        for ev in [ev for ev in again if states.get(ev) == "GOOD"]:
            data, port = again.pop(ev)
            ep.altered += 1
            ep.inner.receive(data, port, now)
    return out


def _backup_lens(other_plane: bool):
    """Data on an EV that was not active when the QP first sent (a backup that replaced a retired EV) is
    re-stamped: onto an initially active usable EV of the same plane (`other_plane` False: no backup is
    ever used), or onto a backup of another plane, sent on that plane's port (the replacement came from the
    wrong plane)."""
    def fn(ep, v):
        if not v.is_data:
            return
        table = ep.inner.qp.ev_states()
        first = ep.scratch.setdefault("initial", {e["value"] for e in table if e["active"]})
        if v["ev"] in first:
            return
        plane = v.port
        if other_plane:
            cands = [e for e in table if e["port"] != plane and e["value"] not in first
                     and e["state"] in ("GOOD", "SKIP")]
        else:
            cands = [e for e in table if e["port"] == plane and e["value"] in first and e["state"] == "GOOD"]
        if cands:
            v.set(ev=cands[0]["value"], port=cands[0]["port"] - 1)
            v.port = cands[0]["port"]
    return fn


def _rev_answer_ignored(ep, v):
    """Drop the answer to the responder's own reverse-EV probe (the probe that is outstanding)."""
    if v.opcode == SACK and v["pr"]:
        q = _qp_row(ep)
        k = int(q["rev_probe_slot"])
        if k >= 0 and int(ep.inner.dev.T.ev[q["ev_row"], k]["ev"]) == v["entropy"]:
            return False
    return None


def _oow_nack_accepted(ep, v):
    """A NACK naming a PSN never sent is read as naming the oldest unacknowledged PSN."""
    if v.opcode == NACK:
        q = _qp_row(ep)
        if (int(q["sq_psn"]) - v["nack_psn"]) & 0xFFFFFF >= 1 << 23 or int(q["sq_psn"]) == v["nack_psn"]:
            v.set(nack_psn=int(q["una_psn"]))


def _remember_probe_id(ep, v):
    if v["ep_op"] == 1:
        ep.scratch["probe_id"] = v["req_id"]


def _any_probe_answer(ep, v):
    if v["ep_op"] == 1 and "probe_id" in ep.scratch:
        v.set(req_id=ep.scratch["probe_id"])


def _flip_icrc_transmit(ep, now):
    return [(port, data[:-4] + bytes(b ^ 0xFF for b in data[-4:])) for port, data in ep.inner.transmit(now)]


MUTANTS = [
    # --- wire -------------------------------------------------------------------------------
    Mutant("wrong-icrc", "every packet leaves with a wrong ICRC",
           hooks={"transmit": _flip_icrc_transmit}, trigger=_TX_ANY, collateral=("*",)),
    Mutant("no-icrc-check", "packets are accepted without checking their ICRC",
           config=lambda cfg: cfg.replace(options={**cfg.options, "verify_icrc": False}), trigger=_t(("rx", "bad"))),
    Mutant("reserved-bits", "the BTH reserved bit (byte 8, bit 6) is sent set", tx=lambda ep, v: v.set(bth_r=1)),
    Mutant("every-packet-only", "every packet of a message is sent as WRITE_ONLY (or ONLY_IMM)", tx=_every_only,
           tx_ops=DATA),
    Mutant("reth-va-fixed", "RETH carries the message's start address in every packet", tx=_reth_fixed, tx_ops=DATA,
           collateral=('controller.port-status-rx', 'requester.lasthop-no-penalty', 'requester.mpr-limit', 'requester.rtx-dscp', 'requester.rtx-flag', 'requester.segmentation', 'requester.selective-retransmit', 'requester.silent-loss-retires-ev', 'requester.skip-after-ecn', 'requester.trimmed-skips-ev',
                       'requester.always-skip-retires', 'requester.resource-nack',
                       'requester.nack-reason[no-bitmap]', 'requester.nack-reason[psn-oor-window]')),
    Mutant("no-tseth", "data packets and probes carry no TSETH (BTH ts = 0)", tx=lambda ep, v: v.set(ts=0, tx_timestamp=0),
           tx_ops=DATA | {PROBE}),
    Mutant("ev-halves-swapped", "the EV's halves are swapped on the wire (and back in SACK / NACK entropy)",
           tx=_ev_swap_tx, rx=_ev_swap_rx, rx_ops=frozenset({SACK, NACK}),
           collateral=('controller.denied-never-used', 'controller.ev-events', 'controller.ev-field-expansion', 'controller.event-mask', 'requester.lasthop-no-penalty', 'requester.probe-recovery', 'requester.silent-loss-retires-ev', 'requester.spray-ev-set', 'wire.srv6-carrier',
                       'requester.skip-after-ecn',
                       'controller.ev-probe-rtt', 'requester.backup-same-plane', 'requester.skip-one-rotation', 'responder.reverse-ev')),
    Mutant("srv6-carrier-reversed", "the uSIDs of the SRv6 carrier are written in reverse order",
           tx=lambda ep, v: _reverse_carrier(v) if ep.inner.mode == EvMode.SRV6 else None, tx_ops=DATA,
           requires=_t(("cfg", "srv6"))),
    # --- requester ------------------------------------------------------------------------------
    Mutant("wrong-mtu", "segments at 1 KiB less than the path MTU", config=lambda cfg: cfg.replace(
        mtu=cfg.mtu - 1024 if cfg.mtu > 1024 else cfg.mtu // 2), trigger=_TX_DATA,
           collateral=('controller.ev-events', 'controller.event-mask', 'wire.golden-sack', 'wire.opcode-sequence', 'wire.reth-every-packet')),
    Mutant("ignores-mpr", "ignores the MPR: local (set to 255) and the peer's (SACK mpr read as 255)",
           config=_cfg(mpr=255), rx=_ignores_mpr_rx, rx_ops=frozenset({SACK}), trigger=_TX_DATA),
    Mutant("single-plane", "sends everything on the first NIC port", hooks={"transmit": _single_plane},
           trigger=_TX_ANY,
           collateral=('controller.ev-field-expansion', 'controller.port-status-tx', 'requester.retry-exhausted', 'requester.spray-ev-set', 'wire.ev-encoding[stev]', 'wire.ev-encoding[udp]',
                       'controller.ev-probe-response', 'controller.ev-probe-rtt', 'requester.backup-same-plane',
                       'controller.ep-req-tc', 'controller.ep-rsp-timeout', 'controller.ep-adj-svc-time')),
    Mutant("sticky-ev", "stamps every data packet with the first EV of its plane (no spraying)", tx=_sticky,
           tx_ops=DATA,
           collateral=('controller.denied-never-used', 'controller.ev-events', 'controller.ev-field-expansion', 'controller.ev-state-query', 'controller.event-mask', 'requester.lasthop-no-penalty', 'requester.skip-after-ecn', 'requester.trimmed-skips-ev', 'wire.ev-encoding[stev]', 'wire.ev-encoding[udp]', 'wire.srv6-carrier',
                       # SACKs reflect an EV the PSN was not sent on: no RTT sample, so NSCC.OnACK stops early
                       'nscc.quadrant[ecn-high-delay]', 'nscc.quadrant[no-ecn-low-delay]', 'nscc.quick-adapt',
                       'requester.always-skip-retires',
                       'requester.backup-same-plane', 'requester.skip-one-rotation')),
    Mutant("rqmsn-equals-msn", "writes the MSN into the RQMSN field", tx=lambda ep, v: v.set(rqmsn=v["msn"]),
           tx_ops=DATA),
    Mutant("ignores-max-wimm", "ignores max_wimm (any number of WriteIMM outstanding)", config=_cfg(max_wimm=65535),
           trigger=_t(("tx", 0xC9), ("tx", 0xCB))),
    Mutant("early-completion", "completes a write when its last packet is sent, not when it is acknowledged",
           tx=_early_tx, tx_ops=LAST, hooks={"post_write": _early_post, "poll": _early_poll},
           collateral=('requester.*', 'controller.port-status-rx')),
    Mutant("no-rtx-flag", "retransmissions are sent with rtx = 0", tx=lambda ep, v: v.set(rtx=0) if v["rtx"] else None,
           tx_ops=DATA),
    Mutant("rtx-same-dscp", "retransmissions use the data DSCP",
           tx=lambda ep, v: v.set(dscp=ep.inner.dscp.data) if v["rtx"] else None, tx_ops=DATA),
    Mutant("ignores-ecn", "reads every SACK as M = NONE", rx=_when(SACK, m=0), rx_ops=frozenset({SACK})),
    Mutant("always-skip-as-skip-once", "reads SACK M = ALWAYS_SKIP as SKIP_ONCE",
           rx=_when(SACK, m=lambda v: 1 if v["m"] == 2 else v["m"]), rx_ops=frozenset({SACK})),
    Mutant("resource-nack-fatal", "treats NACK NO_PKT_BUFFER as UNEXP_EVENT (fatal)",
           rx=_nack_reason(0x07, UNEXP), rx_ops=frozenset({NACK})),
    Mutant("ecn-retires", "reads SACK M = SKIP_ONCE as ALWAYS_SKIP (an ECN mark retires the EV)",
           rx=_when(SACK, m=lambda v: 2 if v["m"] == 1 else v["m"]), rx_ops=frozenset({SACK}),
           collateral=("controller.good-event-after-marked-probe",)),  # a marked probe answer retires it again
    Mutant("skip-two-rotations", "an EV skipped after SACK M = SKIP_ONCE sits out two rotations, not one",
           hooks={"receive": _skip_twice_receive, "transmit": _skip_twice_transmit}, trigger=_t(("rx", SACK))),
    Mutant("backup-other-plane", "a retired EV is replaced by a backup EV of another plane",
           tx=_backup_lens(True), tx_ops=DATA),
    Mutant("no-backup", "a retired EV is not replaced: its plane sprays over the EVs it has left",
           tx=_backup_lens(False), tx_ops=DATA),
    Mutant("no-bitmap-fatal", "treats NACK NO_BITMAP as UNEXP_EVENT (fatal)",
           rx=_nack_reason(NO_BITMAP, UNEXP), rx_ops=frozenset({NACK})),
    Mutant("oor-nack-ignored", "ignores NACK PSN_OOR_WINDOW (the dropped packet waits for a timeout)",
           rx=_drop(lambda v: v["nack_reason"] == OOR), rx_ops=frozenset({NACK})),
    Mutant("unexp-event-ignored", "ignores NACK UNEXP_EVENT (the QP goes on after the peer's fatal error)",
           rx=_drop(lambda v: v["nack_reason"] == UNEXP), rx_ops=frozenset({NACK})),
    Mutant("accepts-oow-nack", "a NACK naming a PSN never sent is taken for the oldest unacknowledged PSN",
           rx=_oow_nack_accepted, rx_ops=frozenset({NACK})),
    Mutant("trimmed-as-lasthop", "treats NACK TRIMMED like TRIMMED_LASTHOP (no EV penalty)",
           rx=_nack_reason(TRIMMED, LASTHOP), rx_ops=frozenset({NACK})),
    Mutant("penalises-lasthop", "treats NACK TRIMMED_LASTHOP like TRIMMED (skips the EV)",
           rx=_nack_reason(LASTHOP, TRIMMED), rx_ops=frozenset({NACK})),
    Mutant("ignores-trimmed", "ignores trim NACKs (TRIMMED and TRIMMED_LASTHOP)",
           rx=_drop(lambda v: v["nack_reason"] in (TRIMMED, LASTHOP)), rx_ops=frozenset({NACK}),
           # the NSCC quadrant cases open headroom below MaxWnd with trims
           collateral=("nscc.quadrant[no-ecn-low-delay]", "nscc.quadrant[no-ecn-high-delay]")),
    Mutant("reuses-retired-ev", "keeps sending every third data packet on an ASSUMED_BAD EV",
           tx=_bad_ev("ASSUMED_BAD"), tx_ops=DATA,
           collateral=('controller.ev-events', 'controller.ev-state-query', 'controller.event-mask')),
    Mutant("no-probes", "never sends reliability / EV probes", tx=_drop(lambda v: True), tx_ops=frozenset({PROBE})),
    Mutant("no-backoff", "retries at a fixed interval only (retry_exp folded into retry_linear)", config=_no_backoff,
           trigger=_TX_RTX),
    Mutant("no-retry-limit", "retries forever (retry_exp = 25)", config=_cfg(retry_exp=25), trigger=_TX_RTX),
    Mutant("go-back-n", "ignores the SACK bitmap: only the cumulative ACK counts", rx=_when(SACK, sack_bitmap=0),
           rx_ops=frozenset({SACK}),
           collateral=('controller.ev-events', 'controller.event-mask')),
    Mutant("sack-bitmap-reversed", "reads the SACK bitmap with its bits in reverse order", rx=_bitmap_reversed,
           rx_ops=frozenset({SACK}),
           collateral=('controller.ev-events', 'controller.event-mask',
                       # spurious retransmissions on every SACK: 64 KiB writes never settle within the budget
                       'requester.backup-same-plane')),
    # --- NSCC -----------------------------------------------------------------------------------------
    Mutant("no-increase", "the window never grows (fi, fi_scale, eta = 0)",
           config=_cc(fi=0.0, fi_scale=0.0, eta=0.0, pi_gain=0.0), trigger=_FEEDBACK),
    Mutant("no-md", "no multiplicative decrease (gamma = 0)", config=_cc(gamma=0.0), trigger=_FEEDBACK),
    Mutant("md-on-any-ecn", "decreases on every ECN-marked SACK (takes its arrival time 24 us late, so its delay "
           "always looks high)",
           hooks={"receive": _ecn_late_receive}, trigger=_t(("rx", SACK))),
    Mutant("fair-only", "increases fairly below the target too (takes unmarked SACKs 24 us late)",
           hooks={"receive": _unmarked_late_receive}, trigger=_t(("rx", SACK)),
           collateral=("nscc.quick-adapt-gate",)),  # 24 us late is past qa_threshold too
    Mutant("proportional-only", "increases in proportion to the headroom above the target too (target_delay "
           "4 x its configured value)", config=lambda cfg: cfg.replace(cc={**cfg.cc, "target_delay": 4 * cfg.cc.get(
               "target_delay", 6000)}), trigger=_FEEDBACK,
           collateral=("nscc.quadrant[no-ecn-low-delay]", "nscc.quadrant[ecn-high-delay]", "nscc.quick-adapt")),
    Mutant("md-every-sack", "decreases on every marked high-delay SACK (base_rtt 1 ns: 'once per base RTT' "
           "never waits)", config=_cc(base_rtt=1, max_cwnd=300_000), trigger=_FEEDBACK,
           # every delay is then high, and the BDP-scaled increases vanish; its own max_cwnd (300 kB, so the
           # window can move at all) replaces the profile's, which nscc.max-cwnd and the one-packet window of
           # requester.skip-one-rotation rely on (the pruned matrix never runs max-cwnd: it has no feedback)
           collateral=("nscc.quadrant[ecn-low-delay]", "nscc.quadrant[no-ecn-low-delay]",
                       'requester.skip-one-rotation', 'nscc.max-cwnd')),
    Mutant("no-qa-gate", "QuickAdapt whatever was achieved (qa_gate 0: max_wnd >> 0)", config=_cc(qa_gate=0),
           trigger=_FEEDBACK),
    Mutant("no-quickadapt", "QuickAdapt disabled", config=_cc(disable_qa=1), trigger=_FEEDBACK),
    Mutant("ignores-rcv-pen", "ignores CC_STATE rcv_cwnd_pen", rx=_when(SACK, rcv_cwnd_pen=0), rx_ops=frozenset({SACK})),
    Mutant("ignores-cwnd", "ignores max_cwnd (a 1 GiB window)", config=_cc(max_cwnd=1 << 30), trigger=_FEEDBACK,
           # the window starts at MaxWnd (UE 1.0.3 Table 3-77): a 1 GiB first burst, and increases of
           # inc_bytes / cwnd that round to nothing
           collateral=("nscc.quadrant[no-ecn-low-delay]", "nscc.quick-adapt-gate", "controller.port-status-rx",
                       'requester.skip-one-rotation')),
    # --- responder ----------------------------------------------------------------------------------
    Mutant("no-ev-echo", "SACKs of data packets and NACKs carry entropy 0 instead of the reflected EV",
           tx=lambda ep, v: v.set(entropy=0) if v.opcode == NACK or not v["pr"] else None,
           tx_ops=frozenset({SACK, NACK})),
    Mutant("cack-off-by-one", "SACK cack_psn one behind (offsets adjusted)", tx=_cack_off_by_one,
           tx_ops=frozenset({SACK}),
           collateral=('wire.decoders-agree', 'wire.icrc-checked', 'wire.tseth-on-data')),
    Mutant("sack-bitmap-empty", "SACKs carry an empty bitmap", tx=_when(SACK, sack_bitmap=0), tx_ops=frozenset({SACK})),
    Mutant("no-ecn-echo", "SACK M is always NONE", tx=_when(SACK, m=0), tx_ops=frozenset({SACK})),
    Mutant("no-ts-echo", "SACKs reflect timestamp 0", tx=_when(SACK, tx_timestamp=0), tx_ops=frozenset({SACK})),
    Mutant("no-trim-nack", "trimmed packets are not NACKed", tx=_drop(lambda v: v["nack_reason"] in (TRIMMED, LASTHOP)),
           tx_ops=frozenset({NACK}),
           collateral=('wire.decoders-agree', 'wire.tseth-on-data')),
    Mutant("never-always-skip", "never answers ALWAYS_SKIP (SKIP_ONCE however long a path stays marked)",
           tx=_when(SACK, m=lambda v: 1 if v["m"] == 2 else v["m"]), tx_ops=frozenset({SACK})),
    Mutant("always-skip-first-mark", "answers ALWAYS_SKIP for every CE-marked packet, the first one included",
           tx=_when(SACK, m=lambda v: 2 if v["m"] == 1 else v["m"]), tx_ops=frozenset({SACK}),
           collateral=("responder.sack-m-field",)),
    Mutant("spurious-rcv-pen", "puts rcv_cwnd_pen = 64 in every SACK, with nothing waiting",
           tx=_when(SACK, rcv_cwnd_pen=64), tx_ops=frozenset({SACK})),
    Mutant("control-on-forward-ev", "sends SACKs and NACKs on the EV they reflect (the requester's forward EV)",
           tx=lambda ep, v: v.set(ev=v["entropy"]), tx_ops=frozenset({SACK, NACK})),
    Mutant("rev-probe-answer-ignored", "ignores the answers to its reverse-EV probes (the reverse EV never "
           "refreshes)", rx=_rev_answer_ignored, rx_ops=frozenset({SACK})),
    Mutant("lasthop-as-trimmed", "NACKs a last-hop trim as TRIMMED", tx=_nack_reason(LASTHOP, TRIMMED),
           tx_ops=frozenset({NACK})),
    Mutant("control-on-data-class", "SACKs and NACKs leave with the data DSCP",
           tx=lambda ep, v: v.set(dscp=ep.inner.dscp.data), tx_ops=frozenset({SACK, NACK})),
    Mutant("dup-not-acked", "a duplicate packet is not acknowledged", rx=_dup_not_acked_rx, rx_ops=DATA,
           tx=_dup_not_acked_tx, tx_ops=frozenset({SACK})),
    Mutant("dup-replaced", "a duplicate packet is placed again", rx=_dup_replaced, rx_ops=DATA, side_effects=True),
    Mutant("oor-silent", "PSNs beyond the window are dropped without a NACK",
           tx=_drop(lambda v: v["nack_reason"] == OOR), tx_ops=frozenset({NACK})),
    Mutant("no-bounds-check", "writes land outside the registered region (64 KiB registered on each side)",
           hooks={"reg_mr": _no_bounds_reg_mr}, trigger=_RX_DATA),
    Mutant("no-rkey-check", "any R_Key is accepted", rx=_no_rkey_check, rx_ops=DATA),
    Mutant("no-aeth-nak", "fatal errors are not NAKed", tx=_drop(_is_nak), tx_ops=frozenset({ACK, NACK})),
    Mutant("in-order-only", "packets ahead of the next expected PSN are discarded", rx=_in_order_only, rx_ops=DATA),
    Mutant("probes-ignored", "reliability probes are not answered", rx=_drop(lambda v: True),
           rx_ops=frozenset({PROBE})),
    Mutant("wimm-arrival-order", "WriteIMM completions are delivered as each message arrives",
           rx=_wimm_arrival_rx, rx_ops=IMM, hooks={"post_recv": _wimm_arrival_post_recv, "poll": _wimm_arrival_poll}),
    Mutant("auto-post-recv", "a WriteIMM with no receive posted consumes an invented one",
           rx=_auto_post_recv, rx_ops=IMM, hooks={"post_recv": _count_post_recv}),
    Mutant("ignores-max-wimm-dest", "ignores max_wimm_dest", config=_cfg(max_wimm_dest=65535),
           trigger=_t(("rx", 0xC9), ("rx", 0xCB))),
    # --- controller -----------------------------------------------------------------------------------
    Mutant("ev-fields-ignored", "EV profile fields ignored: raw EVs go on the wire unexpanded",
           config=lambda cfg: cfg.replace(ev_format=None, ev_fields=None) if cfg.ev_mode != "SRV6" else cfg,
           trigger=_t(("cfg", "ev_fields"))),
    Mutant("uses-denied-ev", "keeps sending every third data packet on a DENIED EV", tx=_bad_ev("DENIED"),
           tx_ops=DATA),
    Mutant("no-ev-events", "no EV events are reported", hooks={"events": _no_ev_events},
           trigger=_t(("event", "EV_STATE"))),
    Mutant("ignores-event-mask", "reports EV events the mask excludes",
           config=_cfg(ev_event_mask=("ASSUMED_BAD", "GOOD")), trigger=_t(("cfg", "event_mask"))),
    Mutant("ctl-state-ignored", "MODIFY_EV_STATE has no effect", hooks={"set_ev_state": lambda ep, ev, st, now: None},
           trigger=_t(("call", "set_ev_state"))),
    Mutant("ignores-min-active", "ignores ev_min_active", config=_cfg(ev_min_active=0),
           trigger=_t(("cfg", "ev_min_active"))),
    Mutant("ignores-port-status", "port status updates from peers are ignored", rx=_drop(_is_psu),
           rx_ops=frozenset({EP_REQ})),
    Mutant("no-port-status-tx", "peers are not told when a local port goes down or up", tx=_drop(_is_psu),
           tx_ops=frozenset({EP_REQ})),
    Mutant("ep-probe-ignored", "EV-probe endpoint requests are not answered",
           rx=_drop(lambda v: v["ep_op"] == 1), rx_ops=frozenset({EP_REQ})),
    Mutant("ep-probe-wrong-id", "EV-probe responses carry another req_id than the request's",
           tx=lambda ep, v: v.set(req_id=v["req_id"] ^ 1) if v["ep_op"] == 1 else None, tx_ops=frozenset({EP_RSP})),
    Mutant("ep-probe-wrong-ev", "EV probes leave with another EV than the one asked for",
           tx=lambda ep, v: v.set(ev=v["ev"] ^ 1) if v["ep_op"] == 1 else None, tx_ops=frozenset({EP_REQ})),
    Mutant("ep-rsp-any-id", "any EV-probe answer is taken for the last probe sent, whatever its req_id",
           tx=_remember_probe_id, tx_ops=frozenset({EP_REQ}), rx=_any_probe_answer, rx_ops=frozenset({EP_RSP})),
    Mutant("ignores-port-down", "a local port going down is not noticed",
           hooks={"set_port_state": lambda ep, port, up, now: None}, trigger=_t(("call", "set_port_state"))),
]


def _reverse_carrier(v: View) -> None:
    dst = bytes(v.net["outer_dst"])
    usids = [dst[k:k + 2] for k in range(4, 16, 2)]
    used = [u for u in usids if u != b"\0\0"]
    v.net["outer_dst"] = list(dst[:4] + b"".join(reversed(used)) + b"\0\0" * (6 - len(used)))
    v.changed = True


MUTANTS += CTL_MUTANTS  # the controller surface's (mutants/ctl.py)
BY_NAME = {m.name: m for m in MUTANTS}
