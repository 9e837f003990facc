"""The library API's plain types (`mrc.api` re-exports them): the ``mrc.h`` enums and structs (protocol
versions, device capabilities and attributes, context attributes, QP hint, QP init and QP attributes
with their masks, the verbs QP attributes an MRC QP takes), access flags, opcodes, completions, async
events, outgoing packets, memory regions, completion channels and completion queues."""
from __future__ import annotations

import collections
import enum
import os
import select
from typing import TYPE_CHECKING
from dataclasses import dataclass, field

import numpy as np

from mrc.core import dtypes as D
from mrc.errors import EAGAIN, EBUSY, EINVAL, UsageError

if TYPE_CHECKING:
    from mrc.api import Device

MRC_MAX_VENDOR_CFG_SIZE = 128  # bytes of opaque vendor configuration (``vendor_cfg``), mrc.h and mrc_ctl.h


def set_masked(out, mask: int, values) -> None:
    """A query's answer: set on `out` each field of `values` ((mask bit, field name, value), ...) whose bit is in
    `mask`; the others stay as they are (None)."""
    for bit, name, value in values:
        if mask & bit:
            setattr(out, name, value)


class ProtocolVersion(enum.IntFlag):
    """``enum mrc_protocol_version``: MRC wire protocol versions. A device advertises a bitmap of them
    (`DeviceAttr.mrc_protocol_version`); a QP asks for exactly one, or VERSION_0 for the provider's default."""

    VERSION_0 = 0  # unspecified: the provider's default
    VERSION_1 = 1 << 0


MRC_PROTOCOL_VERSION_0 = ProtocolVersion.VERSION_0
MRC_PROTOCOL_VERSION_1 = ProtocolVersion.VERSION_1


class DeviceCap(enum.IntFlag):
    """``enum mrc_device_cap``: what `DeviceAttr.cap` may advertise."""

    TRIM_NACK = 1 << 0  # the responder generates trim NACKs (per QP: cap TRIM_NACK_DEST_UNSUPPORTED turns it off)
    DYNAMIC_MPR = 1 << 1  # MPR may change while a QP runs (per QP: cap DYNAMIC_MPR, both peers)
    SVC_TIME = 1 << 2  # the responder reports its service time (per QP: cap SVC_TIME_DEST_UNSUPPORTED)


MRC_DEVICE_CAP_TRIM_NACK = DeviceCap.TRIM_NACK
MRC_DEVICE_CAP_DYNAMIC_MPR = DeviceCap.DYNAMIC_MPR
MRC_DEVICE_CAP_SVC_TIME = DeviceCap.SVC_TIME


class Access(enum.IntFlag):
    """Memory region access flags (``IBV_ACCESS_*``)."""

    LOCAL_WRITE = 1
    REMOTE_WRITE = 2


class WcOpcode(enum.IntEnum):
    """What a `WorkCompletion` completed."""

    RDMA_WRITE = 1
    RECV_RDMA_WITH_IMM = 2


class SendOpcode(enum.Enum):
    """``ibv_wr_opcode`` names for `QueuePair.post_send`; MRC permits only RDMA_WRITE and RDMA_WRITE_WITH_IMM."""

    RDMA_WRITE = "RDMA_WRITE"
    RDMA_WRITE_WITH_IMM = "RDMA_WRITE_WITH_IMM"
    SEND = "SEND"
    SEND_WITH_IMM = "SEND_WITH_IMM"
    RDMA_READ = "RDMA_READ"
    ATOMIC_CMP_AND_SWP = "ATOMIC_CMP_AND_SWP"
    ATOMIC_FETCH_AND_ADD = "ATOMIC_FETCH_AND_ADD"


WC_STATUS = {v: k for k, v in D.WC_STATUS_NAMES.items()}


@dataclass(frozen=True, repr=False)
class WorkCompletion:
    """One completion (``ibv_wc``): of a posted write (opcode RDMA_WRITE, on the send CQ) or of a
    receive consumed by an incoming Write-with-Immediate (RECV_RDMA_WITH_IMM, on the receive CQ)."""

    wr_id: int
    status: str  # "SUCCESS", "RETRY_EXC_ERR", "WR_FLUSH_ERR", ...
    opcode: WcOpcode
    byte_len: int  # bytes written
    qp_num: int
    imm_data: int | None = None

    @property
    def ok(self) -> bool:
        """True when the status is SUCCESS."""
        return self.status == "SUCCESS"

    def __repr__(self) -> str:
        imm = "" if self.imm_data is None else f", imm_data={self.imm_data:#x}"
        return (f"WorkCompletion(wr_id={self.wr_id}, status={self.status}, opcode={WcOpcode(self.opcode).name}, "
                f"byte_len={self.byte_len} B, qp_num={self.qp_num:#x}{imm})")


# ibv_event_type of each async event kind (mrc_async_event.event_type)
IBV_EVENT_TYPES = {"QP_FATAL": "IBV_EVENT_QP_FATAL", "QP_ACCESS_ERR": "IBV_EVENT_QP_ACCESS_ERR",
                   "CQ_OVERRUN": "IBV_EVENT_CQ_ERR", "PORT_ERR": "IBV_EVENT_PORT_ERR",
                   "PORT_ACTIVE": "IBV_EVENT_PORT_ACTIVE"}


@dataclass(frozen=True, eq=False)
class AsyncEvent:
    """An asynchronous event of the device (``struct mrc_async_event``), from `Device.get_async_event`.

    `kind` names it ("QP_FATAL", "QP_ACCESS_ERR", "CQ_OVERRUN", "PORT_ERR", "PORT_ACTIVE"; `event_type` is the
    ``ibv_event_type`` name), `element` is what it is about: the `QueuePair` (QP events), the
    `CompletionQueue` (CQ_OVERRUN) or the 1-based port number (port events). Every event returned must be
    acknowledged (`Device.ack_async_event`): a QP or CQ with unacknowledged events cannot be destroyed (EBUSY),
    as ``ibv_destroy_qp`` / ``ibv_destroy_cq`` wait for them."""

    kind: str
    qp_num: int | None = None
    port: int | None = None
    detail: str = ""
    qp: object = field(default=None, repr=False)
    cq: object = field(default=None, repr=False)

    @property
    def event_type(self) -> str:
        """The ``ibv_event_type`` name ("IBV_EVENT_QP_FATAL", ...)."""
        return IBV_EVENT_TYPES.get(self.kind, self.kind)

    @property
    def element(self):
        """``mrc_async_event.element``: the QP, the CQ or the port number the event concerns."""
        if self.qp is not None:
            return self.qp
        if self.cq is not None:
            return self.cq
        return self.port


@dataclass(frozen=True)
class OutPacket:
    """A packet the device wants sent: its record, payload, and where it goes."""

    pkt: np.void
    payload: bytes
    dest: object  # the remote address given at RTR (or the endpoint peer)
    port: int  # local NIC port, 1-based
    qp_num: int
    # an endpoint request whose SRv6 EV is an address rather than an EV of a profile: the mrc_ctl_ev_t value
    # (outer destination, then the single SRH segment, 16 bytes each) for an adapter that routes by it
    ev_addr: bytes | None = None


class MemoryRegion:
    """A registered buffer (``ibv_reg_mr``): the responder places writes into it directly."""

    def __init__(self, device: "Device", index: int, buf, access: Access):
        self.device = device
        self.index = index
        self.array = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) else buf.view(np.uint8).reshape(-1)
        if not self.array.flags.writeable and access & Access.REMOTE_WRITE:
            raise UsageError("reg_mr: buffer is read-only but REMOTE_WRITE access was asked for")
        self.addr = int(self.array.ctypes.data)
        self.length = int(self.array.size)
        self.access = access
        row = device.T.mr[index]
        self.lkey = int(row["lkey"])
        self.rkey = int(row["rkey"])

    def __repr__(self) -> str:
        return (f"<MemoryRegion of {self.length} B at {self.addr:#x} on {self.device.name!r}: "
                f"lkey {self.lkey:#x}, rkey {self.rkey:#x}, {self.access!r}>")

    def sge(self, offset: int = 0, length: int | None = None) -> tuple[int, int, int]:
        """(addr, length, lkey) of a slice of this region, like ``struct ibv_sge``."""
        length = self.length - offset if length is None else length
        if offset < 0 or length < 0 or offset + length > self.length:
            raise UsageError(f"sge: offset {offset} + length {length} exceeds the region's {self.length} bytes")
        return (self.addr + offset, length, self.lkey)

    def deregister(self) -> None:
        """``ibv_dereg_mr``: refused while a posted write still reads from the region."""
        if self.device._mrs[self.index] is not self:
            raise UsageError(f"dereg_mr: region lkey {self.lkey:#x} is not registered")
        T = self.device.T
        for qp in self.device._by_qpn.values():
            q = T.qp[qp.index]
            cap = T.wr.shape[1]
            for n in range(int(q["wr_head"]), int(q["wr_tail"])):
                if int(T.wr[q["wr_row"], n % cap]["lkey"]) == self.lkey:
                    raise UsageError(f"dereg_mr: QP {qp.qp_num} has an outstanding write from region lkey {self.lkey:#x} (EBUSY)")
        T.mr[self.index]["valid"] = 0
        self.device._mrs[self.index] = None


class CompChannel:
    """A completion channel (``mrc_comp_channel``, `Context.create_comp_channel`): CQs created with it queue an
    event here when a completion arrives after `CompletionQueue.req_notify`.

    Its file descriptor (`fileno`, ``mrc_get_comp_channel_fd``) is readable while events wait, so an event
    loop can sleep on it: ``await trio.lowlevel.wait_readable(channel)`` in trio,
    ``loop.add_reader(channel.fileno(), ...)`` in asyncio, or ``select``. `get_cq_event` takes the oldest
    event (the CQ and its ``cq_context``); every event taken must be acknowledged
    (`CompletionQueue.ack_events`). The device is sans-IO, so events appear while it is fed packets or
    timers, by whichever task or thread does that.
    """

    def __init__(self, device: "Device"):
        self.device = device
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        self._events: collections.deque = collections.deque()
        self._cqs: set = set()
        self.destroyed = False

    def __del__(self):
        if not getattr(self, "destroyed", True):
            for fd in (self._r, self._w):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def __repr__(self) -> str:
        state = "destroyed" if self.destroyed else f"fd {self._r}, {len(self._events)} event(s) waiting"
        return f"<CompChannel on {self.device.name!r}: {state}, {len(self._cqs)} CQ(s)>"

    def fileno(self) -> int:
        """``mrc_get_comp_channel_fd``: the descriptor that is readable while events wait."""
        self._check()
        return self._r

    @property
    def fd(self) -> int:
        """Same as `fileno`."""
        return self.fileno()

    def _check(self) -> None:
        if self.destroyed:
            raise EINVAL("completion channel: it was destroyed")

    def _post(self, cq) -> None:
        self._events.append(cq)
        try:
            os.write(self._w, b"\1")
        except BlockingIOError:  # the pipe is full (64 KiB of unread events): the deque still holds them all
            pass

    def get_cq_event(self, *, block: bool = True, timeout: float | None = None):
        """``mrc_get_cq_event``: (cq, cq_context) of the oldest event. Blocks until one arrives (or `timeout`
        seconds pass) unless ``block=False``; with none, raises EAGAIN."""
        self._check()
        if not self._events and block:
            select.select([self._r], [], [], timeout)
        if not self._events:
            raise EAGAIN("get_cq_event: no completion event waiting")
        cq = self._events.popleft()
        try:
            os.read(self._r, 1)
        except BlockingIOError:
            pass
        cq._unacked_events += 1
        return cq, cq.cq_context

    async def wait(self) -> None:
        """Sleep until an event waits, inside trio (``trio.lowlevel.wait_readable``) or asyncio (a reader on the
        descriptor): whichever library runs the current task."""
        self._check()
        if self._events:
            return
        try:
            import sniffio

            lib = sniffio.current_async_library()
        except Exception:
            lib = "asyncio"
        if lib == "trio":
            import trio

            await trio.lowlevel.wait_readable(self._r)
            return
        import asyncio

        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        loop.add_reader(self._r, lambda: ready.done() or ready.set_result(None))
        try:
            await ready
        finally:
            loop.remove_reader(self._r)

    def destroy(self) -> None:
        """``mrc_destroy_comp_channel``: EBUSY while CQs still use it."""
        if self.destroyed:
            raise EINVAL("destroy_comp_channel: already destroyed")
        if self._cqs:
            raise EBUSY(f"destroy_comp_channel: {len(self._cqs)} CQ(s) still use it (destroy them first)")
        self.destroyed = True
        os.close(self._r)
        os.close(self._w)

    def __enter__(self) -> "CompChannel":
        return self

    def __exit__(self, *exc) -> None:
        if not self.destroyed:
            self.destroy()


class NotifyingQueue:
    """What every CQ shares (``mrc_cq``: completion CQs and EV event CQs): capacity, the application's
    ``cq_context``, the completion channel and vector, arming (`req_notify`), event acknowledgement
    (`ack_events`) and destruction (`destroy`, or a ``with`` block)."""

    kind = "CQ"

    def __init__(self, device: "Device", cqe, cq_context=None, channel: CompChannel | None = None,
                 comp_vector: int = 0):
        if not isinstance(cqe, (int, np.integer)) or isinstance(cqe, bool):
            raise EINVAL(f"create_cq: cqe = {cqe!r} must be an integer")
        if not 1 <= cqe <= MAX_CQE:
            raise EINVAL(f"create_cq: cqe = {cqe} must be in [1, {MAX_CQE}]")
        if channel is not None:
            if not isinstance(channel, CompChannel):
                raise EINVAL(f"create_cq: channel = {channel!r} is not a CompChannel (Context.create_comp_channel)")
            if channel.destroyed or channel.device is not device:
                raise EINVAL(f"create_cq: channel {channel!r} is destroyed or belongs to another device")
        if comp_vector != 0:
            raise EINVAL(f"create_cq: comp_vector = {comp_vector!r}: this device has one completion vector (0)")
        self.device = device
        self.cqe = int(cqe)
        self.cq_context = cq_context
        self.channel = channel
        self.comp_vector = 0
        self._armed = 0  # 0: not armed, 1: next completion, 2: next solicited completion
        self._unacked_events = 0
        self.destroyed = False
        if channel is not None:
            channel._cqs.add(self)

    def req_notify(self, solicited_only: bool = False) -> None:
        """``mrc_req_notify_cq``: queue one event on the channel when the next completion arrives (with
        `solicited_only`, the next receive completion, the only kind an MRC peer solicits, or the next
        completion in error). One-shot, like ``ibv_req_notify_cq``: arm again after each event."""
        self._check()
        if not isinstance(solicited_only, (bool, int, np.integer)):
            raise EINVAL(f"req_notify_cq: solicited_only = {solicited_only!r} must be a bool")
        self._armed = 2 if solicited_only else 1

    def _notify(self, solicited: bool) -> None:
        if self._armed and (self._armed == 1 or solicited):
            self._armed = 0
            if self.channel is not None and not self.channel.destroyed:
                self.channel._post(self)

    def ack_events(self, nevents: int = 1) -> None:
        """``mrc_ack_cq_events``: acknowledge `nevents` events `CompChannel.get_cq_event` returned for this CQ."""
        if not isinstance(nevents, (int, np.integer)) or isinstance(nevents, bool) or nevents < 0:
            raise EINVAL(f"ack_cq_events: nevents = {nevents!r} must be a non-negative integer")
        if nevents > self._unacked_events:
            raise EINVAL(f"ack_cq_events: nevents = {nevents} but only {self._unacked_events} event(s) of this CQ "
                         f"were taken and not acknowledged")
        self._unacked_events -= int(nevents)

    @property
    def unacked_events(self) -> int:
        """Events taken from the channel for this CQ and not yet acknowledged."""
        return self._unacked_events

    def _check(self) -> None:
        if self.destroyed:
            raise EINVAL(f"{self.kind}: it was destroyed")

    def _busy(self) -> str | None:
        """Why the CQ cannot be destroyed now, or None."""
        if self._unacked_events:
            return f"{self._unacked_events} completion event(s) not acknowledged (ack_events)"
        return None

    def destroy(self) -> None:
        """``mrc_destroy_cq``: EBUSY while QPs use it or events taken from its channel are unacknowledged."""
        if self.destroyed:
            raise EINVAL(f"destroy_cq: this {self.kind} was already destroyed")
        why = self._busy()
        if why:
            raise EBUSY(f"destroy_cq: {why}")
        self._release()

    def _release(self) -> None:
        self.destroyed = True
        if self.channel is not None:
            self.channel._cqs.discard(self)
            self.channel._events = collections.deque(c for c in self.channel._events if c is not self)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if not self.destroyed:
            self.destroy()


class CompletionQueue(NotifyingQueue):
    """Completions of one or more QPs (``mrc_cq``). Overruns are reported, never silently dropped: a
    completion beyond `cqe` is still kept, counted in `overruns` and raises a CQ_OVERRUN async event."""

    def __init__(self, device: "Device", cqe, cq_context=None, channel: CompChannel | None = None,
                 comp_vector: int = 0):
        super().__init__(device, cqe, cq_context, channel, comp_vector)
        self._entries: collections.deque[WorkCompletion] = collections.deque()
        self.overruns = 0

    def __repr__(self) -> str:
        if self.destroyed:
            return f"<CompletionQueue on {self.device.name!r}: destroyed>"
        return (f"<CompletionQueue on {self.device.name!r}: {len(self._entries)} of {self.cqe} entries pending, "
                f"{self.overruns} overrun(s)>")

    def _push(self, wc: WorkCompletion) -> None:
        if len(self._entries) >= self.cqe:
            self.overruns += 1
            self.device._post_async(AsyncEvent("CQ_OVERRUN", qp_num=wc.qp_num, cq=self,
                                               detail=f"{len(self._entries)} entries pending"))
        self._entries.append(wc)
        self._notify(wc.opcode == WcOpcode.RECV_RDMA_WITH_IMM or wc.status != "SUCCESS")

    def poll(self, num_entries: int = 16) -> list[WorkCompletion]:
        """``mrc_poll_cq``: remove and return up to `num_entries` completions, oldest first."""
        self._check()
        if not isinstance(num_entries, (int, np.integer)) or isinstance(num_entries, bool) or num_entries < 0:
            raise EINVAL(f"poll_cq: num_entries = {num_entries!r} must be a non-negative integer")
        out = []
        while self._entries and len(out) < num_entries:
            out.append(self._entries.popleft())
        return out

    def _busy(self) -> str | None:
        users = [qp for qp in self.device._live_qps() if qp.send_cq is self or qp.recv_cq is self]
        if users:
            return f"{len(users)} QP(s) still use it (QP {users[0].qp_num:#x}, ...)"
        if any(e.cq is self for e in self.device._unacked_async()):
            return "an async event about it is not acknowledged (ack_async_event)"
        return super()._busy()

    def __len__(self) -> int:
        return len(self._entries)


MAX_CQE = 1 << 22  # most entries one CQ may be created with (ibv_device_attr.max_cqe of this device)


@dataclass
class DeviceAttr:
    """``struct mrc_device_attr``: the device's MRC limits and capabilities (`Device.query_device`).

    The header nests ``wimm_attr``, ``mpr_attr`` and ``qp_attr``; here they are flat (`max_wimm`,
    `max_wimm_dest`, `max_mpr`, `mpr_resolution`, `max_qp_hint`). `supported` is ``mrc_query_device``'s
    out-argument. The rest are this device's own limits (``ibv_device_attr``-like): QPs, EVs per QP,
    ports, MTU, completion vectors.
    """

    mrc_protocol_version: int = MRC_PROTOCOL_VERSION_1
    max_wimm: int = 65535
    max_wimm_dest: int = 65535
    max_mpr: int = 255
    mpr_resolution: int = 1
    max_qp_hint: int = 0
    cap: int = MRC_DEVICE_CAP_TRIM_NACK
    supported: bool = True
    max_qp: int = 0
    max_ev_per_qp: int = 0
    ports: int = 0
    mtu: int = 4096
    num_comp_vectors: int = 1
    max_cqe: int = MAX_CQE

    @property
    def dynamic_mpr(self) -> int:
        """1 when `cap` has DYNAMIC_MPR (an older spelling of that bit)."""
        return 1 if self.cap & DeviceCap.DYNAMIC_MPR else 0


@dataclass
class ContextAttr:
    """``struct mrc_context_attr``: the API versions the application uses (0: unspecified, the library
    chooses the newest; `mrc.api.version.api_ver` numbers otherwise)."""

    mrc_api_version_used: int = 0
    mrc_vendor_api_version_used: int = 0


class QpHintAttrMask(enum.IntFlag):
    """``enum mrc_qp_hint_attr_mask``: which `QpHintAttr` fields a query or modify names."""

    NUM_QPS_PER_PEER = 1 << 0
    NUM_SEND_PEERS = 1 << 1
    NUM_REMOTE_RECV_PEERS = 1 << 2
    VENDOR_CFG = 1 << 31


@dataclass
class QpHintAttr:
    """``struct mrc_qp_hint_attr``: the traffic pattern the QPs of a hint expect (0: not given). QPs to the
    same peer (`num_qps_per_peer`), peers sent to at once (`num_send_peers`), remote QPs targeting the same
    peer (`num_remote_recv_peers`, the incast at this QP's target), and vendor bytes (`vendor_cfg`: no keys are
    defined for hints here, so it must be empty)."""

    num_qps_per_peer: int = 0
    num_send_peers: int = 0
    num_remote_recv_peers: int = 0
    vendor_cfg: bytes = b""


@dataclass
class QpHintInitAttr:
    """``struct mrc_qp_hint_init_attr``: the attributes a hint is created with."""

    attr: QpHintAttr = field(default_factory=QpHintAttr)


class QpAttrMask(enum.IntFlag):
    """``enum mrc_qp_attr_mask``: which `QpAttr` fields `QueuePair.modify_qp` / `query_qp` name."""

    MAX_WIMM = 1 << 0
    MAX_WIMM_DEST = 1 << 1
    MPR = 1 << 2
    MPR_DEST = 1 << 3
    TIMEOUT = 1 << 4
    EV_PROFILE_ID = 1 << 5
    CC_PROFILE_ID = 1 << 6
    HINT = 1 << 7
    RETRY_CNT = 1 << 8
    CAP = 1 << 9
    VENDOR_CFG = 1 << 31


class QpCapFlags(enum.IntFlag):
    """``enum mrc_qp_cap``: the bits of `QpAttr.cap`."""

    TRIM_NACK_DEST_UNSUPPORTED = 1 << 0  # the peer cannot take trim NACKs: this responder sends none
    DYNAMIC_MPR = 1 << 1  # MPR may change while the QP runs (needs DeviceCap.DYNAMIC_MPR; both peers)
    SVC_TIME_DEST_UNSUPPORTED = 1 << 2  # the peer reports no service time: RTTs are used as measured


@dataclass
class QpAttr:
    """``struct mrc_qp_attr``, flat: ``mpr.mpr`` / ``mpr.mpr_dest`` are `mpr` / `mpr_dest` (units of 128
    PSNs), ``wimm.*`` are `max_wimm` / `max_wimm_dest`, ``profile.*`` are `ev_profile_id` / `cc_profile_id`,
    ``retry.linear_cnt`` / ``exp_cnt`` are `retry_linear` (at most 7) / `retry_exp` (at most 25 = unlimited);
    `timeout` is the exponent t of 1.024 us x 2^t (at most 24); `qp_hint` a `QpHint` or None; `cap` the
    `QpCapFlags` bits; `vendor_cfg` the project's extension attributes as ``b"key=value,key=value"``
    (`mrc.api.device.VENDOR_QP_ATTRS`). A field left None is not given (modify) or was not asked for (query).
    """

    mpr: int | None = None
    mpr_dest: int | None = None
    max_wimm: int | None = None
    max_wimm_dest: int | None = None
    timeout: int | None = None
    ev_profile_id: int | None = None
    cc_profile_id: int | None = None
    retry_linear: int | None = None
    retry_exp: int | None = None
    qp_hint: object = None
    cap: int | None = None
    vendor_cfg: bytes | None = None


class IbvQpAttrMask(enum.IntFlag):
    """``enum ibv_qp_attr_mask`` (libibverbs values): the verbs attributes `QueuePair.modify_qp` /
    `query_qp` take. mrc.h refuses PORT, TIMEOUT and RETRY_CNT (use the MRC ones), RNR_RETRY,
    MIN_RNR_TIMER, MAX_QP_RD_ATOMIC, MAX_DEST_RD_ATOMIC, ALT_PATH and PATH_MIG_STATE."""

    STATE = 1 << 0
    CUR_STATE = 1 << 1
    EN_SQD_ASYNC_NOTIFY = 1 << 2
    ACCESS_FLAGS = 1 << 3
    PKEY_INDEX = 1 << 4
    PORT = 1 << 5
    QKEY = 1 << 6
    AV = 1 << 7
    PATH_MTU = 1 << 8
    TIMEOUT = 1 << 9
    RETRY_CNT = 1 << 10
    RNR_RETRY = 1 << 11
    RQ_PSN = 1 << 12
    MAX_QP_RD_ATOMIC = 1 << 13
    ALT_PATH = 1 << 14
    MIN_RNR_TIMER = 1 << 15
    SQ_PSN = 1 << 16
    MAX_DEST_RD_ATOMIC = 1 << 17
    PATH_MIG_STATE = 1 << 18
    CAP = 1 << 19
    DEST_QPN = 1 << 20


@dataclass
class IbvQpAttr:
    """The ``struct ibv_qp_attr`` fields an MRC QP uses: `qp_state` / `cur_qp_state` ("RESET", "INIT",
    "RTR", "RTS", "ERROR"), `dest_qp_num`, `rq_psn`, `sq_psn`, `remote_address` (``ah_attr``: the peer's
    address, a GID or whatever the network uses), `path_mtu` (bytes), `qp_access_flags` (`Access`),
    `pkey_index` (0), and, on query, `cap` (`QpCap`)."""

    qp_state: str | None = None
    cur_qp_state: str | None = None
    dest_qp_num: int | None = None
    rq_psn: int | None = None
    sq_psn: int | None = None
    remote_address: object = None
    path_mtu: int | None = None
    qp_access_flags: int | None = None
    pkey_index: int | None = None
    cap: object = None


@dataclass
class QpInitAttr:
    """``struct mrc_qp_init_attr``: what `Context.create_qp` takes (and `QueuePair.query_qp` returns).
    `pd` is accepted and kept (this library has no protection domains: a QP may use any of its device's
    memory regions); `send_ops_flags` may name RDMA_WRITE and RDMA_WRITE_WITH_IMM only (`SEND_OPS_FLAGS`)."""

    send_cq: object = None
    recv_cq: object = None
    cap: object = None
    qp_context: object = None
    sq_sig_all: int = 1
    pd: object = None
    send_ops_flags: int = 0
    protocol_version: int = MRC_PROTOCOL_VERSION_0


# ibv_qp_create_send_ops_flags (libibverbs values) an MRC QP accepts
IBV_QP_EX_WITH_RDMA_WRITE = 1 << 0
IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM = 1 << 1
SEND_OPS_FLAGS = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM
