"""`Controller`: the device query, EV format and CC profiles with their state machines, and the QPs bound to
profiles (the package docstring, `mrc.ctl`, describes the whole controller; EV profiles are in `evprofile`,
EV operations and events in `evops`, ports and endpoint requests in `endpoint`)."""
from __future__ import annotations

import collections
import copy
import warnings
from dataclasses import dataclass, field

import numpy as np

from mrc.api.types import set_masked
from mrc.api.version import VersionInfo, query_ctl_version
from mrc.core import dtypes as D, evset, nscc, setup
from mrc.ctl import ev_fields
from mrc.ctl.endpoint import EndpointMixin
from mrc.ctl.evops import EvOpsMixin
from mrc.ctl.evprofile import EV_MAX_COUNT, EV_MAX_PROFILES, EvProfileMixin
from mrc.ctl.types import (
    EV_MAX_BYTES, CcNsccCfg, CcProfileAttr, CcProfileAttrMask, CtlAttrOpt, CtlCcAttr, CtlDeviceAttr, CtlEvAttr,
    CtlProtocolVersion, EvFmtField, EvFmtMode, EvFmtOp, EvFmtOpArgs, EvFmtProfileAttr, EvFmtProfileAttrMask, EvProfileMode,
    EvState, ProfileState, attr_from_keywords, check_cur_state, check_int, check_transition, parse_enum, parse_vendor_cfg,
)
from mrc.errors import E2BIG, EBUSY, EINVAL, ConfigError

# The device's controller limits (mrc_ctl_device_attr). Profiles and EVs live in the controller's memory,
# so these bound what one controller keeps; CC profiles also take a row of the core's CC table.
EV_MAX_FMT_PROFILES = 256
CC_ALGORITHMS = ("uet-1.0-nscc", "fixed-window")  # mrc_ctl_device_attr.cc.algorithms; None disables CC
# "fixed-window" (ours, a vendor algorithm as mrc_ctl.h allows): cwnd stays at CcNsccCfg.max_cwnd bytes
CC_DISABLED_WINDOW = 1 << 50  # bytes: a window no QP reaches, so only MPR and max WIMM bound what is in flight
CC_NS_KEYS = ("base_rtt", "adjust_period_threshold", "qa_threshold", "target_delay", "fast_increase_delay")
PROFILE_IDS = (0, (1 << 64) - 1)  # profile ids are uint64_t


class _NotGiven:
    """The default of a keyword whose None is a value (a CC profile's algorithm: None disables CC)."""

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = _NotGiven()
OPT_ATTR = (CtlAttrOpt.EV_PROFILE_MODIFY_ONLINE | CtlAttrOpt.CC_PROFILE_MODIFY_ONLINE | CtlAttrOpt.EV_EVENT
            | CtlAttrOpt.EV_EVENT_PRECISE_DROP_CNT | CtlAttrOpt.EP_OP_EV_PROBE)


@dataclass
class FmtProfile:
    """An EV format profile's state (kept by the controller; `Controller.query_ev_fmt_profile` shows it)."""

    state: ProfileState = ProfileState.INIT
    mode: EvFmtMode | None = None
    widths: list[int] = field(default_factory=list)


@dataclass
class CcProfile:
    """A CC profile's state: the algorithm (set or not: None is a value, it disables CC), the header-unit
    config given, the vendor extras, the core row while ONLINE, the bound QPs."""

    state: ProfileState = ProfileState.INIT
    algorithm_set: bool = False
    algorithm: str | None = None
    config: dict = field(default_factory=dict)  # CcNsccCfg fields given (header units)
    config_set: bool = False  # CONFIG given since the algorithm was set (ONLINE needs it)
    extra: dict = field(default_factory=dict)  # vendor_cfg: other CC row fields
    vendor_cfg: bytes = b""
    row: int = -1
    qps: set = field(default_factory=set)


class Controller(EvProfileMixin, EvOpsMixin, EndpointMixin):
    """The node's MRC controller (``mrc_ctl.h``). Reach it as ``device.ctl`` (or ``context.ctl``)."""

    def __init__(self, device, *, ev_count_align: int = 1):
        self.device = device
        self.ev_count_align = ev_count_align
        self.counters: collections.Counter = collections.Counter()
        self._fmts: dict[int, FmtProfile] = {}
        self._ccs: dict[int, CcProfile] = {}
        self._ev_cqs: list = []
        self._init_ev_profiles()
        self._init_endpoint(device.ports)  # the endpoint protocol's table and the ports (`endpoint`)

    def __repr__(self) -> str:
        n = lambda d: sum(p.state != ProfileState.INIT for p in d.values())  # noqa: E731
        return (f"<Controller of {self.device.name!r}: {n(self._fmts)} EV format, {n(self._evps)} EV, "
                f"{n(self._ccs)} CC profile(s) configured, ports up {self.local_ports:#b}>")

    # -- device ---------------------------------------------------------------------------
    @staticmethod
    def query_version() -> VersionInfo:
        """``mrc_ctl_query_version``: the controller API versions (the same as `mrc.ctl.query_version`)."""
        return query_ctl_version()

    def query_device(self, context=None) -> CtlDeviceAttr:
        """``mrc_ctl_query_device`` (and ``_ex`` with the `context`, which must be one of this device's):
        the controller limits, EV format and EV modes, CC algorithms, the ports owned, the optional features."""
        if context is not None and getattr(context, "device", None) is not self.device:
            raise EINVAL(f"query_device_ex: context {context!r} is not a context of device {self.device.name!r}")
        used = sum(p.count for p in self._evps.values() if p.state != ProfileState.INIT)
        ev = CtlEvAttr(ev_max_fmt_profiles=EV_MAX_FMT_PROFILES, ev_max_profiles=EV_MAX_PROFILES,
                       ev_max_count=EV_MAX_COUNT, ev_free_count=EV_MAX_COUNT - used,
                       ev_max_count_profile=self.device.T.ev.shape[1], ev_count_align=self.ev_count_align,
                       ev_max_width=8 * EV_MAX_BYTES, ev_fmt_mode_mask=int(EvFmtMode.STEV | EvFmtMode.SRV6 | EvFmtMode.UDP),
                       ev_mode_mask=int(EvProfileMode.AUTO | EvProfileMode.EXP | EvProfileMode.GEN), ev_op_max_entries=0)
        cc = CtlCcAttr(cc_max_profiles=self.device.T.cc.shape[0], algorithms=CC_ALGORITHMS)
        return CtlDeviceAttr(mrc_ctl_protocol_version=int(CtlProtocolVersion.VERSION_1), ev=ev, cc=cc,
                             phy_port_mask=((1 << self.device.ports) - 1) << 1, opt_attr=int(OPT_ATTR))

    # -- EV format profiles -----------------------------------------------------------------
    def modify_ev_fmt_profile(self, profile_id: int, attr: EvFmtProfileAttr | None = None, attr_mask: int | None = None,
                              *, state=None, mode=None, fields: list | None = None, vendor_cfg: bytes | None = None) -> None:
        """``mrc_ctl_modify_ev_fmt_profile``: the mode (STEV / SRV6 / UDP) and the field widths, and the state.

        Give `attr` (`EvFmtProfileAttr`) and `attr_mask` (`EvFmtProfileAttrMask`) as the header does, or the
        keywords: `state`, `mode`, `fields` (widths, or `EvFmtField`s: MODIFY_FIELDS), `vendor_cfg`.
        OFFLINE needs MODE, ONLINE the fields (the INIT -> OFFLINE call may carry both, as the OCP examples
        do). ONLINE allows only STATE(OFFLINE) and QUERY_FIELDS; leaving ONLINE while ONLINE EV profiles use
        the format is EBUSY. EINVAL names a bad argument; E2BIG: the fields exceed the mode's width (STEV 32
        bits, UDP 16, SRv6 256). INIT clears the profile."""
        what = f"EV format profile {profile_id}"
        attr, mask = attr_from_keywords(
            EvFmtProfileAttr, EvFmtProfileAttrMask, attr, attr_mask,
            {"state": state, "mode": mode, "fields": fields, "vendor_cfg": vendor_cfg},
            {"state": ("profile_state", EvFmtProfileAttrMask.STATE), "mode": ("ev_fmt_mode", EvFmtProfileAttrMask.MODE),
             "fields": ("ev_fmt_op", EvFmtProfileAttrMask.OP), "vendor_cfg": ("vendor_cfg", EvFmtProfileAttrMask.VENDOR_CFG)})
        if fields is not None:
            attr.ev_fmt_op = EvFmtOpArgs(EvFmtOp.MODIFY_FIELDS, list(fields), len(fields))
        check_int("ev_fmt_profile_id", profile_id, *PROFILE_IDS)
        p = self._fmts.get(profile_id, FmtProfile())
        check_cur_state(what, attr, mask & EvFmtProfileAttrMask.CUR_STATE, p.state)
        target = parse_enum(ProfileState, attr.profile_state, "profile_state") if mask & EvFmtProfileAttrMask.STATE else p.state
        if mask & EvFmtProfileAttrMask.VENDOR_CFG:
            parse_vendor_cfg(what, attr.vendor_cfg, {})  # no vendor keys for format profiles
        new = copy.deepcopy(p)
        if mask & EvFmtProfileAttrMask.MODE:
            if p.state == ProfileState.ONLINE:
                raise EINVAL(f"{what}: MODE cannot change while ONLINE")
            new.mode = parse_enum(EvFmtMode, attr.ev_fmt_mode, "ev_fmt_mode")
        if mask & EvFmtProfileAttrMask.OP:
            op_args = attr.ev_fmt_op
            if not isinstance(op_args, EvFmtOpArgs):
                raise EINVAL(f"{what}: ev_fmt_op = {op_args!r} must be an EvFmtOpArgs")
            op = parse_enum(EvFmtOp, op_args.op, "ev_fmt_op.op")
            if op == EvFmtOp.QUERY_FIELDS:
                self._fmt_query_fields(what, p, op_args)
            else:
                if p.state == ProfileState.ONLINE:
                    raise EINVAL(f"{what}: MODIFY_FIELDS cannot change while ONLINE (only QUERY_FIELDS)")
                if not (p.state == ProfileState.OFFLINE or target == ProfileState.OFFLINE):
                    raise EINVAL(f"{what}: MODIFY_FIELDS needs OFFLINE (it is {p.state.name})")
                if new.mode is None:
                    raise EINVAL(f"{what}: set MODE before fields")
                new.widths = self._fmt_widths(what, op_args)
        if new.mode is not None and new.widths and (mask & (EvFmtProfileAttrMask.MODE | EvFmtProfileAttrMask.OP)):
            self._check_format(what, new.mode, new.widths)
        if target != p.state:
            check_transition(what, p.state, target, {ProfileState.OFFLINE: {"MODE": new.mode is not None},
                                                     ProfileState.ONLINE: {"MODIFY_FIELDS": bool(new.widths)}})
            users = [k for k, ep in self._evps.items() if ep.fmt_id == profile_id and ep.state == ProfileState.ONLINE]
            if p.state == ProfileState.ONLINE and users:
                raise EBUSY(f"{what}: ONLINE EV profile(s) {users} use it")
            if p.state == ProfileState.INIT and len([f for f in self._fmts.values() if f.state != ProfileState.INIT]) >= EV_MAX_FMT_PROFILES:
                raise EINVAL(f"{what}: all {EV_MAX_FMT_PROFILES} EV format profiles (ev_max_fmt_profiles) are in use")
            new.state = target
            if target == ProfileState.INIT:
                new = FmtProfile()
        self._fmts[profile_id] = new

    def _fmt_widths(self, what: str, op_args: EvFmtOpArgs) -> list[int]:
        widths = []
        for n, f in enumerate(op_args.fmt_fields):
            w = f.width if hasattr(f, "width") else f
            if not isinstance(w, (int, np.integer)) or isinstance(w, bool) or not 1 <= w <= 128:
                raise EINVAL(f"{what}: fmt_fields[{n}].width = {w!r} must be an integer in [1, 128]")
            widths.append(int(w))
        if op_args.fmt_field_count is not None and op_args.fmt_field_count != len(widths):
            raise EINVAL(f"{what}: fmt_field_count = {op_args.fmt_field_count!r} but {len(widths)} fmt_fields given")
        if not widths:
            raise EINVAL(f"{what}: at least one format field is required")
        return widths

    @staticmethod
    def _check_format(what: str, mode: EvFmtMode, widths: list[int]) -> None:
        limit = ev_fields.FORMAT_MAX_BITS[mode.wire]
        if sum(widths) > limit:
            raise E2BIG(f"{what}: fields {widths} total {sum(widths)} bits, more than the {limit} of {mode.name}")

    @staticmethod
    def _fmt_query_fields(what: str, p: FmtProfile, op_args: EvFmtOpArgs) -> None:
        n = len(p.widths)
        if op_args.fmt_field_count is not None and op_args.fmt_field_count < n:
            op_args.fmt_field_count = n
            raise E2BIG(f"{what}: QUERY_FIELDS needs room for {n} fields", required=n)
        op_args.fmt_fields = [EvFmtField(w) for w in p.widths]
        op_args.fmt_field_count = n

    def query_ev_fmt_profile(self, profile_id: int, attr_mask: int | None = None,
                             attr: EvFmtProfileAttr | None = None) -> EvFmtProfileAttr:
        """``mrc_ctl_query_ev_fmt_profile``: the state, mode and (QUERY_FIELDS) the field widths. Without a mask,
        all of them; `attr` may carry an ``ev_fmt_op`` with a ``fmt_field_count`` (E2BIG if it is too small,
        the count needed returned in it). A profile never configured is in INIT."""
        what = f"EV format profile {profile_id}"
        check_int("ev_fmt_profile_id", profile_id, *PROFILE_IDS)
        full = EvFmtProfileAttrMask.STATE | EvFmtProfileAttrMask.CUR_STATE | EvFmtProfileAttrMask.MODE | EvFmtProfileAttrMask.OP
        mask = EvFmtProfileAttrMask(full if attr_mask is None else check_int("attr_mask", attr_mask, 0, (1 << 32) - 1))
        p = self._fmts.get(profile_id, FmtProfile())
        out = attr if attr is not None else EvFmtProfileAttr()
        states = EvFmtProfileAttrMask.STATE | EvFmtProfileAttrMask.CUR_STATE
        set_masked(out, mask, [(states, "profile_state", p.state), (states, "cur_profile_state", p.state),
                               (EvFmtProfileAttrMask.MODE, "ev_fmt_mode", p.mode),
                               (EvFmtProfileAttrMask.VENDOR_CFG, "vendor_cfg", b"")])
        if mask & EvFmtProfileAttrMask.OP:
            op_args = out.ev_fmt_op if out.ev_fmt_op is not None else EvFmtOpArgs(EvFmtOp.QUERY_FIELDS)
            if parse_enum(EvFmtOp, op_args.op, "ev_fmt_op.op") != EvFmtOp.QUERY_FIELDS:
                raise EINVAL(f"{what}: query_ev_fmt_profile takes QUERY_FIELDS only, not MODIFY_FIELDS")
            self._fmt_query_fields(what, p, op_args)
            out.ev_fmt_op = op_args
        return out

    # -- CC profiles -----------------------------------------------------------------------------
    def modify_cc_profile(self, profile_id: int, attr: CcProfileAttr | None = None, attr_mask: int | None = None, *,
                          state=None, algorithm=NOT_GIVEN, config: CcNsccCfg | dict | None = None,
                          vendor_cfg: bytes | None = None) -> None:
        """``mrc_ctl_modify_cc_profile``: the algorithm, its configuration, the state.

        Give `attr` (`CcProfileAttr`) and `attr_mask` (`CcProfileAttrMask`), or keywords (`state`,
        `algorithm`, `config`, `vendor_cfg`). `algorithm` is "uet-1.0-nscc" (NSCC), "fixed-window" (ours: cwnd
        = ``max_cwnd``) or None, which disables congestion control (mrc_ctl.h: "NULL disables CC"). `config`
        is a `CcNsccCfg` or a dict of its fields (times in ns, named ``*_ns``; the bare header names still work
        and warn). OFFLINE needs ALGORITHM, ONLINE needs CONFIG (None: an empty config, the defaults).
        CONFIG may change while ONLINE (``CC_PROFILE_MODIFY_ONLINE``): bound QPs see the new row at once.
        Leaving ONLINE with bound QPs is EBUSY."""
        what = f"CC profile {profile_id}"
        algo_kw = None if algorithm is NOT_GIVEN else (algorithm, )
        attr, mask = attr_from_keywords(
            CcProfileAttr, CcProfileAttrMask, attr, attr_mask,
            {"state": state, "algorithm": algo_kw, "config": config, "vendor_cfg": vendor_cfg},
            {"state": ("profile_state", CcProfileAttrMask.STATE), "algorithm": ("algorithm", CcProfileAttrMask.ALGORITHM),
             "config": ("cc_config", CcProfileAttrMask.CONFIG), "vendor_cfg": ("vendor_cfg", CcProfileAttrMask.VENDOR_CFG)})
        if algo_kw is not None:
            attr.algorithm = algorithm
        check_int("cc_profile_id", profile_id, *PROFILE_IDS)
        p = self._ccs.get(profile_id, CcProfile())
        check_cur_state(what, attr, mask & CcProfileAttrMask.CUR_STATE, p.state)
        target = parse_enum(ProfileState, attr.profile_state, "profile_state") if mask & CcProfileAttrMask.STATE else p.state
        new = copy.copy(p)
        if mask & CcProfileAttrMask.ALGORITHM:
            if p.state == ProfileState.ONLINE:
                raise EINVAL(f"{what}: ALGORITHM cannot change while ONLINE")
            algo = attr.algorithm
            if algo == "none":
                warnings.warn("CC algorithm 'none' is deprecated: use 'fixed-window' (a fixed window of max_cwnd), "
                              "or None to disable congestion control", DeprecationWarning, stacklevel=2)
                algo = "fixed-window"
            if algo is not None and algo not in CC_ALGORITHMS:
                raise EINVAL(f"{what}: algorithm {algo!r} not supported (one of {CC_ALGORITHMS}, or None: CC disabled)")
            if not new.algorithm_set or algo != p.algorithm:
                new.config, new.config_set = {}, False  # a config belongs to its algorithm
            new.algorithm_set, new.algorithm = True, algo
        if mask & CcProfileAttrMask.VENDOR_CFG:
            known = {n: (float if D.CC[n].kind == "f" else int) for n in D.CC.names if n not in ("algorithm",)}
            known.update({f"{k}_ns": int for k in CC_NS_KEYS})
            new.extra = parse_vendor_cfg(what, attr.vendor_cfg, known)
            new.vendor_cfg = bytes(attr.vendor_cfg or b"")
        if mask & CcProfileAttrMask.CONFIG:
            if not new.algorithm_set:
                raise EINVAL(f"{what}: set ALGORITHM before CONFIG")
            new.config, new.config_set = self._cc_config_fields(what, attr.cc_config), True
        row_cfg = None
        if new.algorithm_set and (new.config_set or target == ProfileState.ONLINE):
            row_cfg = self._cc_row_config(what, new)  # checked now: a refused config changes nothing
        if target != p.state:
            check_transition(what, p.state, target, {ProfileState.OFFLINE: {"ALGORITHM": new.algorithm_set},
                                                     ProfileState.ONLINE: {"CONFIG": new.config_set}})
            if p.state == ProfileState.ONLINE and p.qps:
                raise EBUSY(f"{what}: {len(p.qps)} QP(s) still use it")
            n_cc = self.device.T.cc.shape[0]
            if p.state == ProfileState.INIT and sum(c.state != ProfileState.INIT for c in self._ccs.values()) >= n_cc:
                raise EINVAL(f"{what}: all {n_cc} CC profiles (cc_max_profiles) are in use")
        if target == ProfileState.INIT:
            self._ccs[profile_id] = CcProfile()
            return
        row = new.row
        if target == ProfileState.ONLINE and row < 0:
            used = {c.row for c in self._ccs.values()}
            row = next(r for r in range(self.device.T.cc.shape[0]) if r not in used)
        new.row, new.state = row, target
        self._ccs[profile_id] = new
        if target == ProfileState.ONLINE:
            setup.write_cc(self.device.T, new.row, row_cfg)

    def _cc_config_fields(self, what: str, cfg) -> dict:
        """A `CcNsccCfg` or dict -> {field: value} in the header's units (ns, bytes), checked against its C types."""
        if cfg is None:
            return {}
        if isinstance(cfg, CcNsccCfg):
            cfg = cfg.as_dict()
        if not isinstance(cfg, dict):
            raise EINVAL(f"{what}: cc_config = {cfg!r} must be a CcNsccCfg or a dict of its fields")
        cfg = dict(cfg)
        for k in CC_NS_KEYS:
            if k in cfg:
                if k + "_ns" in cfg:
                    raise EINVAL(f"{what}: config gives both {k}_ns and {k} (the same field)")
                warnings.warn(f"CC profile config key {k!r} is deprecated; use {k}_ns (the same value, in ns)",
                              DeprecationWarning, stacklevel=4)
                cfg[k + "_ns"] = cfg.pop(k)
        names = set(CcNsccCfg.__dataclass_fields__) | {"fast_increase_delay_ns"}
        out = {}
        for k, v in cfg.items():
            if k not in names:
                raise EINVAL(f"{what}: unknown config field {k!r} (known: {', '.join(sorted(names))}; other CC row "
                             f"fields go in vendor_cfg)")
            if k in ("eta", "fi", "fi_scale", "gamma", "max_md_jump"):
                if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool) or not np.isfinite(v):
                    raise EINVAL(f"{what}: config {k} = {v!r} must be a finite number (float in mrc_ctl_cc_nscc_cfg)")
                out[k] = float(v)
            else:
                hi = 255 if k in ("disable_qa", "qa_gate") else (1 << 32) - 1  # uint8_t / uint32_t in the header
                if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 0 <= v <= hi:
                    raise EINVAL(f"{what}: config {k} = {v!r} must be an integer in [0, {hi}] (its C type)")
                out[k] = int(v)
        return out

    def _cc_row_config(self, what: str, p: CcProfile) -> dict:
        """The core's CC row for a profile (times in ps)."""
        dev = self.device
        cfg = {**p.config, **p.extra}
        cfg = {(k[:-3] if k.endswith("_ns") and k[:-3] in CC_NS_KEYS else k): v for k, v in cfg.items()}
        conv = {k: int(v) * 1000 for k, v in cfg.items() if k in CC_NS_KEYS}
        rest = {k: v for k, v in cfg.items() if k not in CC_NS_KEYS}
        base_ps = conv.pop("base_rtt", 8_000_000)
        try:
            if p.algorithm is None or p.algorithm == "fixed-window":
                if p.algorithm is None:
                    window = CC_DISABLED_WINDOW
                    rest.pop("max_cwnd", None)
                else:
                    window = rest.pop("max_cwnd", None)
                    if window is None:
                        raise EINVAL(f"{what}: algorithm fixed-window needs max_cwnd (the window, bytes)")
                prof = setup.fixed_window_profile(window_bytes=int(window), base_rtt_ps=base_ps, mtu=dev.mtu)
                prof.update(rest)
                prof.update(conv)
                return setup._checked_cc(prof)
            return setup.nscc_profile(mtu=dev.mtu, rate_bps=dev.port_rate_bps * dev.ports, base_rtt_ps=base_ps,
                                      **rest, **conv)
        except ConfigError as e:
            raise EINVAL(f"{what}: config {e.key} = {e.value!r}: {e.problem}") from None

    def query_cc_profile(self, profile_id: int, attr_mask: int | None = None) -> CcProfileAttr:
        """``mrc_ctl_query_cc_profile``: state, algorithm (None: CC disabled), and the config: a `CcNsccCfg`
        of what the core runs with (header units, defaults filled in), the vendor_cfg as given. Without a
        mask, everything. A profile never configured is in INIT."""
        check_int("cc_profile_id", profile_id, *PROFILE_IDS)
        mask = CcProfileAttrMask((1 << 32) - 1 if attr_mask is None else check_int("attr_mask", attr_mask, 0, (1 << 32) - 1))
        p = self._ccs.get(profile_id, CcProfile())
        out = CcProfileAttr()
        states = CcProfileAttrMask.STATE | CcProfileAttrMask.CUR_STATE
        set_masked(out, mask, [(states, "profile_state", p.state), (states, "cur_profile_state", p.state),
                               (CcProfileAttrMask.ALGORITHM, "algorithm", p.algorithm),
                               (CcProfileAttrMask.VENDOR_CFG, "vendor_cfg", p.vendor_cfg)])
        if mask & CcProfileAttrMask.CONFIG and p.algorithm_set and p.config_set:
            row = self._cc_row_config(f"CC profile {profile_id}", p)
            if row is not None:
                vals = {k: (row[k] // 1000 if k in CC_NS_KEYS else row[k]) for k in row}
                out.cc_config = CcNsccCfg(**{f: (vals.get(f[:-3]) if f.endswith("_ns") else vals.get(f))
                                             for f in CcNsccCfg.__dataclass_fields__})
        return out

    def cc_row(self, profile_id: int) -> np.void:
        """The core's CC row an ONLINE profile's QPs run with (`mrc.core.dtypes.CC`, times in ps): what the
        header's config became (ours, for inspection)."""
        p = self._ccs.get(profile_id)
        if p is None or p.row < 0:
            raise EINVAL(f"CC profile {profile_id} is not ONLINE (it has no row in the core)")
        return self.device.T.cc[p.row]

    # -- one-call setup ---------------------------------------------------------------------
    def setup_ev_profile(self, profile_id: int = 1, *, count: int = 16, min_active: int | None = None,
                         event_mask: int = EvState.GOOD | EvState.ASSUMED_BAD, seed: int | None = None) -> list:
        """An AUTO EV profile (the device picks `count` EVs, round robin over its ports) taken
        INIT -> OFFLINE -> ONLINE in one call; returns its EVs (`CtlEv`). `min_active` defaults to count / 4
        (the OCP example), `event_mask` to both event states. Explicit (EXP) and generated (GEN)
        profiles need a format and fields: use `modify_ev_fmt_profile` / `modify_ev_profile`."""
        check_int("setup_ev_profile: count", count, 1, self.device.T.ev.shape[1])
        if min_active is not None:
            check_int("setup_ev_profile: min_active", min_active, 0, count)
        check_int("setup_ev_profile: event_mask", int(event_mask) if isinstance(event_mask, EvState) else event_mask,
                  0, int(EvState.GOOD | EvState.ASSUMED_BAD))
        if seed is not None:
            check_int("setup_ev_profile: seed", seed, 0, (1 << 63) - 1)
        self.modify_ev_profile(profile_id, mode="AUTO", count=count, seed=seed,
                               min_active=max(1, count // 4) if min_active is None else min_active,
                               event_mask=int(event_mask), state="OFFLINE")
        self.modify_ev_profile(profile_id, state="ONLINE")
        return self.query_ev_array(profile_id)

    def setup_cc_profile(self, profile_id: int = 1, *, algorithm: str | None = "uet-1.0-nscc", **config) -> None:
        """A CC profile taken INIT -> OFFLINE -> ONLINE in one call. `config` holds `CcNsccCfg` fields (times
        in ns, named ``*_ns``; unset fields take the defaults of `mrc.core.setup`: base RTT 8 us, the rest
        scaled from it and the device's rate). "fixed-window" needs ``max_cwnd`` (bytes); None disables CC."""
        self.modify_cc_profile(profile_id, algorithm=algorithm, state="OFFLINE")
        self.modify_cc_profile(profile_id, config=config or {"base_rtt_ns": 8000}, state="ONLINE")

    # -- binding profiles to QPs -------------------------------------------------------------------
    def _cc_row(self, profile_id: int) -> int:
        return self._ccs[profile_id].row

    def _bind_qp(self, qp, ev_profile_id: int, cc_profile_id: int) -> None:
        p = self._ev_profile_of(ev_profile_id)
        c = self._ccs.get(cc_profile_id)
        if c is None:
            raise EINVAL(f"modify_qp to INIT: CC profile {cc_profile_id} does not exist (never configured)")
        if p.state != ProfileState.ONLINE:
            raise EINVAL(f"modify_qp to INIT: EV profile {ev_profile_id} is {p.state.name}, not ONLINE")
        if c.state != ProfileState.ONLINE:
            raise EINVAL(f"modify_qp to INIT: CC profile {cc_profile_id} is {c.state.name}, not ONLINE")
        self._unbind_qp(qp)
        T = self.device.T
        order = sorted(range(p.count), key=lambda k: (p.entries[k].ev.port, k))
        entries = [p.entries[k] for k in order]
        evset.bind_profile(T, qp.index, np.array([e.value for e in entries], np.uint32),
                           np.array([e.ev.port - 1 for e in entries], np.uint8),
                           np.array([e.admin == EvState.DENIED for e in entries], np.bool_), self.device.ports)
        nscc.use_profile(T, qp.index, c.row)
        evset.set_event_mask(T, qp.index, p.event_mask_bits)
        p.slots[qp] = order
        c.qps.add(qp)

    def _unbind_qp(self, qp) -> None:
        for prof in self._evps.values():
            prof.slots.pop(qp, None)
        for cc in self._ccs.values():
            cc.qps.discard(qp)
