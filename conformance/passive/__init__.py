"""Passive conformance: check a capture of any implementation's MRC traffic (`mrc conformance check`).

A NIC cannot be driven from Python, but its traffic can be captured. This package reads a pcap
or pcapng (raw IP, Ethernet, Linux cooked, the emulator's per-port interfaces, both directions
when the capture has them), rebuilds each QP's conversation and checks every rule a passive
observer can check, each citing its source as the active cases do (docs/conformance.md,
"Checking a capture").

    >>> from mrc.conformance.passive import check_capture
    >>> res = check_capture("capture.pcapng")
    >>> [v.line() for v in res.violations], res.exit_status

Pipeline, one small module each: `reader` (records in batches, compiled block scanners),
`decode` (the project's compiled codec per record, ICRC / UDP checksum / reserved bits),
`observe` (sightings of one packet on several interfaces folded into transmissions), `flows`
(subflows per address pair, merged into QP conversations, PSNs unwrapped, what the capture
shows of each: `View`), `rules` (the rules: pure functions over those rows), `check` (runs them),
`report` (text and JSON), `cli`.
"""
from .check import Options, Result, check_capture, select_rules
from .rules import BY_ID, RULES, Rule, Violation

__all__ = ["BY_ID", "Options", "RULES", "Result", "Rule", "Violation", "check_capture", "select_rules"]
