"""The mutant matrix: every case against every mutant, to prove each case can fail and none fails by accident.

For a mutant M the rule is: every case that names M fails; every other case
that fails is either a known failure of the reference or listed in M's
``collateral`` (cases that check, in passing, something M breaks).

Running every pair is the ``full`` matrix. The default matrix skips the pairs
that provably behave like the reference: each case is run once against the
reference through a `TracingAdapter`, which records *trace tokens* (the
opcodes the IUT received and sent, retransmissions, packets it dropped as
damaged, controller calls, events, configuration features). A mutant only
changes what crosses its boundary through lenses gated by opcode, hooks and
configuration changes, and declares the tokens without which none of them
can act (`Mutant.triggers`, `Mutant.requires`). When a case's trace has none
of them, the mutant's run is the reference's run, packet for packet, so its
outcome is the reference's. The full matrix (``--full``, and a slow test)
checks those declarations.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from .adapter import Adapter, Endpoint
from .mutants import MUTANTS, MutantAdapter, MutantEndpoint
from .packets import DATA_OPCODES
from .reference import ReferenceAdapter
from .runner import run_case

DEFAULT_MASK = ("ASSUMED_BAD", "GOOD")


class TracingEndpoint(Endpoint):
    def __init__(self, inner, tokens: set):
        self.inner, self.tokens = inner, tokens
        # one dry-run copy of each pure lens, seeing exactly what the mutant would see up to its first change
        self.lenses = [MutantEndpoint(inner, m) for m in MUTANTS if m.pure_lens]
        self.qpn, self.address, self.ports = inner.qpn, inner.address, inner.ports
        cfg = inner.cfg
        for flag, on in (("ev_fields", bool(cfg.ev_fields)), ("ev_min_active", cfg.ev_min_active > 0),
                         ("event_mask", tuple(cfg.ev_event_mask) != DEFAULT_MASK), ("srv6", cfg.ev_mode == "SRV6")):
            if on:
                tokens.add(("cfg", flag))

    def _op(self, data: bytes, verify: bool):
        from mrc.wire import DecodeError
        from mrc.wire.codec import decode

        try:
            pkt, _, _ = decode(data, ev_mode=self.inner.mode, dport=0, dscp=self.inner.dscp,
                               verify_icrc=verify and self.inner.verify_icrc, verify_udp=verify)
        except DecodeError:
            return None
        return pkt

    def _dry_run(self, way: str, data: bytes, port: int) -> None:
        for shim in self.lenses:
            m = shim.mutant
            fn, ops = (m.rx, m.rx_ops) if way == "rx" else (m.tx, m.tx_ops)
            if fn is None or ("lens", m.name) in self.tokens:
                continue
            before = shim.altered
            shim._filter(fn, ops, data, port, verify=way == "rx")
            if shim.altered != before:
                self.tokens.add(("lens", m.name))

    def receive(self, data, port, now):
        self._dry_run("rx", data, port)
        pkt = self._op(data, True)
        self.tokens.add(("rx", "*"))
        self.tokens.add(("rx", "bad") if pkt is None else ("rx", int(pkt["opcode"])))
        self.inner.receive(data, port, now)

    def transmit(self, now):
        out = self.inner.transmit(now)
        for port, data in out:
            self._dry_run("tx", data, port)
            pkt = self._op(data, False)
            self.tokens.add(("tx", "*"))
            if pkt is not None:
                self.tokens.add(("tx", int(pkt["opcode"])))
                if int(pkt["opcode"]) in DATA_OPCODES and pkt["rtx"]:
                    self.tokens.add(("tx", "rtx"))
        return out

    def _call(self, name, *a, **kw):
        self.tokens.add(("call", name))
        return getattr(self.inner, name)(*a, **kw)

    def connect(self, *a, **kw):
        return self.inner.connect(*a, **kw)

    def reg_mr(self, length):
        return self._call("reg_mr", length)

    def read_mr(self, region):
        return self.inner.read_mr(region)

    def post_write(self, *a, **kw):
        return self._call("post_write", *a, **kw)

    def post_recv(self, wr_id):
        return self._call("post_recv", wr_id)

    def next_deadline(self):
        return self.inner.next_deadline()

    def handle_timer(self, now):
        self.inner.handle_timer(now)

    def poll(self):
        out = self.inner.poll()
        self.tokens.update(("completion", c.kind) for c in out)
        return out

    def events(self):
        out = self.inner.events()
        self.tokens.update(("event", e.kind) for e in out)
        return out

    def qp_state(self):
        return self.inner.qp_state()

    def ev_table(self):
        return self._call("ev_table")

    def set_ev_state(self, *a):
        return self._call("set_ev_state", *a)

    def set_port_state(self, *a):
        return self._call("set_port_state", *a)

    def cc_state(self):
        return self._call("cc_state")

    def ev_probe(self, *a):
        return self._call("ev_probe", *a)

    def ep_responses(self):
        return self.inner.ep_responses()

    def ctl(self, call, args=None, now=0):
        self.tokens.add(("ctl", call))
        return self._call("ctl", call, args, now)


class TracingAdapter(Adapter):
    """The reference, recording the trace tokens of every endpoint it makes into ``tokens``."""

    def __init__(self):
        self.ref = ReferenceAdapter()
        self.name, self.features = "reference", self.ref.features
        self.tokens: set = set()

    def create_endpoint(self, cfg):
        return TracingEndpoint(self.ref.create_endpoint(cfg), self.tokens)


@dataclass
class MutantRow:
    mutant: str
    failed: set
    named: set
    missed: set  # named cases that passed: the mutant is not caught where it should be
    unexpected: set  # failing cases neither named, nor collateral, nor reference failures
    ran: int
    seconds: float
    messages: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.missed and not self.unexpected


@dataclass
class Matrix:
    reference_failures: dict  # case id -> message
    rows: list
    seconds: float

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)


def reference_traces(cases) -> tuple[dict, dict]:
    """Run every case against the reference once: (case id -> Result, case id -> trace tokens)."""
    results, traces = {}, {}
    for c in cases:
        a = TracingAdapter()
        results[c.id] = run_case(c, a)
        traces[c.id] = frozenset(a.tokens)
    return results, traces


def collateral(mutant, case_id: str) -> bool:
    """Whether `case_id` is in the mutant's collateral: "*" (every case), "group.*", or the exact id."""
    return any(g == "*" or g == case_id or (g.endswith(".*") and case_id.startswith(g[:-1]))
               for g in mutant.collateral)


def named_of(mutant, cases) -> set:
    return {c.id for c in cases if mutant.name in c.mutants}


def needs_run(mutant, case, trace: frozenset) -> bool:
    if mutant.name in case.mutants:
        return True
    if mutant.requires and not mutant.requires <= trace:
        return False
    return bool(mutant.triggers() & trace)


def mutant_matrix(cases, mutants=MUTANTS, *, full: bool = False, progress=None, reference=None) -> Matrix:
    start = time.perf_counter()
    results, traces = reference or reference_traces(cases)
    ref_failed = {cid: r.message for cid, r in results.items() if r.failed}
    rows = []
    for m in mutants:
        t0 = time.perf_counter()
        adapter = MutantAdapter(m)
        failed, msgs, ran = set(), {}, 0
        free = {c.id for c in cases if c.id not in named_of(m, cases) and collateral(m, c.id)}  # any outcome
        for c in cases:
            if c.id in free and not full:
                continue
            if full or needs_run(m, c, traces[c.id]):
                r = run_case(c, adapter)
                ran += 1
                if r.failed:
                    failed.add(c.id)
                    msgs[c.id] = r.message
            elif c.id in ref_failed:
                failed.add(c.id)
        named = {c.id for c in cases if m.name in c.mutants}
        allowed = named | set(ref_failed) | {c.id for c in cases if collateral(m, c.id)}
        row = MutantRow(m.name, failed, named, named - failed, failed - allowed, ran, time.perf_counter() - t0, msgs)
        rows.append(row)
        if progress is not None:
            progress(row)
    return Matrix(ref_failed, rows, time.perf_counter() - start)
