"""Hashed-entropy spraying (``entropy = "hashed"``): the EV rides in the UDP source port and flow label and every
switch hashes it with its own seed (ECMP per hop), as htsim's oblivious ``-paths N`` and MRC's ECMP EV mode."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from mrc.emulator import scenario
from mrc.emulator import state as ST
from mrc.errors import ConfigError
from mrc.fabric import build
from mrc.fabric.ecmp import ecmp_pick
from tests.emulator.helpers import K4, SMALL_LS, flow, make, run

K8 = {"kind": "fat-tree", "k": 8, "link_gbps": 100}


def _route(topo, src, dst, plane, ev):
    return tuple(int(q) for q in topo.ecmp_route(src, dst, plane, (ev >> 16) & 0xFFFF, ev & 0xFFFF))


def test_an_entropy_takes_the_same_path_at_every_switch_for_a_seed_and_seeds_differ():
    rng = np.random.default_rng(1)
    evs = rng.integers(0, 1 << 32, 200)
    a, b, c = build(K8, ecmp_seed=5), build(K8, ecmp_seed=5), build(K8, ecmp_seed=6)
    same = [_route(a, 0, 127, 0, int(e)) == _route(b, 0, 127, 0, int(e)) for e in evs]
    assert all(same)
    assert all(len(_route(a, 0, 127, 0, int(e))) == 6 for e in evs)  # host, T0, T1, T2, T1, T0: shortest paths
    differ = sum(_route(a, 0, 127, 0, int(e)) != _route(c, 0, 127, 0, int(e)) for e in evs)
    assert differ > 150  # 16 paths: another seed moves about 15/16 of the entropies
    # the switches choose independently: the T1 choice does not follow from the T0 choice
    pairs = {(_route(a, 0, 127, 0, int(e))[1], _route(a, 0, 127, 0, int(e))[2]) for e in evs}
    assert len(pairs) == 16


def test_the_uplink_choice_is_uniform_over_many_entropies():
    topo = build({"kind": "leaf-spine", "hosts_per_leaf": 8, "leaves": 2, "spines": 8, "link_gbps": 100}, ecmp_seed=3)
    F = topo.arrays
    n, k = 80_000, 8
    evs = np.random.default_rng(2).integers(0, 1 << 32, n)
    counts = np.bincount([ecmp_pick(F, topo.parse_node("p0.t0.0"), 0, 8, 0, int(e) >> 16, int(e) & 0xFFFF, 17, k)
                          for e in evs], minlength=k)
    chi2 = float(((counts - n / k) ** 2 / (n / k)).sum())
    assert chi2 < 24.3  # chi-square, 7 degrees of freedom: p = 0.001
    assert np.abs(counts / (n / k) - 1).max() < 0.03


def test_parameters_are_checked():
    with pytest.raises(ConfigError, match="transport.paths"):
        scenario.parse(make(transport={"name": "spray", "paths": 64}, switch={"pfc": False}))
    with pytest.raises(ConfigError, match="transport.entropy"):
        scenario.parse(make(transport={"name": "ar", "entropy": "hashed"}))
    with pytest.raises(ConfigError, match="transport.entropy"):
        scenario.parse(make(transport={"name": "mrc-1ev", "entropy": "hashed"}))
    with pytest.raises(ConfigError, match="transport.ev_count"):
        scenario.parse(make(transport={"name": "spray", "entropy": "hashed", "ev_count": 16}))
    with pytest.raises(ConfigError, match="transport.entropy"):
        scenario.parse(make(transport={"name": "spray", "entropy": "ecmp"}))


def test_every_packet_follows_the_switches_hashes_of_its_entropy(tmp_path):
    """A hashed-spray flow on the k=4 fat-tree, traced: each data packet leaves exactly the ports the switches'
    hashes of its EV give (no source route), and the QP uses its `paths` entropies, all different."""
    from mrc.emulator import results

    data = make(topology=K4, transport={"name": "spray", "entropy": "hashed", "paths": 32},
                workload={"kind": "flows", "flows": [flow(0, 15, 400_000)]}, metrics_={"trace_flows": [0]})
    r, s, simu = run(data)
    assert s["flows"]["completed"] == 1
    topo = simu.sc.topo
    T = simu.T
    assert T.mrc_p[0]["fwd"] == ST.FWD_ECMP
    q = T.core.qp[0]
    evs = T.core.ev[int(q["ev_row"])][: int(q["n_ev"])]
    assert int(q["n_ev"]) == 32 and len(set(evs["ev"].tolist())) == 32
    results.write(r, tmp_path, plots_too=False)
    with open(tmp_path / "trace.csv", newline="") as fh:
        rows = [x for x in csv.DictReader(fh) if x["event"] == "depart" and int(x["cls"]) == ST.CLS_DATA]
    by_ev: dict[int, list] = {}
    for x in rows:  # data packets of the flow, in order of departure: each EV's packets' ports
        by_ev.setdefault(int(x["ev"]), []).append(int(x["port"]))
    seen = 0
    mine = set(evs["ev"].tolist())  # the requester's (the responder's reverse probes are data-class too)
    for ev, ports in by_ev.items():
        if ev not in mine:
            continue
        path = _route(topo, 0, 15, 0, ev)
        assert set(ports) <= set(path), f"EV {ev:#x} left ports off its hashed path"
        seen += 1
    assert seen >= 16
    assert s["localization"] is None  # no EV -> path map for the controller's localiser: off


def test_one_hashed_entropy_per_qp_is_ecmp():
    """``paths = 1``: one entropy per QP, hashed at each switch: htsim's ECMP row (oblivious -paths 1)."""
    r, s, simu = run(make(topology=SMALL_LS, transport={"name": "spray", "entropy": "hashed", "paths": 1},
                          workload={"kind": "permutation", "size_bytes": 200_000}))
    assert s["flows"]["completed"] == 16
    n_ev = simu.T.core.qp["n_ev"][: 2 * 16]
    assert (n_ev == 1).all()
