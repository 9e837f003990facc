"""Every compiled function uses the project's one decorator, `mrc._jit.njit`.

Walks the syntax tree of every module in the packages: a direct use of
`numba.njit` / `numba.jit` / `@jit` outside `mrc/_jit.py`, or a jitclass /
structref anywhere, fails the test (see docs/architecture.md, the one-core rule).
"""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
FOLDERS = ["mrc", "fabric", "emulator", "conformance"]
FORBIDDEN = {"jit", "njit", "jitclass", "structref", "generated_jit", "vectorize", "guvectorize", "cfunc"}


def _sources():
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "_jit.py" and path.parent.name == "mrc":
                continue
            yield path


def test_only_the_project_decorator_compiles():
    offenders = []
    for path in _sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("numba"):
                names = {a.name for a in node.names}
                if names & FORBIDDEN:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {sorted(names & FORBIDDEN)}")
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "numba":
                if node.attr in FORBIDDEN:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} uses numba.{node.attr}")
    assert not offenders, "\n".join(offenders)
