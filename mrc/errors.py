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
        super().__init__(f"{key} = {value!r}: {problem}")


def read_text(path, key: str) -> str:
    """The text of a file the user named (a scenario, a topology, a workload file): UTF-8, as TOML requires. A
    file that cannot be read, or holds a byte that is not UTF-8, is a `ConfigError` naming `key`, the file and
    where the bad byte is."""
    import pathlib

    p = pathlib.Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(key, str(path), f"cannot read it: {exc.strerror or exc}") from None
    except ValueError as exc:  # a name with a NUL byte
        raise ConfigError(key, str(path), f"not a file name: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(key, str(path), f"not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line} "
                          f"(offset {exc.start})") from None


class UsageError(MRCError, ValueError):
    """A library API was called in a way the protocol does not allow (local misuse)."""
