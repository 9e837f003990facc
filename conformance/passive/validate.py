"""The passive check against the active suite: does a capture of a broken implementation show its bug?

`check_case(case, adapter, directory)` runs one conformance case (`runner.run_case`) under `tap.recording`,
writes each of its scenarios as a capture and checks it; the violations found at packets an IUT node sent
are the IUT's (crafted peers break rules on purpose; the network's trims and marks are no one's).
`mutant_seen(mutant, directory)` runs the cases that name a mutant against it: the mutant is *seen on the
wire* when one of those captures has a violation of the IUT.

`UNSEEN` lists the mutants whose bug a capture cannot show, each with the reason: what they break lives
in the endpoint (completions, events, controller calls), in timing or configuration the wire does not carry
(how long a timer is, which EVs a profile holds, what the window size is), or in how the endpoint reads
packets that are themselves right. `tests/conformance/test_passive_mutants.py` checks both ways: every
mutant not listed is caught, every one listed is not.
"""
from __future__ import annotations

import dataclasses
import os

from .check import Options, check_capture
from .tap import recording

# mutant -> why a passive observer cannot see it (its packets are well-formed and consistent)
UNSEEN = {
    "no-icrc-check": "accepts packets with a wrong ICRC: what it places or acknowledges is what the crafted "
                     "requester sent, and nothing on the wire says the ICRC check was skipped",
    "ev-halves-swapped": "EVs swapped on the wire are other valid EVs, reflected consistently; the EV profile is not "
                         "on the wire",
    "srv6-carrier-reversed": "the carrier's uSIDs are not checked against a fabric's address plan (the observer "
                             "does not know the fabric)",
    "wrong-mtu": "segments consistently at a smaller size: the path MTU is not on the wire",
    "single-plane": "which ports an endpoint should use is configuration, not on the wire",
    "sticky-ev": "how many EVs a sender sprays over is its policy; one EV is a legal choice on the wire",
    "ignores-max-wimm": "max_wimm is configuration: how many Write-with-Immediate may be outstanding is not on the "
                        "wire",
    "early-completion": "completions are not on the wire",
    "rtx-same-dscp": "the DSCP code points are configuration (the notes give no values); a retransmission in the "
                     "data class is a legal packet",
    "ignores-ecn": "reads SACK m as NONE: only its later EV choices and window differ, which no rule can judge "
                   "without the sender's policy",
    "always-skip-as-skip-once": "how the requester treats ALWAYS_SKIP shows only in its EV choices",
    "resource-nack-fatal": "the QP's error state is local; what follows on the wire is a requester that stops",
}


@dataclasses.dataclass
class CaseCheck:
    case: str
    outcome: str  # the active case's PASS / FAIL / SKIP / ERROR
    captures: list  # (path, violations of the IUT, all violations)

    @property
    def iut_violations(self) -> list:
        return [v for _, iut, _ in self.captures for v in iut]


# the scenarios' network delays are microseconds: 100 us is long enough to wait for an answer (`Options.answer_us`)
CASE_OPTIONS = Options(answer_us=100.0)


def check_case(case, adapter, directory, options: Options = CASE_OPTIONS) -> CaseCheck:
    """Run `case` against `adapter`, capture every scenario, check each capture (see the module docstring)."""
    from ..runner import run_case

    with recording() as rec:
        result = run_case(case, adapter)
    out = []
    for path, tapped, iut in rec.write(directory, stem=case.id.replace("[", "_").replace("]", "")):
        res = check_capture(path, options=options)
        mine = [v for v in res.violations if tapped.sender(v.index) in iut and tapped.way(v.index) == "out"]
        out.append((path, mine, res.violations))
    return CaseCheck(case.id, result.outcome, out)


def mutant_seen(mutant, directory, cases=None) -> list[CaseCheck]:
    """Run the cases that name `mutant` (or `cases`) against it; the checks of their captures."""
    from ..cases import CASES
    from ..mutants.base import MutantAdapter

    adapter = MutantAdapter(mutant)
    chosen = cases if cases is not None else [c for c in CASES if mutant.name in c.mutants]
    out = []
    for c in chosen:
        d = os.path.join(directory, mutant.name)
        os.makedirs(d, exist_ok=True)
        out.append(check_case(c, adapter, d))
    return out
