"""The adapter interface: how the suite drives an MRC implementation under test (IUT).

The interface is sans-IO, like aioquic's ``QuicConnection``: the suite owns
the clock and the network. Every call that can change protocol state takes
``now`` (integer picoseconds); packets cross the boundary as **bytes**, from
the first IP header to the ICRC (RoCEv2 without the Ethernet header), so an
adapter for a NIC, a simulator model or another language only has to move
bytes and numbers.

An `Adapter` makes `Endpoint`s. An endpoint is one NIC (``ports`` NIC ports,
one per plane) with one queue pair on it, configured by an `EndpointConfig`.
The suite creates endpoints, exchanges their QP numbers out of band
(`Endpoint.connect`, as MRC applications do: there is no RDMA-CM), posts
work, feeds packets (`Endpoint.receive`) and collects what the endpoint sends
(`Endpoint.transmit`), and fires timers (`Endpoint.next_deadline`,
`Endpoint.handle_timer`). It reads completions (`Endpoint.poll`) and
asynchronous events (`Endpoint.events`).

Controller operations are optional *features*: an adapter lists the ones it
supports in `Adapter.features` and a case that needs a missing one is
reported SKIP, not FAIL. `docs/conformance.md` explains how to write an
adapter; `mrc.conformance.reference` is the reference implementation's.
"""
from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass, field

from mrc.errors import UsageError

# Optional features (Adapter.features). Everything else in `Endpoint` is required.
FEATURES = {
    "ev_query": "Endpoint.ev_table(): the QP's EV set with each EV's port and state (QUERY_EV_ARRAY / QUERY_EV_STATE)",
    "ev_modify": "Endpoint.set_ev_state(): MODIFY_EV_STATE (DENIED, GOOD, ASSUMED_BAD) from the controller",
    "ev_events": "Endpoint.events() reports EV events (transitions to ASSUMED_BAD and GOOD)",
    "ev_fields": "EndpointConfig.ev_format / ev_fields: EV profiles defined by field definitions (EXP and GEN)",
    "port_status": "Endpoint.set_port_state(): a local NIC port goes down or comes back",
    "cc_query": "Endpoint.cc_state(): the congestion window in bytes",
    "ep_probe": "Endpoint.ev_probe() / ep_responses(): EV-probe endpoint requests to the peer and their answers "
                "with the RTT (mrc_ctl_ep_batch_send, op EV_PROBE)",
    "ev_mode_udp": "EndpointConfig.ev_mode = 'UDP' (16-bit EV in the UDP source port)",
    "ev_mode_srv6": "EndpointConfig.ev_mode = 'SRV6' (IPv6-in-IPv6, uSID carrier from the EV profile)",
    "ctl": "Endpoint.ctl(): the mrc_ctl.h operations on the endpoint's device (CTL_CALLS), each answered with "
           "the errno the header names for a refusal",
}

# The controller surface (feature "ctl"): Endpoint.ctl(call, args, now) -> answer. Calls are mrc_ctl.h's (and mrc.h's
# create_qp / destroy_qp) without the prefix; attribute dicts carry the header's struct fields under their C names,
# and the keys present are the attr_mask (a key absent is a bit not set). An EV is [value, port] as the controller
# gave it (the 32-bit value, 16-bit in UDP mode; port 1-based), MRC_CTL_EV_UNPOPULATED is null. Every answer has
# "errno": null on success, else the header's errno name ("EINVAL", "EBUSY", "ENOENT", "E2BIG", ...) with "error"
# (a message), for EV_OP "entry" (the index of the entry that failed), for E2BIG "required" (the entry_count or
# field_count needed). Profile ids are the caller's; the
# endpoint's own QP is bound to EV format, EV and CC profiles 1, so cases use other ids for fresh profiles.
CTL_CALLS = {
    "query_device": "-> ev_count_align, ev_max_count_profile, ev_free_count, ev_max_width, phy_port_mask (bit N = "
                    "port N), opt_attr [MRC_CTL_OPT_CAP_* names without the prefix], algorithms [CC algorithm names]",
    "modify_ev_fmt_profile": "profile_id, state?, mode? (STEV | UDP | SRV6), fields? [widths]",
    "modify_ev_profile": "profile_id, profile_state?, cur_profile_state?, ev_mode? (AUTO | EXP | GEN), "
                         "ev_fmt_profile_id?, ev_count?, ev_min_active?, ev_event_mask? [states], ev_op? {op, "
                         "entries [{ev, ev_new?, state?, all_copies?}]}, ev_fields_op? {op, fields [[width, "
                         "init_val, min_val, max_val, mask]]} -> entries [{ev, state}] (the EV_OP entries)",
    "query_ev_profile": "profile_id, ev_op? {op: QUERY_EV_STATE | QUERY_EV_ARRAY, entries?, entry_count?} -> "
                        "profile_state, ev_mode, ev_count, ev_min_active, ev_event_mask, entries, entry_count",
    "ev_op": "profile_id, op, entries: modify_ev_profile with only EV_OP -> entries",
    "modify_cc_profile": "profile_id, profile_state?, cur_profile_state?, algorithm? (a name, or null: no CC), "
                         "cc_config? {mrc_ctl_cc_nscc_cfg fields, times in ns}",
    "query_cc_profile": "profile_id -> profile_state, algorithm",
    "create_qp": "ev_profile_id, cc_profile_id -> qp: a new QP on the device taken RESET -> INIT with those "
                 "profiles (mrc.h's profile ids, bound at INIT)",
    "destroy_qp": "qp (a QP made by create_qp)",
    "modify_port": "port, port_admin_state (ENABLED | DISABLED)",
    "query_port": "port -> port_admin_state, state (ibv_query_port: ACTIVE | DOWN)",
    "create_ev_event_cq": "cqe -> cq",
    "poll_ev_event": "cq, num_entries -> events [{profile_id, ev, state, drop_count}]",
    "ep_batch_send": "op (EV_PROBE), req_tc (DSCP), rsp_timeout_ns, requests [{req_id, ev}] -> batch: the requests "
                     "leave to the QP's peer; mrc_ctl_ep_batch_send_wait split in two, as the suite owns the clock",
    "ep_batch_wait": "batch -> done, responses [{req_id, port, rtt_ns, adj_svc_time}], errno ETIMEDOUT once "
                     "rsp_timeout has passed with answers missing",
}

EV_STATES = ("GOOD", "SKIP", "ASSUMED_BAD", "DENIED")
QP_STATES = ("RESET", "INIT", "RTR", "RTS", "ERROR")
WC_STATUSES = ("SUCCESS", "WR_FLUSH_ERR", "REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR")


@dataclass
class EvFieldDef:
    """One EV profile field (``struct mrc_ctl_ev_field``): width, init_val, min_val, max_val, mask."""

    width: int
    init_val: int = 0
    min_val: int = 0
    max_val: int = 0
    mask: int = 0


@dataclass
class EndpointConfig:
    """What the suite asks of one endpoint. Times are ps unless the name says ns.

    EV profile: by default ``evs`` lists explicit 32-bit EVs (16-bit in UDP
    mode) with their 1-based port, as an EXP profile with one full-width
    field. With ``ev_format`` (format field widths) and ``ev_fields``, the
    profile is EXP over raw EVs ``evs`` (raw values, expanded by the fields)
    or, with ``ev_gen_count``, GEN (the implementation draws that many EVs).
    ``ev_active``: EVs in the active set (None: the implementation's choice).

    ``cc``: the CC profile, ``{"algorithm": "uet-1.0-nscc" | "none", ...}``
    plus ``mrc_ctl_cc_nscc_cfg`` fields (times in ns, as in the C struct).

    ``dscp``: DSCP code points of the traffic classes (mrc-public-notes 2.6).
    ``options``: implementation-specific knobs; an adapter ignores those it
    does not know.
    """

    address: bytes = b""
    ports: int = 2
    mtu: int = 4096
    ev_mode: str = "STEV"
    evs: list = field(default_factory=list)  # [(ev or raw ev, port)]
    ev_format: list | None = None
    ev_fields: list | None = None  # [EvFieldDef]
    ev_gen_count: int | None = None
    ev_active: int | None = None
    ev_min_active: int = 0
    ev_event_mask: tuple = ("ASSUMED_BAD", "GOOD")
    cc: dict = field(default_factory=lambda: {"algorithm": "uet-1.0-nscc", "base_rtt": 8000})
    mpr: int = 8
    mpr_dest: int = 8
    timeout: int = 8
    retry_linear: int = 7
    retry_exp: int = 7
    max_wimm: int = 128
    max_wimm_dest: int = 128
    dscp: dict = field(default_factory=lambda: {"data": 4, "retx": 8, "control": 46, "trimmed": 12,
                                                "trimmed_lasthop": 16, "no_trim": 0})
    seed: int = 1
    options: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.ev_mode not in ("STEV", "UDP", "SRV6"):
            raise UsageError(f"EndpointConfig.ev_mode = {self.ev_mode!r}: one of STEV, UDP, SRV6")
        if not 1 <= self.ports <= 8:
            raise UsageError(f"EndpointConfig.ports = {self.ports!r}: 1..8 NIC ports")
        if self.address and len(self.address) != 16:
            raise UsageError(f"EndpointConfig.address: 16 bytes (an IPv6 address), got {len(self.address)}")
        self.ev_fields = [f if isinstance(f, EvFieldDef) else EvFieldDef(**f) for f in self.ev_fields or []] or None

    def replace(self, **changes) -> "EndpointConfig":
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["address"] = self.address.hex()
        d["evs"] = [list(e) for e in self.evs]
        d["ev_event_mask"] = list(self.ev_event_mask)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "EndpointConfig":
        d = dict(d)
        d["address"] = bytes.fromhex(d.get("address", ""))
        d["evs"] = [tuple(e) for e in d.get("evs", [])]
        d["ev_event_mask"] = tuple(d.get("ev_event_mask", ()))
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise UsageError(f"EndpointConfig: unknown key(s) {sorted(unknown)}")
        return cls(**d)


@dataclass(frozen=True)
class Region:
    """A registered memory region of an endpoint, as its peer addresses it (RETH va / rkey)."""

    va: int
    rkey: int
    length: int


@dataclass(frozen=True)
class Completion:
    """A work completion. kind "send" (a posted write finished) or "recv" (a Write-with-Immediate arrived)."""

    kind: str
    wr_id: int
    status: str  # one of WC_STATUSES
    byte_len: int = 0
    imm: int | None = None


@dataclass(frozen=True)
class Event:
    """An asynchronous event: "QP_FATAL", "QP_ACCESS_ERR", "EV_STATE" (ev, port, state, drop_count),
    "PORT_ERR" / "PORT_ACTIVE" (port)."""

    kind: str
    ev: int | None = None
    port: int | None = None
    state: str | None = None
    drop_count: int = 0
    detail: str = ""


@dataclass(frozen=True)
class ProbeAnswer:
    """The answer to an EV probe (``mrc_ctl_ep_rsp``): its request id, the local port (1-based) it came back
    on, and the round-trip time in ns."""

    req_id: int
    port: int
    rtt_ns: int


@dataclass(frozen=True)
class EvInfo:
    ev: int  # the 32-bit value carried in the packets (and reflected in SACK / NACK entropy)
    port: int  # 1-based NIC port (plane + 1)
    state: str  # one of EV_STATES


class Endpoint(abc.ABC):
    """One NIC with one QP. All times are integer picoseconds."""

    qpn: int  # this QP's number (24 bits)
    address: bytes  # 16-byte IPv6 address of the NIC
    ports: int

    @abc.abstractmethod
    def connect(self, peer_qpn: int, peer_address: bytes, *, sq_psn: int, rq_psn: int, now: int) -> None:
        """Move the QP to RTS towards the peer: first PSN sent ``sq_psn``, first PSN expected ``rq_psn``."""

    @abc.abstractmethod
    def reg_mr(self, length: int) -> Region:
        """Register a zeroed buffer of `length` bytes for remote writes."""

    @abc.abstractmethod
    def read_mr(self, region: Region) -> bytes:
        """The current bytes of a region registered by `reg_mr`."""

    @abc.abstractmethod
    def post_write(self, wr_id: int, data: bytes, *, remote_va: int, rkey: int, imm: int | None, now: int) -> None:
        """Post an RDMA Write (Write-with-Immediate when `imm` is not None) of `data`."""

    @abc.abstractmethod
    def post_recv(self, wr_id: int) -> None:
        """Post a receive, consumed by an incoming Write-with-Immediate."""

    @abc.abstractmethod
    def receive(self, data: bytes, port: int, now: int) -> None:
        """A packet (bytes from the first IP header) arrived on NIC port `port` (1-based)."""

    @abc.abstractmethod
    def transmit(self, now: int) -> list[tuple[int, bytes]]:
        """Everything the endpoint sends at `now`, in order, as (port, bytes)."""

    @abc.abstractmethod
    def next_deadline(self) -> int | None:
        """The earliest time a timer is due, or None."""

    @abc.abstractmethod
    def handle_timer(self, now: int) -> None:
        """Fire every timer due at or before `now` (never called before `next_deadline`)."""

    @abc.abstractmethod
    def poll(self) -> list[Completion]:
        """Completions since the last call, in the order the implementation delivered them."""

    @abc.abstractmethod
    def events(self) -> list[Event]:
        """Asynchronous events since the last call."""

    @abc.abstractmethod
    def qp_state(self) -> str:
        """One of QP_STATES."""

    # --- optional features -----------------------------------------------------------
    def ev_table(self) -> list[EvInfo]:
        raise NotImplementedError("ev_query")

    def set_ev_state(self, ev: int, state: str, now: int) -> None:
        raise NotImplementedError("ev_modify")

    def set_port_state(self, port: int, up: bool, now: int) -> None:
        raise NotImplementedError("port_status")

    def cc_state(self) -> dict:
        raise NotImplementedError("cc_query")

    def ev_probe(self, req_id: int, ev: int, port: int, now: int) -> None:
        """Send the QP's peer an EV-probe endpoint request `req_id` on `port` with EV `ev` (as the controller's
        ``mrc_ctl_ep_batch_send`` does)."""
        raise NotImplementedError("ep_probe")

    def ep_responses(self) -> list[ProbeAnswer]:
        """Answers to this endpoint's EV probes since the last call (each request answered at most once)."""
        raise NotImplementedError("ep_probe")

    def ctl(self, call: str, args: dict | None = None, now: int = 0) -> dict:
        """A controller operation on this endpoint's device (`CTL_CALLS`), answered as a JSON-able dict."""
        raise NotImplementedError("ctl")

    def close(self) -> None:
        """Release the endpoint (optional)."""


class Adapter(abc.ABC):
    """Makes endpoints of one implementation."""

    name: str = "adapter"
    features: frozenset = frozenset()

    @abc.abstractmethod
    def create_endpoint(self, cfg: EndpointConfig) -> Endpoint:
        """A new endpoint with its QP in INIT (profiles bound), ready for `Endpoint.connect`."""

    def close(self) -> None:
        """Release everything (optional)."""


def check_features(names) -> frozenset:
    unknown = set(names) - set(FEATURES)
    if unknown:
        raise UsageError(f"unknown adapter feature(s) {sorted(unknown)}; known: {sorted(FEATURES)}")
    return frozenset(names)
