"""The passive check of one capture: read, decode, fold sightings, rebuild flows, run the rules.

`check_capture(path, rules=None, options=Options())` returns a `Result`: the violations (one per
offending packet and rule, at the packet's record number), per-rule counts, what each flow lets
be judged, and the capture's packet counts. Reading and decoding stream in batches; the rules then
run over the decoded rows of the whole capture (a flow's feedback may come in later batches and
on other planes), about 300 bytes per MRC record.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import time

import numpy as np

from mrc.errors import UsageError
from mrc.wire.constants import EvMode
from mrc.wire.dscp import DEFAULT_DSCP, DscpTable
from mrc.wire.records import PKT

from . import decode as D
from . import flows as FL
from . import observe as OB
from .reader import Interface, read_batches
from .rules import RULES
from .rules.base import MUST, Rule, Violation

ANSWER_US = 1000.0


@dataclasses.dataclass(frozen=True)
class Options:
    dscp: DscpTable = DEFAULT_DSCP  # the DSCP code points of the capture's network (trimmed classes matter)
    ev_mode: EvMode = EvMode.STEV  # how plain IPv6 packets carry the EV (STEV or UDP)
    same_us: float = OB.SAME_US  # identical headers seen within this long are one packet
    answer_us: float = ANSWER_US  # how long a responder has to answer a trimmed packet before it is judged


@dataclasses.dataclass
class Context:
    """What the rules read: every MRC record (`pkt`, `rec`), the transmissions (`txi`, `tx_pkt`; `of`: per
    record its transmission), the interfaces and addresses, the options, the capture's first and last time."""

    pkt: np.ndarray
    rec: np.ndarray
    txi: np.ndarray
    tx_pkt: np.ndarray
    of: np.ndarray
    interfaces: list
    addresses: D.Addresses
    options: Options
    t0: int
    t_end: int
    bad: np.ndarray  # REC rows of the malformed RoCEv2 records (judged by wire.malformed)
    bad_pkt: np.ndarray  # what the decoder read of them (PKT rows, as far as it got)


@dataclasses.dataclass
class FlowReport:
    flow: FL.Flow
    judged: list
    not_judged: dict  # rule id -> reason
    spurious: int = 0
    retransmissions: int = 0


@dataclasses.dataclass
class Result:
    path: str
    counts: dict
    violations: list
    flows: list  # FlowReport
    rules: list  # Rule
    per_rule: dict  # id -> {"violations", "flows_judged", "flows_not_judged"}
    notes: list
    seconds: float
    interfaces: list
    addresses: D.Addresses

    @property
    def must_violations(self) -> int:
        return sum(1 for v in self.violations if v.level == MUST)

    @property
    def exit_status(self) -> int:
        return 1 if self.must_violations else 0


def select_rules(patterns) -> list[Rule]:
    """Rules by id or glob (a bare word matches any id containing it); `UsageError` on one that matches none."""
    if not patterns:
        return list(RULES)
    out = []
    for pat in patterns:
        glob = pat if any(c in pat for c in "*?[") else f"*{pat}*"
        hit = [r for r in RULES if fnmatch.fnmatchcase(r.id, glob)]
        if not hit:
            raise UsageError(f"--rules {pat}: no rule matches; `mrc conformance check --list-rules` lists them")
        out += [r for r in hit if r not in out]
    return out


def load(path, options: Options = Options()):
    """Read and decode a capture: (Context, counts)."""
    addresses = D.Addresses()
    pk_parts, rec_parts, bad_parts, badp_parts = [], [], [], []
    counts = {"records": 0, "mrc": 0, "roce": 0, "other": 0, "malformed": 0, "short": 0, "link": 0}
    names = {D.ST_MRC: "mrc", D.ST_ROCE: "roce", D.ST_OTHER: "other", D.ST_MALFORMED: "malformed",
             D.ST_SHORT: "short", D.ST_LINK: "link"}
    interfaces: list[Interface] = []
    truncated = ""
    for batch in read_batches(path):
        interfaces = batch.interfaces
        truncated = batch.truncated or truncated
        if not len(batch):
            continue
        pkts, rec = D.decode(batch, addresses, options.dscp, options.ev_mode)
        counts["records"] += len(rec)
        st = rec["status"]
        for code, name in names.items():
            counts[name] += int((st == code).sum())
        keep = st == D.ST_MRC
        pk_parts.append(pkts[keep])
        rec_parts.append(rec[keep])
        bad_parts.append(rec[st == D.ST_MALFORMED])
        badp_parts.append(pkts[st == D.ST_MALFORMED])
    pkt = np.concatenate(pk_parts) if pk_parts else np.zeros(0, PKT)
    rec = np.concatenate(rec_parts) if rec_parts else np.zeros(0, D.REC)
    bad = np.concatenate(bad_parts) if bad_parts else np.zeros(0, D.REC)
    bad_pkt = np.concatenate(badp_parts) if badp_parts else np.zeros(0, PKT)
    roles = np.array([OB.interface_role(i.name, i.description) for i in interfaces] or [OB.ROLE_UNKNOWN], np.uint8)
    txi, of = OB.transmissions(pkt, rec, roles, options.same_us)
    ctx = Context(pkt, rec, txi, pkt[txi["row"]], of, interfaces, addresses, options,
                  int(rec["t"].min()) if len(rec) else 0, int(rec["t"].max()) if len(rec) else 0, bad, bad_pkt)
    counts["transmissions"] = len(txi)
    counts["trimmed_into_headers"] = int(((bad["flags"] & D.F_TRIMMED_CUT) != 0).sum())
    if truncated:
        counts["truncated"] = truncated
    return ctx, counts


def check_capture(path, rules: list[Rule] | None = None, options: Options = Options()) -> Result:
    """Check the capture at `path` against `rules` (default: all; `select_rules` picks by pattern)."""
    wall = time.perf_counter()
    rules = list(RULES) if rules is None else list(rules)
    ctx, counts = load(path, options)
    flows, endpoints, orphans = FL.build(ctx.tx_pkt, ctx.txi)
    violations: list[Violation] = []
    per_rule = {r.id: {"violations": 0, "flows_judged": 0, "flows_not_judged": 0} for r in rules}
    reports = [FlowReport(f, [], {}) for f in flows]
    for r in rules:
        found: list[Violation] = []
        if r.scope == "record":
            for index, msg in r.check(ctx):
                found.append(Violation(int(index), r.id, msg, r.level))
        elif r.scope == "endpoints":
            for row, msg in r.check(endpoints, ctx):
                found.append(Violation(int(endpoints.txi["first"][row]), r.id, msg, r.level))
        else:
            for fr in reports:
                why = _why_not(r, fr.flow.view)
                if why:
                    fr.not_judged[r.id] = why
                    per_rule[r.id]["flows_not_judged"] += 1
                    continue
                fr.judged.append(r.id)
                per_rule[r.id]["flows_judged"] += 1
                for row, msg in r.check(fr.flow, ctx):
                    found.append(Violation(int(fr.flow.txi["first"][row]), r.id, msg, r.level, fr.flow.id))
        per_rule[r.id]["violations"] = len(found)
        violations += found
    from .rules.stats import retransmissions

    for fr in reports:
        fr.retransmissions, fr.spurious = retransmissions(fr.flow)
    violations.sort(key=lambda v: (v.index, v.rule))
    notes = _notes(reports, counts, orphans, ctx)
    counts["flows"] = len(flows)
    counts["endpoint_ops"] = len(endpoints.tx)
    return Result(str(path), counts, violations, reports, rules, per_rule, notes, time.perf_counter() - wall,
                  ctx.interfaces, ctx.addresses)


def _why_not(r: Rule, view: FL.View) -> str:
    if "requester" in r.needs and not view.requester:
        return "only the responder's side of this flow is in the capture"
    if "responder" in r.needs and not view.responder:
        return "only the requester's side of this flow is in the capture"
    if "complete" in r.needs and not view.complete:
        return "; ".join(view.missing())
    return ""


def _notes(reports, counts, orphans, ctx) -> list[str]:
    out = []
    if counts.get("truncated"):
        out.append(f"the capture ends early: {counts['truncated']}")
    if counts["short"]:
        out.append(f"{counts['short']} record(s) cut by the capture's snap length: not judged")
    if len(orphans):
        out.append(f"{len(orphans)} AETH ACK(s) to QPs whose flow is not in the capture: not judged")
    partial = [fr for fr in reports if not fr.flow.view.complete]
    if partial:
        out.append(f"{len(partial)} of {len(reports)} flow(s) only partly in the capture: the rules that need the "
                   "whole conversation are not judged on them (see each flow)")
    mid = [fr for fr in reports if fr.flow.view.mid_start]
    if mid:
        out.append(f"{len(mid)} flow(s) started before the capture: PSNs before the first new one seen are not judged")
    return out
