"""benchmarks/mutation.py: the project's configuration holds, and the machinery kills a planted bug.

The campaign itself is not part of the default run (hours of CPU); these checks take seconds: the
``[tool.mutation]`` table parses and names what exists, every mutant listed as equivalent is still a
mutant of the code as it is, and a whole run on a tiny project of its own kills what its test can
see, reports what it cannot, honours the equivalents file and resumes without running anything again.
"""
from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("mutation_script", ROOT / "benchmarks" / "mutation.py")
mutation = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = mutation  # dataclasses look their module up there
_spec.loader.exec_module(mutation)


def test_the_projects_configuration_parses_and_names_what_exists():
    cfg = mutation.load_config(ROOT)
    groups = {g.name: g for g in cfg.groups}
    assert {"core", "wire-pcap", "wire", "ev-fields", "keys", "aqm", "conformance"} <= set(groups)
    modules = {m for g in cfg.groups for m in g.modules}
    for m in ("mrc/core/evset.py", "mrc/core/responder.py", "mrc/core/loss.py", "mrc/core/evp/mrc.py",
              "mrc/wire/pcap.py", "mrc/wire/codec.py", "mrc/ctl/ev_fields.py", "emulator/keys.py",
              "emulator/aqm.py", "conformance/runner.py"):
        assert m in modules, m
    assert mutation.module_name(cfg, "emulator/aqm.py") == "mrc.emulator.aqm"
    assert mutation.module_name(cfg, "mrc/core/evp/mrc.py") == "mrc.core.evp.mrc"
    assert mutation.module_name(cfg, "conformance/cases/wire.py") == "mrc.conformance.cases.wire"
    assert cfg.env.get("NUMBA_DISABLE_JIT") == "1"
    assert "tests/core/test_pure_python.py" in groups["core"].deselect  # a subprocess cannot see the mutant
    for op in cfg.operators:
        mutation.resolve_operator(op)


def test_a_bad_configuration_is_refused_naming_the_key(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.mutation]\noperators = ["core/NoSuchOperator"]\n')
    with pytest.raises(SystemExit, match="operators: unknown operator 'core/NoSuchOperator'"):
        mutation.load_config(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.mutation]\noperators = []\ngroup = 1\n')
    with pytest.raises(SystemExit, match=r"\[tool.mutation\] group: unknown key"):
        mutation.load_config(tmp_path)


def test_every_mutant_listed_as_equivalent_is_a_mutant_of_the_code_as_it_is():
    cfg = mutation.load_config(ROOT)
    listed = mutation.load_equivalents(cfg)
    for e in listed:
        source = (ROOT / e["module"]).read_text()
        found = False
        for m in mutation.mutants_of(cfg, e["module"], [e["operator"]]):
            if m.function != e["function"] or source.splitlines()[m.line - 1].strip() != e["line"].strip():
                continue
            if mutation.changed_lines(source, mutation.mutated_source(cfg, m, source)) == (e["line"].strip(),
                                                                                       e["mutated"].strip()):
                found = True
                break
        assert found, f"{cfg.equivalent.name}: no such mutant any more: {e}"


TINY = '''
def clamp_add(a, b, hi):
    s = a + b
    if s < hi:
        return s
    return hi


def unused(x):
    return x * 2
'''

TINY_TEST = '''
from tiny import clamp_add


def test_clamp_add():
    assert clamp_add(1, 2, 10) == 3
    assert clamp_add(5, 5, 7) == 7
'''

TINY_CONFIG = '''
[tool.mutation]
operators = ["core/ReplaceBinaryOperator_Add_Sub", "core/ReplaceComparisonOperator_Lt_LtE",
             "core/ReplaceBinaryOperator_Mul_FloorDiv", "mrc/AugAssign_Add_Sub"]
env = {}
preimport = []
jobs = 1

[[tool.mutation.groups]]
name = "tiny"
modules = ["tiny.py"]
tests = ["test_tiny.py"]
'''

TINY_EQUIVALENT = '''
[[equivalent]]
module = "tiny.py"
function = "clamp_add"
operator = "core/ReplaceComparisonOperator_Lt_LtE"
line = "if s < hi:"
mutated = "if s <= hi:"
reason = "at s == hi both branches return the same value"
'''


def test_a_whole_run_on_a_tiny_project(tmp_path):
    (tmp_path / "pyproject.toml").write_text(TINY_CONFIG)
    (tmp_path / "tiny.py").write_text(TINY)
    (tmp_path / "test_tiny.py").write_text(TINY_TEST)
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "mutation_equivalent.toml").write_text(textwrap.dedent(TINY_EQUIVALENT))
    cmd = [sys.executable, str(ROOT / "benchmarks" / "mutation.py"), "--root", str(tmp_path), "--json",
           str(tmp_path / "out.json")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    counts = json.loads((tmp_path / "out.json").read_text())["tiny.py"]
    # a + b -> a - b: killed by the test; s < hi -> s <= hi: listed equivalent; x * 2 -> x // 2 in a
    # function no test runs: survives without a run ("not covered")
    assert (counts["generated"], counts["killed"], counts["equivalent"], counts["survived"],
            counts["not_covered"]) == (3, 1, 1, 1, 1), counts
    assert "tiny.py:10 unused core/ReplaceBinaryOperator_Mul_FloorDiv" in proc.stdout
    assert "- return x * 2" in proc.stdout and "+ return x // 2" in proc.stdout
    assert "| `tiny.py` | 3 | 1 | 0 | 1 (1) | 1 | 50.0 % |" in proc.stdout
    assert (tmp_path / "tiny.py").read_text() == TINY  # mutants live in memory only
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert again.returncode == 0 and "0 mutants run" in again.stdout, again.stdout + again.stderr
    assert json.loads((tmp_path / "out.json").read_text())["tiny.py"] == counts
