"""The controller's types, one per ``mrc_ctl.h`` enum and struct: profile states and modes, the EV
(`CtlEv`, value and port), EV fields and operations, the profile attribute structs with their masks,
the device and port attributes, EV events and their CQ, endpoint requests and responses.

Structs are dataclasses with the header's field names; a nested C struct is either a small
dataclass of its own (``ev_op`` -> `EvOpArgs`) or flattened where the header nests only for
grouping (noted on the class). Enums keep the header's values. `mrc.ctl` re-exports everything
here; import from there.
"""
from __future__ import annotations

import collections
import enum
import ipaddress
import warnings
from dataclasses import dataclass, field

import numpy as np

from mrc.api.types import NotifyingQueue
from mrc.api.version import (  # noqa: F401  (re-exported by mrc.ctl)
    MRC_CTL_API_CURRENT_VERSION, MRC_CTL_API_LAST_SUPPORTED_VERSION, MRC_CTL_API_VER_LATEST,
    MRC_CTL_VENDOR_API_CURRENT_VERSION, MRC_CTL_VENDOR_API_LAST_SUPPORTED_VERSION,
)
from mrc.errors import EINVAL
from mrc.ctl.ev_fields import EvField
from mrc.wire.constants import EndpointOp, EvMode

MRC_CTL_MAX_VENDOR_CFG_SIZE = 128
MRC_CTL_EV_MAX_BYTES = EV_MAX_BYTES = 32  # an mrc_ctl_ev_t holds 256 bits (SRv6 address + SRH segment)


class CtlProtocolVersion(enum.IntFlag):
    """``enum mrc_ctl_protocol_version``."""

    VERSION_0 = 0  # unspecified
    VERSION_1 = 1 << 0


class ProfileState(enum.IntEnum):
    """``enum mrc_ctl_profile_state``: INIT -> OFFLINE -> ONLINE -> OFFLINE -> INIT, for every profile."""

    INIT = 0
    OFFLINE = 1
    ONLINE = 2


class CtlAttrOpt(enum.IntFlag):
    """``enum mrc_ctl_attr_opt``: optional features in `CtlDeviceAttr.opt_attr`."""

    EV_PROFILE_MODIFY_ONLINE = 1 << 0
    CC_PROFILE_MODIFY_ONLINE = 1 << 1
    EV_EVENT = 1 << 2
    EV_EXPLICIT_RANGE = 1 << 3  # explicit arrays must be one contiguous range (not set here: any EVs)
    EV_EVENT_PRECISE_DROP_CNT = 1 << 4
    EP_OP_EV_PROBE = 1 << 5


class EvFmtMode(enum.IntFlag):
    """``enum mrc_ctl_ev_fmt_mode``: where the EV travels (`wire` gives the wire layer's `EvMode`)."""

    STEV = 1 << 0  # IPv6 flow label + UDP source port, up to 32 bits
    SRV6 = 1 << 1  # the SRv6 (uSID) address, and an optional single-segment SRH
    UDP = 1 << 2  # the UDP source port, up to 16 bits

    @property
    def wire(self) -> EvMode:
        """The wire layer's `mrc.wire.EvMode` for this format mode."""
        return {EvFmtMode.STEV: EvMode.STEV, EvFmtMode.SRV6: EvMode.SRV6, EvFmtMode.UDP: EvMode.UDP}[self]


class EvFmtOp(enum.IntEnum):
    """``enum mrc_ctl_ev_fmt_op``."""

    MODIFY_FIELDS = 0
    QUERY_FIELDS = 1


class EvFmtProfileAttrMask(enum.IntFlag):
    """``enum mrc_ctl_ev_fmt_profile_attr_mask``."""

    STATE = 1 << 0
    CUR_STATE = 1 << 1
    MODE = 1 << 2
    OP = 1 << 3
    VENDOR_CFG = 1 << 31


@dataclass
class EvFmtField:
    """``struct mrc_ctl_ev_fmt_field``: one format field's width in bits."""

    width: int


@dataclass
class EvFmtOpArgs:
    """``mrc_ctl_ev_fmt_profile_attr.ev_fmt_op``: the field operation, its fields and their count (in/out:
    a QUERY_FIELDS whose count is too small gets E2BIG and the count needed; None: any length)."""

    op: EvFmtOp = EvFmtOp.QUERY_FIELDS
    fmt_fields: list = field(default_factory=list)
    fmt_field_count: int | None = None


@dataclass
class EvFmtProfileAttr:
    """``struct mrc_ctl_ev_fmt_profile_attr``. Fields not named by the mask are ignored (modify) or left None
    (query). `vendor_cfg`: no keys are defined for format profiles here, so it must be empty."""

    profile_state: ProfileState | None = None
    cur_profile_state: ProfileState | None = None
    ev_fmt_mode: EvFmtMode | None = None
    ev_fmt_op: EvFmtOpArgs | None = None
    vendor_cfg: bytes | None = None


@dataclass(frozen=True)
class CtlEv:
    """``struct mrc_ctl_ev``: an EV value (``mrc_ctl_ev_t``, 32 bytes) and its 1-based port.

    The controller names an EV by exactly this pair, in every EV mode: the EV it gave to REPLACE_EV (or the
    device generated) is the EV later operations and events name. The value's bits are read most
    significant first from byte 0 (as ``ev_expansion.c`` reads them): an STEV's 32 bits are bytes 0-3, a
    UDP EV's 16 bits bytes 0-1, an SRv6 EV's address bytes 0-15 and its SRH segment bytes 16-31. A C program
    that ``memcpy``s a host integer in on a little-endian machine therefore writes those bytes reversed;
    `from_int` / `to_int` read and write the value big-endian, as the bits are laid out.
    """

    val: bytes = bytes(EV_MAX_BYTES)
    port: int = 0

    def __post_init__(self):
        val = self.val
        if isinstance(val, (bytearray, memoryview, np.ndarray)):
            val = bytes(val)
        if not isinstance(val, bytes):
            raise EINVAL(f"mrc_ctl_ev.val = {self.val!r} must be bytes (at most {EV_MAX_BYTES})")
        if len(val) > EV_MAX_BYTES:
            raise EINVAL(f"mrc_ctl_ev.val is {len(val)} bytes, longer than the {EV_MAX_BYTES}-byte mrc_ctl_ev_t")
        if not isinstance(self.port, (int, np.integer)) or isinstance(self.port, bool) or not 0 <= self.port <= 255:
            raise EINVAL(f"mrc_ctl_ev.port = {self.port!r} must be an integer in [0, 255] (1-based; 0: unpopulated)")
        object.__setattr__(self, "val", val.ljust(EV_MAX_BYTES, b"\0"))
        object.__setattr__(self, "port", int(self.port))

    @classmethod
    def from_int(cls, value: int, port: int, bits: int = 32) -> "CtlEv":
        """The EV whose first `bits` bits are `value` (big-endian), on `port`."""
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not 0 <= value < 1 << bits:
            raise EINVAL(f"mrc_ctl_ev: value {value!r} is not a {bits}-bit integer")
        if bits % 8 or not 0 < bits <= 8 * EV_MAX_BYTES:
            raise EINVAL(f"mrc_ctl_ev: bits = {bits} must be a multiple of 8 in [8, 256]")
        return cls(int(value).to_bytes(bits // 8, "big"), port)

    def to_int(self, bits: int = 32) -> int:
        """The first `bits` bits of the value, big-endian."""
        return int.from_bytes(self.val, "big") >> (8 * EV_MAX_BYTES - bits)

    @property
    def raw(self) -> int:
        """The whole 256-bit value as one number (byte 0 most significant)."""
        return int.from_bytes(self.val, "big")

    @property
    def unpopulated(self) -> bool:
        """True for ``MRC_CTL_EV_UNPOPULATED`` (value 0, port 0)."""
        return self.port == 0 and not any(self.val)

    def __repr__(self) -> str:
        if self.unpopulated:
            return "CtlEv(UNPOPULATED)"
        used = self.val.rstrip(b"\0") or b"\0"
        width = max(4, len(used) + (len(used) % 2))
        return f"CtlEv(0x{self.val[:width].hex()}, port={self.port})"


MRC_CTL_EV_UNPOPULATED = EV_UNPOPULATED = CtlEv()


class EvState(enum.IntFlag):
    """``enum mrc_ctl_ev_state``: GOOD (in use), ASSUMED_BAD (losses took it out of use; probes bring it
    back), DENIED (the controller forbids it), UNKNOWN."""

    def __repr__(self) -> str:
        return f"EvState.{self.name}"

    GOOD = 1 << 0
    ASSUMED_BAD = 1 << 1
    DENIED = 1 << 2
    UNKNOWN = 1 << 31


class EvProfileMode(enum.IntFlag):
    """``enum mrc_ctl_ev_mode``: AUTO (the device picks), EXP (the controller lists them), GEN (generated from
    fields)."""

    AUTO = 1 << 0
    EXP = 1 << 1
    GEN = 1 << 2


class EvOp(enum.IntEnum):
    """``enum mrc_ctl_ev_op``."""

    REPLACE_EV = 0
    MODIFY_EV_STATE = 1
    QUERY_EV_STATE = 2
    QUERY_EV_ARRAY = 3


class EvFieldsOp(enum.IntEnum):
    """``enum mrc_ctl_ev_fields_op``."""

    MODIFY_FIELDS = 0
    QUERY_FIELDS = 1


class EvProfileAttrMask(enum.IntFlag):
    """``enum mrc_ctl_ev_profile_attr_mask``."""

    STATE = 1 << 0
    CUR_STATE = 1 << 1
    MODE = 1 << 2
    FMT_ID = 1 << 3
    COUNT = 1 << 4
    MIN_ACTIVE = 1 << 5
    EVENT_MASK = 1 << 6
    EV_OP = 1 << 7
    EV_FIELDS_OP = 1 << 8
    VENDOR_CFG = 1 << 31


class EvOpFlags(enum.IntFlag):
    """``enum mrc_ctl_ev_op_flags``."""

    ALL_COPIES = 1 << 0  # REPLACE_EV: every occurrence of the EV, not one


@dataclass
class EvOpEntry:
    """``struct mrc_ctl_ev_op_entry``: the subject EV, the replacement, the state, the flags. Per operation:
    REPLACE_EV needs ev, ev_new (state: the new EV's state, GOOD when None; flags: ALL_COPIES);
    MODIFY_EV_STATE needs ev and state; QUERY_EV_STATE needs ev and fills state; QUERY_EV_ARRAY fills ev and
    state."""

    ev: CtlEv = EV_UNPOPULATED
    ev_new: CtlEv | None = None
    state: EvState | None = None
    flags: int = 0


@dataclass
class EvOpArgs:
    """``mrc_ctl_ev_profile_attr.ev_op``: one operation for every entry; `entry_count` is in/out
    (QUERY_EV_ARRAY with a count too small: E2BIG, and the count needed; None: any length)."""

    op: EvOp = EvOp.QUERY_EV_ARRAY
    entries: list[EvOpEntry] = field(default_factory=list)
    entry_count: int | None = None


@dataclass
class EvFieldsOpArgs:
    """``mrc_ctl_ev_profile_attr.ev_fields_op``: MODIFY_FIELDS or QUERY_FIELDS and the fields (`EvField`);
    `field_count` is in/out as in `EvOpArgs`."""

    op: EvFieldsOp = EvFieldsOp.QUERY_FIELDS
    fields: list[EvField] = field(default_factory=list)
    field_count: int | None = None


@dataclass
class EvProfileAttr:
    """``struct mrc_ctl_ev_profile_attr``. Fields not named by the mask are ignored (modify) or left None
    (query). `vendor_cfg` (``b"key=value,..."``): ``seed=N`` seeds a GEN / AUTO profile's EVs (ours)."""

    profile_state: ProfileState | None = None
    cur_profile_state: ProfileState | None = None
    ev_mode: EvProfileMode | None = None
    ev_fmt_profile_id: int | None = None
    ev_count: int | None = None
    ev_min_active: int | None = None
    ev_event_mask: int | None = None
    ev_op: EvOpArgs | None = None
    ev_fields_op: EvFieldsOpArgs | None = None
    vendor_cfg: bytes | None = None


class CcProfileAttrMask(enum.IntFlag):
    """``enum mrc_ctl_cc_profile_attr_mask``."""

    STATE = 1 << 0
    CUR_STATE = 1 << 1
    ALGORITHM = 1 << 2
    CONFIG = 1 << 3
    VENDOR_CFG = 1 << 31


@dataclass
class CcNsccCfg:
    """``struct mrc_ctl_cc_nscc_cfg``. The time fields carry their unit in the name (the header's
    ``base_rtt`` is `base_rtt_ns`, and so on; ns, as in the header); a field left None takes the project's
    default (`mrc.core.setup.nscc_profile`: UE 1.0.3 values scaled by the base RTT and the device's rate)."""

    disable_qa: int | None = None
    adjust_bytes_threshold: int | None = None  # bytes
    adjust_period_threshold_ns: int | None = None
    base_rtt_ns: int | None = None
    eta: float | None = None
    fi: float | None = None
    fi_scale: float | None = None
    gamma: float | None = None
    max_md_jump: float | None = None
    max_cwnd: int | None = None  # bytes
    qa_gate: int | None = None
    qa_threshold_ns: int | None = None
    target_delay_ns: int | None = None

    def as_dict(self) -> dict:
        """The fields that are set, by name."""
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass
class CcProfileAttr:
    """``struct mrc_ctl_cc_profile_attr``. `algorithm`: an entry of `CtlDeviceAttr.cc.algorithms`, or None,
    which disables congestion control (the QP is bounded by its MPR window and WIMM only). `cc_config`: a
    `CcNsccCfg` (or a dict of its fields). `vendor_cfg` (``b"key=value,..."``): any field of the core's CC
    row that the header's struct lacks (`mrc.core.dtypes.CC`: ``min_cwnd``, ``init_cwnd``, ...; times in ns
    with ``_ns``)."""

    profile_state: ProfileState | None = None
    cur_profile_state: ProfileState | None = None
    algorithm: str | None = None
    cc_config: CcNsccCfg | dict | None = None
    vendor_cfg: bytes | None = None


@dataclass(frozen=True)
class CtlEvAttr:
    """``mrc_ctl_device_attr.ev``: the device's EV limits."""

    ev_max_fmt_profiles: int
    ev_max_profiles: int
    ev_max_count: int
    ev_free_count: int
    ev_max_count_profile: int
    ev_count_align: int
    ev_max_width: int
    ev_fmt_mode_mask: int
    ev_mode_mask: int
    ev_op_max_entries: int


@dataclass(frozen=True)
class CtlCcAttr:
    """``mrc_ctl_device_attr.cc``: CC profile slots and the algorithm strings (a tuple: no NULL end)."""

    cc_max_profiles: int
    algorithms: tuple


@dataclass(frozen=True)
class CtlDeviceAttr:
    """``struct mrc_ctl_device_attr`` (`Controller.query_device`). `phy_port_mask`: the ports this device owns,
    bit N for port N (1-based, so bit 0 is never set); `opt_attr`: `CtlAttrOpt` bits."""

    mrc_ctl_protocol_version: int
    ev: CtlEvAttr
    cc: CtlCcAttr
    phy_port_mask: int
    opt_attr: int
    supported: bool = True


class PortAdminState(enum.IntEnum):
    """``enum mrc_ctl_port_admin_state``."""

    DISABLED = 0
    ENABLED = 1


class PortAttrMask(enum.IntFlag):
    """``enum mrc_ctl_port_attr_mask``."""

    ADMIN_STATE = 1 << 0


@dataclass
class PortAttr:
    """``struct mrc_ctl_port_attr``: a port's administrative state (a disabled port reports down,
    `mrc.api.Device.query_port`)."""

    port_admin_state: PortAdminState | None = None


@dataclass(frozen=True, repr=False)
class EvEvent:
    """An EV changed state on a QP (``struct mrc_ctl_ev_event``).

    `ev` is the EV as the controller named it (`CtlEv`, the value it gave and the port). `drop_count` is
    how many EV events were dropped between the previous event delivered to this CQ and this one (the CQ
    never overruns; `CtlAttrOpt.EV_EVENT_PRECISE_DROP_CNT`: the exact number, counting those dropped
    inside the device too). It says nothing about packets: `losses` (ours) is how many packets the QP
    has lost on that EV. `state` is ASSUMED_BAD or GOOD. Also ours: `qp_num` (the QP the change happened
    on), `value` (the 32-bit EV its packets carry) and `time` (ps).
    """

    profile_id: int
    ev: CtlEv
    drop_count: int
    state: EvState
    qp_num: int = 0
    value: int = 0
    losses: int = 0
    time: int = 0

    @property
    def port(self) -> int:
        """The EV's port (``ev.port``)."""
        return self.ev.port

    def __repr__(self) -> str:
        return (f"EvEvent({self.ev!r}, state={EvState(self.state).name}, profile_id={self.profile_id}, "
                f"drop_count={self.drop_count} event(s), qp={self.qp_num:#x}, value={self.value:#x}, "
                f"losses={self.losses} packet(s))")


class EvEventQueue(NotifyingQueue):
    """An EV Event CQ (``mrc_ctl_create_ev_event_cq``): bounded, never overruns: events beyond `cqe` are
    dropped and counted, and the count rides on the next event delivered (``drop_count``). It takes a
    completion channel like any CQ (`req_notify`: an event when the next EV event arrives)."""

    kind = "EV event CQ"

    def __init__(self, device, cqe, cq_context=None, channel=None, comp_vector: int = 0):
        super().__init__(device, cqe, cq_context, channel, comp_vector)
        self._q: collections.deque[EvEvent] = collections.deque()
        self._dropped = 0

    def __repr__(self) -> str:
        return f"<EvEventQueue: {len(self._q)} of {self.cqe} events, {self._dropped} dropped since the last>"

    def _push(self, ev: EvEvent) -> None:
        if self.destroyed:
            return
        if len(self._q) >= self.cqe:
            self._dropped += 1
            return
        self._q.append(EvEvent(ev.profile_id, ev.ev, self._dropped, ev.state, ev.qp_num, ev.value, ev.losses,
                               ev.time))
        self._dropped = 0
        self._notify(True)

    def _lost(self, n: int) -> None:
        """`n` events never reached this queue (dropped inside the device): counted like overflow."""
        self._dropped += n

    def poll(self, num_entries: int = 16) -> list[EvEvent]:
        """``mrc_ctl_poll_ev_event``: remove and return up to `num_entries` events, oldest first."""
        self._check()
        if not isinstance(num_entries, (int, np.integer)) or isinstance(num_entries, bool) or num_entries < 0:
            raise EINVAL(f"poll_ev_event: num_entries = {num_entries!r} must be a non-negative integer")
        out = []
        while self._q and len(out) < num_entries:
            out.append(self._q.popleft())
        return out

    def _release(self) -> None:
        super()._release()
        ctl = self.device.ctl
        if self in ctl._ev_cqs:
            ctl._ev_cqs.remove(self)

    def __len__(self) -> int:
        return len(self._q)


class EpOpType(enum.IntEnum):
    """``enum mrc_ctl_ep_op_type`` (`wire`: the endpoint header's op code, which differs)."""

    EV_PROBE = 0
    PORT_STATUS_UPDATE = 1

    @property
    def wire(self) -> EndpointOp:
        """The ERTH ``op`` value (`mrc.wire.EndpointOp`)."""
        return EndpointOp.EV_PROBE if self == EpOpType.EV_PROBE else EndpointOp.PORT_STATUS_UPDATE


def gid(address):
    """A GID (``union ibv_gid``, RoCEv2: an IPv6 address; IPv4 as ::ffff:a.b.c.d) from a string, 16 bytes or
    an `ipaddress` object; anything else (a network's own address object) is returned as it is."""
    if isinstance(address, ipaddress.IPv6Address):
        return address
    if isinstance(address, ipaddress.IPv4Address):
        return ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + address.packed)
    if isinstance(address, (bytes, bytearray)) and len(address) in (4, 16):
        return gid(ipaddress.ip_address(bytes(address)))
    if isinstance(address, str):
        try:
            return gid(ipaddress.ip_address(address))
        except ValueError:
            return address
    return address


@dataclass(frozen=True)
class EpRequest:
    """``struct mrc_ctl_ep_req``: request id (16 bits, unique among those outstanding), source and destination
    GIDs (`gid`: IPv6 or IPv4 text, 16 bytes, or the network's own address object for `dgid`; `sgid`
    None: the device's address), the EV format mode and the EV (`req_ev`: value and the port the request
    leaves on), and for PORT_STATUS_UPDATE the port status mask (bit N: port N, 1-based, as the header).

    The EV's width follows `ev_fmt_mode`: STEV 32 bits, UDP 16, SRV6 an address (16 bytes) and an optional
    SRH segment (16 more). An EV that names an EV of one of the controller's profiles (same value and
    port) travels as that profile's EV does; any other is taken as the wire value itself."""

    req_id: int
    dgid: object
    req_ev: CtlEv
    ev_fmt_mode: EvFmtMode = EvFmtMode.STEV
    sgid: object = None
    port_status: int = 0

    @property
    def port(self) -> int:
        """The port the request leaves on (``req_ev.port``)."""
        return self.req_ev.port


@dataclass(frozen=True)
class EpResponse:
    """``struct mrc_ctl_ep_rsp``: the request id, the local port the answer came back on (1-based), the
    round-trip time in ns, and whether that time was adjusted for the responder's service time."""

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
    """A batch of endpoint requests in flight (`Controller.ep_batch_send`): responses arrive in `responses`
    in arrival order; `timed_out` turns true when the deadline (ps) passes first."""

    op: EpOpType
    requests: list[EpRequest]
    deadline: int
    sent: dict = field(default_factory=dict)  # req_id -> send time (ps)
    responses: list[EpResponse] = field(default_factory=list)
    timed_out: bool = False  # the deadline passed before every response arrived (ETIMEDOUT)

    @property
    def done(self) -> bool:
        """Every request has its response."""
        return len(self.responses) == len(self.requests)


def parse_enum(cls, value, key: str):
    """`value` as a member of `cls` (a member, its value, or its name in any case), or EINVAL naming `key`."""
    if isinstance(value, cls):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        try:
            member = cls(int(value))
            if member.name is not None:
                return member
        except ValueError:
            pass
    if isinstance(value, str):
        name = value.upper()
        if name in cls.__members__:
            return cls[name]
    raise EINVAL(f"{key} = {value!r} is not one of {[m.name for m in cls if m.name]}")


def check_cur_state(what: str, attr, asked: int, state: ProfileState) -> None:
    """The CUR_STATE bit of a modify call asserts the profile's state (as IBV_QP_CUR_STATE does): EINVAL if not."""
    if asked and parse_enum(ProfileState, attr.cur_profile_state, "cur_profile_state") != state:
        raise EINVAL(f"{what}: cur_profile_state = {attr.cur_profile_state!r} but it is {state.name}")


def check_int(key: str, value, lo: int, hi: int) -> int:
    """`value` as an int in [lo, hi] (bools refused), or EINVAL naming `key` and the value."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not lo <= value <= hi:
        raise EINVAL(f"{key} = {value!r} must be an integer in [{lo}, {hi}]")
    return int(value)


def parse_vendor_cfg(what: str, cfg, known) -> dict:
    """The project's ``vendor_cfg`` bytes: ASCII ``key=value`` pairs separated by commas, NUL-padded to at most
    128 bytes (``b""``: none). Keys must be in `known` (a dict key -> converter); EINVAL names a bad one."""
    if cfg is None:
        return {}
    if isinstance(cfg, (bytearray, memoryview)):
        cfg = bytes(cfg)
    if not isinstance(cfg, bytes):
        raise EINVAL(f"{what}: vendor_cfg = {cfg!r} must be bytes")
    if len(cfg) > MRC_CTL_MAX_VENDOR_CFG_SIZE:
        raise EINVAL(f"{what}: vendor_cfg is {len(cfg)} bytes, more than {MRC_CTL_MAX_VENDOR_CFG_SIZE}")
    text = cfg.rstrip(b"\0")
    out: dict = {}
    if not text:
        return out
    try:
        items = text.decode("ascii").split(",")
    except UnicodeDecodeError:
        raise EINVAL(f"{what}: vendor_cfg {cfg!r} is not ASCII key=value pairs") from None
    for item in items:
        key, sep, value = item.strip().partition("=")
        if not sep or key not in known:
            raise EINVAL(f"{what}: vendor_cfg item {item!r}: known keys are {sorted(known) or 'none'} (key=value)")
        try:
            out[key] = known[key](value)
        except ValueError:
            raise EINVAL(f"{what}: vendor_cfg {key} = {value!r} is not a valid value") from None
    return out
