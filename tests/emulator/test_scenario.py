"""Scenario files: schema, errors naming keys, --set overrides, the shipped library."""
from __future__ import annotations

import pytest

from mrc.emulator import scenario, scenarios
from mrc.errors import ConfigError
from tests.emulator.helpers import make


@pytest.mark.parametrize("patch,key", [
    ({"colour": "red"}, "colour"),
    ({"seed": -1}, "seed"),
    ({"duration_us": 0}, "duration_us"),
    ({"topology": {"preset": "nope"}}, "topology.preset"),
    ({"topology": {"kind": "fat-tree", "k": 5, "link_gbps": 100}}, "topology.k"),
    ({"switch": {"queue_bytes": -3}}, "switch.queue_bytes"),
    ({"switch": {"buffer": 3}}, "switch.buffer"),
    ({"switch": {"ecn_min_bytes": 500, "ecn_max_bytes": 100}}, "switch.ecn_max_bytes"),
    ({"switch": {"ecn": "yes"}}, "switch.ecn"),
    ({"switch": {"dscp": {"data": 99}}}, "switch.dscp.data"),
    ({"switch": {"route_detect_us": 10.0, "route_converge_us": 5.0}}, "switch.route_converge_us"),
    ({"transport": {"name": "tcp"}}, "transport.name"),
    ({"transport": {}}, "transport.name"),
    ({"workload": {"kind": "storm"}}, "workload.kind"),
    ({"workload": {"kind": "permutation"}}, "workload.size_bytes"),
    ({"workload": {"kind": "permutation", "size_bytes": 0}}, "workload.size_bytes"),
    ({"workload": {"kind": "permutation", "size_bytes": 10, "hosts": "3-1"}}, "workload.hosts"),
    ({"workload": {"kind": "permutation", "size_bytes": 10, "hosts": [0, 99]}}, "workload.hosts"),
    ({"workload": {"kind": "flows", "flows": [{"src": 0, "dst": 0, "size_bytes": 5}]}}, "workload.flows[0].dst"),
    ({"workload": {"kind": "flows", "flows": [{"src": 0, "dst": 1}]}}, "workload.flows[0].size_bytes"),
    ({"workload": {"kind": "cm", "file": "missing.cm"}}, "workload.file"),
    ({"workload": {"kind": "poisson", "load": 0.5}}, "workload.until_us"),
    ({"workload": {"kind": "allreduce-ring", "size_bytes": 10, "groups": 9}}, "workload.groups"),
    ({"failures": {"kind": "link-down"}}, "failures"),
    ({"metrics": {"ports": [10**9]}}, "metrics.ports"),
    ({"metrics": {"sample_us": -1}}, "metrics.sample_us"),
    ({"engine": {"pool_packets": 3}}, "engine.pool_packets"),
])
def test_errors_name_the_key(patch, key):
    data = make()
    data.update(patch)
    with pytest.raises(ConfigError) as exc:
        scenario.parse(data, "t")
    assert exc.value.key == key, str(exc.value)
    assert key in str(exc.value)


def test_defaults_come_from_fabric_and_transport():
    sc = scenario.parse(make(topology={"preset": "fattree-k8"}), "t")
    d = sc.topo.switch_defaults
    assert sc.switch.queue_bytes == d.queue_bytes and sc.switch.ecn_min_bytes == d.ecn_min_bytes
    assert sc.switch.pfc and sc.switch.ecn_last_hop and not sc.switch.trim  # roce-ecmp: lossless, DCQCN marks
    sc = scenario.parse(make(transport={"lossless": False}), "t")
    assert not sc.switch.pfc
    assert sc.seed == 1 and sc.duration_us is None and sc.end_us == scenario.DEFAULT_CAP_US


def test_set_overrides(tmp_path):
    data = make(workload=[{"kind": "permutation", "size_bytes": 10}, {"kind": "incast", "size_bytes": 5,
                                                                       "hosts": "8-15"}])
    data["workload"][0]["hosts"] = "0-7"
    scenario.apply_sets(data, ["switch.queue_bytes=123456", "workload.1.size_bytes=77", "seed=9",
                               "transport.lossless=false", "topology.link_delay_ns=[500, 1000]"])
    assert data["switch"]["queue_bytes"] == 123456 and data["workload"][1]["size_bytes"] == 77
    assert data["seed"] == 9 and data["transport"]["lossless"] is False
    sc = scenario.parse(data, "t")
    assert sc.switch.queue_bytes == 123456 and not sc.switch.pfc
    assert sc.topo.spec.link_delay_ns == (500, 1000)
    with pytest.raises(ConfigError):
        scenario.apply_sets(data, ["noequals"])
    with pytest.raises(ConfigError):
        scenario.apply_sets(data, ["workload.5.size_bytes=1"])


def test_load_file_name_and_seed(tmp_path):
    p = tmp_path / "my-run.toml"
    p.write_text('[topology]\npreset = "mrc-2plane-tiny"\n[transport]\nname = "roce-ecmp"\n'
                 '[workload]\nkind = "permutation"\nsize_bytes = 1000\n')
    sc = scenario.load(p, seed=5, sets=["switch.latency_ns=100"])
    assert sc.name == "my-run" and sc.seed == 5 and sc.switch.latency_ns == 100
    with pytest.raises(ConfigError) as exc:
        scenario.load(tmp_path / "nope.toml")
    assert exc.value.key == "scenario"
    p.write_text("[topology\n")
    with pytest.raises(ConfigError):
        scenario.load(p)


@pytest.mark.parametrize("name", [n for n in scenarios.names() if "131k" not in n])
def test_library_scenarios_parse(name):
    sc = scenario.load(name)
    assert sc.name == name.rsplit("/", 1)[-1] and sc.description  # results/<name>: the file's own name
    assert sc.jobs


def test_library_is_listed():
    names = scenarios.names()
    for n in ("fattree-k8-permutation", "fattree-k16-permutation", "leafspine-8192-permutation",
              "mrc-8plane-131k-permutation", "incast", "allreduce-ring", "poisson-websearch"):
        assert n in names
