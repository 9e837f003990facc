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

# why a passive observer cannot see a mutant's bug: its packets are well-formed and consistent with each other
_CONFIG = "configuration the wire does not carry"
_LOCAL = "local: completions, events, the QP's state and controller calls are not on the wire"
_EV = ("EV choice is the sender's policy: which EV it picks, skips, retires or returns to shows only in later EV "
       "choices, which no rule can judge without its EV profile and state")
_CC = "the congestion window is not on the wire: how much is in flight follows it, but its size is the sender's"
_TIMING = "timer values are configuration: when a retransmission or probe is due is not on the wire"
_REACTION = ("how the requester reacts to a NACK or a SACK field (retransmit, stop, fail the QP, skip an EV) is "
             "local or policy; its packets stay consistent")
_CTL = ("a controller call's answer (mrc_ctl.h): what the call returns, refuses or sets in a profile is not on the "
        "wire")
_CTL_MUTANTS = ("ev-profile-defaults", "profile-any-transition", "ebusy-not-reported", "bind-ignores-profile-id",
                "all-copies-ignored", "ev-array-truncated", "ev-op-continues-after-error", "both-ops-accepted",
                "ranges-on-explicit", "min-active-unchecked", "unknown-ev-ignored", "ev-named-by-expansion",
                "online-replace-refused", "ev-cq-overruns", "drop-count-zero", "admin-disable-shown-up",
                "cc-unknown-algorithm-accepted", "cc-null-refused", "cc-online-config-refused", "no-rsp-timeout",
                "device-port-mask-up-ports", "ev-count-align-zero")
UNSEEN = {
    "ev-halves-swapped": "EVs swapped on the wire are other valid EVs, reflected consistently; the EV profile is not on "
                         "the wire",
    "srv6-carrier-reversed": "the carrier's uSIDs are not checked against a fabric's address plan (the observer does "
                             "not know the fabric)",
    "wrong-mtu": "segments consistently at a smaller size: the path MTU is " + _CONFIG,
    "ignores-mpr": "in the case that names it the limit is the requester's own MPR, " + _CONFIG + "; the responder "
                   "advertises 8 x 128 PSNs and the mutant stays under that (a requester past the advertised MPR is "
                   "caught: data.mpr-window)",
    "single-plane": "which ports an endpoint may use is " + _CONFIG,
    "sticky-ev": "how many EVs a sender sprays over is its policy: one EV is a legal choice on the wire",
    "ignores-max-wimm": "max_wimm is " + _CONFIG,
    "early-completion": _LOCAL,
    "ignores-ecn": _EV,
    "always-skip-as-skip-once": _EV,
    "resource-nack-fatal": _REACTION,
    "ecn-retires": _EV,
    "skip-two-rotations": _EV,
    "backup-other-plane": _EV,
    "no-backup": _EV,
    "no-bitmap-fatal": _REACTION,
    "oor-nack-ignored": _REACTION,
    "unexp-event-ignored": _REACTION,
    "accepts-oow-nack": _REACTION,
    "trimmed-as-lasthop": _REACTION,
    "penalises-lasthop": _EV,
    "ignores-trimmed": "trim NACKs ignored: the PSN is retransmitted later, on a timeout; " + _TIMING,
    "reuses-retired-ev": _EV,
    "no-probes": _EV + "; " + _TIMING,
    "no-backoff": _TIMING,
    "no-retry-limit": _LOCAL + " (a QP that should have failed keeps retransmitting, consistently)",
    "go-back-n": "retransmits PSNs a SACK acknowledged: spurious retransmissions, counted per flow, not violations "
                 "(the SACK may not have reached the requester yet; a timeout races the SACKs)",
    "sack-bitmap-reversed": "reads the SACK bitmap reversed: its retransmissions of acknowledged PSNs are spurious "
                            "ones, counted, not violations (see go-back-n)",
    "no-increase": _CC,
    "no-md": _CC,
    "md-on-any-ecn": _CC,
    "fair-only": _CC,
    "proportional-only": _CC,
    "md-every-sack": _CC,
    "no-qa-gate": _CC,
    "no-quickadapt": _CC,
    "ignores-rcv-pen": _CC,
    "ignores-cwnd": _CC + " (max_cwnd is " + _CONFIG + ")",
    "no-trim-nack": "a trim NACK that never comes is judged only where the capture runs on after the trimmed packet "
                    "(nack.trim-answered, --answer-us); the cases that name the mutant end a few microseconds after it",
    "never-always-skip": "when a responder answers ALWAYS_SKIP is not public (notes §4): SKIP_ONCE for a marked packet "
                         "is right on the wire",
    "always-skip-first-mark": "when a responder answers ALWAYS_SKIP is not public (notes §4): ALWAYS_SKIP for a marked "
                              "packet is allowed on the wire",
    "spurious-rcv-pen": "rcv_cwnd_pen follows the responder's buffers, which are not on the wire",
    "control-on-forward-ev": "a reverse EV whose value equals the forward EV it reflects is a legal value (EVs are "
                             "per direction); only the responder's EV set could tell",
    "rev-probe-answer-ignored": _EV,
    "dup-not-acked": "whether a duplicate is answered at once is ACK timing (notes §4: coalescing not public); a later "
                     "SACK covers it",
    "dup-replaced": "placement in memory is " + _LOCAL.split(":")[0],
    "oor-silent": "the responder's window when a packet arrives is not on the wire, only the SACKs before and after "
                  "it: a packet that may have been in the window needs no NACK",
    "no-bounds-check": "the registered regions are not on the wire: a write acknowledged may have been in range",
    "no-rkey-check": "the R_Keys a responder registered are not on the wire",
    "no-aeth-nak": _LOCAL + " (the responder's fatal error shows as silence)",
    "in-order-only": "a responder that drops early packets sends SACKs that say less; nothing on the wire contradicts "
                     "them (the packets may have been lost)",
    "probes-ignored": "an unanswered probe is indistinguishable from a lost one (probes test paths that may be broken)",
    "wimm-arrival-order": _LOCAL,
    "auto-post-recv": _LOCAL,
    "ignores-max-wimm-dest": "max_wimm_dest is " + _CONFIG,
    "ev-fields-ignored": "the EV profile's fields are " + _CONFIG,
    "uses-denied-ev": "which EVs the controller denied is " + _LOCAL.split(":")[0],
    "no-ev-events": _LOCAL,
    "ignores-event-mask": _LOCAL,
    "ctl-state-ignored": "the EV states the controller set are " + _LOCAL.split(":")[0],
    "ignores-min-active": _EV,
    "ignores-port-status": "which NIC port a packet goes to is not in its headers when ports share an address (the "
                           "case's), and the port-to-address map is " + _CONFIG,
    "no-port-status-tx": "a local port going down is a local event: whether an update was due is not on the wire",
    "ep-probe-ignored": "an unanswered EV probe is indistinguishable from a lost one",
    "ep-probe-wrong-ev": "which EV the controller asked the probe to take is " + _LOCAL.split(":")[0],
    "ep-rsp-any-id": "how the requester matches answers to its probes is local",
    "ignores-port-down": "a local port going down is a local event",
    **{name: _CTL for name in _CTL_MUTANTS},
    "fills-unpopulated-evs": _CTL + "; the made-up EVs it then uses are other valid EVs (" + _EV + ")",
    "req-tc-ignored": "the traffic class asked of ep_batch_send is the controller's argument: the request is a valid "
                      "control packet in either class",
    "svc-time-ignored": "how the controller uses an endpoint response's svc_time (its RTT sample) is local",
}


@dataclasses.dataclass
class CaseCheck:
    case: str
    outcome: str  # the active case's PASS / FAIL / SKIP / ERROR
    captures: list  # (path, violations of the IUT, all violations)

    @property
    def iut_violations(self) -> list:
        return [v for _, iut, _ in self.captures for v in iut]


# the scenarios' network delay is 2 us: 20 us is long enough to wait for an answer (`Options.answer_us`)
CASE_OPTIONS = Options(answer_us=20.0)


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
