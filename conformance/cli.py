"""`mrc conformance list | run | mutants | check | peer`."""
from __future__ import annotations

import argparse
import json
import re
import sys

from mrc.cli import subcommands
from mrc.errors import UsageError

BEGIN, END = "<!-- BEGIN GENERATED: mrc conformance list --markdown -->", "<!-- END GENERATED -->"


def register(parser: argparse.ArgumentParser) -> None:
    sub = subcommands(parser)

    ls = sub.add_parser("list", help="list the conformance cases", description="List the cases: id, level, "
                        "group, reference and behaviour (or the Markdown catalogue of docs/conformance.md).")
    _selection(ls)
    ls.add_argument("--markdown", action="store_true", help="print the Markdown catalogue (cases and mutants)")
    ls.add_argument("--json", action="store_true", help="one JSON object per case")
    ls.add_argument("--update", metavar="FILE", help="rewrite the generated catalogue section of FILE "
                    "(docs/conformance.md) in place")
    ls.set_defaults(func=_list)

    run = sub.add_parser("run", help="run the suite against an implementation",
                         description="Run the cases against an adapter and report PASS / FAIL / SKIP per case. "
                         "Exit status 1 when any MUST case fails, 0 otherwise.")
    run.add_argument("--adapter", default="reference",
                     help="reference | mutant:NAME | wire[:ADAPTER] (a peer process over UDP) | wire@HOST:PORT "
                     "(a running peer) | package.module:Class (default reference)")
    run.add_argument("--peer-cmd", help="with --adapter wire: the command that starts your peer process "
                     "(it must print 'MRC-CONFORMANCE-PEER <host> <port>')")
    _selection(run)
    run.add_argument("--report", choices=["text", "json", "junit"], default="text", help="report format (text)")
    run.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE (default: standard output)")
    run.add_argument("--verbose", "-v", action="store_true", help="show the time of passing cases too")
    run.set_defaults(func=_run)

    mut = sub.add_parser("mutants", help="prove every case can fail: run the suite against the mutants",
                         description="Run the cases against every mutant (deliberately broken reference) and check "
                         "that exactly the intended cases fail. Exit status 1 on any mismatch.")
    mut.add_argument("names", nargs="*", help="mutants to run (default: all)")
    mut.add_argument("--full", action="store_true", help="run every (case, mutant) pair, without trace pruning")
    mut.add_argument("--list", action="store_true", help="only list the mutants")
    mut.set_defaults(func=_mutants)

    chk = sub.add_parser("check", help="check a pcap / pcapng capture of MRC traffic against the passive rules",
                         description="Check a capture of any implementation's MRC traffic (pcap or pcapng; raw IP, "
                         "Ethernet, Linux cooked, or the emulator's per-port interfaces) against every rule a passive "
                         "observer can check. One line per violation: the packet's number (1-based, as Wireshark "
                         "numbers it), the rule and a message. Exit status 0 clean, 1 when a MUST rule is violated, 2 "
                         "when the input cannot be used (docs/conformance.md, 'Checking a capture').")
    chk.add_argument("capture", nargs="?", help="the pcap or pcapng file")
    chk.add_argument("--json", action="store_true", help="one JSON document: packets, qps, violations, per-rule counts")
    chk.add_argument("--rules", nargs="+", metavar="PATTERN", help="only these rules (ids or globs; a bare word "
                     "matches any id containing it)")
    chk.add_argument("--list-rules", action="store_true", help="list the rules: id, level, behaviour, reference")
    chk.add_argument("--markdown", action="store_true", help="with --list-rules: the Markdown table of "
                     "docs/conformance.md (rules, and the mutants a capture cannot show)")
    chk.add_argument("--dscp", metavar="CLASS=VALUE,...", help="the network's DSCP code points (data, retx, control, "
                     "trimmed, trimmed_lasthop, no_trim; default the project's: 4, 8, 46, 12, 16, 0)")
    chk.add_argument("--ev-mode", choices=["stev", "udp"], default="stev", help="how plain IPv6 packets carry the "
                     "EV (default stev)")
    chk.add_argument("--same-us", type=float, default=None, metavar="US", help="identical headers seen within this "
                     "long are one packet seen twice (default 250)")
    chk.add_argument("--answer-us", type=float, default=None, metavar="US", help="time a responder has to answer a "
                     "trimmed packet before it is judged (default 1000)")
    chk.add_argument("--verbose", "-v", action="store_true", help="list every flow that is only partly judged")
    chk.set_defaults(func=_check)

    peer = sub.add_parser("peer", help="serve an implementation to the suite over UDP + JSON lines",
                          description="Same as `python -m mrc.conformance.peer`: run an in-process adapter as a "
                          "wire-level peer (docs/conformance.md, 'The wire-level protocol').")
    peer.add_argument("--adapter", default="reference", help="reference, mutant:NAME or module:Class")
    peer.add_argument("--host", default="127.0.0.1")
    peer.add_argument("--port", type=int, default=0)
    peer.add_argument("--once", action="store_true", help="exit after the first control connection ends")
    peer.set_defaults(func=_peer)


def _selection(p) -> None:
    p.add_argument("--cases", nargs="+", metavar="PATTERN",
                   help="case ids or globs (a bare word matches any id containing it)")
    p.add_argument("--group", nargs="+", choices=["wire", "requester", "responder", "nscc", "controller"],
                   help="only these groups")


def _selected(args):
    from .cases import CASES
    from .runner import select

    cases = select(CASES, args.cases, args.group)
    if not cases:
        raise UsageError(f"--cases {args.cases} --group {args.group}: no case matches")
    return cases


def markdown(cases) -> str:
    from .mutants import MUTANTS
    from .report import catalogue_markdown, mutants_markdown

    return (f"{BEGIN}\n\n{len(cases)} cases ({sum(c.level == 'MUST' for c in cases)} MUST, "
            f"{sum(c.level == 'SHOULD' for c in cases)} SHOULD) and {len(MUTANTS)} mutants.\n\n"
            + catalogue_markdown(cases) + "### Mutants\n\n" + mutants_markdown(MUTANTS) + f"\n{END}")


def _list(args) -> int:
    cases = _selected(args)
    if args.update:
        path = args.update
        try:
            text = open(path, encoding="utf-8").read()
        except OSError as e:
            raise UsageError(f"--update {path}: {e.strerror}") from None
        if BEGIN not in text or END not in text:
            raise UsageError(f"--update {path}: no generated section (the lines {BEGIN!r} ... {END!r})")
        new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda m: markdown(cases), text, flags=re.S)
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
        print(f"updated the catalogue of {len(cases)} cases in {path}")
    elif args.markdown:
        print(markdown(cases))
    elif args.json:
        for c in cases:
            print(json.dumps({"id": c.id, "group": c.group, "level": c.level, "ref": c.ref, "behaviour": c.behaviour,
                              "failure": c.failure, "network": c.network, "needs": sorted(c.needs),
                              "mutants": list(c.mutants)}))
    else:
        for c in cases:
            print(f"{c.id:44} {c.level:6} {c.behaviour}")
        print(f"{len(cases)} case(s)")
    return 0


def _run(args) -> int:
    import shlex

    from .adapters import load_adapter
    from .report import FORMATS, MARK
    from .runner import run_suite

    cases = _selected(args)
    peer = shlex.split(args.peer_cmd) if args.peer_cmd else None
    if peer and not args.adapter.startswith("wire"):
        raise UsageError("--peer-cmd goes with --adapter wire")
    adapter = load_adapter(args.adapter, peer_command=peer)
    stream = args.output is None and args.report == "text"

    def progress(r):
        print(f"{MARK[r.outcome]} {r.case.level:6} {r.case.id}" + (f"\n      {r.message}" if r.message else ""),
              flush=True)

    try:
        report = run_suite(adapter, cases, progress=progress if stream else None)
    finally:
        adapter.close()
    if stream:
        from .report import summary

        print(summary(report))
    else:
        out = FORMATS[args.report](report, **({"verbose": args.verbose} if args.report == "text" else {}))
        if args.output:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(out)
            print(f"{args.report} report of {len(cases)} case(s) written to {args.output}", file=sys.stderr)
        else:
            sys.stdout.write(out)
    return report.exit_status


def _mutants(args) -> int:
    from .cases import CASES
    from .matrix import mutant_matrix
    from .mutants import BY_NAME, MUTANTS

    unknown = [n for n in args.names if n not in BY_NAME]
    if unknown:
        raise UsageError(f"unknown mutant(s) {unknown}; `mrc conformance mutants --list` lists them")
    chosen = [BY_NAME[n] for n in args.names] or MUTANTS
    if args.list:
        for m in chosen:
            named = [c.id for c in CASES if m.name in c.mutants]
            print(f"{m.name:24} {m.description}\n{'':24} caught by: {', '.join(named)}")
        return 0

    def progress(row):
        flag = "ok  " if row.ok else "BAD "
        print(f"{flag} {row.mutant:24} fails {len(row.failed):2} case(s), {len(row.named)} named; "
              f"ran {row.ran} in {row.seconds:.1f} s", flush=True)
        for cid in sorted(row.missed):
            print(f"       not caught by {cid} (the case names it)")
        for cid in sorted(row.unexpected):
            print(f"       unexpected failure of {cid}: {row.messages.get(cid, '')}")

    m = mutant_matrix(CASES, chosen, full=args.full, progress=progress)
    bad = [r.mutant for r in m.rows if not r.ok]
    print(f"{len(m.rows)} mutant(s) in {m.seconds:.1f} s; reference failures: {sorted(m.reference_failures) or 'none'}; "
          + ("every mutant is caught exactly where intended" if not bad else f"MISMATCH for {bad}"))
    return 1 if bad else 0


def _check(args) -> int:
    from .passive.cli import run

    return run(args)


def _peer(args) -> int:
    from .peer import main

    argv = ["--adapter", args.adapter, "--host", args.host, "--port", str(args.port)] + (["--once"] if args.once else [])
    return main(argv)
