"""The compiled-code cache is keyed by the sources: an edit anywhere gives a fresh cache directory.

numba only checks a cached function against its own file, so without the key an
edit to an inlined callee in another module would leave stale machine code running.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from mrc import _jit


def test_the_cache_directory_is_named_by_the_source_key():
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return
    d = pathlib.Path(os.environ["NUMBA_CACHE_DIR"])
    assert d.name == _jit.source_key() and d.is_dir()
    import numba.core.config as config
    assert config.CACHE_DIR == str(d)


def test_the_key_changes_with_any_source_and_nothing_else(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    monkeypatch.setattr(_jit, "_source_dirs", lambda: [pkg])
    k0 = _jit.source_key()
    (pkg / "notes.txt").write_text("not a source")
    assert _jit.source_key() == k0
    (pkg / "sub" / "b.py").write_text("y = 3\n")
    k1 = _jit.source_key()
    assert k1 != k0
    (pkg / "sub" / "b.py").rename(pkg / "b2.py")  # same content, other file
    assert _jit.source_key() not in (k0, k1)


def test_a_child_process_uses_its_parents_keyed_directory_and_old_ones_are_pruned(tmp_path):
    base = tmp_path / "cache"
    for i in range(6):
        (base / f"{i:016x}").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "MRC_NUMBA_CACHE_KEY")}
    env["NUMBA_CACHE_DIR"] = str(base)
    code = "import os, mrc._jit; print(os.environ['NUMBA_CACHE_DIR'])"
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    keyed = first.stdout.strip()
    assert pathlib.Path(keyed).parent == base and pathlib.Path(keyed).name == _jit.source_key()
    assert len([d for d in base.iterdir()]) == _jit.KEEP_CACHES
    env.update(NUMBA_CACHE_DIR=keyed, MRC_NUMBA_CACHE_KEY=pathlib.Path(keyed).name)
    child = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert child.stdout.strip() == keyed


def test_cached_code_loads_without_the_compiler_registries(tmp_path):
    """A fresh process loads a cached function (one that allocates: the runtime is there) without importing
    numba's lowering registries (`_jit._load_cached_code_without_registries`), and a function not yet cached
    still compiles after it, calling the loaded one."""
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return
    mod = tmp_path / "cachedmod.py"
    mod.write_text("import numpy as np\nfrom mrc._jit import njit\n\n\n@njit\ndef ramp(n):\n"
                   "    out = np.empty(n, np.int64)\n    for k in range(n):\n        out[k] = k * k\n    return out\n")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "MRC_NUMBA_CACHE_KEY")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    code = ("import sys, cachedmod\nprint(int(cachedmod.ramp(5).sum()), 'numba.np.arraymath' in sys.modules, "
            "'numba.cpython.listobj' in sys.modules)")
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split() == ["30", "True", "True"]  # compiled: the registries were needed
    warm = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert warm.stdout.split() == ["30", "False", "False"]  # loaded from the cache: none of them
    (tmp_path / "latermod.py").write_text("import cachedmod\nfrom mrc._jit import njit\n\n\n@njit\ndef twice(n):\n"
                                          "    return cachedmod.ramp(n) * 2\n")
    later = code + "\nimport latermod\nprint(int(latermod.twice(4).sum()))"
    out = subprocess.run([sys.executable, "-c", later], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "28"
