"""Deliberately broken variants of the reference implementation (see `base` for how they are built)."""
from mrc.errors import UsageError

from .base import Mutant, MutantAdapter, MutantEndpoint, View
from .catalog import BY_NAME, MUTANTS


def mutant_adapter(name: str) -> MutantAdapter:
    if name not in BY_NAME:
        raise UsageError(f"unknown mutant {name!r}; known: {', '.join(sorted(BY_NAME))}")
    return MutantAdapter(BY_NAME[name])


__all__ = ["BY_NAME", "MUTANTS", "Mutant", "MutantAdapter", "MutantEndpoint", "View", "mutant_adapter"]
