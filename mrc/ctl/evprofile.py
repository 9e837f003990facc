"""EV profiles of the controller (``mrc_ctl_modify_ev_profile`` / ``mrc_ctl_query_ev_profile``): the state
machine, the attributes each state allows, the EV array and what the core carries for each EV.

A mixin of `mrc.ctl.Controller`. The EV array holds one `Entry` per slot: the EV as the controller
named it (`CtlEv`: value and port; ``MRC_CTL_EV_UNPOPULATED`` until an explicit entry is replaced), its
state as the controller set it (GOOD or DENIED), and two derived values: the expansion (the bits on
the wire: the concatenated format fields) and the 32-bit value the core and the packets' UDP EV carry:

- STEV, UDP: the expansion (at most 32 / 16 bits): what the packet carries is the EV;
- SRv6 whose fields pull at most 32 bits ("compact", as `mrc.fabric` builds them): those bits (the
  first 32 of the value), which the network adapter maps to the uSID address;
- wider SRv6: a 32-bit tag of the profile, one per distinct EV (the path is the address; the tag only
  lets answers name the EV they reflect);
- AUTO: the device's own 31-bit values.

An EV may sit in several entries (mrc_ctl.h: REPLACE_EV's ALL_COPIES replaces every occurrence): each
entry is a slot of every bound QP's EV set, so a listed-twice EV carries twice the share of its plane.

The array is made when the profile leaves INIT (explicit: unpopulated; generated and AUTO: drawn from
the profile's seed) and made again when MODE, FMT_ID or the fields change while OFFLINE (an explicit
array is unpopulated again); COUNT resizes it (an explicit array keeps its first entries). On an
ONLINE profile, MODIFY_FIELDS expands every EV again (GEN: generates them again, on the same ports)
and the bound QPs take the new values.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from mrc.api.types import set_masked
from mrc.core import dispatch, evset
from mrc.ctl import ev_fields
from mrc.ctl.types import (
    EV_UNPOPULATED, CtlEv, EvField, EvFieldsOp, EvFieldsOpArgs, EvFmtMode, EvOp, EvOpArgs, EvProfileAttr,
    EvProfileAttrMask, EvProfileMode, EvState, ProfileState, attr_from_keywords, check_cur_state, check_int,
    check_transition, parse_enum, parse_vendor_cfg,
)
from mrc.errors import E2BIG, EBUSY, EINVAL, ConfigError

M = EvProfileAttrMask
QUERY_MASK = M.STATE | M.CUR_STATE | M.MODE | M.FMT_ID | M.COUNT | M.MIN_ACTIVE | M.EVENT_MASK | M.VENDOR_CFG
ONLINE_FIXED = ((M.MODE, "MODE"), (M.FMT_ID, "FMT_ID"), (M.COUNT, "COUNT"), (M.MIN_ACTIVE, "MIN_ACTIVE"),
                (M.VENDOR_CFG, "VENDOR_CFG"))
TAG_LIMIT = 1 << 32
# The device's EV-profile limits (mrc_ctl_device_attr; `Controller.query_device` reports them).
EV_MAX_PROFILES = 1024
EV_MAX_COUNT = 1 << 20  # EVs over all EV profiles out of INIT


@dataclass
class Entry:
    """One slot of a profile's EV array."""

    ev: CtlEv = EV_UNPOPULATED
    value: int | None = None  # the 32-bit EV the core and the packets carry (None: unpopulated)
    expanded: int | None = None  # the expansion: concatenated format fields
    admin: EvState = EvState.GOOD  # GOOD or DENIED, as the controller set it


@dataclass
class EvProfile:
    """An EV profile's configuration, EV array and bound QPs (each QP's slots, in slot order, as entry indices)."""

    state: ProfileState = ProfileState.INIT
    mode: EvProfileMode | None = None
    fmt_id: int | None = None
    count: int = 0
    min_active: int | None = None  # None: not set yet (required to go ONLINE)
    event_mask: int | None = None  # None: not set yet (required to go ONLINE)
    fields: list[EvField] | None = None  # None: not given (an EXP profile then takes the identity fields)
    seed: int | None = None
    vendor_cfg: bytes = b""
    entries: list[Entry] = field(default_factory=list)
    slots: dict = field(default_factory=dict)  # QueuePair -> [entry index of each of its EV slots]
    tags: dict = field(default_factory=dict)  # wide SRv6: CtlEv -> 32-bit tag
    next_tag: int = 1

    @property
    def qps(self):
        """The QPs bound to the profile."""
        return self.slots.keys()

    @property
    def event_mask_bits(self) -> int:
        """The core's event mask: bit 0 reports ASSUMED_BAD, bit 1 GOOD."""
        mask = self.event_mask or 0
        return (1 if mask & EvState.ASSUMED_BAD else 0) | (2 if mask & EvState.GOOD else 0)


class EvProfileMixin:
    def _init_ev_profiles(self) -> None:
        self._evps: dict[int, EvProfile] = {}

    def _ev_profile_of(self, profile_id: int, what: str = "EV profile") -> EvProfile:
        """A configured EV profile (EINVAL: never configured)."""
        check_int("ev_profile_id", profile_id, 0, (1 << 64) - 1)
        p = self._evps.get(profile_id)
        if p is None:
            raise EINVAL(f"EV profile {profile_id} does not exist (never configured)")
        return p

    def _ev_profile(self, profile_id: int) -> EvProfile:
        return self._ev_profile_of(profile_id)

    # -- modify -------------------------------------------------------------------------------
    def modify_ev_profile(self, profile_id: int, attr: EvProfileAttr | None = None, attr_mask: int | None = None, *,
                          state=None, mode=None, fmt_id: int | None = None, count: int | None = None,
                          min_active: int | None = None, event_mask: int | None = None, fields: list | None = None,
                          vendor_cfg: bytes | None = None, seed: int | None = None, now: int = 0) -> EvProfileAttr:
        """``mrc_ctl_modify_ev_profile``; returns `attr` (EV_OP entries filled in).

        Give `attr` (`EvProfileAttr`) and `attr_mask` (`EvProfileAttrMask`) as the header does, or keywords:
        `state`, `mode` (AUTO / EXP / GEN), `fmt_id`, `count`, `min_active`, `event_mask`, `fields` (EV_FIELDS_OP
        MODIFY_FIELDS), `vendor_cfg`, `seed` (ours: ``vendor_cfg`` ``seed=N``). `now` (ps) times the state
        changes EV operations cause on bound QPs.

        States (mrc_ctl.h): to OFFLINE needs MODE and COUNT, and FMT_ID unless AUTO, and fields for GEN (an
        EXP profile without fields takes each format field whole, `ev_fields.identity_fields`); to ONLINE
        needs MIN_ACTIVE and EVENT_MASK, and for EXP every entry replaced (the array starts unpopulated).
        OFFLINE allows everything; ONLINE allows STATE(OFFLINE), EVENT_MASK, REPLACE_EV and MODIFY_FIELDS
        (``EV_PROFILE_MODIFY_ONLINE``: bound QPs take the new EVs at once, packets in flight on a replaced
        EV are resent), the other EV operations and QUERY_FIELDS. EV_OP and EV_FIELDS_OP together: EINVAL.
        EV_OP entries apply in order and stop at the first that fails (its index in the error's ``entry``;
        those before stay applied). Errors: EINVAL, ENOENT (an EV not in the array), E2BIG (more fields than
        the format has, or an output array too short), EBUSY (leaving ONLINE with bound QPs; moving an EV to
        another port while QPs use the profile).
        """
        what = f"EV profile {profile_id}"
        given = {"state": state, "mode": mode, "fmt_id": fmt_id, "count": count, "min_active": min_active,
                 "event_mask": event_mask, "fields": fields, "vendor_cfg": vendor_cfg, "seed": seed}
        attr, mask = self._ev_attr_args(attr, attr_mask, given)
        check_int("ev_profile_id", profile_id, 0, (1 << 64) - 1)
        if mask & M.EV_OP and mask & M.EV_FIELDS_OP:
            raise EINVAL(f"{what}: EV_OP and EV_FIELDS_OP are mutually exclusive")
        p = self._evps.get(profile_id, EvProfile())
        cur = p.state
        check_cur_state(what, attr, mask & M.CUR_STATE, cur)
        target = parse_enum(ProfileState, attr.profile_state, "profile_state") if mask & M.STATE else cur
        fields_op = self._fields_op(what, attr, mask)
        if cur == ProfileState.ONLINE:
            named = [name for bit, name in ONLINE_FIXED if mask & bit]
            if named:
                raise EINVAL(f"{what}: {', '.join(named)} cannot change while ONLINE "
                             f"(STATE, EVENT_MASK, EV operations and MODIFY_FIELDS can)")
        new = copy.copy(p)
        new.entries = list(p.entries)
        if mask & M.MODE:
            new.mode = parse_enum(EvProfileMode, attr.ev_mode, "ev_mode")
        if mask & M.FMT_ID:
            fid = check_int("ev_fmt_profile_id", attr.ev_fmt_profile_id, 0, (1 << 64) - 1)
            fmt = self._fmts.get(fid)
            if fmt is None or fmt.state != ProfileState.ONLINE:
                raise EINVAL(f"{what}: format profile {fid} is {fmt.state.name if fmt else 'INIT'}, not ONLINE")
            new.fmt_id = fid
        if mask & M.COUNT:
            limit = self.device.T.ev.shape[1]
            new.count = check_int(f"{what}: ev_count", attr.ev_count, 1, limit)
            if new.count % self.ev_count_align:
                raise EINVAL(f"{what}: ev_count = {new.count} is not a multiple of ev_count_align = {self.ev_count_align}")
        if mask & M.MIN_ACTIVE:
            new.min_active = check_int(f"{what}: ev_min_active", attr.ev_min_active, 0, (1 << 32) - 1)
        if new.min_active is not None and new.count and new.min_active > new.count:
            raise EINVAL(f"{what}: ev_min_active {new.min_active} exceeds ev_count {new.count}")
        if mask & M.EVENT_MASK:
            allowed = int(EvState.GOOD | EvState.ASSUMED_BAD)
            em = attr.ev_event_mask
            if not isinstance(em, (int, np.integer)) or isinstance(em, bool) or em < 0 or int(em) & ~allowed:
                raise EINVAL(f"{what}: ev_event_mask = {em!r}: only GOOD and ASSUMED_BAD are supported")
            new.event_mask = int(em)
        if mask & M.VENDOR_CFG:
            opts = parse_vendor_cfg(what, attr.vendor_cfg, {"seed": int})
            new.vendor_cfg = bytes(attr.vendor_cfg or b"")
            new.seed = opts.get("seed")
            if new.seed is not None:
                check_int(f"{what}: vendor_cfg seed", new.seed, 0, (1 << 63) - 1)
        if fields_op is not None and fields_op.op == EvFieldsOp.MODIFY_FIELDS:
            if new.fmt_id is None:
                raise EINVAL(f"{what}: set FMT_ID before fields")
            new.fields = self._checked_fields(what, new, fields_op)
        if target != cur:
            self._check_ev_transition(what, p, new, target)
        if target == ProfileState.INIT and cur == ProfileState.INIT:  # staging attributes for OFFLINE
            if mask & M.EV_OP:
                raise EINVAL(f"{what}: EV operations need an EV array (the profile is INIT)")
            if fields_op is not None and fields_op.op == EvFieldsOp.QUERY_FIELDS:
                self._query_fields(what, new, fields_op)
            self._evps[profile_id] = new
            return attr
        # the EV array: built on leaving INIT, rebuilt when what it is made of changed, resized with COUNT
        fresh = cur == ProfileState.INIT and target == ProfileState.OFFLINE
        changed = (new.mode, new.fmt_id, new.fields, new.seed) != (p.mode, p.fmt_id, p.fields, p.seed)
        if target == ProfileState.INIT:
            self._evps[profile_id] = EvProfile()
            return attr
        if fresh or (cur == ProfileState.OFFLINE and changed):
            self._populate(profile_id, new)
        elif cur == ProfileState.OFFLINE and new.count != p.count:
            self._resize(profile_id, new)
        elif cur == ProfileState.ONLINE and changed:
            self._refields_online(profile_id, new, now)
        if fields_op is not None and fields_op.op == EvFieldsOp.QUERY_FIELDS:
            self._query_fields(what, new, fields_op)
        # EV operations run while the profile is OFFLINE when it leaves or enters that state in this call
        new.state = ProfileState.OFFLINE if ProfileState.OFFLINE in (cur, target) else cur
        self._evps[profile_id] = new
        if mask & M.EV_OP:
            self._run_ev_op(profile_id, new, attr.ev_op, now, modify=True)
        if target == ProfileState.ONLINE and new.state != ProfileState.ONLINE:
            self._check_online(what, new)
        new.state = target
        if mask & M.EVENT_MASK:
            for qp in new.qps:
                evset.set_event_mask(self.device.T, qp.index, new.event_mask_bits)
        return attr

    def _ev_attr_args(self, attr, attr_mask, given: dict):
        kw = {"state": ("profile_state", M.STATE), "mode": ("ev_mode", M.MODE), "fmt_id": ("ev_fmt_profile_id", M.FMT_ID),
              "count": ("ev_count", M.COUNT), "min_active": ("ev_min_active", M.MIN_ACTIVE),
              "event_mask": ("ev_event_mask", M.EVENT_MASK), "fields": ("ev_fields_op", M.EV_FIELDS_OP),
              "vendor_cfg": ("vendor_cfg", M.VENDOR_CFG), "seed": ("vendor_cfg", M.VENDOR_CFG)}
        seed, fields = given.pop("seed"), given.get("fields")
        if seed is not None:
            if given.get("vendor_cfg") is not None:
                raise EINVAL("give seed or vendor_cfg, not both (seed is vendor_cfg b'seed=N')")
            check_int("seed", seed, 0, (1 << 63) - 1)
            given["vendor_cfg"] = f"seed={int(seed)}".encode()
        attr, mask = attr_from_keywords(EvProfileAttr, M, attr, attr_mask, given, kw)
        if fields is not None:
            attr.ev_fields_op = EvFieldsOpArgs(EvFieldsOp.MODIFY_FIELDS, list(fields), len(fields))
        return attr, mask

    @staticmethod
    def _fields_op(what: str, attr: EvProfileAttr, mask) -> EvFieldsOpArgs | None:
        if not mask & M.EV_FIELDS_OP:
            return None
        args = attr.ev_fields_op
        if not isinstance(args, EvFieldsOpArgs):
            raise EINVAL(f"{what}: ev_fields_op = {args!r} must be an EvFieldsOpArgs")
        args.op = parse_enum(EvFieldsOp, args.op, "ev_fields_op.op")
        return args

    def _checked_fields(self, what: str, p: EvProfile, args: EvFieldsOpArgs) -> list[EvField]:
        flds = list(args.fields)
        if args.field_count is not None and args.field_count != len(flds):
            raise EINVAL(f"{what}: field_count = {args.field_count!r} but {len(flds)} fields given")
        for n, f in enumerate(flds):
            if not isinstance(f, EvField):
                raise EINVAL(f"{what}: fields[{n}] = {f!r} must be an EvField")
        widths = self._fmts[p.fmt_id].widths
        if len(flds) > len(widths):
            raise E2BIG(f"{what}: {len(flds)} fields, more than the format's {len(widths)} (field_count <= fmt_field_count)")
        try:
            ev_fields.check_fields(widths, flds)
        except ConfigError as e:
            raise EINVAL(f"{what}: {e}") from None
        return flds

    def _effective_fields(self, p: EvProfile) -> list[EvField]:
        """The fields the profile expands with: those given, or for EXP the identity fields of its format."""
        if p.fields is not None:
            return p.fields
        try:
            return ev_fields.identity_fields(self._fmts[p.fmt_id].widths)
        except ConfigError as e:
            raise EINVAL(f"EV profile (format {p.fmt_id}): {e.problem}") from None

    def _check_ev_transition(self, what: str, p: EvProfile, new: EvProfile, target: ProfileState) -> None:
        needs = {"MODE": new.mode is not None, "COUNT": bool(new.count)}
        if new.mode is not None and new.mode != EvProfileMode.AUTO:
            needs["FMT_ID"] = new.fmt_id is not None
            if new.mode == EvProfileMode.GEN:
                needs["MODIFY_FIELDS"] = new.fields is not None
        online = {"MIN_ACTIVE": new.min_active is not None, "EVENT_MASK": new.event_mask is not None}
        check_transition(what, p.state, target, {ProfileState.OFFLINE: needs, ProfileState.ONLINE: online})
        if p.state == ProfileState.ONLINE and p.qps:
            raise EBUSY(f"{what}: {len(p.qps)} QP(s) still use it")
        if p.state == ProfileState.INIT:
            live = [q for q in self._evps.values() if q.state != ProfileState.INIT]
            if len(live) >= EV_MAX_PROFILES:
                raise EINVAL(f"{what}: all {EV_MAX_PROFILES} EV profiles (ev_max_profiles) are in use")
            if sum(q.count for q in live) + new.count > EV_MAX_COUNT:
                raise EINVAL(f"{what}: ev_count {new.count} exceeds the device's free EVs (ev_free_count)")
        if target == ProfileState.OFFLINE and new.mode == EvProfileMode.EXP and new.fields is None:
            self._effective_fields(new)  # the identity fields must exist

    def _check_online(self, what: str, p: EvProfile) -> None:
        """Going ONLINE: the format must be ONLINE and still fit, and an explicit array fully populated."""
        if p.mode == EvProfileMode.AUTO:
            return
        fmt = self._fmts.get(p.fmt_id)
        if fmt is None or fmt.state != ProfileState.ONLINE:
            raise EINVAL(f"{what}: format profile {p.fmt_id} is {fmt.state.name if fmt else 'INIT'}, not ONLINE")
        try:
            ev_fields.check_fields(fmt.widths, self._effective_fields(p))
        except ConfigError as e:
            raise EINVAL(f"{what}: the fields no longer fit format profile {p.fmt_id}: {e}") from None
        missing = sum(1 for e in p.entries if e.ev.unpopulated)
        if missing:
            raise EINVAL(f"{what}: {missing} explicit EV(s) still unpopulated; REPLACE_EV them before ONLINE")
        for k, e in enumerate(p.entries):  # the format may have changed while OFFLINE
            p.entries[k] = self._entry(p, e.ev, e.admin)

    # -- the EV array -------------------------------------------------------------------------
    def _fmt_mode(self, p: EvProfile) -> EvFmtMode:
        fmt = self._fmts.get(p.fmt_id) if p.fmt_id is not None else None
        return fmt.mode if fmt is not None and fmt.mode is not None else EvFmtMode.STEV

    def _compact(self, p: EvProfile) -> bool:
        """SRv6 fields that pull at most 32 bits: the core carries those bits."""
        return ev_fields.raw_bits(self._effective_fields(p)) <= 32

    def _entry(self, p: EvProfile, ev: CtlEv, admin: EvState = EvState.GOOD) -> Entry:
        """The entry for EV `ev` in profile `p`: its expansion and the value the core carries (EINVAL if the EV
        does not fit the fields: bits beyond those they pull set, or the port outside the device)."""
        if ev.unpopulated:
            return Entry()
        if not 1 <= ev.port <= self.device.ports:
            raise EINVAL(f"EV {ev!r}: port {ev.port} outside [1, {self.device.ports}] (phy_port_mask)")
        if p.mode == EvProfileMode.AUTO:
            value = ev.to_int(32)
            return Entry(ev, value, value, admin)
        fmt = self._fmts[p.fmt_id]
        try:
            expanded = ev_fields.expand(ev.raw, 256, fmt.widths, self._effective_fields(p))
        except ConfigError as e:
            raise EINVAL(f"EV {ev!r} does not fit the profile's fields: {e.problem}") from None
        mode = self._fmt_mode(p)
        if mode != EvFmtMode.SRV6:
            value = expanded
        elif self._compact(p):
            value = ev.to_int(32)
        else:
            value = p.tags.get(ev)
            if value is None:
                if p.next_tag >= TAG_LIMIT:
                    raise EINVAL(f"EV {ev!r}: the profile used up its {TAG_LIMIT} SRv6 EV tags")
                value = p.tags[ev] = p.next_tag
                p.next_tag += 1
        return Entry(ev, int(value), int(expanded), admin)

    def _populate(self, profile_id: int, p: EvProfile) -> None:
        """A new array: EXP unpopulated, GEN generated from the fields, AUTO chosen by the device."""
        p.tags, p.next_tag = {}, 1
        if p.mode == EvProfileMode.EXP:
            p.entries = [Entry() for _ in range(p.count)]
            return
        seed = self.device._profile_seed(profile_id) if p.seed is None else p.seed
        n_ports = self.device.ports
        if p.mode == EvProfileMode.AUTO:
            vals = np.random.default_rng(seed).choice(1 << 31, size=p.count, replace=False) + 1
            p.entries = [self._entry(p, CtlEv.from_int(int(v), k % n_ports + 1)) for k, v in enumerate(vals)]
            return
        try:
            raws, ports = ev_fields.generate(p.count, 256, self._effective_fields(p), n_ports, seed)
        except ConfigError as e:
            raise EINVAL(f"EV profile {profile_id}: {e}") from None
        p.entries = [self._entry(p, CtlEv(int(r).to_bytes(32, "big"), int(pt))) for r, pt in zip(raws, ports)]

    def _resize(self, profile_id: int, p: EvProfile) -> None:
        """COUNT changed while OFFLINE: an explicit array keeps its first entries (new ones unpopulated);
        generated and AUTO arrays are made again."""
        if p.mode == EvProfileMode.EXP:
            p.entries = (p.entries + [Entry() for _ in range(p.count)])[:p.count]
        else:
            self._populate(profile_id, p)

    def _refields_online(self, profile_id: int, p: EvProfile, now: int) -> None:
        """MODIFY_FIELDS on an ONLINE profile (``EV_PROFILE_MODIFY_ONLINE``): every EV expanded anew (GEN:
        generated anew, the same ports), the format still fitting; bound QPs take the new values at once."""
        what = f"EV profile {profile_id}"
        fmt = self._fmts.get(p.fmt_id)
        try:
            ev_fields.check_fields(fmt.widths, self._effective_fields(p))
        except ConfigError as e:
            raise EINVAL(f"{what}: {e}") from None
        old = list(p.entries)
        if p.mode == EvProfileMode.GEN:
            self._populate(profile_id, p)
            p.entries = [Entry(e.ev, e.value, e.expanded, o.admin) for e, o in zip(p.entries, old)]
        else:
            p.tags, p.next_tag = {}, 1
            p.entries = [self._entry(p, o.ev, o.admin) for o in old]
        for k, (o, e) in enumerate(zip(old, p.entries)):
            if o.value != e.value:
                self._push_entry(p, k, now)

    def _push_entry(self, p: EvProfile, k: int, now: int) -> None:
        """Entry `k` changed: every bound QP's slot of it takes the new value (`dispatch.replace_ev`)."""
        T = self.device.T
        e = p.entries[k]
        for qp, order in p.slots.items():
            for slot, entry in enumerate(order):
                if entry == k:
                    dispatch.replace_ev(T, qp.index, slot, np.uint32(e.value), e.admin == EvState.DENIED, now)
        self.device._drain()

    def _query_fields(self, what: str, p: EvProfile, args: EvFieldsOpArgs) -> None:
        flds = self._effective_fields(p) if p.mode in (EvProfileMode.EXP, EvProfileMode.GEN) and p.fmt_id is not None else []
        if args.field_count is not None and args.field_count < len(flds):
            args.field_count = len(flds)
            raise E2BIG(f"{what}: QUERY_FIELDS needs room for {len(flds)} fields", required=len(flds))
        args.fields, args.field_count = list(flds), len(flds)

    # -- query --------------------------------------------------------------------------------
    def query_ev_profile(self, profile_id: int, attr_mask: int | None = None,
                         attr: EvProfileAttr | None = None) -> EvProfileAttr:
        """``mrc_ctl_query_ev_profile``: the attributes the mask names (without one: state, mode, format,
        count, min_active, event mask, vendor_cfg). EV_OP (in `attr`): QUERY_EV_STATE fills each entry's
        state, QUERY_EV_ARRAY the array (E2BIG with the count needed when ``entry_count`` is too small);
        EV_FIELDS_OP: QUERY_FIELDS. REPLACE_EV / MODIFY_EV_STATE / MODIFY_FIELDS are refused (EINVAL). A
        profile never configured is in INIT."""
        what = f"EV profile {profile_id}"
        check_int("ev_profile_id", profile_id, 0, (1 << 64) - 1)
        mask = M(QUERY_MASK if attr_mask is None else check_int("attr_mask", attr_mask, 0, (1 << 32) - 1))
        if mask & M.EV_OP and mask & M.EV_FIELDS_OP:
            raise EINVAL(f"{what}: EV_OP and EV_FIELDS_OP are mutually exclusive")
        p = self._evps.get(profile_id, EvProfile())
        out = attr if attr is not None else EvProfileAttr()
        set_masked(out, mask, [(M.STATE | M.CUR_STATE, "profile_state", p.state),
                               (M.STATE | M.CUR_STATE, "cur_profile_state", p.state), (M.MODE, "ev_mode", p.mode),
                               (M.FMT_ID, "ev_fmt_profile_id", p.fmt_id), (M.COUNT, "ev_count", p.count),
                               (M.MIN_ACTIVE, "ev_min_active", p.min_active), (M.EVENT_MASK, "ev_event_mask", p.event_mask),
                               (M.VENDOR_CFG, "vendor_cfg", p.vendor_cfg)])
        if mask & M.EV_FIELDS_OP:
            args = self._fields_op(what, out, mask)
            if args.op != EvFieldsOp.QUERY_FIELDS:
                raise EINVAL(f"{what}: query_ev_profile takes QUERY_FIELDS only")
            self._query_fields(what, p, args)
        if mask & M.EV_OP:
            args = out.ev_op if out.ev_op is not None else EvOpArgs(EvOp.QUERY_EV_ARRAY)
            out.ev_op = args
            self._run_ev_op(profile_id, p, args, 0, modify=False)
        return out
