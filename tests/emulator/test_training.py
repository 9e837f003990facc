"""Training and trace jobs on a 64-host 4-plane fabric: dependencies, stragglers, waste, determinism, bad input."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from mrc.emulator import results, scenario, training_metrics
from mrc.emulator.workloads import collectives as CO
from mrc.emulator.workloads import trace as TR
from mrc.emulator.workloads import training as TRN
from mrc.errors import ConfigError
from mrc.units import US

from .helpers import make, run

# 64 hosts: 8 T0 x 8 T1 per plane (no oversubscription), 4 planes (400 Gb/s per host), 725 ns per link (the MRC
# presets' delay)
F4 = {"kind": "leaf-spine", "planes": 4, "hosts_per_leaf": 8, "leaves": 8, "spines": 8, "link_gbps": 100,
      "link_delay_ns": 725}
DP = {"kind": "training", "iterations": 3, "compute_us": 20.0, "tp": 8, "dp_bytes": 1_000_000,
      "rank_order": "tp,dp,ep,pp", "placement": "contiguous"}


def job_of(data, transport="mrc"):
    r, s, sim = run(make(topology=F4, transport={"name": transport}, workload=data))
    return r, s, sim


def iter_times(s):
    return [x["time_us"] for x in s["training"][0]["iterations"]]


def test_iteration_is_compute_plus_the_collective_alone():
    """On an idle fabric an iteration lasts its compute plus the collective's time alone (within 2 %: after the
    first iteration the members start a little apart, as their last steps arrived at different times), and the
    collective alone is within its bandwidth bound plus one round trip per ring step. Iteration k is compared
    with the collective's k-th run alone: the connections are reused, so their QPs' state (NSCC's window) is
    the same history's."""
    _, alone, _ = job_of({**DP, "compute_us": 0.0})
    _, s, _ = job_of(DP)
    for t, coll in zip(iter_times(s), iter_times(alone), strict=True):
        assert t == pytest.approx(20.0 + coll, rel=0.02)
    tr = s["training"][0]
    ideal = tr["iterations"][0]["ideal_us"]
    assert ideal == pytest.approx(20.0 + 2 * 7 / 8 * 1_000_000 * 8 / 400e3, rel=1e-3)
    steps = 2 * 7
    # a step's round trip: four links each way, each with its delay and the store and forward of a 4 KB packet
    # at 100 Gb/s, plus 1 us for the ACK and the new QP's first window
    rtt_us = 2 * 4 * (0.725 + 4096 * 8 / 100e3) + 1
    assert ideal <= tr["iterations"][0]["time_us"] <= ideal + steps * rtt_us
    assert tr["finished"] and tr["waste"] is None


def test_straggler_delays_exactly_its_groups():
    """A straggler delays its own data-parallel group's hosts and no one else's. The groups fill one T0 each
    (dp varies fastest, contiguous placement), so they share no link and the others' times are unchanged to
    the picosecond; groups sharing links would also feel the straggler's group communicating at other times."""
    base = {**DP, "iterations": 2, "rank_order": "dp,tp,ep,pp"}
    _, s0, sim0 = job_of(base)
    _, s1, sim1 = job_of({**base, "stragglers": [5], "straggler_slowdown": 3.0})
    jg = sim1.flowset.jobs[0]
    e0 = training_metrics.host_ends(jg, sim0.E.trig["t_fired"], 0)
    e1 = training_metrics.host_ends(jg, sim1.E.trig["t_fired"], 0)
    mine = next(g for g in TRN.groups_of(sim1.sc.jobs[0].params, 64, "dp") if 5 in g)
    assert sorted(mine) == list(range(8))
    assert sorted(np.flatnonzero(e1[:, -1] != e0[:, -1])) == sorted(mine)
    # the straggler computes 40 us more in each of 2 iterations; its group waits for it at least one iteration's worth
    # (the rest overlaps with the ring's own waiting)
    assert e1[5, -1] - e0[5, -1] >= 2 * 40 * US
    assert (e1[mine, -1] - e0[mine, -1]).min() >= 40 * US
    assert s1["training"][0]["stragglers"] == [5]
    assert s1["training"][0]["slowest_group"]["group"] == "dp0"


def test_compute_waits_for_inputs():
    """No flow of iteration k + 1 starts before its host's inputs of iteration k arrived, plus the compute."""
    r, s, sim = job_of({**DP, "jitter": 0.3})
    jg = sim.flowset.jobs[0]
    tf = sim.E.trig["t_fired"]
    fl = r.flows
    host_rank = {int(h): i for i, h in enumerate(jg.hosts)}
    for k in range(1, 3):
        for i in range(64):
            t_in = tf[jg.ready[i, k]]
            assert t_in > 0
            first = fl[(fl["src"] == jg.hosts[i]) & (fl["trigger"] == jg.ready[i, k])]
            assert len(first) and np.all(first["t_start"] == t_in + jg.compute_ps[i, k])
    assert host_rank


def gray(link, p=0.05):
    return [{"kind": "gray-loss", "at_us": 0, "link": link, "probability": p}]


def test_waste_zero_off_path_positive_on_path(tmp_path):
    """GPU time wasted against the failure-free twin: zero for a link down where no flow goes (an uplink of a
    T0 with no host of the job), positive for a gray link the job's traffic crosses; the baseline read from a
    results directory gives the same figures."""
    wl = {**DP, "iterations": 2}
    hosts = list(range(48))  # T0s 0-5; T0 7 carries nothing
    wl_h = {**wl, "hosts": hosts, "tp": 8}
    base = make(topology=F4, transport={"name": "mrc"}, workload=wl_h)
    off = copy.deepcopy(base)
    off["failures"] = [{"kind": "link-down", "at_us": 5, "link": ["p0.t0.7", "p0.t1.0"]}]
    _, s_off, _ = run(off)
    w = s_off["training"][0]["waste"]
    assert w["gpu_seconds_wasted"] == 0 and w["hosts_delayed"] == 0
    on = copy.deepcopy(base)
    on["failures"] = gray(["p0.t0.0", "p0.t1.0"], 0.2)
    _, s_on, _ = run(on)
    w = s_on["training"][0]["waste"]
    assert w["gpu_seconds_wasted"] > 0 and w["hosts_delayed"] > 0
    assert w["job_slowdown"] > 1.0
    assert w["comm_share_of_waste"] == pytest.approx(1.0)  # compute is the seed's: all the loss is communication
    # the same baseline read from the failure-free run's results directory
    r_base, _, _ = run(base)
    results.write(r_base, tmp_path / "healthy", plots_too=False)
    on["metrics"] = {"baseline": str(tmp_path / "healthy")}
    _, s_dir, _ = run(on)
    w2 = s_dir["training"][0]["waste"]
    assert w2["gpu_seconds_wasted"] == pytest.approx(w["gpu_seconds_wasted"], rel=1e-6)
    assert w2["job_slowdown"] == pytest.approx(w["job_slowdown"], rel=1e-6)
    on["metrics"] = {"baseline": str(tmp_path / "nowhere")}
    with pytest.raises(ConfigError, match="metrics.baseline"):
        run(on)


def test_same_seed_same_numbers():
    wl = {**DP, "jitter": 0.2, "stragglers": 2, "placement": "random", "iterations": 2}
    _, a, _ = job_of(wl)
    _, b, _ = job_of(wl)
    assert a["training"] == b["training"]
    _, c, _ = run(make(topology=F4, transport={"name": "mrc"}, workload=wl, seed=7))
    assert c["training"][0]["stragglers"] != a["training"][0]["stragglers"] or iter_times(c) != iter_times(a)


def test_every_job_shape_completes():
    """tp, ep, pp and dp groups together (hierarchical all-reduce, two channels, fused steps) on roce-ecmp."""
    wl = {"kind": "training", "iterations": 2, "compute_us": 5.0, "tp": 2, "ep": 2, "pp": 2, "dp": 8,
          "dp_bytes": 200_000, "tp_bytes": 50_000, "ep_bytes": 80_000, "pp_bytes": 30_000, "channels": 2,
          "dp_algorithm": "hierarchical", "dp_local": 4, "steps_per_flow": 2, "placement": "rail"}
    r, s, sim = job_of(wl, "roce-ecmp")
    tr = s["training"][0]
    assert tr["finished"] and s["outcome"]["unfinished"] == 0
    kinds = {g.kind for g in sim.flowset.jobs[0].groups}
    assert kinds == {"dp", "tp", "ep", "pp"}
    assert tr["slowest_group"]["kind"] in kinds
    for it in tr["iterations"]:
        assert it["time_us"] >= it["ideal_us"]


def test_ring_schedule_moves_the_ring_bytes():
    m, S = 8, 1_000_000
    steps = CO.ring_schedule(m, S, 1, 1 << 30, "ring", 1)
    assert len(steps) == 2 * (m - 1) and sum(nb for _, nb in steps) == pytest.approx(2 * (m - 1) / m * S, abs=2 * m)
    # chunked: 2 MiB chunks of a 64 MB buffer over 8 members -> 4 loops of 14 steps
    assert len(CO.ring_schedule(m, 64 << 20, 1, 2 << 20, "ring", 1)) == 4 * 14
    h = CO.ring_schedule(16, S, 1, 1 << 30, "hierarchical", 4)
    assert len(h) == 3 + 2 * 3 + 3  # reduce-scatter in 4, all-reduce across 4 groups, all-gather in 4


def test_trace_replays_with_dependencies():
    r, s, sim = run(scenario.load("training-trace").data, "trace")
    tr = s["training"][0]
    assert tr["finished"] and tr["kind"] == "trace"
    colls = {c["name"]: c for c in s["collectives"]}
    done = {k.split(".")[1]: v for k, v in colls.items()}
    fl = r.flows
    t_end = {}
    for name, c in done.items():
        t_end[name] = c["start_us"] + c["cct_us"]
    a2a = fl[[f for f in range(len(fl)) if fl["coll"][f] == 2]]
    assert a2a["t_start"].min() / US >= max(t_end["op1"], t_end["op2"]) + 10 - 1e-6
    assert tr["job_time_us"] >= tr["ideal_time_us"]


@pytest.mark.parametrize("key,value,match", [
    ("tp", 3, "tp"), ("dp", 5, "dp"), ("rank_order", "tp,dp", "rank_order"), ("dp_bytes", -1, "dp_bytes"),
    ("stragglers", [99], "stragglers"), ("jitter", 1.5, "jitter"), ("placement", "diagonal", "placement"),
    ("channels", 0, "channels"), ("dp_algorithm", "tree", "dp_algorithm"), ("iterations", 0, "iterations"),
    ("straggler_slowdown", 0.5, "straggler_slowdown"), ("compute_us", "fast", "compute_us"),
    ("dp_local", 3, "dp_local"), ("surprise", 1, "surprise"),
])
def test_bad_training_keys_name_the_key(key, value, match):
    with pytest.raises(ConfigError, match=match):
        scenario.parse(make(topology=F4, workload={**DP, key: value}))


def test_nothing_to_communicate_is_an_error():
    with pytest.raises(ConfigError, match="communicates nothing"):
        scenario.parse(make(topology=F4, workload={**DP, "dp_bytes": 0}))


@pytest.mark.parametrize("text,match", [
    ("group a 0 1\n", "hosts N"),
    ("hosts 4\nop 1 allreduce group nope bytes 10\n", "no such group"),
    ("hosts 4\nop 1 allreduce group all bytes 10\nop 1 alltoall group all bytes 10\n", "unique"),
    ("hosts 4\nop 1 allreduce group all bytes 10 after 2\n", "not defined above"),
    ("hosts 4\nop 1 send src 0 dst 0 bytes 10\n", "src and dst"),
    ("hosts 4\nop 1 send src 0 dst 9 bytes 10\n", "outside"),
    ("hosts 4\nop 1 broadcast group all bytes 10\n", "op kind"),
    ("hosts 4\nop 1 allreduce group all\n", "bytes"),
    ("hosts 4\nop 1 allreduce group all bytes 10 compute_us -1\n", ">= 0"),
    ("hosts 4\ngroup g 0 0\n", "none twice"),
    ("hosts 4\nfrobnicate\n", "unknown statement"),
])
def test_bad_traces_name_line_and_token(text, match):
    with pytest.raises(ConfigError, match=match) as e:
        TR.parse(text, "bad.trace")
    assert "bad.trace:" in str(e.value) or "bad.trace" in str(e.value)
