"""A scenario: endpoints, a clock set by hand, and a scripted network between them.

Modelled on aioquic's tests (time is set by hand, a loss is a packet not
delivered) and on trio's ``_fake_net`` (every packet is offered to
``route_packet``). The scenario owns the clock: `run` jumps to the next
delivery or endpoint deadline, delivers what is due, fires timers, lets every
endpoint transmit and offers each packet to ``scenario.route(scenario, p)``:

- return ``None`` to deliver it after the base delay;
- or a list of deliveries built with `deliver`, `drop`, `trimmed`, `marked`,
  `duplicated` (each ``(extra delay ps, bytes, note)``).

NIC port p of every endpoint is joined to port p of every other (one plane
per port). A packet is routed by its (inner) IPv6 destination; it is lost
("link down") when the port it uses is down at either end.

Nodes are the IUT's endpoints (made by the adapter under test), the tester's
(made by the reference adapter: the suite's own, unmodified peer) and
*crafted* peers: an address and a QP number with no implementation behind
them, whose packets the case builds by hand (`mrc.conformance.craft`) and
whose inbox collects what is sent to them.
"""
from __future__ import annotations

import heapq
import ipaddress
from dataclasses import dataclass, field

from mrc.units import US

from .adapter import Adapter, Completion, Endpoint, EndpointConfig, Event
from .packets import Dscp, Packet, mark_ce, trim


class ScenarioError(AssertionError):
    """The scenario itself could not go on (an endpoint that never advances, a budget overrun)."""


@dataclass
class Node:
    name: str
    address: bytes
    cfg: EndpointConfig
    ep: Endpoint | None  # None for a crafted peer
    iut: bool
    qpn: int
    link_up: int  # bit p-1: port p is up
    dscp: Dscp | None = None
    inbox: list = field(default_factory=list)  # crafted peers: packets delivered to them
    completions: list = field(default_factory=list)
    events: list = field(default_factory=list)

    def poll(self) -> list[Completion]:
        """Completions gathered so far (polls the endpoint)."""
        if self.ep is not None:
            self.completions.extend(self.ep.poll())
        return self.completions

    def poll_events(self) -> list[Event]:
        if self.ep is not None:
            self.events.extend(self.ep.events())
        return self.events

    def sends(self, kind: str | None = None) -> list[Completion]:
        return [c for c in self.poll() if kind is None or c.kind == kind]


# --- network verdicts (what route() returns) ----------------------------------------------------

def deliver(p: Packet, extra_ps: int = 0) -> list:
    return [(extra_ps, p.data, "delivered")]


def drop(p: Packet) -> list:
    return []


def trimmed(p: Packet, lasthop: bool = False, extra_ps: int = 0) -> list:
    return [(extra_ps, trim(p, lasthop=lasthop), "trimmed at last hop" if lasthop else "trimmed")]


def marked(p: Packet, extra_ps: int = 0) -> list:
    return [(extra_ps, mark_ce(p.data), "CE-marked")]


def duplicated(p: Packet, gap_ps: int = 0) -> list:
    return [(0, p.data, "delivered"), (gap_ps, p.data, "duplicate")]


class Scenario:
    # a callable (scenario, time ps, node name, port, "out" | "in", bytes) told of every packet that leaves or
    # reaches a node: how `mrc.conformance.passive.tap` records a case's traffic as a capture (None: off)
    recorder = None

    def __init__(self, iut: Adapter, tester: Adapter | None = None, *, delay_ps: int = 2 * US,
                 max_packets: int = 6000):
        from .reference import ReferenceAdapter

        self.iut_adapter = iut
        self.tester_adapter = tester or ReferenceAdapter()
        self.delay_ps = delay_ps
        self.max_packets = max_packets
        self.now = 0
        self.nodes: dict[str, Node] = {}
        self._by_addr: dict[bytes, Node] = {}
        self.route = None
        self.log: list[Packet] = []
        self._heap: list = []
        self._seq = 0

    # -- building --------------------------------------------------------------------
    def _address(self) -> bytes:
        return ipaddress.IPv6Address(f"2001:db8:c0f::{len(self.nodes) + 1:x}").packed

    def add(self, name: str, cfg: EndpointConfig | None = None, *, iut: bool = True, **changes) -> Node:
        """An endpoint of the IUT (``iut=True``) or of the tester, with `cfg` (plus `changes`)."""
        cfg = (cfg or EndpointConfig()).replace(**changes)
        if not cfg.address:
            cfg = cfg.replace(address=self._address())
        adapter = self.iut_adapter if iut else self.tester_adapter
        ep = adapter.create_endpoint(cfg)
        node = Node(name, cfg.address, cfg, ep, iut, ep.qpn, (1 << cfg.ports) - 1)
        self._register(node)
        return node

    def crafted(self, name: str, *, qpn: int = 0x4242, ports: int = 2, ev_mode: str = "STEV") -> Node:
        """A peer whose packets the case builds by hand; what is sent to it lands in ``inbox``."""
        cfg = EndpointConfig(address=self._address(), ports=ports, ev_mode=ev_mode)
        node = Node(name, cfg.address, cfg, None, False, qpn, (1 << ports) - 1)
        self._register(node)
        return node

    def _register(self, node: Node) -> None:
        node.dscp = Dscp(node.cfg.dscp)
        if node.name in self.nodes:
            raise ScenarioError(f"two nodes named {node.name!r}")
        self.nodes[node.name] = node
        self._by_addr[node.address] = node

    def connect(self, a: Node, b: Node, *, a_psn: int = 0, b_psn: int = 0) -> None:
        """Connect a's QP and b's QP (a sends from PSN `a_psn`, b from `b_psn`)."""
        if a.ep is not None:
            a.ep.connect(b.qpn, b.address, sq_psn=a_psn, rq_psn=b_psn, now=self.now)
        if b.ep is not None:
            b.ep.connect(a.qpn, a.address, sq_psn=b_psn, rq_psn=a_psn, now=self.now)

    def close(self) -> None:
        for n in self.nodes.values():
            if n.ep is not None:
                n.ep.close()

    # -- the network --------------------------------------------------------------------
    def _packet(self, node: Node, port: int, data: bytes) -> Packet:
        if len(self.log) >= self.max_packets:
            raise ScenarioError(f"more than {self.max_packets} packets by t = {self.now / US:.0f} us: the "
                                f"endpoints are stuck in a loop (probes, retransmissions)")
        p = Packet(data, node.name, port, self.now, node.cfg.ev_mode, node.dscp)
        self.log.append(p)
        self._tap(node.name, port, "out", data)
        return p

    def _tap(self, node: str, port: int, way: str, data: bytes) -> None:
        if Scenario.recorder is not None:
            Scenario.recorder(self, self.now, node, port, way, data)

    def _offer(self, p: Packet) -> None:
        src = self.nodes.get(p.src)
        dst = self._by_addr.get(p.dst_address) if p.error is None else None
        if dst is None:
            p.fate = "unroutable" if p.error is None else f"malformed: {p.error}"
            return
        p.dst = dst.name
        bit = 1 << (p.port - 1)
        if (src is not None and not src.link_up & bit) or not dst.link_up & bit:
            p.fate = "link down"
            return
        verdict = self.route(self, p) if self.route is not None else None
        if verdict is None:
            verdict = deliver(p)
        if not verdict:
            p.fate = "dropped"
            return
        p.fate = verdict[0][2]
        for extra, data, _ in verdict:
            heapq.heappush(self._heap, (self.now + self.delay_ps + extra, self._seq, dst.name, p.port, data, p))
            self._seq += 1

    def pump(self) -> list[Packet]:
        """Every endpoint transmits what it can now; each packet is offered to the network."""
        out = []
        for node in list(self.nodes.values()):
            if node.ep is None:
                continue
            for port, data in node.ep.transmit(self.now):
                p = self._packet(node, port, data)
                out.append(p)
                self._offer(p)
        return out

    def pull(self, node: Node) -> list[Packet]:
        """What `node` transmits now, captured by the case and NOT put on the network."""
        out = []
        for port, data in node.ep.transmit(self.now):
            p = self._packet(node, port, data)
            p.fate = "captured"
            out.append(p)
        return out

    def inject(self, node: Node, data: bytes, port: int = 1, *, src: str = "crafted") -> Packet:
        """Hand `data` to `node` now, on `port` (a crafted packet, or one the case held back)."""
        p = Packet(data, src, port, self.now, node.cfg.ev_mode, node.dscp, dst=node.name)
        p.fate, p.arrived = "delivered", self.now
        self.log.append(p)
        self._tap(node.name, port, "in", data)
        node.ep.receive(data, port, self.now)
        return p

    def set_port(self, node: Node, port: int, up: bool) -> None:
        """The link of `node`'s NIC port goes down or comes back; the endpoint is told (port status)."""
        bit = 1 << (port - 1)
        node.link_up = (node.link_up | bit) if up else (node.link_up & ~bit)
        if node.ep is not None:
            node.ep.set_port_state(port, up, self.now)

    # -- time -------------------------------------------------------------------------------
    def next_time(self) -> int | None:
        times = [self._heap[0][0]] if self._heap else []
        for node in self.nodes.values():
            if node.ep is not None:
                t = node.ep.next_deadline()
                if t is not None:
                    times.append(max(t, self.now))
        return min(times) if times else None

    def advance(self, t: int) -> None:
        """Set the clock to `t` (never backwards): deliver what is due, then fire due timers."""
        self.now = max(self.now, int(t))
        while self._heap and self._heap[0][0] <= self.now:
            _, _, name, port, data, p = heapq.heappop(self._heap)
            node = self.nodes[name]
            if not node.link_up & (1 << (port - 1)):
                p.fate = "link down"
                continue
            p.arrived = self.now
            self._tap(name, port, "in", data)
            if node.ep is None:
                node.inbox.append(Packet(data, p.src, port, self.now, p.ev_mode, p.dscp, dst=name, fate="delivered"))
            else:
                node.ep.receive(data, port, self.now)
        for node in list(self.nodes.values()):
            if node.ep is not None:
                d = node.ep.next_deadline()
                if d is not None and d <= self.now:
                    node.ep.handle_timer(self.now)

    def run(self, until=None, *, max_ps: int, max_steps: int = 50_000) -> bool:
        """Step until ``until()`` holds (True) or the clock would pass `max_ps` / nothing is left (False)."""
        for _ in range(max_steps):
            self.pump()
            if until is not None and until():
                return True
            t = self.next_time()
            if t is None or t > max_ps:
                return until is not None and bool(until())
            self.advance(t)
        raise ScenarioError(f"no end after {max_steps} steps at t = {self.now} ps (an endpoint keeps a timer due now?)")

    def run_for(self, duration_ps: int, until=None) -> bool:
        """Run for `duration_ps` from now (or until ``until()``); the clock ends at the deadline."""
        end = self.now + duration_ps
        done = self.run(until, max_ps=end)
        if not done:
            self.now = max(self.now, end)
            self.pump()
        return done

    # -- what happened ----------------------------------------------------------------------------
    def sent(self, src: str | Node | None = None, kind: str | None = None, since: int = 0) -> list[Packet]:
        name = src.name if isinstance(src, Node) else src
        return [p for p in self.log if p.time >= since and (name is None or p.src == name)
                and (kind is None or p.kind == kind)]

    def data_sent(self, src, since: int = 0) -> list[Packet]:
        return self.sent(src, "data", since)
