"""Mutation testing: deliberate bugs put into the code one at a time; the tests must notice each.

    python benchmarks/mutation.py [--jobs N] [--only GLOB ...] [--minutes M] [--sample PCT] [--fresh]
                                  [--check-equivalents] [--list] [--report] [--doc PAGE] [--json FILE]

What it mutates, with which operators, against which tests, is ``[tool.mutation]`` of pyproject.toml;
mutants that cannot be told apart from the code by any test are listed, each with its reason, in the
file it names (``benchmarks/mutation_equivalent.toml``). It prints, per module, the mutants generated,
killed (a test failed, or the run timed out), survived and equivalent, the kill rate
(killed / (generated - equivalent)), and every survivor not listed as equivalent.

How a mutant is made and run:

- The mutation operators are cosmic-ray's (``core/...``: comparison and binary operator replacement,
  number +-1, and/or, True/False, ``not`` added or removed, break/continue, a for loop over nothing,
  an ``except`` that no longer catches), plus one of ours (``mrc/AugAssign_*``: ``+=`` -> ``-=``...,
  which cosmic-ray lacks), applied by cosmic-ray's parso-based mutator (``mutating.mutate_code``).
  Annotations and ``if TYPE_CHECKING:`` blocks are not mutated; nor is a line ending in
  ``# pragma: no mutate``.
  mutmut 3 is not used: it makes no mutant inside a decorated function, and every function of
  `mrc/core`, the codec and the emulator is decorated with ``njit``.
- Which tests: first the group's tests run once, unmutated, under coverage with one context per
  test (`coverage_map`); a mutant then runs only the tests that executed its statement (all the
  group's tests for module-level code), fastest first, stopping at the first failure (``-x``).
  A statement no test executes is a survivor without a run ("not covered").
- Where: ``--jobs`` worker processes, each importing the heavy third-party packages once and
  forking a child per mutant; the child imports the mutated module from memory (an import hook
  serves its source; nothing on disk changes, so other work in the tree is safe) and runs pytest
  in-process. With ``NUMBA_DISABLE_JIT=1`` (the core supports it) no mutant needs a compile; the
  per-mutant timeout is ``factor`` x the selected tests' CPU time in the unmutated run, plus
  ``min-s``, counted in the child's CPU time (a loaded machine does not turn slow runs into
  "kills"), with a wall-clock bound of 5 x that + 120 s for a mutant that waits without computing.
- Resumable: every result is appended to ``STATE/results.jsonl`` as it arrives, keyed by the
  mutated module's text, the operator and the occurrence. A kill stays valid while the killing
  test is unchanged (its function, and its module's helpers, fixtures and imports: `TestDigests`);
  a survivor or a timeout while no test file of its group changed and none of the group's modules
  did. So a re-run after a merge or after new tests runs only what they can have changed;
  ``--fresh`` runs everything. ``--minutes`` bounds a run and ``--sample`` runs a fixed share of
  the mutants (the rest stay pending, reported as such, for the next run); a kill rate is over the
  mutants judged. Mutants listed as equivalent are not run (``--check-equivalents`` runs them).

Run it under ``nice``: ``nice -n 15 python benchmarks/mutation.py --jobs 2``.
"""
from __future__ import annotations

import argparse
import ast
import fnmatch
import hashlib
import importlib.abc
import importlib.util
import json
import os
import pathlib
import re
import select
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parent.parent

KEYS = {"operators", "equivalent", "state", "timeout", "env", "preimport", "jobs", "groups"}
GROUP_KEYS = {"name", "modules", "exclude", "tests", "deselect", "support"}
TIMEOUT_KEYS = {"factor", "min-s"}


class ConfigError(SystemExit):
    def __init__(self, where: str, problem: str):
        super().__init__(f"[tool.mutation] {where}: {problem}")


# --- configuration ---------------------------------------------------------------------------------------

@dataclass
class Group:
    name: str
    modules: list[str]  # paths relative to the root, expanded from the globs
    tests: list[str]  # test paths (files or directories) relative to the root
    deselect: list[str]  # node id prefixes left out (tests that cannot see an in-memory mutant)
    support: list[str]  # other files the group's tests rely on (helpers, reference models)


@dataclass
class Config:
    root: pathlib.Path
    operators: list[str]
    equivalent: pathlib.Path
    state: pathlib.Path
    factor: float
    min_s: float
    env: dict[str, str]
    preimport: list[str]
    jobs: int
    groups: list[Group]
    package_dirs: dict[str, str] = field(default_factory=dict)  # import package -> folder


def _strings(value, where: str, empty_ok: bool = False) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value) or not (value or empty_ok):
        raise ConfigError(where, f"must be a list of non-empty strings, not {value!r}")
    return value


def load_config(root: pathlib.Path = ROOT) -> Config:
    """``[tool.mutation]`` of ``root/pyproject.toml``, every key checked (errors name the key)."""
    data = tomllib.loads((root / "pyproject.toml").read_text())
    cfg = data.get("tool", {}).get("mutation")
    if not isinstance(cfg, dict):
        raise ConfigError("table", "missing from pyproject.toml")
    unknown = set(cfg) - KEYS
    if unknown:
        raise ConfigError(sorted(unknown)[0], f"unknown key; known: {', '.join(sorted(KEYS))}")
    ops = _strings(cfg.get("operators"), "operators")
    for op in ops:
        resolve_operator(op)  # raises naming it
    timeout = cfg.get("timeout", {})
    if not isinstance(timeout, dict) or set(timeout) - TIMEOUT_KEYS:
        raise ConfigError("timeout", f"must be a table with keys {sorted(TIMEOUT_KEYS)}")
    factor, min_s = timeout.get("factor", 3.0), timeout.get("min-s", 10.0)
    for k, v in (("timeout.factor", factor), ("timeout.min-s", min_s)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise ConfigError(k, f"must be a positive number, not {v!r}")
    env = cfg.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ConfigError("env", "must be a table of strings")
    jobs = cfg.get("jobs", 0)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0:
        raise ConfigError("jobs", f"must be an integer >= 0 (0: one per core), not {jobs!r}")
    package_dirs = {"": ""}
    package_dirs.update(data.get("tool", {}).get("setuptools", {}).get("package-dir", {}))
    groups = []
    raw_groups = cfg.get("groups")
    if not isinstance(raw_groups, list) or not raw_groups:
        raise ConfigError("groups", "must be a non-empty array of tables ([[tool.mutation.groups]])")
    for n, g in enumerate(raw_groups):
        where = f"groups[{n}]"
        if not isinstance(g, dict) or set(g) - GROUP_KEYS:
            raise ConfigError(where, f"must be a table with keys {sorted(GROUP_KEYS)}")
        name = g.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9-]+", name):
            raise ConfigError(f"{where}.name", f"must be a short lower-case name, not {name!r}")
        modules = []
        for pat in _strings(g.get("modules"), f"{where}.modules"):
            found = sorted(p.relative_to(root).as_posix() for p in root.glob(pat) if p.is_file())
            if not found:
                raise ConfigError(f"{where}.modules", f"{pat!r} matches no file")
            modules += [m for m in found if m not in modules]
        exclude = _strings(g.get("exclude", []), f"{where}.exclude", empty_ok=True)
        modules = [m for m in modules if not any(fnmatch.fnmatch(m, x) for x in exclude)]
        tests = _strings(g.get("tests"), f"{where}.tests")
        support = _strings(g.get("support", []), f"{where}.support", empty_ok=True)
        deselect = _strings(g.get("deselect", []), f"{where}.deselect", empty_ok=True)
        for p in tests + support + deselect:
            if not (root / p.split("::")[0]).exists():
                raise ConfigError(where, f"{p!r} does not exist")
        groups.append(Group(name, modules, tests, deselect, support))
    eq = root / cfg.get("equivalent", "benchmarks/mutation_equivalent.toml")
    return Config(root=root, operators=ops, equivalent=eq, state=root / cfg.get("state", ".mutation"),
                  factor=float(factor), min_s=float(min_s), env=dict(env),
                  preimport=_strings(cfg.get("preimport", []), "preimport", empty_ok=True), jobs=jobs or os.cpu_count() or 1,
                  groups=groups, package_dirs=package_dirs)


def module_name(cfg: Config, rel: str) -> str:
    """The import name of the module at `rel`, through setuptools' package-dir mapping."""
    path = pathlib.PurePosixPath(rel)
    parts = list(path.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    best = ("", "")
    for pkg, folder in cfg.package_dirs.items():
        fparts = [p for p in folder.split("/") if p]
        if parts[: len(fparts)] == fparts and len(fparts) >= len([p for p in best[1].split("/") if p]):
            best = (pkg, folder)
    pkg, folder = best
    rest = parts[len([p for p in folder.split("/") if p]):]
    return ".".join(([pkg] if pkg else []) + rest)


# --- operators ---------------------------------------------------------------------------------------------

AUG = {"Add": "+=", "Sub": "-=", "Mul": "*=", "FloorDiv": "//=", "BitOr": "|=", "BitAnd": "&=", "LShift": "<<=",
       "RShift": ">>="}


def _aug_operator(src: str, dst: str):
    from cosmic_ray.operators.operator import Example, Operator

    class AugAssign(Operator):
        """``x <src>= y`` becomes ``x <dst>= y`` (cosmic-ray mutates binary operators only)."""

        def mutation_positions(self, node):
            if node.type == "operator" and node.value == AUG[src] and node.parent.type == "expr_stmt":
                yield node.start_pos, node.end_pos

        def mutate(self, node, index):
            node.value = AUG[dst]
            return node

        @classmethod
        def examples(cls):
            return (Example(f"x {AUG[src]} 1", f"x {AUG[dst]} 1"),)

    AugAssign.__name__ = f"AugAssign_{src}_{dst}"
    return AugAssign


def _number_plus_one():
    from cosmic_ray.operators.number_replacer import NumberReplacer

    class NumberPlusOne(NumberReplacer):
        """A number n becomes n + 1 (cosmic-ray's NumberReplacer also makes n - 1: twice the mutants, for
        little more: a test that sees one side of a constant mostly sees the other)."""

        def mutation_positions(self, node):
            for pos in super().mutation_positions(node):
                yield pos
                return

    return NumberPlusOne


_OPS: dict[str, object] = {}


def resolve_operator(name: str):
    """An operator instance by name: ``core/<cosmic-ray operator>``, ``mrc/AugAssign_<From>_<To>`` or
    ``mrc/NumberPlusOne``."""
    if name not in _OPS:
        provider, _, op = name.partition("/")
        if name == "mrc/NumberPlusOne":
            _OPS[name] = _number_plus_one()()
        elif provider == "mrc":
            m = re.fullmatch(r"AugAssign_(\w+?)_(\w+)", op)
            if not m or m[1] not in AUG or m[2] not in AUG or m[1] == m[2]:
                raise ConfigError("operators", f"unknown operator {name!r}")
            _OPS[name] = _aug_operator(m[1], m[2])()
        elif provider == "core":
            from cosmic_ray.operators.provider import OperatorProvider

            try:
                cls = OperatorProvider()[op]
            except KeyError:
                raise ConfigError("operators", f"unknown operator {name!r} (cosmic-ray has no {op!r})") from None
            if cls.arguments():
                raise ConfigError("operators", f"{name!r} takes arguments; not supported")
            _OPS[name] = cls()
        else:
            raise ConfigError("operators", f"unknown operator {name!r}: 'core/...' (cosmic-ray) or 'mrc/...'")
    return _OPS[name]


# --- mutants ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mutant:
    module: str  # path relative to the root
    operator: str
    occurrence: int  # the operator's n-th position in the module, as cosmic-ray counts them
    line: int  # first line of the mutated text
    end_line: int
    col: int
    function: str  # enclosing def / class (qualified), "" at module level

    @property
    def ident(self) -> str:
        return f"{self.module}:{self.operator}:{self.occurrence}"


def _skipped_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions (line, col) that are not mutated: annotations, ``if TYPE_CHECKING:`` blocks."""
    spans = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        anns = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            anns += [x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x]
            anns.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            anns.append(node.annotation)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            anns.append(node)
        for x in anns:
            if x is not None:
                spans.append(((x.lineno, x.col_offset), (x.end_lineno, x.end_col_offset)))
    return spans


def _qualname(node) -> str:
    import parso.python.tree as pt

    names = []
    while node is not None:
        if isinstance(node, (pt.Function, pt.Class)) and not isinstance(node, pt.Lambda):
            names.append(node.name.value)
        node = node.parent
    return ".".join(reversed(names))


def mutants_of(cfg: Config, rel: str, operators: list[str] | None = None) -> list[Mutant]:
    """Every mutant of the module at `rel`, in a fixed order (operator, then position)."""
    from cosmic_ray.ast import ast_nodes, get_ast

    source = (cfg.root / rel).read_text()
    tree = get_ast(source)
    skipped = _skipped_spans(source)
    lines = source.splitlines()
    out = []
    for opname in operators or cfg.operators:
        op = resolve_operator(opname)
        occurrence = 0
        for node in ast_nodes(tree):
            for start, end in op.mutation_positions(node):
                n = occurrence
                occurrence += 1
                if any(a <= start < b for a, b in skipped):
                    continue
                if lines[start[0] - 1].rstrip().endswith("# pragma: no mutate"):
                    continue
                out.append(Mutant(rel, opname, n, start[0], end[0], start[1], _qualname(node)))
    return out


def mutated_source(cfg: Config, m: Mutant, source: str | None = None) -> str:
    from cosmic_ray.mutating import mutate_code

    if source is None:
        source = (cfg.root / m.module).read_text()
    code = mutate_code(source, resolve_operator(m.operator), m.occurrence)
    if code is None:
        raise RuntimeError(f"{m.ident}: no such mutation")
    return code


def changed_lines(original: str, mutated: str) -> tuple[str, str]:
    """The first differing line of each text (stripped): how a person recognises the mutant."""
    a, b = original.splitlines(), mutated.splitlines()
    for x, y in zip(a, b):
        if x != y:
            return x.strip(), y.strip()
    return "", ""


# --- equivalent mutants -----------------------------------------------------------------------------------

EQ_KEYS = {"module", "function", "line", "mutated", "operator", "reason"}


def load_equivalents(cfg: Config) -> list[dict]:
    """The listed equivalent mutants: each names module, function, the original and mutated line, and why."""
    if not cfg.equivalent.exists():
        return []
    data = tomllib.loads(cfg.equivalent.read_text())
    if set(data) - {"equivalent"}:
        raise SystemExit(f"{cfg.equivalent.name}: only [[equivalent]] tables, not {sorted(set(data) - {'equivalent'})}")
    out = []
    for n, e in enumerate(data.get("equivalent", [])):
        missing = EQ_KEYS - set(e)
        if missing or set(e) - EQ_KEYS:
            raise SystemExit(f"{cfg.equivalent.name}: equivalent[{n}]: keys must be {sorted(EQ_KEYS)} "
                             f"(missing {sorted(missing)}, unknown {sorted(set(e) - EQ_KEYS)})")
        if not isinstance(e["reason"], str) or len(e["reason"].strip()) < 10:
            raise SystemExit(f"{cfg.equivalent.name}: equivalent[{n}]: a reason of one line, please")
        out.append(e)
    return out


def equivalent_key(m: Mutant, line: str, mutated: str) -> tuple:
    return (m.module, m.function, m.operator, line, mutated)


# --- the coverage map ---------------------------------------------------------------------------------------

def _digest(paths: list[pathlib.Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(set(paths)):
        h.update(p.as_posix().encode())
        h.update(p.read_bytes() if p.is_file() else b"-")
    return h.hexdigest()[:20]


def test_files(cfg: Config, g: Group) -> list[pathlib.Path]:
    """Every .py file under the group's test paths, and the conftest.py files above them."""
    out = set()
    for t in g.tests:
        p = cfg.root / t.split("::")[0]
        out |= set(p.rglob("*.py")) if p.is_dir() else {p}
        for parent in (p if p.is_dir() else p.parent, *p.parents):
            if cfg.root in (parent, *parent.parents) and (parent / "conftest.py").exists():
                out.add(parent / "conftest.py")
    return sorted(out)


def group_code_digest(cfg: Config, g: Group) -> str:
    return _digest([cfg.root / m for m in g.modules] + [cfg.root / s for s in g.support])


def group_tests_digest(cfg: Config, g: Group) -> str:
    return _digest(test_files(cfg, g))


def _statement_ranges(source: str) -> list[tuple[int, int]]:
    """(first, last) line of every statement; a compound statement's range is its header."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                             ast.ClassDef)):
                out.append((node.lineno, max(node.lineno, body[0].lineno - 1)))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                out.append((first, max(node.lineno, node.body[0].lineno - 1)))
            else:
                out.append((node.lineno, node.end_lineno or node.lineno))
    return out


def coverage_map(cfg: Config, g: Group, fresh: bool = False) -> dict:
    """Which tests run which line of the group's modules, and each test's time: one unmutated run, cached."""
    key = hashlib.sha256((group_code_digest(cfg, g) + group_tests_digest(cfg, g)
                          + json.dumps(cfg.env, sort_keys=True) + json.dumps(g.deselect)).encode()).hexdigest()[:20]
    path = cfg.state / f"coverage-{g.name}-{key}.json"
    if path.exists() and not fresh:
        return json.loads(path.read_text())
    cfg.state.mkdir(parents=True, exist_ok=True)
    print(f"[{g.name}] coverage run of {len(g.tests)} test paths (unmutated) ...", flush=True)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--_coverage", g.name,
                           "--root", str(cfg.root), "--_out", str(path)], env=_worker_env(cfg), cwd=cfg.root)
    if proc.returncode != 0 or not path.exists():
        raise SystemExit(f"[{g.name}] the unmutated tests do not pass under {cfg.env}: fix that first "
                         f"(pytest exit {proc.returncode})")
    data = json.loads(path.read_text())
    print(f"[{g.name}] {len(data['tests'])} tests, {time.monotonic() - t0:.0f} s", flush=True)
    return data


def _run_coverage(cfg: Config, g: Group, out: pathlib.Path) -> int:
    """In a fresh process: the group's tests under coverage, one context per test (node id)."""
    import coverage
    import pytest

    cov = coverage.Coverage(data_file=None, include=[str(cfg.root / m) for m in g.modules], branch=False)
    durations: dict[str, float] = {}
    failed: list[str] = []

    class Contexts:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item, nextitem):
            cov.switch_context(item.nodeid)
            t = time.process_time()  # CPU time: what a mutant's timeout is counted in (load does not stretch it)
            yield
            durations[item.nodeid] = time.process_time() - t
            cov.switch_context("")

        def pytest_runtest_logreport(self, report):
            if report.failed:
                failed.append(report.nodeid)

    cov.start()
    args = ["-q", "-p", "no:cacheprovider", "-W", "ignore", *g.tests]
    args += [f"--deselect={d}" for d in g.deselect]
    rc = pytest.main(args, plugins=[Contexts(), _Profile()])
    cov.stop()
    if rc != 0 or failed:
        print(f"failing unmutated: {failed}", file=sys.stderr)
        return 1
    data = cov.get_data()
    lines = {}
    for m in g.modules:
        by_line = data.contexts_by_lineno(str(cfg.root / m))
        lines[m] = {str(n): sorted(c) for n, c in by_line.items()}
    out.write_text(json.dumps({"tests": durations, "lines": lines}))
    return 0


def select_tests(cov: dict, m: Mutant, ranges: list[tuple[int, int]]) -> list[str] | None:
    """The tests that executed the mutant's statement, fastest first; None when none did.

    A statement run only at import (module level, a ``def`` line and its defaults) is covered by
    the empty context: then every test of the group runs."""
    first, last = m.line, m.end_line
    inner = [r for r in ranges if r[0] <= m.line <= r[1]]
    if inner:
        first, last = min(inner, key=lambda r: r[1] - r[0])
        last = max(last, m.end_line)
    lines = cov["lines"].get(m.module, {})
    ctx = set()
    for n in range(first, last + 1):
        ctx.update(lines.get(str(n), ()))
    if not ctx:
        return None
    if "" in ctx:
        ctx = set(cov["tests"])
    ctx.discard("")
    return sorted(ctx, key=lambda t: (cov["tests"].get(t, 0.0), t))


# --- workers ---------------------------------------------------------------------------------------------

class _Profile:
    """pytest plugin of a mutant run: hypothesis deterministic, no example database, no deadline."""

    def pytest_configure(self, config):
        try:
            from hypothesis import HealthCheck, settings
        except ImportError:
            return
        settings.register_profile("mutation", derandomize=True, deadline=None, database=None, print_blob=False,
                                  suppress_health_check=list(HealthCheck))
        settings.load_profile("mutation")


class _FirstFailure:
    def __init__(self, fd: int):
        self.fd = fd

    def pytest_runtest_logreport(self, report):
        if report.failed:
            os.write(self.fd, (report.nodeid + "\n").encode())


class _MutantFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves one module's mutated source from memory (nothing on disk changes)."""

    def __init__(self, name: str, path: pathlib.Path, source: str):
        self.name, self.path, self.source = name, path, source

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        is_pkg = self.path.name == "__init__.py"
        spec = importlib.util.spec_from_loader(fullname, self, origin=str(self.path), is_package=is_pkg)
        spec.has_location = True
        if is_pkg:
            spec.submodule_search_locations = [str(self.path.parent)]
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        from cosmic_ray.exceptions import CosmicRayTestingException

        module.__file__ = str(self.path)
        module.CosmicRayTestingException = CosmicRayTestingException  # what a mutated `except` names
        exec(compile(self.source, str(self.path), "exec"), module.__dict__)


def _worker_env(cfg: Config) -> dict:
    env = dict(os.environ, **cfg.env)
    env.pop("PYTEST_ADDOPTS", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


WALL_FACTOR, WALL_EXTRA_S = 5, 120  # a mutant that waits without computing (a lost wakeup) ends here


def _cpu_seconds(pid: int) -> float:
    """CPU time of a process and its waited-for children (Linux /proc; 0 when it cannot be read)."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _run_one(cfg: Config, job: dict) -> dict:
    """Fork a child that imports the mutant and runs its tests; the verdict with the killing test.

    A mutant of a value that tests are parametrized with renames those tests: their node ids are not
    found (pytest exit 4). Then the whole test modules run instead."""
    res = _run_tests(cfg, job, job["tests"])
    if res.get("detail") == "pytest exit 4":
        files = list(dict.fromkeys(t.split("::")[0] for t in job["tests"]))
        res = _run_tests(cfg, job, files)
        res["detail"] = res.get("detail") or "its tests' node ids changed: whole test modules run"
    return res


def _run_tests(cfg: Config, job: dict, tests: list[str]) -> dict:
    m = Mutant(**job["mutant"])
    source = (cfg.root / m.module).read_text()
    if source_digest(source) != job["source"]:
        return {"status": "error", "detail": f"{m.module} changed during the campaign: run again"}
    try:
        code = mutated_source(cfg, m, source)
    except Exception as exc:  # reported, not fatal to the campaign
        return {"status": "error", "detail": f"mutation failed: {exc}"}
    line, mutated = changed_lines(source, code)
    base = {"line": line, "mutated": mutated}
    rfd, wfd = os.pipe()
    t0 = time.monotonic()
    pid = os.fork()
    _CHILD[0] = pid
    if pid == 0:  # child
        rc = 3
        try:
            os.close(rfd)
            os.setpgid(0, 0)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.chdir(cfg.root)
            sys.meta_path.insert(0, _MutantFinder(job["name"], cfg.root / m.module, code))
            import pytest

            args = ["-x", "-q", "-p", "no:cacheprovider", "-W", "ignore", "--no-header", "-o",
                    "console_output_style=classic", *tests]
            rc = pytest.main(args, plugins=[_Profile(), _FirstFailure(wfd)])
        except BaseException:
            rc = 3
        finally:
            os._exit(int(rc) if isinstance(rc, int) else 3)
    os.close(wfd)
    wall_deadline = t0 + WALL_FACTOR * job["timeout"] + WALL_EXTRA_S
    status = None
    while True:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if _cpu_seconds(pid) > job["timeout"] or time.monotonic() > wall_deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            status = "timeout"
            break
        time.sleep(0.01)
    killer = os.read(rfd, 65536).decode(errors="replace").split("\n")[0]
    os.close(rfd)
    secs = round(time.monotonic() - t0, 2)
    if status is None:
        if os.WIFSIGNALED(st):
            status, base["detail"] = "killed", f"signal {os.WTERMSIG(st)}"
        else:
            rc = os.WEXITSTATUS(st)
            # pytest: 0 all passed, 1 a test failed, 2 interrupted (e.g. the mutant does not import),
            # 3 internal error, 4 usage error, 5 nothing collected
            status = {0: "survived", 1: "killed", 2: "killed"}.get(rc, "error")
            if rc == 2:
                base["detail"] = "collection failed (the mutant does not import)"
            elif status == "error":
                base["detail"] = f"pytest exit {rc}"
    base.update(status=status, killer=killer, secs=secs)
    return base


_CHILD = [0]  # the worker's current child (its process group), stopped with the worker


def _stop_child(signum, frame):
    if _CHILD[0] > 0:
        try:
            os.killpg(_CHILD[0], signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    os._exit(1)


def _serve(cfg: Config) -> int:
    """Worker: import the heavy packages once, then one forked child per job (JSON lines on stdin/stdout)."""
    signal.signal(signal.SIGTERM, _stop_child)
    for name in cfg.preimport:
        __import__(name)
    import pytest  # noqa: F401
    import cosmic_ray.mutating  # noqa: F401

    for raw in sys.stdin:
        job = json.loads(raw)
        try:
            res = _run_one(cfg, job)
        except Exception as exc:
            res = {"status": "error", "detail": repr(exc)}
        res["id"] = job["id"]
        sys.stdout.write(json.dumps(res) + "\n")
        sys.stdout.flush()
    return 0


class Pool:
    """`jobs` worker processes fed one job at a time."""

    def __init__(self, cfg: Config, jobs: int):
        cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--_serve", "--root", str(cfg.root)]
        self.procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_worker_env(cfg),
                                       cwd=cfg.root, text=True, bufsize=1) for _ in range(jobs)]
        self.busy: dict[int, dict] = {}

    def run(self, jobs: list[dict], on_result, stop_at: float, prepare=lambda job: job):
        """Run `jobs` (each made ready by `prepare` just before it starts); returns how many were not started."""
        todo = list(reversed(jobs))
        fds = {p.stdout.fileno(): k for k, p in enumerate(self.procs)}
        while todo or self.busy:
            for k, p in enumerate(self.procs):
                if k not in self.busy and todo and time.monotonic() < stop_at:
                    job = prepare(todo.pop())
                    self.busy[k] = job
                    p.stdin.write(json.dumps(job) + "\n")
                    p.stdin.flush()
            if not self.busy:
                break
            ready, _, _ = select.select(list(fds), [], [], 5.0)
            for fd in ready:
                k = fds[fd]
                line = self.procs[k].stdout.readline()
                if not line:
                    raise SystemExit(f"worker {k} died")
                on_result(self.busy.pop(k), json.loads(line))
        return len(todo)

    def close(self, stop: bool = False):
        """Let the workers finish and exit; with `stop`, end them and their running mutants now."""
        for p in self.procs:
            if stop:
                p.terminate()
            else:
                p.stdin.close()
        for p in self.procs:
            p.wait(timeout=60)


class Killers:
    """Which tests killed mutants so far, per function and per module: a mutant runs those first.

    A test that found one bug in a function is the likeliest to find the next, so a killable mutant
    mostly dies on its first test; the order does not change what runs, only when it stops."""

    def __init__(self):
        self.by_function: dict[tuple, dict[str, int]] = {}
        self.by_module: dict[str, dict[str, int]] = {}

    def add(self, m: Mutant, killer: str | None):
        if killer:
            for table, key in ((self.by_function, (m.module, m.function)), (self.by_module, m.module)):
                d = table.setdefault(key, {})
                d[killer] = d.get(killer, 0) + 1

    def order(self, job: dict, cov: dict) -> dict:
        m = Mutant(**job["mutant"])
        fn = self.by_function.get((m.module, m.function), {})
        mod = self.by_module.get(m.module, {})
        job["tests"] = sorted(job["tests"], key=lambda t: (-fn.get(t, 0), -mod.get(t, 0), cov["tests"].get(t, 0.0), t))
        return job


# --- results --------------------------------------------------------------------------------------------

def source_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def load_results(cfg: Config) -> dict[str, dict]:
    path = cfg.state / "results.jsonl"
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by an interrupted run
            out[r["key"]] = r
    return out


class TestDigests:
    """The digest of one test as a kill depends on it: its test module with every *other* test left out.

    So a kill stays valid when tests are added to or changed in its module, and is run again when the
    killing test, a helper, a fixture or an import of that module changes (and with the module's own text,
    which is part of the result's key). Conftest files count for every test under them."""

    def __init__(self, cfg: Config, g: Group):
        self.cfg = cfg
        self.conftest = {p.relative_to(cfg.root).as_posix(): _digest([p]) for p in test_files(cfg, g)
                         if p.name == "conftest.py"}
        self.cache: dict[str, str | None] = {}

    def __call__(self, nodeid: str) -> str | None:
        if nodeid not in self.cache:
            self.cache[nodeid] = self._digest(nodeid)
        return self.cache[nodeid]

    def _digest(self, nodeid: str) -> str | None:
        parts = nodeid.split("::")
        path = self.cfg.root / parts[0]
        if len(parts) < 2 or not path.is_file():
            return None
        name = parts[1].split("[")[0]
        text = path.read_text()
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return None
        h = hashlib.sha256()
        for node in tree.body:
            named = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            if named and node.name != name and node.name.startswith(("test", "Test")):
                continue  # another test: not what this kill rests on
            h.update((ast.get_source_segment(text, node, padded=True) or "").encode())
        for rel, d in sorted(self.conftest.items()):
            if parts[0].startswith(rel[: -len("conftest.py")]):
                h.update(d.encode())
        return h.hexdigest()[:20]


def still_valid(r: dict, code_digest: str, tests_digest: str, test_digest: TestDigests) -> bool:
    """A kill holds while its killing test (`TestDigests`) is unchanged; anything else while neither the
    group's modules nor its tests changed."""
    if r["status"] == "killed" and r.get("killer") and r.get("killer_test"):
        return r["killer_test"] == test_digest(r["killer"])
    return r.get("code") == code_digest and r.get("tests") == tests_digest


@dataclass
class Tally:
    generated: int = 0
    killed: int = 0
    timeout: int = 0
    survived: int = 0
    not_covered: int = 0
    equivalent: int = 0
    error: int = 0
    pending: int = 0

    @property
    def rate(self) -> float | None:
        judged = self.generated - self.equivalent - self.pending - self.error
        return None if judged <= 0 else (self.killed + self.timeout) / judged


def campaign(cfg: Config, args) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `kill`: stop the workers too (Pool.close)
    t_start = time.monotonic()
    stop_at = t_start + args.minutes * 60 if args.minutes else float("inf")
    equivalents = load_equivalents(cfg)
    eq_index = {(e["module"], e["function"], e["operator"], e["line"].strip(), e["mutated"].strip()): e
                for e in equivalents}
    eq_seen: set = set()
    eq_lines = {k[:4]: True for k in eq_index}
    results = {} if args.fresh else load_results(cfg)
    cfg.state.mkdir(parents=True, exist_ok=True)
    out = open(cfg.state / "results.jsonl", "a")
    tallies: dict[str, Tally] = {}
    survivors: list[tuple[Mutant, dict]] = []
    listed_but_killed: list[tuple[Mutant, dict]] = []
    groups = [g for g in cfg.groups if not args.only or any(fnmatch.fnmatch(m, pat) or g.name == pat
                                                            for pat in args.only for m in g.modules)]
    total_run = 0
    for g in groups:
        modules = [m for m in g.modules if not args.only or g.name in args.only
                   or any(fnmatch.fnmatch(m, pat) for pat in args.only)]
        code_d, tests_d = group_code_digest(cfg, g), group_tests_digest(cfg, g)
        file_d = TestDigests(cfg, g)
        jobs, cov = [], None
        killers = Killers()
        for rel in modules:
            t = tallies.setdefault(rel, Tally())
            source = (cfg.root / rel).read_text()
            ranges = _statement_ranges(source)
            for m in mutants_of(cfg, rel):
                t.generated += 1
                key = hashlib.sha256(f"{source_digest(source)}:{m.operator}:{m.occurrence}".encode()).hexdigest()[:24]
                r = results.get(key)
                if r is not None and still_valid(r, code_d, tests_d, file_d):
                    _count(t, m, r, eq_index, eq_seen, survivors, listed_but_killed)
                    killers.add(m, r.get("killer"))
                    continue
                if args.report or int(key, 16) % 1000 >= 10 * args.sample:
                    t.pending += 1  # not run this time (--report, or outside --sample)
                    continue
                if eq_lines.get((m.module, m.function, m.operator, source.splitlines()[m.line - 1].strip())) \
                        and not args.check_equivalents:
                    line, mutated = changed_lines(source, mutated_source(cfg, m, source))
                    if (m.module, m.function, m.operator, line, mutated) in eq_index:
                        _count(t, m, {"status": "survived", "line": line, "mutated": mutated}, eq_index, eq_seen,
                               survivors, listed_but_killed)
                        continue  # listed as equivalent: not run (--check-equivalents runs them)
                if cov is None:
                    cov = coverage_map(cfg, g, fresh=args.fresh)
                tests = select_tests(cov, m, ranges)
                if tests is None:
                    line = source.splitlines()[m.line - 1].strip()
                    r = {"key": key, "status": "survived", "detail": "not covered", "line": line,
                         "mutated": changed_lines(source, mutated_source(cfg, m, source))[1],
                         "code": code_d, "tests": tests_d}
                    out.write(json.dumps(r) + "\n")
                    _count(t, m, r, eq_index, eq_seen, survivors, listed_but_killed)
                    continue
                budget = sum(cov["tests"].get(x, 0.0) for x in tests)
                jobs.append({"id": len(jobs), "key": key, "mutant": m.__dict__, "name": module_name(cfg, rel),
                             "source": source_digest(source),
                             "tests": tests, "timeout": round(cfg.min_s + cfg.factor * budget, 1)})
        if args.list:
            for j in jobs:
                print(Mutant(**j["mutant"]).ident, len(j["tests"]), "tests", j["timeout"], "s")
            continue
        if not jobs:
            continue
        print(f"[{g.name}] {len(jobs)} mutants to run on {args.jobs} workers", flush=True)
        pool = Pool(cfg, args.jobs)
        done = [0]

        def on_result(job, res, g=g, code_d=code_d, tests_d=tests_d, file_d=file_d):
            m = Mutant(**job["mutant"])
            res.update(key=job["key"], code=code_d, tests=tests_d)
            if res.get("killer"):
                res["killer_test"] = file_d(res["killer"])
            out.write(json.dumps(res) + "\n")
            out.flush()
            _count(tallies[m.module], m, res, eq_index, eq_seen, survivors, listed_but_killed)
            killers.add(m, res.get("killer"))
            done[0] += 1
            if done[0] % 25 == 0 or res["status"] == "survived":
                print(f"[{g.name}] {done[0]}/{len(jobs)} {res['status']:8s} {m.module}:{m.line} {m.operator} "
                      f"({res.get('secs', 0):.1f} s)", flush=True)

        stopped = True
        try:
            left = pool.run(jobs, on_result, stop_at, prepare=lambda job, cov=cov: killers.order(job, cov))
            stopped = False
        finally:
            pool.close(stop=stopped)
        total_run += done[0]
        for j in jobs[len(jobs) - left:]:
            tallies[j["mutant"]["module"]].pending += 1
    out.close()
    if args.list:
        return 0
    stale = [e for k, e in eq_index.items() if k not in eq_seen and k[0] in tallies
             and tallies[k[0]].pending == 0]
    report(cfg, tallies, survivors, listed_but_killed, stale, args, time.monotonic() - t_start, total_run)
    return 0


def _count(t: Tally, m: Mutant, r: dict, eq_index, eq_seen, survivors, listed_but_killed):
    k = (m.module, m.function, m.operator, r.get("line", ""), r.get("mutated", ""))
    listed = k in eq_index
    if listed:
        eq_seen.add(k)
    st = r["status"]
    if st in ("killed", "timeout"):
        setattr(t, st, getattr(t, st) + 1)
        if listed:
            listed_but_killed.append((m, r))
    elif st == "survived":
        if listed:
            t.equivalent += 1
        else:
            t.survived += 1
            t.not_covered += r.get("detail") == "not covered"
            survivors.append((m, r))
    else:
        t.error += 1
        survivors.append((m, r))


def table(tallies: dict[str, Tally]) -> str:
    head = "| module | mutants | killed | timeout | survived (not covered) | equivalent | kill rate |\n"
    head += "|---|---:|---:|---:|---:|---:|---:|\n"
    rows = []
    total = Tally()
    for mod, t in tallies.items():
        for f in total.__dataclass_fields__:
            setattr(total, f, getattr(total, f) + getattr(t, f))
        rows.append(_row(f"`{mod}`", t))
    rows.append(_row("**all**", total))
    return head + "\n".join(rows)


def _row(name: str, t: Tally) -> str:
    rate = "-" if t.rate is None else f"{100 * t.rate:.1f} %"
    extra = f" ({t.pending} pending)" if t.pending else ""
    return (f"| {name} | {t.generated} | {t.killed} | {t.timeout} | {t.survived} ({t.not_covered}) | "
            f"{t.equivalent} | {rate}{extra} |")


def report(cfg, tallies, survivors, listed_but_killed, stale, args, secs, ran):
    print()
    print(table(tallies))
    low = [m for m, t in tallies.items() if t.rate is not None and t.rate < 0.9]
    if survivors:
        print(f"\n{len(survivors)} surviving mutants (kill them with a test, or list them as equivalent in "
              f"{cfg.equivalent.relative_to(cfg.root)}):")
        for m, r in sorted(survivors, key=lambda x: (x[0].module, x[0].line)):
            why = f"  [{r['status']}: {r['detail']}]" if r.get("detail") else ""
            print(f"  {m.module}:{m.line} {m.function or '<module>'} {m.operator}{why}\n"
                  f"      - {r.get('line', '')}\n      + {r.get('mutated', '')}")
    for m, r in listed_but_killed:
        print(f"listed as equivalent but killed by {r.get('killer') or r['status']}: {m.module}:{m.line} "
              f"{m.operator} {r.get('mutated', '')}")
    for e in stale:
        print(f"listed as equivalent but no such mutant (the code changed?): {e['module']} {e['function']} "
              f"{e['operator']}: {e['line']}")
    print(f"\n{ran} mutants run in {secs / 60:.1f} min on {args.jobs} workers; modules below 90 %: "
          f"{', '.join(low) or 'none'}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({m: t.__dict__ for m, t in tallies.items()}, indent=1))
    if args.doc:
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
        import docblocks  # benchmarks/docblocks.py

        judged = {m: t for m, t in tallies.items() if t.generated > t.pending}
        waiting = {m: t for m, t in tallies.items() if t.generated == t.pending}
        text = table(judged)
        if waiting:
            text += (f"\n\nNot run yet: {len(waiting)} modules, {sum(t.generated for t in waiting.values())} "
                     f"mutants ({', '.join(f'`{m}`' for m in waiting)}).")
        docblocks.fill(pathlib.Path(args.doc), {"mutation": text})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: [tool.mutation] jobs, else "
                                                           "one per core)")
    ap.add_argument("--only", nargs="+", default=[], metavar="GLOB",
                    help="only these modules (globs on paths relative to the root) or groups (by name)")
    ap.add_argument("--minutes", type=float, default=0, help="stop starting mutants after this long (0: no bound)")
    ap.add_argument("--fresh", action="store_true", help="ignore earlier results and the cached coverage")
    ap.add_argument("--sample", type=float, default=100.0, metavar="PCT",
                    help="run only this percentage of the mutants not yet judged, the same ones every time "
                         "(chosen by a hash of each mutant); the rest stay pending")
    ap.add_argument("--check-equivalents", action="store_true",
                    help="run the mutants listed as equivalent too (a kill reports the entry as wrong)")
    ap.add_argument("--list", action="store_true", help="list the mutants that would run, and their tests")
    ap.add_argument("--report", action="store_true", help="report from the stored results only; run nothing")
    ap.add_argument("--doc", metavar="PAGE", help="write the table into PAGE's <!-- mutation --> block")
    ap.add_argument("--json", metavar="FILE", help="write the per-module counts as JSON")
    ap.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    ap.add_argument("--_serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--_coverage", metavar="GROUP", help=argparse.SUPPRESS)
    ap.add_argument("--_out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    cfg = load_config(pathlib.Path(args.root))
    if args._serve:
        return _serve(cfg)
    if args._coverage:
        (g,) = [g for g in cfg.groups if g.name == args._coverage]
        return _run_coverage(cfg, g, pathlib.Path(args._out))
    args.jobs = args.jobs or cfg.jobs
    return campaign(cfg, args)


if __name__ == "__main__":
    sys.exit(main())
