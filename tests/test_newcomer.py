"""The README's promises to a newcomer, checked as far as a test can.

- `python -m pip install -e .` brings everything the commands import: the project's main dependencies
  (pyproject.toml) and what they require are installed into a fresh virtual environment (their installed
  files linked in, so no network is needed), where `mrc demo` and `mrc emu sweep` then run; and every
  third-party module the packages import belongs to that set.
- The README's test command passes on a machine without the Debian extras `.ci/run` installs (nftables,
  tshark, Chromium) and whose kernel has no `tc netem`: the tests that need them run under such a PATH and
  skip, naming what is missing.
"""
from __future__ import annotations

import ast
import os
import pathlib
import re
import subprocess
import sys
import sysconfig
import tomllib
from importlib import metadata

from packaging.requirements import Requirement

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("mrc", "emulator", "fabric", "conformance")  # the source folders of the distribution
OWN = {"mrc", "emulator", "fabric", "conformance", "tests"}
# modules loaded only by a program that brings the import itself: the conformance suite's pytest plugin
HOSTED = {"conformance/pytest_plugin.py": {"pytest"}}


# ---------------------------------------------------------------- the main install


def _main_requirements() -> list[Requirement]:
    pp = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return [Requirement(r) for r in pp["project"]["dependencies"]]


def _closure(reqs) -> dict[str, metadata.Distribution]:
    """The installed distributions `reqs` bring, with what they require in turn (markers and extras evaluated
    here, as pip would evaluate them on this machine)."""
    out: dict[str, metadata.Distribution] = {}
    todo = [(r, frozenset()) for r in reqs]
    seen = set()
    while todo:
        req, _ = todo.pop()
        key = (req.name.lower(), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        dist = metadata.distribution(req.name)
        out[dist.metadata["Name"].lower().replace("_", "-")] = dist
        for text in dist.requires or []:
            sub = Requirement(text)
            env = [{"extra": e} for e in req.extras] or [{"extra": ""}]
            if sub.marker is None or any(sub.marker.evaluate(e) for e in env):
                todo.append((sub, frozenset()))
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_every_third_party_module_the_packages_import_comes_with_the_main_install():
    """`pip install -e .` and then any command: no ModuleNotFoundError (a sweep used to need the [sweep] extra)."""
    brought = set(_closure(_main_requirements()))
    owners = metadata.packages_distributions()
    missing = {}
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            rel = str(f.relative_to(ROOT))
            for name in _imports(f) - OWN - set(sys.stdlib_module_names) - HOSTED.get(rel, set()):
                dists = {_norm(d) for d in owners.get(name, [])}
                if not dists & brought:
                    missing.setdefault(name, []).append(rel)
    assert not missing, f"imported but not brought by the main install (pyproject.toml dependencies): {missing}"


def _fresh_venv(tmp: pathlib.Path) -> pathlib.Path:
    """A virtual environment holding only this project and what its main dependencies bring: each
    distribution's installed files linked in (what `pip install -e .` would install, without a download)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp)], check=True)
    py = tmp / "bin" / "python"
    site = pathlib.Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                       capture_output=True, text=True, check=True).stdout.strip())
    here = pathlib.Path(sysconfig.get_paths()["purelib"]).resolve()
    # this project as installed here (an editable install: its finder and .pth; not an egg-info of the checkout)
    own = [d for d in metadata.distributions(name="mrc-transport", path=[str(here)])]
    assert own, f"mrc-transport is not installed in {here} (python -m pip install -e .)"
    dists = list(_closure(_main_requirements()).values()) + own[:1]
    for dist in dists:
        for f in dist.files or []:
            src = pathlib.Path(dist.locate_file(f)).resolve()
            if ".." in pathlib.PurePath(f).parts or not src.is_file():
                continue  # scripts and data outside site-packages: `python -m` runs the commands
            try:
                rel = src.relative_to(here)
            except ValueError:
                rel = pathlib.PurePath(f)
            dst = site / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if not dst.exists():
                dst.symlink_to(src)
    return py


def test_readme_commands_in_a_fresh_environment(tmp_path):
    """The README's first command (`pip install -e . && mrc demo`) and then a sweep, in an environment with
    nothing but the main install: the demo (at its tiny scale) and a one-worker sweep of it complete."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.S)
    first = [ln for b in blocks for ln in b.splitlines() if ln.strip() and not ln.startswith("#")][0]
    assert first.strip() == "python -m pip install -e . && mrc demo", first
    py = _fresh_venv(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{py.parent}{os.pathsep}{env.get('PATH', '')}"
    probe = subprocess.run([str(py), "-c", "import sys, numpy; print(sys.prefix, numpy.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True).stdout
    assert str(tmp_path / "venv") in probe  # the fresh environment, not this one
    demo = subprocess.run([str(py), "-m", "mrc", "demo", "--scale", "tiny", "--no-plots", "--out", "demo"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "results: demo" in demo.stdout
    sweep = subprocess.run([str(py), "-m", "mrc", "emu", "sweep", "demo/scenario.toml", "--transports", "mrc,roce-ecmp",
                            "--seeds", "1", "--workers", "1", "--no-plots", "--no-progress", "--out", "sw"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    assert (tmp_path / "sw" / "sweep.parquet").is_file() and "FCT p99 us" in sweep.stdout


# ---------------------------------------------------------------- a machine without the Debian extras

EXTRAS = {"tshark": "tshark", "dumpcap": "tshark", "chromium": "chromium", "chromium-browser": "chromium",
          "chromedriver": "chromium-driver", "nft": "nftables"}
NO_NETEM = """#!/bin/sh
# tc of a kernel without the netem qdisc (CONFIG_NET_SCH_NETEM): every other use goes to the real tc
for a in "$@"; do
    if [ "$a" = netem ]; then echo "Error: Specified qdisc kind is unknown." >&2; exit 2; fi
done
exec {real} "$@"
"""
# Every test that needs an extra: each must skip, naming it (the guard below keeps this list whole).
NEEDS_EXTRAS = [
    "tests/wire/test_tshark.py",
    "tests/wire/test_pcapng.py::test_tshark_reads_interfaces_and_times",
    "tests/emulator/test_capture.py::test_tshark_decodes_the_capture_with_the_dissector",
    "tests/emulator/test_capture.py::test_a_hand_written_fabric_capture_decodes_in_tshark",
    "tests/emulator/test_report.py::test_report_in_headless_chromium",
    "tests/emulator/test_report.py::test_training_section_in_headless_chromium",
    "tests/emulator/test_report.py::test_sweep_report_in_headless_chromium",
    "tests/io/test_native.py::test_tshark_on_a_fabric_link_decodes_carrier_inner_ipv6_udp_and_bth",
    "tests/io/test_localize_netns.py",
]


def _bare_bin(tmp: pathlib.Path) -> pathlib.Path:
    """A directory with every program of this PATH but the Debian extras, and a `tc` without netem."""
    d = tmp / "bin"
    d.mkdir()
    real_tc = None
    for part in os.environ.get("PATH", "").split(os.pathsep):
        p = pathlib.Path(part)
        if not p.is_dir():
            continue
        for f in p.iterdir():
            if f.name in EXTRAS or (d / f.name).exists() or not (f.is_file() and os.access(f, os.X_OK)):
                continue
            if f.name == "tc":
                real_tc = real_tc or f
                continue
            (d / f.name).symlink_to(f.resolve())
    tc = d / "tc"
    tc.write_text(NO_NETEM.format(real=real_tc or "false"))
    tc.chmod(0o755)
    return d


def test_every_test_that_uses_a_debian_extra_is_checked_without_it():
    """A test module that runs tshark, Chromium or nftables (or `tc netem`) is in `NEEDS_EXTRAS`."""
    uses = re.compile(r"""which\(["'](tshark|chromium|chromedriver|nft|tc)["']\)|--netem-loss""")
    listed = {n.split("::")[0] for n in NEEDS_EXTRAS}
    found = {str(f.relative_to(ROOT)) for f in (ROOT / "tests").rglob("test_*.py")
             if f.name != pathlib.Path(__file__).name and uses.search(f.read_text())}
    assert found <= listed, f"tests that use a Debian extra, not in NEEDS_EXTRAS: {sorted(found - listed)}"


def test_the_tests_that_need_debian_extras_skip_without_them(tmp_path):
    """The README's test command on a machine without nftables, tshark and Chromium, whose kernel has no netem:
    the tests that need them skip with the reason (none fails); `.ci/run` installs them, so CI runs them."""
    bare = _bare_bin(tmp_path)
    env = dict(os.environ, PATH=str(bare))
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q", *NEEDS_EXTRAS],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = res.stdout
    assert res.returncode == 0, out[-4000:] + res.stderr[-2000:]
    assert not re.search(r"\d+ (passed|failed|error)", out.splitlines()[-1]), out[-2000:]  # all skipped
    reasons = [ln for ln in out.splitlines() if ln.startswith("SKIPPED")]
    assert reasons and all(re.search(r"tshark|[Cc]hromium|nftables|netem", ln) for ln in reasons), reasons
    ci = (ROOT / ".ci" / "run").read_text()
    for package in set(EXTRAS.values()):
        assert package in ci, f".ci/run does not install {package}"
