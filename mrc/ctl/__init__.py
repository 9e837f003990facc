"""The controller API of OCP ``mrc_ctl.h``: one privileged controller per node (``device.ctl``).

Every function of the header is a method of `Controller` taking the header's arguments: an attribute
struct (a dataclass with the header's field names) and its mask, with the header's errors as
errno-named exceptions (`mrc.errors.EINVAL`, `ENOENT`, `EBUSY`, `E2BIG`, ...; all `UsageError`s). The
modify calls also take keywords, one per mask bit, for the common case. docs/ocp-coverage.md lists
each header item, its counterpart here, and where they differ.

Three kinds of profile, each INIT -> OFFLINE -> ONLINE -> OFFLINE -> INIT (entering INIT clears it;
a profile id never configured is in INIT):

- EV format profiles (`modify_ev_fmt_profile`): mode (STEV / SRV6 / UDP) and field widths. To OFFLINE:
  MODE; to ONLINE: MODIFY_FIELDS (the INIT -> OFFLINE call may carry it, as the OCP examples do).
  Leaving ONLINE while ONLINE EV profiles use it: EBUSY.
- EV profiles (`modify_ev_profile`; `mrc.ctl.evprofile`): mode AUTO / EXP / GEN, format, ``ev_count``
  (a multiple of ``ev_count_align``), ``ev_min_active``, event mask, fields (`EvField`) and the EV
  array. To OFFLINE: MODE, COUNT (and FMT_ID unless AUTO, fields for GEN); to ONLINE: MIN_ACTIVE,
  EVENT_MASK, and for EXP every entry populated by REPLACE_EV. While ONLINE: STATE, EVENT_MASK,
  REPLACE_EV, MODIFY_FIELDS (``EV_PROFILE_MODIFY_ONLINE``: bound QPs take the new EVs at once,
  packets in flight on a replaced EV are resent), MODIFY_EV_STATE and the queries.
- CC profiles (`modify_cc_profile`): algorithm "uet-1.0-nscc", "fixed-window" (ours) or None (CC
  disabled) and its `CcNsccCfg`. CONFIG may change while ONLINE (``CC_PROFILE_MODIFY_ONLINE``).

EVs are named as the header names them: a `CtlEv` (``struct mrc_ctl_ev``: the value the controller
gave, up to 32 bytes, and the 1-based port), in every EV mode. An EV may appear several times in an
explicit array (REPLACE_EV with ALL_COPIES replaces every occurrence). Field expansion, ranges and
generation are `mrc.ctl.ev_fields`; what the core and the packets carry for each EV is described in
`mrc.ctl.evprofile` (`Controller.ev_table` shows it, `Controller.ev_of` maps back).

EV events (`create_ev_event_cq`, `EvEvent`): transitions to ASSUMED_BAD and GOOD of every bound QP, the
EV as the profile holds it, and ``drop_count``: the events dropped before this one (the CQ never
overruns; drops inside the device count too). Endpoint requests (`ep_batch_send_wait`,
`ep_batch_send`; `EpRequest`): EV probes with their RTT and port status updates, sent again until
answered; optionally (`Controller.set_ev_probing`) probes of every EV that becomes ASSUMED_BAD. The
protocol is `mrc.core.ctlproto`, the compiled functions the emulator's controllers run too. Ports:
`query_port` / `modify_port` (administrative state; a disabled port is down).

Profiles are bound to a QP at RESET -> INIT (`mrc.api.QueuePair.modify`) and released when the QP
returns to RESET or is destroyed; each QP keeps its own copy of the EV states, and controller state
changes (DENIED, GOOD) reach every QP using the profile at once.

Layout: the device query, format and CC profiles and binding in `controller`; EV profiles in
`evprofile`; EV operations and events in `evops`; endpoint requests and ports in `endpoint` (mixins of
`Controller`); the types in `types` (re-exported here); fault localisation in `localizer`
(`mrc.ctl.localize`, `mrc.ctl.Localizer`).
"""
from __future__ import annotations

from mrc.api.version import query_ctl_version as query_version
from mrc.ctl.controller import CC_ALGORITHMS, CC_NS_KEYS, Controller
from mrc.ctl.ev_fields import EvField
from mrc.ctl.types import (
    EV_MAX_BYTES, EV_UNPOPULATED, MRC_CTL_API_CURRENT_VERSION, MRC_CTL_API_LAST_SUPPORTED_VERSION,
    MRC_CTL_API_VER_LATEST, MRC_CTL_EV_MAX_BYTES, MRC_CTL_EV_UNPOPULATED, MRC_CTL_MAX_VENDOR_CFG_SIZE,
    MRC_CTL_VENDOR_API_CURRENT_VERSION, MRC_CTL_VENDOR_API_LAST_SUPPORTED_VERSION, CcNsccCfg, CcProfileAttr,
    CcProfileAttrMask, CtlAttrOpt, CtlCcAttr, CtlDeviceAttr, CtlEv, CtlEvAttr, CtlProtocolVersion, EpBatch, EpOpType,
    EpRequest, EpResponse, EvEvent, EvEventQueue, EvFieldsOp, EvFieldsOpArgs, EvFmtField, EvFmtMode, EvFmtOp,
    EvFmtOpArgs, EvFmtProfileAttr, EvFmtProfileAttrMask, EvOp, EvOpArgs, EvOpEntry, EvOpFlags, EvProfileAttr,
    EvProfileAttrMask, EvProfileMode, EvState, PortAdminState, PortAttr, PortAttrMask, ProfileState,
)

__all__ = ["Controller", "query_version", "CC_ALGORITHMS", "CC_NS_KEYS", "EV_MAX_BYTES", "EV_UNPOPULATED",
           "MRC_CTL_API_CURRENT_VERSION", "MRC_CTL_API_LAST_SUPPORTED_VERSION", "MRC_CTL_API_VER_LATEST",
           "MRC_CTL_EV_MAX_BYTES", "MRC_CTL_EV_UNPOPULATED", "MRC_CTL_MAX_VENDOR_CFG_SIZE",
           "MRC_CTL_VENDOR_API_CURRENT_VERSION", "MRC_CTL_VENDOR_API_LAST_SUPPORTED_VERSION", "CcNsccCfg",
           "CcProfileAttr", "CcProfileAttrMask", "CtlAttrOpt", "CtlCcAttr", "CtlDeviceAttr", "CtlEv", "CtlEvAttr",
           "CtlProtocolVersion", "EpBatch", "EpOpType", "EpRequest", "EpResponse", "EvEvent", "EvEventQueue",
           "EvField", "EvFieldsOp", "EvFieldsOpArgs", "EvFmtField", "EvFmtMode", "EvFmtOp", "EvFmtOpArgs",
           "EvFmtProfileAttr", "EvFmtProfileAttrMask", "EvOp", "EvOpArgs", "EvOpEntry", "EvOpFlags", "EvProfileAttr",
           "EvProfileAttrMask", "EvProfileMode", "EvState", "PortAdminState", "PortAttr", "PortAttrMask",
           "ProfileState"]


def __getattr__(name):
    """``mrc.ctl.localize`` / ``mrc.ctl.Localizer``: the controller's fault localisation (`mrc.ctl.localizer`),
    loaded on first use (it needs `mrc.fabric`)."""
    if name in ("localize", "Localizer", "Verdict", "Suspect"):
        from mrc.ctl import localizer

        return getattr(localizer, name)
    raise AttributeError(f"module 'mrc.ctl' has no attribute {name!r}")
