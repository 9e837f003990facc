"""Alias of `mrc.testing.memnet` (its home since the package was regrouped), kept so existing imports work."""
import sys

from mrc.testing import memnet

sys.modules[__name__] = memnet
