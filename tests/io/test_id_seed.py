"""``--id-seed`` makes QPNs, R_Keys and PSNs reproducible, so guessable and replayable: tests only, said three times
(the warning when it is used, the option's help, docs/real-network.md)."""
from __future__ import annotations

import pathlib

from mrc.cli import build_parser
from mrc.io.cli import _build

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "real-network.md"


def test_id_seed_warns_that_it_is_for_tests_only(capsys):
    _build(build_parser().parse_args(["io", "transfer", "--id-seed", "7"]))
    err = capsys.readouterr().err
    assert "warning" in err and "for tests only" in err and "replayed" in err
    _build(build_parser().parse_args(["io", "transfer"]))  # drawn from the CSPRNG: nothing to say
    assert capsys.readouterr().err == ""


def test_the_help_and_the_docs_say_tests_only(capsys):
    parser = build_parser()
    try:
        parser.parse_args(["io", "transfer", "--help"])
    except SystemExit:
        pass
    assert "TESTS ONLY" in capsys.readouterr().out
    assert "**`--id-seed` is for\n  tests only**" in DOC.read_text()
