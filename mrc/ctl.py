"""The controller API, in the spirit of OCP ``mrc_ctl.h``: one privileged controller per node.

`Controller` (``device.ctl``) manages three kinds of profile, each with the
state machine INIT -> OFFLINE -> ONLINE -> OFFLINE -> INIT:

- EV format profiles: mode (STEV / SRv6 / UDP) and field widths;
- EV profiles: mode AUTO / EXP / GEN, format, ``ev_count``,
  ``ev_min_active``, event mask, fields (`mrc.ev_fields.EvField`) and the
  EV array (explicit entries start unpopulated and must be replaced before
  ONLINE); EV operations REPLACE_EV, MODIFY_EV_STATE, QUERY_EV_STATE,
  QUERY_EV_ARRAY;
- CC profiles: algorithm ("uet-1.0-nscc" or None / "none") and its config.

It also delivers EV events (transitions to ASSUMED_BAD and GOOD, with drop
counts; the event queue never overruns: surplus events are counted and the
count rides on the next delivered event), sends endpoint requests (EV probes
with their RTT; port status updates) and answers those of peers.

Profiles are bound to a QP at RESET -> INIT (`QueuePair.modify("INIT",
ev_profile_id=..., cc_profile_id=...)`). Each QP keeps its own copy of the
EV states; controller state changes (DENIED, GOOD) reach every QP using the
profile at once.
"""
from __future__ import annotations

import collections
import enum
from dataclasses import dataclass, field

import numpy as np

from mrc import ev_fields
from mrc.core import dispatch, dtypes as D, evset, setup
from mrc.errors import UsageError
from mrc.ev_fields import EvField
from mrc.wire.constants import DSCP_CONTROL, ENDPOINT_QPN, EndpointOp, EvMode, Opcode
from mrc.wire.records import PKT


class ProfileState(enum.IntEnum):
    INIT = 0
    OFFLINE = 1
    ONLINE = 2


class EvProfileMode(enum.IntEnum):
    AUTO = 1 << 0
    EXP = 1 << 1
    GEN = 1 << 2


class EvState(enum.IntFlag):
    """mrc_ctl_ev_state values."""

    GOOD = 1 << 0
    ASSUMED_BAD = 1 << 1
    DENIED = 1 << 2
    UNKNOWN = 1 << 31


_CORE_TO_CTL = {D.EV_GOOD: EvState.GOOD, D.EV_SKIP: EvState.GOOD, D.EV_ASSUMED_BAD: EvState.ASSUMED_BAD,
                D.EV_DENIED: EvState.DENIED}
CC_ALGORITHMS = ("uet-1.0-nscc", "none")
AUTO_EV_COUNT = 256


@dataclass
class EvFormatProfile:
    state: ProfileState = ProfileState.INIT
    mode: EvMode | None = None
    widths: list[int] = field(default_factory=list)


@dataclass
class EvProfile:
    state: ProfileState = ProfileState.INIT
    mode: EvProfileMode | None = None
    fmt_id: int | None = None
    count: int = 0
    min_active: int = 0
    event_mask: int = 0
    fields: list[EvField] = field(default_factory=list)
    values: list = field(default_factory=list)  # compact 32-bit EV per entry (None: unpopulated)
    expanded: list = field(default_factory=list)  # wire value per entry (SRv6: the address bits)
    ports: list[int] = field(default_factory=list)  # 1-based
    admin: list[EvState] = field(default_factory=list)
    qps: set = field(default_factory=set)

    @property
    def event_mask_bits(self) -> int:
        bits = 0
        if self.event_mask & EvState.ASSUMED_BAD:
            bits |= 1
        if self.event_mask & EvState.GOOD:
            bits |= 2
        return bits


@dataclass
class CcProfile:
    state: ProfileState = ProfileState.INIT
    algorithm: str | None = None
    config: dict = field(default_factory=dict)
    row: int = -1


@dataclass(frozen=True)
class EvEvent:
    profile_id: int
    ev: int
    port: int
    drop_count: int
    state: EvState


class EvEventQueue:
    """An EV Event CQ: bounded, never overruns; events beyond `cqe` are counted in drop_count."""

    def __init__(self, cqe: int):
        if cqe < 1:
            raise UsageError(f"create_ev_event_cq: cqe must be at least 1, got {cqe}")
        self.cqe = cqe
        self._q: collections.deque[EvEvent] = collections.deque()
        self._dropped = 0

    def _push(self, ev: EvEvent) -> None:
        if len(self._q) >= self.cqe:
            self._dropped += 1
            return
        self._q.append(EvEvent(ev.profile_id, ev.ev, ev.port, self._dropped, ev.state))
        self._dropped = 0

    def poll(self, num_entries: int = 16) -> list[EvEvent]:
        out = []
        while self._q and len(out) < num_entries:
            out.append(self._q.popleft())
        return out


@dataclass(frozen=True)
class EpRequest:
    """An endpoint request (mrc_ctl_ep_req): to `dest`, leaving on `port` (1-based) with EV `ev`."""

    req_id: int
    dest: object
    port: int
    ev: int
    port_status: int = 0


@dataclass(frozen=True)
class EpResponse:
    req_id: int
    port: int
    rtt: int  # ns
    adj_svc_time: bool = False


@dataclass
class EpBatch:
    op: EndpointOp
    requests: list[EpRequest]
    deadline: int
    sent: dict = field(default_factory=dict)  # req_id -> send time (ps)
    responses: list[EpResponse] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return len(self.responses) == len(self.requests)


class Controller:
    """The node's MRC controller (``mrc_ctl.h``). Reach it as ``device.ctl``."""

    def __init__(self, device):
        self.device = device
        self.counters: collections.Counter = collections.Counter()
        self._fmts: dict[int, EvFormatProfile] = {}
        self._evps: dict[int, EvProfile] = {}
        self._ccs: dict[int, CcProfile] = {}
        self._ev_cqs: list[EvEventQueue] = []
        self._ep_out: collections.deque = collections.deque()  # (PKT record, dest, port)
        self._batches: list[EpBatch] = []
        self.local_ports = (1 << device.ports) - 1
        self.admin_down = 0

    # -- device -------------------------------------------------------------------
    def query_device(self) -> dict:
        used = sum(p.count for p in self._evps.values() if p.state != ProfileState.INIT)
        return {
            "ev_max_profiles": 1024, "ev_max_count": 1 << 20, "ev_free_count": (1 << 20) - used,
            "ev_max_count_profile": self.device.T.ev.shape[1], "ev_count_align": 0, "ev_max_bits": 32,
            "cc_max_profiles": self.device.T.cc.shape[0], "cc_algorithms": list(CC_ALGORITHMS),
            "port_mask": self.local_ports, "opt_attr": ["EV_EVENT", "EV_EXPLICIT", "EV_GENERATED", "EV_PROBE",
                                                        "EV_EVENT_PRECISE_DROP_CNT", "EV_PROFILE_MODIFY_ONLINE"],
        }

    def query_port(self, port: int) -> dict:
        self._check_port(port)
        return {"admin_state": "DISABLED" if self.admin_down >> (port - 1) & 1 else "ENABLED",
                "up": bool(self.local_ports >> (port - 1) & 1)}

    def modify_port(self, port: int, admin_enabled: bool, now: int = 0) -> None:
        """Administratively disable or enable a port (reported as down while disabled)."""
        self._check_port(port)
        bit = 1 << (port - 1)
        self.admin_down = (self.admin_down & ~bit) if admin_enabled else (self.admin_down | bit)
        self._set_local_port(port, admin_enabled, now)

    def _check_port(self, port: int) -> None:
        if not 1 <= port <= self.device.ports:
            raise UsageError(f"port {port} outside [1, {self.device.ports}]")

    # -- EV format profiles -----------------------------------------------------------
    def modify_ev_format_profile(self, profile_id: int, *, state: str | None = None, mode: str | EvMode | None = None,
                                 fields: list[int] | None = None) -> None:
        p = self._fmts.setdefault(profile_id, EvFormatProfile())
        if mode is not None:
            if p.state == ProfileState.ONLINE:
                raise UsageError(f"EV format profile {profile_id}: MODE cannot change while ONLINE")
            p.mode = mode if isinstance(mode, EvMode) else _enum(EvMode, mode, "ev_format.mode")
        if fields is not None:
            if p.state != ProfileState.OFFLINE:
                raise UsageError(f"EV format profile {profile_id}: MODIFY_FIELDS needs OFFLINE (it is {p.state.name})")
            if p.mode is None:
                raise UsageError(f"EV format profile {profile_id}: set MODE before fields")
            ev_fields.check_format(p.mode, list(fields))
            p.widths = list(fields)
        if state is not None:
            self._transition(f"EV format profile {profile_id}", p, state, {
                ProfileState.OFFLINE: lambda: p.mode is not None or _missing("MODE"),
                ProfileState.ONLINE: lambda: bool(p.widths) or _missing("MODIFY_FIELDS"),
            })
            if p.state == ProfileState.OFFLINE and any(ep.fmt_id == profile_id and ep.state == ProfileState.ONLINE for ep in self._evps.values()):
                p.state = ProfileState.ONLINE
                raise UsageError(f"EV format profile {profile_id}: EV profiles using it are ONLINE (EBUSY)")

    def query_ev_format_profile(self, profile_id: int) -> dict:
        p = self._get(self._fmts, profile_id, "EV format profile")
        return {"state": p.state.name, "mode": p.mode.name if p.mode is not None else None, "fields": list(p.widths)}

    # -- EV profiles --------------------------------------------------------------------
    def modify_ev_profile(self, profile_id: int, *, state: str | None = None, mode: str | EvProfileMode | None = None,
                          fmt_id: int | None = None, count: int | None = None, min_active: int | None = None,
                          event_mask: int | None = None, fields: list[EvField] | None = None, seed: int | None = None) -> None:
        p = self._evps.setdefault(profile_id, EvProfile())
        online = p.state == ProfileState.ONLINE
        if online and any(x is not None for x in (mode, fmt_id, count, min_active, fields)):
            raise UsageError(f"EV profile {profile_id}: only STATE, EVENT_MASK and EV operations while ONLINE")
        if mode is not None:
            p.mode = mode if isinstance(mode, EvProfileMode) else _enum(EvProfileMode, mode, "ev_profile.mode")
        if fmt_id is not None:
            fmt = self._get(self._fmts, fmt_id, "EV format profile")
            if fmt.state != ProfileState.ONLINE:
                raise UsageError(f"EV profile {profile_id}: format profile {fmt_id} is {fmt.state.name}, not ONLINE")
            p.fmt_id = fmt_id
        if count is not None:
            limit = self.device.T.ev.shape[1]
            if not 1 <= count <= limit:
                raise UsageError(f"EV profile {profile_id}: ev_count {count} outside [1, {limit}] (ev_max_count_profile)")
            p.count = count
        if min_active is not None:
            if not 0 <= min_active <= (p.count or 0):
                raise UsageError(f"EV profile {profile_id}: ev_min_active {min_active} exceeds ev_count {p.count}")
            p.min_active = min_active
        if event_mask is not None:
            if event_mask & ~int(EvState.GOOD | EvState.ASSUMED_BAD):
                raise UsageError(f"EV profile {profile_id}: event_mask {event_mask:#x}: only GOOD and ASSUMED_BAD are supported")
            p.event_mask = event_mask
            for qp in p.qps:
                self.device.T.qp[qp.index]["ev_event_mask"] = p.event_mask_bits
        if fields is not None:
            if p.fmt_id is None:
                raise UsageError(f"EV profile {profile_id}: set FMT_ID before fields")
            ev_fields.check_fields(self._fmts[p.fmt_id].widths, list(fields))
            p.fields = list(fields)
        if state is not None:
            target = _enum(ProfileState, state, "ev_profile.state")
            if target == ProfileState.OFFLINE and p.state == ProfileState.INIT:
                needs = {"MODE": p.mode, "COUNT": p.count or None}
                if p.mode != EvProfileMode.AUTO:
                    needs |= {"FMT_ID": p.fmt_id, "MODIFY_FIELDS": p.fields or None}
                for k, v in needs.items():
                    if v is None:
                        raise UsageError(f"EV profile {profile_id}: {k} is required to go OFFLINE")
                self._populate(profile_id, p, seed)
            if target == ProfileState.ONLINE and p.mode == EvProfileMode.EXP and any(v is None for v in p.values):
                raise UsageError(f"EV profile {profile_id}: explicit EVs still unpopulated; REPLACE_EV them before ONLINE")
            if target in (ProfileState.OFFLINE, ProfileState.INIT) and p.state == ProfileState.ONLINE and p.qps:
                raise UsageError(f"EV profile {profile_id}: {len(p.qps)} QP(s) still use it (EBUSY)")
            self._transition(f"EV profile {profile_id}", p, target, {})

    def _container_bits(self, p: EvProfile) -> int:
        mode = self._fmts[p.fmt_id].mode if p.fmt_id is not None else EvMode.STEV
        return 32 if mode in (EvMode.STEV, EvMode.SRV6) else 16

    def _wire_mode(self, p: EvProfile) -> EvMode:
        return self._fmts[p.fmt_id].mode if p.fmt_id is not None else EvMode.STEV

    def _populate(self, profile_id: int, p: EvProfile, seed: int | None) -> None:
        n_ports = self.device.ports
        seed = self.device.seed * 1_000_003 + profile_id if seed is None else seed
        p.admin = [EvState.GOOD] * p.count
        if p.mode == EvProfileMode.EXP:
            p.values, p.expanded, p.ports = [None] * p.count, [None] * p.count, [0] * p.count
            return
        if p.mode == EvProfileMode.AUTO:
            rng = np.random.default_rng(seed)
            vals = rng.choice(1 << 31, size=p.count, replace=False) + 1
            p.values = [int(v) for v in vals]
            p.expanded = list(p.values)
            p.ports = [k % n_ports + 1 for k in range(p.count)]
            return
        bits = self._container_bits(p)
        raws, ports = ev_fields.generate(p.count, bits, p.fields, n_ports, seed)
        widths = self._fmts[p.fmt_id].widths
        p.expanded = [ev_fields.expand(int(r), bits, widths, p.fields) for r in raws]
        srv6 = self._wire_mode(p) == EvMode.SRV6
        p.values = [int(r) if srv6 else e for r, e in zip(raws, p.expanded)]
        p.ports = [int(x) for x in ports]

    def replace_ev(self, profile_id: int, ev: int | None, new_ev: int, port: int, *, index: int | None = None,
                   all_copies: bool = False, state: EvState = EvState.GOOD) -> int:
        """REPLACE_EV: put `new_ev` (a raw EV, expanded with the profile's fields) on `port`
        in place of `ev` (or of entry `index`; ``ev=None`` fills an unpopulated entry). Returns entries replaced."""
        p = self._get(self._evps, profile_id, "EV profile")
        if p.mode == EvProfileMode.AUTO:
            raise UsageError(f"EV profile {profile_id}: AUTO profiles have no controller-provided EVs")
        if p.state == ProfileState.INIT:
            raise UsageError(f"EV profile {profile_id}: REPLACE_EV needs OFFLINE (or ONLINE with MODIFY_ONLINE)")
        self._check_port(port)
        bits = self._container_bits(p)
        if not 0 <= new_ev < 1 << bits:
            raise UsageError(f"EV profile {profile_id}: EV {new_ev:#x} is wider than {bits} bits")
        expanded = ev_fields.expand(new_ev, bits, self._fmts[p.fmt_id].widths, p.fields)
        value = new_ev if self._wire_mode(p) == EvMode.SRV6 else expanded
        if value in [v for v in p.values if v is not None] and (ev is None or value != ev):
            raise UsageError(f"EV profile {profile_id}: EV {value:#x} is already in the array (EVs must be unique per QP)")
        idxs = [index] if index is not None else [k for k, v in enumerate(p.values) if v == ev]
        if not all_copies:
            idxs = idxs[:1]
        if not idxs:
            raise UsageError(f"EV profile {profile_id}: EV {ev!r} not found (ENOENT)")
        admin = state if ev_fields.in_range(new_ev, bits, p.fields) else EvState.DENIED
        for k in idxs:
            p.values[k], p.expanded[k], p.ports[k], p.admin[k] = value, expanded, port, admin
        return len(idxs)

    def modify_ev_state(self, profile_id: int, ev: int, state: EvState | str, now: int = 0) -> None:
        """MODIFY_EV_STATE: DENIED (never used again until GOOD) or GOOD, on every QP using the profile."""
        p = self._get(self._evps, profile_id, "EV profile")
        st = state if isinstance(state, EvState) else _enum(EvState, state, "ev_state")
        if st not in (EvState.GOOD, EvState.DENIED, EvState.ASSUMED_BAD):
            raise UsageError(f"modify_ev_state: state {st!r} cannot be set")
        idxs = [k for k, v in enumerate(p.values) if v == ev]
        if not idxs:
            raise UsageError(f"EV profile {profile_id}: EV {ev:#x} not found (ENOENT)")
        for k in idxs:
            p.admin[k] = EvState.DENIED if st == EvState.DENIED else EvState.GOOD
        inp = {EvState.GOOD: D.EVI_CTL_GOOD, EvState.DENIED: D.EVI_CTL_DENY, EvState.ASSUMED_BAD: D.EVI_CTL_BAD}[st]
        T = self.device.T
        for qp in p.qps:
            slot = evset.find_slot(T, qp.index, ev)
            if slot >= 0:
                evset.ev_input(T, qp.index, slot, inp, now)
        self.device._drain()

    def query_ev_state(self, profile_id: int, ev: int) -> EvState:
        """Profile-level state: DENIED if denied, ASSUMED_BAD if any QP currently assumes it bad, else GOOD."""
        p = self._get(self._evps, profile_id, "EV profile")
        idxs = [k for k, v in enumerate(p.values) if v == ev]
        if not idxs:
            raise UsageError(f"EV profile {profile_id}: EV {ev:#x} not found (ENOENT)")
        if p.admin[idxs[0]] == EvState.DENIED:
            return EvState.DENIED
        T = self.device.T
        for qp in p.qps:
            slot = evset.find_slot(T, qp.index, ev)
            if slot >= 0 and T.ev[qp.index, slot]["state"] == D.EV_ASSUMED_BAD:
                return EvState.ASSUMED_BAD
        return EvState.GOOD

    def query_ev_array(self, profile_id: int) -> list[dict]:
        p = self._get(self._evps, profile_id, "EV profile")
        return [{"ev": v, "expanded": x, "port": pt, "state": self.query_ev_state(profile_id, v).name if v is not None else "UNPOPULATED"}
                for v, x, pt in zip(p.values, p.expanded, p.ports)]

    def query_ev_profile(self, profile_id: int) -> dict:
        p = self._get(self._evps, profile_id, "EV profile")
        return {"state": p.state.name, "mode": p.mode.name if p.mode else None, "fmt_id": p.fmt_id, "count": p.count,
                "min_active": p.min_active, "event_mask": p.event_mask, "fields": list(p.fields)}

    # -- CC profiles ----------------------------------------------------------------------
    def modify_cc_profile(self, profile_id: int, *, state: str | None = None, algorithm: str | None = ...,
                          config: dict | None = None) -> None:
        """CC profile: algorithm "uet-1.0-nscc" (NSCC) or None/"none" (fixed window, max_cwnd bytes)."""
        p = self._ccs.setdefault(profile_id, CcProfile())
        if algorithm is not ...:
            if p.state == ProfileState.ONLINE:
                raise UsageError(f"CC profile {profile_id}: ALGORITHM cannot change while ONLINE")
            name = "none" if algorithm is None else algorithm
            if name not in CC_ALGORITHMS:
                raise UsageError(f"CC profile {profile_id}: algorithm {algorithm!r} not supported (one of {CC_ALGORITHMS} or None)")
            p.algorithm = name
        if config is not None:
            if p.algorithm is None:
                raise UsageError(f"CC profile {profile_id}: set ALGORITHM before CONFIG")
            p.config = self._cc_config(profile_id, p.algorithm, dict(config))
            if p.state == ProfileState.ONLINE:
                setup.write_cc(self.device.T, p.row, p.config)
        if state is not None:
            target = _enum(ProfileState, state, "cc_profile.state")
            self._transition(f"CC profile {profile_id}", p, target, {
                ProfileState.OFFLINE: lambda: p.algorithm is not None or _missing("ALGORITHM"),
                ProfileState.ONLINE: lambda: bool(p.config) or _missing("CONFIG"),
            })
            if p.state == ProfileState.ONLINE and p.row < 0:
                used = {c.row for c in self._ccs.values()}
                free = [r for r in range(self.device.T.cc.shape[0]) if r not in used]
                if not free:
                    raise UsageError(f"CC profile {profile_id}: all {self.device.T.cc.shape[0]} CC profile slots in use")
                p.row = free[0]
                setup.write_cc(self.device.T, p.row, p.config)

    def _cc_config(self, profile_id: int, algorithm: str, cfg: dict) -> dict:
        """mrc_ctl_cc_nscc_cfg fields (times in ns, as the C struct) -> a CC row (times in ps)."""
        dev = self.device
        base_ns = cfg.pop("base_rtt", 8000)
        rate = dev.port_rate_bps * dev.ports
        ns_keys = ("adjust_period_threshold", "qa_threshold", "target_delay", "fast_increase_delay")
        conv = {k: int(v) * 1000 for k, v in cfg.items() if k in ns_keys}
        rest = {k: v for k, v in cfg.items() if k not in ns_keys}
        if algorithm == "none":
            window = rest.pop("max_cwnd", None)
            if window is None:
                raise UsageError(f"CC profile {profile_id}: algorithm none needs max_cwnd (the fixed window, bytes)")
            prof = setup.fixed_window_profile(window_bytes=int(window), base_rtt_ps=int(base_ns) * 1000, mtu=dev.mtu)
        else:
            prof = setup.nscc_profile(mtu=dev.mtu, rate_bps=rate, base_rtt_ps=int(base_ns) * 1000)
        for k, v in {**rest, **conv}.items():
            if k not in D.CC.names or k == "algorithm":
                raise UsageError(f"CC profile {profile_id}: unknown config field {k!r}")
            prof[k] = v
        return setup._checked_cc(prof)

    def query_cc_profile(self, profile_id: int) -> dict:
        p = self._get(self._ccs, profile_id, "CC profile")
        return {"state": p.state.name, "algorithm": p.algorithm, "config": dict(p.config)}

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

    # -- EV events --------------------------------------------------------------------------
    def create_ev_event_cq(self, cqe: int = 1024) -> EvEventQueue:
        q = EvEventQueue(cqe)
        self._ev_cqs.append(q)
        return q

    def _on_ev_event(self, qp, e) -> None:
        state = EvState.ASSUMED_BAD if int(e["ev_state"]) == D.EV_ASSUMED_BAD else EvState.GOOD
        ev = EvEvent(qp.ev_profile_id, int(e["ev"]), int(e["plane"]) + 1, int(e["drop_count"]), state)
        for cq in self._ev_cqs:
            cq._push(ev)

    # -- endpoint requests -------------------------------------------------------------------
    def ep_batch_send(self, op: EndpointOp | str, requests: list[EpRequest], *, now: int, rsp_timeout_ns: int,
                      req_tc: int = DSCP_CONTROL) -> EpBatch:
        """Queue a batch of EV probes or port status updates; responses arrive in `EpBatch.responses`."""
        op = op if isinstance(op, EndpointOp) else _enum(EndpointOp, op, "ep.op")
        ids = [r.req_id for r in requests]
        if len(set(ids)) != len(ids):
            raise UsageError("ep_batch_send: req_id values must be unique within a batch")
        if not 0 <= req_tc <= 63:
            raise UsageError(f"ep_batch_send: req_tc {req_tc} is not a DSCP value")
        batch = EpBatch(op, list(requests), now + rsp_timeout_ns * 1000)
        for r in requests:
            self._check_port(r.port)
            if not 0 <= r.req_id < 1 << 16:
                raise UsageError(f"ep_batch_send: req_id {r.req_id} is not 16-bit")
            pkt = np.zeros(1, dtype=PKT)[0]
            pkt["opcode"] = int(Opcode.MRC_ENDPOINT_REQUEST)
            pkt["dqpn"] = ENDPOINT_QPN
            pkt["pkey"] = 0xFFFF
            pkt["ep_op"] = int(op)
            pkt["req_id"] = r.req_id
            pkt["port_status_mask"] = r.port_status
            pkt["ts"] = 1
            pkt["ev"] = r.ev
            pkt["port"] = r.port - 1
            pkt["dscp"] = req_tc
            self._ep_out.append((pkt, r.dest, r.port, batch, r.req_id))
        self._batches.append(batch)
        return batch

    def _endpoint_packets(self, now: int, port_mask: int) -> list:
        from mrc.api import OutPacket

        out = []
        keep = collections.deque()
        while self._ep_out:
            pkt, dest, port, batch, req_id = self._ep_out.popleft()
            if not (port_mask >> (port - 1)) & 1 or not (self.local_ports >> (port - 1)) & 1:
                keep.append((pkt, dest, port, batch, req_id))
                continue
            pkt["tx_timestamp"] = (now // 8000) & 0xFFFF
            if batch is not None:
                batch.sent[req_id] = now
            out.append(OutPacket(pkt, b"", dest, port, ENDPOINT_QPN))
        self._ep_out = keep
        return out

    def _on_endpoint_packet(self, pkt, now: int, src) -> None:
        op = int(pkt["opcode"])
        if op == int(Opcode.MRC_ENDPOINT_REQUEST):
            if int(pkt["ep_op"]) == EndpointOp.PORT_STATUS_UPDATE:
                mask = int(pkt["port_status_mask"]) & ((1 << self.device.ports) - 1)
                T = self.device.T
                for qp in self.device._by_qpn.values():
                    if qp.peer.address == src and qp.state in ("RTR", "RTS"):
                        dispatch.set_remote_ports(T, qp.index, mask, now)
                self.counters["port_status_rx"] += 1
            rsp = np.zeros(1, dtype=PKT)[0]
            rsp["opcode"] = int(Opcode.MRC_ENDPOINT_RESPONSE)
            rsp["dqpn"] = ENDPOINT_QPN
            rsp["pkey"] = 0xFFFF
            rsp["ep_op"] = pkt["ep_op"]
            rsp["req_id"] = pkt["req_id"]
            rsp["port_status_mask"] = self.local_ports
            rsp["tx_timestamp"] = pkt["tx_timestamp"]
            rsp["svc_time"] = 0
            rsp["ev"] = pkt["ev"]
            rsp["port"] = pkt["port"]
            rsp["dscp"] = pkt["dscp"]
            self._ep_out.append((rsp, src, int(pkt["port"]) + 1, None, 0))
        elif op == int(Opcode.MRC_ENDPOINT_RESPONSE):
            req_id = int(pkt["req_id"])
            for batch in self._batches:
                if req_id in batch.sent and all(r.req_id != req_id for r in batch.responses):
                    rtt_ns = (now - batch.sent[req_id]) // 1000
                    batch.responses.append(EpResponse(req_id, int(pkt["port"]) + 1, rtt_ns, False))
                    break
            else:
                self.counters["ep_unmatched"] += 1
        else:
            self.counters["ep_unknown"] += 1

    def _next_deadline(self) -> int:
        return min((b.deadline for b in self._batches if not b.done), default=D.NO_DEADLINE)

    def _on_timer(self, now: int) -> None:
        self._batches = [b for b in self._batches if not b.done and b.deadline > now]

    def _set_local_port(self, port: int, up: bool, now: int) -> None:
        bit = 1 << (port - 1)
        up = up and not (self.admin_down & bit)
        before = self.local_ports
        self.local_ports = (self.local_ports | bit) if up else (self.local_ports & ~bit)
        if before == self.local_ports:
            return
        dev = self.device
        for qp in dev._by_qpn.values():
            dispatch.set_local_ports(dev.T, qp.index, self.local_ports, now)
        from mrc.api import AsyncEvent

        dev._async.append(AsyncEvent("PORT_ACTIVE" if up else "PORT_ERR", port=port))
        # tell every peer at once, on a plane that is still up (OAI: "immediately tells peers")
        peers = {}
        for qp in dev._by_qpn.values():
            if qp.state in ("RTR", "RTS") and qp.peer.address not in peers:
                peers[qp.peer.address] = qp
        req_id = self.counters["psu_seq"]
        for dest, qp in peers.items():
            T = dev.T
            q = T.qp[qp.index]
            for k in range(int(q["n_ev"])):
                e = T.ev[q["ev_row"], k]
                if (self.local_ports >> int(e["plane"])) & 1 and evset.is_usable(e["state"]):
                    req = EpRequest(req_id & 0xFFFF, dest, int(e["plane"]) + 1, int(e["ev"]), self.local_ports)
                    self.ep_batch_send(EndpointOp.PORT_STATUS_UPDATE, [req], now=now, rsp_timeout_ns=1_000_000)
                    req_id += 1
                    break
        self.counters["psu_seq"] = req_id
        dev._drain()

    # -- helpers ---------------------------------------------------------------------------------
    @staticmethod
    def _get(table: dict, key: int, what: str):
        if key not in table:
            raise UsageError(f"{what} {key} does not exist")
        return table[key]

    @staticmethod
    def _transition(what: str, p, target, requirements: dict) -> None:
        target = target if isinstance(target, ProfileState) else _enum(ProfileState, target, "state")
        allowed = {ProfileState.INIT: {ProfileState.OFFLINE}, ProfileState.OFFLINE: {ProfileState.ONLINE, ProfileState.INIT},
                   ProfileState.ONLINE: {ProfileState.OFFLINE}}
        if target == p.state:
            return
        if target not in allowed[p.state]:
            raise UsageError(f"{what}: cannot go from {p.state.name} to {target.name}")
        check = requirements.get(target)
        if check is not None:
            try:
                check()
            except _Missing as m:
                raise UsageError(f"{what}: {m} is required to go {target.name}") from None
        p.state = target


class _Missing(Exception):
    pass


def _missing(what: str):
    raise _Missing(what)


def _enum(cls, value, key: str):
    if isinstance(value, cls):
        return value
    try:
        return cls[str(value).upper()]
    except KeyError:
        raise UsageError(f"{key}: {value!r} is not one of {[m.name for m in cls]}") from None
