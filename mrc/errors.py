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


class ApiError(UsageError):
    """A call of the OCP-shaped API (`mrc.api`, `mrc.ctl`) failed with the errno ``mrc.h`` /
    ``mrc_ctl.h`` name for the case; the subclass is named after it (`EINVAL`, `ENOENT`, ...).

    ``errno`` is the number (Python's `errno` module), ``name`` its symbol. It stays a
    `UsageError` (and so a ValueError): code that caught those keeps working.
    """

    errno_name = "EIO"

    def __init__(self, message: str, **details):
        super().__init__(f"{message} ({self.errno_name})")
        self.message = message
        for key, value in details.items():  # e.g. E2BIG ``required``, ETIMEDOUT ``responses``, EV_OP ``entry``
            setattr(self, key, value)

    @property
    def errno(self) -> int:
        """The errno value of ``name`` on this platform."""
        import errno as _errno

        return getattr(_errno, self.errno_name)

    @property
    def name(self) -> str:
        """The errno symbol, e.g. "EINVAL"."""
        return self.errno_name


class EINVAL(ApiError):
    """One or more supplied arguments are invalid (the message names which, and its value)."""

    errno_name = "EINVAL"


class ENOENT(ApiError):
    """The EV (or profile, QP, ...) named does not exist."""

    errno_name = "ENOENT"


class EBUSY(ApiError):
    """The object is in use (bound QPs, ONLINE users, unacknowledged events)."""

    errno_name = "EBUSY"


class E2BIG(ApiError):
    """An array is too long for the implementation, or too short for the answer (``required`` holds the
    length needed)."""

    errno_name = "E2BIG"


class ENOMEM(ApiError):
    """No room left in a bounded table (request rows, profiles, EVs)."""

    errno_name = "ENOMEM"


class ENOTSUP(ApiError):
    """The operation or capability is not supported by this implementation."""

    errno_name = "ENOTSUP"


class ETIMEDOUT(ApiError):
    """The deadline passed before every response arrived (``responses`` holds those that did)."""

    errno_name = "ETIMEDOUT"


class EAGAIN(ApiError):
    """Nothing to return now (a non-blocking read found no event); try again later."""

    errno_name = "EAGAIN"


class EPERM(ApiError):
    """The process lacks the permission the operation needs."""

    errno_name = "EPERM"


class EIO(ApiError):
    """An implementation-specific error occurred."""

    errno_name = "EIO"
