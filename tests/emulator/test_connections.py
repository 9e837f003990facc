"""Connections: a training job's messages to one peer reuse one QP pair, one message after another."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.emulator.transports import pairs
from mrc.errors import ConfigError

from .helpers import make, run
from .test_training import DP, F4, iter_times

T1_DOWN = [{"kind": "switch-reboot", "at_us": 0, "switch": "p0.t1.0", "duration_us": 100_000}]


def job(transport="mrc", failures=None, **wl):
    return run(make(topology=F4, transport={"name": transport}, workload={**DP, **wl}, failures=failures))


def by_connection(fl):
    out = {}
    for f in np.flatnonzero(fl["conn"] >= 0):
        out.setdefault(int(fl["conn"][f]), []).append(int(f))
    return out


@pytest.mark.parametrize("transport", ["mrc", "roce-ecmp"])
def test_messages_share_a_pair_and_go_one_after_another(transport):
    """With ``connections = "reuse"`` every message between two ranks of a ring (one channel) is a message on one
    QP pair: as many pairs as connections, every flow of a connection on its endpoints, each message started only
    once the one before it was acknowledged, in the order the job posted them; every byte arrives."""
    r, s, sim = job(transport, iterations=3)
    fl = r.flows
    conns = by_connection(fl)
    # one successor per rank; a ring of 8 has 2 x 7 steps per iteration, 3 iterations
    assert len(conns) == 64 and all(len(v) == 3 * 14 for v in conns.values())
    assert pairs.count(fl) == 64
    n_ep = 2 * 64 + (64 if transport == "mrc" else 0)  # + a controller per host for MRC
    assert len(sim.E.ep) == n_ep
    for v in conns.values():
        assert len(set(fl["ep"][v])) == 1
        for a, b in zip(v, v[1:]):
            assert fl["t_start"][b] >= fl["t_send_done"][a] > 0
    assert (fl["status"] == 2).all()
    assert s["counters"]["goodput_bytes"] == int(fl["size"].sum())
    assert len(iter_times(s)) == 3


def test_per_message_gives_every_flow_its_own_pair():
    r, _, sim = job(connections="per-message", iterations=2)
    assert (r.flows["conn"] == -1).all()
    assert len(sim.E.ep) == 2 * len(r.flows) + 64


def test_a_reused_qp_keeps_what_it_learnt():
    """A T1 switch of plane 0 is down for the whole job. On its own QP every message rediscovers the dead EVs
    through it (every iteration as slow as the first); on a reused one only the first iteration pays: MRC's
    EV health outlives the message."""
    _, s_re, _ = job("mrc", T1_DOWN, iterations=3)
    _, s_pm, _ = job("mrc", T1_DOWN, iterations=3, connections="per-message")
    re, pm = iter_times(s_re), iter_times(s_pm)
    # measured: reuse 195, 174, 175 us (the healthy job: 178, 174, 178); per message 450, 437, 401 us
    assert re[1] < 0.95 * re[0] and re[2] < 0.95 * re[0]
    assert min(pm) > 1.5 * max(re)  # every message's QP loses packets on the dead T1 before it learns
    # an EV is marked ASSUMED_BAD once per QP (64 of them), not once per message
    assert s_re["counters"]["ev_assumed_bad"] <= 64 < s_pm["counters"]["ev_assumed_bad"] // 10


def test_roce_messages_continue_the_psn_space():
    """RoCE: a connection's messages follow each other in one PSN space (each starts where the last ended)."""
    r, _, sim = job("roce-ecmp", iterations=3)
    R = sim.T.roce
    fl = r.flows
    mtu = int(sim.T.roce_p[0]["mtu"])
    for v in by_connection(fl).values():
        ep = int(fl["ep"][v[0]])
        want = int(sum(-(-int(fl["size"][f]) // mtu) for f in v))
        assert int(R[ep]["n_pkts"]) == want and int(R[ep]["snd_una"]) == want
        assert int(R[int(R[ep]["peer"])]["epsn"]) == want


def test_a_qp_in_error_fails_its_later_messages_at_once():
    """RoCE with one retry and a fast timeout: a QP hashed onto a link that is down errors; its later messages
    fail as soon as they are posted (a QP in error completes every work request with an error), and the job
    reports itself unfinished instead of hanging."""
    down = [{"kind": "link-down", "at_us": 0, "link": ["p0.t0.0", "p0.t1.0"]},
            {"kind": "link-down", "at_us": 0, "link": ["p1.t0.0", "p1.t1.0"]}]
    data = make(topology=F4, transport={"name": "roce-ecmp", "retry_cnt": 1, "rto_us": 2.0, "rto_max_us": 4.0},
                workload={**DP, "iterations": 3}, failures=down)
    r, s, _ = run(data)
    fl = r.flows
    hit = 0
    for v in by_connection(fl).values():
        st = fl["status"][v]
        if st[0] == 3:  # FLOW_FAILED
            hit += 1
            later = [f for f in v[1:] if fl["t_start"][f] >= 0]
            assert all(fl["status"][f] == 3 and fl["t_send_done"][f] == fl["t_start"][f] for f in later)
    assert hit > 0
    assert not s["training"][0]["finished"]


def test_a_connection_joins_one_sender_and_receiver():
    fl = np.zeros(2, dtype=[("src", np.int32), ("dst", np.int32), ("conn", np.int32)])
    fl["src"], fl["dst"], fl["conn"] = [0, 0], [1, 2], [0, 0]
    with pytest.raises(ConfigError, match="connection 0 joins hosts 0 -> 1"):
        pairs.of_flows(fl)


def test_bad_connections_key_names_it():
    with pytest.raises(ConfigError, match="connections"):
        job(connections="sometimes")
