"""Alias of `mrc.testing.simnet` (its home since the package was regrouped), kept so existing imports work."""
import sys

from mrc.testing import simnet

sys.modules[__name__] = simnet
