"""What a passive rule is: a record (id, level, reference, behaviour, what it needs to see) and a check.

A rule is the passive twin of a conformance case (`mrc.conformance.case.Case`): it names the
behaviour and the source it rests on the same way (``notes §N`` = a section of the project's
MRC notes, which cite the OCP specification, ``mrc.h`` / ``mrc_ctl.h`` and the papers; IBTA;
UET 1.0), and is MUST or SHOULD. Its check is a pure function over decoded rows:

- ``scope="record"``: ``check(ctx) -> [(record number, message)]`` over the records of the capture
  (`check.Context`: every MRC record in `pkt` / `rec`, the malformed RoCEv2 ones in `bad`);
- ``scope="flow"``: ``check(flow, ctx) -> [(row, message)]`` over one `flows.Flow` (its rows are
  transmissions, first sightings), called only when the flow's `flows.View` has what the rule
  ``needs`` ("requester", "responder", "complete"); otherwise the flow is reported as not judged
  by it, with the reason;
- ``scope="endpoints"``: ``check(endpoints, ctx) -> [(row, message)]`` over the endpoint operations (QP 2),
  rows of `flows.Endpoints`.

`Violation` is what the report prints: the record's number in the capture (1-based, as
Wireshark numbers it), the rule and the message.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

MUST, SHOULD = "MUST", "SHOULD"


@dataclasses.dataclass(frozen=True)
class Rule:
    id: str  # "group.name": groups wire, data, ack, nack, ecn, cc, endpoint
    level: str
    ref: str
    behaviour: str
    scope: str  # "record", "flow", "endpoints"
    check: Callable
    needs: frozenset = frozenset()  # View properties a flow must have: "requester", "responder", "complete"

    @property
    def group(self) -> str:
        return self.id.split(".", 1)[0]


@dataclasses.dataclass(frozen=True, order=True)
class Violation:
    index: int  # record number in the capture (1-based)
    rule: str
    message: str
    level: str = MUST
    flow: int | None = None

    def line(self) -> str:
        return f"{self.index}: {self.rule}: {self.message}"


REGISTRY: dict[str, Rule] = {}


def rule(id: str, level: str, ref: str, behaviour: str, scope: str = "flow", needs=()):
    """Decorator: register `fn` as the check of a rule."""
    def wrap(fn):
        if id in REGISTRY:
            raise ValueError(f"two rules named {id}")
        REGISTRY[id] = Rule(id, level, ref, behaviour, scope, fn, frozenset(needs))
        return fn
    return wrap
