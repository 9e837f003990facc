"""Every mistake a user can make on the command line ends in one line naming the argument, exit status 2, no
traceback; and the texts the commands print read right (help, plurals, hints)."""
from __future__ import annotations

import pytest

from mrc.cli import build_parser, main, plural
from mrc.emulator import scenario
from mrc.emulator.transports import spec as tspec
from mrc.errors import ConfigError, UsageError
from mrc.fabric import from_preset
from tests.test_project import _walk

TINY = ('name = "tiny"\n[topology]\nkind = "leaf-spine"\nhosts_per_leaf = 2\nleaves = 2\nspines = 2\n'
        'link_gbps = 100\n[transport]\nname = "roce-ecmp"\n[workload]\nkind = "permutation"\nsize_bytes = 20000\n')


def _one_line_error(capsys, *words):
    """The command's stderr: one line, `mrc: error: ...`, holding `words`; nothing of a traceback."""
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("mrc: error: "), err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def test_sweep_out_an_existing_file(tmp_path, capsys):
    (tmp_path / "s.toml").write_text(TINY)
    (tmp_path / "file").write_text("x")
    assert main(["emu", "sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "file"), "--seeds", "1",
                 "--workers", "1", "--no-progress"]) == 2
    _one_line_error(capsys, "--out", "is a file")
    assert (tmp_path / "file").read_text() == "x"


def test_pcap_decode_of_a_missing_file_a_directory_and_a_file_that_is_no_capture(tmp_path, capsys):
    assert main(["pcap", "decode", str(tmp_path / "missing.pcap")]) == 2
    _one_line_error(capsys, "FILE", "missing.pcap", "no such file")
    assert main(["pcap", "decode", str(tmp_path)]) == 2
    _one_line_error(capsys, "FILE", "a directory")
    (tmp_path / "scenario.toml").write_text(TINY)
    assert main(["pcap", "decode", str(tmp_path / "scenario.toml")]) == 2
    line = _one_line_error(capsys, "FILE", "scenario.toml", "neither a pcap nor a pcapng file")
    assert "pcapng is not read" not in line
    assert main(["pcap", "samples", str(tmp_path / "no-such-dir" / "x.pcap")]) == 2
    _one_line_error(capsys, "FILE", "cannot write")


def test_pcap_dissector_prints_the_installed_lua_path(capsys):
    import pathlib

    assert main(["pcap", "dissector"]) == 0
    p = pathlib.Path(capsys.readouterr().out.strip())
    assert p.name == "mrc.lua" and p.is_file() and "register_heuristic" in p.read_text()


def test_a_file_with_bytes_that_are_not_utf8(tmp_path, capsys):
    """A scenario whose `.cm` file name holds a byte that is not UTF-8 (the TOML file is then not UTF-8), and a
    `.cm` file whose content is not."""
    bad = tmp_path / "bad.toml"
    bad.write_bytes(TINY.replace('kind = "permutation"\nsize_bytes = 20000\n',
                                 'kind = "cm"\nfile = "perm\xff.cm"\n').encode("latin-1"))
    assert main(["emu", "run", str(bad), "--out", str(tmp_path / "o"), "--no-plots"]) == 2
    _one_line_error(capsys, "scenario", "not UTF-8", "0xff", "line 12")
    (tmp_path / "m.cm").write_bytes(b"Nodes 4\nConnections 1\n0->1 id 1 start 0 size 1000\xfe\n")
    (tmp_path / "cm.toml").write_text(TINY.replace('kind = "permutation"\nsize_bytes = 20000\n',
                                                   'kind = "cm"\nfile = "m.cm"\n'))
    assert main(["emu", "run", str(tmp_path / "cm.toml"), "--out", str(tmp_path / "o"), "--no-plots"]) == 2
    _one_line_error(capsys, "workload.file", "not UTF-8", "0xfe")
    assert main(["emu", "run", str(tmp_path / "missing\udcff.toml"), "--no-plots"]) == 2
    _one_line_error(capsys, "scenario", "no such file")


def test_compare_transports_take_what_run_takes():
    assert tspec.split("roce-ecmp:lossless=false,dcqcn=false,mrc") == ["roce-ecmp:lossless=false:dcqcn=false", "mrc"]
    assert tspec.split("mrc:ev_count=[8,16],spray") == ["mrc:ev_count=[8,16]", "spray"]
    assert tspec.split("a,b:k=1,j=2,c") == ["a", "b:k=1:j=2", "c"]
    assert tspec.parse("roce-ecmp:lossless=false,dcqcn=false", commas=True) == (
        "roce-ecmp", {"lossless": False, "dcqcn": False})
    with pytest.raises(ConfigError, match="before any transport name"):
        tspec.split("lossless=false,mrc")


def test_compare_with_comma_separated_options(tmp_path, capsys):
    (tmp_path / "s.toml").write_text(TINY)
    assert main(["emu", "compare", str(tmp_path / "s.toml"), "--transports", "roce-ecmp:lossless=false,dcqcn=false,mrc",
                 "--out", str(tmp_path / "c"), "--no-plots", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "roce-ecmp:lossless=false:dcqcn=false" in out and "\nmrc " in out
    import json

    s = json.loads((tmp_path / "c" / "roce-ecmp_lossless-false_dcqcn-false" / "summary.json").read_text())
    assert s["config"]["transport"]["lossless"] is False and s["config"]["transport"]["dcqcn"] is False
    assert main(["emu", "compare", str(tmp_path / "s.toml"), "--transports", "roce-ecmp,nope",
                 "--out", str(tmp_path / "c2"), "--no-plots"]) == 2
    _one_line_error(capsys, "nope", "unknown transport", "known:")


def test_a_node_name_of_the_right_form_that_names_nothing_says_what_exists():
    topo = from_preset("mrc-2plane-64")
    with pytest.raises(UsageError) as e:
        topo.parse_node("p0.t1.9")
    assert "no such switch" in str(e.value) and "0..7" in str(e.value) and "pP.tT.I" not in str(e.value)
    for name, word in (("p2.t0.0", "no such plane"), ("p0.t2.0", "no such tier"), ("h99", "no such host"),
                       ("999", "no such node"), ("q1", "pP.tT.I")):
        with pytest.raises(UsageError, match=word):
            topo.parse_node(name)
    assert topo.node_name(topo.parse_node("p1.t1.7")) == "p1.t1.7"


def test_a_missing_required_key_names_what_was_written_instead():
    d = scenario.read("incast")[0]
    d["workload"]["size_byte"] = d["workload"].pop("size_bytes")
    with pytest.raises(ConfigError) as e:
        scenario.parse(d, "incast")
    assert e.value.key == "workload.size_bytes"
    assert "workload.size_byte is given: did you mean size_bytes?" in str(e.value)
    d = scenario.read("incast")[0]
    d["workload"].pop("size_bytes")
    with pytest.raises(ConfigError) as e:
        scenario.parse(d, "incast")
    assert str(e.value).endswith("missing")  # nothing close: nothing guessed


def test_no_help_text_shows_a_doubled_percent_sign(capsys):
    for path, _ in _walk(build_parser()):
        with pytest.raises(SystemExit):
            main([*path, "--help"])
        out = capsys.readouterr().out
        assert "%%" not in out, path
    with pytest.raises(SystemExit):
        main(["emu", "sweep", "--help"])
    assert "95 % confidence" in capsys.readouterr().out


def test_plurals():
    assert [plural(n, "cell") for n in (0, 1, 2, 1234)] == ["0 cells", "1 cell", "2 cells", "1,234 cells"]
    assert plural(1, "grid point") == "1 grid point" and plural(3, "switch", "switches") == "3 switches"


def test_fabric_show_lists_the_names(capsys):
    assert main(["fabric", "show", "mrc-2plane-64"]) == 0
    out = capsys.readouterr().out
    assert "host names     h0 .. h63" in out
    assert "T0: p0.t0.0 .. p0.t0.7, T1: p0.t1.0 .. p0.t1.7 on plane 0; pP.tT.I on plane P (0..1)" in out
    assert "p0.t0.0:down0 .. p0.t0.0:down7, p0.t0.0:up0 .. p0.t0.0:up7" in out
