"""Cases the reference implementation fails today because of bugs in mrc/core (or mrc/ctl): real findings.

Each reason says what is wrong and where; the reference run marks them strict xfail, so the day the core is
fixed the suite says so. They are not weakened: a conforming implementation must pass them.
"""
KNOWN_REFERENCE_FAILURES: dict[str, str] = {}
