"""Mutants of the controller surface (adapter feature ``ctl``): the reference's controller with one bug each.

Each is a hook on `Endpoint.ctl` that changes the call on its way in or the answer on its way out, as a
controller library with that bug would behave; the protocol core is untouched. Their triggers are the
``("ctl", call)`` trace tokens of the calls they act on, so the matrix runs them only where a case makes
those calls.
"""
from __future__ import annotations

from mrc.wire import Opcode

from .base import Mutant

EP_RSP = int(Opcode.MRC_ENDPOINT_RESPONSE)

ERRNO_OK = {"errno": None}


def _t(*calls) -> frozenset:
    return frozenset(("ctl", c) for c in calls)


def _on(calls, fn):
    """A ctl hook applying `fn(ep, call, args, now)` to `calls`, passing every other call through."""
    def hook(ep, call, args, now):
        if call in calls:
            ep.altered += 1
            return fn(ep, call, args, now)
        return ep.inner.ctl(call, args, now)
    return {"ctl": hook}


def _inner(ep, call, args, now):
    return ep.inner.ctl(call, args, now)


def _state_of(ep, call, pid) -> str:
    kind = "ev" if "ev" in call else "cc"
    return ep.inner.ctl(f"query_{kind}_profile", {"profile_id": pid}, 0).get("profile_state")


# --- profile state machines ------------------------------------------------------------------------------------
def _defaults(ep, call, args, now):
    if args.get("profile_state") == "OFFLINE" and _state_of(ep, call, args["profile_id"]) == "INIT":
        args = {"ev_mode": "EXP", "ev_fmt_profile_id": 1, "ev_count": 8, **args}
    return _inner(ep, call, args, now)


def _any_transition(ep, call, args, now):
    """A requested state reached through the states between, as a lenient implementation would."""
    target, cur = args.get("profile_state"), _state_of(ep, call, args["profile_id"])
    if (cur, target) in (("ONLINE", "INIT"), ("INIT", "ONLINE")):
        first = {k: v for k, v in args.items() if k not in ("profile_state", "ev_min_active", "ev_event_mask")}
        ep.inner.ctl(call, {**first, "profile_state": "OFFLINE"}, now)
        args = {k: v for k, v in args.items() if k in ("profile_id", "profile_state", "ev_min_active",
                                                       "ev_event_mask", "cc_config")}
    return _inner(ep, call, args, now)


def _ebusy_hidden(ep, call, args, now):
    a = _inner(ep, call, args, now)
    return ERRNO_OK if a.get("errno") == "EBUSY" else a


def _bind_any(ep, call, args, now):
    a = _inner(ep, call, args, now)
    if a.get("errno") == "EINVAL":
        a = _inner(ep, call, {"ev_profile_id": 1, "cc_profile_id": 1}, now)
    return a


# --- explicit arrays and EV operations ----------------------------------------------------------------------------
def _fills_unpopulated(ep, call, args, now):
    """An explicit array that starts filled with made-up EVs."""
    a = _inner(ep, call, args, now)
    if a.get("errno") is None and args.get("profile_state") == "OFFLINE" and args.get("ev_mode") == "EXP":
        for k in range(int(args.get("ev_count", 0))):
            ep.inner.ctl("ev_op", {"profile_id": args["profile_id"], "op": "REPLACE_EV",
                                   "entries": [{"ev": None, "ev_new": [0x0F0F0000 + k, 1]}]}, now)
    return a


def _all_copies_ignored(ep, call, args, now):
    args = dict(args)
    args["entries"] = [{k: v for k, v in e.items() if k != "all_copies"} for e in args.get("entries", [])]
    return _inner(ep, call, args, now)


def _array_truncated(ep, call, args, now):
    op = args.get("ev_op") or {}
    if op.get("op") != "QUERY_EV_ARRAY" or op.get("entry_count") is None:
        return _inner(ep, call, args, now)
    a = _inner(ep, call, {**args, "ev_op": {"op": "QUERY_EV_ARRAY"}}, now)
    a["entries"] = a.get("entries", [])[:op["entry_count"]]
    return a


def _continues(ep, call, args, now):
    a = _inner(ep, call, args, now)
    k = a.get("entry")
    if a.get("errno") and k is not None:
        for e in args["entries"][k + 1:]:
            ep.inner.ctl(call, {**args, "entries": [e]}, now)
    return a


def _both_ops(ep, call, args, now):
    if "ev_op" in args and "ev_fields_op" in args:
        args = {k: v for k, v in args.items() if k != "ev_fields_op"}
    return _inner(ep, call, args, now)


def _ranges_on_explicit(ep, call, args, now):
    """Refuses an explicit EV whose fields fall outside [min_val, max_val] (the ranges are for generated EVs)."""
    if call == "modify_ev_profile" and "ev_fields_op" in args:
        ep.scratch.setdefault("fields", {})[args["profile_id"]] = args["ev_fields_op"].get("fields", [])
    fields = ep.scratch.get("fields", {}).get(args.get("profile_id"))
    if call == "ev_op" and args.get("op") == "REPLACE_EV" and fields:
        for e in args.get("entries", []):
            value, pos = e["ev_new"][0], 32
            for width, _init, lo, hi, _mask in fields:
                pos -= width
                v = value >> pos & ((1 << width) - 1)
                if hi and not lo <= v <= hi:
                    return {"errno": "EINVAL", "error": f"field value {v} outside [{lo}, {hi}]"}
    return _inner(ep, call, args, now)


def _min_active_clamped(ep, call, args, now):
    if "ev_min_active" in args:
        count = args.get("ev_count") or ep.inner.ctl("query_ev_profile", {"profile_id": args["profile_id"]}, now)["ev_count"]
        args = {**args, "ev_min_active": min(args["ev_min_active"], count or 0)}
    return _inner(ep, call, args, now)


def _unknown_ignored(ep, call, args, now):
    a = _inner(ep, call, args, now)
    return {**a, "errno": None, "entries": a.get("entries") or []} if a.get("errno") == "ENOENT" else a


def _by_expansion(ep, call, args, now):
    """EVs in EV operations looked up by the value the packets carry (the expansion), not the one installed."""
    op = args.get("op") or (args.get("ev_op") or {}).get("op")
    if op not in ("MODIFY_EV_STATE", "QUERY_EV_STATE"):
        return _inner(ep, call, args, now)
    table = {(row["ev"].to_int(32), row["ev"].port): row["value"] for row in ep.inner.dev.ctl.ev_table(args["profile_id"])
             if row["value"] is not None}

    def named(e):
        v, port = e["ev"]
        return {**e, "ev": [table.get((v, port), v), port]}

    if "entries" in args:
        args = {**args, "entries": [named(e) for e in args["entries"]]}
    if "ev_op" in args:
        args = {**args, "ev_op": {**args["ev_op"], "entries": [named(e) for e in args["ev_op"].get("entries", [])]}}
    return _inner(ep, call, args, now)


def _online_replace_refused(ep, call, args, now):
    if args.get("op") == "REPLACE_EV" and _state_of(ep, "ev", args["profile_id"]) == "ONLINE":
        return {"errno": "EINVAL", "error": "REPLACE_EV needs an OFFLINE profile"}
    return _inner(ep, call, args, now)


# --- EV event CQs, ports, CC, endpoint requests, the device ----------------------------------------------------------
def _cq_bigger(ep, call, args, now):
    return _inner(ep, call, {**args, "cqe": 64 * int(args["cqe"])}, now)


def _drop_count_zero(ep, call, args, now):
    a = _inner(ep, call, args, now)
    a["events"] = [{**e, "drop_count": 0} for e in a.get("events", [])]
    return a


def _shown_up(ep, call, args, now):
    a = _inner(ep, call, args, now)
    return {**a, "state": "ACTIVE"} if a.get("port_admin_state") == "DISABLED" else a


def _cc_any_name(ep, call, args, now):
    names = ep.inner.ctl("query_device", {}, now)["algorithms"]
    if args.get("algorithm") is not None and args["algorithm"] not in names:
        args = {**args, "algorithm": names[0]}
    return _inner(ep, call, args, now)


def _cc_null_refused(ep, call, args, now):
    if "algorithm" in args and args["algorithm"] is None:
        return {"errno": "EINVAL", "error": "algorithm NULL"}
    return _inner(ep, call, args, now)


def _cc_online_refused(ep, call, args, now):
    if "cc_config" in args and "profile_state" not in args and _state_of(ep, "cc", args["profile_id"]) == "ONLINE":
        return {"errno": "EINVAL", "error": "CC_CONFIG while ONLINE"}
    return _inner(ep, call, args, now)


def _tc_ignored(ep, call, args, now):
    return _inner(ep, call, {**args, "req_tc": 46}, now)


def _no_timeout(ep, call, args, now):
    return _inner(ep, call, {**args, "rsp_timeout_ns": (1 << 32) - 1}, now)


def _mask_up_ports(ep, call, args, now):
    a = _inner(ep, call, args, now)
    up = 0
    for port in range(1, ep.inner.ports + 1):
        if ep.inner.ctl("query_port", {"port": port}, now)["state"] == "ACTIVE":
            up |= 1 << port
    return {**a, "phy_port_mask": up}


def _align_zero(ep, call, args, now):
    return {**_inner(ep, call, args, now), "ev_count_align": 0}


def _svc_time_zero(ep, v):
    if v["svc_time"]:
        v.set(svc_time=0)


EV_CALLS = ("modify_ev_profile", "ev_op", "query_ev_profile")
CTL_MUTANTS = [
    Mutant("ev-profile-defaults", "an EV profile sent OFFLINE without MODE, FMT_ID or COUNT takes defaults for them",
           hooks=_on({"modify_ev_profile"}, _defaults), trigger=_t("modify_ev_profile")),
    Mutant("profile-any-transition", "a profile asked to skip a state (INIT <-> ONLINE) passes through OFFLINE",
           hooks=_on({"modify_ev_profile", "modify_cc_profile"}, _any_transition),
           trigger=_t("modify_ev_profile", "modify_cc_profile")),
    Mutant("ebusy-not-reported", "taking a profile in use offline answers success (and does nothing)",
           hooks=_on({"modify_ev_profile", "modify_cc_profile"}, _ebusy_hidden),
           trigger=_t("modify_ev_profile", "modify_cc_profile")),
    Mutant("bind-ignores-profile-id", "a QP whose profiles cannot be bound is bound to profiles 1 instead",
           hooks=_on({"create_qp"}, _bind_any), trigger=_t("create_qp")),
    Mutant("fills-unpopulated-evs", "an explicit EV array starts filled with made-up EVs, not unpopulated",
           hooks=_on({"modify_ev_profile"}, _fills_unpopulated), trigger=_t("modify_ev_profile"),
           # a case that builds an explicit array fails at its first REPLACE_EV of an unpopulated entry
           collateral=("controller.*",)),
    Mutant("all-copies-ignored", "REPLACE_EV ignores MRC_CTL_EV_OP_F_ALL_COPIES (one copy replaced)",
           hooks=_on({"ev_op"}, _all_copies_ignored), trigger=_t("ev_op")),
    Mutant("ev-array-truncated", "QUERY_EV_ARRAY with too small an array truncates it instead of E2BIG",
           hooks=_on({"query_ev_profile"}, _array_truncated), trigger=_t("query_ev_profile")),
    Mutant("ev-op-continues-after-error", "an EV operation goes on with the entries after the one that failed",
           hooks=_on({"ev_op"}, _continues), trigger=_t("ev_op")),
    Mutant("both-ops-accepted", "EV_OP with EV_FIELDS_OP: the fields operation is ignored, the call succeeds",
           hooks=_on({"modify_ev_profile"}, _both_ops), trigger=_t("modify_ev_profile")),
    Mutant("ranges-on-explicit", "explicit EVs are refused when a field is outside its [min_val, max_val]",
           hooks=_on({"modify_ev_profile", "ev_op"}, _ranges_on_explicit), trigger=_t("ev_op")),
    Mutant("min-active-unchecked", "ev_min_active above ev_count is clamped to it instead of refused",
           hooks=_on({"modify_ev_profile"}, _min_active_clamped), trigger=_t("modify_ev_profile")),
    Mutant("unknown-ev-ignored", "an EV operation on an EV not in the array succeeds doing nothing (no ENOENT)",
           hooks=_on(set(EV_CALLS), _unknown_ignored), trigger=_t(*EV_CALLS)),
    Mutant("ev-named-by-expansion", "EV operations name EVs by the value packets carry, not the one installed",
           hooks=_on(set(EV_CALLS), _by_expansion), trigger=_t(*EV_CALLS), requires=frozenset({("cfg", "ev_fields")})),
    Mutant("online-replace-refused", "REPLACE_EV on an ONLINE profile is refused although MODIFY_ONLINE is "
           "advertised", hooks=_on({"ev_op"}, _online_replace_refused), trigger=_t("ev_op")),
    Mutant("ev-cq-overruns", "an EV event CQ holds more events than its cqe", hooks=_on({"create_ev_event_cq"}, _cq_bigger),
           trigger=_t("create_ev_event_cq")),
    Mutant("drop-count-zero", "EV events say drop_count 0 when events were dropped",
           hooks=_on({"poll_ev_event"}, _drop_count_zero), trigger=_t("poll_ev_event")),
    Mutant("admin-disable-shown-up", "an administratively disabled port with its link up is reported ACTIVE",
           hooks=_on({"query_port"}, _shown_up), trigger=_t("query_port")),
    Mutant("cc-unknown-algorithm-accepted", "a CC algorithm name the device does not list is taken for its first",
           hooks=_on({"modify_cc_profile"}, _cc_any_name), trigger=_t("modify_cc_profile")),
    Mutant("cc-null-refused", "a NULL CC algorithm (CC disabled) is refused",
           hooks=_on({"modify_cc_profile"}, _cc_null_refused), trigger=_t("modify_cc_profile")),
    Mutant("cc-online-config-refused", "CC_CONFIG on an ONLINE profile is refused although CC_PROFILE_MODIFY_ONLINE "
           "is advertised", hooks=_on({"modify_cc_profile"}, _cc_online_refused), trigger=_t("modify_cc_profile")),
    Mutant("req-tc-ignored", "endpoint requests leave in the control class whatever req_tc says",
           hooks=_on({"ep_batch_send"}, _tc_ignored), trigger=_t("ep_batch_send")),
    Mutant("no-rsp-timeout", "endpoint request batches never time out (rsp_timeout ignored)",
           hooks=_on({"ep_batch_send"}, _no_timeout), trigger=_t("ep_batch_send")),
    Mutant("svc-time-ignored", "the service time an endpoint response reports is ignored (rtt not adjusted)",
           rx=_svc_time_zero, rx_ops=frozenset({EP_RSP})),
    Mutant("device-port-mask-up-ports", "query_device's phy_port_mask lists the ports up, not the ports owned",
           hooks=_on({"query_device"}, _mask_up_ports), trigger=_t("query_device")),
    Mutant("ev-count-align-zero", "query_device says ev_count_align 0", hooks=_on({"query_device"}, _align_zero),
           trigger=_t("query_device")),
]
