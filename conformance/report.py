"""Reports of a conformance run: text (for people), JSON (for tools), JUnit XML (for CI), and the
Markdown case catalogue of docs/conformance.md."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from .case import Case
from .runner import Report

MARK = {"PASS": "PASS ", "FAIL": "FAIL ", "SKIP": "SKIP ", "ERROR": "ERROR"}


def text(report: Report, *, verbose: bool = False) -> str:
    lines = [f"MRC conformance: adapter {report.adapter}, {len(report.results)} case(s)"]
    for r in report.results:
        line = f"{MARK[r.outcome]} {r.case.level:6} {r.case.id}"
        if r.outcome != "PASS":
            line += f"\n      {r.message}"
        elif verbose:
            line += f"  ({r.seconds * 1000:.0f} ms)"
        lines.append(line)
    lines.append(summary(report))
    return "\n".join(lines) + "\n"


def summary(report: Report) -> str:
    n = report.counts()
    must = report.must_failures
    verdict = "CONFORMS (every MUST case passed)" if not must else f"DOES NOT CONFORM: {len(must)} MUST case(s) failed"
    return (f"{n['PASS']} passed, {n['FAIL']} failed, {n['ERROR']} errors, {n['SKIP']} skipped "
            f"in {report.seconds:.1f} s: {verdict}")


def as_json(report: Report) -> str:
    doc = {
        "adapter": report.adapter,
        "counts": report.counts(),
        "exit_status": report.exit_status,
        "seconds": round(report.seconds, 3),
        "results": [
            {"id": r.case.id, "group": r.case.group, "level": r.case.level, "ref": r.case.ref,
             "outcome": r.outcome, "message": r.message, "seconds": round(r.seconds, 4), "notes": r.notes}
            for r in report.results
        ],
    }
    return json.dumps(doc, indent=2, default=str) + "\n"


def junit(report: Report) -> str:
    n = report.counts()
    suite = ET.Element("testsuite", name=f"mrc-conformance[{report.adapter}]", tests=str(len(report.results)),
                       failures=str(n["FAIL"]), errors=str(n["ERROR"]), skipped=str(n["SKIP"]),
                       time=f"{report.seconds:.3f}")
    for r in report.results:
        tc = ET.SubElement(suite, "testcase", classname=f"mrc.conformance.{r.case.group}", name=r.case.id,
                           time=f"{r.seconds:.4f}")
        ET.SubElement(tc, "properties").extend(
            [ET.Element("property", name=k, value=v) for k, v in (("level", r.case.level), ("ref", r.case.ref))])
        if r.outcome == "FAIL":
            ET.SubElement(tc, "failure", message=r.message, type=r.case.level).text = r.case.behaviour
        elif r.outcome == "ERROR":
            ET.SubElement(tc, "error", message=r.message, type=r.case.level)
        elif r.outcome == "SKIP":
            ET.SubElement(tc, "skipped", message=r.message)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


FORMATS = {"text": text, "json": as_json, "junit": junit}


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def catalogue_markdown(cases: list[Case]) -> str:
    """The case table of docs/conformance.md, generated from the cases themselves."""
    out = []
    groups: dict = {}
    for c in cases:
        groups.setdefault(c.group, []).append(c)
    for g, items in groups.items():
        out.append(f"### {g} ({len(items)} cases)\n")
        out.append("| id | level | behaviour checked | reference | network | mutants caught |")
        out.append("|---|---|---|---|---|---|")
        for c in items:
            needs = f" (needs {', '.join(sorted(c.needs))})" if c.needs else ""
            out.append(f"| `{c.id}` | {c.level} | {_md(c.behaviour)}{needs} | {_md(c.ref)} | {_md(c.network)} | "
                       + ", ".join(f"`{m}`" for m in c.mutants) + " |")
        out.append("")
    return "\n".join(out)


def mutants_markdown(mutants) -> str:
    out = ["| mutant | the bug | how it is made |", "|---|---|---|"]
    for m in mutants:
        how = []
        if m.config is not None:
            how.append("configuration")
        if m.rx is not None:
            how.append("received packets")
        if m.tx is not None:
            how.append("sent packets")
        if m.hooks:
            how.append(", ".join(sorted(m.hooks)))
        out.append(f"| `{m.name}` | {_md(m.description)} | {', '.join(how)} |")
    return "\n".join(out) + "\n"
