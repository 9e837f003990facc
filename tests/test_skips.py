"""A test skips only for what a machine may lack, never for the project or a dependency it requires.

A skip that hides a broken import keeps the run green while the tests behind it stop running: the
day ``trio`` moved a private module the io tests imported with ``importorskip``, 47 tests would have
skipped quietly. So, in every test module:

- ``pytest.importorskip`` names neither one of the project's packages (``mrc``, ``tests``) nor a
  package of a hard dependency (``[project] dependencies`` of pyproject.toml, e.g. scapy): those are
  imported plainly, so that their absence fails;
- no test imports another package's private module (a dotted name with a part starting with ``_``),
  through ``importorskip`` or a plain import: a release may move it without notice;
- an ``except ImportError`` (or ``ModuleNotFoundError``) that skips guards only optional imports.

Skipping for a missing optional extra (pandas, distributed, pyarrow, selenium), a Debian tool
(tshark, Chromium), root or network namespaces stays allowed: each says its reason.
"""
from __future__ import annotations

import ast
import importlib.metadata as md
import pathlib
import re
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
OWN = {"mrc", "tests"}  # the project's import packages (mrc.fabric, .emulator, .conformance live under mrc)


def _hard_dependencies() -> set[str]:
    """Import names of the packages of ``[project] dependencies`` (a distribution may provide several)."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    dists = {re.split(r"[\s<>=!~\[;]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps}
    names = {top for top, providers in md.packages_distributions().items()
             if any(p.lower().replace("_", "-") in dists for p in providers)}
    missing = {d for d in dists if not any(
        d in {p.lower().replace("_", "-") for p in md.packages_distributions().get(n, [])} for n in names)}
    assert not missing, f"hard dependencies not installed: {sorted(missing)}"
    return names


def _private(name: str) -> bool:
    top = name.split(".")[0]
    return top not in OWN and any(part.startswith("_") for part in name.split(".")) and top != "__future__"


def _skip_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "skip"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "pytest")


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module] + [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    return []


def findings(path: pathlib.Path, hard: set[str], root: pathlib.Path = ROOT) -> list[str]:
    """What is wrong with the skips and imports of one test module, one line each."""
    rel = path.relative_to(root)
    tree = ast.parse(path.read_text(), str(rel))
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "importorskip"
                and node.args):
            arg = node.args[0]
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                out.append(f"{rel}:{node.lineno}: importorskip of a computed name (name the module)")
                continue
            name = arg.value
            top = name.split(".")[0]
            if top in OWN:
                out.append(f"{rel}:{node.lineno}: importorskip({name!r}) skips for the project's own module")
            elif top in hard:
                out.append(f"{rel}:{node.lineno}: importorskip({name!r}) skips for a hard dependency")
            if _private(name):
                out.append(f"{rel}:{node.lineno}: importorskip({name!r}) of another package's private module")
        for name in _imported(node):
            if _private(name):
                out.append(f"{rel}:{node.lineno}: import of another package's private module {name!r}")
        if isinstance(node, ast.Try):
            guards = [h for h in node.handlers if isinstance(h.type, ast.Name)
                      and h.type.id in ("ImportError", "ModuleNotFoundError")]
            if any(_skip_call(n) for h in guards for n in ast.walk(h)):
                for stmt in node.body:
                    for n in ast.walk(stmt):
                        for name in _imported(n):
                            if name.split(".")[0] in OWN | hard:
                                out.append(f"{rel}:{n.lineno}: skips when {name!r} (project or hard dependency) "
                                           "fails to import")
    return out


def test_no_test_skips_for_the_project_a_hard_dependency_or_a_private_module():
    hard = _hard_dependencies()
    assert {"numpy", "numba", "scapy", "trio"} <= hard
    bad = [f for path in sorted(TESTS.rglob("*.py")) for f in findings(path, hard)]
    assert not bad, "\n".join(bad)


def test_the_check_sees_each_kind_of_bad_skip(tmp_path):
    """The scan itself: each forbidden form is reported, the allowed ones are not."""
    src = tmp_path / "tests" / "test_x.py"
    src.parent.mkdir()
    src.write_text(
        "import pytest\n"
        "L = pytest.importorskip('mrc.wire.layers')\n"  # own module
        "raw = pytest.importorskip('scapy.packet').raw\n"  # hard dependency
        "F = pytest.importorskip('trio.testing._fake_net')\n"  # hard dependency, private
        "from somepkg._impl import thing\n"  # private module of another package
        "pd = pytest.importorskip('pandas')\n"  # optional extra: allowed
        "from mrc.core import _jit_helpers\n"  # the project's own private names: allowed
        "try:\n    import numba\nexcept ImportError:\n    pytest.skip('no numba')\n"  # hard dependency
        "try:\n    import selenium\nexcept ImportError:\n    pytest.skip('no selenium')\n"  # optional: allowed
    )
    got = findings(src, {"numpy", "numba", "scapy", "trio"}, root=tmp_path)
    lines = sorted(int(f.split(":")[1]) for f in got)
    assert lines == [2, 3, 4, 4, 5, 9], got
