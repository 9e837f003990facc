"""EV -> path, SRv6 carriers and static tables agree; every shortest path has an EV."""
from __future__ import annotations

import ipaddress

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrc.errors import UsageError
from mrc.fabric import address as AD
from mrc.fabric import paths as P
from tests.fabric import naive
from tests.fabric.fabrics import SMALL, big, small

NAMES = sorted(SMALL)


def _draw(data, t):
    src = data.draw(st.integers(0, t.n_hosts - 1), label="src")
    dst = data.draw(st.integers(0, t.n_hosts - 1), label="dst")
    plane = data.draw(st.integers(0, t.n_planes - 1), label="plane")
    choices = [data.draw(st.integers(0, f.count - 1), label=f.name) for f in t.ev_format.fields[1:]]
    return src, dst, t.make_ev(plane, *choices)


def _check_route(t, src, dst, ev):
    route = t.route(src, dst, ev)
    plane = t.ev_fields(ev)[0]
    # the SRv6 carrier, followed through every node's static table, takes exactly this route
    carrier = t.carrier(src, dst, ev)
    assert np.array_equal(t.srv6_route(src, carrier), route)
    nodes = t.path_nodes(route)
    assert nodes[0] == src and nodes[-1] == dst
    switches = nodes[1:-1]
    assert len(set(switches)) == len(switches)  # loop-free
    assert len(switches) <= (3 if t.tiers == 2 else 5)
    assert all(t.port["plane"][p] == plane for p in route)
    for a, b in zip(route[:-1], route[1:]):  # consecutive ports are chained by links
        assert t.port["node"][b] == t.port["node"][t.port["peer"][a]]
    return route, carrier


@settings(max_examples=300)
@given(name=st.sampled_from(NAMES), data=st.data())
def test_tables_follow_the_ev_path(name, data):
    t = small(name)
    src, dst, ev = _draw(data, t)
    route, carrier = _check_route(t, src, dst, ev)
    assert np.array_equal(t.route(src, dst, t.ev_of_carrier(carrier)), route)  # carrier -> EV -> same path
    # the same in plain Python over the printed tables
    ports, node = naive.follow_tables(t, src, t.ev_fields(ev)[0], int(carrier))
    assert node == dst and ports == route.tolist()


@settings(max_examples=200)
@given(data=st.data())
def test_tables_follow_the_ev_path_on_the_131k_fabric(data):
    t = big()
    src, dst, ev = _draw(data, t)
    route, _ = _check_route(t, src, dst, ev)
    assert len(route) == (2 if src // 256 == dst // 256 else 4)


@pytest.mark.parametrize("name", NAMES)
def test_evs_reach_every_shortest_path_and_only_those(name):
    t = small(name)
    rng = np.random.default_rng(7)
    evs = t.ev_format.all_evs()
    pairs = [(0, t.n_hosts - 1), (0, 1)] + [tuple(int(x) for x in rng.integers(0, t.n_hosts, 2)) for _ in range(12)]
    for src, dst in [(s, d) for s, d in pairs if s != d]:
        for plane in range(t.n_planes):
            mine = [ev for ev in evs if t.ev_fields(int(ev))[0] == plane]
            got = {tuple(t.route(src, dst, int(ev)).tolist()) for ev in mine}
            assert got == naive.shortest_paths(t, src, dst, plane), (src, dst, plane)


def test_distinct_choices_give_distinct_paths_across_the_top():
    t = small("fattree-k6-2planes")
    src, dst = 0, t.n_hosts - 1  # different pods: every (plane, t1, t2) is its own path
    evs = t.ev_format.all_evs()
    assert len({tuple(t.route(src, dst, int(e)).tolist()) for e in evs}) == len(evs) == 2 * 3 * 3


def test_golden_carriers():
    t = small("tiny")
    ev = t.make_ev(1, 1)
    assert ev == 0xC0000000
    assert str(t.carrier(0, 3, ev)) == "5f00:1:1000:8001:1001:f001::"
    assert str(t.carrier(0, 1, ev)) == "5f00:1:1000:f001::"  # same T0: no T1
    assert [t.port_name(p) for p in t.route(0, 3, ev)] == ["h0:nic1", "p1.t0.0:up1", "p1.t1.1:down1",
                                                           "p1.t0.1:down1"]
    f = small("fattree-k8")  # pods of 4 edges; core (a=2, c=3) has uSID 0x8000 | 2<<2 | 3
    assert str(f.carrier(0, 127, f.make_ev(0, 2, 3))) == "5f00:0:1000:800b:101f:f003::"
    assert str(f.carrier(0, 5, f.make_ev(0, 2, 3))) == "5f00:0:1000:4002:1001:f001::"  # same pod: agg (0, 2)
    assert str(big().carrier(131071, 0, big().make_ev(7, 255))) == "5f00:7:11ff:80ff:1000:f000::"


def test_invalid_evs():
    t = small("odd-leaf-spine")  # 3 planes (2 bits), 3 spines (2 bits)
    out = np.empty(6, np.int64)
    for ev in [3 << 30, 3 << 28, 1, -1, 1 << 32]:
        assert P.ev_route(t.arrays, 0, 14, ev, out) == P.ROUTE_INVALID_EV
        with pytest.raises(UsageError):
            t.route(0, 14, ev)
    assert P.ev_route(t.arrays, 0, 15, 0, out) == P.ROUTE_BAD_ARGS
    assert P.ev_route(t.arrays, 0, 1, 0, np.empty(3, np.int64)) == P.ROUTE_BAD_ARGS
    assert P.ev_carrier(t.arrays, 0, 14, 1) == (0, 0)
    with pytest.raises(UsageError, match="plane = 3"):
        t.make_ev(3, 0)
    with pytest.raises(UsageError, match="fields plane, t1"):
        t.make_ev(0)


def test_foreign_and_unknown_carriers_are_dropped():
    t = small("two-plane-64")
    out = np.empty(6, np.int64)
    hi, lo = AD.carrier_words(AD.carrier_int(AD.block(1), [0x1000, 0x8000 + 9, 0x1007, 0xF000]))  # no T1 #9
    assert P.srv6_route(t.arrays, 0, 1, hi, lo, out) == P.ROUTE_DROPPED
    hi, lo = AD.carrier_words(AD.carrier_int(AD.block(0), [0x1000, 0x8001, 0x1007, 0xF000]))
    assert P.srv6_route(t.arrays, 0, 1, hi, lo, out) == P.ROUTE_DROPPED  # plane 0's block on plane 1
    with pytest.raises(UsageError, match="no plane's block"):
        t.srv6_route(0, ipaddress.IPv6Address("fc00::"))
    with pytest.raises(UsageError, match="no plane's block"):
        t.ev_of_carrier("fc00::")
    with pytest.raises(UsageError, match="t1 = 9"):
        t.ev_of_carrier(AD.carrier_int(AD.block(1), [0x1000, 0x8000 + 9, 0x1007, 0xF000]))
    code, _, _ = P.srv6_forward(t.arrays, t.switch(0, 0, 0), *AD.carrier_words(AD.carrier_int(AD.block(0), [0x1001])))
    assert code == P.FWD_DROP


def test_probe_carriers_loop_back_to_the_source():
    """Clustermapper-style self probes (NIC -> T0 -> self and NIC -> T1 -> self) follow the same tables."""
    t = small("two-plane-64")
    src, plane = 13, 1
    t0, hl = AD.T0_BASE + 13 // 8, AD.HOST_BASE + 13 % 8
    via_t0 = AD.carrier_int(AD.block(plane), [t0, hl])
    via_t1 = AD.carrier_int(AD.block(plane), [t0, AD.T1_BASE + 6, t0, hl])
    for c, n in [(via_t0, 2), (via_t1, 4)]:
        route = t.srv6_route(src, ipaddress.IPv6Address(c))
        assert len(route) == n and t.path_nodes(route)[-1] == src
    # a carrier ending at a switch is delivered to that switch
    ports, node = naive.follow_tables(t, src, plane, AD.carrier_int(AD.block(plane), [t0, AD.T1_BASE + 6]))
    assert node == t.switch(plane, 1, 6) and len(ports) == 2


@settings(max_examples=200)
@given(name=st.sampled_from(NAMES + ["131k"]), data=st.data())
def test_srv6_gen_profile_expands_evs_into_the_carrier(name, data):
    """The OCP GEN algorithm over `srv6_profile` fields gives exactly `carrier` (unused choices zero)."""
    t = big() if name == "131k" else small(name)
    src, dst, ev = _draw(data, t)
    prof = t.srv6_profile(src, dst)
    fields = dict(zip(t.ev_format.names, t.ev_fields(ev)))
    canonical = t.make_ev(*[fields[n] if n in prof["uses"] else 0 for n in t.ev_format.names])
    value, width = naive.gen_expand(prof["fields"], canonical)
    assert value << (128 - width) == int(t.carrier(src, dst, ev))
    assert prof["fmt_widths"][0] == 32 and set(prof["fmt_widths"][1:]) == {16}
    if canonical != ev:  # an unused choice is set: GEN refuses the EV, the route ignores it
        assert naive.gen_expand(prof["fields"], ev) is None
        assert np.array_equal(t.route(src, dst, ev), t.route(src, dst, canonical))


def test_shift_matches_the_wire_layer():
    from mrc.wire import srv6
    t = small("fattree-k8")
    c = t.carrier(0, 127, t.make_ev(0, 1, 2))
    hi, lo = AD.carrier_words(int(c))
    for own in (0x1000, 0x8006, 0x101F):
        action, new, _ = srv6.usid_step(ipaddress.IPv6Address(AD.words_int(hi, lo)), AD.block(0), own)
        assert action == srv6.UsidAction.SHIFTED and own == AD.carrier_lead(hi)
        hi, lo = AD.carrier_shift(hi, lo)
        assert int(new) == AD.words_int(hi, lo)
    assert AD.parse_carrier(AD.words_int(hi, lo)) == (AD.block(0), [0xF003])
