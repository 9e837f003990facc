"""roce-ecmp: go-back-N, timeouts, spurious retransmissions, DCQCN, lossless and lossy modes, window."""
from __future__ import annotations

import pytest

from mrc.emulator.transports import roce
from mrc.errors import ConfigError
from mrc.emulator import scenario
from tests.emulator.helpers import flow, make, run


def test_go_back_n_recovers_from_random_loss():
    data = make(workload={"kind": "flows", "flows": [flow(0, 15, 2_000_000), flow(4, 11, 2_000_000)]},
                transport={"lossless": False},
                failures=[{"kind": "gray-loss", "at_us": 0.0, "probability": 0.02, "link": ["h0", "p0.t0.0"]}])
    r, s, _ = run(data)
    c = s["counters"]
    assert s["flows"]["completed"] == 2
    assert c["naks"] > 0 and c["out_of_order_discarded"] > 0
    # go-back-N resends everything after the hole: more retransmissions than losses
    assert c["retransmissions"] > c["drops_gray"]
    assert r.flows[0]["retx"] == c["retransmissions"] and r.flows[1]["retx"] == 0
    assert c["goodput_bytes"] == 4_000_000


def test_timeout_recovers_a_lost_tail_and_counts_spurious():
    # the only packet is lost (gray loss for its first 2 us): recovered by the retransmission timer
    data = make(workload={"kind": "flows", "flows": [flow(0, 15, 1000)]}, transport={"lossless": False,
                "rto_us": 30.0}, failures=[{"kind": "gray-loss", "at_us": 0.0, "duration_us": 2.0,
                                            "probability": 1.0, "link": ["h0", "p0.t0.0"]}])
    r, s, _ = run(data)
    c = s["counters"]
    assert c["timeouts"] == 1 and c["retransmissions"] == 1 and c["spurious_retransmissions"] == 0
    fct = r.flows[0]["t_send_done"] - r.flows[0]["t_start"]
    assert fct == 30_000_000 + r.flows[0]["alone"]
    # a lost ACK instead (the data crossed the link at 3.35 us, its ACK leaves at 4.35 us): the data is
    # resent although it arrived: a spurious retransmission
    data["failures"][0].update(link=["h15", "p0.t0.3"], at_us=4.0, duration_us=10.0)
    r2, s2, _ = run(data)
    assert s2["counters"]["spurious_retransmissions"] == 1 and s2["counters"]["timeouts"] == 1


def test_timeout_doubles_without_progress_and_resets_on_progress():
    # every packet on the NIC link is lost for 100 us: timeouts at 30, 30 + 60 = 90 and 90 + 120 = 210 us
    # (a fixed 30 us timer would have resent at 120 us); the retransmission at 210 us gets through
    data = make(workload={"kind": "flows", "flows": [flow(0, 15, 1000)]},
                transport={"lossless": False, "rto_us": 30.0, "rto_max_us": 1000.0},
                failures=[{"kind": "gray-loss", "at_us": 0.0, "duration_us": 100.0, "probability": 1.0,
                           "link": ["h0", "p0.t0.0"]}])
    r, s, simu = run(data)
    assert s["counters"]["timeouts"] == 3
    assert r.flows[0]["t_send_done"] - r.flows[0]["t_start"] == 210_000_000 + r.flows[0]["alone"]
    assert simu.T.roce["rto_cur"][0] == 30_000_000  # progress restored the first timeout
    # capped at rto_max_us: 30, 60, then 80 us steps -> timeouts at 30, 90, 170, 250 us
    data["transport"]["rto_max_us"] = 80.0
    data["failures"][0]["duration_us"] = 200.0
    r, s, _ = run(data)
    assert s["counters"]["timeouts"] == 4
    assert r.flows[0]["t_send_done"] - r.flows[0]["t_start"] == 250_000_000 + r.flows[0]["alone"]


def test_dcqcn_reacts_to_marks_with_cnps():
    flows = [flow(h, 0, 1_000_000) for h in range(4, 12)]
    r, s, simu = run(make(workload={"kind": "flows", "flows": flows}, transport={"lossless": False}))
    c = s["counters"]
    assert c["ecn_marks"] > 0 and c["cnps"] > 0
    R = simu.T.roce
    assert (R["last_dec"][R["role"] == roce.ROLE_REQ] > 0).all()  # every sender cut its rate
    r2, s2, _ = run(make(workload={"kind": "flows", "flows": flows}, transport={"lossless": False,
                                                                                "dcqcn": False}))
    assert s2["counters"]["ecn_marks"] == 0 and s2["counters"]["cnps"] == 0  # packets not ECN-capable
    assert s2["counters"]["drops_queue_full"] > s["counters"]["drops_queue_full"]


def test_lossless_permutation_loses_nothing():
    r, s, _ = run(make(workload={"kind": "permutation", "size_bytes": 500_000}))
    assert s["counters"]["dropped_pkts"] == 0 and s["counters"]["retransmissions"] == 0
    assert s["flows"]["completed"] == 16


def test_window_limits_packets_in_flight():
    r1, _, _ = run(make(workload={"kind": "flows", "flows": [flow(0, 15, 4096)]}))
    rtt = r1.flows[0]["t_send_done"]
    r, s, _ = run(make(workload={"kind": "flows", "flows": [flow(0, 15, 40 * 4096)]}, transport={"window": 1}))
    assert r.flows[0]["t_send_done"] - r.flows[0]["t_start"] >= 39 * rtt


def test_lossless_needs_pfc():
    with pytest.raises(ConfigError) as exc:
        scenario.parse(make(switch={"pfc": False}), "t")
    assert exc.value.key == "switch.pfc"
    with pytest.raises(ConfigError) as exc:
        scenario.parse(make(transport={"lossless": False}, switch={"pfc": True}), "t")
    assert exc.value.key == "switch.pfc"


@pytest.mark.parametrize("key,value", [("mtu", 10), ("retry_cnt", 8), ("forwarding", "spray"), ("rto_us", 0),
                                       ("rto_max_us", 10.0),
                                       ("dcqcn_g", 0), ("ack_every", 0), ("colour", 1)])
def test_bad_transport_keys(key, value):
    with pytest.raises(ConfigError) as exc:
        scenario.parse(make(transport={key: value}), "t")
    assert exc.value.key == f"transport.{key}"


# DCQCN's rules, its parameter profiles and the reference-model property test: test_dcqcn.py
