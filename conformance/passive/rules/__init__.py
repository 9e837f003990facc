"""The passive rules, one registry (`base.REGISTRY`), in the order they are listed and reported."""
from __future__ import annotations

from . import data, endpoint, feedback, wire  # noqa: F401  (registers the rules)
from .base import MUST, REGISTRY, SHOULD, Rule, Violation

RULES: list[Rule] = list(REGISTRY.values())
BY_ID = dict(REGISTRY)

__all__ = ["BY_ID", "MUST", "RULES", "Rule", "SHOULD", "Violation"]
