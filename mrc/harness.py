"""Alias of `mrc.testing.harness` (its home since the package was regrouped), kept so existing imports work."""
import sys

from mrc.testing import harness

sys.modules[__name__] = harness
