"""The scenario library shipped with the package: ready TOML scenarios and htsim .cm files.

``mrc emu list`` prints them; ``mrc emu run NAME`` (file stem) runs one. The
scenarios of docs/results.md live in ``results/`` (``mrc emu run
results/r1-k16-permutation``). The
``.cm`` files are htsim connection matrices from the UEC htsim repository
(BSD 2-Clause, `LICENSE-uet-htsim.txt` beside them).
"""
from __future__ import annotations

import pathlib

from mrc.errors import ConfigError

DIR = pathlib.Path(__file__).resolve().parent


def names() -> list[str]:
    """Library names: file stems, and ``results/<stem>`` for the results page's scenarios."""
    return sorted(p.relative_to(DIR).with_suffix("").as_posix() for p in DIR.rglob("*.toml"))


def path(name: str) -> pathlib.Path | None:
    p = DIR / f"{name}.toml"
    return p if p.is_file() else None


def find_file(name: str, base_dir, key: str) -> pathlib.Path:
    """A file a scenario names (an htsim .cm matrix, a trace): as given if absolute, else next to the scenario
    (`base_dir`), in the current directory, or in this library; `key` names the scenario key in the error."""
    cands = []
    p = pathlib.Path(name)
    if p.is_absolute():
        cands.append(p)
    else:
        if base_dir is not None:
            cands.append(pathlib.Path(base_dir) / p)
        cands.append(pathlib.Path.cwd() / p)
        cands.append(DIR / p.name)
    for c in cands:
        if c.is_file():
            return c
    raise ConfigError(key, name, "no such file (looked next to the scenario, in the current directory and in "
                      "the scenario library)")
