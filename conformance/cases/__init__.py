"""The case catalogue: every case of every group, in a stable order (wire, requester, responder, NSCC,
controller). `CASES` is the table the runner, the CLI, the docs and the tests read."""
from __future__ import annotations

from ..case import GROUPS
from . import controller, ctlops, nscc, paths, recovery, requester, responder, signals, wimm, wire

# modules hold cases of several groups (`paths`, `signals`: both ends of one mechanism); the table is
# ordered by group, then by module and place in it
CASES = sorted([*wire.CASES, *requester.CASES, *recovery.CASES, *paths.CASES, *signals.CASES, *responder.CASES,
                *wimm.CASES, *nscc.CASES, *controller.CASES, *ctlops.CASES], key=lambda c: GROUPS.index(c.group))
BY_ID = {c.id: c for c in CASES}


def _check() -> None:
    from ..mutants import BY_NAME

    if len(BY_ID) != len(CASES):
        seen: set = set()
        dup = [c.id for c in CASES if c.id in seen or seen.add(c.id)]
        raise ValueError(f"duplicate case ids {dup}")
    for c in CASES:
        unknown = [m for m in c.mutants if m not in BY_NAME]
        if unknown:
            raise ValueError(f"case {c.id} names unknown mutant(s) {unknown}")


_check()
__all__ = ["BY_ID", "CASES"]
