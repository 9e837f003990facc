"""ECMP hashing: deterministic, seeded per switch, even across next hops, shortest paths only.

Stated tolerance: for 65,536 random 5-tuples, every next hop of a switch (and
every path across a fat-tree's top) receives within 10% of its fair share.
With n <= 16 choices the standard deviation of a fair count is under 1.6% of
the share, so 10% is more than 6 standard deviations: a failure means a bias.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mrc._jit import njit
from mrc.fabric import ecmp as E
from tests.fabric import naive
from tests.fabric.fabrics import small

N = 65536
TOLERANCE = 0.10


@njit
def _picks(F, node, src, dst, plane, sport, flow, proto, counts):
    for i in range(src.shape[0]):
        port = E.ecmp_next_port(F, node, src[i], dst[i], plane, sport[i], flow[i], proto)
        counts[port - F.node["port_start"][node] - F.node["n_down"][node]] += 1


@njit
def _paths(F, src, dst, plane, sport, flow, counts):
    out = np.empty(6, np.int64)
    for i in range(src.shape[0]):
        E.ecmp_route(F, src[i], dst[i], plane, sport[i], flow[i], 17, out)
        counts[out[1] - F.node["port_start"][F.port["node"][out[1]]] - F.node["n_down"][F.port["node"][out[1]]],
               out[2] - F.node["port_start"][F.port["node"][out[2]]] - F.node["n_down"][F.port["node"][out[2]]]] += 1


def _tuples(seed, t, under):
    """N random 5-tuples from hosts under T0 `under` to hosts elsewhere."""
    rng = np.random.default_rng(seed)
    hpl = t.hosts_per_leaf
    src = under * hpl + rng.integers(0, hpl, N)
    dst = (src + hpl * rng.integers(1, t.n_t0, N) + rng.integers(0, hpl, N)) % t.n_hosts
    dst = np.where(dst // hpl == under, (dst + hpl) % t.n_hosts, dst)
    return src, dst, rng.integers(0, 1 << 16, N), rng.integers(0, 1 << 20, N)


@settings(max_examples=12)
@given(name=st.sampled_from(["two-plane-64", "fattree-k8", "odd-leaf-spine", "fattree-k6-2planes"]),
       seed=st.integers(0, 2**32 - 1), data=st.data())
def test_next_hops_are_even(name, seed, data):
    t = small(name)
    t.reseed_ecmp(seed)
    plane = data.draw(st.integers(0, t.n_planes - 1))
    under = data.draw(st.integers(0, t.n_t0 - 1))
    src, dst, sport, flow = _tuples(seed, t, under)
    node = t.switch(plane, 0, under)
    counts = np.zeros(t.node["n_up"][node], np.int64)
    _picks(t.arrays, node, src, dst, plane, sport, flow, 17, counts)
    share = N / len(counts)
    assert np.all(np.abs(counts - share) <= TOLERANCE * share), counts


def test_paths_across_the_top_are_even():
    """Edge and aggregation switches hash independently: all (agg, core) pairs get their share."""
    t = small("fattree-k8")
    t.reseed_ecmp(99)
    src, dst, sport, flow = _tuples(3, t, 0)
    far = dst // (t.hosts_per_leaf * t.t0_per_pod) != 0
    counts = np.zeros((4, 4), np.int64)
    _paths(t.arrays, src[far], dst[far], 0, sport[far], flow[far], counts)
    share = far.sum() / 16
    assert np.all(np.abs(counts - share) <= TOLERANCE * share), counts


def test_routes_are_deterministic_shortest_paths():
    t = small("fattree-k6-2planes")
    t.reseed_ecmp(5)
    rng = np.random.default_rng(1)
    for _ in range(60):
        s, d = (int(x) for x in rng.integers(0, t.n_hosts, 2))
        if s == d:
            continue
        p, sport, flow = int(rng.integers(0, 2)), int(rng.integers(0, 65536)), int(rng.integers(0, 1 << 20))
        r = t.ecmp_route(s, d, p, sport, flow)
        assert np.array_equal(r, t.ecmp_route(s, d, p, sport, flow))
        assert tuple(r.tolist()) in naive.shortest_paths(t, s, d, p)


def test_seed_and_ev_change_the_choice():
    t = small("two-plane-64")
    routes = set()
    for seed in range(8):
        t.reseed_ecmp(seed)
        routes.add(tuple(t.ecmp_route(0, 63, 0, 1000, 0).tolist()))
    assert len(routes) > 1
    t.reseed_ecmp(0)
    # the EV in the source port / flow label steers the hash (STEV mode)
    assert len({tuple(t.ecmp_route(0, 63, 0, sp, 0).tolist()) for sp in range(64)}) == 8


def test_hash_is_the_same_compiled_and_in_python():
    t = small("two-plane-64")
    py = lambda f: getattr(f, "py_func", f)  # noqa: E731  (plain functions under NUMBA_DISABLE_JIT)
    args = (123456789, py(E.host_words)(t.arrays, 3, 1), py(E.host_words)(t.arrays, 60, 1), 4791, 0xABCDE, 17)
    assert E.ecmp_hash(*args) == py(E.ecmp_hash)(*args)
    assert 0 <= E.ecmp_hash(*args) < 2**32
    assert args[1] == (0xFD000001, 3, 0, 1) and args[2] == (0xFD000001, (7 << 16) | 4, 0, 1)  # fd00:1:7:4::1
