"""An in-memory network of `mrc.api.Device`s, driven from Python: loss, reordering, no sockets.

`SimNet` is the quickest way to see two devices talk (docs/library.md). It is
modelled on trio's in-memory ``FakeNet``: every packet a device emits is
offered to ``net.route_packet(sent)``, which you may replace; the default
route drops the packet when its port is down at either end, when the
``drop`` hook says so, or with probability ``loss``, and otherwise delivers it
after ``delay_ps`` plus a uniform draw in ``[0, jitter_ps)`` (which reorders
packets). Plane p joins port p of every device. Every draw comes from one
generator seeded with ``seed``, so a run is reproducible.

Time is simulated, in integer picoseconds like every time of the library: it
jumps to the next delivery or device deadline (aioquic's tests do the same).
``net.now`` is the current time; ``net.sent`` records every packet emitted
(`Sent`: time, source, the `OutPacket`, its fate).

The ``wait_*`` methods mirror `mrc.io.Endpoint`'s: they run the network until
the condition holds and raise `TimeoutError` when it does not hold within
``timeout_ps`` of simulated time or the network falls idle first.

    net = SimNet([a, b], loss=0.05, jitter_ps=1 * US, seed=1)
    net.post_write(qa, 1, src.sge(), remote_addr=dst.addr, rkey=dst.rkey)
    (wc,) = net.wait_completion(qa.send_cq)
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from mrc.errors import UsageError
from mrc.units import MS, US

DATA_OPCODES = range(0xC6, 0xCC)  # RDMA Write first / middle / last (with immediate), only
DEFAULT_TIMEOUT_PS = 100 * MS

__all__ = ["SimNet", "Sent", "SimNetStatistics", "DEFAULT_TIMEOUT_PS"]


@dataclass
class Sent:
    """One packet a device emitted: when (ps), from which device address, the `OutPacket`, and its fate."""

    time: int
    src: object
    out: object  # mrc.api.OutPacket
    fate: str = "in flight"  # then "delivered", "dropped" or "link down"
    arrived: int | None = None  # ps

    @property
    def pkt(self):
        """The packet's `mrc.wire.records.PKT` row."""
        return self.out.pkt

    @property
    def is_data(self) -> bool:
        """True for RDMA Write packets (not ACKs, SACKs, NACKs, probes or endpoint requests)."""
        return int(self.out.pkt["opcode"]) in DATA_OPCODES

    @property
    def ev(self) -> int:
        """The entropy value (path) the packet was sent on."""
        return int(self.out.pkt["ev"])

    def __repr__(self) -> str:
        kind = "data" if self.is_data else f"opcode {int(self.out.pkt['opcode']):#x}"
        return (f"Sent({kind} PSN {int(self.out.pkt['psn'])} {self.src!r} -> {self.out.dest!r} port {self.out.port} "
                f"EV {self.ev:#x} at {self.time / US:.3f} us: {self.fate})")


@dataclass(frozen=True)
class SimNetStatistics:
    """Packet counts of a `SimNet` so far, and its clock."""

    now_us: float  # simulated time
    sent: int  # packets the devices emitted
    data_sent: int  # of which RDMA Write data packets (first transmissions and retransmissions)
    delivered: int
    dropped: int  # by `loss` or the `drop` hook
    link_down: int  # lost because the port was down at either end
    in_flight: int


class SimNet:
    """Devices joined by an in-memory multi-plane network (see the module docstring)."""

    def __init__(self, devices, *, seed: int = 0, delay_ps: int = 2 * US, jitter_ps: int = 0, loss: float = 0.0):
        self.devices = {}
        for d in devices:
            if d.address in self.devices:
                raise UsageError(f"SimNet: two devices have the address {d.address!r}")
            self.devices[d.address] = d
        for name, value in (("delay_ps", delay_ps), ("jitter_ps", jitter_ps)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
                raise UsageError(f"SimNet: {name} = {value!r} must be a non-negative integer (picoseconds)")
        if not 0.0 <= loss <= 1.0:
            raise UsageError(f"SimNet: loss = {loss!r} must be a probability in [0, 1]")
        self.rng = np.random.default_rng(seed)
        self.delay_ps = int(delay_ps)
        self.jitter_ps = int(jitter_ps)  # extra delay drawn uniformly in [0, jitter_ps): reordering
        self.loss = loss  # probability that a packet is lost, drawn from the seeded generator
        self.now = 0  # ps
        self.sent: list[Sent] = []
        self.drop = None  # hook: drop(sent: Sent) -> True to lose the packet
        self.route_packet = self.default_route
        self._heap: list = []
        self._seq = 0

    def __repr__(self) -> str:
        names = ", ".join(repr(a) for a in self.devices)
        return (f"<SimNet [{names}] at {self.now / US:.3f} us: delay {self.delay_ps / US:g} us, "
                f"jitter {self.jitter_ps / US:g} us, loss {self.loss:g}, {len(self.sent)} packets sent>")

    # -- routing -----------------------------------------------------------------
    def default_route(self, rec: Sent) -> None:
        """Drop (port down, the `drop` hook, `loss`) or schedule the delivery after the delay and jitter."""
        out = rec.out
        dst = self.devices.get(out.dest)
        if dst is None:
            raise UsageError(f"SimNet: a packet of QP {out.qp_num:#x} is addressed to {out.dest!r}, which is not a "
                             f"device of this network ({list(self.devices)})")
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
        """Deliver `rec` at time `at` (ps); for routes of your own."""
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
        """The next delivery or device deadline (ps), or None when nothing is pending."""
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
        """Step until ``until()`` holds (True), the network is idle, or a budget runs out (False).

        Without `until`, runs until idle (True) or the time budget (False)."""
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

    # -- the application side (as `mrc.io.Endpoint`) -----------------------------------
    def post_write(self, qp, wr_id: int, sge, **kw) -> None:
        """`QueuePair.post_write` at the network's current time."""
        qp.post_write(wr_id, sge, now=self.now, **kw)

    def wait_condition(self, fn, *args, timeout_ps: int = DEFAULT_TIMEOUT_PS) -> None:
        """Run until ``fn(*args)`` is true; `TimeoutError` if it is not within `timeout_ps` or the network idles."""
        start = self.now
        if not self.run(lambda: fn(*args), max_time_ps=start + timeout_ps):
            why = "the network went idle" if self.next_time() is None else f"{timeout_ps / US:g} us passed"
            raise TimeoutError(f"SimNet: {getattr(fn, '__name__', 'condition')} still false at "
                               f"{self.now / US:.3f} us ({why})")

    def wait_completion(self, cq, num_entries: int = 16, *, timeout_ps: int = DEFAULT_TIMEOUT_PS) -> list:
        """Run until `cq` holds a completion; return up to `num_entries` of them (`WorkCompletion`)."""
        def cq_has_a_completion():
            return len(cq) > 0

        self.wait_condition(cq_has_a_completion, timeout_ps=timeout_ps)
        return cq.poll(num_entries)

    def wait_ev_events(self, evq, num_entries: int = 16, *, timeout_ps: int = DEFAULT_TIMEOUT_PS) -> list:
        """Run until the controller's EV event queue `evq` holds events; return up to `num_entries` (`EvEvent`)."""
        def ev_event_queue_has_an_event():
            return len(evq) > 0

        self.wait_condition(ev_event_queue_has_an_event, timeout_ps=timeout_ps)
        return evq.poll(num_entries)

    # -- looking back ---------------------------------------------------------------------
    def data_sent(self, src=None, since: int = 0) -> list[Sent]:
        """The data packets sent since `since` (ps), by the device at address `src` (None: any)."""
        return [r for r in self.sent if r.is_data and r.time >= since and (src is None or r.src == src)]

    def statistics(self) -> SimNetStatistics:
        """A `SimNetStatistics` snapshot: packets by fate, and the clock."""
        fates = [r.fate for r in self.sent]
        return SimNetStatistics(now_us=self.now / US, sent=len(self.sent), data_sent=sum(r.is_data for r in self.sent),
                                delivered=fates.count("delivered"), dropped=fates.count("dropped"),
                                link_down=fates.count("link down"), in_flight=fates.count("in flight"))
