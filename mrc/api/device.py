"""`Device` (an MRC NIC: ``ibv_context`` with its ``mrc.h`` calls), `connect`, and the names `mrc.api` exports
(its text describes them); `QueuePair` is in `mrc.api.qp`, `Context` and `QpHint` in `mrc.api.context`."""
from __future__ import annotations

import collections
import os
import secrets
import select

import numpy as np

from mrc.api import corefeatures
from mrc.api.context import MAX_QP_HINT, Context, QpHint, create_context
from mrc.api.qp import (
    ALLOWED_ATTRS, REQUIRED_ATTRS, VENDOR_QP_ATTRS, QpCap, QueuePair, check_destroy, is_int,
)
from mrc.api.types import (
    IBV_QP_EX_WITH_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, MRC_DEVICE_CAP_DYNAMIC_MPR, MRC_DEVICE_CAP_SVC_TIME,
    MRC_DEVICE_CAP_TRIM_NACK, MRC_MAX_VENDOR_CFG_SIZE, MRC_PROTOCOL_VERSION_0, MRC_PROTOCOL_VERSION_1, SEND_OPS_FLAGS,
    WC_STATUS, Access, AsyncEvent, CompChannel, CompletionQueue, ContextAttr, DeviceAttr, DeviceCap, IbvQpAttr,
    IbvQpAttrMask, MemoryRegion, OutPacket, ProtocolVersion, QpAttr, QpAttrMask, QpCapFlags, QpHintAttr,
    QpHintAttrMask, QpHintInitAttr, QpInitAttr, SendOpcode, WcOpcode, WorkCompletion,
)
from mrc.api.version import (
    MRC_API_CURRENT_VERSION, MRC_API_LAST_SUPPORTED_VERSION, MRC_API_VER_LATEST, MRC_VENDOR_API_CURRENT_VERSION,
    MRC_VENDOR_API_LAST_SUPPORTED_VERSION, VersionInfo, api_ver, query_version,
)
from mrc.core import dispatch, dtypes as D, qp as core_qp, tables
from mrc.core.rng import seed_state
from mrc.ctl import Controller
from mrc.errors import EAGAIN, EINVAL, ENOTSUP, UsageError
from mrc.wire.constants import ENDPOINT_QPN
from mrc.wire.records import PKT

__all__ = ["Device", "QueuePair", "Context", "QpHint", "connect", "create_context", "query_version", "api_ver",
           "VersionInfo", "QpCap", "REQUIRED_ATTRS", "ALLOWED_ATTRS", "VENDOR_QP_ATTRS", "MRC_API_CURRENT_VERSION",
           "MRC_API_LAST_SUPPORTED_VERSION", "MRC_API_VER_LATEST", "MRC_VENDOR_API_CURRENT_VERSION",
           "MRC_VENDOR_API_LAST_SUPPORTED_VERSION", "MRC_MAX_VENDOR_CFG_SIZE", "MRC_PROTOCOL_VERSION_0",
           "MRC_PROTOCOL_VERSION_1", "MRC_DEVICE_CAP_TRIM_NACK", "MRC_DEVICE_CAP_DYNAMIC_MPR", "MRC_DEVICE_CAP_SVC_TIME",
           "IBV_QP_EX_WITH_RDMA_WRITE", "IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM", "WC_STATUS", "Access", "AsyncEvent",
           "CompChannel", "CompletionQueue", "ContextAttr", "DeviceAttr", "DeviceCap", "IbvQpAttr", "IbvQpAttrMask",
           "MemoryRegion", "OutPacket", "ProtocolVersion", "QpAttr", "QpAttrMask", "QpCapFlags", "QpHintAttr",
           "QpHintAttrMask", "QpHintInitAttr", "QpInitAttr", "SendOpcode", "WcOpcode", "WorkCompletion"]

MAX_TABLE_BYTES = 1 << 31  # the default bound on a Device's core tables (2 GiB; Device(max_table_bytes=...))


class _IdSource:
    """Where a Device's identifiers (QPNs, R_Keys / L_Keys, initial PSNs, per-QP generator seeds) come from.

    Without a seed they are drawn from the operating system's CSPRNG (`secrets`): an off-path sender
    cannot guess a QPN, an R_Key or a PSN window from the seed or from another run. With an explicit
    seed (tests, reproducible examples) they come from ``numpy.random.default_rng(seed)`` and QPNs are
    numbered ``0x10 + (seed % 0x1000) x 0x10 + n``, as before.
    """

    def __init__(self, seed: int | None):
        self.seed = seed
        self._rng = None if seed is None else np.random.default_rng(seed)
        self._next_qpn = None if seed is None else 0x10 + (seed % 0x1000) * 0x10

    def psn(self) -> int:
        """An initial PSN (24 bits)."""
        return secrets.randbits(24) if self._rng is None else int(self._rng.integers(0, 1 << 24))

    def key_pair(self) -> tuple[int, int]:
        """(L_Key, R_Key) candidates, 32 bits each (the caller rejects 0 and keys in use)."""
        if self._rng is None:
            return secrets.randbits(32), secrets.randbits(32)
        lkey, rkey = (int(x) for x in self._rng.integers(1, 1 << 32, size=2))
        return lkey, rkey

    def qpn(self, in_use) -> int:
        """A QPN not in `in_use`, never the endpoint QPN or 0..0xF."""
        if self._rng is not None:
            qpn = self._next_qpn
            self._next_qpn += 1
            return qpn
        while True:
            qpn = secrets.randbits(24)
            if qpn >= 0x10 and qpn != ENDPOINT_QPN and qpn not in in_use:
                return qpn

    def profile_seed(self, profile_id: int) -> int:
        """The seed an AUTO / generated EV profile draws its EVs from."""
        return secrets.randbits(63) if self.seed is None else self.seed * 1_000_003 + profile_id

    def stream_seed(self, qpn: int) -> int:
        """The seed of a QP's own generator (EV choices): from (seed, QPN), or fresh random bits."""
        return seed_state(secrets.randbits(64) if self.seed is None else self.seed, qpn)


class Device:
    """One MRC NIC with `ports` NIC ports (one per plane): the ``ibv_context`` the ``mrc.h`` calls start from.

    `address` is how peers reach this device: whatever your network uses (a `mrc.io.Peer`, a
    string for `mrc.testing.simnet.SimNet`, a GID); by default the device's `name`. `port_rate_bps` is
    one port's rate (bits/s; NSCC scales its windows by all ports together), `mtu` the payload bytes
    per packet. `seed` seeds every random choice the device makes (QPNs, keys, first PSNs, EVs), for
    reproducible runs; without it they come from the operating system's CSPRNG. `ev_count_align` is
    the controller's ``ev_count_align`` (EV profile counts must be multiples of it).

    The core's tables are allocated here, for `max_qp` QPs of `max_ev` EVs, `max_wr` work requests
    and a PSN window of `max_mpr` x 128: each argument is bounded on its own, and their product by
    `max_table_bytes` (default 2 GiB; the error gives the estimate).
    """

    def __init__(self, name: str = "mrc0", *, ports: int = 2, max_qp: int = 16, max_ev: int = 256,
                 max_mpr: int = 8, max_wr: int = 64, n_mr: int = 64, port_rate_bps: int = 100 * 10**9,
                 mtu: int = 4096, seed: int | None = None, address: object = None, ev_count_align: int = 1,
                 max_table_bytes: int = MAX_TABLE_BYTES):
        if not isinstance(name, str):
            raise EINVAL(f"Device: name must be a str, got {name!r}")
        for key, value, lo, hi in (("ports", ports, 1, D.MAX_PLANES), ("max_qp", max_qp, 1, 1 << 16),
                                   ("max_ev", max_ev, 1, 1 << 16), ("max_mpr", max_mpr, 1, 255),
                                   ("max_wr", max_wr, 1, 1 << 16), ("n_mr", n_mr, 1, 1 << 16),
                                   ("mtu", mtu, 64, 9216), ("port_rate_bps", port_rate_bps, 10**6, 10**13),
                                   ("ev_count_align", ev_count_align, 1, 1 << 16),
                                   ("max_table_bytes", max_table_bytes, 1 << 20, 1 << 50)):
            if not is_int(value) or not lo <= value <= hi:
                raise EINVAL(f"Device: {key} must be in [{lo}, {hi}] (an integer), got {value!r}")
        if seed is not None and (not is_int(seed) or seed < 0):
            raise EINVAL(f"Device: seed must be None (random identifiers) or an integer >= 0, got {seed!r}")
        window = 128
        while window < max_mpr * D.MPR_UNIT:
            window <<= 1
        need = table_bytes(max_qp, max_ev, window, max_wr, n_mr)
        if need > max_table_bytes:
            raise EINVAL(f"Device: max_qp = {max_qp} x max_ev = {max_ev} (and max_mpr = {max_mpr}, max_wr = {max_wr}) "
                         f"need {need / 2**30:.1f} GiB of core tables, more than max_table_bytes = "
                         f"{max_table_bytes / 2**30:.1f} GiB (raise it if you mean it)")
        self.name = name
        self.address = name if address is None else address
        self.max_mpr = max_mpr
        self.ports = ports
        self.mtu = mtu
        self.seed = seed
        self.port_rate_bps = port_rate_bps
        self.T = tables.allocate(max_qp, max_ev=max_ev, window=window, max_wr=max_wr, max_recv=max_wr,
                                 n_mr=n_mr, n_cc=64, evt_capacity=4096)
        self._ids = _IdSource(seed)
        self._qps: list[QueuePair | None] = [None] * max_qp
        self._by_qpn: dict[int, QueuePair] = {}
        self._mrs: list[MemoryRegion | None] = [None] * n_mr
        self._async: collections.deque[AsyncEvent] = collections.deque()
        self._async_taken: list[AsyncEvent] = []  # returned by get_async_event, not yet acknowledged
        self._async_pipe: tuple[int, int] | None = None  # created by async_fd on first use
        self._hints: set = set()
        self._out = np.zeros(64, dtype=PKT)  # next_packets fills up to 64 packets per call
        self._kinds = np.zeros(64, dtype=np.int64)
        self._src = np.zeros((64, 3), dtype=np.int64)
        self.ctl = Controller(self, ev_count_align=ev_count_align)

    def __repr__(self) -> str:
        qps = sum(q is not None for q in self._qps)
        rate = self.port_rate_bps / 1e9
        return (f"<Device {self.name!r} at {self.address!r}: {self.ports} port(s) x {rate:g} Gb/s, MTU {self.mtu} B, "
                f"{qps} QP(s)>")

    def __del__(self):
        pipe = getattr(self, "_async_pipe", None)
        if pipe is not None:
            for fd in pipe:
                try:
                    os.close(fd)
                except OSError:
                    pass

    # -- device and contexts ------------------------------------------------------------------
    def query_device(self, context: Context | None = None) -> DeviceAttr:
        """``mrc_query_device`` (and ``mrc_query_device_ex`` with a `context` of this device): the device's
        limits and capabilities (``supported``: MRC is). `DeviceAttr.cap` advertises what the core does:
        trim NACKs always; dynamic MPR and responder service time when the core has them
        (`mrc.api.corefeatures`)."""
        if context is not None and (not isinstance(context, Context) or context.device is not self):
            raise EINVAL(f"query_device_ex: {context!r} is not a context of device {self.name!r}")
        cap = DeviceCap.TRIM_NACK
        if corefeatures.dynamic_mpr():
            cap |= DeviceCap.DYNAMIC_MPR
        if corefeatures.svc_time():
            cap |= DeviceCap.SVC_TIME
        return DeviceAttr(max_mpr=self.max_mpr, max_qp=len(self._qps), max_ev_per_qp=self.T.ev.shape[1],
                          ports=self.ports, mtu=self.mtu, cap=int(cap), max_qp_hint=MAX_QP_HINT,
                          max_wimm=setup_bounds("max_wimm"), max_wimm_dest=setup_bounds("max_wimm_dest"))

    def create_context(self, context_attr: ContextAttr | None = None) -> Context:
        """``mrc_create_context`` on this device (`mrc.api.create_context`)."""
        return Context(self, context_attr)

    def query_port(self, port_num: int) -> dict:
        """``ibv_query_port`` as far as MRC needs it: ``state`` "ACTIVE" or "DOWN" (link down, or
        administratively disabled: mrc_ctl.h "Providers must report disabled ports as IBV_PORT_DOWN"),
        ``link_up``, ``admin_state``, and the port's ``rate_bps`` and ``mtu``."""
        self.ctl._check_port(port_num)
        bit = 1 << (port_num - 1)
        return {"state": "ACTIVE" if self.ctl.local_ports & bit else "DOWN", "link_up": bool(self.ctl.phys_ports & bit),
                "admin_state": "DISABLED" if self.ctl.admin_down & bit else "ENABLED", "rate_bps": self.port_rate_bps,
                "mtu": self.mtu}

    # -- resources ----------------------------------------------------------------------
    def reg_mr(self, buf, access: Access = Access.LOCAL_WRITE | Access.REMOTE_WRITE) -> MemoryRegion:
        """``ibv_reg_mr``: register a writable buffer (bytearray, numpy array, ...) so that writes can
        read from it (its `MemoryRegion.sge`) and peers can write into it (its ``addr`` and ``rkey``)."""
        if isinstance(buf, np.ndarray) and buf.dtype.hasobject:
            raise EINVAL(f"reg_mr: buf is a numpy array of {buf.dtype} (Python objects, not memory a peer can write): "
                         f"register a byte buffer")
        try:
            view = memoryview(buf)
        except (TypeError, ValueError):
            raise EINVAL(f"reg_mr: buf must be a writable buffer (bytearray, numpy array, ...), got "
                         f"{type(buf).__name__}") from None
        if not view.c_contiguous:
            raise EINVAL("reg_mr: buf is not contiguous: remote writes must land in the caller's memory, so "
                         "register the whole array (or a contiguous slice of it), not a strided view")
        if view.nbytes == 0:
            raise EINVAL("reg_mr: buf is empty")
        if not isinstance(access, (Access, int)) or isinstance(access, bool) or int(access) & ~int(Access.LOCAL_WRITE | Access.REMOTE_WRITE):
            raise EINVAL(f"reg_mr: access must be Access flags (LOCAL_WRITE, REMOTE_WRITE), got {access!r}")
        try:
            index = self._mrs.index(None)
        except ValueError:
            raise EINVAL(f"reg_mr: all {len(self._mrs)} memory regions are in use") from None
        keys = {int(r["lkey"]) for r in self.T.mr if r["valid"]} | {int(r["rkey"]) for r in self.T.mr if r["valid"]}
        lkey = rkey = 0
        while lkey in keys or rkey in keys or lkey == rkey or lkey == 0 or rkey == 0:
            lkey, rkey = self._ids.key_pair()
        row = self.T.mr[index]
        row["lkey"], row["rkey"] = lkey, rkey
        row["access"] = 1 if access & Access.REMOTE_WRITE else 0
        mr = MemoryRegion(self, index, buf, access)
        row["va"], row["length"], row["valid"] = mr.addr, mr.length, 1
        self._mrs[index] = mr
        return mr

    def _mr_by_lkey(self, lkey: int) -> MemoryRegion | None:
        for mr in self._mrs:
            if mr is not None and mr.lkey == lkey:
                return mr
        return None

    def create_comp_channel(self) -> CompChannel:
        """``mrc_create_comp_channel`` (`CompChannel`)."""
        return CompChannel(self)

    def create_cq(self, cqe: int = 1024, cq_context=None, channel: CompChannel | None = None,
                  comp_vector: int = 0) -> CompletionQueue:
        """``mrc_create_cq``: a CQ of `cqe` entries (more are kept and reported as an overrun), with the
        application's `cq_context`, an optional completion `channel` and the completion vector (0)."""
        return CompletionQueue(self, cqe, cq_context, channel, comp_vector)

    def create_qp(self, send_cq: CompletionQueue | None = None, recv_cq: CompletionQueue | None = None,
                  cap: QpCap | None = None, protocol_version: int = MRC_PROTOCOL_VERSION_1, *,
                  init_attr: QpInitAttr | None = None) -> QueuePair:
        """``mrc_create_qp``: a QP in RESET, from `init_attr` (`QpInitAttr`) or the arguments. Without
        `send_cq` a new CQ (1024 entries) is made for it; without `recv_cq` receives complete on `send_cq`.
        `sq_sig_all` must be 1 (every write completes); `send_ops_flags` may name RDMA_WRITE and
        RDMA_WRITE_WITH_IMM only; `protocol_version` 0 (the default, version 1) or MRC_PROTOCOL_VERSION_1."""
        if init_attr is not None:
            if not isinstance(init_attr, QpInitAttr):
                raise EINVAL(f"create_qp: init_attr = {init_attr!r} must be a QpInitAttr")
            if send_cq is not None or recv_cq is not None or cap is not None:
                raise EINVAL("create_qp: give init_attr or the CQs and cap, not both")
            send_cq, recv_cq, cap, protocol_version = (init_attr.send_cq, init_attr.recv_cq, init_attr.cap,
                                                       init_attr.protocol_version)
            if init_attr.send_cq is None:
                raise EINVAL("create_qp: init_attr.send_cq is required")
            if init_attr.sq_sig_all != 1:
                raise ENOTSUP(f"create_qp: sq_sig_all = {init_attr.sq_sig_all!r}: every write completes here (1)")
            flags = init_attr.send_ops_flags
            if not is_int(flags) or flags < 0 or int(flags) & ~SEND_OPS_FLAGS:
                raise EINVAL(f"create_qp: send_ops_flags = {flags!r}: MRC allows IBV_QP_EX_WITH_RDMA_WRITE and "
                             f"IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM only")
        for key, cq in (("send_cq", send_cq), ("recv_cq", recv_cq)):
            if cq is None:
                continue
            if not isinstance(cq, CompletionQueue):
                raise EINVAL(f"create_qp: {key} must be a CompletionQueue (Device.create_cq) or None, got {cq!r}")
            if cq.device is not self or cq.destroyed:
                raise EINVAL(f"create_qp: {key} belongs to device {cq.device.name!r}, not {self.name!r}, or was destroyed")
        if cap is not None and not isinstance(cap, QpCap):
            raise EINVAL(f"create_qp: cap must be a QpCap or None, got {cap!r}")
        cap = cap or QpCap()
        if protocol_version not in (MRC_PROTOCOL_VERSION_0, MRC_PROTOCOL_VERSION_1):
            raise ENOTSUP(f"create_qp: protocol_version {protocol_version!r} is not supported (MRC_PROTOCOL_VERSION_1, "
                          f"or 0 for the default)")
        for key, value, hi in (("max_send_wr", cap.max_send_wr, self.T.wr.shape[1]),
                               ("max_recv_wr", cap.max_recv_wr, self.T.rq.shape[1]),
                               ("max_send_sge", cap.max_send_sge, 1), ("max_recv_sge", cap.max_recv_sge, 1)):
            if not is_int(value) or not 1 <= value <= hi:
                raise EINVAL(f"create_qp: {key} = {value!r} outside [1, {hi}]")
        if cap.max_inline_data != 0:
            raise ENOTSUP(f"create_qp: max_inline_data = {cap.max_inline_data!r}: no inline data (0)")
        try:
            index = self._qps.index(None)
        except ValueError:
            raise EINVAL(f"create_qp: all {len(self._qps)} QPs are in use") from None
        send_cq = send_cq if send_cq is not None else self.create_cq()
        qpn = self._ids.qpn(self._by_qpn)
        self._clear_qp_row(index, qpn)
        qp = QueuePair(self, index, send_cq, recv_cq or send_cq, cap, init_attr)
        self._qps[index] = qp
        self._by_qpn[qpn] = qp
        return qp

    def destroy_qp(self, qp: QueuePair) -> None:
        """``mrc_destroy_qp`` in any state (``ibv_destroy_qp``): outstanding work requests are discarded without
        completions, the profiles and hint released; EBUSY while an async event about it is unacknowledged."""
        if not isinstance(qp, QueuePair) or qp.device is not self:
            raise EINVAL(f"destroy_qp: {qp!r} is not a QP of device {self.name!r}")
        index, qpn = qp.index, qp.qp_num
        check_destroy(qp)
        self.ctl._unbind_qp(qp)
        self._clear_qp_row(index, qpn)
        self._qps[index] = None  # from here on every use of the handle raises (`QueuePair.index`)
        self._by_qpn.pop(qpn, None)
        qp.qp_hint = None

    def _clear_qp_row(self, index: int, qpn: int) -> None:
        """A QP in RESET in row `index` (`mrc.core.qp.create`: its row and every table row it owns zeroed)."""
        core_qp.create(self.T, index, qpn, self._ids.stream_seed(qpn))

    def peer_address(self, qp_num: int):
        """The ``remote_address`` QP `qp_num` is connected to; None if there is no such QP or it has no peer yet."""
        qp = self._by_qpn.get(qp_num)
        return None if qp is None else qp.peer.address

    def peer_addresses(self) -> list:
        """Every connected QP's ``remote_address`` (the peers an I/O adapter may accept endpoint requests from)."""
        return [qp.peer.address for qp in self._by_qpn.values() if qp.peer.address is not None]

    def initial_psn(self) -> int:
        """A first PSN for a QP's send queue (``sq_psn``; the peer's ``rq_psn``): random unless the device is seeded."""
        return self._ids.psn()

    # -- asynchronous events ----------------------------------------------------------------
    @property
    def async_fd(self) -> int:
        """A descriptor readable while async events wait (``ibv_context.async_fd``): for an event loop, as
        `CompChannel.fileno`."""
        if self._async_pipe is None:
            r, w = os.pipe()
            os.set_blocking(r, False)
            os.set_blocking(w, False)
            self._async_pipe = (r, w)
            if self._async:
                os.write(w, b"\1" * min(len(self._async), 4096))
        return self._async_pipe[0]

    def get_async_event(self, *, block: bool = False, timeout: float | None = None) -> AsyncEvent | None:
        """``mrc_get_async_event``: the oldest `AsyncEvent`, which must then be acknowledged
        (`ack_async_event`). Non-blocking by default (None when there is none, as this sans-IO device raises
        events only while the caller drives it); ``block=True`` waits on `async_fd` (up to `timeout` seconds)
        for another thread's driving, then raises EAGAIN."""
        if not self._async and block:
            select.select([self.async_fd], [], [], timeout)
            if not self._async:
                raise EAGAIN("get_async_event: no async event")
        if not self._async:
            return None
        e = self._async.popleft()
        if self._async_pipe is not None:
            try:
                os.read(self._async_pipe[0], 1)
            except BlockingIOError:
                pass
        self._async_taken.append(e)
        return e

    def ack_async_event(self, event: AsyncEvent) -> None:
        """``mrc_ack_async_event``: acknowledge an event `get_async_event` returned (EINVAL: not one, or twice)."""
        for k, e in enumerate(self._async_taken):
            if e is event:
                del self._async_taken[k]
                return
        raise EINVAL(f"ack_async_event: {event!r} was not returned by get_async_event, or is acknowledged already")

    def _unacked_async(self) -> list:
        return self._async_taken

    # -- sans-IO: packets and timers ----------------------------------------------------
    def _check_now(self, what: str, now) -> int:
        if not is_int(now) or not 0 <= now < D.NEVER:
            raise EINVAL(f"{what}: now = {now!r} must be an integer time in ps in [0, 2^62)")
        return int(now)

    def receive(self, pkt, payload: bytes = b"", now: int = 0, src: object = None) -> None:
        """Feed one received packet. `pkt` is a PKT record (`mrc.wire.records.PKT`: what `mrc.wire.decode`
        returns); `payload` its payload bytes; `now` the time (ps); `src` the sender's address."""
        if not isinstance(pkt, np.void) or pkt.dtype != PKT:
            raise EINVAL(f"receive: pkt must be a PKT record (numpy.void of mrc.wire.records.PKT, as "
                         f"mrc.wire.decode returns), got {type(pkt).__name__}")
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise EINVAL(f"receive: payload must be bytes, got {type(payload).__name__}")
        now = self._check_now("receive", now)
        qpn = int(pkt["dqpn"])
        if qpn == ENDPOINT_QPN:
            self.ctl._on_endpoint_packet(pkt, now, src)
            return
        qp = self._by_qpn.get(qpn)
        if qp is None:
            self.ctl.counters["unknown_qpn"] += 1
            return
        if len(payload) != int(pkt["payload_len"]) and int(pkt["trim"]) == 0:
            self.ctl.counters["bad_length"] += 1
            return
        dispatch.on_packet(self.T, qp.index, pkt, now)
        place = self.T.place
        if place[0] >= 0:
            mr = self._mrs[int(place[0])]
            off, n = int(place[1]), int(place[2])
            mr.array[off:off + n] = np.frombuffer(payload, dtype=np.uint8, count=n)
        self._drain()

    def packets_to_send(self, now: int, port_mask: int | None = None, limit: int = 1 << 30) -> list[OutPacket]:
        """Everything the device wants to send now (control first, then data), on ports in `port_mask`."""
        now = self._check_now("packets_to_send", now)
        if port_mask is not None and (not is_int(port_mask) or not 0 <= port_mask < 1 << self.ports):
            raise EINVAL(f"packets_to_send: port_mask = {port_mask!r} must be a bit mask of the {self.ports} ports")
        if not is_int(limit) or limit < 0:
            raise EINVAL(f"packets_to_send: limit = {limit!r} must be a non-negative integer")
        mask = ((1 << self.ports) - 1) if port_mask is None else port_mask
        out: list[OutPacket] = self.ctl._endpoint_packets(now, mask)
        for qp in list(self._by_qpn.values()):
            while len(out) < limit:
                room = min(len(self._out), limit - len(out))
                n = dispatch.next_packets(self.T, qp.index, now, mask, self._out[:room], self._kinds, self._src)
                batch = self._out[:n].copy()  # one copy per batch: a record's own .copy() costs ~15 us
                for k in range(n):
                    pkt = batch[k]
                    payload = b""
                    if self._kinds[k] in (dispatch.K_DATA, dispatch.K_RTX):
                        payload = self._payload_of(qp, *(int(x) for x in self._src[k]))
                    out.append(OutPacket(pkt, payload, qp.peer.address, int(pkt["port"]) + 1, qp.qp_num))
                if n < room:
                    break
        self._drain()
        return out

    def _payload_of(self, qp: QueuePair, ring: int, offset: int, length: int) -> bytes:
        T = self.T
        w = T.wr[T.qp[qp.index]["wr_row"], ring % T.wr.shape[1]]
        mr = self._mr_by_lkey(int(w["lkey"]))
        start = int(w["laddr"]) - mr.addr + offset
        return mr.array[start:start + length].tobytes()

    def next_deadline(self) -> int | None:
        """Earliest timer of any QP or controller operation (ps), or None."""
        t = min((dispatch.next_deadline(self.T, qp.index) for qp in self._by_qpn.values()), default=D.NEVER)
        t = min(t, self.ctl._next_deadline())
        return None if t >= D.NEVER else int(t)

    def handle_timer(self, now: int) -> None:
        """Fire every timer due at `now` (ps, an integer in [0, 2^62)); call it when `next_deadline` has passed."""
        now = self._check_now("handle_timer", now)
        for qp in list(self._by_qpn.values()):
            if dispatch.next_deadline(self.T, qp.index) <= now:
                dispatch.on_timer(self.T, qp.index, now)
        self.ctl._on_timer(now)
        self._drain()

    def set_port_state(self, port: int, up: bool, now: int = 0) -> None:
        """A local NIC port (1-based) went down (`up` False) or came back (True): the plane leaves or rejoins at
        once, and the controller tells every peer with a port status update."""
        if not is_int(port) or not 1 <= port <= self.ports:
            raise EINVAL(f"set_port_state: port = {port!r} must be an integer in [1, {self.ports}]")
        if not isinstance(up, (bool, np.bool_)):
            raise EINVAL(f"set_port_state: up = {up!r} must be a bool (True: the link came up)")
        now = self._check_now("set_port_state", now)
        self.ctl._set_local_port(int(port), bool(up), now)

    # -- what the controller uses of its device (mrc.ctl.link.DeviceSide): nothing else ----------------
    def _live_qps(self) -> list:
        """The device's live QPs."""
        return list(self._by_qpn.values())

    def _post_async(self, event: AsyncEvent) -> None:
        """Queue an asynchronous event for `get_async_event`."""
        self._async.append(event)
        if self._async_pipe is not None:
            try:
                os.write(self._async_pipe[1], b"\1")
            except BlockingIOError:
                pass

    def _profile_seed(self, profile_id: int) -> int:
        """The seed of EV profile `profile_id`'s generated EVs (from the device's ID source)."""
        return self._ids.profile_seed(profile_id)

    def _drain(self) -> None:
        for e in tables.drain_events(self.T):
            qp = self._qps[int(e["qp"])]
            kind = int(e["kind"])
            if kind == D.E_SEND_DONE and qp is not None:
                qp.send_cq._push(WorkCompletion(int(e["wr_id"]), D.WC_STATUS_NAMES.get(int(e["status"]), str(int(e["status"]))),
                                                WcOpcode.RDMA_WRITE, int(e["byte_len"]), qp.qp_num))
            elif kind == D.E_RECV_IMM and qp is not None:
                status = D.WC_STATUS_NAMES.get(int(e["status"]), str(int(e["status"])))
                qp.recv_cq._push(WorkCompletion(int(e["wr_id"]), status, WcOpcode.RECV_RDMA_WITH_IMM, int(e["byte_len"]),
                                                qp.qp_num, int(e["imm"]) if status == "SUCCESS" else None))
            elif kind == D.E_QP_ERROR and qp is not None:
                self._post_async(AsyncEvent("QP_FATAL", qp_num=qp.qp_num, qp=qp, detail=f"cause {int(e['status'])}"))
            elif kind == D.E_ACCESS_VIOLATION and qp is not None:
                self._post_async(AsyncEvent("QP_ACCESS_ERR", qp_num=qp.qp_num, qp=qp,
                                            detail=f"write to va {int(e['wr_id']):#x} +{int(e['byte_len'])} rkey {int(e['imm']):#x} refused"))
            elif kind == D.E_EV_STATE and qp is not None:
                self.ctl._on_ev_event(qp, e)
        if self.T.evt_n[1]:
            self.ctl.counters["events_dropped"] += int(self.T.evt_n[1])
            self.T.evt_n[1] = 0
        if self.T.evt_n[2]:
            self.ctl._ev_events_lost(int(self.T.evt_n[2]))
            self.T.evt_n[2] = 0


def table_bytes(max_qp: int, max_ev: int, window: int, max_wr: int, n_mr: int) -> int:
    """Bytes `mrc.core.tables.allocate` takes for a Device of these sizes (its tables, 64 CC rows, 4096 events)."""
    per_qp = (D.QP.itemsize + max_ev * (D.EV.itemsize + 2) + window * (D.TX.itemsize + D.RX.itemsize)
              + max_wr * (D.WR.itemsize + D.RQ.itemsize))
    return max_qp * per_qp + n_mr * D.MR.itemsize + 64 * D.CC.itemsize + 4096 * D.EVT.itemsize


def setup_bounds(key: str) -> int:
    """The largest value the core takes for a QP attribute (`mrc.core.setup.QP_BOUNDS`)."""
    from mrc.core import setup

    return int(setup.QP_BOUNDS[key][1])


def connect(qp_a: QueuePair, qp_b: QueuePair, **attrs) -> None:
    """Connect two QPs of this process to each other (`QueuePair.connect` both ways, at each other's
    device address), with the same attributes on both sides and first PSNs from `Device.initial_psn`
    (random unless the devices are seeded)."""
    psn_a, psn_b = qp_a.device.initial_psn(), qp_b.device.initial_psn()
    qp_a.connect(qp_b.qp_num, qp_b.device.address, sq_psn=psn_a, rq_psn=psn_b, **attrs)
    try:
        qp_b.connect(qp_a.qp_num, qp_a.device.address, sq_psn=psn_b, rq_psn=psn_a, **attrs)
    except UsageError:
        qp_a.modify("RESET")
        raise
