"""Run the conformance suite from pytest: one test per case, for any adapter.

In a test module of your project::

    from mrc.conformance.pytest_plugin import conformance_test

    test_mrc_conformance = conformance_test("mypkg.nic:NicAdapter")           # module:Class, or a name
    test_mrc_wire = conformance_test("wire", cases="responder.*")            # a peer process over UDP

A case that fails is a failed test (its level and the failure message in the
report), a case the adapter cannot run is skipped, and ``known_failures``
(case id -> reason) become strict xfails, so a fix is noticed at once.
"""
from __future__ import annotations

from .adapters import load_adapter
from .runner import run_case, select


def conformance_test(adapter, *, cases=None, known_failures: dict | None = None, tester=None):
    """A pytest test function parametrised over `cases` (all, a glob, or a list of `Case`) for `adapter`
    (a name for `load_adapter`, or a callable returning an `Adapter`), created once and closed at the end."""
    import pytest

    from .cases import CASES

    if cases is None:
        chosen = list(CASES)
    elif isinstance(cases, str):
        chosen = select(CASES, [cases])
    else:
        chosen = list(cases)
    known = dict(known_failures or {})
    unknown = set(known) - {c.id for c in chosen}
    if unknown:
        raise ValueError(f"known_failures names case(s) not selected: {sorted(unknown)}")
    params = [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=known[c.id])] if c.id in known
                           else []) for c in chosen]
    holder: dict = {}

    @pytest.mark.parametrize("mrc_case", params)
    def test(mrc_case, request):
        a = holder.get("adapter")
        if a is None:
            a = holder["adapter"] = load_adapter(adapter) if isinstance(adapter, str) else adapter()
            request.config.add_cleanup(a.close)
            request.config.add_cleanup(holder.clear)
        r = run_case(mrc_case, a, tester)
        if r.outcome == "SKIP":
            pytest.skip(r.message)
        if r.failed:
            pytest.fail(f"[{mrc_case.level}] {mrc_case.id}: {r.message}", pytrace=False)

    test.__doc__ = f"MRC conformance case (adapter {adapter if isinstance(adapter, str) else 'custom'})"
    return test
