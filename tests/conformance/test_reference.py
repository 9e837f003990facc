"""The reference implementation against the whole suite, one test per case (the pytest integration)."""
from mrc.conformance.pytest_plugin import conformance_test

from .known import KNOWN_REFERENCE_FAILURES

test_reference_conforms = conformance_test("reference", known_failures=KNOWN_REFERENCE_FAILURES)
