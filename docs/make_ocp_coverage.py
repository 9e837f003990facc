"""Render docs/ocp-coverage.md: every function, struct, enum and constant of the OCP headers ``mrc.h`` and
``mrc_ctl.h`` (opencomputeproject/OCP-Multipath-Reliable-Connection, commit 662a150), its counterpart in
`mrc.api` / `mrc.ctl`, how faithful it is, and where it differs, with the reason.

The rows are written here by hand, from the headers (names only: their text is not copied) and the code.
`counterpart` names real objects: tests/test_ocp_coverage.py imports every one, so a renamed or removed
counterpart fails the run, as does a page that differs from `render()`. A status that depends on what the
protocol core offers (dynamic MPR, service time, QP hints: `mrc.api.corefeatures`) is computed when the
page is rendered. The ``before`` column is the status when issue 30 was opened (the same rubric), so the
page also records the change.

Statuses: ``faithful`` (the header's semantics: arguments, masks, errors; a Pythonic shape is no
difference), ``partial`` (the counterpart exists but some of the header's behaviour is missing or
differs), ``missing``.

    python docs/make_ocp_coverage.py            # rewrite docs/ocp-coverage.md
    python docs/make_ocp_coverage.py --summary  # the counts, now and before
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "ocp-coverage.md"
F, P, X = "faithful", "partial", "missing"


def _core(feature: str) -> str:
    """faithful when the core offers `feature` (`mrc.api.corefeatures`), else partial."""
    from mrc.api import corefeatures

    return F if getattr(corefeatures, feature)() else P


# (header, name, kind, counterpart(s) space-separated, before, now, difference / reason)
def rows() -> list[tuple]:
    dyn, svc, hints = _core("dynamic_mpr"), _core("svc_time"), _core("qp_hints")
    core_note = "" if P not in (dyn, svc, hints) else (
        " Until the protocol core has it (`mrc.api.corefeatures`), the capability is not advertised and asking "
        "for it is ENOTSUP.")
    return [
        # ---- mrc.h: constants, enums, structs -----------------------------------------------------
        ("mrc.h", "MRC_MAX_VENDOR_CFG_SIZE", "constant", "mrc.api.MRC_MAX_VENDOR_CFG_SIZE", X, F, ""),
        ("mrc.h", "enum mrc_protocol_version", "enum", "mrc.api.ProtocolVersion mrc.api.MRC_PROTOCOL_VERSION_1", P, F, ""),
        ("mrc.h", "enum mrc_device_cap", "enum", "mrc.api.DeviceCap", P, F,
         "DYNAMIC_MPR and SVC_TIME are advertised when the core offers them (`mrc.api.corefeatures`)."),
        ("mrc.h", "struct mrc_device_attr", "struct", "mrc.api.DeviceAttr", P, F,
         "Flat: `wimm_attr.max_wimm` is `max_wimm`, `mpr_attr.*` and `qp_attr.max_qp_hint` likewise; `supported` "
         "(the call's out-argument) and the device's own limits (QPs, EVs per QP, ports, MTU) ride along."),
        ("mrc.h", "struct mrc_context_attr", "struct", "mrc.api.ContextAttr", X, F, ""),
        ("mrc.h", "struct mrc_qp_hint_attr", "struct", "mrc.api.QpHintAttr", X, F,
         "No vendor keys are defined for hints, so `vendor_cfg` must be empty (EINVAL)."),
        ("mrc.h", "enum mrc_qp_hint_attr_mask", "enum", "mrc.api.QpHintAttrMask", X, F, ""),
        ("mrc.h", "struct mrc_qp_hint_init_attr", "struct", "mrc.api.QpHintInitAttr", X, F, ""),
        ("mrc.h", "struct mrc_qp_init_attr", "struct", "mrc.api.QpInitAttr", P, F,
         "`pd` is kept as given: the library has no protection domains (a QP may use any memory region of its "
         "device). `sq_sig_all` must be 1: every write completes. `send_ops_flags`: RDMA_WRITE and "
         "RDMA_WRITE_WITH_IMM only (the MRC operations)."),
        ("mrc.h", "enum mrc_qp_attr_mask", "enum", "mrc.api.QpAttrMask", P, F,
         "`QueuePair.modify` also takes the attributes by keyword, one per mask bit."),
        ("mrc.h", "enum mrc_qp_cap", "enum", "mrc.api.QpCapFlags", P, max(dyn, svc, key=[F, P].index),
         "TRIM_NACK_DEST_UNSUPPORTED turns this responder's trim NACKs off; DYNAMIC_MPR and "
         "SVC_TIME_DEST_UNSUPPORTED drive the core's dynamic MPR and service time." + core_note),
        ("mrc.h", "struct mrc_qp_attr", "struct", "mrc.api.QpAttr", P, F,
         "Flat: `mpr.mpr` is `mpr`, `retry.linear_cnt` is `retry_linear`, `profile.ev_profile_id` is "
         "`ev_profile_id`, and so on. `vendor_cfg` carries the project's extension attributes as "
         "`b\"key=value,...\"` (`mrc.api.VENDOR_QP_ATTRS`: acknowledgement coalescing, RACK, probes, EV policy)."),
        ("mrc.h", "struct mrc_async_event", "struct", "mrc.api.AsyncEvent", P, F,
         "`element` gives the union's member (the QP, the CQ or the port number); `kind` names the event and "
         "`event_type` is its `ibv_event_type` name."),
        # ---- mrc.h: functions ----------------------------------------------------------------------
        ("mrc.h", "mrc_query_device_ex", "function", "mrc.api.Device.query_device mrc.api.Context.query_device", X, F,
         "`Device.query_device(context=...)`; the context must be one of the device's."),
        ("mrc.h", "mrc_query_device", "function", "mrc.api.Device.query_device", P, F,
         "Returns the `DeviceAttr`, with `supported`. The 1.0.0 and 1.0.1 semantics are the same here."),
        ("mrc.h", "mrc_query_version", "function", "mrc.api.query_version mrc.api.api_ver", X, F,
         "Returns a `VersionInfo` (the four out-arguments). `api_ver` is `MRC_API_VER` (mrc_api_ver.h)."),
        ("mrc.h", "mrc_create_context", "function", "mrc.api.create_context mrc.api.Context", X, F,
         "The `Device` is the `ibv_context`. A context records the versions in use (0 or LATEST: the newest; "
         "outside 0.0.0-1.0.1: EINVAL) and tracks what it creates."),
        ("mrc.h", "mrc_destroy_context", "function", "mrc.api.Context.destroy", X, F,
         "Destroys what is left of what it created (QPs, hints, CQs, channels); also the end of a `with` block."),
        ("mrc.h", "mrc_create_comp_channel", "function", "mrc.api.Context.create_comp_channel mrc.api.CompChannel",
         X, F, ""),
        ("mrc.h", "mrc_get_comp_channel_fd", "function", "mrc.api.CompChannel.fileno", X, F,
         "A real descriptor (a pipe), readable while events wait: `select`, `trio.lowlevel.wait_readable`, "
         "`loop.add_reader`; `CompChannel.wait` awaits it in trio or asyncio."),
        ("mrc.h", "mrc_destroy_comp_channel", "function", "mrc.api.CompChannel.destroy", X, F,
         "EBUSY while CQs use it."),
        ("mrc.h", "mrc_create_cq", "function", "mrc.api.Context.create_cq mrc.api.Device.create_cq", P, F,
         "One completion vector (0). A completion beyond `cqe` is kept and reported (CQ_OVERRUN), not lost."),
        ("mrc.h", "mrc_poll_cq", "function", "mrc.api.CompletionQueue.poll", F, F,
         "Returns the completions (`WorkCompletion`) instead of filling an array."),
        ("mrc.h", "mrc_destroy_cq", "function", "mrc.api.CompletionQueue.destroy", X, F,
         "EBUSY while QPs use it or its events are unacknowledged (the header's `mrc_destroy_cq` waits for them; "
         "a sans-IO library cannot wait)."),
        ("mrc.h", "mrc_create_qp_hint", "function", "mrc.api.Context.create_qp_hint mrc.api.QpHint", X, hints,
         "A hinted QP starts its window at its share of the bottleneck the hint describes (the core's "
         "`hint_share`)." + ("" if hints == F else " Until the core has hints, a hint is kept and shown but changes "
                                                   "nothing.")),
        ("mrc.h", "mrc_destroy_qp_hint", "function", "mrc.api.QpHint.destroy", X, F, "EBUSY while QPs use it."),
        ("mrc.h", "mrc_query_qp_hint", "function", "mrc.api.QpHint.query", X, F, ""),
        ("mrc.h", "mrc_modify_qp_hint", "function", "mrc.api.QpHint.modify", X, F,
         "QPs read the hint when they go RTS."),
        ("mrc.h", "mrc_create_qp", "function", "mrc.api.Context.create_qp mrc.api.Device.create_qp", P, F, ""),
        ("mrc.h", "mrc_destroy_qp", "function", "mrc.api.QueuePair.destroy mrc.api.Device.destroy_qp", P, F,
         "In any state; EBUSY while an async event about the QP is unacknowledged (as `ibv_destroy_qp` waits)."),
        ("mrc.h", "mrc_query_qp", "function", "mrc.api.QueuePair.query_qp", P, F,
         "Returns `(IbvQpAttr, QpAttr, QpInitAttr)`; fields outside the masks are None. `QueuePair.query` is the "
         "project's full snapshot."),
        ("mrc.h", "mrc_modify_qp", "function", "mrc.api.QueuePair.modify_qp mrc.api.QueuePair.modify", P,
         max(dyn, hints, key=[F, P].index),
         "The verbs attributes mrc.h refuses are EINVAL; the requester's MPR and max WIMM may come at RTR (as "
         "mrc_qp.md does); the header's RTR row lists DYNAMIC_MPR, which is a `cap` bit (MRC_QP_CAP)." + core_note),
        ("mrc.h", "mrc_get_qpn", "function", "mrc.api.QueuePair.get_qpn mrc.api.QueuePair.qp_num", F, F, ""),
        ("mrc.h", "mrc_post_recv", "function", "mrc.api.QueuePair.post_recv", F, F,
         "One receive per call (a wr_id: MRC receives take no buffer)."),
        ("mrc.h", "mrc_post_send", "function", "mrc.api.QueuePair.post_send mrc.api.QueuePair.post_write", F, F,
         "One work request per call; a refused one raises, naming what was wrong (the header's `bad_wr`)."),
        ("mrc.h", "mrc_get_async_event", "function", "mrc.api.Device.get_async_event mrc.api.Context.get_async_event",
         F, F, "Non-blocking by default (None when none: the sans-IO device raises events only while driven); "
               "`block=True` waits on `Device.async_fd`."),
        ("mrc.h", "mrc_ack_async_event", "function", "mrc.api.Device.ack_async_event", X, F,
         "EINVAL for an event not returned, or acknowledged already."),
        ("mrc.h", "mrc_req_notify_cq", "function", "mrc.api.CompletionQueue.req_notify", X, F,
         "`solicited_only`: the next receive completion (the only kind an MRC peer solicits) or completion in "
         "error."),
        ("mrc.h", "mrc_get_cq_event", "function", "mrc.api.CompChannel.get_cq_event", X, F,
         "Blocks (or `block=False`: EAGAIN when none); returns `(cq, cq_context)`."),
        ("mrc.h", "mrc_ack_cq_events", "function", "mrc.api.CompletionQueue.ack_events", X, F,
         "EINVAL for more than were taken."),
        # ---- mrc_ctl.h: constants, enums, structs ----------------------------------------------------
        ("mrc_ctl.h", "MRC_CTL_MAX_VENDOR_CFG_SIZE", "constant", "mrc.ctl.MRC_CTL_MAX_VENDOR_CFG_SIZE", X, F, ""),
        ("mrc_ctl.h", "MRC_CTL_EV_UNPOPULATED", "constant", "mrc.ctl.MRC_CTL_EV_UNPOPULATED mrc.ctl.EV_UNPOPULATED", P, F,
         ""),
        ("mrc_ctl.h", "MRC_CTL_EV_MAX_BYTES", "constant", "mrc.ctl.MRC_CTL_EV_MAX_BYTES", F, F, ""),
        ("mrc_ctl.h", "enum mrc_ctl_protocol_version", "enum", "mrc.ctl.CtlProtocolVersion", X, F, ""),
        ("mrc_ctl.h", "enum mrc_ctl_profile_state", "enum", "mrc.ctl.ProfileState", F, F, ""),
        ("mrc_ctl.h", "enum mrc_ctl_attr_opt", "enum", "mrc.ctl.CtlAttrOpt", P, F,
         "All but EV_EXPLICIT_RANGE are advertised (explicit arrays may hold any EVs)."),
        ("mrc_ctl.h", "struct mrc_ctl_device_attr", "struct", "mrc.ctl.CtlDeviceAttr mrc.ctl.CtlEvAttr mrc.ctl.CtlCcAttr",
         P, F, "`ev_count_align` is a Device argument (default 1) and is enforced; `phy_port_mask` has bit N for "
               "port N (1-based); `cc.algorithms` is a tuple (no NULL end)."),
        ("mrc_ctl.h", "enum mrc_ctl_port_admin_state", "enum", "mrc.ctl.PortAdminState", P, F, ""),
        ("mrc_ctl.h", "enum mrc_ctl_port_attr_mask", "enum", "mrc.ctl.PortAttrMask", X, F, ""),
        ("mrc_ctl.h", "struct mrc_ctl_port_attr", "struct", "mrc.ctl.PortAttr", P, F,
         "A disabled port reports down: `mrc.api.Device.query_port` (the `ibv_query_port` counterpart)."),
        ("mrc_ctl.h", "enum mrc_ctl_ev_fmt_mode", "enum", "mrc.ctl.EvFmtMode", P, F,
         "The header's values; `EvFmtMode.wire` is the wire layer's `EvMode`, which numbers them differently."),
        ("mrc_ctl.h", "enum mrc_ctl_ev_fmt_op", "enum", "mrc.ctl.EvFmtOp", X, F, ""),
        ("mrc_ctl.h", "enum mrc_ctl_ev_fmt_profile_attr_mask", "enum", "mrc.ctl.EvFmtProfileAttrMask", X, F, ""),
        ("mrc_ctl.h", "struct mrc_ctl_ev_fmt_field", "struct", "mrc.ctl.EvFmtField", P, F,
         "Plain widths (ints) are accepted too."),
        ("mrc_ctl.h", "struct mrc_ctl_ev_fmt_profile_attr", "struct", "mrc.ctl.EvFmtProfileAttr mrc.ctl.EvFmtOpArgs",
         P, F, "`ev_fmt_op` is an `EvFmtOpArgs` (op, fields, count in/out). No vendor keys: `vendor_cfg` empty."),
        ("mrc_ctl.h", "mrc_ctl_ev_t", "type", "mrc.ctl.CtlEv", P, F,
         "`CtlEv.val`: 32 bytes, read most significant bit first from byte 0 (as ev_expansion.c reads them)."),
        ("mrc_ctl.h", "struct mrc_ctl_ev", "struct", "mrc.ctl.CtlEv", P, F,
         "The EV's name in every mode and every call (value and port, as given); `Controller.ev_table` shows "
         "what each EV carries on the wire, `Controller.ev_of` maps back."),
        ("mrc_ctl.h", "enum mrc_ctl_ev_state", "enum", "mrc.ctl.EvState", F, F, ""),
        ("mrc_ctl.h", "enum mrc_ctl_ev_mode", "enum", "mrc.ctl.EvProfileMode", F, F, ""),
        ("mrc_ctl.h", "enum mrc_ctl_ev_op", "enum", "mrc.ctl.EvOp", P, F, ""),
        ("mrc_ctl.h", "enum mrc_ctl_ev_fields_op", "enum", "mrc.ctl.EvFieldsOp", X, F, ""),
        ("mrc_ctl.h", "enum mrc_ctl_ev_profile_attr_mask", "enum", "mrc.ctl.EvProfileAttrMask", X, F, ""),
        ("mrc_ctl.h", "struct mrc_ctl_ev_field", "struct", "mrc.ctl.EvField", F, F, ""),
        ("mrc_ctl.h", "enum mrc_ctl_ev_op_flags", "enum", "mrc.ctl.EvOpFlags", P, F, ""),
        ("mrc_ctl.h", "struct mrc_ctl_ev_op_entry", "struct", "mrc.ctl.EvOpEntry", P, F,
         "REPLACE_EV's `state` may be left None: GOOD (the OCP examples leave it unset)."),
        ("mrc_ctl.h", "struct mrc_ctl_ev_profile_attr", "struct",
         "mrc.ctl.EvProfileAttr mrc.ctl.EvOpArgs mrc.ctl.EvFieldsOpArgs", P, F,
         "`vendor_cfg` `b\"seed=N\"` seeds a GEN or AUTO profile's EVs (ours)."),
        ("mrc_ctl.h", "enum mrc_ctl_cc_profile_attr_mask", "enum", "mrc.ctl.CcProfileAttrMask", X, F, ""),
        ("mrc_ctl.h", "struct mrc_ctl_cc_profile_attr", "struct", "mrc.ctl.CcProfileAttr", P, F,
         "Algorithms: \"uet-1.0-nscc\", \"fixed-window\" (ours: cwnd = max_cwnd), None (CC disabled). "
         "`vendor_cfg` sets core CC fields the header's struct lacks (`min_cwnd`, ...)."),
        ("mrc_ctl.h", "struct mrc_ctl_cc_nscc_cfg", "struct", "mrc.ctl.CcNsccCfg", P, F,
         "The time fields carry their unit in the name (`base_rtt_ns`, ...: ns as the header); unset fields take "
         "the defaults of `mrc.core.setup.nscc_profile`."),
        ("mrc_ctl.h", "struct mrc_ctl_ev_event", "struct", "mrc.ctl.EvEvent", P, F,
         "`ev` is the EV as the controller named it; `drop_count` counts events dropped before this one (also "
         "those dropped inside the device); `state` is filled at every API version. Ours besides: `qp_num`, "
         "`value` (the 32-bit EV on the wire), `losses` (packets the QP lost on the EV), `time`."),
        ("mrc_ctl.h", "enum mrc_ctl_ep_op_type", "enum", "mrc.ctl.EpOpType", P, F,
         "The header's values; `EpOpType.wire` is the endpoint header's op code, which differs."),
        ("mrc_ctl.h", "struct mrc_ctl_ep_req", "struct", "mrc.ctl.EpRequest", P, F,
         "`dgid` may be a GID (IPv6 or IPv4 text, 16 bytes) or the network's own address object; `sgid` None is "
         "the device's address. An SRv6 EV that is no profile's EV is an address: the packet carries a tag of it "
         "and `OutPacket.ev_addr` the address."),
        ("mrc_ctl.h", "struct mrc_ctl_ep_rsp", "struct", "mrc.ctl.EpResponse", P, svc,
         "`rtt_ns` (ns, as the header's `rtt`); `adj_svc_time` when the responder reported its service time."
         + ("" if svc == F else " Until the core reports service time, no response is adjusted.")),
        # ---- mrc_ctl.h: functions -----------------------------------------------------------------------
        ("mrc_ctl.h", "mrc_ctl_query_device_ex", "function", "mrc.ctl.Controller.query_device", X, F,
         "`query_device(context=...)`."),
        ("mrc_ctl.h", "mrc_ctl_query_device", "function", "mrc.ctl.Controller.query_device", P, F, ""),
        ("mrc_ctl.h", "mrc_ctl_query_version", "function", "mrc.ctl.query_version mrc.ctl.Controller.query_version", X,
         F, ""),
        ("mrc_ctl.h", "mrc_ctl_query_port", "function", "mrc.ctl.Controller.query_port", F, F, ""),
        ("mrc_ctl.h", "mrc_ctl_modify_port", "function", "mrc.ctl.Controller.modify_port", F, F,
         "A disabled port goes down on every QP and the peers are told, as when its link fails."),
        ("mrc_ctl.h", "mrc_ctl_modify_ev_fmt_profile", "function", "mrc.ctl.Controller.modify_ev_fmt_profile", F, F,
         "Also takes keywords (one per mask bit)."),
        ("mrc_ctl.h", "mrc_ctl_query_ev_fmt_profile", "function", "mrc.ctl.Controller.query_ev_fmt_profile", F, F,
         "A profile id never configured is in INIT."),
        ("mrc_ctl.h", "mrc_ctl_modify_ev_profile", "function",
         "mrc.ctl.Controller.modify_ev_profile mrc.ctl.Controller.replace_ev mrc.ctl.Controller.modify_ev_state "
         "mrc.ctl.Controller.ev_op", P, F,
         "An explicit profile given no fields takes each format field whole (mrc_ctl_exp_ev.md sets none). "
         "MODIFY_ONLINE: REPLACE_EV, MODIFY_FIELDS and EVENT_MASK on an ONLINE profile reach bound QPs at once; "
         "packets in flight on a replaced EV are resent (the header and the notes are silent: ours); moving an "
         "EV to another port under bound QPs is EBUSY. Field ranges bound generated EVs only."),
        ("mrc_ctl.h", "mrc_ctl_query_ev_profile", "function",
         "mrc.ctl.Controller.query_ev_profile mrc.ctl.Controller.query_ev_state mrc.ctl.Controller.query_ev_array",
         P, F, ""),
        ("mrc_ctl.h", "mrc_ctl_modify_cc_profile", "function", "mrc.ctl.Controller.modify_cc_profile", P, F, ""),
        ("mrc_ctl.h", "mrc_ctl_query_cc_profile", "function", "mrc.ctl.Controller.query_cc_profile", F, F,
         "The config as the core runs it, in the header's units (defaults filled in)."),
        ("mrc_ctl.h", "mrc_ctl_create_ev_event_cq", "function", "mrc.ctl.Controller.create_ev_event_cq", P, F,
         "Every EV event CQ of the controller receives the events of every bound QP."),
        ("mrc_ctl.h", "mrc_ctl_poll_ev_event", "function", "mrc.ctl.Controller.poll_ev_event mrc.ctl.EvEventQueue.poll",
         F, F, ""),
        ("mrc_ctl.h", "mrc_ctl_ep_batch_send_wait", "function",
         "mrc.ctl.Controller.ep_batch_send_wait mrc.ctl.Controller.ep_batch_send", P, F,
         "The sans-IO device is lent a clock and a network by `drive`; ETIMEDOUT carries the responses that "
         "came (`responses`). `ep_batch_send` is the non-blocking form."),
    ]


def counts(column: int) -> Counter:
    return Counter(r[column] for r in rows())


def render() -> str:
    now, before = counts(5), counts(4)
    out = ["# OCP header coverage", "",
           "<!-- generated by docs/make_ocp_coverage.py; tests/test_ocp_coverage.py fails when it is stale -->", "",
           "Every function, struct, enum and constant of the OCP headers `mrc.h` and `mrc_ctl.h` "
           "(opencomputeproject/OCP-Multipath-Reliable-Connection, commit 662a150) and its counterpart in `mrc.api` "
           "/ `mrc.ctl`. *faithful*: the header's semantics (arguments, masks, errors as errno-named exceptions, "
           "`mrc.errors.EINVAL` and its siblings); a Pythonic shape (dataclasses for structs, returned values for "
           "out-arguments, context managers for destroy) is no difference. *partial*: some of the header's "
           "behaviour is missing or differs (said why). *before*: the status when issue 30 was opened.", "",
           f"Now: **{now[F]} faithful, {now[P]} partial, {now[X]} missing** of {sum(now.values())} "
           f"(before issue 30: {before[F]} / {before[P]} / {before[X]}).", "",
           "The OCP examples (`examples/*.md`) run as tests, step by step: `tests/api/test_ocp_examples.py`, which "
           "also checks `examples/ev_expansion` against the program's own output.", ""]
    for header in ("mrc.h", "mrc_ctl.h"):
        out += [f"## {header}", "", "| item | counterpart | status | before | difference, reason |", "|---|---|---|---|---|"]
        for h, name, kind, cp, was, status, note in rows():
            if h != header:
                continue
            names = ", ".join(f"`{c.removeprefix('mrc.')}`" for c in cp.split())
            out.append(f"| `{name}` ({kind}) | {names} | {status} | {was} | {note} |")
        out.append("")
    return "\n".join(out)


def resolve(dotted: str):
    """The object a counterpart names (module, then attributes)."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


if __name__ == "__main__":
    if "--summary" in sys.argv:
        now, before = counts(5), counts(4)
        print(f"now: {now[F]} faithful / {now[P]} partial / {now[X]} missing; "
              f"before issue 30: {before[F]} / {before[P]} / {before[X]} (of {sum(now.values())})")
    else:
        PAGE.write_text(render() + "\n")
