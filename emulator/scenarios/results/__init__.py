"""Scenarios of the results page (docs/results.md); `benchmarks/results.py` runs them."""
