"""The MRC conformance suite: spec-referenced cases, adapters for any implementation, a runner with reports,
and mutants that prove every case can fail (docs/conformance.md).

    >>> from mrc.conformance import CASES, run_suite, load_adapter
    >>> report = run_suite(load_adapter("reference"), CASES)
    >>> report.exit_status

Modules: `adapter` (the interface an implementation provides), `reference` (the project's implementation),
`wire_adapter` / `peer` / `protocol` (out-of-process implementations over UDP + JSON lines), `scenario`
(clock and scripted network), `packets` / `craft` (packets seen and built by the suite), `case` and
`cases` (the catalogue), `runner` / `report`, `mutants` and `matrix` (every case can fail), `cli`.
"""
from .adapter import Adapter, Completion, Endpoint, EndpointConfig, Event, EvFieldDef, EvInfo, Region
from .adapters import load_adapter
from .case import MUST, SHOULD, Case
from .cases import BY_ID, CASES
from .runner import Report, Result, run_case, run_suite, select

__all__ = [
    "Adapter", "BY_ID", "CASES", "Case", "Completion", "Endpoint", "EndpointConfig", "Event", "EvFieldDef", "EvInfo",
    "MUST", "Region", "Report", "Result", "SHOULD", "load_adapter", "run_case", "run_suite", "select",
]
