"""Exception types shared by every part of the project.

Bad input never crashes the process: it raises one of these, and the message
names the thing that was wrong (header and field, config key and value, ...).
The `mrc` command prints the message and exits with status 2.
"""


class MRCError(Exception):
    """Base class of every error the project raises on purpose."""


class ConfigError(MRCError, ValueError):
    """A configuration key or value is unknown, missing or impossible.

    `key` is the dotted name of the offending key (e.g. ``topology.k``) and
    `value` the value given, so callers can report them without parsing text.
    """

    def __init__(self, key: str, value, problem: str):
        self.key = key
        self.value = value
        self.problem = problem
        shown = repr(value)
        if len(shown) > 200:  # one line, whatever was given
            shown = f"{shown[:100]}... ({len(shown):,} characters)"
        super().__init__(f"{key} = {shown}: {problem}")


class UsageError(MRCError, ValueError):
    """A library API was called in a way the protocol does not allow (local misuse)."""
