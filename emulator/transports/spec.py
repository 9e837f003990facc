"""Transport specs on the command line: ``name`` or ``name:key=value:key=value``.

    >>> parse("roce-ecmp:lossless=false")
    ('roce-ecmp', {'lossless': False})
    >>> split("roce-ecmp:lossless=false,dcqcn=false,mrc:ev_count=[8,16]")
    ['roce-ecmp:lossless=false:dcqcn=false', 'mrc:ev_count=[8,16]']
    >>> apply({"transport": {"name": "roce-ecmp", "mtu": 1024}}, "roce-ecmp:lossless=false")["transport"]
    {'name': 'roce-ecmp', 'mtu': 1024, 'lossless': False}

Values are TOML (``key=1e6``, ``key=false``, ``key="text"``). `apply` keeps the
scenario's own ``[transport]`` keys when the spec names the same transport and
drops them otherwise (another transport's parameters mean nothing to it).
`dirname` is the spec as a directory name.
"""
from __future__ import annotations

import copy
import re

from mrc.emulator.keys import toml_value
from mrc.errors import ConfigError


def parse(spec: str, where: str = "--transports", commas: bool = False) -> tuple[str, dict]:
    """(name, parameters) of a spec; with `commas`, parameters may also be separated by commas
    (``--transport name:k=v,k=v``, where no list of transports is being split)."""
    parts = [p for piece in (_pieces(spec.strip()) if commas else [spec.strip()]) for p in piece.split(":")]
    name = parts[0].strip()
    if not name:
        raise ConfigError(where, spec, "empty transport name")
    params = {}
    for p in parts[1:]:
        if "=" not in p:
            raise ConfigError(where, spec, f"{p!r}: write key=value after the name")
        k, _, v = p.partition("=")
        if not k.strip():
            raise ConfigError(where, spec, f"{p!r}: empty key")
        params[k.strip()] = toml_value(v.strip())
    return name, params


def _pieces(text: str) -> list[str]:
    """`text` cut at the commas outside brackets and quotes (a TOML value such as ``[8, 16]`` stays whole)."""
    out, cur, depth, quote = [], [], 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth <= 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out


def split(specs: str, where: str = "--transports") -> list[str]:
    """The specs of a comma-separated list (at least one). A piece that is ``key=value`` (an ``=`` before any
    ``:``) is one more parameter of the spec before it, so ``--transports`` takes what ``--transport`` takes:
    ``roce-ecmp:lossless=false,dcqcn=false,mrc`` is two specs, ``roce-ecmp:lossless=false:dcqcn=false`` and
    ``mrc``."""
    out: list[str] = []
    for piece in (p.strip() for p in _pieces(specs)):
        if not piece:
            continue
        eq, colon = piece.find("="), piece.find(":")
        if eq >= 0 and (colon < 0 or eq < colon):
            if not out:
                raise ConfigError(where, specs, f"{piece!r}: a parameter before any transport name (write "
                                  "name:key=value,key=value)")
            out[-1] += ":" + piece
        else:
            out.append(piece)
    if not out:
        raise ConfigError(where, specs, "give at least one transport")
    return out


def apply(data: dict, spec: str, where: str = "--transports", commas: bool = False) -> dict:
    """A copy of scenario mapping `data` running transport `spec`."""
    name, params = parse(spec, where, commas)
    d = copy.deepcopy(data)
    given = d.get("transport", {}) if isinstance(d.get("transport"), dict) else {}
    d["transport"] = {**given, **params, "name": name} if given.get("name") == name else {**params, "name": name}
    return d


def dirname(spec: str) -> str:
    """The spec as one path component: ``roce-ecmp:lossless=false`` -> ``roce-ecmp_lossless-false``."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", spec.strip().replace(":", "_").replace("=", "-").replace(",", "_"))
