"""The project's own promises: README and CI agree, every command level has --help."""
from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys

import mrc
from mrc.cli import build_parser, main

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _readme_blocks():
    return re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_ci_runs_exactly_the_readme_test_command():
    blocks = _readme_blocks()
    test_cmds = [line for b in blocks for line in b.splitlines() if "pytest" in line and not line.startswith("#")]
    assert len(test_cmds) == 1, test_cmds
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1].strip() == test_cmds[0].strip()


def test_version_matches_package():
    out = subprocess.run([sys.executable, "-m", "mrc", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"mrc {mrc.__version__}"


def _walk(parser: argparse.ArgumentParser, path=()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, path + (name,))


def test_every_command_level_has_help(capsys):
    levels = list(_walk(build_parser()))
    assert levels, "no commands"
    for path, _ in levels:
        try:
            main([*path, "--help"])
        except SystemExit as exc:
            assert exc.code == 0, path
        out = capsys.readouterr().out
        assert "usage: mrc" in out, path


# Built from pieces so that this file does not match itself.
MACHINE_PATH = re.compile("|".join(["/" + "work/", "/" + "root/", "/" + r"home/\w+/"]))


def test_no_machine_paths_in_repository():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    bad = []
    for name in tracked:
        p = ROOT / name
        if p.suffix in {".png", ".pcap", ".pcapng"} or not p.is_file():
            continue
        text = p.read_text(errors="ignore")
        if MACHINE_PATH.search(text):
            bad.append(name)
    assert not bad, f"absolute machine paths in {bad}"
