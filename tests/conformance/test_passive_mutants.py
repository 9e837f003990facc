"""The passive check against the active suite: every case's traffic, captured, is clean for the reference; a mutant
whose bug shows on the wire is caught from a capture of the cases that name it.

Each case runs through the suite's own machinery (`runner.run_case`) with its scenarios recorded
(`mrc.conformance.passive.tap`): every packet where it leaves a node and where it reaches one. A violation counts
for the implementation under test when the packet was sent by one of its nodes (crafted peers break rules on
purpose). `mrc.conformance.passive.validate.UNSEEN` lists the mutants a capture cannot show, with the reason.
"""
from __future__ import annotations

import pytest

from mrc.conformance.adapters import load_adapter
from mrc.conformance.cases import CASES
from mrc.conformance.mutants import BY_NAME, MUTANTS
from mrc.conformance.passive.validate import UNSEEN, check_case, mutant_seen


def test_unseen_names_real_mutants():
    assert set(UNSEEN) <= set(BY_NAME)


@pytest.mark.slow
def test_the_reference_through_every_case_breaks_no_rule(tmp_path):
    ref = load_adapter("reference")
    bad = {}
    for c in CASES:
        chk = check_case(c, ref, str(tmp_path))
        if chk.iut_violations:
            bad[c.id] = [v.line() for v in chk.iut_violations[:3]]
    assert not bad, bad


# a cross-section for the default run: cases whose traffic has losses, trims, ECN, probes and endpoint operations
REFERENCE_SAMPLE = ["requester.selective-retransmit", "requester.trimmed-immediate-rtx", "responder.sack-reflects-ev",
                    "controller.ev-probe-response", "wire.tseth-on-data", "requester.mpr-limit"]


@pytest.mark.parametrize("case_id", REFERENCE_SAMPLE)
def test_the_reference_breaks_no_rule_in_a_cross_section_of_cases(case_id, tmp_path):
    (c,) = [c for c in CASES if c.id == case_id]
    chk = check_case(c, load_adapter("reference"), str(tmp_path))
    assert chk.captures and not chk.iut_violations, [v.line() for v in chk.iut_violations]


def _seen(name, tmp_path) -> tuple[bool, list]:
    checks = mutant_seen(BY_NAME[name], str(tmp_path))
    found = [f"{c.case}: {v.line()}" for c in checks for v in c.iut_violations]
    return bool(found), found


@pytest.mark.slow
@pytest.mark.parametrize("name", [m.name for m in MUTANTS])
def test_every_mutant_on_the_wire_is_caught_from_its_capture(name, tmp_path):
    seen, found = _seen(name, tmp_path)
    if name in UNSEEN:
        assert not seen, f"{name} is listed as not on the wire ({UNSEEN[name]}) but the check caught it: {found[:3]}"
    else:
        assert seen, f"{name}: no violation in the captures of the cases that name it"


# the default run: one mutant per family of rules, and one that is not on the wire
SAMPLE = ["wrong-icrc", "reserved-bits", "every-packet-only", "reth-va-fixed", "ignores-mpr", "no-rtx-flag",
          "no-ev-echo", "no-ecn-echo", "no-ts-echo", "ep-probe-wrong-id", "early-completion"]


@pytest.mark.parametrize("name", SAMPLE)
def test_a_sample_of_mutants_is_caught_from_its_capture(name, tmp_path):
    seen, found = _seen(name, tmp_path)
    assert seen == (name not in UNSEEN), found[:3]
