"""`QueuePair` (``mrc_qp``): the QP state machine with the attributes mrc.h requires at each step, the
header's masked modify and query, posting work requests, and destruction.

Two ways to move a QP: `QueuePair.modify` (a state name and attributes by keyword; `ALLOWED_ATTRS`) and
`QueuePair.modify_qp` (``mrc_modify_qp``: verbs attributes and mask, MRC attributes and mask), which
translates into the first. `QueuePair.query_qp` (``mrc_query_qp``) answers with the three structs of
the header; `QueuePair.query` is the project's full snapshot (every core attribute).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mrc.api import corefeatures
from mrc.api.types import (
    Access, CompletionQueue, IbvQpAttr, IbvQpAttrMask, QpAttr, QpAttrMask, QpCapFlags, QpInitAttr, SendOpcode,
    set_masked,
)
from mrc.core import dtypes as D, qp as core_qp, setup
from mrc.ctl.types import parse_vendor_cfg
from mrc.errors import EBUSY, EINVAL, ENOTSUP, ConfigError, UsageError
from mrc.wire.constants import ENDPOINT_QPN

# Attributes mrc.h requires when a QP enters each state (MRC_QP_* masks plus the verbs ones); an attribute
# given at an earlier step of the same RESET -> RTS walk counts (mrc_qp.md gives mpr and max_wimm at RTR).
REQUIRED_ATTRS = {
    "INIT": ("ev_profile_id", "cc_profile_id"),
    "RTR": ("dest_qp_num", "remote_address", "rq_psn", "mpr_dest", "max_wimm_dest"),
    "RTS": ("sq_psn", "mpr", "max_wimm", "retry_linear", "retry_exp", "timeout"),
}
# The project's own attributes (extensions, docs/protocol.md), by the state that takes them; the masked
# modify_qp passes them in vendor_cfg (b"key=value,...").
VENDOR_QP_ATTRS = {
    "RTR": {"ack_every_pkts", "ack_every_bytes", "ack_delay_ps", "always_skip_marks", "rcv_cwnd_pen"},
    "RTS": {"reorder_window_ps", "ev_probe_interval_ps", "probe_successes", "rev_probe_interval_ps", "ev_active_target",
            "ts_unit_ps", "ev_policy", "reps_buffer", "reps_reuse", "reps_per_psn", "reps_explore", "reps_freeze_ps",
            "rack", "rto_retire", "ev_first_probe_ps", "psu_floor"},
}
ALLOWED_ATTRS = {
    "INIT": {"ev_profile_id", "cc_profile_id", "qp_hint", "qp_access_flags", "pkey_index"},
    "RTR": {"dest_qp_num", "remote_address", "rq_psn", "mpr_dest", "max_wimm_dest", "mpr", "max_wimm", "cap",
            "dynamic_mpr", "trim_nack_dest", "path_mtu", "vendor_cfg"} | VENDOR_QP_ATTRS["RTR"],
    "RTS": {"sq_psn", "mpr", "max_wimm", "retry_linear", "retry_exp", "timeout", "mpr_dest", "vendor_cfg"}
    | VENDOR_QP_ATTRS["RTS"],
    "RESET": set(), "ERROR": set(),
}
# ibv attributes mrc.h does not support (use the MRC ones for timeout and retries)
IBV_REFUSED = {IbvQpAttrMask.PORT: "IBV_QP_PORT", IbvQpAttrMask.TIMEOUT: "IBV_QP_TIMEOUT (use MRC_QP_TIMEOUT)",
               IbvQpAttrMask.RETRY_CNT: "IBV_QP_RETRY_CNT (use MRC_QP_RETRY_CNT)", IbvQpAttrMask.RNR_RETRY: "IBV_QP_RNR_RETRY",
               IbvQpAttrMask.MIN_RNR_TIMER: "IBV_QP_MIN_RNR_TIMER", IbvQpAttrMask.MAX_QP_RD_ATOMIC: "IBV_QP_MAX_QP_RD_ATOMIC",
               IbvQpAttrMask.MAX_DEST_RD_ATOMIC: "IBV_QP_MAX_DEST_RD_ATOMIC", IbvQpAttrMask.ALT_PATH: "IBV_QP_ALT_PATH",
               IbvQpAttrMask.PATH_MIG_STATE: "IBV_QP_PATH_MIG_STATE", IbvQpAttrMask.QKEY: "IBV_QP_QKEY (no UD)",
               IbvQpAttrMask.EN_SQD_ASYNC_NOTIFY: "IBV_QP_EN_SQD_ASYNC_NOTIFY (no SQD state)",
               IbvQpAttrMask.CAP: "IBV_QP_CAP (set at creation)"}
RESERVED_QPNS = {0: "QP 0 (IB SMI)", 1: "QP 1 (IB GSI)", ENDPOINT_QPN: f"QP {ENDPOINT_QPN} (the MRC endpoint QP)"}
MRC_QP_QUERY = (QpAttrMask.MAX_WIMM | QpAttrMask.MAX_WIMM_DEST | QpAttrMask.MPR | QpAttrMask.MPR_DEST | QpAttrMask.TIMEOUT
                | QpAttrMask.EV_PROFILE_ID | QpAttrMask.CC_PROFILE_ID | QpAttrMask.HINT | QpAttrMask.RETRY_CNT
                | QpAttrMask.CAP | QpAttrMask.VENDOR_CFG)
IBV_QP_QUERY = (IbvQpAttrMask.STATE | IbvQpAttrMask.CUR_STATE | IbvQpAttrMask.DEST_QPN | IbvQpAttrMask.RQ_PSN
                | IbvQpAttrMask.SQ_PSN | IbvQpAttrMask.AV | IbvQpAttrMask.PATH_MTU | IbvQpAttrMask.ACCESS_FLAGS
                | IbvQpAttrMask.PKEY_INDEX | IbvQpAttrMask.CAP)


@dataclass
class QpCap:
    """``ibv_qp_cap``: how many send and receive work requests a QP may have outstanding (one scatter-gather
    element each: MRC writes take one SGE)."""

    max_send_wr: int = 64
    max_recv_wr: int = 64
    max_send_sge: int = 1
    max_recv_sge: int = 1
    max_inline_data: int = 0


@dataclass
class _Peer:
    dest_qpn: int = 0
    address: object = None


def is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


class QueuePair:
    """An MRC queue pair (``mrc_qp``). Create with `Device.create_qp` / `Context.create_qp`; connect with
    `connect` (or `modify` / `modify_qp` step by step); post RDMA Writes with `post_write` / `post_send`;
    completions arrive on `send_cq` (writes) and `recv_cq` (Write-with-Immediate receives). Destroy with
    `destroy` (or a ``with`` block)."""

    def __init__(self, device, index: int, send_cq: CompletionQueue, recv_cq: CompletionQueue, cap: QpCap,
                 init_attr: QpInitAttr | None = None):
        self.device = device
        self._index = index
        self._qpn = int(device.T.qp[index]["qpn"])
        self.send_cq = send_cq
        self.recv_cq = recv_cq
        self.cap = cap
        self.init_attr = init_attr
        self.qp_context = init_attr.qp_context if init_attr is not None else None
        self.peer = _Peer()
        self.ev_profile_id: int | None = None
        self.cc_profile_id: int | None = None
        self.qp_hint = None
        self.access = int(Access.LOCAL_WRITE | Access.REMOTE_WRITE)
        self.vendor_cfg = b""
        self.attrs: dict = {}

    def __repr__(self) -> str:
        if self.device._qps[self._index] is not self:
            return f"<QueuePair {self._qpn:#x} on {self.device.name!r}: destroyed>"
        q = self.device.T.qp[self.index]
        peer = "" if self.state in ("RESET", "INIT") else f" -> QP {self.peer.dest_qpn:#x} at {self.peer.address!r}"
        return (f"<QueuePair {self.qp_num:#x} on {self.device.name!r} {self.state}{peer}: "
                f"{int(q['wr_tail']) - int(q['wr_head'])} write(s) outstanding, {int(q['n_ev'])} EVs>")

    def __enter__(self) -> "QueuePair":
        return self

    def __exit__(self, *exc) -> None:
        if self.device._qps[self._index] is self:
            self.destroy()

    # -- identity and state ------------------------------------------------------
    @property
    def index(self) -> int:
        """The QP's row in the device's tables; any use of a destroyed handle raises `UsageError`."""
        if self.device._qps[self._index] is not self:
            raise EINVAL(f"QP {self._qpn} (QP number {self._qpn:#x}) was destroyed: this handle cannot be used")
        return self._index

    @property
    def qp_num(self) -> int:
        """The QP number (24 bits) a peer puts in BTH ``dqpn``."""
        return int(self.device.T.qp[self.index]["qpn"])

    def get_qpn(self) -> int:
        """``mrc_get_qpn``: the QP number."""
        return self.qp_num

    @property
    def state(self) -> str:
        """"RESET", "INIT", "RTR", "RTS" or "ERROR"."""
        return D.QP_STATE_NAMES[int(self.device.T.qp[self.index]["state"])]

    def destroy(self) -> None:
        """``mrc_destroy_qp``: destroy the QP in any state, as ``ibv_destroy_qp``: its work requests are
        discarded without completions (completions already queued stay on the CQs), its profiles and hint
        released. EBUSY while an async event about it is unacknowledged (`Device.ack_async_event`)."""
        self.device.destroy_qp(self)

    def connect(self, dest_qp_num: int, remote_address: object, *, ev_profile_id: int = 1, cc_profile_id: int = 1,
                rq_psn: int = 0, sq_psn: int = 0, now: int = 0, **attrs) -> None:
        """RESET -> INIT -> RTR -> RTS in one call, towards QP `dest_qp_num` at `remote_address`.

        The attributes mrc.h requires and you do not give take the core's documented defaults
        (`mrc.core.setup.QP_DEFAULTS`: MPR 8 capped at the device's ``max_mpr``, max WIMM 128,
        retries 7 + 7, timeout 8 = 262 us); any other INIT / RTR / RTS attribute may be given by
        name (`ALLOWED_ATTRS`). `sq_psn` is this side's first PSN and `rq_psn` the peer's (across
        processes, exchange `Device.initial_psn` values out of band). If a step is refused the QP
        goes back to RESET and the error names the attribute.
        """
        if self.state != "RESET":
            raise EINVAL(f"connect: QP {self.qp_num} is in {self.state}; connect starts from RESET")
        unknown = set(attrs) - ALLOWED_ATTRS["INIT"] - ALLOWED_ATTRS["RTR"] - ALLOWED_ATTRS["RTS"]
        if unknown:
            raise EINVAL(f"connect: attribute(s) {sorted(unknown)} are not QP attributes "
                         f"(RTR: {sorted(ALLOWED_ATTRS['RTR'])}; RTS: {sorted(ALLOWED_ATTRS['RTS'])})")
        mpr = min(setup.QP_DEFAULTS["mpr"], self.device.max_mpr)
        wimm = setup.QP_DEFAULTS["max_wimm"]
        init = {k: v for k, v in attrs.items() if k in ALLOWED_ATTRS["INIT"]}
        rtr = {"mpr_dest": mpr, "max_wimm_dest": wimm,
               **{k: v for k, v in attrs.items() if k in ALLOWED_ATTRS["RTR"] and k not in ("mpr", "max_wimm")}}
        rts = {"mpr": mpr, "max_wimm": wimm, **{k: setup.QP_DEFAULTS[k] for k in ("retry_linear", "retry_exp", "timeout")},
               **{k: v for k, v in attrs.items() if k in ALLOWED_ATTRS["RTS"] and k != "mpr_dest"}}
        try:
            self.modify("INIT", ev_profile_id=ev_profile_id, cc_profile_id=cc_profile_id, **init)
            self.modify("RTR", dest_qp_num=dest_qp_num, remote_address=remote_address, rq_psn=rq_psn, now=now, **rtr)
            self.modify("RTS", sq_psn=sq_psn, now=now, **rts)
        except UsageError as e:
            self.modify("RESET")
            raise type(e)(f"connect: {getattr(e, 'message', e)}") from None

    def modify(self, state: str, **attrs) -> None:
        """Move the QP to `state` ("INIT", "RTR", "RTS", "RESET", "ERROR") with its attributes by name
        (`ALLOWED_ATTRS`; ``now`` the time, ps). `cap` takes `QpCapFlags` bits; `vendor_cfg` the project's
        extension attributes as ``b"key=value,..."``; `qp_hint` a `QpHint` or None."""
        self._modify(state, attrs)

    def modify_qp(self, vattr: IbvQpAttr | None = None, vattr_mask: int = 0, mrc_attr: QpAttr | None = None,
                  mrc_attr_mask: int = 0, *, now: int = 0) -> None:
        """``mrc_modify_qp``: the verbs attributes `vattr` named by `vattr_mask` (`IbvQpAttrMask`: STATE,
        CUR_STATE (asserted), DEST_QPN, RQ_PSN, SQ_PSN, AV, PATH_MTU, ACCESS_FLAGS, PKEY_INDEX) and the MRC
        attributes `mrc_attr` named by `mrc_attr_mask` (`QpAttrMask`). The verbs attributes mrc.h refuses
        (PORT, TIMEOUT, RETRY_CNT, RNR_RETRY, ...) are EINVAL. Without STATE the QP stays in its state
        (RTS -> RTS changes attributes)."""
        vm = IbvQpAttrMask(_mask("modify_qp: vattr_mask", vattr_mask, IbvQpAttrMask))
        mm = QpAttrMask(_mask("modify_qp: mrc_attr_mask", mrc_attr_mask, QpAttrMask))
        for bit, name in IBV_REFUSED.items():
            if vm & bit:
                raise EINVAL(f"modify_qp: {name} is not supported by MRC QPs")
        if vm and not isinstance(vattr, IbvQpAttr):
            raise EINVAL(f"modify_qp: vattr = {vattr!r} must be an IbvQpAttr when vattr_mask is set")
        if mm and not isinstance(mrc_attr, QpAttr):
            raise EINVAL(f"modify_qp: mrc_attr = {mrc_attr!r} must be a QpAttr when mrc_attr_mask is set")
        state = self.state
        if vm & IbvQpAttrMask.STATE:
            state = vattr.qp_state
        if vm & IbvQpAttrMask.CUR_STATE and vattr.cur_qp_state != self.state:
            raise EINVAL(f"modify_qp: cur_qp_state = {vattr.cur_qp_state!r} but QP {self.qp_num} is {self.state}")
        attrs: dict = {"now": now}
        for bit, key in ((IbvQpAttrMask.DEST_QPN, "dest_qp_num"), (IbvQpAttrMask.RQ_PSN, "rq_psn"),
                         (IbvQpAttrMask.SQ_PSN, "sq_psn"), (IbvQpAttrMask.AV, "remote_address"),
                         (IbvQpAttrMask.PATH_MTU, "path_mtu"), (IbvQpAttrMask.ACCESS_FLAGS, "qp_access_flags"),
                         (IbvQpAttrMask.PKEY_INDEX, "pkey_index")):
            if vm & bit:
                attrs[key] = getattr(vattr, key)
        for bit, key in ((QpAttrMask.MAX_WIMM, "max_wimm"), (QpAttrMask.MAX_WIMM_DEST, "max_wimm_dest"),
                         (QpAttrMask.MPR, "mpr"), (QpAttrMask.MPR_DEST, "mpr_dest"), (QpAttrMask.TIMEOUT, "timeout"),
                         (QpAttrMask.EV_PROFILE_ID, "ev_profile_id"), (QpAttrMask.CC_PROFILE_ID, "cc_profile_id"),
                         (QpAttrMask.HINT, "qp_hint"), (QpAttrMask.CAP, "cap"), (QpAttrMask.VENDOR_CFG, "vendor_cfg")):
            if mm & bit:
                attrs[key] = getattr(mrc_attr, key)
        if mm & QpAttrMask.RETRY_CNT:
            attrs["retry_linear"], attrs["retry_exp"] = mrc_attr.retry_linear, mrc_attr.retry_exp
        self._modify(state, attrs)

    def query_qp(self, vattr_mask: int = IBV_QP_QUERY, mrc_attr_mask: int = MRC_QP_QUERY):
        """``mrc_query_qp`` (any state): ``(IbvQpAttr, QpAttr, QpInitAttr)``, the first two holding the fields
        their masks name (the others None). Attributes not configured yet are None; from RTR on, the MRC
        attributes are the values the QP runs with (defaults included)."""
        vm = IbvQpAttrMask(_mask("query_qp: vattr_mask", vattr_mask, IbvQpAttrMask))
        mm = QpAttrMask(_mask("query_qp: mrc_attr_mask", mrc_attr_mask, QpAttrMask))
        q = self.device.T.qp[self.index]
        running = self.state in ("RTR", "RTS") or (self.state == "ERROR" and self.peer.address is not None)
        va = IbvQpAttr()
        S = IbvQpAttrMask
        set_masked(va, vm, [(S.STATE | S.CUR_STATE, "qp_state", self.state), (S.CUR_STATE, "cur_qp_state", self.state),
                            (S.DEST_QPN, "dest_qp_num", int(q["dest_qpn"]) if running else None),
                            (S.RQ_PSN, "rq_psn", self.attrs.get("rq_psn")), (S.SQ_PSN, "sq_psn", self.attrs.get("sq_psn")),
                            (S.AV, "remote_address", self.peer.address),
                            (S.PATH_MTU, "path_mtu", int(q["mtu"]) if running else self.attrs.get("mtu", self.device.mtu)),
                            (S.ACCESS_FLAGS, "qp_access_flags", self.access), (S.PKEY_INDEX, "pkey_index", 0),
                            (S.CAP, "cap", self.cap)])
        ma = QpAttr()
        value = (lambda key: int(q[key])) if running else self.attrs.get  # noqa: E731  (configured so far)
        set_masked(ma, mm, [(QpAttrMask.MAX_WIMM, "max_wimm", value("max_wimm")),
                            (QpAttrMask.MAX_WIMM_DEST, "max_wimm_dest", value("max_wimm_dest")),
                            (QpAttrMask.MPR, "mpr", value("mpr")), (QpAttrMask.MPR_DEST, "mpr_dest", value("mpr_dest")),
                            (QpAttrMask.TIMEOUT, "timeout", value("timeout")),
                            (QpAttrMask.RETRY_CNT, "retry_linear", value("retry_linear")),
                            (QpAttrMask.RETRY_CNT, "retry_exp", value("retry_exp")),
                            (QpAttrMask.EV_PROFILE_ID, "ev_profile_id", self.ev_profile_id),
                            (QpAttrMask.CC_PROFILE_ID, "cc_profile_id", self.cc_profile_id),
                            (QpAttrMask.HINT, "qp_hint", self.qp_hint), (QpAttrMask.CAP, "cap", int(self._cap_bits())),
                            (QpAttrMask.VENDOR_CFG, "vendor_cfg", self.vendor_cfg)])
        init = self.init_attr or QpInitAttr(send_cq=self.send_cq, recv_cq=self.recv_cq, cap=self.cap)
        return va, ma, init

    def _cap_bits(self) -> QpCapFlags:
        cfg = {**setup.QP_DEFAULTS, **self.attrs}
        bits = QpCapFlags(0)
        if not cfg.get("trim_nack_dest", 1):
            bits |= QpCapFlags.TRIM_NACK_DEST_UNSUPPORTED
        if cfg.get("dynamic_mpr", 0):
            bits |= QpCapFlags.DYNAMIC_MPR
        if corefeatures.svc_time() and not cfg.get("svc_time_peer", 1):
            bits |= QpCapFlags.SVC_TIME_DEST_UNSUPPORTED
        return bits

    def query(self) -> dict:
        """The QP as the core runs it (ours, beyond ``mrc_query_qp``): state, QP numbers, profile ids, every core
        attribute, and cwnd (bytes)."""
        q = self.device.T.qp[self.index]
        out = {"state": self.state, "qp_num": self.qp_num, "dest_qp_num": int(q["dest_qpn"]),
               "ev_profile_id": self.ev_profile_id, "cc_profile_id": self.cc_profile_id}
        out.update({k: int(q[k]) for k in setup.QP_BOUNDS})
        out["cwnd"] = float(q["cwnd"])
        return out

    def statistics(self) -> dict:
        """Counters (packets, retransmissions, spurious ones, losses, SACKs, ...) as a dict."""
        q = self.device.T.qp[self.index]
        names = ["tx_pkts", "tx_bytes", "rtx_pkts", "rtx_spurious", "rtx_timeouts", "sacks_rx", "nacks_rx", "trims_rx",
                 "ecn_sacks_rx", "losses", "probes_tx", "rx_pkts", "rx_bytes", "rx_dup", "rx_trimmed", "rx_oor",
                 "rx_dropped", "rx_oow", "sacks_tx", "nacks_tx", "ev_floor_hits", "ev_skips", "inflight"]
        return {n: int(q[n]) for n in names} | {"cwnd": float(q["cwnd"])}

    def ev_states(self) -> list[dict]:
        """The QP's EV set, one row per slot: ``ev`` (the `mrc.ctl.CtlEv` its profile names it by), ``value`` (the
        32-bit EV its packets carry), ``port`` (1-based), ``state``, ``active``, counters."""
        T = self.device.T
        q = T.qp[self.index]
        rows = T.ev[q["ev_row"], : q["n_ev"]]
        names = self.device.ctl._slot_evs(self)
        return [{"ev": names[k] if k < len(names) else None, "value": int(r["ev"]), "port": int(r["plane"]) + 1,
                 "state": D.EV_STATE_NAMES[int(r["state"])], "active": bool(r["active"]), "tx_pkts": int(r["tx_pkts"]),
                 "losses": int(r["losses"]), "ecn_marks": int(r["ecn_marks"]), "trims": int(r["trims"])}
                for k, r in enumerate(rows)]

    # -- the state machine ------------------------------------------------------------------
    def _modify(self, state: str, attrs: dict) -> None:
        """``mrc_modify_qp``: every attribute is checked before the QP changes."""
        dev = self.device
        T = dev.T
        names = list(D.QP_STATE_NAMES)
        if state == "ERR":
            state = "ERROR"
        if state not in names:
            raise EINVAL(f"modify_qp: unknown state {state!r} (one of {names})")
        cur = int(T.qp[self.index]["state"])
        tgt = names.index(state)
        if not core_qp.QP_FSM[cur, tgt]:  # the table `mrc.core.qp.modify` checks, asked before any attribute is
            self._refused(cur, tgt)
        attrs = dict(attrs)
        now = dev._check_now("modify_qp", attrs.pop("now", 0))
        allowed = ALLOWED_ATTRS[state]
        unknown = set(attrs) - allowed
        if unknown:
            raise EINVAL(f"modify_qp to {state}: attribute(s) {sorted(unknown)} not allowed (allowed: {sorted(allowed)})")
        attrs = self._expand_attrs(state, attrs)
        if cur != tgt:
            have = set(attrs) | (set(self.attrs) if state == "RTS" else set())
            missing = [k for k in REQUIRED_ATTRS.get(state, ()) if k not in have]
            if missing:
                raise EINVAL(f"modify_qp {names[cur]} -> {state}: missing {missing} "
                             f"(mrc.h requires {list(REQUIRED_ATTRS[state])})")
        for key, value in attrs.items():
            self._check_attr(state, key, value)
        if state == "RESET":
            dev.ctl._unbind_qp(self)
            self._move(tgt, core_qp.qp_attr(rng=dev._ids.stream_seed(self.qp_num)), now)
            self.peer, self.attrs, self.ev_profile_id, self.cc_profile_id, self.qp_hint = _Peer(), {}, None, None, None
            self.vendor_cfg = b""
            return
        if state == "ERROR":
            self._move(tgt, core_qp.qp_attr(), now)
            dev._drain()
            return
        if state == "INIT":
            ev_id = attrs.get("ev_profile_id", self.ev_profile_id)
            cc_id = attrs.get("cc_profile_id", self.cc_profile_id)
            dev.ctl._bind_qp(self, ev_id, cc_id)
            self.ev_profile_id, self.cc_profile_id = ev_id, cc_id
            if "qp_hint" in attrs:
                self.qp_hint = attrs["qp_hint"]
            if "qp_access_flags" in attrs:
                self.access = int(attrs["qp_access_flags"])
            self._move(tgt, core_qp.qp_attr(), now)
            return
        merged = {**self.attrs, **{k: v for k, v in attrs.items() if k != "vendor_cfg"}}
        if "vendor_cfg" in attrs:
            self.vendor_cfg = attrs["vendor_cfg"]
        if state == "RTR":
            self._configure(merged)
            self.peer = _Peer(dest_qpn=int(attrs["dest_qp_num"]), address=attrs["remote_address"])
            self._move(tgt, core_qp.qp_attr(rq_psn=attrs["rq_psn"], dest_qpn=self.peer.dest_qpn,
                                            rcv_cwnd_pen=int(merged.get("rcv_cwnd_pen", 0)),
                                            local_ports=dev.ctl.local_ports), now)
        else:  # RTS
            if cur == D.QPS_RTS and "sq_psn" in attrs:
                raise EINVAL("modify_qp RTS -> RTS: sq_psn cannot change")
            if "mpr_dest" in attrs and not (cur == D.QPS_RTS and merged.get("dynamic_mpr")):
                raise EINVAL("modify_qp to RTS: mpr_dest is set at RTR; it changes in RTS only with dynamic MPR "
                             "(cap MRC_QP_CAP_DYNAMIC_MPR)")
            if cur == D.QPS_RTS and ({"mpr", "mpr_dest"} & set(attrs)) and merged.get("dynamic_mpr"):
                moved = {k: int(attrs[k]) for k in ("mpr", "mpr_dest") if k in attrs}
                try:
                    corefeatures.modify_mpr(T, self.index, moved.get("mpr"), moved.get("mpr_dest"))
                except ConfigError as e:
                    raise EINVAL(f"modify_qp RTS -> RTS: {e.key} = {e.value!r}: {e.problem}") from None
                merged = {**merged, **moved}
                attrs = {k: v for k, v in attrs.items() if k not in moved}
            self._configure(merged)
            self._move(tgt, core_qp.qp_attr(sq_psn=merged["sq_psn"] if cur == D.QPS_RTR else 0), now)
        self.attrs = merged

    def _move(self, target: int, attrs, now: int) -> None:
        """`mrc.core.qp.modify`: the core checks the move and applies its effects (the attributes are written)."""
        if core_qp.modify(self.device.T, self.index, target, attrs, now) == core_qp.REFUSED:
            self._refused(int(self.device.T.qp[self.index]["state"]), target)

    def _refused(self, cur: int, target: int):
        names = list(D.QP_STATE_NAMES)
        raise EINVAL(f"modify_qp: QP {self.qp_num} cannot go from {names[cur]} to {names[target]} "
                     f"(RESET -> INIT -> RTR -> RTS; RESET and ERROR from any state)")

    def _expand_attrs(self, state: str, attrs: dict) -> dict:
        """The header's composite attributes as the core's: ``cap`` bits, ``vendor_cfg`` items, ``path_mtu``,
        ``ev_policy`` names."""
        out = dict(attrs)
        if "cap" in out:
            cap = out.pop("cap")
            if not is_int(cap) or cap < 0 or int(cap) & ~int(sum(QpCapFlags)):
                raise EINVAL(f"modify_qp to {state}: cap = {cap!r} must be QpCapFlags bits")
            cap = QpCapFlags(int(cap))
            out.setdefault("trim_nack_dest", 0 if cap & QpCapFlags.TRIM_NACK_DEST_UNSUPPORTED else 1)
            if cap & QpCapFlags.DYNAMIC_MPR:
                out.setdefault("dynamic_mpr", 1)
            if cap & QpCapFlags.SVC_TIME_DEST_UNSUPPORTED and corefeatures.svc_time():
                out["svc_time_peer"] = 0
        if "dynamic_mpr" in out and out["dynamic_mpr"] and not corefeatures.dynamic_mpr():
            raise ENOTSUP(f"modify_qp to {state}: dynamic MPR (MRC_QP_CAP_DYNAMIC_MPR) is not supported by this "
                          f"device (DeviceAttr.cap lacks MRC_DEVICE_CAP_DYNAMIC_MPR)")
        if "dynamic_mpr" in out and not corefeatures.dynamic_mpr():
            out.pop("dynamic_mpr")  # 0: nothing to turn off
        if "vendor_cfg" in out:
            known = {k: (str if k == "ev_policy" else int) for k in VENDOR_QP_ATTRS.get(state, ())}
            extra = parse_vendor_cfg(f"modify_qp to {state}", out["vendor_cfg"], known)
            out["vendor_cfg"] = bytes(out["vendor_cfg"] or b"")
            for k, v in extra.items():
                out.setdefault(k, v)
        if "path_mtu" in out:
            mtu = out.pop("path_mtu")
            if not is_int(mtu) or not 256 <= mtu <= self.device.mtu:
                raise EINVAL(f"modify_qp to {state}: path_mtu = {mtu!r} must be an integer in [256, {self.device.mtu}] "
                             f"(the device's MTU)")
            out["mtu"] = int(mtu)
        if "ev_policy" in out:
            try:
                out["ev_policy"] = setup.ev_policy_code(out["ev_policy"])
            except ConfigError as e:
                raise EINVAL(f"modify_qp to {state}: ev_policy = {e.value!r}: {e.problem}") from None
        if "qp_hint" in out and out["qp_hint"] is not None:
            hint = out["qp_hint"]
            if not hasattr(hint, "_check_use") or hint.device is not self.device:
                raise EINVAL(f"modify_qp to {state}: qp_hint = {hint!r} is not a QpHint of this device")
            hint._check_use()
        if "qp_access_flags" in out:
            acc = out["qp_access_flags"]
            if not is_int(acc) or acc < 0 or int(acc) & ~int(Access.LOCAL_WRITE | Access.REMOTE_WRITE):
                raise EINVAL(f"modify_qp to {state}: qp_access_flags = {acc!r}: LOCAL_WRITE and REMOTE_WRITE only")
            if not int(acc) & Access.REMOTE_WRITE:
                raise ENOTSUP(f"modify_qp to {state}: qp_access_flags without REMOTE_WRITE: an MRC responder takes "
                              f"RDMA Writes (the memory region's access decides)")
        if "pkey_index" in out and out.pop("pkey_index") != 0:
            raise EINVAL(f"modify_qp to {state}: pkey_index must be 0 (RoCEv2: one partition)")
        return out

    def _check_attr(self, state: str, key: str, value) -> None:
        bounds = dict(setup.QP_BOUNDS)
        mpr_hi = self.device.max_mpr
        bounds.update(mpr=(1, mpr_hi), mpr_dest=(1, mpr_hi), rq_psn=(0, D.PSN_MASK), sq_psn=(0, D.PSN_MASK),
                      dest_qp_num=(0, 0xFFFFFF), rcv_cwnd_pen=(0, 127), ev_profile_id=(0, (1 << 64) - 1),
                      cc_profile_id=(0, (1 << 64) - 1))
        if key in bounds:
            lo, hi = bounds[key]
            if not is_int(value) or not lo <= value <= hi:
                raise EINVAL(f"modify_qp to {state}: {key} = {value!r} must be an integer in [{lo}, {hi}]")
        if key == "dest_qp_num" and int(value) in RESERVED_QPNS:
            raise EINVAL(f"modify_qp to {state}: dest_qp_num = {value!r} is {RESERVED_QPNS[int(value)]}, not a peer's QP")

    def _configure(self, attrs: dict) -> None:
        dev = self.device
        cfg = {k: int(v) for k, v in attrs.items() if k in setup.QP_DEFAULTS}
        prof = dev.ctl._ev_profile(self.ev_profile_id)
        n_ev = int(dev.T.qp[self.index]["n_ev"])
        cc = dev.T.cc[dev.ctl._cc_row(self.cc_profile_id)]
        cfg.setdefault("mtu", dev.mtu)
        for key in ("mpr", "mpr_dest"):  # the default MPR, capped at what this device's PSN tables hold
            cfg.setdefault(key, min(setup.QP_DEFAULTS[key], dev.max_mpr))
        cfg.setdefault("ev_active_target", min(max(dev.ports, n_ev // 2), n_ev))
        cfg.setdefault("ev_min_active", min(prof.min_active or 0, n_ev))
        cfg.setdefault("ev_event_mask", prof.event_mask_bits)
        if self.qp_hint is not None:
            for k, v in self.qp_hint._core_attrs().items():
                cfg.setdefault(k, v)
        try:
            setup.configure_qp(dev.T, self.index, n_ev, int(cc["base_rtt"]), **cfg)
        except ConfigError as e:
            raise EINVAL(f"modify_qp: {e.key} = {e.value!r}: {e.problem}") from None

    # -- work requests ---------------------------------------------------------------
    def post_send(self, opcode: SendOpcode | str, wr_id: int, sge: tuple[int, int, int], remote_addr: int = 0,
                  rkey: int = 0, imm_data: int | None = None, now: int = 0) -> None:
        """``mrc_post_send``: RDMA_WRITE and RDMA_WRITE_WITH_IMM only (one work request; a refused one raises,
        naming what was wrong, as ``bad_wr`` would point at it)."""
        try:
            op = SendOpcode(opcode) if not isinstance(opcode, SendOpcode) else opcode
        except ValueError:
            raise EINVAL(f"post_send: unknown opcode {opcode!r} (one of {[o.value for o in SendOpcode]})") from None
        if op not in (SendOpcode.RDMA_WRITE, SendOpcode.RDMA_WRITE_WITH_IMM):
            raise EINVAL(f"post_send: opcode {op.value} is not permitted by MRC (only RDMA_WRITE and RDMA_WRITE_WITH_IMM)")
        if op is SendOpcode.RDMA_WRITE_WITH_IMM and imm_data is None:
            raise EINVAL("post_send: RDMA_WRITE_WITH_IMM needs imm_data")
        if op is SendOpcode.RDMA_WRITE and imm_data is not None:
            raise EINVAL("post_send: imm_data given for RDMA_WRITE (use RDMA_WRITE_WITH_IMM)")
        self.post_write(wr_id, sge, remote_addr=remote_addr, rkey=rkey, imm_data=imm_data, now=now)

    def post_write(self, wr_id: int, sge: tuple[int, int, int], *, remote_addr: int, rkey: int,
                   imm_data: int | None = None, now: int = 0) -> None:
        """Post an RDMA Write (or Write-with-Immediate when `imm_data` is given) of the bytes of `sge`."""
        dev = self.device
        if self.state != "RTS":
            raise EINVAL(f"post_write: QP {self.qp_num} is in {self.state}, writes need RTS")
        now = dev._check_now("post_write", now)
        if not (isinstance(sge, tuple) and len(sge) == 3 and all(is_int(x) for x in sge)):
            raise EINVAL(f"post_write: sge {sge!r} must be an (addr, length, lkey) tuple of integers")
        addr, length, lkey = (int(x) for x in sge)
        mr = dev._mr_by_lkey(lkey)
        if mr is None:
            raise EINVAL(f"post_write: lkey {lkey:#x} is not a registered region")
        if length < 0 or addr < mr.addr or addr + length > mr.addr + mr.length:
            raise EINVAL(f"post_write: sge [{addr:#x}, +{length}) is outside region lkey {lkey:#x}")
        if length >= 1 << 31:
            raise EINVAL(f"post_write: length {length} exceeds 2^31 - 1 bytes")
        for name, value, bits in (("wr_id", wr_id, 64), ("remote_addr", remote_addr, 64), ("rkey", rkey, 32)):
            if not is_int(value) or not 0 <= value < 1 << bits:
                raise EINVAL(f"post_write: {name} {value!r} is not a {bits}-bit value")
        if imm_data is not None and (not is_int(imm_data) or not 0 <= imm_data < 1 << 32):
            raise EINVAL(f"post_write: imm_data {imm_data!r} is not a 32-bit value")
        q = dev.T.qp[self.index]
        if int(q["wr_tail"]) - int(q["wr_head"]) >= self.cap.max_send_wr:
            raise EINVAL(f"post_write: send queue of QP {self.qp_num} is full ({self.cap.max_send_wr} WRs outstanding)")
        op = D.WR_WRITE if imm_data is None else D.WR_WRITE_IMM
        rc = core_qp.post_write(dev.T, self.index, wr_id, op, lkey, addr, remote_addr, rkey, length, imm_data or 0, now)
        if rc != 0:
            raise EINVAL(f"post_write: send queue of QP {self.qp_num} is full ({dev.T.wr.shape[1]} WRs)")

    def post_recv(self, wr_id: int) -> None:
        """``mrc_post_recv``: a receive consumed by an incoming Write-with-Immediate (no RNR in MRC)."""
        if self.state not in ("INIT", "RTR", "RTS"):
            raise EINVAL(f"post_recv: QP {self.qp_num} is in {self.state}, receives need INIT, RTR or RTS")
        if not is_int(wr_id) or not 0 <= wr_id < 1 << 64:
            raise EINVAL(f"post_recv: wr_id {wr_id!r} is not a 64-bit value")
        q = self.device.T.qp[self.index]
        full = int(q["rq_tail"]) - int(q["rq_head"]) >= self.cap.max_recv_wr
        if full or core_qp.post_recv(self.device.T, self.index, wr_id) != 0:
            raise EINVAL(f"post_recv: receive queue of QP {self.qp_num} is full "
                         f"({self.cap.max_recv_wr} receives outstanding)")


def _mask(key: str, value, cls) -> int:
    if not is_int(value) or value < 0:
        raise EINVAL(f"{key} = {value!r} must be a non-negative integer ({cls.__name__} bits)")
    unknown = int(value) & ~int(sum(cls))
    if unknown:
        raise EINVAL(f"{key} has bits {unknown:#x} that are not {cls.__name__}")
    return int(value)


def check_destroy(qp: QueuePair) -> None:
    """EBUSY when an async event about `qp` is unacknowledged (``ibv_destroy_qp`` waits for them)."""
    if any(e.qp is qp for e in qp.device._unacked_async()):
        raise EBUSY(f"destroy_qp: an async event of QP {qp._qpn:#x} is not acknowledged (ack_async_event)")
