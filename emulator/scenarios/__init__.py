"""The scenario library shipped with the package: ready TOML scenarios and htsim .cm files.

``mrc emu list`` prints them; ``mrc emu run NAME`` (file stem) runs one. The
scenarios of docs/results.md live in ``results/`` (``mrc emu run
results/r1-k16-permutation``). The
``.cm`` files are htsim connection matrices from the UEC htsim repository
(BSD 2-Clause, `LICENSE-uet-htsim.txt` beside them).
"""
from __future__ import annotations

import pathlib

DIR = pathlib.Path(__file__).resolve().parent


def names() -> list[str]:
    """Library names: file stems, and ``results/<stem>`` for the results page's scenarios."""
    return sorted(p.relative_to(DIR).with_suffix("").as_posix() for p in DIR.rglob("*.toml"))


def path(name: str) -> pathlib.Path | None:
    p = DIR / f"{name}.toml"
    return p if p.is_file() else None
