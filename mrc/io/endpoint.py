"""The trio adapter: one `mrc.api.Device` driven over real sockets, no protocol logic.

Shape (aioquic's ``asyncio/protocol.py``, hypercorn's trio ``udp_server``,
trio's DTLS endpoint):

- one *reader* task per receive socket: batches of ``recvmsg`` (until the
  socket is empty or ``rx_batch``) -> the source check -> the QPN check ->
  the transport's ``unframe_untrusted`` (garbage is dropped and counted, never
  raised) -> a bounded inbox (full: the datagram is dropped and counted).
  Where the transport allows (UDP encapsulation), a receive socket whose port
  has one peer address is connected to it (``sockets_connected``): the kernel
  drops every other source before the process sees it. Source check: once a
  QP is connected, a datagram from an address that is no QP's peer is dropped
  before it is even decoded (``rx_wrong_source``: a set lookup each); QPN
  check: a datagram whose BTH names no QP of the device (nor the endpoint QP)
  is dropped before decoding too (``rx_unknown_qpn``, read in place), and so
  is an endpoint request beyond the rate below (``ep_rate_limited``); a
  packet for a connected QP must come from that
  QP's peer address on the NIC port it arrived on (`Peer.sent`), else it is
  dropped and counted (``rx_wrong_source``); an endpoint request is answered
  only when it comes from the peer of one of the device's QPs
  (``ep_unknown_source``) and at most ``ep_rate`` per second, in bursts of
  ``ep_burst`` (``ep_rate_limited``, counted before decoding where BTH can be
  read in place); endpoint responses go on to the
  controller, which matches them against its own requests;
- one *protocol* task per endpoint, the only code that touches the device:
  it waits for the inbox or the device's single deadline
  (`Device.next_deadline`, never fired early: the core gets
  ``max(now, deadline)``), feeds what arrived with ``trio.current_time()``
  converted to integer picoseconds since the run's first clock read
  (`run_epoch`), fires the timer when due, then drains
  `Device.packets_to_send` and ``sendto``'s each packet.

Application code calls the device (post writes, poll CQs, query EV states)
from its own tasks: trio runs one task at a time, and the protocol task only
yields between core calls, so no lock is needed. After posting, call
`Endpoint.wakeup` (or use `Endpoint.post_write`) so that the new work goes
out at once. ``wait_*`` methods sleep until the protocol task has made the
condition true.

    async with open_endpoint(device, UdpEncap(["127.0.0.1:0"])) as ep:
        ...                      # ep.local_peer() is where the peer sends

or, with a nursery of your own: ``ep = Endpoint(device, transport);
await nursery.start(ep.serve)``. Leaving the block (or cancelling the
nursery) stops both kinds of task and closes the sockets.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, fields

import numpy as np
import trio

from mrc.errors import UsageError
from mrc.io.transports import Peer
from mrc.wire.constants import ENDPOINT_QPN, Opcode
from mrc.wire.errors import DecodeError

ENDPOINT_REQUEST = int(Opcode.MRC_ENDPOINT_REQUEST)

PS_PER_S = 10**12
MSG_TRUNC = 0x20  # Linux
_WAKE = object()
ENDPOINT_QPN_BYTES = ENDPOINT_QPN.to_bytes(3, "big")
# Receive buffers: a quarter of `mrc io transfer`'s default retransmission timeout (50 ms) of the port's rate,
# within [256 KiB, 8 MiB] (docs/real-network.md, "Floods")
RX_QUEUE_S = 0.0125
MIN_RX_BUFFER, MAX_RX_BUFFER = 256 << 10, 8 << 20


def to_ps(t: float) -> int:
    """A trio time (float seconds) as the core's integer picoseconds."""
    return int(t * PS_PER_S)


def from_ps(ps: int) -> float:
    """The core's picoseconds as trio time, rounded up so that a sleep never ends early."""
    return math.ceil(ps / 1e3) / 1e9 if ps > 0 else ps / PS_PER_S


_EPOCH = trio.lowlevel.RunVar("mrc_io_epoch")


def run_epoch() -> float:
    """The trio time that is the core's 0 ps in this trio run: the time any endpoint first read the clock.

    trio's clock is the system's monotonic clock (seconds since boot) plus a random offset of up to
    2e5 s, which in picoseconds reaches the core's "never" (`mrc.core.dtypes.NEVER`, 2^62 ps, ~53 days)
    on a machine that has been up that long: a deadline there would read as "no timer". Counting from
    the run's first read keeps the core's times near zero (and float seconds finer), and every endpoint
    of the run on one clock.
    """
    try:
        return _EPOCH.get()
    except LookupError:
        t = trio.current_time()
        _EPOCH.set(t)
        return t


def trio_time(ps: int) -> float:
    """The core's time `ps` (`Endpoint.now`'s clock) as trio time, for ``trio.sleep_until`` / ``move_on_at``;
    never before it."""
    return run_epoch() + from_ps(ps)


@dataclass(frozen=True)
class EndpointStatistics:
    """A snapshot of an endpoint's counters (`Endpoint.statistics`)."""

    rx_datagrams: int = 0  # datagrams read from the sockets
    rx_bytes: int = 0
    rx_garbage: int = 0  # dropped: not an MRC packet, truncated, bad ICRC (DecodeError)
    rx_queue_drops: int = 0  # dropped: the inbox was full
    rx_errors: int = 0  # socket receive errors (e.g. an ICMP error reported on the socket)
    rx_fed: int = 0  # packets handed to the device
    tx_datagrams: int = 0
    tx_bytes: int = 0
    tx_no_route: int = 0  # packets the transport could not address (no address on that port, EV with no path)
    tx_errors: int = 0  # sendto failed (link down, no route in the kernel, buffer full): the core recovers
    timers: int = 0  # device deadlines fired
    steps: int = 0  # protocol-task iterations
    inbox_size: int = 0
    inbox_peak: int = 0  # deepest the inbox has been
    cq_overruns: int = 0  # completions the application's CQs held beyond their size (reported, never lost)
    rx_wrong_source: int = 0  # dropped: for a connected QP, but not from its peer's address on that port
    ep_unknown_source: int = 0  # endpoint requests dropped: not from the peer of any QP of the device
    ep_rate_limited: int = 0  # endpoint requests dropped: beyond ep_rate / ep_burst
    rx_unknown_qpn: int = 0  # dropped before decoding: BTH names no QP of the device
    sockets_connected: int = 0  # receive sockets the kernel filters to their one peer address (now)
    rx_buffer: int = 0  # bytes asked for each receive socket's buffer (`Endpoint`, ``rx_queue_s``)


class Endpoint:
    """One MRC NIC (`mrc.api.Device`) on the sockets of `transport` (`UdpEncap` or `NativeSrv6`)."""

    def __init__(self, device, transport, *, inbox_size: int = 4096, rx_batch: int = 64, tx_batch: int = 32,
                 tracer=None, ep_rate: float = 2000.0, ep_burst: int = 1024, rx_queue_s: float = RX_QUEUE_S):
        if not ep_rate > 0 or not (isinstance(ep_burst, int) and ep_burst >= 1):
            raise UsageError(f"Endpoint: ep_rate = {ep_rate!r} must be > 0 and ep_burst = {ep_burst!r} an integer >= 1")
        if not (isinstance(rx_queue_s, (int, float)) and 0 < rx_queue_s <= 10):
            raise UsageError(f"Endpoint: rx_queue_s = {rx_queue_s!r} must be in (0, 10] seconds")
        if device.ports != transport.ports:
            raise UsageError(f"Endpoint: device {device.name!r} has {device.ports} port(s) but the transport "
                             f"has {transport.ports} socket address(es); give one per NIC port")
        self.device = device
        self.transport = transport
        self.rx_batch, self.tx_batch = rx_batch, tx_batch
        self.tracer = tracer  # tracer(kind, now_ps, out_or_pkt): "tx" (OutPacket) / "rx" (PKT row) hook
        self._inbox_send, self._inbox = trio.open_memory_channel(inbox_size)
        self._counts = {f.name: 0 for f in fields(EndpointStatistics)}
        self._counts["inbox_size"] = inbox_size
        self._progress = trio.Event()
        self._last_now = 0
        self._cqs: list = []
        self.serving = False
        self.ep_rate, self.ep_burst = float(ep_rate), ep_burst
        self._ep_tokens, self._ep_refill = float(ep_burst), None  # token bucket of endpoint answers
        self._allowed: set = set()  # (port, source address, UDP port or 0 in native mode) of every QP's peer
        self._connected: dict = {}  # port -> the address its socket is connected to
        # each receive socket holds about rx_queue_s of the port's rate: a packet that waited longer would be
        # resent by then (the queue is sized to the retransmission timeout, not to the memory available)
        rate = getattr(device, "port_rate_bps", 10**9) / 8
        self._counts["rx_buffer"] = transport.rx_buffer = int(min(MAX_RX_BUFFER, max(MIN_RX_BUFFER, rate * rx_queue_s)))

    # -- time -------------------------------------------------------------------------
    def now(self) -> int:
        """The current time in the core's unit (ps), never before a time the device has seen."""
        self._last_now = max(self._last_now, to_ps(trio.current_time() - run_epoch()))
        return self._last_now

    # -- application side ---------------------------------------------------------------
    def wakeup(self) -> None:
        """Tell the protocol task that the device has new work (never blocks)."""
        with contextlib.suppress(trio.WouldBlock, trio.ClosedResourceError):
            self._inbox_send.send_nowait(_WAKE)

    def post_write(self, qp, wr_id: int, sge, **kw) -> None:
        """`QueuePair.post_write` at the current time, then `wakeup`."""
        qp.post_write(wr_id, sge, now=self.now(), **kw)
        self.wakeup()

    def local_peer(self):
        """This endpoint's addresses, as the `Peer` a remote side connects its QP to."""
        return self.transport.local_peer()

    def statistics(self) -> EndpointStatistics:
        """An immutable `EndpointStatistics` snapshot of the endpoint's counters."""
        c = dict(self._counts)
        c["cq_overruns"] = sum(cq.overruns for cq in self._cqs)
        return EndpointStatistics(**c)

    def watch_cq(self, cq) -> None:
        """Include `cq`'s overruns in `statistics()`."""
        if cq not in self._cqs:
            self._cqs.append(cq)

    async def wait_condition(self, fn, *args) -> None:
        """Sleep until ``fn(*args)`` is true; it is checked again after every protocol step."""
        while not fn(*args):
            await self._progress.wait()

    async def wait_completion(self, cq, num_entries: int = 16) -> list:
        """Sleep until `cq` holds a completion; return up to `num_entries` of them."""
        self.watch_cq(cq)
        await self.wait_condition(lambda: len(cq) > 0)
        return cq.poll(num_entries)

    async def wait_ev_events(self, evq, num_entries: int = 16) -> list:
        """Sleep until the controller's EV event queue `evq` holds events; return them."""
        await self.wait_condition(lambda: len(evq) > 0)
        return evq.poll(num_entries)

    # -- the tasks ---------------------------------------------------------------------
    async def serve(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Open the sockets, run the reader tasks and the protocol task until cancelled.

        For ``nursery.start(endpoint.serve)``: it reports started (with the
        endpoint) once every socket is bound. The sockets close when it ends.
        """
        run_epoch()  # the core's clock starts here at the latest
        try:
            await self.transport.open_sockets()
            async with trio.open_nursery() as nursery:
                for port, sock in self.transport.rx_sockets():
                    nursery.start_soon(self._reader, port, sock)
                nursery.start_soon(self._protocol)
                self.serving = True
                task_status.started(self)
        finally:
            self.serving = False
            self.transport.close()
            self._inbox_send.close()

    async def _reader(self, port: int, sock) -> None:
        c, tp = self._counts, self.transport
        native = tp.mode == "native"
        ancsize = 256 if native else 0
        qps = self.device._by_qpn  # the device's QPs by number (read live: QPs come and go)
        while True:
            items, screened, screened_bytes = await sock.recv_batch(self.rx_batch, ancsize, self._screen)
            if screened:
                c["rx_datagrams"] += screened
                c["rx_bytes"] += screened_bytes
                c["rx_unknown_qpn"] += screened
            for data, anc, flags, addr in items:
                if data is None:
                    c["rx_errors"] += 1
                    continue
                c["rx_datagrams"] += 1
                c["rx_bytes"] += len(data)
                if flags & MSG_TRUNC:
                    c["rx_garbage"] += 1
                    continue
                allowed = self._allowed
                if allowed and (port, addr[0].split("%")[0], 0 if native else addr[1]) not in allowed:
                    c["rx_wrong_source"] += 1  # not from any QP's peer: dropped before it costs a decode
                    continue
                at = tp.bth_at(data)
                charged = False
                if at >= 0:  # BTH read in place: opcode, destination QP
                    qpn = data[at + 5:at + 8]
                    if qpn == ENDPOINT_QPN_BYTES:
                        if data[at] == ENDPOINT_REQUEST:
                            if not self._ep_token():
                                c["ep_rate_limited"] += 1  # beyond ep_rate: dropped before it costs a decode
                                continue
                            charged = True
                    elif int.from_bytes(qpn, "big") not in qps:
                        c["rx_unknown_qpn"] += 1  # for no QP of ours: dropped before it costs a decode
                        continue
                try:
                    item = tp.unframe_untrusted(port, data, anc, addr)
                except (DecodeError, ValueError):
                    c["rx_garbage"] += 1
                    continue
                if not self._admit(port, item[0], item[2], charged):
                    continue
                try:
                    self._inbox_send.send_nowait(item)
                except trio.WouldBlock:
                    c["rx_queue_drops"] += 1
            depth = self._inbox.statistics().current_buffer_used
            if depth > c["inbox_peak"]:
                c["inbox_peak"] = depth

    def _peer_sources(self) -> set:
        """Where the device's connected QPs' peers send from, per NIC port (empty: no QP connected yet, so the
        readers let everything through to the per-packet check). Native mode matches the address only (the
        UDP source port carries entropy)."""
        native = self.transport.mode == "native"
        out = set()
        for peer in self.device.peer_addresses():
            if isinstance(peer, Peer):
                for k, a in enumerate(peer.addrs):
                    if a is not None:
                        out.add((k, a[0], 0 if native else a[1]))
        return out

    def _screen(self, rows, lens):
        """Of a batch of datagrams (`Datagram.recv_batch`), those to keep: all but the ones whose BTH names no
        QP of the device (nor the endpoint QP), found with a few array operations for the whole batch."""
        qpn, valid = self.transport.dqpns(rows, lens)
        known = np.fromiter(self.device._by_qpn, dtype=np.int64, count=len(self.device._by_qpn))
        return ~valid | (qpn == ENDPOINT_QPN) | np.isin(qpn, known)

    def _receive_only(self, allowed: set) -> None:
        """Connect each receive socket whose port has exactly one peer address to it (the kernel then drops every
        other source), and undo that for a port that has several again (a socket takes one association)."""
        tp = self.transport
        for port in range(tp.ports):
            srcs = {(a, p) for k, a, p in allowed if k == port}
            want = next(iter(srcs)) if len(srcs) == 1 and tp.mode == "udp" else None
            if self._connected.get(port) == want:
                continue
            if tp.receive_only(port, want):
                self._connected[port] = want
            elif want is None:
                self._connected.pop(port, None)
        self._counts["sockets_connected"] = sum(a is not None for a in self._connected.values())

    def _ep_token(self) -> bool:
        """Take one endpoint request's token from the bucket (``ep_rate`` a second, at most ``ep_burst``); False
        when there is none."""
        now = trio.current_time()
        last, self._ep_refill = self._ep_refill, now
        if last is not None:
            self._ep_tokens = min(float(self.ep_burst), self._ep_tokens + (now - last) * self.ep_rate)
        if self._ep_tokens < 1:
            return False
        self._ep_tokens -= 1
        return True

    def _admit(self, port: int, pkt, src, charged: bool = False) -> bool:
        """The source check (module docstring): True to hand the packet to the device. `charged`: an endpoint
        request whose token was taken before decoding."""
        c, dev = self._counts, self.device
        qpn = int(pkt["dqpn"])
        if qpn == ENDPOINT_QPN:
            if int(pkt["opcode"]) != ENDPOINT_REQUEST:
                return True
            if not any(isinstance(p, Peer) and p.sent(port, src) for p in dev.peer_addresses()):
                c["ep_unknown_source"] += 1
                return False
            if not charged and not self._ep_token():
                c["ep_rate_limited"] += 1
                return False
            return True
        if qpn not in dev._by_qpn:
            c["rx_unknown_qpn"] += 1
            return False
        bound = dev.peer_address(qpn)
        if isinstance(bound, Peer) and not bound.sent(port, src):
            c["rx_wrong_source"] += 1
            return False
        return True  # a QP with no peer yet: the device decides

    async def _protocol(self) -> None:
        dev, c = self.device, self._counts
        while True:
            deadline = dev.next_deadline()
            items = []
            with trio.move_on_at(trio_time(deadline) if deadline is not None else math.inf) as scope:
                items.append(await self._inbox.receive())
            while len(items) < self.rx_batch:
                try:
                    items.append(self._inbox.receive_nowait())
                except trio.WouldBlock:
                    break
            now = self.now()
            for item in items:
                if item is not _WAKE:
                    pkt, payload, peer = item
                    if self.tracer is not None:
                        self.tracer("rx", now, pkt)
                    dev.receive(pkt, payload, now, src=peer)
                    c["rx_fed"] += 1
            if deadline is not None and (scope.cancelled_caught or now >= deadline):
                now = self._last_now = max(now, deadline)  # never early (aioquic: max(timer_at, loop.time()))
                dev.handle_timer(now)
                c["timers"] += 1
            await self._flush(now)
            allowed = self._peer_sources()
            if allowed != self._allowed:
                self._allowed = allowed
                self._receive_only(allowed)
            c["steps"] += 1
            self._progress.set()
            self._progress = trio.Event()

    async def _flush(self, now: int) -> None:
        dev, c, tp = self.device, self._counts, self.transport
        while True:
            outs = dev.packets_to_send(now, limit=self.tx_batch)
            for out in outs:
                framed = tp.frame(out)
                if framed is None:
                    c["tx_no_route"] += 1
                    continue
                index, data, addr = framed
                if self.tracer is not None:
                    self.tracer("tx", now, out)
                try:
                    await tp.socks[index].sendto(data, addr)
                except OSError:
                    c["tx_errors"] += 1
                    continue
                c["tx_datagrams"] += 1
                c["tx_bytes"] += len(data)
            if len(outs) < self.tx_batch:
                return
            await trio.lowlevel.checkpoint()  # let the readers run between bursts
            now = self.now()


def lone_exception(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member exception groups (else `exc` itself)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


@contextlib.contextmanager
def unwrapped():
    """Re-raise a lone exception from a nursery as itself (as trio-websocket does), so that callers see
    the `MRCError` (or `OSError`) that happened rather than a group around it."""
    try:
        yield
    except BaseExceptionGroup as group:
        lone = lone_exception(group)
        if isinstance(lone, BaseExceptionGroup):
            raise
        raise lone from None


@contextlib.asynccontextmanager
async def open_endpoint(device, transport, **kw):
    """An `Endpoint` serving in a nursery of its own for the duration of the block."""
    ep = Endpoint(device, transport, **kw)
    with unwrapped():
        async with trio.open_nursery() as nursery:
            await nursery.start(ep.serve)
            try:
                yield ep
            finally:
                nursery.cancel_scope.cancel()
