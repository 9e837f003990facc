"""`mrc fabric presets | show | routes`."""
from __future__ import annotations

from mrc.cli import main
from mrc.fabric import PRESETS


def test_presets_one_line_each(capsys):
    assert main(["fabric", "presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(PRESETS)
    first = lines[0].split()
    assert first[:7] == ["mrc-8plane-131k", "131072", "hosts", "8", "plane(s)", "100G", "links"]
    assert any(line.startswith("leafspine-8192-400g") and " 400G " in line for line in lines)


def test_show(capsys, tmp_path):
    assert main(["fabric", "show", "fattree-k8"]) == 0
    out = capsys.readouterr().out
    assert "128 (4 per T0)" in out
    assert "32 T0, 32 T1, 16 T2 per plane" in out
    assert "same T0: 1, same pod: 4, different pod: 16" in out
    assert "bisection      6.4 Tb/s" in out
    assert "384 links" in out
    f = tmp_path / "t.toml"
    f.write_text('preset = "mrc-2plane-64"\noversubscription = 2\n')
    assert main(["fabric", "show", str(f)]) == 0
    out = capsys.readouterr().out
    assert "8 T0, 4 T1 per plane" in out and "2:1" in out and "different T0: 4" in out


def test_routes(capsys):
    assert main(["fabric", "routes", "mrc-2plane-tiny", "--switch", "p1.t0.0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("# p1.t0.0 (node 8, T0 switch, uSID 0x1000)")
    assert out[2].split() == ["5f00:1:1000::/48", "End", "-"]
    assert out[3].split() == ["5f00:1:8000::/48", "forward", "p1.t0.0:up0", "->", "p1.t1.0"]
    assert main(["fabric", "routes", "mrc-2plane-tiny", "--switch", "11", "--iproute2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all(line.startswith("ip -6 route add 5f00:1:") for line in lines)


def test_errors_exit_2(capsys):
    assert main(["fabric", "show", "nope"]) == 2
    assert "neither a preset" in capsys.readouterr().err
    assert main(["fabric", "routes", "fattree-k8", "--switch", "p0.t3.0"]) == 2
    assert "node = 'p0.t3.0'" in capsys.readouterr().err
