"""Workloads: generators, htsim .cm files with triggers, CDFs, jobs on disjoint hosts."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.emulator import scenario, scenarios, sim
from mrc.emulator import state as ST
from mrc.emulator.workloads import cm as CM
from mrc.emulator.workloads.cdf import HADOOP, WEBSEARCH, SizeCDF
from mrc.errors import ConfigError
from tests.emulator.helpers import K4, make, run


def _flows(workload, topology=None, **kw):
    sc = scenario.parse(make(topology=topology, workload=workload, **kw), "t")
    return sim.Simulation(sc).flowset


def test_permutation_is_a_derangement():
    fs = _flows({"kind": "permutation", "size_bytes": 1000})
    f = fs.flows
    assert sorted(f["src"]) == list(range(16)) and sorted(f["dst"]) == list(range(16))
    assert not np.any(f["src"] == f["dst"])


def test_all_to_all_serial_rounds_chain_per_host():
    fs = _flows({"kind": "all-to-all", "size_bytes": 1000, "hosts": "0-3"})
    f = fs.flows
    assert len(f) == 12
    assert [(int(a), int(b)) for a, b in zip(f["src"][:4], f["dst"][:4])] == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert (f["start"][:4] == 0).all() and (f["start"][4:] == -1).all()
    assert len(fs.collectives) == 1 and len(fs.collectives[0].flows) == 12
    r, s, _ = run(make(workload={"kind": "all-to-all", "size_bytes": 20_000, "hosts": "0-3"}))
    fl = r.flows
    for k in range(4, 12):  # round r+1 of a host starts when its round r send is done
        assert fl["t_start"][k] == fl["t_send_done"][k - 4]
    assert s["cct_us"] is not None and s["cct_us"][0] > 0


def test_allreduce_ring_steps_wait_for_receive_and_send():
    r, s, _ = run(make(workload={"kind": "allreduce-ring", "size_bytes": 400_000, "hosts": "0-3"}))
    fl = r.flows
    n = 4
    assert len(fl) == 2 * (n - 1) * n
    assert (fl["size"] == 100_000).all()
    for step in range(1, 2 * (n - 1)):
        for i in range(n):
            cur = step * n + i
            own = (step - 1) * n + i
            pred = (step - 1) * n + (i - 1) % n
            assert fl["t_start"][cur] == max(fl["t_send_done"][own], fl["t_recv_done"][pred])
    assert s["cct_us"] == [pytest.approx((fl["t_recv_done"].max() - fl["t_start"].min()) / 1e6)]


def test_incast_with_victim_and_sender_list():
    fs = _flows({"kind": "incast", "size_bytes": 1000, "receiver": 2, "senders": [0, 5, 9],
                 "victim_src": 12, "victim_dst": 3, "victim_size_bytes": 5000})
    f = fs.flows
    assert list(f["src"]) == [0, 5, 9, 12] and list(f["dst"]) == [2, 2, 2, 3]
    assert list(f["coll"]) == [0, 0, 0, -1]
    fs = _flows({"kind": "incast", "size_bytes": 1000, "senders": 3})
    assert list(fs.flows["src"]) == [1, 2, 3]


def test_poisson_load_and_sizes():
    fs = _flows({"kind": "poisson", "cdf": "hadoop", "load": 0.4, "until_us": 20_000.0}, topology=K4)
    f = fs.flows
    cdf = SizeCDF(HADOOP)
    offered = f["size"].sum() * 8 / (16 * 100e9 * 20e-3)
    assert 0.3 < offered < 0.5
    assert f["size"].min() >= 1 and f["size"].max() <= 10_000_000
    assert (f["start"] < 20_000 * 10**6).all() and not np.any(f["src"] == f["dst"])
    assert np.all(np.diff(np.sort(f["start"])) >= 0)
    fs2 = _flows({"kind": "poisson", "cdf": "hadoop", "load": 0.4, "until_us": 20_000.0}, topology=K4)
    assert np.array_equal(fs2.flows, f)  # same seed, same flows
    assert abs(np.mean(cdf.sample(np.random.default_rng(1), 200_000)) - cdf.mean()) / cdf.mean() < 0.05


def test_cdf_validation_and_means():
    assert 1.5e6 < SizeCDF(WEBSEARCH).mean() < 1.8e6
    assert 1.0e5 < SizeCDF(HADOOP).mean() < 1.6e5
    with pytest.raises(ConfigError):
        SizeCDF([(0, 0.0), (10, 0.5), (5, 1.0)])
    with pytest.raises(ConfigError):
        SizeCDF([(0, 0.0), (10, 0.5)])
    with pytest.raises(ConfigError) as exc:
        scenario.parse(make(workload={"kind": "poisson", "cdf": "nope", "load": 0.5, "until_us": 10.0}), "t")
    assert exc.value.key == "workload.cdf"


def test_shipped_cm_files_parse():
    m = CM.load(scenarios.DIR / "allreduce_ring_128n_8x16_256KB.cm")
    assert m.nodes == 128 and len(m.connections) == 3968 and len(m.triggers) == 3840
    m = CM.load(scenarios.DIR / "incast_128.cm")  # no ids, plain start times
    assert len(m.connections) == 127 and {c.dst for c in m.connections} == {33}
    m = CM.load(scenarios.DIR / "perm_128n_128c_2MB.cm")
    assert sorted(c.src for c in m.connections) == list(range(128))


CM_TRIGGERS = """Nodes 16
Connections 6
Triggers 3
0->1 id 1 start 0 size 4000 send_done_trigger 1
2->3 id 2 start 0.5 size 8000 recv_done_trigger 3
4->5 id 3 trigger 1 size 4000 send_done_trigger 2
6->7 id 4 trigger 2 size 4000
8->9 id 5 trigger 2 size 4000 recv_done_trigger 3
10->11 id 6 trigger 3 size 4000
trigger id 1 oneshot
trigger id 2 multishot
trigger id 3 barrier count 2
"""


def test_cm_trigger_semantics(tmp_path):
    p = tmp_path / "t.cm"
    p.write_text(CM_TRIGGERS)
    r, s, _ = run(make(workload={"kind": "cm", "file": str(p)}))
    f = r.flows
    assert f["t_start"][1] == 500_000  # start in microseconds
    assert f["t_start"][2] == f["t_send_done"][0]  # oneshot
    assert f["t_start"][3] == f["t_send_done"][2]  # multishot: first activation starts its first flow
    assert f["t_start"][4] == -1 and f["status"][4] == ST.FLOW_PENDING  # ... the second never comes
    assert f["why"][4] == ST.WHY_NOT_STARTED
    assert f["t_start"][5] == -1  # barrier of 2: flow 5 never received, so flow 6 never starts
    assert s["flows"] == {"total": 6, "completed": 4}
    assert s["cct_us"] == [None]  # the file has triggers: one collective, not completed
    # barrier: both activations present
    p.write_text(CM_TRIGGERS.replace("trigger id 2 multishot", "trigger id 2 oneshot"))
    r, s, _ = run(make(workload={"kind": "cm", "file": str(p)}))
    f = r.flows
    assert f["t_start"][5] == max(f["t_recv_done"][1], f["t_recv_done"][4])
    assert s["flows"]["completed"] == 6 and s["cct_us"][0] is not None


@pytest.mark.parametrize("text,problem", [
    ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 10 colour 3\n", "unknown token"),
    ("Nodes 4\nConnections 2\n0->1 id 1 start 0 size 10\n", "Connections"),
    ("Nodes 4\n0->1 id 1 trigger 9 size 10\n", "not defined"),
    ("Nodes 4\n0->9 start 0 size 10\n", "node outside"),
    ("Nodes 4\n0->1 start 0 trigger 1 size 10\ntrigger id 1 oneshot\n", "both a start time and a trigger"),
    ("Nodes 4\n0->1 size 10\n", "no start time"),
    ("Nodes 4\n0->1 start 0\n", "size"),
    ("Nodes 4\n0->1 start 0 size 10\ntrigger id 1 barrier\n", "count"),
    ("Connections 1\n0->1 start 0 size 10\n", "Nodes"),
])
def test_cm_errors_name_line_and_problem(text, problem):
    with pytest.raises(ConfigError) as exc:
        CM.parse(text, "x.cm")
    assert problem in str(exc.value)
    assert str(exc.value.key).startswith("x.cm")


def test_jobs_on_disjoint_hosts():
    data = make(workload=[{"kind": "permutation", "size_bytes": 10_000, "hosts": "0-7"},
                          {"kind": "incast", "size_bytes": 10_000, "hosts": ["8-15"], "senders": 3}])
    r, s, _ = run(data)
    f = r.flows
    assert set(f["src"][f["job"] == 0]) | set(f["dst"][f["job"] == 0]) <= set(range(8))
    assert set(f["dst"][f["job"] == 1]) == {8}
    assert s["flows"]["completed"] == 11
    bad = make(workload=[{"kind": "permutation", "size_bytes": 1, "hosts": "0-7"},
                         {"kind": "permutation", "size_bytes": 1, "hosts": "7-9"}])
    with pytest.raises(ConfigError) as exc:
        sim.Simulation(scenario.parse(bad, "t"))
    assert exc.value.key == "workload[1].hosts"


def test_cm_job_maps_nodes_onto_its_hosts():
    fs = _flows({"kind": "cm", "file": "alltoall_serial_16n.cm", "hosts": "0-15"}, topology={"preset": "fattree-k8"})
    assert len(fs.flows) == 240 and fs.flows["src"].max() == 15
    with pytest.raises(ConfigError) as exc:
        _flows({"kind": "cm", "file": "perm_128n_128c_2MB.cm"})
    assert exc.value.key == "workload.file"


def test_triggers_in_bulk_are_each_flows_own_and_refuse_a_mismatch():
    from mrc.emulator.workloads import Builder

    b = Builder()
    trig = b.triggers("oneshot", 4, 1)
    ids = b.flows([0, 1, 2, 3], [1, 2, 3, 0], 4096, [0] * 4, 0, -1, [-1] * 4, [0] * 4, [-1] * 4)
    b.set_triggers_many(ids, send_trig=list(trig), recv_trig=int(trig[0]))
    assert b.cols["send_trig"][ids.start:ids.stop] == list(trig)
    assert b.cols["recv_trig"][ids.start:ids.stop] == [int(trig[0])] * 4
    with pytest.raises(ValueError, match="3 send_trig values for 4 flows"):
        b.set_triggers_many(ids, send_trig=list(trig)[:3])
    with pytest.raises(TypeError, match="range of flow ids"):
        b.set_triggers_many([0, 1], send_trig=int(trig[0]))
