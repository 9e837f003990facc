"""The generated state diagrams match the tables the core runs on."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_state_diagrams_page_is_generated_from_the_current_tables():
    spec = importlib.util.spec_from_file_location("make_state_diagrams", ROOT / "docs" / "make_state_diagrams.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = mod.render()
    assert (ROOT / "docs" / "state-diagrams.md").read_text() == text, "run: python docs/make_state_diagrams.py"
    assert "ASSUMED_BAD --> GOOD: probe answered M=NONE; controller GOOD" in text
    assert "DENIED --> GOOD: controller GOOD" in text and "DENIED --> SKIP" not in text
