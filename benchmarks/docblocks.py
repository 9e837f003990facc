"""Generated blocks of a docs page: what stands between ``<!-- NAME -->`` and ``<!-- /NAME -->``.

The result scripts (`results.py`: ``table N`` blocks, `ablation.py`: the ``ablation-tables`` block) write their
tables into the pages this way, so a regeneration replaces exactly its own text.
"""
from __future__ import annotations

import pathlib
import re


def fill(page: pathlib.Path, blocks: dict[str, str], option: str = "--doc") -> None:
    """Replace each block NAME of `page` by ``blocks[NAME]``; a block the page lacks is an error naming it."""
    text = page.read_text()
    for name, body in blocks.items():
        pat = re.compile(rf"<!-- {re.escape(name)} -->.*?<!-- /{re.escape(name)} -->", re.S)
        if not pat.search(text):
            raise SystemExit(f"{option} {page}: no '<!-- {name} -->' ... '<!-- /{name} -->' block")
        text = pat.sub(lambda _m, name=name, body=body: f"<!-- {name} -->\n{body}\n<!-- /{name} -->", text)
    page.write_text(text)
