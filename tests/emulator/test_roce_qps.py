"""roce-ecmp QP scaling (``qps = N``): N QP pairs per connection, a message split over them as NCCL splits it."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrc.emulator import scenario, sim
from mrc.emulator import state as ST
from mrc.emulator.transports import roce, roce_setup
from mrc.errors import ConfigError
from tests.emulator.helpers import flow, make, run

# two leaves of four hosts, four spines: flows from leaf 0 to leaf 1 choose among four uplinks
TWO_LEAVES = {"kind": "leaf-spine", "hosts_per_leaf": 4, "leaves": 2, "spines": 4, "link_gbps": 100}


@given(st.integers(0, 1 << 31), st.integers(1, 128))
@settings(max_examples=300, deadline=None)
def test_the_parts_add_up_to_the_message_in_ncclss_128_byte_chunks(size, n):
    parts = [roce.part_bytes(size, n, k) for k in range(n)]
    assert sum(parts) == size and min(parts) >= 0
    assert list(roce_setup.split_sizes(np.array([size]), n)[0]) == parts
    if n > 1:
        chunk = parts[0]
        assert chunk % 128 == 0 or chunk == size  # NCCL's chunks are multiples of 128 B
        nonzero = [p for p in parts if p]
        assert all(p == chunk for p in nonzero[:-1]) and nonzero == parts[:len(nonzero)]  # in QP order


def test_distinct_source_ports_within_each_connection():
    rng = np.random.default_rng(7)
    ports = roce_setup.distinct_ports(rng, 5000, 16).reshape(5000, 16)
    assert all(len(set(row)) == 16 for row in ports.tolist())
    assert ports.min() >= 49152 and ports.max() <= 65535
    one = roce_setup.distinct_ports(np.random.default_rng(3), 10, 1)
    assert (one == np.random.default_rng(3).integers(49152, 65536, 10)).all()  # qps = 1: the draws of before


def test_qps_is_checked():
    with pytest.raises(ConfigError, match="transport.qps"):
        scenario.parse(make(transport={"qps": 0}))
    with pytest.raises(ConfigError, match="transport.qps"):
        scenario.parse(make(transport={"qps": 129}))


def test_n_qps_are_n_five_tuples_and_the_bytes_add_up():
    size = 1_000_003
    r, s, simu = run(make(topology=TWO_LEAVES, transport={"qps": 8},
                          workload={"kind": "flows", "flows": [flow(0, 4, size), flow(1, 5, 3 * 128)]}))
    R = simu.T.roce
    assert len(R) == 2 * 2 * 8
    for f in range(2):
        lead = int(r.flows[f]["ep"])
        reqs = R[lead: lead + 16: 2]
        assert (reqs["grp"] == lead).all() and (reqs["nqp"] == 8).all() and (reqs["role"] == roce.ROLE_REQ).all()
        assert len(set(reqs["sport"].tolist())) == 8  # 8 distinct UDP source ports: 8 ECMP hashes
        assert (R[reqs["peer"]]["sport"] != 0).all()
        # every part delivered whole: the QPs' PSNs cover exactly the parts NCCL's split gives
        parts = roce_setup.split_sizes(np.array([int(r.flows[f]["size"])]), 8)[0]
        used = parts > 0
        assert (reqs["snd_una"][used] == reqs["n_pkts"][used]).all()
        assert (reqs["size"][used] == parts[used]).all()
        assert (reqs["n_pkts"][~used] == 0).all()  # a message of 384 B fills 3 of the 8 QPs; the others stay unused
    assert s["flows"]["completed"] == 2
    assert s["counters"]["goodput_bytes"] == size + 3 * 128


def test_the_message_completes_only_when_every_part_has_landed():
    """Two QPs on different uplinks; one uplink dies at once and routing never repairs it within the run: the
    other QP's part arrives, the flow does not complete (its QP errors after its retries and fails the flow)."""
    base = make(topology=TWO_LEAVES, transport={"qps": 2, "lossless": False, "rto_us": 20.0, "rto_max_us": 40.0,
                                                  "retry_cnt": 2},
                workload={"kind": "flows", "flows": [flow(0, 4, 400_000)]},
                switch={"route_detect_us": 100_000.0, "route_converge_us": 100_000.0}, seed=5)
    r, s, simu = run(base)
    assert s["flows"]["completed"] == 1
    topo = simu.sc.topo
    R = simu.T.roce
    ups = [int(topo.ecmp_route(0, 4, int(R[2 * k]["plane"]), int(R[2 * k]["sport"]), 0)[1]) for k in range(2)]
    assert ups[0] != ups[1], "the seed no longer puts the two QPs on different uplinks: choose another"
    dead = [topo.node_name(int(topo.port[ups[1]]["node"])), topo.node_name(topo.peer_node(ups[1]))]
    r2, s2, simu2 = run({**base, "failures": [{"kind": "link-down", "at_us": 0.0, "link": dead}]})
    R2 = simu2.T.roce
    part0 = roce.part_bytes(400_000, 2, 0)
    assert R2[0]["snd_una"] == R2[0]["n_pkts"]  # QP 0's part was delivered and acknowledged ...
    assert s2["counters"]["goodput_bytes"] == part0  # ... and only its bytes
    assert s2["flows"]["completed"] == 0 and r2.flows[0]["status"] == ST.FLOW_FAILED  # ... but the flow is not done
    assert s2["outcome"]["reasons"] == {"retry limit exceeded (QP error)": 1}
    assert r2.flows[0]["t_recv_done"] < 0


def test_colliding_flows_spread_over_the_uplinks_with_eight_qps():
    """Two flows from one leaf to the other whose single QPs hash onto the same uplink (seed chosen so): with
    qps = 1 they share it and take twice as long; with qps = 8 their 16 QPs use several uplinks."""
    flows = [flow(0, 4, 4_000_000), flow(1, 5, 4_000_000)]
    data = make(topology=TWO_LEAVES, workload={"kind": "flows", "flows": flows}, seed=SEED_COLLIDE)
    sc = scenario.parse(data)
    simu = sim.Simulation(sc)
    R = simu.T.roce
    ups = {int(sc.topo.ecmp_route(f["src"], f["dst"], int(R[2 * k]["plane"]), int(R[2 * k]["sport"]), 0)[1])
           for k, f in enumerate(flows)}
    assert len(ups) == 1, "the seed no longer makes the two flows collide: choose another SEED_COLLIDE"
    one, s1, sim1 = run(data)
    eight, s8, sim8 = run({**data, "transport": {"name": "roce-ecmp", "qps": 8}})
    leaf0 = sc.topo.parse_node("p0.t0.0")
    leaf0_up = [q for q in range(len(sc.topo.port)) if sc.topo.port[q]["node"] == leaf0 and sc.topo.port[q]["tier"] == 1]
    tx1 = np.array([sim1.E.port[q]["tx_bytes"] for q in leaf0_up])
    tx8 = np.array([sim8.E.port[q]["tx_bytes"] for q in leaf0_up])
    assert np.count_nonzero(tx1) == 1  # one uplink carries both flows
    assert np.count_nonzero(tx8) >= 3 and tx8.max() < 0.6 * tx8.sum()  # spread
    assert s8["fct_us"]["max"] < 0.75 * s1["fct_us"]["max"]
    assert s1["counters"]["goodput_bytes"] == s8["counters"]["goodput_bytes"] == 8_000_000


SEED_COLLIDE = 3
