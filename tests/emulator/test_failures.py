"""Failures: link down/up, flap, gray loss, degraded rate, NIC port down, switch reboot; records of each."""
from __future__ import annotations

import pytest

from mrc.emulator import scenario
from mrc.emulator import state as ST
from mrc.errors import ConfigError
from tests.emulator.helpers import flow, make, run

LOSSY = {"lossless": False, "rto_us": 40.0}


def _perm(size=300_000):
    return {"kind": "permutation", "size_bytes": size}


def test_link_down_ecmp_steers_away_after_detection():
    data = make(workload=_perm(), transport=LOSSY, switch={"route_detect_us": 30.0, "route_converge_us": 60.0},
                failures=[{"kind": "link-down", "at_us": 10.0, "link": ["p0.t0.0", "p0.t1.0"]}],
                metrics_={"sample_us": 2.0})
    r, s, simu = run(data)
    f = s["failures"][0]
    assert f["kind"] == "link-down" and f["at_us"] == 10.0 and f["target"] == "p0.t0.0-p0.t1.0"
    assert s["counters"]["drops_link_down"] > 0
    # routing next to the link learns at 40 us; nothing is sent into it after that (plus one sample)
    assert f["steered_away_us"] is not None and 0 < f["steered_away_us"] <= 30.0 + 2.0
    assert s["flows"]["completed"] == 16
    assert s["bytes"]["sent"] == s["bytes"]["delivered"] + s["bytes"]["dropped"]


def test_link_down_then_up_carries_traffic_again():
    data = make(workload=_perm(600_000), transport=LOSSY, switch={"route_detect_us": 5.0, "route_converge_us": 5.0},
                failures=[{"kind": "link-down", "at_us": 10.0, "duration_us": 20.0, "link": ["p0.t0.0", "p0.t1.0"]}])
    r, s, simu = run(data)
    q = simu.sc.failures[0].ports[0]
    assert r.port_stats["watch_last"][q] > 40e6  # used again after it came back at 30 us (+ detection)
    assert s["flows"]["completed"] == 16


def test_flap_expands_to_periodic_actions_and_drops():
    data = make(workload=_perm(), transport=LOSSY,
                failures=[{"kind": "flap", "at_us": 5.0, "period_us": 20.0, "down_us": 5.0, "until_us": 100.0,
                           "link": ["p0.t0.1", "p0.t1.2"]}])
    sc = scenario.parse(data, "t")
    from mrc.emulator import sim
    s = sim.Simulation(sc)
    act = s.E.act
    downs = act[act["kind"] == ST.A_LINK_DOWN]
    ups = act[act["kind"] == ST.A_LINK_UP]
    assert list(downs["t"] // 10**6) == [5, 25, 45, 65, 85]
    assert list(ups["t"] // 10**6) == [10, 30, 50, 70, 90]
    r = s.run()
    assert r.counters["drops_link_down"] > 0
    assert (r.flows["status"] == ST.FLOW_DONE).all()


def test_gray_loss_rate():
    data = make(workload={"kind": "flows", "flows": [flow(0, 15, 4_000_000)]}, transport=LOSSY,
                failures=[{"kind": "gray-loss", "at_us": 0.0, "probability": 0.05, "link": ["h0", "p0.t0.0"]}])
    r, s, _ = run(data)
    c = s["counters"]
    sent_on_link = c["data_pkts"]  # every data packet crosses the NIC link once
    assert 0.035 < c["drops_gray"] / sent_on_link < 0.065
    assert c["retransmissions"] > 0 and c["naks"] > 0
    assert s["flows"]["completed"] == 1


def test_degrade_runs_link_at_a_quarter_rate():
    base, sb, _ = run(make(workload={"kind": "flows", "flows": [flow(0, 15, 2_000_000)]}))
    data = make(workload={"kind": "flows", "flows": [flow(0, 15, 2_000_000)]},
                failures=[{"kind": "degrade", "at_us": 0.0, "rate_fraction": 0.25, "link": ["h0", "p0.t0.0"]}])
    r, s, _ = run(data)
    ratio = (r.flows[0]["t_send_done"] - r.flows[0]["t_start"]) / (base.flows[0]["t_send_done"])
    assert 3.8 < ratio < 4.05


@pytest.mark.parametrize("scale", [True, False])
def test_degrade_scales_the_queue_and_ecn_thresholds_as_htsim_failed(scale):
    # htsim's -failed (fat_tree_topology.cpp) runs a failed link at a fraction of its speed with its
    # queue size and ECN thresholds scaled by the same ratio; scale_queue = false keeps the full queue
    wl = {"kind": "flows", "flows": [flow(4, 0, 1_000_000), flow(8, 0, 1_000_000), flow(12, 0, 1_000_000)]}
    down = int(scenario.parse(make(workload=wl), "t").topo.port["peer"].tolist().index(0))  # the T0 port to h0
    data = make(workload=wl, transport=LOSSY,
                failures=[{"kind": "degrade", "at_us": 0.0, "rate_fraction": 0.25, "port": down,
                           "scale_queue": scale}])
    r, s, simu = run(data)
    sc = simu.sc
    limit = sc.switch.queue_bytes
    assert simu.E.port[down]["qscale"] == (0.25 if scale else 1.0)
    peak = r.port_stats["max_bytes0"][down]
    if scale:
        assert limit * 0.25 - 5000 < peak <= limit * 0.25
    else:
        assert peak > limit * 0.5
    assert s["flows"]["completed"] == 3


def test_degrade_a_whole_switch():
    data = make(workload=_perm(), failures=[{"kind": "degrade", "at_us": 0.0, "rate_fraction": 0.25,
                                              "switch": "p0.t1.0"}])
    sc = scenario.parse(data, "t")
    assert len(sc.failures[0].ports) == 4
    r, s, _ = run(data)
    assert s["flows"]["completed"] == 16


def test_nic_port_down_fails_the_qp_and_reports_why():
    data = make(workload={"kind": "flows", "flows": [flow(0, 15, 200_000), flow(1, 14, 200_000)]},
                transport={"lossless": False, "rto_us": 20.0, "retry_cnt": 2},
                failures=[{"kind": "nic-port-down", "at_us": 5.0, "host": 0}])
    r, s, _ = run(data)
    assert r.flows[0]["status"] == ST.FLOW_FAILED and r.flows[0]["why"] == ST.WHY_RETRY_EXCEEDED
    assert r.flows[1]["status"] == ST.FLOW_DONE
    assert s["outcome"]["failed"] == 1
    assert s["outcome"]["reasons"] == {ST.WHY_NAMES[ST.WHY_RETRY_EXCEEDED]: 1}
    assert s["flows"] == {"total": 2, "completed": 1}


def test_switch_reboot_takes_all_links_down_for_a_while():
    data = make(workload=_perm(400_000), transport=LOSSY, switch={"route_detect_us": 10.0, "route_converge_us": 20.0},
                failures=[{"kind": "switch-reboot", "at_us": 10.0, "duration_us": 50.0, "switch": "p0.t1.1"}],
                metrics_={"sample_us": 5.0})
    r, s, simu = run(data)
    ports = simu.sc.failures[0].ports
    assert len(ports) == 4
    series = r.samples["failure0_packets"]
    t = r.samples["t_us"]
    assert series[(t > 25) & (t <= 60)].sum() == 0  # routing moved away while it rebooted
    assert s["flows"]["completed"] == 16


@pytest.mark.parametrize("entry,key", [
    ({"kind": "link-down", "at_us": 1.0, "link": ["h0", "h1"]}, "failures[0].link"),
    ({"kind": "link-down", "at_us": 1.0}, "failures[0].link"),
    ({"kind": "melt", "at_us": 1.0, "port": 3}, "failures[0].kind"),
    ({"kind": "gray-loss", "at_us": 1.0, "port": 3, "probability": 1.5}, "failures[0].probability"),
    ({"kind": "degrade", "at_us": 1.0, "port": 3}, "failures[0].rate_fraction"),
    ({"kind": "degrade", "at_us": 1.0, "port": 3, "rate_fraction": 0.5, "scale_queue": "yes"},
     "failures[0].scale_queue"),
    ({"kind": "flap", "at_us": 1.0, "port": 3, "period_us": 10.0, "down_us": 10.0}, "failures[0].down_us"),
    ({"kind": "switch-reboot", "at_us": 1.0, "switch": "h3", "duration_us": 5.0}, "failures[0].switch"),
    ({"kind": "nic-port-down", "at_us": 1.0, "host": 99}, "failures[0].host"),
    ({"kind": "link-down", "at_us": 1.0, "port": 3, "colour": "red"}, "failures[0].colour"),
])
def test_bad_failures_name_the_key(entry, key):
    with pytest.raises(ConfigError) as exc:
        scenario.parse(make(failures=[entry]), "t")
    assert exc.value.key == key
