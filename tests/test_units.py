"""One units convention (docs/library.md, "Units"): options name their unit; the old spellings still
work and say they are deprecated."""
from __future__ import annotations

import pytest

from mrc.cli import build_parser


@pytest.mark.parametrize("argv, dest, value", [
    (["io", "transfer", "--fail-at-ms", "30", "--restore-at-ms", "90"], "fail_at_ms", 30.0),
    (["emu", "sweep", "x.toml", "--cell-timeout-s", "2.5"], "cell_timeout_s", 2.5),
])
def test_options_carry_their_unit(argv, dest, value, capsys):
    args = build_parser(only=argv[0]).parse_args(argv)
    assert getattr(args, dest) == value
    assert "deprecated" not in capsys.readouterr().err


@pytest.mark.parametrize("argv, dest, value, new", [
    (["io", "transfer", "--fail-at", "30"], "fail_at_ms", 30.0, "--fail-at-ms"),
    (["io", "transfer", "--restore-at", "90"], "restore_at_ms", 90.0, "--restore-at-ms"),
    (["emu", "sweep", "x.toml", "--cell-timeout", "2.5"], "cell_timeout_s", 2.5, "--cell-timeout-s"),
])
def test_old_option_spellings_still_work_and_say_so(argv, dest, value, new, capsys):
    with pytest.warns(DeprecationWarning, match=f"use {new}"):
        args = build_parser(only=argv[0]).parse_args(argv)
    assert getattr(args, dest) == value
    assert f"mrc: warning: {argv[-2]} is deprecated; use {new}" in capsys.readouterr().err


def test_defaults_survive_the_old_spellings():
    args = build_parser(only="io").parse_args(["io", "transfer"])
    assert (args.fail_at_ms, args.restore_at_ms) == (50.0, None)
