"""Fault localisation live in the emulator: the controller names the failed element from the EV events,
with the time it took; congestion alone blames nothing; `mrc emu localize DIR` redoes it offline."""
from __future__ import annotations

import json

import pytest

from mrc.emulator import localize_dir, results
from mrc.errors import ConfigError
from tests.emulator.helpers import make, run

FABRIC = {"kind": "leaf-spine", "hosts_per_leaf": 4, "leaves": 8, "spines": 8, "planes": 2, "link_gbps": 100}


def _perm(failures, **top):
    return make(topology=FABRIC, transport={"name": "mrc"},
                workload={"kind": "permutation", "size_bytes": 4_000_000}, failures=failures, **top)


@pytest.fixture(scope="module")
def link_down(tmp_path_factory):
    out = tmp_path_factory.mktemp("loc")
    r, s, _ = run(_perm([{"kind": "link-down", "at_us": 40, "link": ["p0.t0.2", "p0.t1.5"]}]))
    results.write(r, out, plots_too=False)
    return r, s, out


def test_link_down_is_localised_live_within_a_millisecond(link_down):
    r, s, out = link_down
    loc = s["localization"]
    assert [x["element"] for x in loc["suspects"] if x["verdict"] != "congestion"] == ["p0.t0.2-p0.t1.5"]
    f = loc["failures"][0]
    assert f["element"] == "p0.t0.2-p0.t1.5" and 0 < f["time_to_localise_us"] < 1000
    rec = json.loads((out / "localization.json").read_text())
    assert rec["live"] and rec["verdict"]["suspects"][0]["evidence"]
    assert (out / "ev_paths.csv").is_file()


def test_offline_localisation_agrees_and_the_cli_prints_it(link_down, capsys):
    from mrc.cli import main

    r, s, out = link_down
    rec = localize_dir.from_dir(out)
    assert rec["failures"][0]["element"] == s["localization"]["failures"][0]["element"]
    assert rec["failures"][0]["named_at_us"] == pytest.approx(s["localization"]["failures"][0]["named_at_us"])
    assert main(["emu", "localize", str(out)]) == 0
    text = capsys.readouterr().out
    assert "p0.t0.2-p0.t1.5" in text and "localised to" in text
    assert main(["emu", "localize", str(out / "nowhere")]) == 2


def test_switch_reboot_names_the_switch():
    r, s, _ = run(_perm([{"kind": "switch-reboot", "at_us": 40, "switch": "p1.t1.3", "duration_us": 300}]))
    f = s["localization"]["failures"][0]
    assert f["element"] == "p1.t1.3" and f["time_to_localise_us"] < 1000


@pytest.mark.xfail(strict=True, reason=(
    "issue 33: since trimmed MRC packets keep their 128 B of headers (issue 31), this incast's receiver NIC port "
    "loses 33 of 4,369 packets (0.755 %, 39 % marked) where 1,324 comparable packets lost none: 19.99x the "
    "comparable rate floored at 0.5 loss, against burst_loss_ratio 20, so the port reads `down`; the floor (half a "
    "loss) is too low a bound on a rate never seen, and changing it moves the localiser's evaluation matrix"))
def test_incast_alone_blames_nothing():
    wl = [{"kind": "permutation", "size_bytes": 4_000_000, "hosts": list(range(16))},
          {"kind": "incast", "receiver": 0, "senders": 15, "size_bytes": 1_000_000, "hosts": list(range(16, 32))}]
    r, s, _ = run(make(topology=FABRIC, transport={"name": "mrc"}, workload=wl))
    assert not [x for x in s["localization"]["suspects"] if x["verdict"] != "congestion"]


def test_localize_keys_are_checked():
    from mrc.emulator import scenario

    with pytest.raises(ConfigError) as e:
        scenario.parse(_perm([], localize={"min_pairs": 0}))
    assert e.value.key == "localize.min_pairs"
    with pytest.raises(ConfigError) as e:
        scenario.parse(_perm([], localize={"nonsense": 1}))
    assert e.value.key == "localize.nonsense"
    sc = scenario.parse(_perm([], localize={"enabled": False}))
    assert not sc.localize.enabled


def test_from_dir_refuses_what_is_not_an_mrc_run(tmp_path):
    r, _, _ = run(make())
    results.write(r, tmp_path, plots_too=False)
    with pytest.raises(ConfigError) as e:
        localize_dir.from_dir(tmp_path)
    assert "ev_events.csv" in str(e.value)
    (tmp_path / "ev_events.csv").write_text("t_us,qp,flow,role,host,ev,plane,state,drop_count\n1,999,0,x,0,0,0,ASSUMED_BAD,0\n")
    with pytest.raises(ConfigError) as e:
        localize_dir.from_dir(tmp_path)
    assert "QP" in str(e.value)
