"""The case table itself: coverage of every group the issue names, references, mutants, and the generated
catalogue in docs/conformance.md (which must not drift from the cases)."""
from __future__ import annotations

import pathlib
import re

from mrc.conformance.case import GROUPS
from mrc.conformance.cases import CASES
from mrc.conformance.cli import BEGIN, END, markdown

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def test_at_least_forty_cases_in_every_group():
    assert len(CASES) >= 40
    per_group = {g: sum(c.group == g for c in CASES) for g in GROUPS}
    assert all(n >= 5 for n in per_group.values()), per_group


def test_every_case_is_complete():
    for c in CASES:
        assert c.level in ("MUST", "SHOULD") and c.ref and c.behaviour and c.failure and c.network, c.id
        assert re.search(r"notes §\d|UET 1\.0|IBTA|project choice|mrc(_ctl)?\.h:\d|OCP examples/", c.ref), c.id


def test_the_controller_surface_cases():
    """Issue 30: at least 25 controller cases; those through the controller surface cite the header line
    (mrc_ctl.h:N / mrc.h:N) or the OCP example they check, and cover the header's stated behaviours."""
    ctl = [c for c in CASES if c.group == "controller"]
    assert len(ctl) >= 25, len(ctl)
    for c in ctl:
        if "ctl" in c.needs:
            assert re.search(r"mrc(_ctl)?\.h:\d|OCP examples/mrc_", c.ref), c.id
    ids = " ".join(c.id for c in ctl)
    for topic in ("ev-profile-required-attrs", "profile-state-machine", "profile-busy", "explicit-array-unpopulated",
                  "all-copies", "query-ev-array", "partial-success", "fields-op-exclusive", "field-ranges",
                  "min-active-within-count", "no-overrun", "admin-disabled-down", "cc-algorithm", "cc-config-online",
                  "req-tc", "rsp-timeout", "adj-svc-time", "device-query", "bind-at-init", "ev-out-of-range-denied",
                  "replace-ev-online", "ev-named-as-given"):
        assert topic in ids, topic


def test_the_issue_topics_are_covered():
    ids = " ".join(c.id for c in CASES)
    for topic in ("segmentation", "mpr", "planes", "skip-after-ecn", "trimmed-immediate", "lasthop-no-penalty",
                  "silent-loss", "probe-recovery", "rto-backoff", "retry-exhausted", "rtx-flag", "wimm", "sack-cack",
                  "sack-bitmap", "sack-reflects-ev", "sack-m-field", "sack-timestamp", "trim-nack", "duplicate",
                  "oor", "write-refused", "quadrant", "quick-adapt", "ev-field-expansion", "denied", "ev-events",
                  "port-status", "icrc", "ev-encoding", "srv6", "golden", "decoders-agree",
                  # issue 18: both ends of ALWAYS_SKIP, SKIP for one rotation, backups, reverse EVs, NACK reasons,
                  # EV-probe endpoint operations, the receiver penalty
                  "always-skip-retires", "responder.always-skip", "skip-one-rotation", "backup-same-plane",
                  "reverse-ev", "resource-nack", "nack-reason[no-bitmap]", "nack-reason[psn-oor-window]",
                  "nack-reason[unexp-event]", "ev-probe", "receiver-penalty", "rcv-cwnd-pen"):
        assert topic in ids, topic


def test_docs_catalogue_is_generated_from_the_cases():
    text = DOC.read_text()
    section = text[text.index(BEGIN):text.index(END) + len(END)]
    assert section == markdown(CASES), "stale: run `mrc conformance list --update docs/conformance.md`"
