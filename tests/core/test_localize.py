"""The controller's fault localisation (mrc.ctl.localizer) on synthetic EV events over a known fabric."""
from __future__ import annotations

import numpy as np
import pytest

import mrc.ctl
from mrc.ctl import localizer as CL
from mrc.errors import ConfigError
from mrc.fabric import Topology, resolve

TOPO = Topology(resolve({"kind": "leaf-spine", "hosts_per_leaf": 4, "leaves": 8, "spines": 8, "planes": 2,
                         "link_gbps": 100}, where="topology"))
EVS = TOPO.ev_format.all_evs()
US = 1_000_000


def _pairs(seed=0):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(TOPO.n_hosts)
    return [(int(a), int(b)) for a, b in zip(range(TOPO.n_hosts), perm) if a != b]


def _paths(pairs, tx=100, marks=0, trims=0, losses=0):
    rows = [(a, b, int(e), tx, losses, marks, trims) for a, b in pairs for e in EVS]
    return np.array(rows, CL.PATHS)


def _through(pairs, ports):
    out = []
    for a, b in pairs:
        for e in EVS:
            if set(TOPO.route(a, b, int(e)).tolist()) & set(ports) or set(TOPO.route(b, a, int(e)).tolist()) & set(ports):
                out.append((a, b, int(e)))
    return out


def _link(a, b):
    na, nb = TOPO.parse_node(a), TOPO.parse_node(b)
    for q in range(TOPO.n_ports):
        if int(TOPO.port[q]["node"]) == na and TOPO.peer_node(q) == nb:
            return q, int(TOPO.port[q]["peer"])
    raise AssertionError


def _feed(loc, bad, t0, spread=0.0, rng=None, good_after=None):
    t = t0 + (rng.uniform(0, spread, len(bad)) if spread else np.arange(len(bad)) * 0.05) * 1
    for (a, b, e), tt in zip(bad, t):
        loc.add_events(int(tt * US), a, b, e, CL.EV_ASSUMED_BAD, 1, 7)
        if good_after is not None:
            loc.add_events(int((tt + good_after) * US), a, b, e, CL.EV_GOOD, 0, 7)


def test_link_down_named_with_score_and_evidence():
    pairs = _pairs()
    ports = _link("p0.t0.2", "p0.t1.5")
    bad = _through(pairs, ports)
    loc = CL.Localizer(TOPO)
    loc.set_paths(_paths(pairs))
    _feed(loc, bad, 100.0)
    v = loc.verdict()
    top = v.suspects[0]
    assert top.element == "p0.t0.2-p0.t1.5" and top.kind == "link" and top.verdict == "down"
    assert top.score == 1.0 and top.bad_paths == len(bad) and set(top.ports) == set(ports)
    assert len(v.blamed) == 1 and v.unexplained == 0
    assert top.evidence[0]["t_us"] == pytest.approx(100.0) and top.evidence[0]["state"] == "ASSUMED_BAD"
    assert mrc.ctl.localize(TOPO, loc.events, loc.paths).suspects[0].element == top.element


def test_switch_failure_names_the_switch_not_a_link():
    pairs = _pairs(1)
    sw = TOPO.parse_node("p1.t1.4")
    n = TOPO.node[sw]
    ports = list(range(int(n["port_start"]), int(n["port_start"]) + int(n["n_down"]) + int(n["n_up"])))
    bad = _through(pairs, ports)
    loc = CL.Localizer(TOPO)
    loc.set_paths(_paths(pairs))
    _feed(loc, bad, 50.0)
    v = loc.verdict()
    assert [s.element for s in v.blamed] == ["p1.t1.4"] and v.blamed[0].kind == "switch"
    assert CL.matches(v.blamed[0].ports, ports) and not CL.matches(v.blamed[0].ports, ports[:1])


def test_gray_loss_is_gray_and_recovering_paths_are_not_down():
    pairs = _pairs(2)
    ports = _link("p1.t0.3", "p1.t1.2")
    rng = np.random.default_rng(5)
    through = _through(pairs, ports)
    bad = [through[k] for k in rng.choice(len(through), 5, replace=False)]
    loc = CL.Localizer(TOPO)
    loc.set_paths(_paths(pairs))
    _feed(loc, bad, 100.0, spread=800.0, rng=rng, good_after=15.0)
    v = loc.verdict(int(1000 * US))
    assert v.blamed[0].element == "p1.t0.3-p1.t1.2" and v.blamed[0].verdict == "gray"
    assert v.blamed[0].still_bad == 0 and 0 < v.blamed[0].score < 1


def test_congestion_losses_amid_trims_blame_nothing():
    # an incast at host 16: its last hop overflows now and then; the EVs' counters show heavy trimming
    senders = [s for s in range(TOPO.n_hosts) if s != 16][:12]
    pairs = [(s, 16) for s in senders]
    loc = CL.Localizer(TOPO)
    paths = _paths(pairs, tx=1000, trims=150, losses=1)
    loc.set_paths(paths)
    rng = np.random.default_rng(3)
    bad = [(s, 16, int(EVS[k])) for s in senders for k in rng.choice(len(EVS) // 2, 2, replace=False)]
    _feed(loc, bad, 20.0, spread=300.0, rng=rng, good_after=5.0)
    v = loc.verdict()
    assert v.suspects and not v.blamed
    assert v.suspects[0].element == "h16:nic0" and v.suspects[0].verdict == "congestion"
    # the same events without the counters' trims: a NIC port that loses packets
    loc.set_paths(_paths(pairs, tx=1000, losses=1))
    assert loc.verdict().blamed[0].element == "h16:nic0"


def test_one_host_pair_cannot_localise():
    pairs = _pairs()
    ports = _link("p0.t0.2", "p0.t1.5")
    bad = [p for p in _through(pairs, ports) if (p[0], p[1]) == next((a, b) for a, b, _ in _through(pairs, ports))]
    loc = CL.Localizer(TOPO)
    loc.set_paths(_paths(pairs))
    _feed(loc, bad, 10.0)
    assert not loc.verdict().suspects
    assert not CL.localize(TOPO, np.zeros(0, CL.EVENTS)).suspects


def test_update_names_at_the_event_that_decides():
    pairs = _pairs()
    ports = _link("p0.t0.2", "p0.t1.5")
    bad = _through(pairs, ports)
    loc = CL.Localizer(TOPO)
    loc.set_paths(_paths(pairs))
    _feed(loc, bad, 100.0)  # 0.05 us apart
    new = loc.update(int(200 * US))
    assert [s.element for s in new] == ["p0.t0.2-p0.t1.5"]
    # two paths from two pairs decide it: the second event (or the first that brings a second pair)
    assert 100.0 < loc.named_at["p0.t0.2-p0.t1.5"] <= 100.0 + 0.05 * 4
    ttl = CL.time_to_localise({k: (t, loc.first_verdict[k].ports) for k, t in loc.named_at.items()},
                              [{"index": 0, "at_us": 99.0, "ports": [ports[0]]}])
    assert ttl[0]["element"] == "p0.t0.2-p0.t1.5" and ttl[0]["time_to_localise_us"] == pytest.approx(
        loc.named_at["p0.t0.2-p0.t1.5"] - 99.0)
    assert loc.update(int(300 * US)) == []  # named once


def test_bad_input_is_refused():
    with pytest.raises(ConfigError) as e:
        CL.Localizer(TOPO, min_pairs=0)
    assert e.value.key == "localize.min_pairs"
    with pytest.raises(ConfigError):
        CL.Localizer(TOPO, window_us=-1.0)
    loc = CL.Localizer(TOPO)
    with pytest.raises(Exception) as e2:
        loc.add_events(1, 0, TOPO.n_hosts, 0, CL.EV_ASSUMED_BAD)
    assert "hosts" in str(e2.value)
    with pytest.raises(TypeError):
        loc.set_paths(np.zeros(3))
    # an invalid EV names no element (its route is empty), never an exception
    loc.add_events([1, 2], [0, 1], [5, 6], [0xFFFFFFFF, 0xFFFFFFFF], CL.EV_ASSUMED_BAD)
    assert not loc.verdict().blamed


def test_a_t0_whose_host_links_all_go_down_is_named_from_the_hosts_port_states():
    # a T0 reboot: its hosts' NICs see their links drop and tell their peers (no EV event at all)
    loc = CL.Localizer(TOPO)
    t0 = TOPO.parse_node("p1.t0.2")
    hosts = [h for h in range(TOPO.n_hosts) if TOPO.peer_node(TOPO.nic_port(h, 1)) == t0]
    assert len(hosts) == 4
    for k, h in enumerate(hosts):
        loc.add_port_event(int((50 + 0.01 * k) * US), h, 1, False)
    new = loc.update(int(60 * US))
    assert [s.element for s in new] == ["p1.t0.2"] and new[0].kind == "switch" and new[0].source == "port"
    assert loc.named_at["p1.t0.2"] == pytest.approx(50.01)  # the second host's port decides (min_pairs)
    # one NIC port alone: that port's link
    one = CL.Localizer(TOPO)
    one.add_port_event(int(10 * US), 5, 0, False)
    v = one.verdict(int(20 * US))
    assert [(s.element, s.kind) for s in v.blamed] == [("h5:nic0", "nic-port")]
    with pytest.raises(Exception):
        one.add_port_event(0, TOPO.n_hosts, 0, False)


# --- loss or load: the verdict weighs the path counters against comparable paths -------------------------------


def _paths_with(pairs, through, base, there):
    """PATHS rows: every path `base` = (tx, losses, marks, trims), the paths in `through` `there`."""
    rows = []
    for a, b in pairs:
        for e in EVS:
            tx, losses, marks, trims = there if (a, b, int(e)) in through else base
            rows.append((a, b, int(e), tx, losses, marks, trims))
    return np.array(rows, CL.PATHS)


def test_gray_loss_amid_heavy_load_is_gray_not_congestion():
    # every path is marked and trimmed heavily (a loaded permutation); the paths across one link lose 1 %
    pairs = _pairs(4)
    ports = _link("p1.t0.5", "p1.t1.6")
    through = set(_through(pairs, ports))
    rng = np.random.default_rng(8)
    bad = [sorted(through)[k] for k in rng.choice(len(through), 6, replace=False)]
    loc = CL.Localizer(TOPO)
    loc.set_paths(_paths_with(pairs, through, (5000, 1, 900, 300), (5000, 50, 900, 300)))
    _feed(loc, bad, 100.0, spread=800.0, rng=rng, good_after=15.0)
    v = loc.verdict(int(1000 * US))
    assert v.blamed and v.blamed[0].element == "p1.t0.5-p1.t1.6" and v.blamed[0].verdict == "gray"
    assert v.blamed[0].load["compared"] == "pairs"
    # the same losses, and the link's paths marked as much as the rest: still gray; marked far more: its queue
    # is the one that fills (a slow link when its parallel links are not)
    loc.set_paths(_paths_with(pairs, through, (5000, 1, 90, 30), (5000, 50, 2000, 500)))
    assert loc.verdict(int(1000 * US)).blamed[0].verdict == "degraded"


def test_uniform_overload_blames_nothing():
    # four permutations at once: every host link overloaded alike, every path marked, trimmed and losing the same
    # share; the bad paths happen to gather at one host's link
    pairs = _pairs(5)
    nic = (TOPO.nic_port(16, 0), int(TOPO.port[TOPO.nic_port(16, 0)]["peer"]))
    through = _through(pairs, nic)
    pair_of = sorted({(a, b) for a, b, _ in through})
    bad = [x for pr in pair_of for x in [t for t in through if t[:2] == pr][:4]]
    assert len(pair_of) == 2 and len(bad) == 8  # host 16 sends to one host and receives from another
    loc = CL.Localizer(TOPO)
    loc.set_paths(_paths(pairs, tx=5000, marks=700, trims=400, losses=6))
    rng = np.random.default_rng(9)
    _feed(loc, bad, 50.0, spread=600.0, rng=rng, good_after=20.0)
    v = loc.verdict(int(1000 * US))
    assert v.suspects and not v.blamed
    assert {s.verdict for s in v.suspects} == {"congestion"}


def test_load_verdict_weighs_losses_and_marks_against_comparable_paths():
    p = CL.Params()
    base = dict(c_sig=1000.0, c_losses=10.0, c_tx=10000.0, compared="pairs", outlier=False)
    # losses 30x the comparable paths', marks alike: a fault (the outage timing decides)
    assert CL.load_verdict(CL.Load(sig=100.0, losses=30.0, tx=1000.0, **base), p) is None
    # ... as are losses 10x theirs on paths whose queues are not saturated (2 % marks: the binomial test decides)
    calm = dict(c_sig=200.0, c_losses=10.0, c_tx=10000.0, compared="pairs", outlier=False)
    assert CL.load_verdict(CL.Load(sig=20.0, losses=10.0, tx=1000.0, **calm), p) is None
    # losses alike, marks alike and the comparable paths loaded: congestion everywhere
    assert CL.load_verdict(CL.Load(sig=100.0, losses=1.0, tx=1000.0, **base), p) == "congestion"
    # excess losses with fuller queues: congestion, or a slow link when it stands out among its parallel links
    assert CL.load_verdict(CL.Load(sig=500.0, losses=10.0, tx=1000.0, **base), p) == "congestion"
    assert CL.load_verdict(CL.Load(sig=500.0, losses=10.0, tx=1000.0, **{**base, "outlier": True}), p) == "degraded"
    # no load anywhere, losses like elsewhere: nothing explains them
    quiet = dict(c_sig=0.0, c_losses=0.0, c_tx=10000.0, compared="pairs", outlier=False)
    assert CL.load_verdict(CL.Load(sig=0.0, losses=0.0, tx=1000.0, **quiet), p) is None
    # nothing to compare to: losses a trickle beside marks and trims
    alone = dict(c_sig=0.0, c_losses=0.0, c_tx=0.0, compared="", outlier=False)
    assert CL.load_verdict(CL.Load(sig=300.0, losses=2.0, tx=1000.0, **alone), p) == "congestion"
    assert CL.load_verdict(CL.Load(sig=10.0, losses=2.0, tx=1000.0, **alone), p) is None
    assert CL.load_verdict(None, p) is None
    # saturated queues here and loaded, lossy paths around (one plane of a host's links under 4x overload, from
    # localize_eval's overload trial): losses 4.7x the comparable paths', a trickle beside 63x as many marks
    overload = dict(c_sig=1064.0, c_losses=3.0, c_tx=10153.0, compared="pairs", outlier=False)
    assert CL.load_verdict(CL.Load(sig=1204.0, losses=19.0, tx=13744.0, **overload), p) == "congestion"
    # ... but 36x the comparable paths' losses is a fault on the same saturated path (a gray link at 0.1 %)
    gray = dict(c_sig=11800.0, c_losses=3.0, c_tx=108042.0, compared="pairs", outlier=False)
    assert CL.load_verdict(CL.Load(sig=675.0, losses=13.0, tx=12742.0, **gray), p) is None
    # ... and so are the same losses where many comparable packets lose nothing (28x the floor of 0.5 loss), or
    # losses not a trickle beside the marks; an incast's host link (10.6x the floor over 1101 packets) is congestion
    assert CL.load_verdict(CL.Load(sig=1204.0, losses=19.0, tx=13744.0, **{**overload, "c_losses": 0.0}), p) is None
    incast = dict(c_sig=317.0, c_losses=0.0, c_tx=1101.0, compared="pairs", outlier=False)
    assert CL.load_verdict(CL.Load(sig=1691.0, losses=20.0, tx=4130.0, **incast), p) == "congestion"
    assert CL.load_verdict(CL.Load(sig=150.0, losses=19.0, tx=1374.0, **overload), p) is None
    # below saturated_min (3 % marks + trims per packet) the binomial test decides alone
    assert CL.load_verdict(CL.Load(sig=300.0, losses=19.0, tx=13744.0, **overload), p) is None


def test_outage_verdict_tells_down_flapping_and_gray_from_the_timing():
    p = CL.Params()
    us = 1_000_000
    # eight paths fail together and stay bad (probes fail): down
    once = [[int((100 + 0.5 * k) * us)] for k in range(8)]
    assert CL.outage_verdict(once, stuck=8, p=p) == "down"
    # ... and all come back together later (a reboot): down
    assert CL.outage_verdict(once, stuck=0, p=p) == "down"
    # three such bursts 100 us apart: flapping
    flap = [[int((100 + 100 * r + 0.5 * k) * us) for r in range(3)] for k in range(8)]
    assert CL.outage_verdict(flap, stuck=0, p=p) == "flapping"
    # paths failing and coming back over and over, at random: gray (one long burst of churn is not an outage)
    rng = np.random.default_rng(1)
    churn = [sorted(int(t * us) for t in rng.uniform(100, 1100, 6)) for _ in range(8)]
    assert CL.outage_verdict(churn, stuck=2, p=p) == "gray"
    # a few paths now and then: gray
    sparse = [[int((100 + 150 * k) * us)] for k in range(5)]
    assert CL.outage_verdict(sparse, stuck=0, p=p) == "gray"
