"""Reading scenario tables: every value checked, every error naming its dotted key.

A `Table` wraps one TOML table and the dotted name it sits at (``switch``,
``workload[1]``, ``failures[0]``). Each ``int`` / ``num`` / ``bool`` /
``choice`` / ... call takes a key out (with its default); `done` then rejects
any key nobody asked for, listing the known ones. Bad input raises
`mrc.errors.ConfigError` (key, value, problem); nothing is clamped silently. A number whose
reader gives no upper bound gets one from its unit (`default_max`).
"""
from __future__ import annotations

import difflib
import math
import tomllib
from typing import Any, Mapping

from mrc.errors import ConfigError

_MISSING = object()

# The bound of a number whose reader gives none, by the key's unit (its name's suffix), so that compiled code
# never sees a value out of its range: a time converted to the engine's integer picoseconds stays far below
# its "never" (2^62 ps, about 53 days; 10^11 us is 28 hours of simulated time) with room for sums of times;
# byte counts stay below 1 PiB; any other number below 2^53 (exact as a float, far inside int64).
UNIT_MAX = (("_ps", 10**17), ("_ns", 10**14), ("_us", 10**11), ("_ms", 10**8), ("_s", 10**5), ("_bytes", 1 << 50))
NUMBER_MAX = 1 << 53


def default_max(name: str) -> int:
    """The largest value key `name` may take when its reader gives no bound (`UNIT_MAX`, `NUMBER_MAX`)."""
    for suffix, hi in UNIT_MAX:
        if name.endswith(suffix):
            return hi
    return NUMBER_MAX


def toml_value(text: str, key: str = "value"):
    """A value written on the command line (``--set key=VALUE``, ``name:key=VALUE``) read as TOML
    (``1e6``, ``false``, ``"text"``, ``[1, 2]``); text that is not TOML stays a string. Arrays nested too
    deep to read are a `ConfigError` on `key`."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError:
        raise ConfigError(key, text, "arrays nested too deep to read") from None


class Table:
    def __init__(self, data: Any, where: str):
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ConfigError(where, data, "must be a table")
        self.data = dict(data)
        self.where = where
        self.asked: list[str] = []

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def has(self, name: str) -> bool:
        return name in self.data

    def raw(self, name: str, default: Any = _MISSING) -> Any:
        self.asked.append(name)
        if name in self.data:
            return self.data[name]
        if default is _MISSING:
            raise ConfigError(self.key(name), None, "missing" + self._instead(name))
        return default

    def _instead(self, name: str) -> str:
        """For a missing key's message: a key of the table that nobody has read and is spelled close to it
        (``size_byte`` for ``size_bytes``), named as what was probably meant."""
        rest = [k for k in self.data if k not in self.asked and isinstance(k, str)]
        near = difflib.get_close_matches(name, rest, n=1, cutoff=0.8)
        return f"; {self.key(near[0])} is given: did you mean {name}?" if near else ""

    def int(self, name, default=_MISSING, lo=None, hi=None):
        v = self.raw(name, default)
        if v is None and default is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(self.key(name), v, "must be an integer")
        _range(self.key(name), v, lo, default_max(name) if hi is None else hi)
        return v

    def num(self, name, default=_MISSING, lo=None, hi=None, lo_open=False):
        v = self.raw(name, default)
        if v is None and default is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ConfigError(self.key(name), v, "must be a number")
        if lo_open and lo is not None and v <= lo:
            raise ConfigError(self.key(name), v, f"must be > {lo}")
        _range(self.key(name), v, None if lo_open else lo, default_max(name) if hi is None else hi)
        return float(v)

    def bool(self, name, default=_MISSING):
        v = self.raw(name, default)
        if not isinstance(v, bool):
            raise ConfigError(self.key(name), v, "must be true or false")
        return v

    def str(self, name, default=_MISSING):
        v = self.raw(name, default)
        if v is None and default is None:
            return None
        if not isinstance(v, str) or not v:
            raise ConfigError(self.key(name), v, "must be a non-empty string")
        return v

    def choice(self, name, choices, default=_MISSING):
        v = self.raw(name, default)
        if v not in choices:
            raise ConfigError(self.key(name), v, f"must be one of {', '.join(map(str, choices))}")
        return v

    def table(self, name, default=_MISSING) -> "Table":
        return Table(self.raw(name, default), self.key(name))

    def done(self):
        unknown = [k for k in self.data if k not in self.asked]
        if unknown:
            k = unknown[0]
            known = ", ".join(sorted(set(self.asked))) or "(none)"
            raise ConfigError(self.key(k), self.data[k], f"unknown key; known keys here: {known}")


def _range(key, v, lo, hi):
    if lo is not None and v < lo:
        raise ConfigError(key, v, f"must be >= {lo}")
    if hi is not None and v > hi:
        raise ConfigError(key, v, f"must be <= {hi}")


def host_list(value, where: str, n_hosts: int) -> list[int]:
    """A host set: a list of ids, or a range string ``"a-b"`` (inclusive), or a list mixing both."""
    items = value if isinstance(value, list) else [value]
    out: list[int] = []
    for item in items:
        if isinstance(item, bool):
            raise ConfigError(where, value, "hosts are integers or ranges like \"0-63\"")
        if isinstance(item, int):
            out.append(item)
        elif isinstance(item, str) and item.count("-") == 1:
            a, b = item.split("-")
            try:
                lo, hi = int(a), int(b)
            except ValueError:
                raise ConfigError(where, value, f"bad range {item!r}; write \"first-last\"") from None
            if hi < lo:
                raise ConfigError(where, value, f"range {item!r} is empty")
            out.extend(range(lo, hi + 1))
        else:
            raise ConfigError(where, value, "hosts are integers or ranges like \"0-63\"")
    for h in out:
        if not 0 <= h < n_hosts:
            raise ConfigError(where, value, f"host {h} is not in this fabric (hosts 0..{n_hosts - 1})")
    if len(set(out)) != len(out):
        raise ConfigError(where, value, "a host is listed twice")
    return out
