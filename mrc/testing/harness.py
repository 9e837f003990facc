"""An in-memory two-endpoint network for tests, benchmarks and conformance.

Two QPs (0 and 1) share one `CoreTables`; packets between them cross a
network that can, per EV, lose, blackhole, trim (core or last hop), CE-mark,
duplicate and delay/reorder them, all drawn from one seeded generator, so a
run is reproducible. Time is set by the harness exactly as aioquic's tests
set it: it jumps to the next delivery or deadline.

The harness checks the requester invariants of docs/protocol.md when
``check=True``: at every data packet sent, the EV is GOOD, inflight <= cwnd
(at least one packet may always be in flight) and the PSN span <= MPR x 128,
for a new PSN the current MPR (dynamic MPR: the responder's latest advertised);
after every step, the PSN span <= MPR x 128; and a blackholed EV (``blackhole``
or ``loss >= 1``) whose first loss has been detected carries no more data
(it was retired, not merely skipped), unless ``ev_min_active`` refused a
retirement on that QP (counted in ``ev_floor_hits``).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from mrc.core import dispatch, dtypes as D, evpolicy, evset, nscc, qp as core_qp, setup, tables
from mrc.core.psn import psn_diff
from mrc.core.rng import seed_state
from mrc.units import NS, US
from mrc.wire.constants import ECN_CE, ECN_ECT0, ECN_ECT1
from mrc.wire.records import PKT


@dataclass
class PathFault:
    """What the network does to packets on one EV (both directions use their own EVs)."""

    loss: float = 0.0
    blackhole: bool = False
    trim: float = 0.0
    trim_lasthop: bool = False
    ecn: float = 0.0
    dup: float = 0.0
    extra_delay_ps: int = 0


def configure_pair_qp(T, i: int, n_planes: int, evs: np.ndarray, seed: int, base_rtt_ps: int, qp_attrs: dict,
                      start_psn: int = 0) -> None:
    """QP `i` of a test pair (its peer is ``i ^ 1``) made ready to send: row i of every table, CC
    profile 0, QPN 0x100 + i, the EVs `evs` all GOOD, moved RESET -> INIT -> RTR -> RTS as a Device moves its QPs
    (`mrc.core.qp.modify`), both PSNs at `start_psn`; by default half the EVs active and access checks emulated."""
    n_ev = len(evs)
    attrs = {"ev_active_target": max(n_planes, n_ev // 2), "emulate_access": 1, **qp_attrs}
    evs = np.asarray(evs)
    core_qp.create(T, i, 0x100 + i, seed_state(seed, i))
    evset.bind_profile(T, i, evs.astype(np.uint32), (evs >> 28).astype(np.uint8), np.zeros(n_ev, np.bool_), n_planes)
    nscc.use_profile(T, i, 0)
    setup.configure_qp(T, i, n_ev, base_rtt_ps, **attrs)
    for target, moved in ((D.QPS_INIT, core_qp.qp_attr()),
                          (D.QPS_RTR, core_qp.qp_attr(rq_psn=start_psn, dest_qpn=0x100 + (i ^ 1))),
                          (D.QPS_RTS, core_qp.qp_attr(sq_psn=start_psn))):
        core_qp.modify(T, i, target, moved, 0)


@dataclass
class Network:
    """One-way delay ``base_delay_ps`` plus a uniform draw in [0, ``jitter_ps``) per packet (which
    reorders), plus the EV's ``extra_delay_ps``. With ``rate_bps`` each endpoint's packets also leave
    one after the other at that rate (payload + ``overhead_bytes`` each); None: all at once."""

    base_delay_ps: int = 2 * US
    jitter_ps: int = 500 * NS
    faults: dict = field(default_factory=dict)  # EV value -> PathFault
    default: PathFault = field(default_factory=PathFault)
    rate_bps: int | None = None
    overhead_bytes: int = 100

    def fault(self, ev: int) -> PathFault:
        return self.faults.get(int(ev), self.default)


class InvariantError(AssertionError):
    """A requester invariant of docs/protocol.md broke (raised by a `Pair` made with ``check=True``)."""


@dataclass(frozen=True)
class Completion:
    """One completion of a `Pair`'s QP, in stated units (the core's raw event row is in `Pair.events`)."""

    qp: int  # 0 or 1
    wr_id: int
    status: str  # "SUCCESS", "RETRY_EXC_ERR", ...
    byte_len: int  # bytes
    time_us: float  # simulated time of the completion
    imm_data: int | None = None  # Write-with-Immediate receives only


@dataclass(frozen=True)
class PairResult:
    """What QP `qp` of a `Pair` did so far, in stated units: times in us, rates in Gb/s, sizes in bytes.

    `counters` holds the QP's raw counters (the core's names, as `QueuePair.statistics`)."""

    qp: int
    time_us: float  # the pair's clock
    completed: int  # send completions of this QP (any status)
    failed: int  # of which not SUCCESS
    bytes_written: int  # bytes of the successful writes
    goodput_gbps: float  # bytes_written over the time of the last successful write completion (the pair starts at 0)
    data_packets: int  # first transmissions
    retransmissions: int
    spurious_retransmissions: int
    timeouts: int  # retransmission timeouts
    losses: int  # packets declared lost
    sacks_received: int
    nacks_received: int
    trims_received: int
    cwnd_bytes: float
    completions: tuple = ()  # `Completion` records, in order
    counters: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return (f"QP {self.qp}: {self.completed} write(s) completed ({self.failed} failed), {self.bytes_written} B in "
                f"{self.time_us:.2f} us = {self.goodput_gbps:.2f} Gb/s; {self.data_packets} data packets, "
                f"{self.retransmissions} retransmitted ({self.spurious_retransmissions} spurious, {self.timeouts} "
                f"timeouts), {self.losses} losses, {self.sacks_received} SACKs, {self.nacks_received} NACKs")


def make_evs(n_planes: int, per_plane: int, side: int) -> np.ndarray:
    """EV values for a test profile: plane in the top bits, distinct per side and slot."""
    vals = []
    for p in range(n_planes):
        for k in range(per_plane):
            vals.append((p << 28) | (side << 24) | (k + 1))
    return np.array(vals, dtype=np.uint32)


PAIR_COUNTERS = ("tx_pkts", "tx_bytes", "rtx_pkts", "rtx_spurious", "rtx_timeouts", "sacks_rx", "nacks_rx", "trims_rx",
                 "ecn_sacks_rx", "losses", "probes_tx", "rx_pkts", "rx_bytes", "rx_dup", "rx_trimmed", "inflight", "cwnd")


class Pair:
    """Two connected QPs (0 sends to 1 and 1 to 0) over a faulty in-memory network.

        pair = Pair(network=Network(default=PathFault(loss=0.05)), seed=1)
        assert pair.transfer(1 << 20)      # one 1 MiB write from QP 0, run until it completes
        print(pair.result())               # a `PairResult`: us, Gb/s, bytes
    """

    def __repr__(self) -> str:
        return (f"<Pair at {self.now / US:.3f} us: {int(self.T.qp[0]['n_ev'])} EVs per QP, "
                f"{len(self.queue)} packet(s) in flight, {self.delivered} delivered>")

    def __init__(
        self,
        *,
        seed: int = 1,
        n_planes: int = 2,
        evs_per_plane: int = 16,
        start_psn: int = 0,
        rate_bps: int = 200 * 10**9,
        base_rtt_ps: int = 4 * US,
        network: Network | None = None,
        cc: dict | None = None,
        window: int = 1024,
        max_wr: int = 64,
        check: bool = True,
        **qp_attrs,
    ):
        n_ev = n_planes * evs_per_plane
        self.T = tables.allocate(2, max_ev=n_ev, window=window, max_wr=max_wr, max_recv=max_wr)
        self.net = network or Network()
        self.rng = np.random.default_rng(seed)
        self.now = 0
        self.seq = 0
        self.queue: list = []
        self.check = check
        self.sent = [[], []]  # per QP: (time, kind, record) sent, when recording
        self.received = [[], []]  # per QP: (time, record) delivered by the network, when recording
        self.record = False
        self.delivered = 0
        self.tx_free = [0, 0]  # per QP: when its link is free again (Network.rate_bps)
        self.bh_losses: dict = {}  # (qp, slot) -> the EV's loss count when it was first seen blackholed
        self.retired: set = set()  # (qp, slot): blackholed EVs whose loss has been detected
        T = self.T
        setup.write_cc(T, 0, cc or setup.nscc_profile(rate_bps=rate_bps, base_rtt_ps=base_rtt_ps))
        for i in range(2):
            configure_pair_qp(T, i, n_planes, make_evs(n_planes, evs_per_plane, i), seed, base_rtt_ps, qp_attrs,
                              start_psn)
        self.out = np.zeros(1, dtype=PKT)
        self.events: list = []

    # -- API-like helpers -----------------------------------------------------
    def post_write(self, i: int, length: int, wr_id: int = 1, imm: int | None = None, remote_va: int = 0x10000, rkey: int = 7):
        op = D.WR_WRITE if imm is None else D.WR_WRITE_IMM
        rc = core_qp.post_write(self.T, i, wr_id, op, 0, 0, remote_va, rkey, length, imm or 0, self.now)
        if rc != 0:
            raise RuntimeError("send queue full")

    def post_recv(self, i: int, wr_id: int):
        if core_qp.post_recv(self.T, i, wr_id) != 0:
            raise RuntimeError("receive queue full")

    def ev_of(self, i: int, slot: int) -> int:
        return int(self.T.ev[i, slot]["ev"])

    # -- the network ------------------------------------------------------------
    def _emit(self, i: int, kind: int):
        pkt = self.out[0].copy()
        if self.check:
            self._check_send(i, kind, pkt)
        if self.record:
            self.sent[i].append((self.now, kind, pkt))
        depart = self.now
        if self.net.rate_bps:
            depart = max(self.now, self.tx_free[i])
            bits = (int(pkt["payload_len"]) + self.net.overhead_bytes) * 8
            self.tx_free[i] = depart + bits * 10**12 // self.net.rate_bps
        f = self.net.fault(pkt["ev"])
        if f.blackhole or (f.loss and self.rng.random() < f.loss):
            return
        copies = 2 if (f.dup and self.rng.random() < f.dup) else 1
        data = pkt["opcode"] in range(0xC6, 0xCC)
        if data and f.trim and self.rng.random() < f.trim:
            pkt["trim"] = 2 if f.trim_lasthop else 1
            pkt["payload_len"] = 0
        if f.ecn and pkt["ecn"] in (ECN_ECT1, ECN_ECT0) and self.rng.random() < f.ecn:
            pkt["ecn"] = ECN_CE
        for _ in range(copies):
            delay = self.net.base_delay_ps + f.extra_delay_ps
            if self.net.jitter_ps:
                delay += int(self.rng.integers(0, self.net.jitter_ps))
            heapq.heappush(self.queue, (depart + delay, self.seq, 1 - i, pkt))
            self.seq += 1

    def _check_send(self, i: int, kind: int, pkt):
        T = self.T
        q = T.qp[i]
        if kind in (dispatch.K_DATA, dispatch.K_RTX):
            if pkt["rtx"] != (1 if kind == dispatch.K_RTX else 0):
                raise InvariantError(f"PSN {pkt['psn']}: rtx flag {pkt['rtx']} on a {'re' if kind == dispatch.K_RTX else ''}transmission")
            slot = int(np.nonzero(T.ev[i, : q["n_ev"]]["ev"] == pkt["ev"])[0][0])
            st = T.ev[i, slot]["state"]
            if st != D.EV_GOOD:
                raise InvariantError(f"data packet PSN {pkt['psn']} sent on EV slot {slot} in state {D.EV_STATE_NAMES[st]}")
            if (i, slot) in self.retired and q["ev_floor_hits"] == 0 and evpolicy.PATH_HEALTH[q["ev_policy"]]:
                raise InvariantError(f"new data on blackholed EV slot {slot} after its first timeout")
            if q["inflight"] > max(q["cwnd"], pkt["payload_len"]) + 1e-9:
                raise InvariantError(f"inflight {q['inflight']} exceeds cwnd {q['cwnd']}")
            span = psn_diff(q["sq_psn"], q["una_psn"])
            if span > int(q["mpr"]) * D.MPR_UNIT:
                raise InvariantError(f"PSN span {span} exceeds MPR x 128")
            # a new PSN only inside the current window: min(own MPR, the responder's latest advertised)
            peer = int(q["peer_mpr"])
            limit = min(int(q["mpr"]), peer) if peer else int(q["mpr"])
            if kind == dispatch.K_DATA and span > limit * D.MPR_UNIT:
                raise InvariantError(f"new PSN {pkt['psn']}: span {span} exceeds the current MPR {limit} x 128")

    # -- manual driving (aioquic-test style: the test decides each delivery) ------------
    def collect(self, i: int, port_mask: int = 0xFF) -> list:
        """Everything QP `i` sends now, as (kind, record) pairs, NOT put on the network."""
        out = []
        while True:
            kind = dispatch.next_packet(self.T, i, self.now, port_mask, self.out, 0)
            if kind == dispatch.K_NONE:
                break
            pkt = self.out[0].copy()
            if self.check:
                self._check_send(i, kind, pkt)
            out.append((kind, pkt))
        self._drain_events()
        return out

    def deliver(self, dst: int, pkt) -> None:
        """Hand one packet record to QP `dst` at the current time."""
        dispatch.on_packet(self.T, dst, pkt, self.now)
        self._drain_events()

    def advance(self, t: int) -> None:
        """Set the clock to `t` (never backwards) and fire every timer that is due."""
        self.now = max(self.now, int(t))
        for i in (0, 1):
            if dispatch.next_deadline(self.T, i) <= self.now:
                dispatch.on_timer(self.T, i, self.now)
        self._drain_events()

    def qp(self, i: int):
        return self.T.qp[i]

    def pump(self):
        """Let both QPs send everything they can now."""
        for i in (0, 1):
            while True:
                kind = dispatch.next_packet(self.T, i, self.now, 0xFF, self.out, 0)
                if kind == dispatch.K_NONE:
                    break
                self._emit(i, kind)

    def step(self) -> bool:
        """Advance to the next delivery or deadline and process it; False when idle."""
        t = self.queue[0][0] if self.queue else D.NEVER
        t = min(t, dispatch.next_deadline(self.T, 0), dispatch.next_deadline(self.T, 1))
        if t == D.NEVER:
            return False
        self.now = max(self.now, int(t))
        while self.queue and self.queue[0][0] <= self.now:
            _, _, dst, pkt = heapq.heappop(self.queue)
            if self.record:
                self.received[dst].append((self.now, pkt))
            dispatch.on_packet(self.T, dst, pkt, self.now)
            self.delivered += 1
        for i in (0, 1):
            if dispatch.next_deadline(self.T, i) <= self.now:
                dispatch.on_timer(self.T, i, self.now)
        self._drain_events()
        self.pump()
        return True

    def _drain_events(self):
        self.events.extend(tables.drain_events(self.T))
        if self.check:
            self._watch()

    def _watch(self):
        """Invariants checked after every step: PSN span, and which blackholed EVs saw a loss."""
        T = self.T
        for i in (0, 1):
            q = T.qp[i]
            span = psn_diff(q["sq_psn"], q["una_psn"])
            if q["state"] == D.QPS_RTS and not 0 <= span <= int(q["mpr"]) * D.MPR_UNIT:
                raise InvariantError(f"QP {i}: PSN span {span} outside [0, MPR x 128]")
            for slot in range(int(q["n_ev"])):
                e = T.ev[i, slot]
                f = self.net.fault(e["ev"])
                key = (i, slot)
                if not (f.blackhole or f.loss >= 1.0):
                    self.bh_losses.pop(key, None)
                    self.retired.discard(key)
                    continue
                base = self.bh_losses.setdefault(key, int(e["losses"]))
                if int(e["losses"]) > base:
                    self.retired.add(key)

    def run_until(self, done, max_steps: int = 1_000_000, max_time_ps: int | None = None) -> bool:
        """Step until ``done(self)`` is true; False if the step or time budget ran out first."""
        self.pump()
        for _ in range(max_steps):
            if done(self):
                return True
            if max_time_ps is not None and self.now > max_time_ps:
                return False
            if not self.step():
                return done(self)
        return done(self)

    def completions(self, kind=D.E_SEND_DONE):
        """The raw event rows (`mrc.core.dtypes.EVT`, times in ps) of one kind; `result` has them in units."""
        return [e for e in self.events if e["kind"] == kind]

    def result(self, i: int = 0) -> PairResult:
        """QP `i`'s completions and counters so far as a `PairResult` (us, Gb/s, bytes)."""
        q = self.T.qp[i]
        comps, sends = [], []
        for e in self.events:
            kind = int(e["kind"])
            if int(e["qp"]) != i or kind not in (D.E_SEND_DONE, D.E_RECV_IMM):
                continue
            c = Completion(i, int(e["wr_id"]), D.WC_STATUS_NAMES.get(int(e["status"]), str(int(e["status"]))),
                           int(e["byte_len"]), int(e["time"]) / US, int(e["imm"]) if kind == D.E_RECV_IMM else None)
            comps.append(c)
            if kind == D.E_SEND_DONE:
                sends.append(c)
        ok = sum(c.byte_len for c in sends if c.status == "SUCCESS")
        last_us = max((c.time_us for c in sends if c.status == "SUCCESS"), default=0.0)
        counters = {n: (float(q[n]) if n == "cwnd" else int(q[n])) for n in PAIR_COUNTERS}
        return PairResult(
            qp=i, time_us=self.now / US, completed=len(sends), failed=sum(c.status != "SUCCESS" for c in sends),
            bytes_written=ok, goodput_gbps=ok * 8 / (last_us * 1e3) if last_us else 0.0,
            data_packets=int(q["tx_pkts"]) - int(q["rtx_pkts"]), retransmissions=int(q["rtx_pkts"]),
            spurious_retransmissions=int(q["rtx_spurious"]), timeouts=int(q["rtx_timeouts"]), losses=int(q["losses"]),
            sacks_received=int(q["sacks_rx"]), nacks_received=int(q["nacks_rx"]), trims_received=int(q["trims_rx"]),
            cwnd_bytes=float(q["cwnd"]), completions=tuple(comps), counters=counters)

    def transfer(self, nbytes: int, i: int = 0, wr_id: int = 1, **kw) -> bool:
        """Post one write of `nbytes` from QP `i` and run until it completes (or fails)."""
        self.post_write(i, nbytes, wr_id=wr_id, **kw)
        return self.run_until(lambda s: any(int(e["wr_id"]) == wr_id for e in s.completions()))
