"""`Device`, `QueuePair`, `connect` and the attribute tables of `mrc.api` (whose text describes them)."""
from __future__ import annotations

import collections
import secrets
from dataclasses import dataclass

import numpy as np

from mrc.api.types import (
    MRC_DEVICE_CAP_DYNAMIC_MPR, MRC_DEVICE_CAP_TRIM_NACK, MRC_PROTOCOL_VERSION_1, WC_STATUS, Access, AsyncEvent,
    CompletionQueue, DeviceAttr, MemoryRegion, OutPacket, SendOpcode, WcOpcode, WorkCompletion,
)
from mrc.core import dispatch, dtypes as D, evset, qp as core_qp, setup, tables
from mrc.core.rng import seed_state
from mrc.ctl import Controller
from mrc.errors import ConfigError, UsageError
from mrc.wire.constants import ENDPOINT_QPN
from mrc.wire.records import PKT

__all__ = ["Device", "QueuePair", "connect", "QpCap", "REQUIRED_ATTRS", "ALLOWED_ATTRS", "MRC_PROTOCOL_VERSION_1",
           "MRC_DEVICE_CAP_TRIM_NACK", "MRC_DEVICE_CAP_DYNAMIC_MPR", "WC_STATUS", "Access", "AsyncEvent",
           "CompletionQueue", "DeviceAttr", "MemoryRegion", "OutPacket", "SendOpcode", "WcOpcode", "WorkCompletion"]


# Attributes mrc.h requires when a QP enters each state (MRC_QP_* masks plus the verbs ones).
REQUIRED_ATTRS = {
    "INIT": ("ev_profile_id", "cc_profile_id"),
    "RTR": ("dest_qp_num", "remote_address", "rq_psn", "mpr_dest", "max_wimm_dest"),
    "RTS": ("sq_psn", "mpr", "max_wimm", "retry_linear", "retry_exp", "timeout"),
}
ALLOWED_ATTRS = {
    "INIT": {"ev_profile_id", "cc_profile_id", "qp_hint"},
    "RTR": {"dest_qp_num", "remote_address", "rq_psn", "mpr_dest", "max_wimm_dest", "dynamic_mpr_dest",
            "ack_every_pkts", "ack_every_bytes", "ack_delay_ps", "always_skip_marks", "rcv_cwnd_pen", "trim_nack_dest"},
    "RTS": {"sq_psn", "mpr", "max_wimm", "retry_linear", "retry_exp", "timeout", "reorder_window_ps",
            "ev_probe_interval_ps", "probe_successes", "rev_probe_interval_ps", "ev_active_target", "ts_unit_ps",
            "ev_policy", "reps_buffer", "reps_reuse", "reps_per_psn", "reps_explore", "reps_freeze_ps", "rack",
            "rto_retire", "ev_first_probe_ps", "psu_floor"},
    "RESET": set(), "ERROR": set(),
}


@dataclass
class QpCap:
    """``ibv_qp_cap``: how many send and receive work requests a QP may have outstanding."""

    max_send_wr: int = 64
    max_recv_wr: int = 64


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


@dataclass
class _Peer:
    dest_qpn: int = 0
    address: object = None


class QueuePair:
    """An MRC queue pair (``ibv_qp``). Create with `Device.create_qp`; connect with `connect` (or
    `QueuePair.modify` step by step); post RDMA Writes with `post_write`; completions arrive on
    `send_cq` (writes) and `recv_cq` (Write-with-Immediate receives)."""

    def __init__(self, device: "Device", index: int, send_cq: CompletionQueue, recv_cq: CompletionQueue, cap: QpCap):
        self.device = device
        self._index = index
        self._qpn = int(device.T.qp[index]["qpn"])
        self.send_cq = send_cq
        self.recv_cq = recv_cq
        self.cap = cap
        self.peer = _Peer()
        self.ev_profile_id: int | None = None
        self.cc_profile_id: int | None = None
        self.attrs: dict = {}

    def __repr__(self) -> str:
        if self.device._qps[self._index] is not self:
            return f"<QueuePair {self._qpn:#x} on {self.device.name!r}: destroyed>"
        q = self.device.T.qp[self.index]
        peer = "" if self.state in ("RESET", "INIT") else f" -> QP {self.peer.dest_qpn:#x} at {self.peer.address!r}"
        return (f"<QueuePair {self.qp_num:#x} on {self.device.name!r} {self.state}{peer}: "
                f"{int(q['wr_tail']) - int(q['wr_head'])} write(s) outstanding, {int(q['n_ev'])} EVs>")

    # -- identity and state ------------------------------------------------------
    @property
    def index(self) -> int:
        """The QP's row in the device's tables; any use of a destroyed handle raises `UsageError`."""
        if self.device._qps[self._index] is not self:
            raise UsageError(f"QP {self._qpn} (QP number {self._qpn:#x}) was destroyed: this handle cannot be used")
        return self._index

    @property
    def qp_num(self) -> int:
        """The QP number (24 bits) a peer puts in BTH ``dqpn``."""
        return int(self.device.T.qp[self.index]["qpn"])

    @property
    def state(self) -> str:
        """"RESET", "INIT", "RTR", "RTS" or "ERROR"."""
        return D.QP_STATE_NAMES[int(self.device.T.qp[self.index]["state"])]

    def connect(self, dest_qp_num: int, remote_address: object, *, ev_profile_id: int = 1, cc_profile_id: int = 1,
                rq_psn: int = 0, sq_psn: int = 0, now: int = 0, **attrs) -> None:
        """RESET -> INIT -> RTR -> RTS in one call, towards QP `dest_qp_num` at `remote_address`.

        The attributes mrc.h requires and you do not give take the core's documented defaults
        (`mrc.core.setup.QP_DEFAULTS`: MPR 8 capped at the device's ``max_mpr``, max WIMM 128,
        retries 7 + 7, timeout 8 = 262 us); any other INIT / RTR / RTS attribute may be given by
        name (`ALLOWED_ATTRS`). `sq_psn` is this side's first PSN and `rq_psn` the peer's (across
        processes, exchange `Device.initial_psn` values out of band). If a step is refused the QP
        goes back to RESET and the `UsageError` names the attribute.
        """
        if self.state != "RESET":
            raise UsageError(f"connect: QP {self.qp_num} is in {self.state}; connect starts from RESET")
        unknown = set(attrs) - ALLOWED_ATTRS["INIT"] - ALLOWED_ATTRS["RTR"] - ALLOWED_ATTRS["RTS"]
        if unknown:
            raise UsageError(f"connect: attribute(s) {sorted(unknown)} are not QP attributes "
                             f"(RTR: {sorted(ALLOWED_ATTRS['RTR'])}; RTS: {sorted(ALLOWED_ATTRS['RTS'])})")
        mpr = min(setup.QP_DEFAULTS["mpr"], self.device.max_mpr)
        wimm = setup.QP_DEFAULTS["max_wimm"]
        init = {k: v for k, v in attrs.items() if k in ALLOWED_ATTRS["INIT"]}
        rtr = {"mpr_dest": mpr, "max_wimm_dest": wimm, **{k: v for k, v in attrs.items() if k in ALLOWED_ATTRS["RTR"]}}
        rts = {"mpr": mpr, "max_wimm": wimm, **{k: setup.QP_DEFAULTS[k] for k in ("retry_linear", "retry_exp", "timeout")},
               **{k: v for k, v in attrs.items() if k in ALLOWED_ATTRS["RTS"]}}
        try:
            self.modify("INIT", ev_profile_id=ev_profile_id, cc_profile_id=cc_profile_id, **init)
            self.modify("RTR", dest_qp_num=dest_qp_num, remote_address=remote_address, rq_psn=rq_psn, now=now, **rtr)
            self.modify("RTS", sq_psn=sq_psn, now=now, **rts)
        except UsageError as e:
            self.modify("RESET")
            raise UsageError(f"connect: {e}") from None

    def modify(self, state: str, **attrs) -> None:
        """Move the QP to `state` ("INIT", "RTR", "RTS", "RESET", "ERROR") with its attributes."""
        self.device._modify_qp(self, state, attrs)

    def query(self) -> dict:
        """``ibv_query_qp``: state, QP numbers, profile ids, every core attribute, and cwnd (bytes)."""
        q = self.device.T.qp[self.index]
        out = {"state": self.state, "qp_num": self.qp_num, "dest_qp_num": int(q["dest_qpn"]),
               "ev_profile_id": self.ev_profile_id, "cc_profile_id": self.cc_profile_id}
        out.update({k: int(q[k]) for k in setup.QP_BOUNDS})
        out["cwnd"] = float(q["cwnd"])
        return out

    def statistics(self) -> dict:
        """Counters (packets, retransmissions, spurious ones, losses, SACKs, ...) as a dict."""
        q = self.device.T.qp[self.index]
        names = ["tx_pkts", "tx_bytes", "rtx_pkts", "rtx_spurious", "rtx_timeouts", "sacks_rx", "nacks_rx", "trims_rx",
                 "ecn_sacks_rx", "losses", "probes_tx", "rx_pkts", "rx_bytes", "rx_dup", "rx_trimmed", "rx_oor",
                 "rx_dropped", "rx_oow", "sacks_tx", "nacks_tx", "ev_floor_hits", "ev_skips", "inflight"]
        return {n: int(q[n]) for n in names} | {"cwnd": float(q["cwnd"])}

    def ev_states(self) -> list[dict]:
        """The QP's EV set: value, port (1-based), state, active flag, counters."""
        T = self.device.T
        q = T.qp[self.index]
        rows = T.ev[q["ev_row"], : q["n_ev"]]
        return [{"ev": int(r["ev"]), "port": int(r["plane"]) + 1, "state": D.EV_STATE_NAMES[int(r["state"])],
                 "active": bool(r["active"]), "tx_pkts": int(r["tx_pkts"]), "losses": int(r["losses"]),
                 "ecn_marks": int(r["ecn_marks"]), "trims": int(r["trims"])} for r in rows]

    # -- work requests ---------------------------------------------------------------
    def post_send(self, opcode: SendOpcode | str, wr_id: int, sge: tuple[int, int, int], remote_addr: int = 0,
                  rkey: int = 0, imm_data: int | None = None, now: int = 0) -> None:
        """``ibv_post_send`` for MRC: RDMA_WRITE and RDMA_WRITE_WITH_IMM only."""
        try:
            op = SendOpcode(opcode) if not isinstance(opcode, SendOpcode) else opcode
        except ValueError:
            raise UsageError(f"post_send: unknown opcode {opcode!r} (one of {[o.value for o in SendOpcode]})") from None
        if op not in (SendOpcode.RDMA_WRITE, SendOpcode.RDMA_WRITE_WITH_IMM):
            raise UsageError(f"post_send: opcode {op.value} is not permitted by MRC (only RDMA_WRITE and RDMA_WRITE_WITH_IMM)")
        if op is SendOpcode.RDMA_WRITE_WITH_IMM and imm_data is None:
            raise UsageError("post_send: RDMA_WRITE_WITH_IMM needs imm_data")
        if op is SendOpcode.RDMA_WRITE and imm_data is not None:
            raise UsageError("post_send: imm_data given for RDMA_WRITE (use RDMA_WRITE_WITH_IMM)")
        self.post_write(wr_id, sge, remote_addr=remote_addr, rkey=rkey, imm_data=imm_data, now=now)

    def post_write(self, wr_id: int, sge: tuple[int, int, int], *, remote_addr: int, rkey: int,
                   imm_data: int | None = None, now: int = 0) -> None:
        """Post an RDMA Write (or Write-with-Immediate when `imm_data` is given) of the bytes of `sge`."""
        dev = self.device
        if self.state != "RTS":
            raise UsageError(f"post_write: QP {self.qp_num} is in {self.state}, writes need RTS")
        if not (isinstance(sge, tuple) and len(sge) == 3 and all(_is_int(x) for x in sge)):
            raise UsageError(f"post_write: sge {sge!r} must be an (addr, length, lkey) tuple of integers")
        addr, length, lkey = (int(x) for x in sge)
        mr = dev._mr_by_lkey(lkey)
        if mr is None:
            raise UsageError(f"post_write: lkey {lkey:#x} is not a registered region")
        if length < 0 or addr < mr.addr or addr + length > mr.addr + mr.length:
            raise UsageError(f"post_write: sge [{addr:#x}, +{length}) is outside region lkey {lkey:#x}")
        if length >= 1 << 31:
            raise UsageError(f"post_write: length {length} exceeds 2^31 - 1 bytes")
        for name, value, bits in (("wr_id", wr_id, 64), ("remote_addr", remote_addr, 64), ("rkey", rkey, 32)):
            if not _is_int(value) or not 0 <= value < 1 << bits:
                raise UsageError(f"post_write: {name} {value!r} is not a {bits}-bit value")
        if imm_data is not None and (not _is_int(imm_data) or not 0 <= imm_data < 1 << 32):
            raise UsageError(f"post_write: imm_data {imm_data!r} is not a 32-bit value")
        q = dev.T.qp[self.index]
        if int(q["wr_tail"]) - int(q["wr_head"]) >= self.cap.max_send_wr:
            raise UsageError(f"post_write: send queue of QP {self.qp_num} is full ({self.cap.max_send_wr} WRs outstanding)")
        op = D.WR_WRITE if imm_data is None else D.WR_WRITE_IMM
        rc = core_qp.post_write(dev.T, self.index, wr_id, op, lkey, addr, remote_addr, rkey, length, imm_data or 0, now)
        if rc != 0:
            raise UsageError(f"post_write: send queue of QP {self.qp_num} is full ({dev.T.wr.shape[1]} WRs)")

    def post_recv(self, wr_id: int) -> None:
        """Post a receive consumed by an incoming Write-with-Immediate (no RNR in MRC)."""
        if self.state not in ("INIT", "RTR", "RTS"):
            raise UsageError(f"post_recv: QP {self.qp_num} is in {self.state}, receives need INIT, RTR or RTS")
        if not _is_int(wr_id) or not 0 <= wr_id < 1 << 64:
            raise UsageError(f"post_recv: wr_id {wr_id!r} is not a 64-bit value")
        q = self.device.T.qp[self.index]
        full = int(q["rq_tail"]) - int(q["rq_head"]) >= self.cap.max_recv_wr
        if full or core_qp.post_recv(self.device.T, self.index, wr_id) != 0:
            raise UsageError(f"post_recv: receive queue of QP {self.qp_num} is full "
                             f"({self.cap.max_recv_wr} receives outstanding)")


class Device:
    """One MRC NIC with `ports` NIC ports (one per plane).

    `address` is how peers reach this device: whatever your network uses (a `mrc.io.Peer`, a
    string for `mrc.testing.simnet.SimNet`); by default the device's `name`. `port_rate_bps` is one port's
    rate (bits/s; NSCC scales its windows by all ports together), `mtu` the payload bytes per
    packet. `seed` seeds every random choice the device makes (QPNs, keys, first PSNs, EVs), for
    reproducible runs; without it they come from the operating system's CSPRNG.
    """

    def __init__(self, name: str = "mrc0", *, ports: int = 2, max_qp: int = 16, max_ev: int = 256,
                 max_mpr: int = 8, max_wr: int = 64, n_mr: int = 64, port_rate_bps: int = 100 * 10**9,
                 mtu: int = 4096, seed: int | None = None, address: object = None):
        if not isinstance(name, str):
            raise UsageError(f"Device: name must be a str, got {name!r}")
        for key, value, lo, hi in (("ports", ports, 1, D.MAX_PLANES), ("max_qp", max_qp, 1, 1 << 16),
                                   ("max_ev", max_ev, 1, 1 << 16), ("max_mpr", max_mpr, 1, 255),
                                   ("max_wr", max_wr, 1, 1 << 16), ("n_mr", n_mr, 1, 1 << 16),
                                   ("mtu", mtu, 64, 9216), ("port_rate_bps", port_rate_bps, 10**6, 10**13)):
            if not _is_int(value) or not lo <= value <= hi:
                raise UsageError(f"Device: {key} must be in [{lo}, {hi}] (an integer), got {value!r}")
        if seed is not None and (not _is_int(seed) or seed < 0):
            raise UsageError(f"Device: seed must be None (random identifiers) or an integer >= 0, got {seed!r}")
        window = 128
        while window < max_mpr * D.MPR_UNIT:
            window <<= 1
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
        self._out = np.zeros(64, dtype=PKT)  # next_packets fills up to 64 packets per call
        self._kinds = np.zeros(64, dtype=np.int64)
        self._src = np.zeros((64, 3), dtype=np.int64)
        self.ctl = Controller(self)

    def __repr__(self) -> str:
        qps = sum(q is not None for q in self._qps)
        rate = self.port_rate_bps / 1e9
        return (f"<Device {self.name!r} at {self.address!r}: {self.ports} port(s) x {rate:g} Gb/s, MTU {self.mtu} B, "
                f"{qps} QP(s)>")

    # -- resources ----------------------------------------------------------------------
    def query_device(self) -> DeviceAttr:
        """``mrc_query_device``: the device's limits and capabilities."""
        return DeviceAttr(max_mpr=self.max_mpr, max_qp=len(self._qps), max_ev_per_qp=self.T.ev.shape[1],
                          ports=self.ports, mtu=self.mtu)

    def reg_mr(self, buf, access: Access = Access.LOCAL_WRITE | Access.REMOTE_WRITE) -> MemoryRegion:
        """``ibv_reg_mr``: register a writable buffer (bytearray, numpy array, ...) so that writes can
        read from it (its `MemoryRegion.sge`) and peers can write into it (its ``addr`` and ``rkey``)."""
        try:
            view = memoryview(buf)
        except TypeError:
            raise UsageError(f"reg_mr: buf must be a writable buffer (bytearray, numpy array, ...), got "
                             f"{type(buf).__name__}") from None
        if not view.c_contiguous:
            raise UsageError("reg_mr: buf is not contiguous: remote writes must land in the caller's memory, so "
                             "register the whole array (or a contiguous slice of it), not a strided view")
        if view.nbytes == 0:
            raise UsageError("reg_mr: buf is empty")
        if not isinstance(access, (Access, int)):
            raise UsageError(f"reg_mr: access must be an Access flag, got {access!r}")
        try:
            index = self._mrs.index(None)
        except ValueError:
            raise UsageError(f"reg_mr: all {len(self._mrs)} memory regions are in use") from None
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

    def create_cq(self, cqe: int = 1024) -> CompletionQueue:
        """``ibv_create_cq`` holding up to `cqe` completions (more are kept and reported as an overrun)."""
        if not _is_int(cqe):
            raise UsageError(f"create_cq: cqe must be an integer, got {cqe!r}")
        return CompletionQueue(self, cqe)

    def create_qp(self, send_cq: CompletionQueue | None = None, recv_cq: CompletionQueue | None = None,
                  cap: QpCap | None = None, protocol_version: int = MRC_PROTOCOL_VERSION_1) -> QueuePair:
        """``mrc_create_qp``: a QP in RESET. Without `send_cq` a new CQ (1024 entries) is made for it;
        without `recv_cq` receives complete on `send_cq`."""
        for key, cq in (("send_cq", send_cq), ("recv_cq", recv_cq)):
            if cq is None:
                continue
            if not isinstance(cq, CompletionQueue):
                raise UsageError(f"create_qp: {key} must be a CompletionQueue (Device.create_cq) or None, got {cq!r}")
            if cq.device is not self:
                raise UsageError(f"create_qp: {key} belongs to device {cq.device.name!r}, not {self.name!r}")
        if cap is not None and not isinstance(cap, QpCap):
            raise UsageError(f"create_qp: cap must be a QpCap or None, got {cap!r}")
        send_cq = send_cq if send_cq is not None else self.create_cq()
        cap = cap or QpCap()
        if protocol_version not in (0, MRC_PROTOCOL_VERSION_1):
            raise UsageError(f"create_qp: protocol_version {protocol_version:#x} is not supported (MRC_PROTOCOL_VERSION_1 only)")
        if not 1 <= cap.max_send_wr <= self.T.wr.shape[1]:
            raise UsageError(f"create_qp: max_send_wr {cap.max_send_wr} outside [1, {self.T.wr.shape[1]}]")
        if not 1 <= cap.max_recv_wr <= self.T.rq.shape[1]:
            raise UsageError(f"create_qp: max_recv_wr {cap.max_recv_wr} outside [1, {self.T.rq.shape[1]}]")
        try:
            index = self._qps.index(None)
        except ValueError:
            raise UsageError(f"create_qp: all {len(self._qps)} QPs are in use") from None
        qpn = self._ids.qpn(self._by_qpn)
        self._clear_qp_row(index, qpn)
        qp = QueuePair(self, index, send_cq, recv_cq or send_cq, cap)
        self._qps[index] = qp
        self._by_qpn[qpn] = qp
        return qp

    def destroy_qp(self, qp: QueuePair) -> None:
        """``ibv_destroy_qp``: only from RESET or ERROR; releases its profiles."""
        if not isinstance(qp, QueuePair) or qp.device is not self:
            raise UsageError(f"destroy_qp: {qp!r} is not a QP of device {self.name!r}")
        if qp.state not in ("RESET", "ERROR"):
            raise UsageError(f"destroy_qp: QP {qp.qp_num} is in {qp.state}; move it to RESET or ERROR first")
        index, qpn = qp.index, qp.qp_num
        self.ctl._unbind_qp(qp)
        self._qps[index] = None  # from here on every use of the handle raises (`QueuePair.index`)
        self._by_qpn.pop(qpn, None)

    def _clear_qp_row(self, index: int, qpn: int) -> None:
        """A QP in RESET: its row and every table row it owns zeroed (no state survives a reuse)."""
        T = self.T
        T.qp[index] = np.zeros(1, dtype=D.QP)[0]
        for table in (T.ev, T.ev_order, T.wr, T.rq):
            table[index] = np.zeros(table.shape[1], dtype=table.dtype)
        for table in (T.tx, T.rx):  # tiles of PSN slots (`mrc.core.tables`): the row's slots in every tile
            table[:, index] = np.zeros(table.shape[::2], dtype=table.dtype)
        q = T.qp[index]
        q["qpn"] = qpn
        for f in ("ev_row", "tx_row", "rx_row", "wr_row", "rq_row"):
            q[f] = index
        q["rng"] = self._ids.stream_seed(qpn)
        q["state"] = D.QPS_RESET

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

    def get_async_event(self) -> AsyncEvent | None:
        """``ibv_get_async_event`` without blocking: the oldest `AsyncEvent`, or None."""
        return self._async.popleft() if self._async else None

    # -- QP state machine ---------------------------------------------------------------
    def _modify_qp(self, qp: QueuePair, state: str, attrs: dict) -> None:
        """``mrc_modify_qp``: every attribute is checked before the QP changes."""
        T = self.T
        names = list(D.QP_STATE_NAMES)
        if state not in names:
            raise UsageError(f"modify_qp: unknown state {state!r} (one of {names})")
        cur = int(T.qp[qp.index]["state"])
        tgt = names.index(state)
        if not core_qp.QP_FSM[cur, tgt]:
            raise UsageError(f"modify_qp: QP {qp.qp_num} cannot go from {names[cur]} to {state} "
                             f"(RESET -> INIT -> RTR -> RTS; RESET and ERROR from any state)")
        attrs = dict(attrs)
        now = int(attrs.pop("now", 0))
        if "ev_policy" in attrs:
            try:
                attrs["ev_policy"] = setup.ev_policy_code(attrs["ev_policy"])
            except ConfigError as e:
                raise UsageError(f"modify_qp to {state}: ev_policy = {e.value!r}: {e.problem}") from None
        allowed = ALLOWED_ATTRS[state]
        unknown = set(attrs) - allowed
        if unknown:
            raise UsageError(f"modify_qp to {state}: attribute(s) {sorted(unknown)} not allowed (allowed: {sorted(allowed)})")
        if cur != tgt:
            missing = [k for k in REQUIRED_ATTRS.get(state, ()) if k not in attrs]
            if missing:
                raise UsageError(f"modify_qp {names[cur]} -> {state}: missing {missing} "
                                 f"(mrc.h requires {list(REQUIRED_ATTRS[state])})")
        for key, value in attrs.items():
            self._check_qp_attr(state, key, value)
        if state == "RESET":
            self.ctl._unbind_qp(qp)
            self._clear_qp_row(qp.index, qp.qp_num)
            qp.peer, qp.attrs, qp.ev_profile_id, qp.cc_profile_id = _Peer(), {}, None, None
            return
        if state == "ERROR":
            core_qp.enter_error(T, qp.index, D.WC_WR_FLUSH_ERR, now)
            self._drain()
            return
        if state == "INIT":
            ev_id = attrs.get("ev_profile_id", qp.ev_profile_id)
            cc_id = attrs.get("cc_profile_id", qp.cc_profile_id)
            self.ctl._bind_qp(qp, ev_id, cc_id)
            qp.ev_profile_id, qp.cc_profile_id = ev_id, cc_id
            T.qp[qp.index]["state"] = D.QPS_INIT
            return
        if attrs.get("dynamic_mpr_dest"):
            raise UsageError("modify_qp to RTR: dynamic_mpr_dest is not supported by this device (DeviceAttr.dynamic_mpr = 0)")
        merged = {**qp.attrs, **attrs}
        if state == "RTR":
            self._configure(qp, merged)
            qp.peer = _Peer(dest_qpn=int(attrs["dest_qp_num"]), address=attrs["remote_address"])
            q = T.qp[qp.index]
            q["dest_qpn"] = qp.peer.dest_qpn
            q["rcv_cwnd_pen"] = int(merged.get("rcv_cwnd_pen", 0))
            setup.start_responder(T, qp.index, attrs["rq_psn"], now)
            dispatch.set_local_ports(T, qp.index, np.uint32(self.ctl.local_ports), now)  # ports already down stay down
            q["state"] = D.QPS_RTR
        else:  # RTS
            if cur == D.QPS_RTS and "sq_psn" in attrs:
                raise UsageError("modify_qp RTS -> RTS: sq_psn cannot change")
            self._configure(qp, merged)
            if cur == D.QPS_RTR:
                setup.start_requester(T, qp.index, attrs["sq_psn"], now)
            evset.rebalance(T, qp.index)  # the active set follows ev_active_target
            T.qp[qp.index]["state"] = D.QPS_RTS
        qp.attrs = merged

    def _check_qp_attr(self, state: str, key: str, value) -> None:
        bounds = dict(setup.QP_BOUNDS)
        bounds.update(mpr=(1, self.max_mpr), mpr_dest=(1, self.max_mpr), rq_psn=(0, D.PSN_MASK), sq_psn=(0, D.PSN_MASK),
                      dest_qp_num=(0, 0xFFFFFF), rcv_cwnd_pen=(0, 127), ev_profile_id=(0, (1 << 64) - 1),
                      cc_profile_id=(0, (1 << 64) - 1), dynamic_mpr_dest=(0, 1))
        if key in bounds:
            lo, hi = bounds[key]
            if not _is_int(value) or not lo <= value <= hi:
                raise UsageError(f"modify_qp to {state}: {key} = {value!r} must be an integer in [{lo}, {hi}]")

    def _configure(self, qp: QueuePair, attrs: dict) -> None:
        cfg = {k: int(v) for k, v in attrs.items() if k in setup.QP_DEFAULTS}
        prof = self.ctl._ev_profile(qp.ev_profile_id)
        n_ev = int(self.T.qp[qp.index]["n_ev"])
        cc = self.T.cc[self.ctl._cc_row(qp.cc_profile_id)]
        cfg.setdefault("mtu", self.mtu)
        for key in ("mpr", "mpr_dest"):  # the default MPR, capped at what this device's PSN tables hold
            cfg.setdefault(key, min(setup.QP_DEFAULTS[key], self.max_mpr))
        cfg.setdefault("ev_active_target", min(max(self.ports, n_ev // 2), n_ev))
        cfg.setdefault("ev_min_active", min(prof.min_active or 0, n_ev))
        cfg.setdefault("ev_event_mask", prof.event_mask_bits)
        setup.configure_qp(self.T, qp.index, n_ev, int(cc["base_rtt"]), **cfg)

    # -- sans-IO: packets and timers ----------------------------------------------------
    def receive(self, pkt, payload: bytes = b"", now: int = 0, src: object = None) -> None:
        """Feed one received packet. `pkt` is a PKT record; `payload` its payload bytes."""
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
        """Fire every timer due at `now` (ps); call it when `next_deadline` has passed."""
        for qp in list(self._by_qpn.values()):
            if dispatch.next_deadline(self.T, qp.index) <= now:
                dispatch.on_timer(self.T, qp.index, now)
        self.ctl._on_timer(now)
        self._drain()

    def set_port_state(self, port: int, up: bool, now: int = 0) -> None:
        """A local NIC port (1-based) went down or came back: the plane leaves or rejoins at once,
        and the controller tells every peer with a port status update."""
        if not 1 <= port <= self.ports:
            raise UsageError(f"set_port_state: port {port} outside [1, {self.ports}]")
        self.ctl._set_local_port(port, up, now)

    # -- events -------------------------------------------------------------------------
    # -- what the controller uses of its device (mrc.ctl.link.DeviceSide): nothing else ----------------

    def _live_qps(self) -> list:
        """The device's live QPs."""
        return list(self._by_qpn.values())

    def _post_async(self, event: AsyncEvent) -> None:
        """Queue an asynchronous event for `get_async_event`."""
        self._async.append(event)

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
                self._async.append(AsyncEvent("QP_FATAL", qp_num=qp.qp_num, detail=f"cause {int(e['status'])}"))
            elif kind == D.E_ACCESS_VIOLATION and qp is not None:
                self._async.append(AsyncEvent("QP_ACCESS_ERR", qp_num=qp.qp_num,
                                              detail=f"write to va {int(e['wr_id']):#x} +{int(e['byte_len'])} rkey {int(e['imm']):#x} refused"))
            elif kind == D.E_EV_STATE and qp is not None:
                self.ctl._on_ev_event(qp, e)
        if self.T.evt_n[1]:
            self.ctl.counters["events_dropped"] += int(self.T.evt_n[1])
            self.T.evt_n[1] = 0


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


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)
