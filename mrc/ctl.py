"""The controller API, in the spirit of OCP ``mrc_ctl.h``: one privileged controller per node.

`Controller` (``device.ctl``) manages three kinds of profile, each with the
state machine INIT -> OFFLINE -> ONLINE -> OFFLINE -> INIT (entering INIT
clears the profile's configuration):

- EV format profiles: mode (STEV / SRv6 / UDP) and field widths. To OFFLINE:
  MODE; to ONLINE: MODIFY_FIELDS (which the same call as INIT -> OFFLINE may
  carry, as the OCP examples do). Refused while ONLINE EV profiles use it.
- EV profiles: mode AUTO / EXP / GEN, format, ``ev_count``,
  ``ev_min_active``, event mask, fields (`mrc.ev_fields.EvField`) and the
  EV array. To OFFLINE: MODE, COUNT (and FMT_ID and fields unless AUTO); to
  ONLINE: MIN_ACTIVE, EVENT_MASK, and for EXP every entry populated by
  REPLACE_EV. While ONLINE only STATE, EVENT_MASK and the EV operations
  REPLACE_EV (MODIFY_ONLINE is advertised), MODIFY_EV_STATE,
  QUERY_EV_STATE, QUERY_EV_ARRAY are accepted. Changing MODE, FMT_ID or the
  fields while OFFLINE rebuilds the array (an explicit array becomes
  unpopulated again); changing COUNT resizes it.
- CC profiles: algorithm ("uet-1.0-nscc" or None / "none") and its config
  (``mrc_ctl_cc_nscc_cfg`` fields, times in ns). CONFIG may change while
  ONLINE (MODIFY_ONLINE is advertised): bound QPs see the new row at once.

EV values: the controller works with *raw* EVs, held MSB-first in a
container (``mrc_ctl_ev_t``) and expands them with the profile's fields: a
32-bit container for STEV, 16-bit for UDP; for SRv6 a 32-bit container when
the fields pull at most 32 bits (a compact EV, as `mrc.fabric` builds them),
else the whole 256-bit ``mrc_ctl_ev_t`` (the OCP ``ev_expansion`` example's
explicit SRv6 and SRv6+SRH profiles pull 64 and 128 bits). A raw EV is an
int (the container as a big-endian number) or bytes (the container's leading
bytes). The 32-bit value the core and the wire's ``entropy`` field carry is
the expanded value for STEV and UDP (at most 32 bits), the raw EV for
compact SRv6, and the entry's index in the profile array for wider SRv6
(an earlier mrc_ctl.h revision: the UDP source port holds "the EV index,
from the EV profile, of the SRv6 EV entry"); an SRv6 expansion is the uSID
address (and SRH segment). EVs are unique within a profile: the core and
SACK reflection identify a path by that value, and EV operations name an EV
by it.

It also delivers EV events (transitions to ASSUMED_BAD and GOOD, with drop
counts; the event queue never overruns: surplus events are counted and the
count rides on the next delivered event), sends endpoint requests (EV probes
with their RTT; port status updates) and answers those of peers.

Profiles are bound to a QP at RESET -> INIT (`QueuePair.modify("INIT",
ev_profile_id=..., cc_profile_id=...)`) and released when the QP returns to
RESET or is destroyed; a profile with bound QPs cannot leave ONLINE (EBUSY).
Each QP keeps its own copy of the EV states; controller state changes
(DENIED, GOOD) reach every QP using the profile at once.
"""
from __future__ import annotations

import collections
import copy
import enum
from dataclasses import dataclass, field

import numpy as np

from mrc import ev_fields
from mrc.core import dispatch, dtypes as D, evset, setup
from mrc.errors import ConfigError, UsageError
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


CC_ALGORITHMS = ("uet-1.0-nscc", "none")
EV_MAX_BYTES = 32  # MRC_CTL_EV_MAX_BYTES: an mrc_ctl_ev_t holds 256 bits (SRv6 address + SRH segment)
AUTO_EV_COUNT = 256
_TRANSITIONS = {ProfileState.INIT: {ProfileState.OFFLINE}, ProfileState.OFFLINE: {ProfileState.ONLINE, ProfileState.INIT},
                ProfileState.ONLINE: {ProfileState.OFFLINE}}
# mrc_ctl_cc_nscc_cfg fields whose unit is 1 ns (the CC row holds ps)
_CC_NS_KEYS = ("base_rtt", "adjust_period_threshold", "qa_threshold", "target_delay", "fast_increase_delay")


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
    min_active: int | None = None  # None: not set yet (required to go ONLINE)
    event_mask: int | None = None  # None: not set yet (required to go ONLINE)
    fields: list[EvField] = field(default_factory=list)
    seed: int | None = None
    raws: list = field(default_factory=list)  # raw EV per entry (None: unpopulated)
    values: list = field(default_factory=list)  # 32-bit EV the core and the wire carry, per entry
    expanded: list = field(default_factory=list)  # wire value per entry (SRv6: the address bits)
    ports: list[int] = field(default_factory=list)  # 1-based
    admin: list[EvState] = field(default_factory=list)
    qps: set = field(default_factory=set)

    @property
    def event_mask_bits(self) -> int:
        """The core's event mask: bit 0 reports ASSUMED_BAD, bit 1 GOOD."""
        mask = self.event_mask or 0
        return (1 if mask & EvState.ASSUMED_BAD else 0) | (2 if mask & EvState.GOOD else 0)


@dataclass
class CcProfile:
    state: ProfileState = ProfileState.INIT
    algorithm: str | None = None
    config: dict = field(default_factory=dict)
    row: int = -1
    qps: set = field(default_factory=set)


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
        if not isinstance(cqe, int) or cqe < 1:
            raise UsageError(f"create_ev_event_cq: cqe must be at least 1, got {cqe!r}")
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

    def __len__(self) -> int:
        return len(self._q)


@dataclass(frozen=True)
class EvOpEntry:
    """One entry of an EV operation (``struct mrc_ctl_ev_op_entry``): the subject EV (the value
    the core carries; None for an unpopulated entry), the replacement raw EV and its port, the state."""

    ev: int | None = None
    ev_new: int | bytes | None = None
    port: int | None = None
    state: EvState | str | None = None
    all_copies: bool = False


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
    timed_out: bool = False  # the deadline passed before every response arrived (ETIMEDOUT)

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
        self._ep_out: collections.deque = collections.deque()  # (PKT record, dest, port, batch, req_id)
        self._batches: list[EpBatch] = []
        self.phys_ports = (1 << device.ports) - 1  # link state of each port (Device.set_port_state)
        self.admin_down = 0  # ports administratively disabled (modify_port)
        self.local_ports = self.phys_ports  # up = link up and administratively enabled

    # -- device -------------------------------------------------------------------
    def query_device(self) -> dict:
        used = sum(p.count for p in self._evps.values() if p.state != ProfileState.INIT)
        return {
            "ev_max_profiles": 1024, "ev_max_count": 1 << 20, "ev_free_count": (1 << 20) - used,
            "ev_max_count_profile": self.device.T.ev.shape[1], "ev_count_align": 0, "ev_max_bits": 8 * EV_MAX_BYTES,
            "cc_max_profiles": self.device.T.cc.shape[0], "cc_algorithms": list(CC_ALGORITHMS),
            "port_mask": self.local_ports,
            "opt_attr": ["EV_EVENT", "EV_EXPLICIT", "EV_GENERATED", "EV_PROBE", "EV_EVENT_PRECISE_DROP_CNT",
                         "EV_PROFILE_MODIFY_ONLINE", "CC_PROFILE_MODIFY_ONLINE"],
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
        self._update_ports(port, now)

    def _check_port(self, port: int) -> None:
        if not isinstance(port, (int, np.integer)) or not 1 <= port <= self.device.ports:
            raise UsageError(f"port {port!r} outside [1, {self.device.ports}]")

    # -- EV format profiles -----------------------------------------------------------
    def modify_ev_format_profile(self, profile_id: int, *, state: str | None = None, mode: str | EvMode | None = None,
                                 fields: list[int] | None = None) -> None:
        what = f"EV format profile {profile_id}"
        p = self._fmts.setdefault(profile_id, EvFormatProfile())
        target = _enum(ProfileState, state, "ev_format.state") if state is not None else p.state
        new = copy.deepcopy(p)
        if p.state == ProfileState.ONLINE and (mode is not None or fields is not None):
            raise UsageError(f"{what}: {'MODE' if mode is not None else 'MODIFY_FIELDS'} cannot change while ONLINE")
        if mode is not None:
            new.mode = _enum(EvMode, mode, "ev_format.mode")
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
            _check_transition(what, p.state, target, {
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
        p = self._get(self._fmts, profile_id, "EV format profile")
        return {"state": p.state.name, "mode": p.mode.name if p.mode is not None else None, "fields": list(p.widths)}

    # -- EV profiles --------------------------------------------------------------------
    def modify_ev_profile(self, profile_id: int, *, state: str | None = None, mode: str | EvProfileMode | None = None,
                          fmt_id: int | None = None, count: int | None = None, min_active: int | None = None,
                          event_mask: int | None = None, fields: list[EvField] | None = None, seed: int | None = None) -> None:
        """mrc_ctl_modify_ev_profile: every attribute given is checked before any is applied."""
        what = f"EV profile {profile_id}"
        p = self._evps.setdefault(profile_id, EvProfile())
        target = _enum(ProfileState, state, "ev_profile.state") if state is not None else p.state
        if p.state == ProfileState.ONLINE:
            named = [k for k, v in (("MODE", mode), ("FMT_ID", fmt_id), ("COUNT", count), ("MIN_ACTIVE", min_active),
                                    ("MODIFY_FIELDS", fields), ("seed", seed)) if v is not None]
            if named:
                raise UsageError(f"{what}: {', '.join(named)} cannot change while ONLINE "
                                 f"(only STATE, EVENT_MASK and EV operations)")
        new = copy.copy(p)
        if mode is not None:
            new.mode = _enum(EvProfileMode, mode, "ev_profile.mode")
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
            _check_transition(what, p.state, target, {ProfileState.OFFLINE: needs, ProfileState.ONLINE: online})
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
        seed = self.device.seed * 1_000_003 + profile_id if p.seed is None else p.seed
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

    def replace_ev(self, profile_id: int, ev: int | None, new_ev: int, port: int, *, index: int | None = None,
                   all_copies: bool = False, state: EvState | str = EvState.GOOD) -> int:
        """REPLACE_EV: put `new_ev` (a raw EV, expanded with the profile's fields) on `port` in place of
        the entry whose EV is `ev` (``ev=None``: the first unpopulated entry; `index`: that entry).

        A raw EV outside a field's [min_val, max_val] is accepted and DENIED. EVs stay unique in the
        array, so `all_copies` can only matter for unpopulated entries and is refused there when it
        would duplicate the EV. On an ONLINE profile the bound QPs switch to the new EV at once (same
        port only: moving a path to another plane under running QPs is refused). Returns entries replaced.
        """
        what = f"EV profile {profile_id}"
        p = self._get(self._evps, profile_id, "EV profile")
        if p.mode == EvProfileMode.AUTO:
            raise UsageError(f"{what}: AUTO profiles have no controller-provided EVs")
        if p.state == ProfileState.INIT:
            raise UsageError(f"{what}: REPLACE_EV needs OFFLINE (or ONLINE with MODIFY_ONLINE)")
        self._check_port(port)
        st = _enum(EvState, state, "replace_ev.state")
        if st not in (EvState.GOOD, EvState.DENIED):
            raise UsageError(f"{what}: REPLACE_EV state must be GOOD or DENIED, not {st.name}")
        bits = self._container_bits(p)
        new_ev = self._raw_int(p, new_ev)
        if not isinstance(new_ev, (int, np.integer)) or isinstance(new_ev, bool) or not 0 <= new_ev < 1 << bits:
            raise UsageError(f"{what}: EV {new_ev!r} is not a {bits}-bit raw EV")
        new_ev = int(new_ev)
        if index is not None:
            if not 0 <= index < p.count:
                raise UsageError(f"{what}: index {index} outside [0, {p.count})")
            idxs = [index]
        else:
            idxs = [k for k, v in enumerate(p.values) if v == ev]
        if not idxs:
            raise UsageError(f"{what}: EV {'UNPOPULATED' if ev is None else hex(ev)} not found (ENOENT)")
        try:
            value, expanded = self._expand(p, new_ev, idxs[0])
        except ConfigError as e:
            raise UsageError(f"{what}: EV {new_ev:#x} does not fit the profile's fields: {e.problem}") from None
        if not all_copies:
            idxs = idxs[:1]
        elif len(idxs) > 1:
            raise UsageError(f"{what}: all_copies would put EV {value:#x} in {len(idxs)} entries (EVs must be unique)")
        if any(r == new_ev for k, r in enumerate(p.raws) if k not in idxs):
            raise UsageError(f"{what}: EV {value:#x} (raw {new_ev:#x}) is already in the array (EVs must be unique)")
        admin = st if ev_fields.in_range(new_ev, bits, p.fields) else EvState.DENIED
        for k in idxs:
            old = p.values[k]
            if p.qps and old is not None and port != p.ports[k]:
                raise UsageError(f"{what}: cannot move EV {old:#x} from port {p.ports[k]} to {port} while "
                                 f"{len(p.qps)} QP(s) use the profile (take them to RESET first)")
        for k in idxs:
            old = p.values[k]
            p.raws[k], p.values[k], p.expanded[k], p.ports[k], p.admin[k] = new_ev, value, expanded, port, admin
            if old is not None:
                self._replace_in_qps(p, old, value, admin)
        self.device._drain()
        return len(idxs)

    def _replace_in_qps(self, p: EvProfile, old: int, value: int, admin: EvState) -> None:
        """Every bound QP's copy of the EV becomes the new path: fresh counters, GOOD (or DENIED)."""
        T = self.device.T
        for qp in p.qps:
            slot = evset.find_slot(T, qp.index, old)
            if slot < 0:
                continue
            e = T.ev[int(T.qp[qp.index]["ev_row"]), slot]
            e["ev"] = value
            for name in ("tx_pkts", "losses", "ecn_marks", "trims", "last_rtt", "probe_ok", "probe_outstanding"):
                e[name] = 0
            e["state"] = D.EV_DENIED if admin == EvState.DENIED else D.EV_GOOD
            e["active"] = 0
            evset.rebalance(T, qp.index)

    def modify_ev_state(self, profile_id: int, ev: int, state: EvState | str, now: int = 0) -> None:
        """MODIFY_EV_STATE: DENIED (never used again until GOOD), GOOD or ASSUMED_BAD, on every QP using the profile."""
        p = self._get(self._evps, profile_id, "EV profile")
        st = _enum(EvState, state, "ev_state")
        if st not in (EvState.GOOD, EvState.DENIED, EvState.ASSUMED_BAD):
            raise UsageError(f"modify_ev_state: state {st.name} cannot be set (GOOD, ASSUMED_BAD or DENIED)")
        idxs = [k for k, v in enumerate(p.values) if v == ev and v is not None]
        if not idxs:
            raise UsageError(f"EV profile {profile_id}: EV {ev!r} not found (ENOENT)")
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
        idxs = [k for k, v in enumerate(p.values) if v == ev and v is not None]
        if not idxs:
            raise UsageError(f"EV profile {profile_id}: EV {ev!r} not found (ENOENT)")
        if p.admin[idxs[0]] == EvState.DENIED:
            return EvState.DENIED
        T = self.device.T
        for qp in p.qps:
            slot = evset.find_slot(T, qp.index, ev)
            if slot >= 0 and T.ev[int(T.qp[qp.index]["ev_row"]), slot]["state"] == D.EV_ASSUMED_BAD:
                return EvState.ASSUMED_BAD
        return EvState.GOOD

    def query_ev_array(self, profile_id: int) -> list[dict]:
        p = self._get(self._evps, profile_id, "EV profile")
        return [{"ev": v, "raw": r, "expanded": x, "port": pt,
                 "state": self.query_ev_state(profile_id, v).name if v is not None else "UNPOPULATED"}
                for r, v, x, pt in zip(p.raws, p.values, p.expanded, p.ports)]

    def ev_op(self, profile_id: int, op: str, entries: list[EvOpEntry] | None = None, now: int = 0) -> list:
        """A batch of EV operations (mrc_ctl.h ``ev_op``: one op, an array of entries).

        `op` is REPLACE_EV, MODIFY_EV_STATE, QUERY_EV_STATE or QUERY_EV_ARRAY. Entries apply
        in order; the first failing entry raises `UsageError` naming its index, and the entries
        before it stay applied (mrc_ctl.h: "partial success is possible"). Returns one result
        per entry (REPLACE_EV: entries replaced; MODIFY_EV_STATE: None; QUERY_EV_STATE: the
        state), or the array for QUERY_EV_ARRAY.
        """
        ops = ("REPLACE_EV", "MODIFY_EV_STATE", "QUERY_EV_STATE", "QUERY_EV_ARRAY")
        if op not in ops:
            raise UsageError(f"ev_op: op {op!r} is not one of {ops}")
        if op == "QUERY_EV_ARRAY":
            return self.query_ev_array(profile_id)
        if not entries:
            raise UsageError(f"ev_op {op}: no entries")
        out = []
        for n, e in enumerate(entries):
            try:
                if op == "REPLACE_EV":
                    if e.ev_new is None or e.port is None:
                        raise UsageError("REPLACE_EV needs ev_new and port")
                    out.append(self.replace_ev(profile_id, e.ev, e.ev_new, e.port, all_copies=e.all_copies,
                                               state=e.state or EvState.GOOD))
                elif op == "MODIFY_EV_STATE":
                    if e.state is None:
                        raise UsageError("MODIFY_EV_STATE needs state")
                    out.append(self.modify_ev_state(profile_id, e.ev, e.state, now=now))
                else:
                    out.append(self.query_ev_state(profile_id, e.ev))
            except UsageError as err:
                raise UsageError(f"ev_op {op}: entry {n}: {err}") from None
        return out

    def query_ev_profile(self, profile_id: int) -> dict:
        p = self._get(self._evps, profile_id, "EV profile")
        return {"state": p.state.name, "mode": p.mode.name if p.mode else None, "fmt_id": p.fmt_id, "count": p.count,
                "min_active": p.min_active, "event_mask": p.event_mask, "fields": list(p.fields), "qps": len(p.qps)}

    # -- CC profiles ----------------------------------------------------------------------
    def modify_cc_profile(self, profile_id: int, *, state: str | None = None, algorithm: str | None = ...,
                          config: dict | None = None) -> None:
        """CC profile: algorithm "uet-1.0-nscc" (NSCC) or None/"none" (fixed window, max_cwnd bytes)."""
        what = f"CC profile {profile_id}"
        p = self._ccs.setdefault(profile_id, CcProfile())
        target = _enum(ProfileState, state, "cc_profile.state") if state is not None else p.state
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
            _check_transition(what, p.state, target, {ProfileState.OFFLINE: {"ALGORITHM": algo},
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
        """mrc_ctl_cc_nscc_cfg fields (times in ns, as the C struct) -> a CC row (times in ps)."""
        dev = self.device
        for k in cfg:
            if k not in D.CC.names or k == "algorithm":
                raise UsageError(f"CC profile {profile_id}: unknown config field {k!r}")
        for k in _CC_NS_KEYS:
            if k in cfg and (not isinstance(cfg[k], (int, np.integer)) or isinstance(cfg[k], bool) or cfg[k] < 0):
                raise UsageError(f"CC profile {profile_id}: config {k} = {cfg[k]!r} must be a non-negative integer (ns)")
        base_ns = int(cfg.pop("base_rtt", 8000))
        rate = dev.port_rate_bps * dev.ports
        conv = {k: int(v) * 1000 for k, v in cfg.items() if k in _CC_NS_KEYS}
        rest = {k: v for k, v in cfg.items() if k not in _CC_NS_KEYS}
        try:
            if algorithm == "none":
                window = rest.pop("max_cwnd", None)
                if window is None:
                    raise UsageError(f"CC profile {profile_id}: algorithm none needs max_cwnd (the fixed window, bytes)")
                prof = setup.fixed_window_profile(window_bytes=int(window), base_rtt_ps=base_ns * 1000, mtu=dev.mtu)
            else:
                prof = setup.nscc_profile(mtu=dev.mtu, rate_bps=rate, base_rtt_ps=base_ns * 1000)
            prof.update(rest)
            prof.update(conv)
            return setup._checked_cc(prof)
        except ConfigError as e:
            raise UsageError(f"CC profile {profile_id}: config {e.key} = {e.value!r}: {e.problem}") from None

    def query_cc_profile(self, profile_id: int) -> dict:
        p = self._get(self._ccs, profile_id, "CC profile")
        return {"state": p.state.name, "algorithm": p.algorithm, "config": dict(p.config), "qps": len(p.qps)}

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

    # -- EV events --------------------------------------------------------------------------
    def create_ev_event_cq(self, cqe: int = 1024) -> EvEventQueue:
        q = EvEventQueue(cqe)
        self._ev_cqs.append(q)
        return q

    def _on_ev_event(self, qp, e) -> None:
        state = EvState.ASSUMED_BAD if int(e["ev_state"]) == D.EV_ASSUMED_BAD else EvState.GOOD
        ev = EvEvent(qp.ev_profile_id, int(e["ev"]), int(e["plane"]) + 1, 0, state)
        for cq in self._ev_cqs:
            cq._push(ev)

    # -- endpoint requests -------------------------------------------------------------------
    def ep_batch_send(self, op: EndpointOp | str, requests: list[EpRequest], *, now: int, rsp_timeout_ns: int,
                      req_tc: int = DSCP_CONTROL) -> EpBatch:
        """Queue a batch of EV probes or port status updates; responses arrive in `EpBatch.responses`
        (RTT in ns); `EpBatch.timed_out` becomes true when `rsp_timeout_ns` passes first."""
        op = _enum(EndpointOp, op, "ep.op")
        ids = [r.req_id for r in requests]
        if not requests:
            raise UsageError("ep_batch_send: no requests")
        if len(set(ids)) != len(ids):
            raise UsageError("ep_batch_send: req_id values must be unique within a batch")
        if not isinstance(req_tc, int) or not 0 <= req_tc <= 63:
            raise UsageError(f"ep_batch_send: req_tc {req_tc!r} is not a DSCP value")
        if not isinstance(rsp_timeout_ns, int) or rsp_timeout_ns < 0:
            raise UsageError(f"ep_batch_send: rsp_timeout_ns {rsp_timeout_ns!r} must be a non-negative integer")
        for r in requests:
            self._check_port(r.port)
            if not isinstance(r.req_id, int) or not 0 <= r.req_id < 1 << 16:
                raise UsageError(f"ep_batch_send: req_id {r.req_id!r} is not 16-bit")
            if not isinstance(r.ev, (int, np.integer)) or not 0 <= r.ev < 1 << 32:
                raise UsageError(f"ep_batch_send: ev {r.ev!r} is not a 32-bit EV")
        batch = EpBatch(op, list(requests), now + rsp_timeout_ns * 1000)
        for r in requests:
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
            if batch is not None:
                pkt["tx_timestamp"] = (now // 8000) & 0xFFFF
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
                        dispatch.set_remote_ports(T, qp.index, np.uint32(mask), now)
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
            req_id, ep_op = int(pkt["req_id"]), int(pkt["ep_op"])
            for batch in self._batches:
                if batch.op == ep_op and req_id in batch.sent and all(r.req_id != req_id for r in batch.responses):
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
        for b in self._batches:
            if not b.done and b.deadline <= now:
                b.timed_out = True
        self._batches = [b for b in self._batches if not b.done and b.deadline > now]

    # -- ports ---------------------------------------------------------------------------------
    def _set_local_port(self, port: int, up: bool, now: int) -> None:
        """The link of a local port went down or came back (Device.set_port_state)."""
        bit = 1 << (port - 1)
        self.phys_ports = (self.phys_ports | bit) if up else (self.phys_ports & ~bit)
        self._update_ports(port, now)

    def _update_ports(self, port: int, now: int) -> None:
        before = self.local_ports
        self.local_ports = self.phys_ports & ~self.admin_down & ((1 << self.device.ports) - 1)
        if before == self.local_ports:
            return
        up = bool(self.local_ports >> (port - 1) & 1)
        dev = self.device
        for qp in dev._by_qpn.values():
            if qp.state in ("RTR", "RTS"):
                dispatch.set_local_ports(dev.T, qp.index, np.uint32(self.local_ports), now)
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


def _check_transition(what: str, cur: ProfileState, target: ProfileState, requirements: dict) -> None:
    """Refuse a transition the state machine does not have, or one whose required attributes are unset."""
    if target not in _TRANSITIONS[cur]:
        raise UsageError(f"{what}: cannot go from {cur.name} to {target.name} "
                         f"(INIT -> OFFLINE -> ONLINE -> OFFLINE -> INIT)")
    if cur == ProfileState.INIT or target == ProfileState.ONLINE:
        for attr, value in requirements.get(target, {}).items():
            if value is None:
                raise UsageError(f"{what}: {attr} is required to go {target.name}")


def _enum(cls, value, key: str):
    if isinstance(value, cls):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        try:
            return cls(int(value))
        except ValueError:
            pass
    try:
        return cls[str(value).upper()]
    except KeyError:
        raise UsageError(f"{key}: {value!r} is not one of {[m.name for m in cls if m.name]}") from None
