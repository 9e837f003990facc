"""The import graph of the installed packages, drawn from the source: no cycle, no upward import.

The graph is built with `ast` from every ``.py`` file of the packages `pyproject.toml` installs
(``[tool.setuptools.package-dir]``: ``mrc/`` is ``mrc``, ``fabric/`` is ``mrc.fabric``, and so on).
Every ``import`` and ``from ... import`` statement is an edge, wherever it stands: at the top of a
module, inside a function (a lazy import is still a dependency), under ``try``. Only the imports under
``if TYPE_CHECKING:`` are left out (they never run). ``from package import name`` is an edge to the
submodule ``package.name`` when there is one, else to the package (its ``__init__``). Modules named in
strings (the `mrc` command's ``SUBCOMMANDS``, the EV-policy and transport registries) are plug-ins
looked up by name, not edges.

`LAYERS` is the layering, lowest first; docs/architecture.md ("Layers and imports") describes it. A
module may import modules of its own layer and of the layers below it; an import of a higher layer
fails the test with its file:line, as does every cycle (the smallest one through each strongly
connected group of modules, with the file:line of each of its imports).

Run as a script to print the graph's cycles and upward imports: ``python tests/test_architecture.py``.
"""
from __future__ import annotations

import ast
import pathlib
import sys
import tomllib
from collections import deque

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Lowest first: (name, the modules it holds as package prefixes, what it is). A module belongs to the layer
# with the longest prefix of its name.
LAYERS = (
    ("library", ("mrc",), "wire formats, protocol core, application and controller APIs, real I/O, units"),
    ("fabric", ("mrc.fabric",), "topologies, address plans, routes, ECMP, path -> EVs, namespace fabrics"),
    ("io command", ("mrc.io.cli", "mrc.io.build", "mrc.io.localize"),
     "`mrc io`: the library's real I/O run over a namespace fabric (loads it by prefix, fails its links)"),
    ("emulator", ("mrc.emulator",), "the packet-level fabric emulator: engine, transports, scenarios, results"),
    ("conformance", ("mrc.conformance",), "the conformance suite: cases, adapters (the library's and the emulator's)"),
)


def package_dirs() -> dict[str, pathlib.Path]:
    """Import package -> folder, from pyproject.toml."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        mapping = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    return {pkg: ROOT / folder for pkg, folder in mapping.items()}


def modules() -> dict[str, pathlib.Path]:
    """Module name -> file, for every module of the installed packages (a subpackage of `mrc` that is
    mapped elsewhere belongs to its own mapping)."""
    dirs = package_dirs()
    found: dict[str, pathlib.Path] = {}
    for pkg, folder in dirs.items():
        for f in sorted(folder.rglob("*.py")):
            rel = f.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([pkg, *parts])
            if any(name != p and name.startswith(p + ".") and len(p) > len(pkg) for p in dirs):
                continue  # e.g. a stray mrc/fabric/ folder: the mapping decides
            found[name] = f
    return found


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for n in node.body:
                lines.update(range(n.lineno, (n.end_lineno or n.lineno) + 1))
    return lines


def imports(name: str, path: pathlib.Path, known: set[str]) -> list[tuple[str, int]]:
    """(imported module of `known`, line) for every import statement of one module."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_lines(tree)
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.append((sub if sub in known else mod, node.lineno))
    edges = []
    for target, line in out:
        while target and target not in known:  # `import mrc.x.y` of a non-module: its package
            target = target.rpartition(".")[0]
        if target and target != name:
            edges.append((target, line))
    return edges


def graph() -> tuple[dict[str, pathlib.Path], dict[str, dict[str, int]]]:
    """Modules, and module -> {imported module: first line importing it}."""
    mods = modules()
    known = set(mods)
    g: dict[str, dict[str, int]] = {}
    for name, path in mods.items():
        g[name] = {}
        for target, line in imports(name, path, known):
            g[name].setdefault(target, line)
    return mods, g


def layer(module: str) -> int:
    """Index in `LAYERS` of the layer holding `module` (-1: none)."""
    best, length = -1, -1
    for i, (_, prefixes, _) in enumerate(LAYERS):
        for pkg in prefixes:
            if (module == pkg or module.startswith(pkg + ".")) and len(pkg) > length:
                best, length = i, len(pkg)
    return best


def _where(mods, src: str, dst: str, g) -> str:
    return f"{mods[src].relative_to(ROOT)}:{g[src][dst]} ({src} -> {dst})"


def upward_imports() -> list[str]:
    mods, g = graph()
    return [f"{_where(mods, a, b, g)}: {LAYERS[layer(a)][0]} imports {LAYERS[layer(b)][0]}"
            for a in sorted(g) for b in sorted(g[a]) if layer(b) > layer(a)]


def _components(g: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on, stack, comps = set(), [], []
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        comps.append(sorted(comp))
    return comps


def _shortest_cycle(g, comp: list[str]) -> list[str]:
    """The shortest cycle through the component's first module (breadth-first, inside the component)."""
    inside = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(g[v]):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return [*reversed(path), start]
            if w in inside and w not in prev:
                prev[w] = v
                queue.append(w)
    raise AssertionError("a strongly connected component without a cycle")


def cycles() -> list[str]:
    """One line per group of modules importing each other: the modules, and one cycle through them."""
    mods, g = graph()
    out = []
    for comp in _components(g):
        cyc = _shortest_cycle(g, comp)
        steps = "; ".join(_where(mods, a, b, g) for a, b in zip(cyc, cyc[1:]))
        out.append(f"{len(comp)} modules import each other ({', '.join(comp)}): {steps}")
    return out


def test_every_module_is_in_a_layer():
    mods, _ = graph()
    assert len(mods) > 100  # the walk found the packages
    assert [m for m in mods if layer(m) < 0] == []


def test_no_import_cycles():
    found = cycles()
    assert not found, "import cycles:\n" + "\n".join(found)


def test_no_upward_imports():
    found = upward_imports()
    layers = " < ".join(name for name, _, _ in LAYERS)
    assert not found, f"imports of a higher layer ({layers}):\n" + "\n".join(found)


def test_the_graph_builder_sees_function_level_imports_and_cycles(tmp_path):
    """The builder itself: a lazy import inside a function is an edge, TYPE_CHECKING ones are not, and a
    two-module cycle is found with both lines."""
    a = tmp_path / "a.py"
    b = tmp_path / "b.py"
    a.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.c\n"
                 "def f():\n    from pkg import b\n")
    b.write_text("import pkg.a as a\n")
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c"}
    assert imports("pkg.a", a, known) == [("pkg.b", 5)]
    assert imports("pkg.b", b, known) == [("pkg.a", 1)]
    g = {"pkg": {}, "pkg.a": {"pkg.b": 5}, "pkg.b": {"pkg.a": 1}, "pkg.c": {}}
    assert _components(g) == [["pkg.a", "pkg.b"]]
    assert _shortest_cycle(g, ["pkg.a", "pkg.b"]) == ["pkg.a", "pkg.b", "pkg.a"]


def test_the_layers_are_the_documented_ones():
    """docs/architecture.md ("Layers and imports") has the table: one row per layer, in this order, with its
    modules."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Layers and imports", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| layer")]
    want = [f"| {name} | {', '.join(f'`{p}`' for p in prefixes)} |" for name, prefixes, _ in LAYERS]
    assert [r[: len(w)] for r, w in zip(rows, want)] == want and len(rows) == len(want), \
        "docs/architecture.md, Layers and imports: the table's first two columns must be\n" + "\n".join(want)


if __name__ == "__main__":
    for line in cycles():
        print("CYCLE", line)
    for line in upward_imports():
        print("UPWARD", line)
    sys.exit(0)
