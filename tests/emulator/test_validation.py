"""The engine against first principles and against `mrc.fabric` (the issue's validation tests)."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.emulator import events as EVT
from mrc.emulator import scenario
from mrc.emulator import state as ST
from mrc.emulator.transports import roce
from mrc.units import serialization_ps
from tests.emulator.helpers import K4, SMALL_LS, flow, make, run


def _one_way(topo, ports, nbytes):
    return sum(serialization_ps(nbytes, int(topo.port[q]["rate"])) + int(topo.port[q]["delay"]) for q in ports)


@pytest.mark.parametrize("fabric", [SMALL_LS, K4])
def test_base_rtt_is_serialisation_plus_propagation_exactly(fabric):
    r, s, sim = run(make(topology=fabric, workload={"kind": "flows", "flows": [flow(0, 15, 1000)]}))
    topo = sim.sc.topo
    R = sim.T.roce
    req, resp = 0, 1
    fwd = topo.ecmp_route(0, 15, int(R[req]["plane"]), int(R[req]["sport"]), 0)
    rev = topo.ecmp_route(15, 0, int(R[resp]["plane"]), int(R[resp]["sport"]), 0)
    data = roce.HDR_BYTES + roce.RETH_BYTES + 1000
    expect = _one_way(topo, fwd, data) + _one_way(topo, rev, roce.ACK_BYTES)
    fl = r.flows[0]
    assert fl["t_send_done"] - fl["t_start"] == expect
    assert fl["t_recv_done"] - fl["t_start"] == _one_way(topo, fwd, data)
    assert fl["alone"] == expect  # the transport's own FCT alone on its path, exactly


@pytest.mark.parametrize("size", [1, 4096, 4097, 12_345, 1_000_000])
def test_lone_flow_takes_its_fct_alone(size):
    r, s, _ = run(make(topology=K4, workload={"kind": "flows", "flows": [flow(1, 14, size)]}))
    fct = r.flows[0]["t_send_done"] - r.flows[0]["t_start"]
    if size <= 4096:  # one packet: exact
        assert fct == r.flows[0]["alone"]
    # otherwise ACKs may queue behind each other by a fraction of a nanosecond per hop
    assert 0 <= fct - r.flows[0]["alone"] <= 6 * serialization_ps(roce.ACK_BYTES, 100_000_000_000)
    # the slowdown's yardstick is the fabric's best, below what any transport can do
    assert s["slowdown"]["max"] == pytest.approx(fct / r.flows[0]["ideal"]) and s["slowdown"]["max"] > 1.0


def _fabric_best(topo, src, dst, size, mtu, lat_ps=0):
    """The ideal FCT of `emulator.ideal`, written out: payload over all NIC ports, the quickest plane's base RTT."""
    rtts, r_src, r_dst = [], 0, 0
    for p in range(topo.n_planes):
        ports = topo.route(src, dst, topo.make_ev(p, *([0] * (len(topo.ev_format.fields) - 1))))
        r_src += int(topo.port[ports[0]]["rate"])
        r_dst += int(topo.port[ports[-1]]["rate"])
        rtts.append(sum(2 * int(topo.port[q]["delay"]) for q in ports) + 2 * lat_ps * (len(ports) - 1)
                    + sum(serialization_ps(min(size, mtu), int(topo.port[q]["rate"])) for q in ports[1:]))
    return serialization_ps(size, min(r_src, r_dst)) + min(rtts)


@pytest.mark.parametrize("transport", ["roce-ecmp", "mrc"])
@pytest.mark.parametrize("size", [1, 5000, 1_000_000])
def test_the_ideal_fct_is_the_fabrics_best_and_the_same_for_every_transport(transport, size):
    two_planes = {**SMALL_LS, "planes": 2}
    r, s, sim = run(make(topology=two_planes, transport={"name": transport}, switch={"latency_ns": 300},
                         workload={"kind": "flows", "flows": [flow(0, 15, size)]}))
    expect = _fabric_best(sim.sc.topo, 0, 15, size, sim.sc.switch.mtu_bytes, 300_000)
    assert r.flows[0]["ideal"] == expect
    fct = r.flows[0]["t_send_done"] - r.flows[0]["t_start"]
    assert fct >= expect and s["slowdown"]["max"] == pytest.approx(fct / expect) and s["slowdown"]["max"] >= 1.0
    if transport == "roce-ecmp" and size == 1_000_000:  # one plane of two: its 80 us of data against 40 + the RTT
        assert 1.75 < s["slowdown"]["max"] < 2.0
    if transport == "mrc" and size == 1_000_000:  # both planes: headers, ACKs and its window's ramp only
        assert s["slowdown"]["max"] < 1.2


def test_the_ideal_fct_of_many_flows_with_repeats_is_each_flows_own():
    # `fabric_best` computes each distinct (src, dst, size) once and hands it to every flow that repeats it
    from mrc.emulator.ideal import fabric_best

    topo = scenario.parse(make(topology={**SMALL_LS, "planes": 2}), "test").topo
    rng = np.random.default_rng(7)
    n = 200
    flows = np.zeros(n, ST.FLOW)
    flows["src"] = rng.integers(0, 8, n)
    flows["dst"] = (flows["src"] + rng.integers(1, topo.n_hosts, n)) % topo.n_hosts
    flows["size"] = rng.choice([1, 4096, 5000, 1_000_000], n)
    got = fabric_best(topo, flows, 4096, 300_000)
    assert len(np.unique(flows[["src", "dst", "size"]])) < n  # repeats in the set
    for f in range(n):
        assert got[f] == _fabric_best(topo, int(flows["src"][f]), int(flows["dst"][f]), int(flows["size"][f]), 4096,
                                      300_000), f


def test_one_flow_reaches_line_rate_less_headers():
    size = 20_000_000
    r1, _, _ = run(make(workload={"kind": "flows", "flows": [flow(0, 15, 4096)]}))
    rtt = r1.flows[0]["t_send_done"] - r1.flows[0]["t_start"]
    r, s, _ = run(make(workload={"kind": "flows", "flows": [flow(0, 15, size)]}))
    fct = r.flows[0]["t_send_done"] - r.flows[0]["t_start"]
    goodput = size * 8 / ((fct - rtt) / 1e12)
    expect = 100e9 * 4096 / (4096 + roce.HDR_BYTES)
    assert abs(goodput - expect) / expect < 0.01
    assert s["counters"]["retransmissions"] == 0 and s["counters"]["ecn_marks"] == 0


def test_no_queue_exceeds_its_buffer_and_bytes_are_conserved():
    flows = [flow(h, 0, 300_000) for h in range(1, 16)]
    # ECN thresholds inside the 40 KB buffer (the preset's lie above it: DCQCN would hardly be told)
    data = make(workload={"kind": "flows", "flows": flows}, transport={"lossless": False, "rto_us": 50.0},
                switch={"queue_bytes": 40_000, "ctrl_queue_bytes": 8_000, "ecn_min_bytes": 8_000,
                        "ecn_max_bytes": 32_000})
    r, s, _ = run(data)
    ps = r.port_stats
    assert s["counters"]["drops_queue_full"] > 0  # the limit mattered
    assert ps["max_bytes0"].max() <= 40_000
    assert ps["max_bytes1"].max() <= 8_000
    b = s["bytes"]
    assert b["sent"] == b["delivered"] + b["dropped"] + b["trimmed_away"] + b["in_flight"]
    p = s["packets"]
    assert p["sent"] == p["delivered"] + p["dropped"] + p["in_flight"]
    assert s["flows"]["completed"] == 15


def test_bytes_conserved_mid_run_with_trimming():
    flows = [flow(h, 0, 200_000) for h in range(1, 16)]
    data = make(workload={"kind": "flows", "flows": flows}, transport={"lossless": False, "trimmable": True},
                switch={"queue_bytes": 30_000, "trim": True}, duration_us=40.0)
    r, s, _ = run(data)
    b = s["bytes"]
    assert b["in_flight"] > 0 and b["trimmed_away"] > 0
    assert b["sent"] == b["delivered"] + b["dropped"] + b["trimmed_away"] + b["in_flight"]


def _departures(r, f, psn):
    tr = r.trace
    m = (tr["flow"] == f) & (tr["kind"] == ST.TR_DEPART) & (tr["psn"] == psn) & (tr["cls"] == ST.CLS_DATA)
    return list(tr["port"][m][np.argsort(tr["t"][m], kind="stable")])


@pytest.mark.parametrize("fabric", [SMALL_LS, K4, {"preset": "mrc-2plane-64"}])
def test_engine_ecmp_path_equals_fabric_answer(fabric):
    data = make(topology=fabric, workload={"kind": "permutation", "size_bytes": 5000},
                metrics_={"trace_flows": list(range(64))})
    r, s, sim = run(data)
    topo = sim.sc.topo
    R = sim.T.roce
    checked = 0
    for f in range(len(r.flows)):
        ep = int(r.flows[f]["ep"])
        want = topo.ecmp_route(int(r.flows[f]["src"]), int(r.flows[f]["dst"]),
                               int(R[ep]["plane"]), int(R[ep]["sport"]), 0)
        assert _departures(r, f, 0) == list(want), f
        checked += 1
    assert checked == len(r.flows) >= 16


def test_engine_srv6_path_equals_fabric_route():
    data = make(topology={"preset": "mrc-2plane-64"}, transport={"forwarding": "srv6"},
                workload={"kind": "permutation", "size_bytes": 5000}, metrics_={"trace_flows": list(range(64))})
    r, s, sim = run(data)
    topo = sim.sc.topo
    R = sim.T.roce
    for f in range(len(r.flows)):
        ep = int(r.flows[f]["ep"])
        want = topo.route(int(r.flows[f]["src"]), int(r.flows[f]["dst"]), int(R[ep]["ev"]))
        assert _departures(r, f, 0) == list(want)
    assert s["flows"]["completed"] == len(r.flows)


def test_pool_and_heap_start_sized_to_the_run_and_a_small_pool_that_grows_gives_the_same_run():
    # the default pool holds every flow's packets at once (4 KB each, plus four per flow), within
    # bounds; the heap two entries per port. A run whose pool has to grow from small gives
    # bit-identical results: growing happens between events.
    assert ST.pool_rows_for(np.array([65536] * 100)) == ST.POOL_MIN  # small workloads: the floor
    assert ST.pool_rows_for(np.array([4096 * 1000] * 100)) == 100 * 1000 + 400
    assert ST.pool_rows_for(np.array([1 << 40])) == ST.POOL_AUTO_MAX
    assert ST.heap_rows_for(10) == ST.HEAP_MIN and ST.heap_rows_for(10**8) == ST.HEAP_AUTO_MAX
    wl = {"kind": "permutation", "size_bytes": 300_000}
    big, _, s_big = run(make(topology=K4, transport={"name": "mrc"}, workload=wl))
    assert len(s_big.E.pkt) == ST.pool_rows_for(s_big.E.flow["size"])
    assert EVT.heap_capacity(s_big.E.heap_t) == ST.heap_rows_for(len(s_big.sc.topo.port))
    small, _, _ = run(make(topology=K4, transport={"name": "mrc"}, workload=wl, engine={"pool_packets": 256}))
    assert small.sim["pool_rows"] > 256  # it grew
    for k in ("events", "packet_hops", "sim_time_us", "peak_packets"):
        assert small.sim[k] == big.sim[k], k
    assert (small.flows == big.flows).all()


def test_a_nics_latency_is_paid_leaving_and_entering_it():
    """`topology.nic_latency_ns`: each NIC traversal adds it, so a lone packet's one-way time grows by twice it and
    its round trip by four times."""
    fl = {"kind": "flows", "flows": [flow(0, 15, 1000)]}
    r0, _, sim0 = run(make(workload=fl))
    r1, _, sim1 = run(make(topology={**SMALL_LS, "nic_latency_ns": 1500.0}, workload=fl))
    a, b = r0.flows[0], r1.flows[0]
    assert (b["t_recv_done"] - b["t_start"]) - (a["t_recv_done"] - a["t_start"]) == 2 * 1_500_000
    assert (b["t_send_done"] - b["t_start"]) - (a["t_send_done"] - a["t_start"]) == 4 * 1_500_000
    assert b["alone"] - a["alone"] == 4 * 1_500_000  # the FCT alone knows it too
    from mrc.errors import ConfigError
    with pytest.raises(ConfigError, match="topology.nic_latency_ns"):
        scenario.parse(make(topology={**SMALL_LS, "nic_latency_ns": -1}))
