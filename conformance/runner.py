"""Run cases against an adapter: PASS / FAIL / SKIP / ERROR per case, with the reason.

- PASS: the implementation did what the case requires.
- FAIL: it did not (`CaseFailed`); the detail says what was seen.
- SKIP: the adapter lacks a feature the case needs (or raised
  ``NotImplementedError`` for an optional method).
- ERROR: anything else went wrong (the adapter raised, the scenario could not
  progress). An ERROR counts as a failure of the case's level.

`Report.exit_status` is 1 when any MUST case failed or errored, else 0.
"""
from __future__ import annotations

import fnmatch
import time
import traceback
from dataclasses import dataclass, field

from .adapter import Adapter
from .case import MUST, Case, CaseFailed, CaseSkipped, Context
from .scenario import ScenarioError

PASS, FAIL, SKIP, ERROR = "PASS", "FAIL", "SKIP", "ERROR"


@dataclass
class Result:
    case: Case
    outcome: str
    detail: str = ""
    seconds: float = 0.0
    notes: dict = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.outcome in (FAIL, ERROR)

    @property
    def message(self) -> str:
        if self.outcome == PASS:
            return ""
        if self.outcome == SKIP:
            return self.detail
        if self.outcome == ERROR:
            return f"the case could not run to its verdict: {self.detail}"
        return f"{self.case.failure}: {self.detail}" if self.detail else self.case.failure


@dataclass
class Report:
    adapter: str
    results: list
    seconds: float = 0.0

    def counts(self) -> dict:
        out = {PASS: 0, FAIL: 0, SKIP: 0, ERROR: 0}
        for r in self.results:
            out[r.outcome] += 1
        return out

    @property
    def must_failures(self) -> list:
        return [r for r in self.results if r.failed and r.case.level == MUST]

    @property
    def exit_status(self) -> int:
        return 1 if self.must_failures else 0

    def failed_ids(self) -> set:
        return {r.case.id for r in self.results if r.failed}


def select(cases, patterns=None, groups=None) -> list[Case]:
    """Cases whose id matches any glob in `patterns` (a bare word matches as ``*word*``) and whose group is in `groups`."""
    out = []
    for c in cases:
        if groups and c.group not in groups:
            continue
        if patterns and not any(fnmatch.fnmatchcase(c.id, p if any(ch in p for ch in "*?[") else f"*{p}*")
                                for p in patterns):
            continue
        out.append(c)
    return out


def run_case(case: Case, adapter: Adapter, tester: Adapter | None = None) -> Result:
    missing = sorted(case.needs - set(adapter.features))
    if missing:
        return Result(case, SKIP, f"adapter {adapter.name!r} lacks feature(s) {missing}")
    t = Context(case, adapter, tester)
    start = time.perf_counter()
    try:
        case.script(t)
        outcome, detail = PASS, ""
    except CaseFailed as e:
        outcome, detail = FAIL, str(e)
    except CaseSkipped as e:
        outcome, detail = SKIP, str(e)
    except NotImplementedError as e:
        outcome, detail = SKIP, f"adapter {adapter.name!r} does not implement {e}"
    except ScenarioError as e:
        outcome, detail = ERROR, f"scenario: {e}"
    except Exception as e:  # an adapter bug must not stop the suite; report it with where it happened
        tb = traceback.extract_tb(e.__traceback__)[-1]
        outcome, detail = ERROR, f"{type(e).__name__}: {e} (at {tb.filename.rsplit('/', 1)[-1]}:{tb.lineno})"
    finally:
        try:
            t.close()
        except Exception:  # closing is best effort
            pass
    return Result(case, outcome, detail, time.perf_counter() - start, dict(t.notes))


def run_suite(adapter: Adapter, cases, *, tester: Adapter | None = None, progress=None) -> Report:
    start = time.perf_counter()
    results = []
    for c in cases:
        r = run_case(c, adapter, tester)
        results.append(r)
        if progress is not None:
            progress(r)
    return Report(adapter.name, results, time.perf_counter() - start)
