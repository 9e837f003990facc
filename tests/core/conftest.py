"""Two `mrc.api.Device`s on an in-memory multi-plane network, for the API and controller tests.

`MemNet` is modelled on trio's ``_fake_net``: every packet a device emits is
offered to ``net.route_packet(src, out)``, which a test may replace; the
default route applies the hooks (``drop``, and the seeded ``loss`` and
``jitter_ps``) and
schedules the delivery. Plane p joins port p of every device, so a packet is
lost when its port is down at either end. Time jumps to the next delivery or
device deadline (aioquic test style). Everything is deterministic from the
seed; ``net.sent`` records every packet emitted, with its fate.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import pytest

from mrc.api import Device, QpCap
from mrc.ev_fields import EvField
from mrc.units import US

DATA_OPCODES = range(0xC6, 0xCC)


@dataclass
class Sent:
    time: int
    src: object
    out: object  # mrc.api.OutPacket
    fate: str = "in flight"  # then "delivered", "dropped" or "link down"
    arrived: int | None = None

    @property
    def pkt(self):
        return self.out.pkt

    @property
    def is_data(self) -> bool:
        return int(self.out.pkt["opcode"]) in DATA_OPCODES

    @property
    def ev(self) -> int:
        return int(self.out.pkt["ev"])


class MemNet:
    def __init__(self, devices, *, seed: int = 0, delay_ps: int = 2 * US, jitter_ps: int = 0, loss: float = 0.0):
        self.devices = {d.address: d for d in devices}
        self.rng = np.random.default_rng(seed)
        self.delay_ps = delay_ps
        self.jitter_ps = jitter_ps  # extra delay drawn uniformly in [0, jitter_ps): reordering
        self.loss = loss  # probability that a packet is lost, drawn from the seeded generator
        self.now = 0
        self.sent: list[Sent] = []
        self.drop = None  # hook: drop(sent: Sent) -> True to lose the packet
        self.route_packet = self.default_route
        self._heap: list = []
        self._seq = 0

    # -- routing -----------------------------------------------------------------
    def default_route(self, rec: Sent) -> None:
        out = rec.out
        dst = self.devices[out.dest]
        bit = 1 << (out.port - 1)
        if not (self.devices[rec.src].ctl.local_ports & bit and dst.ctl.local_ports & bit):
            rec.fate = "link down"
            return
        if (self.drop is not None and self.drop(rec)) or (self.loss and self.rng.random() < self.loss):
            rec.fate = "dropped"
            return
        delay = self.delay_ps + (int(self.rng.integers(0, self.jitter_ps)) if self.jitter_ps else 0)
        self.schedule(rec, self.now + delay)

    def schedule(self, rec: Sent, at: int) -> None:
        heapq.heappush(self._heap, (at, self._seq, rec))
        self._seq += 1

    # -- running -----------------------------------------------------------------
    def pump(self) -> None:
        """Let every device send what it can now."""
        for addr, dev in self.devices.items():
            for out in dev.packets_to_send(self.now):
                rec = Sent(self.now, addr, out)
                self.sent.append(rec)
                self.route_packet(rec)

    def next_time(self) -> int | None:
        times = [self._heap[0][0]] if self._heap else []
        times += [t for t in (d.next_deadline() for d in self.devices.values()) if t is not None]
        return min(times) if times else None

    def _advance(self, t: int) -> None:
        self.now = max(self.now, t)
        while self._heap and self._heap[0][0] <= self.now:
            _, _, rec = heapq.heappop(self._heap)
            out = rec.out
            if not self.devices[out.dest].ctl.local_ports & (1 << (out.port - 1)):
                rec.fate = "link down"  # the port went down while the packet was on the wire
                continue
            rec.fate, rec.arrived = "delivered", self.now
            self.devices[out.dest].receive(out.pkt, out.payload, self.now, src=rec.src)
        for dev in self.devices.values():
            dev.handle_timer(self.now)

    def run(self, until=None, *, max_time_ps: int | None = None, max_steps: int = 200_000) -> bool:
        """Step until ``until()`` holds (True), the network is idle, or a budget runs out (False)."""
        for _ in range(max_steps):
            self.pump()
            if until is not None and until():
                return True
            t = self.next_time()
            if t is None or (max_time_ps is not None and t > max_time_ps):
                return until is None or bool(until())
            self._advance(t)
        return False

    def run_for(self, duration_ps: int) -> None:
        """Process everything due in the next `duration_ps`, then stop the clock there."""
        end = self.now + duration_ps
        self.run(max_time_ps=end)
        self.now = max(self.now, end)
        self.pump()

    def data_sent(self, src=None, since: int = 0) -> list[Sent]:
        return [r for r in self.sent if r.is_data and r.time >= since and (src is None or r.src == src)]


def explicit_evs(side: int, count: int) -> list[int]:
    """Distinct 32-bit EV values for one device's explicit profile."""
    return [0x10000 * (side + 1) + k + 1 for k in range(count)]


def setup_profiles(dev: Device, *, ev_mode: str = "EXP", ev_count: int = 16, min_active: int | None = None,
                   event_mask: int = 3, side: int = 0, cc: dict | None = None) -> None:
    """EV profile 1 (explicit 32-bit EVs round robin over the ports, or AUTO) and CC profile 1 (NSCC)."""
    c = dev.ctl
    min_active = ev_count // 4 if min_active is None else min_active
    if ev_mode == "EXP":
        c.modify_ev_format_profile(1, mode="STEV", fields=[32], state="OFFLINE")
        c.modify_ev_format_profile(1, state="ONLINE")
        c.modify_ev_profile(1, mode="EXP", fmt_id=1, count=ev_count, min_active=min_active, event_mask=event_mask,
                            fields=[EvField(32, mask=0xFFFFFFFF)], state="OFFLINE")
        for k, ev in enumerate(explicit_evs(side, ev_count)):
            c.replace_ev(1, None, ev, port=k % dev.ports + 1)
    else:
        c.modify_ev_profile(1, mode=ev_mode, count=ev_count, min_active=min_active, event_mask=event_mask, state="OFFLINE")
    c.modify_ev_profile(1, state="ONLINE")
    c.modify_cc_profile(1, algorithm="uet-1.0-nscc", state="OFFLINE")
    c.modify_cc_profile(1, config=cc if cc is not None else {"base_rtt": 8000}, state="ONLINE")


RTR = dict(rq_psn=0, mpr_dest=8, max_wimm_dest=16)
RTS = dict(sq_psn=0, mpr=8, max_wimm=16, retry_linear=7, retry_exp=7, timeout=4)


@dataclass
class Conn:
    qa: object
    qb: object
    cqa: object
    cqb: object


class TwoDevices:
    """Devices ``a`` (address "A") and ``b`` ("B"), profiles set up, joined by ``net``."""

    def __init__(self, *, ports: int = 2, ev_count: int = 16, ev_mode: str = "EXP", seed: int = 1, net_seed: int = 7,
                 delay_ps: int = 2 * US, jitter_ps: int = 0, loss: float = 0.0, min_active: int | None = None,
                 event_mask: int = 3, max_wr: int = 64, cc: dict | None = None):
        self.a = Device("a", ports=ports, seed=seed, address="A", max_wr=max_wr)
        self.b = Device("b", ports=ports, seed=seed + 1, address="B", max_wr=max_wr)
        for side, dev in enumerate((self.a, self.b)):
            setup_profiles(dev, ev_mode=ev_mode, ev_count=ev_count, min_active=min_active, event_mask=event_mask,
                           side=side, cc=cc)
        self.net = MemNet([self.a, self.b], seed=net_seed, delay_ps=delay_ps, jitter_ps=jitter_ps, loss=loss)

    def connect(self, *, rtr: dict | None = None, rts: dict | None = None, cap: QpCap | None = None, cqe: int = 1024) -> Conn:
        """One QP on each device, connected to each other and moved to RTS."""
        cqa, cqb = self.a.create_cq(cqe), self.b.create_cq(cqe)
        qa, qb = self.a.create_qp(cqa, cap=cap), self.b.create_qp(cqb, cap=cap)
        for q in (qa, qb):
            q.modify("INIT", ev_profile_id=1, cc_profile_id=1)
        qa.modify("RTR", dest_qp_num=qb.qp_num, remote_address="B", **{**RTR, **(rtr or {})})
        qb.modify("RTR", dest_qp_num=qa.qp_num, remote_address="A", **{**RTR, **(rtr or {})})
        for q in (qa, qb):
            q.modify("RTS", **{**RTS, **(rts or {})})
        return Conn(qa, qb, cqa, cqb)


@pytest.fixture
def two_devices() -> TwoDevices:
    return TwoDevices()


@pytest.fixture
def make_two_devices():
    return TwoDevices
