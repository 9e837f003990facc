"""Switch ports: WRED ECN marking, trimming (TRIMMED vs TRIMMED_LASTHOP), drop-tail, PFC and its propagation."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.emulator import aqm, scenario, sim
from mrc.emulator import state as ST
from mrc.wire.constants import Trim
from tests.emulator.helpers import flow, make, run


def _engine(**switch):
    sc = scenario.parse(make(switch={"ecn_min_bytes": 10_000, "ecn_max_bytes": 50_000, "ecn_pmax": 1.0, **switch}),
                        "t")
    E = sim.Simulation(sc).E
    assert len(E.port) > 40 and len(E.pkt) > 0  # compiled code does not check bounds: stay inside
    return E


@pytest.mark.parametrize("qbytes,expect", [(5_000, 0.0), (10_000, 0.0), (20_000, 0.25), (40_000, 0.75),
                                           (50_000, 1.0), (90_000, 1.0)])
def test_wred_marking_probability(qbytes, expect):
    E = _engine()
    i = 0
    hits = 0
    n = 4000
    for _ in range(n):
        E.pkt[i]["ecn"] = ST.ECN_ECT0
        hits += aqm.ecn_mark(E, 40, i, qbytes)
    assert abs(hits / n - expect) < 0.035
    E.pkt[i]["ecn"] = ST.ECN_NOT_ECT
    assert aqm.ecn_mark(E, 40, i, 90_000) == 0  # not ECN-capable: never marked


def test_ecn_pmax_scales_probability():
    E = _engine(ecn_pmax=0.2)
    hits = 0
    for _ in range(4000):
        E.pkt[0]["ecn"] = ST.ECN_ECT0
        hits += aqm.ecn_mark(E, 40, 0, 30_000)
    assert abs(hits / 4000 - 0.1) < 0.025


def test_last_hop_marking_can_be_off():
    data = make(workload={"kind": "flows", "flows": [flow(h, 0, 200_000) for h in (4, 8, 12)]},
                switch={"ecn_last_hop": False, "ecn_min_bytes": 1000, "ecn_max_bytes": 5000})
    r, s, simu = run(data)
    topo = simu.sc.topo
    last = np.flatnonzero(topo.node["kind"][topo.port["node"][topo.port["peer"]]] == 0)
    assert r.port_stats["marks"][last].sum() == 0  # incast congestion sits on the last hop: no marks there
    data["switch"]["ecn_last_hop"] = True
    r2, s2, _ = run(data)
    assert r2.port_stats["marks"][last].sum() > 0


def _trim_events(r):
    tr = r.trace
    return tr[tr["kind"] == ST.TR_TRIM]


def test_trimming_at_last_hop_and_in_the_fabric():
    # one spine: a leaf's uplink is shared by all cross-leaf traffic (trims there are TRIMMED);
    # the incast receiver's downlink is the last hop (TRIMMED_LASTHOP)
    fab = {"kind": "leaf-spine", "hosts_per_leaf": 4, "leaves": 2, "spines": 1, "link_gbps": 100,
           "fabric_gbps": 100}
    flows = [flow(h, 4, 100_000) for h in (0, 1, 2, 3)] + [flow(5, 6, 100_000), flow(7, 6, 100_000)]
    data = make(topology=fab, workload={"kind": "flows", "flows": flows}, transport={"lossless": False,
                "trimmable": True}, switch={"trim": True, "queue_bytes": 20_000},
                metrics_={"trace_flows": list(range(6))})
    r, s, simu = run(data)
    sw = simu.sc.switch
    ev = _trim_events(r)
    assert len(ev) > 0 and s["counters"]["trims"] == len(ev)
    topo = simu.sc.topo
    to_host = topo.node["kind"][topo.port["node"][topo.port["peer"]]] == 0
    lasthop = to_host[ev["port"]]
    assert lasthop.any() and (~lasthop).any()
    assert np.all(ev["dscp"][lasthop] == sw.dscp.trimmed_lasthop)
    assert np.all(ev["trim"][lasthop] == Trim.TRIMMED_LASTHOP)
    assert np.all(ev["dscp"][~lasthop] == sw.dscp.trimmed)
    # trimmed to the transport's largest header stack: IPv6, UDP, BTH and the RETH of a WRITE FIRST, 76 B (the
    # leaf-spine's htsim default of 64 B would cut that RETH)
    assert sw.trim_header_bytes == 76 and np.all(ev["size"] == 76) and np.all(ev["cls"] == ST.CLS_CTRL)
    assert s["counters"]["rx_trimmed_discarded"] > 0  # RoCE cannot use a trimmed packet
    assert s["flows"]["completed"] == 6
    assert s["counters"]["drops_queue_full"] == 0  # data is trimmed, not dropped


def test_untrimmable_data_is_dropped_not_trimmed():
    flows = [flow(h, 0, 100_000) for h in range(4, 16)]
    data = make(workload={"kind": "flows", "flows": flows}, transport={"lossless": False},
                switch={"trim": True, "queue_bytes": 20_000})
    r, s, _ = run(data)
    assert s["counters"]["trims"] == 0 and s["counters"]["drops_queue_full"] > 0


def test_control_queue_has_priority_over_data():
    # a long flow and a reverse flow share links: ACKs are never stuck behind a full data queue
    flows = [flow(h, 0, 500_000) for h in range(4, 16)]
    r, s, simu = run(make(workload={"kind": "flows", "flows": flows}, transport={"lossless": False}))
    assert s["counters"]["drops_control_queue"] == 0
    assert r.port_stats["max_bytes1"].max() <= 20 * 80


def test_pfc_is_lossless_and_pauses_propagate():
    flows = [flow(h, 0, 400_000) for h in range(1, 16)]
    r, s, simu = run(make(workload={"kind": "flows", "flows": flows}))  # roce-ecmp default: lossless
    c = s["counters"]
    assert c["dropped_pkts"] == 0
    assert c["pfc_pauses"] > 0 and c["pfc_pauses"] == c["pfc_resumes"]
    topo = simu.sc.topo
    ps = r.port_stats
    tier = topo.node["tier"][topo.port["node"]]
    assert ps["pauses_sent"][tier == 0].sum() > 0  # the receiver's T0 pauses spines and local hosts
    assert ps["pauses_sent"][tier == 1].sum() > 0  # spines pause other leaves: propagation
    assert ps["paused_ps"][topo.node["kind"][topo.port["node"]] == 0].sum() > 0  # NICs were paused
    assert s["flows"]["completed"] == 15


def test_pfc_headroom_too_small_is_counted_not_hidden():
    flows = [flow(h, 0, 200_000) for h in range(1, 16)]
    r, s, _ = run(make(workload={"kind": "flows", "flows": flows},
                       switch={"pfc_xoff_bytes": 5000, "pfc_xon_bytes": 1000, "pfc_headroom_bytes": 0}))
    assert s["counters"]["drops_pfc_overflow"] > 0
