"""The library API's plain types: access flags, opcodes, completions, async events, outgoing
packets, memory regions, completion queues and device attributes (`mrc.api` re-exports them)."""
from __future__ import annotations

import collections
import enum
from typing import TYPE_CHECKING
from dataclasses import dataclass, field

import numpy as np

from mrc.core import dtypes as D
from mrc.errors import UsageError

if TYPE_CHECKING:
    from mrc.api import Device

MRC_PROTOCOL_VERSION_1 = 1 << 0
MRC_DEVICE_CAP_TRIM_NACK = 1 << 0  # the responder can send trim NACKs (per QP: RTR attribute trim_nack_dest)
MRC_DEVICE_CAP_DYNAMIC_MPR = 1 << 1  # not supported here


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


@dataclass(frozen=True)
class AsyncEvent:
    """An asynchronous event of the device (``ibv_async_event``), from `Device.get_async_event`."""

    kind: str  # "QP_FATAL", "QP_ACCESS_ERR", "CQ_OVERRUN", "PORT_ERR", "PORT_ACTIVE"
    qp_num: int | None = None
    port: int | None = None
    detail: str = ""


@dataclass(frozen=True)
class OutPacket:
    """A packet the device wants sent: its record, payload, and where it goes."""

    pkt: np.void
    payload: bytes
    dest: object  # the remote address given at RTR (or the endpoint peer)
    port: int  # local NIC port, 1-based
    qp_num: int


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


class CompletionQueue:
    """Completions of one or more QPs (``ibv_cq``). Overruns are reported, never silently dropped."""

    def __init__(self, device: "Device", cqe: int):
        if cqe < 1:
            raise UsageError(f"create_cq: cqe must be at least 1, got {cqe}")
        self.device = device
        self.cqe = cqe
        self._entries: collections.deque[WorkCompletion] = collections.deque()
        self.overruns = 0

    def __repr__(self) -> str:
        return (f"<CompletionQueue on {self.device.name!r}: {len(self._entries)} of {self.cqe} entries pending, "
                f"{self.overruns} overrun(s)>")

    def _push(self, wc: WorkCompletion) -> None:
        if len(self._entries) >= self.cqe:
            self.overruns += 1
            self.device._async.append(AsyncEvent("CQ_OVERRUN", qp_num=wc.qp_num, detail=f"{len(self._entries)} entries pending"))
        self._entries.append(wc)

    def poll(self, num_entries: int = 16) -> list[WorkCompletion]:
        """``ibv_poll_cq``: remove and return up to `num_entries` completions, oldest first."""
        out = []
        while self._entries and len(out) < num_entries:
            out.append(self._entries.popleft())
        return out

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class DeviceAttr:
    """``mrc_device_attr``: the device's MRC limits and capabilities (`Device.query_device`)."""

    mrc_protocol_version: int = MRC_PROTOCOL_VERSION_1
    max_wimm: int = 65535
    max_wimm_dest: int = 65535
    max_mpr: int = 255
    mpr_resolution: int = 1
    dynamic_mpr: int = 0
    max_qp_hint: int = 0
    max_qp: int = 0
    max_ev_per_qp: int = 0
    ports: int = 0
    mtu: int = 4096
    cap: int = MRC_DEVICE_CAP_TRIM_NACK
    extra: dict = field(default_factory=dict)
