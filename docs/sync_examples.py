"""Copy each example into docs/library.md: every ```python block whose first line is
``# examples/NAME.py`` is replaced by that file's current text. Run after editing an example;
tests/examples/test_examples.py fails while the page shows an old copy."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "library.md"
BLOCK = re.compile(r"```python\n# (examples/[\w.]+)\n.*?```", flags=re.S)


def render(page: str) -> str:
    """The page with every example block holding its file's text."""
    return BLOCK.sub(lambda m: f"```python\n# {m.group(1)}\n{(ROOT / m.group(1)).read_text()}```", page)


if __name__ == "__main__":
    PAGE.write_text(render(PAGE.read_text()))
