"""Mutants: deliberately broken variants of the reference implementation, built without touching it.

A mutant wraps the reference adapter and changes only what crosses its
boundary: the configuration it is created with, the packets it receives
(``rx``) or sends (``tx``), the completions and events it reports, or the
controller calls it obeys. `mrc/core` is never modified: a mutant is the
reference seen through a distorting lens, which is exactly what a buggy
implementation looks like from the network.

Every case names the mutants it must catch; `tests/conformance` runs the
suite against every mutant and checks that exactly those cases fail.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mrc.wire import DecodeError, EvMode
from mrc.wire.codec import decode, encode
from mrc.wire.constants import ROCEV2_UDP_PORT

from ..adapter import Adapter, Endpoint, EndpointConfig
from ..packets import opcode_of
from ..reference import ReferenceAdapter, ReferenceEndpoint

DATA = frozenset(range(0xC6, 0xCC))


@dataclass(frozen=True)
class Mutant:
    """What is broken (``description``, in the words of the bug report) and how it is done."""

    name: str
    description: str
    config: Callable | None = None  # EndpointConfig -> EndpointConfig
    rx: Callable | None = None  # (ep, View) -> None | False (drop); may change view.pkt / view.net
    tx: Callable | None = None  # (ep, View) -> None | False (drop)
    hooks: dict = field(default_factory=dict)  # Endpoint method name -> fn(ep, *args, **kw)
    rx_ops: frozenset | None = None  # opcodes the rx lens looks at (None: every packet)
    tx_ops: frozenset | None = None  # opcodes the tx lens looks at (None: every packet)
    trigger: frozenset = frozenset()  # trace tokens of a reference run under which the bug can show (see matrix)
    requires: frozenset = frozenset()  # trace tokens that must all be present for the bug to show
    collateral: tuple = ()  # other case ids (or globs) that fail too, because they check something it breaks
    side_effects: bool = False  # the lens acts beyond the packet it is shown (memory, receives, completions)

    @property
    def pure_lens(self) -> bool:
        """Only packet lenses that change nothing but the packet: the matrix can dry-run them on a trace."""
        return (self.rx is not None or self.tx is not None) and not self.hooks and self.config is None \
            and not self.side_effects

    def triggers(self) -> frozenset:
        """Trace tokens (`mrc.conformance.matrix`) without which this mutant behaves like the reference."""
        if self.pure_lens:
            return frozenset({("lens", self.name)})
        out = set(self.trigger)
        for way, ops, lens in (("rx", self.rx_ops, self.rx), ("tx", self.tx_ops, self.tx)):
            if lens is not None:
                out |= {(way, "*")} if ops is None else {(way, op) for op in ops}
        return frozenset(out)


class View:
    """A packet decoded for a mutant to look at and change; ``data`` re-encodes it if it was changed."""

    def __init__(self, ep: "MutantEndpoint", data: bytes, port: int, verify: bool = False):
        self.ep, self.port, self.raw = ep, port, data
        self.changed = False
        try:  # received packets are checked as the implementation checks them: it drops what fails
            self.pkt, self.net, self.payload = decode(data, ev_mode=ep.inner.mode, dport=ROCEV2_UDP_PORT,
                                                      dscp=ep.inner.dscp, verify_icrc=verify and ep.inner.verify_icrc,
                                                      verify_udp=verify)
        except DecodeError:
            self.pkt = None

    @property
    def opcode(self) -> int:
        return -1 if self.pkt is None else int(self.pkt["opcode"])

    @property
    def is_data(self) -> bool:
        return self.opcode in DATA

    def set(self, **fields) -> None:
        for k, v in fields.items():
            if int(self.pkt[k]) != int(v):
                self.pkt[k] = v
                self.changed = True

    def __getitem__(self, name):
        return int(self.pkt[name])

    @property
    def data(self) -> bytes:
        if not self.changed:
            return self.raw
        payload = self.payload if int(self.pkt["payload_len"]) else None
        return encode(self.pkt, self.net, payload)


class MutantEndpoint(Endpoint):
    def __init__(self, inner: ReferenceEndpoint, mutant: Mutant):
        self.inner, self.mutant = inner, mutant
        self.qpn, self.address, self.ports = inner.qpn, inner.address, inner.ports
        self.scratch: dict = {}
        self.altered = 0  # packets or calls the mutant changed (the lens was actually used)

    def _hook(self, name, *args, **kw):
        fn = self.mutant.hooks.get(name)
        if fn is None:
            return getattr(self.inner, name)(*args, **kw)
        return fn(self, *args, **kw)

    # -- packets -----------------------------------------------------------------------
    def _filter(self, fn, ops, data: bytes, port: int, verify: bool = False):
        if ops is not None and opcode_of(data) not in ops:
            return port, data
        v = View(self, data, port, verify)
        if v.pkt is None or (ops is not None and v.opcode not in ops):
            return port, data
        verdict = fn(self, v)
        if verdict is False:
            self.altered += 1
            return None
        if v.changed or v.port != port:
            self.altered += 1
        return v.port, v.data

    def receive(self, data, port, now):
        if self.mutant.rx is not None:
            r = self._filter(self.mutant.rx, self.mutant.rx_ops, data, port, verify=True)
            if r is None:
                return
            port, data = r
        self._hook("receive", data, port, now)

    def transmit(self, now):
        out = self._hook("transmit", now)
        if self.mutant.tx is None:
            return out
        kept = []
        for port, data in out:
            r = self._filter(self.mutant.tx, self.mutant.tx_ops, data, port)
            if r is not None:
                kept.append(r)
        return kept

    # -- everything else goes through hooks or straight to the reference ---------------------------
    def connect(self, peer_qpn, peer_address, *, sq_psn, rq_psn, now):
        self.scratch["rq_psn"] = rq_psn
        self.inner.connect(peer_qpn, peer_address, sq_psn=sq_psn, rq_psn=rq_psn, now=now)

    def reg_mr(self, length):
        return self._hook("reg_mr", length)

    def read_mr(self, region):
        return self.inner.read_mr(region)

    def post_write(self, wr_id, data, *, remote_va, rkey, imm, now):
        return self._hook("post_write", wr_id, data, remote_va=remote_va, rkey=rkey, imm=imm, now=now)

    def post_recv(self, wr_id):
        return self._hook("post_recv", wr_id)

    def next_deadline(self):
        return self._hook("next_deadline")

    def handle_timer(self, now):
        self._hook("handle_timer", now)

    def poll(self):
        return self._hook("poll")

    def events(self):
        return self._hook("events")

    def qp_state(self):
        return self.inner.qp_state()

    def ev_table(self):
        return self.inner.ev_table()

    def set_ev_state(self, ev, state, now):
        return self._hook("set_ev_state", ev, state, now)

    def set_port_state(self, port, up, now):
        return self._hook("set_port_state", port, up, now)

    def cc_state(self):
        return self.inner.cc_state()

    def ev_probe(self, req_id, ev, port, now):
        return self._hook("ev_probe", req_id, ev, port, now)

    def ep_responses(self):
        return self._hook("ep_responses")

    def ctl(self, call, args=None, now=0):
        return self._hook("ctl", call, dict(args or {}), now)


class MutantAdapter(Adapter):
    """The reference implementation with one deliberate bug."""

    features = ReferenceAdapter.features

    def __init__(self, mutant: Mutant):
        self.mutant = mutant
        self.name = f"mutant:{mutant.name}"
        self._ref = ReferenceAdapter()

    def create_endpoint(self, cfg: EndpointConfig) -> MutantEndpoint:
        if self.mutant.config is not None:
            cfg = self.mutant.config(cfg)
        return MutantEndpoint(self._ref.create_endpoint(cfg), self.mutant)


def swap_ev(ev: int, mode: EvMode) -> int:
    """The EV with its two wire halves exchanged (STEV: port <-> flow label bits; UDP: the two bytes)."""
    if mode == EvMode.UDP:
        return ((ev & 0xFF) << 8) | (ev >> 8 & 0xFF)
    return ((ev & 0xFFFF) << 16) | (ev >> 16 & 0xFFFF)


def region_of(ep: MutantEndpoint, va: int):
    """(buffer, offset of va in it) of the registered region containing `va`, or None."""
    for mr, buf, off, length in ep.inner._regions.values():
        if mr.addr <= va < mr.addr + mr.length:
            return buf, va - mr.addr
    return None
