"""`mrc conformance check CAPTURE`: the options into `check.Options`, the result onto standard output."""
from __future__ import annotations

import json
import sys

from mrc.errors import ConfigError, UsageError

from . import check as C
from .report import as_json, text


def _dscp(spec: str | None):
    from mrc.wire.dscp import DscpTable

    if not spec:
        return DscpTable()
    kw = {}
    for item in spec.split(","):
        key, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise UsageError(f"--dscp {spec}: give CLASS=VALUE pairs, e.g. trimmed=12,trimmed_lasthop=16")
        kw[key.strip()] = int(value)
    try:
        return DscpTable.from_dict(kw)
    except ConfigError as exc:
        raise UsageError(f"--dscp: {exc}") from None


def options(args) -> C.Options:
    from mrc.wire.constants import EvMode

    kw = {"dscp": _dscp(args.dscp), "ev_mode": EvMode[args.ev_mode.upper()]}
    for name in ("same_us", "answer_us"):
        v = getattr(args, name)
        if v is not None:
            if not v > 0:
                raise UsageError(f"--{name.replace('_', '-')} {v}: must be a positive number of microseconds")
            kw[name] = float(v)
    return C.Options(**kw)


BEGIN = "<!-- BEGIN GENERATED: mrc conformance check --list-rules --markdown -->"
END = "<!-- END GENERATED: mrc conformance check --list-rules --markdown -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def rules_markdown(rules) -> str:
    """The rule table and the mutants a capture cannot show, as docs/conformance.md carries them."""
    from ..mutants import MUTANTS
    from .validate import UNSEEN

    must = sum(r.level == "MUST" for r in rules)
    out = [BEGIN, "", f"{len(rules)} rules ({must} MUST, {len(rules) - must} SHOULD).", "",
           "| rule | level | behaviour checked | reference | judged on |", "|---|---|---|---|---|"]
    where = {"record": "every packet", "endpoints": "endpoint operations (QP 2)"}
    for r in rules:
        on = where.get(r.scope) or ("flows whose whole conversation is in the capture" if "complete" in r.needs
                                    else "flows with the responder's side" if "responder" in r.needs
                                    else "flows with the requester's side" if "requester" in r.needs else "every flow")
        out.append(f"| `{r.id}` | {r.level} | {_cell(r.behaviour)} | {_cell(r.ref)} | {on} |")
    seen = [m.name for m in MUTANTS if m.name not in UNSEEN]
    out += ["", f"Of the active suite's {len(MUTANTS)} mutants, {len(seen)} show on the wire and the check catches "
            f"each from a capture of the cases that name it: {', '.join(f'`{n}`' for n in seen)}. The other "
            f"{len(UNSEEN)} cannot be seen by a passive observer:", "", "| mutant | why a capture cannot show it |",
            "|---|---|"]
    out += [f"| `{n}` | {_cell(UNSEEN[n])} |" for n in [m.name for m in MUTANTS if m.name in UNSEEN]]
    out += ["", END]
    return "\n".join(out)


def list_rules(rules) -> str:
    lines = []
    for r in rules:
        lines.append(f"{r.id:26} {r.level:6} {r.behaviour}\n{'':33}ref: {r.ref}")
    lines.append(f"{len(rules)} rule(s)")
    return "\n".join(lines) + "\n"


def run(args) -> int:
    rules = C.select_rules(args.rules)
    if args.list_rules:
        sys.stdout.write(rules_markdown(rules) + "\n" if args.markdown else list_rules(rules))
        return 0
    if not args.capture:
        raise UsageError("mrc conformance check: give the capture to check (a pcap or pcapng file)")
    res = C.check_capture(args.capture, rules, options(args))
    if res.counts["mrc"] == 0 and res.counts["malformed"] == 0:
        c = res.counts
        raise UsageError(f"{args.capture}: no MRC packet in the capture ({c['records']} record(s): {c['roce']} other "
                         f"RoCEv2, {c['other']} not RoCEv2, {c['malformed']} malformed, {c['link']} not IP, "
                         f"{c['short']} cut short)")
    if args.json:
        json.dump(as_json(res), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(text(res, verbose=args.verbose))
    return res.exit_status
