"""Path -> EVs: the EVs crossing a port, for a pair or for a source; locating a failed link."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrc.errors import UsageError
from mrc.fabric import evs_for_route, evs_through, evs_through_link, suspect_ports
from tests.fabric.fabrics import SMALL, big, small


def _brute(t, port, src, dsts):
    """Every EV and destination tried (a source's own loopback counts only when asked for by name)."""
    evs = t.ev_format.all_evs()
    dsts = [d for d in dsts if d != src or len(dsts) == 1]
    return np.array(sorted({int(e) for e in evs for d in dsts if port in t.route(src, d, int(e))}), np.int64)


@settings(max_examples=150)
@given(name=st.sampled_from(sorted(SMALL)), data=st.data())
def test_evs_through_a_port_match_brute_force(name, data):
    t = small(name)
    src = data.draw(st.integers(0, t.n_hosts - 1))
    port = data.draw(st.integers(0, t.n_ports - 1))
    dst = data.draw(st.integers(0, t.n_hosts - 1))
    assert np.array_equal(evs_through(t, port, src, dst), _brute(t, port, src, [dst]))
    assert np.array_equal(evs_through(t, port, src), _brute(t, port, src, range(t.n_hosts)))


def test_a_t0_uplink_on_the_131k_fabric():
    t = big()
    src = 1000  # under T0 3
    up = int(t.node["port_start"][t.switch(5, 0, 3)]) + 256 + 77  # plane 5, T0 3, uplink to T1 #77
    evs = evs_through(t, up, src)
    assert evs.tolist() == [t.make_ev(5, 77)]
    down = int(t.port["peer"][up])  # T1 77 -> T0 3: used by sources elsewhere sending to hosts under T0 3
    assert evs_through(t, down, src).size == 0
    assert evs_through(t, down, 5000, dst=src).tolist() == [t.make_ev(5, 77)]
    assert evs_through_link(t, up, src).tolist() == [t.make_ev(5, 77)]
    nic = t.nic_port(src, 2)
    assert len(evs_through(t, nic, src)) == 256  # every EV of plane 2


def test_evs_for_route():
    t = small("fattree-k8")
    ev = t.make_ev(0, 3, 1)
    assert evs_for_route(t, 0, 127, t.route(0, 127, ev)).tolist() == [ev]
    same_pod = evs_for_route(t, 0, 5, t.route(0, 5, ev))  # inside a pod t2 does not matter
    assert sorted(same_pod.tolist()) == [t.make_ev(0, 3, c) for c in range(4)]


def test_suspect_ports_find_a_failed_link():
    t = small("two-plane-64")
    bad_link = int(t.node["port_start"][t.switch(1, 1, 4)]) + 6  # plane 1: T1 #4 -> T0 #6
    rng = np.random.default_rng(3)
    bad, good = [], []
    for _ in range(300):
        s, d = (int(x) for x in rng.integers(0, 64, 2))
        ev = t.make_ev(int(rng.integers(0, 2)), int(rng.integers(0, 8)))
        (bad if bad_link in t.route(s, d, ev) else good).append((s, d, ev))
    assert bad
    assert suspect_ports(t, bad, good)[0][0] == bad_link


def test_bad_arguments():
    t = small("tiny")
    with pytest.raises(UsageError, match="port"):
        evs_through(t, t.n_ports, 0)
    with pytest.raises(UsageError, match="src"):
        evs_through(t, 0, 99)
