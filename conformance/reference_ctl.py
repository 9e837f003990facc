"""The reference adapter's controller surface (feature ``ctl``): `mrc.ctl` behind `Endpoint.ctl`.

Each call of `CTL_CALLS` (`mrc.conformance.adapter`) is translated into the header-shaped call of
`mrc.ctl.Controller` on the endpoint's device: the attribute dicts become the header's attr structs with
the mask of the keys given, EVs ``[value, port]`` become `CtlEv`, and an errno-named refusal
(`mrc.errors.ApiError`) becomes the answer's ``errno``. Nothing here decides protocol behaviour.
"""
from __future__ import annotations

from mrc.api import QpCap
from mrc.ctl import (
    CC_NS_KEYS, CcProfileAttr, CcProfileAttrMask, CtlAttrOpt, CtlEv, EpRequest, EvField, EvFieldsOp, EvFieldsOpArgs, EvFmtMode,
    EvOp, EvOpArgs, EvOpEntry, EvOpFlags, EvProfileAttr, EvProfileAttrMask, EvState, PortAdminState, PortAttr,
    ProfileState,
)
from mrc.ctl.types import EV_UNPOPULATED
from mrc.errors import ApiError, UsageError

EV_ATTRS = {"profile_state": EvProfileAttrMask.STATE, "cur_profile_state": EvProfileAttrMask.CUR_STATE,
            "ev_mode": EvProfileAttrMask.MODE, "ev_fmt_profile_id": EvProfileAttrMask.FMT_ID,
            "ev_count": EvProfileAttrMask.COUNT, "ev_min_active": EvProfileAttrMask.MIN_ACTIVE,
            "ev_event_mask": EvProfileAttrMask.EVENT_MASK, "ev_op": EvProfileAttrMask.EV_OP,
            "ev_fields_op": EvProfileAttrMask.EV_FIELDS_OP}
CC_ATTRS = {"profile_state": CcProfileAttrMask.STATE, "cur_profile_state": CcProfileAttrMask.CUR_STATE,
            "algorithm": CcProfileAttrMask.ALGORITHM, "cc_config": CcProfileAttrMask.CONFIG}


class ReferenceCtl:
    """Mixin of `ReferenceEndpoint` (needs ``dev``, ``cfg``, ``_peer``)."""

    def _ctl_init(self) -> None:
        self._ctl_cqs: list = []
        self._ctl_batches: list = []
        self._ctl_qps: dict = {}

    # -- the one entry point -----------------------------------------------------------------
    def ctl(self, call: str, args: dict | None = None, now: int = 0) -> dict:
        fn = getattr(self, f"_ctl_{call}", None)
        if fn is None or call == "init":
            raise UsageError(f"ctl: unknown call {call!r}")
        try:
            return {"errno": None, **(fn(dict(args or {}), now) or {})}
        except ApiError as e:
            return {"errno": e.errno_name, "error": str(e), "entry": getattr(e, "entry", None),
                    "required": getattr(e, "required", None)}

    # -- EVs as the adapter names them ---------------------------------------------------------
    def _bits(self) -> int:
        return 16 if self.cfg.ev_mode == "UDP" else 32

    def _ev(self, x) -> CtlEv:
        if x is None:
            return EV_UNPOPULATED
        value, port = x
        return CtlEv.from_int(int(value), int(port), self._bits())

    def _ev_out(self, ev: CtlEv):
        return None if ev.unpopulated else [ev.to_int(self._bits()), ev.port]

    # -- device and ports ------------------------------------------------------------------------
    def _ctl_query_device(self, a, now):
        d = self.dev.ctl.query_device()
        return {"ev_count_align": d.ev.ev_count_align, "ev_max_count_profile": d.ev.ev_max_count_profile,
                "ev_free_count": d.ev.ev_free_count, "ev_max_width": d.ev.ev_max_width,
                "phy_port_mask": d.phy_port_mask, "opt_attr": [m.name for m in CtlAttrOpt if d.opt_attr & m],
                "algorithms": list(d.cc.algorithms)}

    def _ctl_modify_port(self, a, now):
        admin = PortAdminState[str(a["port_admin_state"])]
        self.dev.ctl.modify_port(int(a["port"]), PortAttr(admin), now=now)

    def _ctl_query_port(self, a, now):
        port = int(a["port"])
        return {"port_admin_state": self.dev.ctl.query_port(port).port_admin_state.name,
                "state": self.dev.query_port(port)["state"]}

    # -- profiles ----------------------------------------------------------------------------------
    def _ev_attr(self, a: dict) -> tuple[EvProfileAttr, int]:
        attr, mask = EvProfileAttr(), 0
        for key, bit in EV_ATTRS.items():
            if key not in a:
                continue
            mask |= bit
            v = a[key]
            if key == "ev_event_mask":
                v = sum(int(EvState[s]) for s in v)
            elif key == "ev_op":
                v = EvOpArgs(EvOp[v["op"]], [self._entry(e) for e in v.get("entries", [])], v.get("entry_count"))
            elif key == "ev_fields_op":
                v = EvFieldsOpArgs(EvFieldsOp[v["op"]], [EvField(*f) for f in v.get("fields", [])])
            setattr(attr, key, v)
        return attr, mask

    def _entry(self, e: dict) -> EvOpEntry:
        state = e.get("state")
        return EvOpEntry(self._ev(e.get("ev")), None if "ev_new" not in e else self._ev(e["ev_new"]),
                         None if state is None else EvState[state], int(EvOpFlags.ALL_COPIES) if e.get("all_copies") else 0)

    def _entries_out(self, args: EvOpArgs | None) -> list:
        if args is None:
            return []
        return [{"ev": self._ev_out(e.ev), "state": None if e.state is None else EvState(e.state).name}
                for e in args.entries]

    def _ctl_modify_ev_fmt_profile(self, a, now):
        self.dev.ctl.modify_ev_fmt_profile(int(a["profile_id"]), **{k: a[k] for k in ("state", "mode", "fields")
                                                                    if k in a})

    def _ctl_modify_ev_profile(self, a, now):
        attr, mask = self._ev_attr(a)
        self.dev.ctl.modify_ev_profile(int(a["profile_id"]), attr, mask, now=now)
        return {"entries": self._entries_out(attr.ev_op)}

    def _ctl_query_ev_profile(self, a, now):
        attr, mask = self._ev_attr(a)
        mask |= (EvProfileAttrMask.STATE | EvProfileAttrMask.MODE | EvProfileAttrMask.COUNT
                 | EvProfileAttrMask.MIN_ACTIVE | EvProfileAttrMask.EVENT_MASK)
        out = self.dev.ctl.query_ev_profile(int(a["profile_id"]), mask, attr)
        return {"profile_state": ProfileState(out.profile_state).name,
                "ev_mode": None if out.ev_mode is None else out.ev_mode.name, "ev_count": out.ev_count,
                "ev_min_active": out.ev_min_active,
                "ev_event_mask": [s.name for s in (EvState.GOOD, EvState.ASSUMED_BAD, EvState.DENIED)
                                  if (out.ev_event_mask or 0) & int(s)],
                "entries": self._entries_out(out.ev_op), "entry_count": None if out.ev_op is None else out.ev_op.entry_count}

    def _ctl_ev_op(self, a, now):
        return self._ctl_modify_ev_profile({"profile_id": a["profile_id"], "ev_op": a}, now)

    def _ctl_modify_cc_profile(self, a, now):
        attr, mask = CcProfileAttr(), 0
        for key, bit in CC_ATTRS.items():
            if key in a:
                mask |= bit
                setattr(attr, key, a[key])
        if isinstance(attr.cc_config, dict):  # the C struct's names (ns) -> the controller's, the unit in the name
            attr.cc_config = {(k + "_ns" if k in CC_NS_KEYS else k): v for k, v in attr.cc_config.items()}
        self.dev.ctl.modify_cc_profile(int(a["profile_id"]), attr, mask)

    def _ctl_query_cc_profile(self, a, now):
        out = self.dev.ctl.query_cc_profile(int(a["profile_id"]))
        return {"profile_state": ProfileState(out.profile_state).name, "algorithm": out.algorithm}

    # -- QPs bound to profiles (mrc.h: profile ids given at INIT) -----------------------------------------
    def _ctl_create_qp(self, a, now):
        qp = self.dev.create_qp(self.cq, cap=QpCap(max_send_wr=8, max_recv_wr=8))
        try:
            qp.modify("INIT", ev_profile_id=int(a["ev_profile_id"]), cc_profile_id=int(a["cc_profile_id"]))
        except ApiError:
            qp.destroy()
            raise
        self._ctl_qps[qp.qp_num] = qp
        return {"qp": qp.qp_num}

    def _ctl_destroy_qp(self, a, now):
        qp = self._ctl_qps.pop(int(a["qp"]), None)
        if qp is None:
            raise UsageError(f"ctl destroy_qp: {a['qp']!r} is not a QP made by create_qp")
        qp.destroy()

    # -- EV event CQs ----------------------------------------------------------------------------------
    def _ctl_create_ev_event_cq(self, a, now):
        self._ctl_cqs.append(self.dev.ctl.create_ev_event_cq(int(a["cqe"])))
        return {"cq": len(self._ctl_cqs) - 1}

    def _ctl_poll_ev_event(self, a, now):
        q = self._ctl_cqs[int(a["cq"])]
        return {"events": [{"profile_id": e.profile_id, "ev": self._ev_out(e.ev), "state": e.state.name,
                            "drop_count": e.drop_count}
                           for e in self.dev.ctl.poll_ev_event(q, int(a.get("num_entries", 16)))]}

    # -- endpoint requests ------------------------------------------------------------------------------
    def _ctl_ep_batch_send(self, a, now):
        if self._peer is None:
            raise UsageError("ctl ep_batch_send: the endpoint is not connected (no peer to probe)")
        mode = EvFmtMode.UDP if self.cfg.ev_mode == "UDP" else EvFmtMode.STEV
        reqs = [EpRequest(int(r["req_id"]), self._peer, self._ev(r["ev"]), ev_fmt_mode=mode) for r in a["requests"]]
        batch = self.dev.ctl.ep_batch_send(a.get("op", "EV_PROBE"), reqs, now=now, req_tc=int(a["req_tc"]),
                                           rsp_timeout_ns=int(a["rsp_timeout_ns"]))
        self._ctl_batches.append(batch)
        return {"batch": len(self._ctl_batches) - 1}

    def _ctl_ep_batch_wait(self, a, now):
        b = self._ctl_batches[int(a["batch"])]
        rsp = [{"req_id": r.req_id, "port": r.port, "rtt_ns": r.rtt_ns, "adj_svc_time": bool(r.adj_svc_time)}
               for r in b.responses]
        return {"done": b.done or b.timed_out, "errno": "ETIMEDOUT" if b.timed_out and not b.done else None,
                "responses": rsp}
