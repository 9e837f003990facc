"""What a conformance case is, and the context its script runs in.

A case is data (h11's ``SIMPLE_CASES`` spirit): an id, the behaviour it
checks, the reference it rests on (a section or table of the project's MRC
notes, "UET 1.0", "IBTA", or "project choice"), a level (MUST / SHOULD), the
message printed when it fails, the scripted network it plays, the adapter
features it needs, and the mutants (deliberately broken implementations,
`mrc.conformance.mutants`) it must catch. Its script is a function of a
`Context`: it builds a `Scenario`, drives it, and calls ``t.fail(detail)``
(or ``t.expect``) when the implementation does not do what the case requires.
Parametrised cases share one script and differ by ``params``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

MUST = "MUST"
SHOULD = "SHOULD"
GROUPS = ("wire", "requester", "responder", "nscc", "controller")


class CaseFailed(AssertionError):
    """The implementation did not do what the case requires."""


class CaseSkipped(Exception):
    """The case cannot run against this adapter (a missing optional feature)."""


@dataclass(frozen=True)
class Case:
    id: str
    level: str
    ref: str
    behaviour: str
    failure: str
    network: str
    script: Callable
    mutants: tuple
    needs: frozenset = frozenset()
    params: dict = field(default_factory=dict)

    @property
    def group(self) -> str:
        return self.id.split(".", 1)[0]

    def __post_init__(self):
        if self.level not in (MUST, SHOULD):
            raise ValueError(f"case {self.id}: level {self.level!r} is not MUST or SHOULD")
        if self.group not in GROUPS:
            raise ValueError(f"case {self.id}: group {self.group!r} not in {GROUPS}")
        if not self.mutants:
            raise ValueError(f"case {self.id}: names no mutant (every case must be shown able to fail)")
        if not re.fullmatch(r"[a-z]+\.[a-z0-9-]+(\[[a-z0-9-]+\])?", self.id):
            raise ValueError(f"case id {self.id!r}: group.name-in-kebab-case[variant]")


class Context:
    """Handed to a case's script: the adapters, the parameters, and the way to fail."""

    def __init__(self, case: Case, iut, tester=None):
        self.case = case
        self.iut = iut
        self.tester = tester
        self.params = case.params
        self.notes: dict = {}
        self._scenarios: list = []

    def scenario(self, **kw):
        from .scenario import Scenario

        sc = Scenario(self.iut, self.tester, **kw)
        self._scenarios.append(sc)
        return sc

    def fail(self, detail: str):
        raise CaseFailed(detail)

    def expect(self, cond, detail: str) -> None:
        if not cond:
            raise CaseFailed(detail)

    def note(self, key: str, value) -> None:
        """Record a measured value (shown in the JSON report)."""
        self.notes[key] = value

    def close(self) -> None:
        for sc in self._scenarios:
            sc.close()


def case(id: str, level: str, *, ref: str, behaviour: str, failure: str, network: str, mutants, needs=(),
         registry: list, params: dict | None = None):
    """Decorator: register the function as the script of a case in `registry`."""

    def wrap(fn):
        registry.append(Case(id, level, ref, behaviour, failure, network, fn, tuple(mutants), frozenset(needs),
                             dict(params or {})))
        return fn

    return wrap
