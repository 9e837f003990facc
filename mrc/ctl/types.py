"""The controller's types: profile states and modes, profiles, EV events, EV operation entries,
endpoint requests and responses, and the two argument checks every controller call uses.

`mrc.ctl` re-exports everything here; import from there.
"""
from __future__ import annotations

import collections
import enum
import warnings
from dataclasses import dataclass, field

import numpy as np

from mrc.errors import UsageError
from mrc.ctl.ev_fields import EvField
from mrc.wire.constants import EndpointOp, EvMode

class ProfileState(enum.IntEnum):
    """A profile's state: INIT -> OFFLINE -> ONLINE (and back)."""

    INIT = 0
    OFFLINE = 1
    ONLINE = 2


class EvProfileMode(enum.IntEnum):
    """How an EV profile gets its EVs: AUTO (the device picks), EXP (the controller lists them), GEN (generated
    from fields)."""

    AUTO = 1 << 0
    EXP = 1 << 1
    GEN = 1 << 2


class EvState(enum.IntFlag):
    """mrc_ctl_ev_state values: GOOD (in use), ASSUMED_BAD (losses took it out of use; EV probes
    bring it back), DENIED (the controller forbids it), UNKNOWN."""

    def __repr__(self) -> str:
        return f"EvState.{self.name}"

    GOOD = 1 << 0
    ASSUMED_BAD = 1 << 1
    DENIED = 1 << 2
    UNKNOWN = 1 << 31


CC_ALGORITHMS = ("uet-1.0-nscc", "none")
EV_MAX_BYTES = 32  # MRC_CTL_EV_MAX_BYTES: an mrc_ctl_ev_t holds 256 bits (SRv6 address + SRH segment)
AUTO_EV_COUNT = 256
TRANSITIONS = {ProfileState.INIT: {ProfileState.OFFLINE}, ProfileState.OFFLINE: {ProfileState.ONLINE, ProfileState.INIT},
                ProfileState.ONLINE: {ProfileState.OFFLINE}}
# mrc_ctl_cc_nscc_cfg fields whose unit is 1 ns (the CC row holds ps)
CC_NS_KEYS = ("base_rtt", "adjust_period_threshold", "qa_threshold", "target_delay", "fast_increase_delay")


@dataclass
class EvFormatProfile:
    """An EV format profile's configuration (the controller keeps it; query with `query_ev_format_profile`)."""

    state: ProfileState = ProfileState.INIT
    mode: EvMode | None = None
    widths: list[int] = field(default_factory=list)


@dataclass
class EvProfile:
    """An EV profile's configuration and EV array (the controller keeps it; query with `query_ev_profile` and
    `query_ev_array`)."""

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
    """A CC profile's algorithm and core row (the controller keeps it; query with `query_cc_profile`)."""

    state: ProfileState = ProfileState.INIT
    algorithm: str | None = None
    config: dict = field(default_factory=dict)
    row: int = -1
    qps: set = field(default_factory=set)


@dataclass(frozen=True, repr=False)
class EvEvent:
    """An EV changed state on a QP (``mrc_ctl_ev_event``): the EV, its NIC port (1-based), the
    new state (ASSUMED_BAD or GOOD) and how many earlier events the full queue dropped."""

    profile_id: int
    ev: int
    port: int
    drop_count: int
    state: EvState

    def __repr__(self) -> str:
        return (f"EvEvent(ev={self.ev:#x}, state={EvState(self.state).name}, port={self.port}, "
                f"profile_id={self.profile_id}, drop_count={self.drop_count})")


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
        """Remove and return up to `num_entries` events, oldest first."""
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
    """The answer to one endpoint request: its id, the local port it came back on (1-based), the
    round-trip time in ns (``mrc_ctl_ep_rsp``), and whether the peer adjusted for its service time."""

    req_id: int
    port: int
    rtt_ns: int
    adj_svc_time: bool = False

    @property
    def rtt(self) -> int:
        """Deprecated spelling of `rtt_ns` (the unit is in the name now)."""
        warnings.warn("EpResponse.rtt is deprecated; use rtt_ns (the same value, in ns)", DeprecationWarning, stacklevel=2)
        return self.rtt_ns


@dataclass
class EpBatch:
    """A batch of endpoint requests in flight (`Controller.ep_batch_send`): responses arrive in `responses`;
    `timed_out` turns true when the deadline (ps) passes first."""

    op: EndpointOp
    requests: list[EpRequest]
    deadline: int
    sent: dict = field(default_factory=dict)  # req_id -> send time (ps)
    responses: list[EpResponse] = field(default_factory=list)
    timed_out: bool = False  # the deadline passed before every response arrived (ETIMEDOUT)

    @property
    def done(self) -> bool:
        """Every request has its response."""
        return len(self.responses) == len(self.requests)


def check_transition(what: str, cur: ProfileState, target: ProfileState, requirements: dict) -> None:
    """Refuse a transition the state machine does not have, or one whose required attributes are unset."""
    if target not in TRANSITIONS[cur]:
        raise UsageError(f"{what}: cannot go from {cur.name} to {target.name} "
                         f"(INIT -> OFFLINE -> ONLINE -> OFFLINE -> INIT)")
    if cur == ProfileState.INIT or target == ProfileState.ONLINE:
        for attr, value in requirements.get(target, {}).items():
            if value is None:
                raise UsageError(f"{what}: {attr} is required to go {target.name}")


def parse_enum(cls, value, key: str):
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
