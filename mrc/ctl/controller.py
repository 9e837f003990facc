"""`Controller`: the profiles (EV format, EV, CC), their state machines and the QPs bound to them
(the package docstring, `mrc.ctl`, describes the whole controller)."""
from __future__ import annotations

import collections
import copy
import warnings

import numpy as np

from mrc.ctl import ev_fields
from mrc.core import dtypes as D, setup
from mrc.ctl.endpoint import EndpointMixin
from mrc.ctl.evops import EvOpsMixin
from mrc.ctl.types import (
    CC_ALGORITHMS, CC_NS_KEYS, EV_MAX_BYTES, CcProfile, EvEventQueue, EvFormatProfile, EvProfile, EvProfileMode, EvState, ProfileState, check_transition,
    parse_enum,
)
from mrc.errors import ConfigError, UsageError
from mrc.ctl.ev_fields import EvField
from mrc.wire.constants import EvMode



class Controller(EvOpsMixin, EndpointMixin):
    """The node's MRC controller (``mrc_ctl.h``). Reach it as ``device.ctl``."""

    def __init__(self, device):
        self.device = device
        self.counters: collections.Counter = collections.Counter()
        self._fmts: dict[int, EvFormatProfile] = {}
        self._evps: dict[int, EvProfile] = {}
        self._ccs: dict[int, CcProfile] = {}
        self._ev_cqs: list[EvEventQueue] = []
        self._init_endpoint(device.ports)  # the endpoint protocol's table and the ports (`endpoint`)

    # -- device -------------------------------------------------------------------
    def query_device(self) -> dict:
        """``mrc_ctl_query_device``: profile limits, supported CC algorithms, the up ports, optional features."""
        used = sum(p.count for p in self._evps.values() if p.state != ProfileState.INIT)
        return {
            "ev_max_profiles": 1024, "ev_max_count": 1 << 20, "ev_free_count": (1 << 20) - used,
            "ev_max_count_profile": self.device.T.ev.shape[1], "ev_count_align": 0, "ev_max_bits": 8 * EV_MAX_BYTES,
            "cc_max_profiles": self.device.T.cc.shape[0], "cc_algorithms": list(CC_ALGORITHMS),
            "port_mask": self.local_ports,
            "opt_attr": ["EV_EVENT", "EV_EXPLICIT", "EV_GENERATED", "EV_PROBE", "EV_EVENT_PRECISE_DROP_CNT",
                         "EV_PROFILE_MODIFY_ONLINE", "CC_PROFILE_MODIFY_ONLINE"],
        }

    # -- EV format profiles -----------------------------------------------------------
    def modify_ev_format_profile(self, profile_id: int, *, state: str | None = None, mode: str | EvMode | None = None,
                                 fields: list[int] | None = None) -> None:
        """``mrc_ctl_modify_ev_format_profile``: MODE (STEV / SRv6 / UDP) and field widths, and the state."""
        what = f"EV format profile {profile_id}"
        p = self._fmts.setdefault(profile_id, EvFormatProfile())
        target = parse_enum(ProfileState, state, "ev_format.state") if state is not None else p.state
        new = copy.deepcopy(p)
        if p.state == ProfileState.ONLINE and (mode is not None or fields is not None):
            raise UsageError(f"{what}: {'MODE' if mode is not None else 'MODIFY_FIELDS'} cannot change while ONLINE")
        if mode is not None:
            new.mode = parse_enum(EvMode, mode, "ev_format.mode")
            if new.widths:
                ev_fields.check_format(new.mode, new.widths)
        if fields is not None:
            if not (p.state == ProfileState.OFFLINE or (p.state == ProfileState.INIT and target == ProfileState.OFFLINE)):
                raise UsageError(f"{what}: MODIFY_FIELDS needs OFFLINE (it is {p.state.name})")
            if new.mode is None:
                raise UsageError(f"{what}: set MODE before fields")
            ev_fields.check_format(new.mode, list(fields))
            new.widths = list(fields)
        if target != p.state:
            check_transition(what, p.state, target, {
                ProfileState.OFFLINE: {"MODE": new.mode},
                ProfileState.ONLINE: {"MODIFY_FIELDS": new.widths or None},
            })
            users = [k for k, ep in self._evps.items() if ep.fmt_id == profile_id and ep.state == ProfileState.ONLINE]
            if p.state == ProfileState.ONLINE and users:
                raise UsageError(f"{what}: ONLINE EV profile(s) {users} use it (EBUSY)")
            new.state = target
            if target == ProfileState.INIT:
                new = EvFormatProfile()
        self._fmts[profile_id] = new

    def query_ev_format_profile(self, profile_id: int) -> dict:
        """State, mode and field widths of an EV format profile."""
        p = self._get(self._fmts, profile_id, "EV format profile")
        return {"state": p.state.name, "mode": p.mode.name if p.mode is not None else None, "fields": list(p.widths)}

    # -- EV profiles --------------------------------------------------------------------
    def modify_ev_profile(self, profile_id: int, *, state: str | None = None, mode: str | EvProfileMode | None = None,
                          fmt_id: int | None = None, count: int | None = None, min_active: int | None = None,
                          event_mask: int | None = None, fields: list[EvField] | None = None, seed: int | None = None) -> None:
        """mrc_ctl_modify_ev_profile: every attribute given is checked before any is applied."""
        what = f"EV profile {profile_id}"
        p = self._evps.setdefault(profile_id, EvProfile())
        target = parse_enum(ProfileState, state, "ev_profile.state") if state is not None else p.state
        if p.state == ProfileState.ONLINE:
            named = [k for k, v in (("MODE", mode), ("FMT_ID", fmt_id), ("COUNT", count), ("MIN_ACTIVE", min_active),
                                    ("MODIFY_FIELDS", fields), ("seed", seed)) if v is not None]
            if named:
                raise UsageError(f"{what}: {', '.join(named)} cannot change while ONLINE "
                                 f"(only STATE, EVENT_MASK and EV operations)")
        new = copy.copy(p)
        if mode is not None:
            new.mode = parse_enum(EvProfileMode, mode, "ev_profile.mode")
        if fmt_id is not None:
            fmt = self._get(self._fmts, fmt_id, "EV format profile")
            if fmt.state != ProfileState.ONLINE:
                raise UsageError(f"{what}: format profile {fmt_id} is {fmt.state.name}, not ONLINE")
            new.fmt_id = fmt_id
        if count is not None:
            limit = self.device.T.ev.shape[1]
            if not isinstance(count, (int, np.integer)) or not 1 <= count <= limit:
                raise UsageError(f"{what}: ev_count {count!r} outside [1, {limit}] (ev_max_count_profile)")
            new.count = int(count)
        if min_active is not None:
            if not isinstance(min_active, (int, np.integer)) or min_active < 0:
                raise UsageError(f"{what}: ev_min_active {min_active!r} must be a non-negative integer")
            new.min_active = int(min_active)
        if new.min_active is not None and new.count and new.min_active > new.count:
            raise UsageError(f"{what}: ev_min_active {new.min_active} exceeds ev_count {new.count}")
        if event_mask is not None:
            allowed = int(EvState.GOOD | EvState.ASSUMED_BAD)
            if not isinstance(event_mask, (int, np.integer)) or event_mask < 0 or event_mask & ~allowed:
                raise UsageError(f"{what}: event_mask {event_mask!r}: only GOOD and ASSUMED_BAD are supported")
            new.event_mask = int(event_mask)
        if fields is not None:
            if new.fmt_id is None:
                raise UsageError(f"{what}: set FMT_ID before fields")
            self._check_fields(new, list(fields))
            new.fields = list(fields)
        if seed is not None:
            new.seed = int(seed)
        if target != p.state:
            needs = {"MODE": new.mode, "COUNT": new.count or None}
            if new.mode is not None and new.mode != EvProfileMode.AUTO:
                needs |= {"FMT_ID": new.fmt_id, "MODIFY_FIELDS": new.fields or None}
            online = {"MIN_ACTIVE": new.min_active, "EVENT_MASK": new.event_mask}
            check_transition(what, p.state, target, {ProfileState.OFFLINE: needs, ProfileState.ONLINE: online})
            if p.state == ProfileState.ONLINE and p.qps:
                raise UsageError(f"{what}: {len(p.qps)} QP(s) still use it (EBUSY)")
        rebuild = new.mode != p.mode or new.fmt_id != p.fmt_id or new.fields != p.fields or new.seed != p.seed
        if target == ProfileState.INIT:
            new = EvProfile()
        elif p.state == ProfileState.INIT and target == ProfileState.OFFLINE:
            self._populate(profile_id, new, resize_only=False)
        elif p.state == ProfileState.OFFLINE and (rebuild or new.count != p.count):
            self._populate(profile_id, new, resize_only=not rebuild)
        if target == ProfileState.ONLINE and p.state != ProfileState.ONLINE:
            self._check_online(what, new)
        new.state = target
        self._evps[profile_id] = new
        if event_mask is not None:
            for qp in new.qps:
                self.device.T.qp[qp.index]["ev_event_mask"] = new.event_mask_bits

    def _check_fields(self, p: EvProfile, fields: list[EvField]) -> None:
        ev_fields.check_fields(self._fmts[p.fmt_id].widths, fields, max_raw_bits=self._raw_limit(p))

    def _check_online(self, what: str, p: EvProfile) -> None:
        """Going ONLINE: the format must be ONLINE and still fit, and an explicit array fully populated."""
        if p.mode == EvProfileMode.AUTO:
            return
        fmt = self._get(self._fmts, p.fmt_id, "EV format profile")
        if fmt.state != ProfileState.ONLINE:
            raise UsageError(f"{what}: format profile {p.fmt_id} is {fmt.state.name}, not ONLINE")
        try:
            self._check_fields(p, p.fields)
        except ConfigError as e:
            raise UsageError(f"{what}: the fields no longer fit format profile {p.fmt_id}: {e}") from None
        missing = sum(1 for r in p.raws if r is None)
        if missing:
            raise UsageError(f"{what}: {missing} explicit EV(s) still unpopulated; REPLACE_EV them before ONLINE")
        pairs = [self._expand(p, raw, k) for k, raw in enumerate(p.raws)]  # the format may have changed
        p.values, p.expanded = [v for v, _ in pairs], [x for _, x in pairs]

    def _container_bits(self, p: EvProfile, fields: list[EvField] | None = None) -> int:
        """Bits of the raw EV container: 16 (UDP), 32 (STEV, compact SRv6) or 256 (wide SRv6)."""
        mode = self._wire_mode(p)
        if mode == EvMode.UDP:
            return 16
        if mode == EvMode.SRV6 and ev_fields.raw_bits(p.fields if fields is None else fields) > 32:
            return 8 * EV_MAX_BYTES
        return 32

    def _raw_limit(self, p: EvProfile) -> int:
        """Most raw bits a profile of this format may pull (ev_max_bits for the mode)."""
        mode = self._wire_mode(p)
        return 16 if mode == EvMode.UDP else (8 * EV_MAX_BYTES if mode == EvMode.SRV6 else 32)

    def _index_valued(self, p: EvProfile) -> bool:
        """Wide SRv6 profiles: the core carries the entry index, not the raw EV."""
        return self._container_bits(p) > 32

    def _raw_int(self, p: EvProfile, raw) -> int:
        """A raw EV given as bytes (the container's leading bytes) becomes the container as a number."""
        bits = self._container_bits(p)
        if isinstance(raw, (bytes, bytearray)):
            if len(raw) > bits // 8:
                raise UsageError(f"EV {bytes(raw).hex()} is longer than the {bits // 8}-byte EV container")
            return int.from_bytes(bytes(raw).ljust(bits // 8, b"\0"), "big")
        return raw

    def _wire_mode(self, p: EvProfile) -> EvMode:
        fmt = self._fmts.get(p.fmt_id) if p.fmt_id is not None else None
        return fmt.mode if fmt is not None and fmt.mode is not None else EvMode.STEV

    def _expand(self, p: EvProfile, raw: int, index: int) -> tuple[int, int]:
        """(the 32-bit EV the core carries, the wire expansion) of the raw EV of entry `index`."""
        expanded = ev_fields.expand(raw, self._container_bits(p), self._fmts[p.fmt_id].widths, p.fields)
        if self._wire_mode(p) != EvMode.SRV6:
            return expanded, expanded
        return (index if self._index_valued(p) else int(raw)), expanded

    def _populate(self, profile_id: int, p: EvProfile, resize_only: bool) -> None:
        n_ports = self.device.ports
        if p.mode == EvProfileMode.EXP:
            keep = p.count if resize_only else 0
            for name in ("raws", "values", "expanded"):
                setattr(p, name, (list(getattr(p, name)[:keep]) + [None] * p.count)[:p.count])
            p.ports = (list(p.ports[:keep]) + [0] * p.count)[:p.count]
            p.admin = (list(p.admin[:keep]) + [EvState.GOOD] * p.count)[:p.count]
            return
        seed = self.device._profile_seed(profile_id) if p.seed is None else p.seed
        p.admin = [EvState.GOOD] * p.count
        if p.mode == EvProfileMode.AUTO:
            rng = np.random.default_rng(seed)
            vals = rng.choice(1 << 31, size=p.count, replace=False) + 1
            p.raws = [int(v) for v in vals]
            p.values, p.expanded = list(p.raws), list(p.raws)
            p.ports = [k % n_ports + 1 for k in range(p.count)]
            return
        raws, ports = ev_fields.generate(p.count, self._container_bits(p), p.fields, n_ports, seed)
        p.raws = [int(r) for r in raws]
        pairs = [self._expand(p, r, k) for k, r in enumerate(p.raws)]
        p.values, p.expanded = [v for v, _ in pairs], [x for _, x in pairs]
        p.ports = [int(x) for x in ports]

    def query_ev_profile(self, profile_id: int) -> dict:
        """State, mode, format, count, min_active, event mask, fields and bound QPs of an EV profile."""
        p = self._get(self._evps, profile_id, "EV profile")
        return {"state": p.state.name, "mode": p.mode.name if p.mode else None, "fmt_id": p.fmt_id, "count": p.count,
                "min_active": p.min_active, "event_mask": p.event_mask, "fields": list(p.fields), "qps": len(p.qps)}

    # -- CC profiles ----------------------------------------------------------------------
    def modify_cc_profile(self, profile_id: int, *, state: str | None = None, algorithm: str | None = ...,
                          config: dict | None = None) -> None:
        """CC profile: algorithm "uet-1.0-nscc" (NSCC) or None/"none" (fixed window, max_cwnd bytes).

        `config` holds ``mrc_ctl_cc_nscc_cfg`` fields, times in ns named ``*_ns`` (``base_rtt_ns``,
        ``target_delay_ns``, ``adjust_period_threshold_ns``, ``qa_threshold_ns``,
        ``fast_increase_delay_ns``); other fields as the core's CC row (`mrc.core.dtypes.CC`)."""
        what = f"CC profile {profile_id}"
        p = self._ccs.setdefault(profile_id, CcProfile())
        target = parse_enum(ProfileState, state, "cc_profile.state") if state is not None else p.state
        algo, cfg = p.algorithm, p.config
        if algorithm is not ...:
            if p.state == ProfileState.ONLINE:
                raise UsageError(f"{what}: ALGORITHM cannot change while ONLINE")
            algo = "none" if algorithm is None else algorithm
            if algo not in CC_ALGORITHMS:
                raise UsageError(f"{what}: algorithm {algorithm!r} not supported (one of {CC_ALGORITHMS} or None)")
        if config is not None:
            if algo is None:
                raise UsageError(f"{what}: set ALGORITHM before CONFIG")
            cfg = self._cc_config(profile_id, algo, dict(config))
        elif algo != p.algorithm:
            cfg = {}  # a config belongs to its algorithm
        if target != p.state:
            check_transition(what, p.state, target, {ProfileState.OFFLINE: {"ALGORITHM": algo},
                                                      ProfileState.ONLINE: {"CONFIG": cfg or None}})
            if p.state == ProfileState.ONLINE and p.qps:
                raise UsageError(f"{what}: {len(p.qps)} QP(s) still use it (EBUSY)")
        row = p.row
        if target == ProfileState.ONLINE and row < 0:
            used = {c.row for c in self._ccs.values()}
            free = [r for r in range(self.device.T.cc.shape[0]) if r not in used]
            if not free:
                raise UsageError(f"{what}: all {self.device.T.cc.shape[0]} CC profile slots in use")
            row = free[0]
        if target == ProfileState.INIT:
            self._ccs[profile_id] = CcProfile()
            return
        p.algorithm, p.config, p.row, p.state = algo, cfg, row, target
        if target == ProfileState.ONLINE:
            setup.write_cc(self.device.T, p.row, p.config)

    def _cc_config(self, profile_id: int, algorithm: str, cfg: dict) -> dict:
        """mrc_ctl_cc_nscc_cfg fields (times in ns, as the C struct) -> a CC row (times in ps).

        The time fields are spelled with their unit (``base_rtt_ns``, ``target_delay_ns``, ...);
        the bare C names (``base_rtt``) still work and warn (docs/library.md, "Units")."""
        dev = self.device
        for k in CC_NS_KEYS:
            if k + "_ns" in cfg:
                if k in cfg:
                    raise UsageError(f"CC profile {profile_id}: config gives both {k}_ns and {k} (the same field)")
                cfg[k] = cfg.pop(k + "_ns")
            elif k in cfg:
                warnings.warn(f"CC profile config key {k!r} is deprecated; use {k}_ns (the same value, in ns)",
                              DeprecationWarning, stacklevel=4)
        for k in cfg:
            if k not in D.CC.names or k == "algorithm":
                known = sorted(f"{n}_ns" if n in CC_NS_KEYS else n for n in D.CC.names if n != "algorithm")
                raise UsageError(f"CC profile {profile_id}: unknown config field {k!r} (known: {', '.join(known)})")
        for k in CC_NS_KEYS:
            if k in cfg and (not isinstance(cfg[k], (int, np.integer)) or isinstance(cfg[k], bool) or cfg[k] < 0):
                raise UsageError(f"CC profile {profile_id}: config {k}_ns = {cfg[k]!r} must be a non-negative integer")
        base_ns = int(cfg.pop("base_rtt", 8000))
        rate = dev.port_rate_bps * dev.ports
        conv = {k: int(v) * 1000 for k, v in cfg.items() if k in CC_NS_KEYS}
        rest = {k: v for k, v in cfg.items() if k not in CC_NS_KEYS}
        try:
            if algorithm == "none":
                window = rest.pop("max_cwnd", None)
                if window is None:
                    raise UsageError(f"CC profile {profile_id}: algorithm none needs max_cwnd (the fixed window, bytes)")
                prof = setup.fixed_window_profile(window_bytes=int(window), base_rtt_ps=base_ns * 1000, mtu=dev.mtu)
            else:
                return setup.nscc_profile(mtu=dev.mtu, rate_bps=rate, base_rtt_ps=base_ns * 1000, **rest, **conv)
            prof.update(rest)
            prof.update(conv)
            return setup._checked_cc(prof)
        except ConfigError as e:
            raise UsageError(f"CC profile {profile_id}: config {e.key} = {e.value!r}: {e.problem}") from None

    def query_cc_profile(self, profile_id: int) -> dict:
        """State, algorithm, bound QPs, and ``config``: the core's CC row (its field names, times in ps)."""
        p = self._get(self._ccs, profile_id, "CC profile")
        return {"state": p.state.name, "algorithm": p.algorithm, "config": dict(p.config), "qps": len(p.qps)}

    # -- one-call setup ---------------------------------------------------------------------
    def setup_ev_profile(self, profile_id: int = 1, *, count: int = 16, min_active: int | None = None,
                         event_mask: int = EvState.GOOD | EvState.ASSUMED_BAD, seed: int | None = None) -> list[int]:
        """An AUTO EV profile (the device picks `count` EVs, round robin over its ports) taken
        INIT -> OFFLINE -> ONLINE in one call; returns its EVs. `min_active` defaults to count / 4
        (the OCP example), `event_mask` to both event states. Explicit (EXP) and generated (GEN)
        profiles need a format and fields: use `modify_ev_format_profile` / `modify_ev_profile`."""
        self.modify_ev_profile(profile_id, mode="AUTO", count=count, seed=seed,
                               min_active=max(1, count // 4) if min_active is None else min_active,
                               event_mask=int(event_mask), state="OFFLINE")
        self.modify_ev_profile(profile_id, state="ONLINE")
        return [e["ev"] for e in self.query_ev_array(profile_id)]

    def setup_cc_profile(self, profile_id: int = 1, *, algorithm: str = "uet-1.0-nscc", **config) -> None:
        """A CC profile taken INIT -> OFFLINE -> ONLINE in one call. `config` holds
        ``mrc_ctl_cc_nscc_cfg`` fields (times in ns, named ``*_ns``; unset fields take the defaults of
        `mrc.core.setup`: base RTT 8 us, the rest scaled from it and the device's rate). Algorithm
        "none" is a fixed window and needs ``max_cwnd`` (bytes)."""
        self.modify_cc_profile(profile_id, algorithm=algorithm, state="OFFLINE")
        self.modify_cc_profile(profile_id, config=config or {"base_rtt_ns": 8000}, state="ONLINE")

    # -- binding profiles to QPs -----------------------------------------------------------
    def _ev_profile(self, profile_id: int) -> EvProfile:
        return self._get(self._evps, profile_id, "EV profile")

    def _cc_row(self, profile_id: int) -> int:
        return self._get(self._ccs, profile_id, "CC profile").row

    def _bind_qp(self, qp, ev_profile_id: int, cc_profile_id: int) -> None:
        p = self._get(self._evps, ev_profile_id, "EV profile")
        c = self._get(self._ccs, cc_profile_id, "CC profile")
        if p.state != ProfileState.ONLINE:
            raise UsageError(f"modify_qp to INIT: EV profile {ev_profile_id} is {p.state.name}, not ONLINE")
        if c.state != ProfileState.ONLINE:
            raise UsageError(f"modify_qp to INIT: CC profile {cc_profile_id} is {c.state.name}, not ONLINE")
        self._unbind_qp(qp)
        T = self.device.T
        q = T.qp[qp.index]
        order = sorted(range(p.count), key=lambda k: (p.ports[k], k))
        row = T.ev[q["ev_row"]]
        row[:] = np.zeros(1, dtype=D.EV)[0]
        for slot, k in enumerate(order):
            row[slot]["ev"] = p.values[k]
            row[slot]["plane"] = p.ports[k] - 1
            row[slot]["state"] = D.EV_DENIED if p.admin[k] == EvState.DENIED else D.EV_GOOD
        q["n_ev"] = p.count
        q["n_planes"] = self.device.ports
        q["cc_profile"] = c.row
        q["ev_event_mask"] = p.event_mask_bits
        q["ev_active_target"] = min(max(self.device.ports, p.count // 2), p.count)
        p.qps.add(qp)
        c.qps.add(qp)

    def _unbind_qp(self, qp) -> None:
        for prof in (*self._evps.values(), *self._ccs.values()):
            prof.qps.discard(qp)

    # -- helpers ---------------------------------------------------------------------------------
    @staticmethod
    def _get(table: dict, key: int, what: str):
        if key not in table:
            raise UsageError(f"{what} {key} does not exist")
        return table[key]

