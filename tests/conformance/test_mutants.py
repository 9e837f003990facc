"""Every case can fail: the suite against every mutant catches exactly the intended cases.

For each mutant: every case that names it fails, and every other failing case is a known failure of the
reference or in the mutant's declared collateral. The default run prunes the (case, mutant) pairs that provably
behave like the reference (`mrc.conformance.matrix`); the slow test runs every pair, which also checks the
pruning's trigger declarations.
"""
import pytest

from mrc.conformance.cases import CASES
from mrc.conformance.matrix import mutant_matrix, reference_traces
from mrc.conformance.mutants import MUTANTS

from .known import KNOWN_REFERENCE_FAILURES


@pytest.fixture(scope="module")
def traces():
    return reference_traces(CASES)


def _check(matrix):
    assert set(matrix.reference_failures) == set(KNOWN_REFERENCE_FAILURES)
    bad = {r.mutant: {"not caught by": sorted(r.missed),
                      "unexpected failures": {c: r.messages.get(c, "") for c in sorted(r.unexpected)}}
           for r in matrix.rows if not r.ok}
    assert not bad, bad


def test_every_mutant_is_caught_exactly_where_intended(traces):
    _check(mutant_matrix(CASES, MUTANTS, reference=traces))


@pytest.mark.slow
def test_full_matrix_without_pruning(traces):
    _check(mutant_matrix(CASES, MUTANTS, full=True, reference=traces))


def test_every_mutant_is_named_by_a_case_and_every_case_names_one():
    named = {m for c in CASES for m in c.mutants}
    assert {m.name for m in MUTANTS} - named == set()
    assert all(c.mutants for c in CASES)


def test_the_pruning_traces_see_the_lenses(traces):
    results, toks = traces
    # a pure lens that alters nothing in a case is pruned; one that does is traced
    assert ("lens", "no-ev-echo") in toks["responder.sack-reflects-ev"]
    assert ("lens", "no-ev-echo") not in toks["requester.segmentation"]
    assert ("tx", "rtx") in toks["requester.selective-retransmit"]
    assert ("call", "set_port_state") in toks["controller.port-status-tx"]
