"""`mrc conformance list | run | mutants` and the reports."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from mrc.cli import main
from mrc.conformance.cases import CASES


def test_list_prints_every_case(capsys):
    assert main(["conformance", "list"]) == 0
    out = capsys.readouterr().out
    assert f"{len(CASES)} case(s)" in out
    assert all(c.id in out for c in CASES)


def test_list_json_and_selection(capsys):
    assert main(["conformance", "list", "--json", "--group", "nscc"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and all(r["group"] == "nscc" and r["mutants"] and r["ref"] for r in rows)


def test_run_text_passes_and_exit_status_zero(capsys):
    assert main(["conformance", "run", "--cases", "responder.sack-*"]) == 0
    out = capsys.readouterr().out
    assert "PASS  MUST   responder.sack-cack" in out and "CONFORMS" in out


def test_run_reports_a_failing_must_case_and_exits_one(capsys):
    assert main(["conformance", "run", "--adapter", "mutant:go-back-n", "--cases", "selective"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  MUST   requester.selective-retransmit" in out
    assert "more than the missing packet was retransmitted: retransmitted PSNs" in out
    assert "DOES NOT CONFORM: 1 MUST case(s) failed" in out


def test_a_failing_should_case_does_not_fail_the_run(capsys):
    assert main(["conformance", "run", "--adapter", "mutant:rtx-same-dscp", "--cases", "rtx-dscp"]) == 0
    assert "FAIL  SHOULD requester.rtx-dscp" in capsys.readouterr().out


def test_json_and_junit_reports(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["conformance", "run", "--adapter", "mutant:no-ev-echo", "--cases", "sack-reflects", "probe-answered",
                 "--report", "json", "-o", str(out)]) == 1
    doc = json.loads(out.read_text())
    assert doc["counts"] == {"PASS": 1, "FAIL": 1, "SKIP": 0, "ERROR": 0} and doc["exit_status"] == 1
    failed = [r for r in doc["results"] if r["outcome"] == "FAIL"][0]
    assert failed["id"] == "responder.sack-reflects-ev" and "entropy 0x0" in failed["message"]
    assert main(["conformance", "run", "--adapter", "mutant:no-ev-echo", "--cases", "sack-reflects", "--report", "junit"]) == 1
    suite = ET.fromstring(capsys.readouterr().out.split("\n", 1)[1])
    assert suite.get("tests") == "1" and suite.get("failures") == "1"
    assert suite.find("testcase/failure").get("type") == "MUST"


def test_skip_when_the_adapter_lacks_a_feature(capsys):
    from mrc.conformance.reference import ReferenceAdapter
    from mrc.conformance.runner import run_suite, select

    class Bare(ReferenceAdapter):
        features = frozenset()

    report = run_suite(Bare(), select(CASES, ["nscc.quadrant*", "controller.ev-events"]))
    assert {r.outcome for r in report.results} == {"SKIP"}
    assert "lacks feature(s) ['cc_query']" in report.results[0].message and report.exit_status == 0


@pytest.mark.parametrize("argv,message", [
    (["conformance", "run", "--adapter", "nosuch"], "--adapter 'nosuch': one of reference"),
    (["conformance", "run", "--adapter", "mutant:nosuch"], "unknown mutant 'nosuch'"),
    (["conformance", "run", "--adapter", "os.path:nothing"], "cannot load nothing from os.path"),
    (["conformance", "run", "--cases", "no-such-case"], "no case matches"),
    (["conformance", "run", "--peer-cmd", "x"], "--peer-cmd goes with --adapter wire"),
    (["conformance", "mutants", "nosuch"], "unknown mutant(s) ['nosuch']"),
])
def test_bad_arguments_are_named(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_mutants_list_and_a_small_matrix(capsys):
    assert main(["conformance", "mutants", "--list", "no-backoff"]) == 0
    assert "caught by: requester.rto-backoff" in capsys.readouterr().out
    assert main(["conformance", "mutants", "no-backoff", "ignores-trimmed"]) == 0
    out = capsys.readouterr().out
    assert "every mutant is caught exactly where intended" in out and "ok   no-backoff" in out
