"""EV selection policies (`evpolicy`): MRC (default), ONE, OBLIVIOUS, REPS, P2C; the registry."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from mrc.core import dispatch, dtypes as D, evpolicy, evset, setup
from mrc.errors import ConfigError
from mrc.testing.harness import Network, Pair, PathFault
from mrc.units import US
from mrc.wire.constants import M_ALWAYS_SKIP, M_NONE, M_SKIP_ONCE, NackReason

MTU = 4096
G, S, B = D.EV_GOOD, D.EV_SKIP, D.EV_ASSUMED_BAD


def data_evs(pair, i=0):
    """EV values of the data packets QP `i` sent (in order), from a recording pair."""
    return [int(p["ev"]) for _, kind, p in pair.sent[i] if kind in (dispatch.K_DATA, dispatch.K_RTX)]


def recording(**kw) -> Pair:
    pair = Pair(**kw)
    pair.record = True
    return pair


def test_default_policy_is_mrc_and_names_map_to_codes():
    pair = Pair()
    assert int(pair.qp(0)["ev_policy"]) == evpolicy.EVP_MRC
    assert [setup.ev_policy_code(n) for n in ("mrc", "ONE", "Oblivious", "reps")] == [0, 1, 2, 3]
    with pytest.raises(ConfigError, match="ev_policy"):
        setup.ev_policy_code("ecmp")
    with pytest.raises(ConfigError, match="ev_policy"):
        Pair(ev_policy=7)


@pytest.mark.parametrize("name", evpolicy.NAMES)
def test_feedback_moves_ev_states_only_under_policies_with_path_health(name):
    pair = Pair(n_planes=1, evs_per_plane=8, ev_policy=name)
    T = pair.T
    evpolicy.on_feedback(T, 0, 1, D.FB_SACK, M_SKIP_ONCE, 0)
    evpolicy.on_feedback(T, 0, 2, D.FB_NACK, int(NackReason.TRIMMED), 0)
    evpolicy.on_feedback(T, 0, 3, D.FB_NACK, int(NackReason.TRIMMED_LASTHOP), 0)
    evpolicy.on_feedback(T, 0, 4, D.FB_LOSS, 0, 0)
    evpolicy.on_feedback(T, 0, 5, D.FB_TIMEOUT, 0, 0)
    evpolicy.on_feedback(T, 0, 6, D.FB_SACK, M_ALWAYS_SKIP, 0)
    evpolicy.on_feedback(T, 0, 7, D.FB_SACK, M_NONE, 0)
    states = [int(s) for s in T.ev[0, :8]["state"]]
    if evpolicy.PATH_HEALTH[evpolicy.CODE[name]]:
        assert states == [G, S, S, G, B, B, B, G]  # MRC 3.4-3.6: ECN / trim skip, loss retires
    else:
        assert states == [G] * 8
    # the controller's and the probes' inputs act under every policy
    evset.ev_input(T, 0, 0, D.EVI_CTL_DENY, 0)
    assert T.ev[0, 0]["state"] == D.EV_DENIED


def test_registry_rejects_a_module_that_breaks_the_interface():
    with pytest.raises(ValueError, match="lacks"):
        evpolicy._load(("mrc.core.evp.mrc", "mrc.core.rotation"))
    with pytest.raises(ValueError, match="MRC must stay first"):
        evpolicy._load(("mrc.core.evp.one", "mrc.core.evp.mrc"))
    with pytest.raises(ValueError, match="unique"):
        evpolicy._load(("mrc.core.evp.mrc", "mrc.core.evp.mrc"))
    assert len(evpolicy.POLICIES) <= evpolicy.MAX_POLICIES


# ---------------------------------------------------------------- ONE


def test_one_sends_everything_on_one_ev_and_ecn_does_not_move_it():
    net = Network(jitter_ps=0, default=PathFault(ecn=0.3))
    pair = recording(n_planes=2, evs_per_plane=8, ev_policy="ONE", network=net, seed=3)
    assert pair.transfer(64 * MTU)
    evs = set(data_evs(pair))
    assert len(evs) == 1
    assert int(pair.qp(0)["ecn_sacks_rx"]) > 0  # marks arrived, and the QP stayed on its EV


def test_one_picks_different_evs_for_different_qps():
    picks = set()
    for seed in range(12):
        pair = recording(n_planes=2, evs_per_plane=8, ev_policy="ONE", seed=seed)
        assert pair.transfer(4 * MTU)
        picks |= set(data_evs(pair))
    assert len(picks) >= 6  # a hash per QP, not one EV for all


def test_one_moves_to_another_ev_when_its_ev_dies():
    pair = recording(n_planes=2, evs_per_plane=8, ev_policy="ONE", seed=5)
    pair.post_write(0, 256 * MTU, wr_id=1)
    pair.run_until(lambda s: len(data_evs(s)) >= 2)
    first = data_evs(pair)[0]
    pair.net.faults[first] = PathFault(blackhole=True)
    assert pair.run_until(lambda s: any(int(e["wr_id"]) == 1 for e in s.completions()))
    evs = data_evs(pair)
    after = [e for e in evs[evs.index(first):] if e != first]
    assert after and len(set(after)) == 1  # it moved once, to one new EV
    slot = evset.find_slot(pair.T, 0, first)
    assert pair.T.ev[0, slot]["state"] == D.EV_ASSUMED_BAD


def test_one_follows_its_plane_going_down():
    pair = recording(n_planes=2, evs_per_plane=8, ev_policy="ONE", seed=2)
    assert pair.transfer(4 * MTU)
    k = int(pair.qp(0)["ev_pin"])
    plane = int(pair.T.ev[0, k]["plane"])
    dispatch.set_local_ports(pair.T, 0, np.uint32(0b11 & ~(1 << plane)), pair.now)
    pair.sent[0].clear()
    assert pair.transfer(4 * MTU, wr_id=2)
    planes = {int(pair.T.ev[0, evset.find_slot(pair.T, 0, e)]["plane"]) for e in data_evs(pair)}
    assert planes == {1 - plane}


# ---------------------------------------------------------------- OBLIVIOUS


def test_oblivious_cycles_through_every_ev_including_backups():
    pair = recording(n_planes=2, evs_per_plane=8, ev_policy="OBLIVIOUS", ev_active_target=2, seed=1)
    assert pair.transfer(64 * MTU)
    counts = Counter(data_evs(pair))
    assert len(counts) == 16  # the active set is 2, the profile 16: oblivious uses all of it
    assert max(counts.values()) - min(counts.values()) <= 2  # one packet per EV per cycle


def test_oblivious_keeps_using_a_dead_path_and_still_completes():
    pair = recording(n_planes=1, evs_per_plane=8, ev_policy="OBLIVIOUS", seed=4)
    dead = pair.ev_of(0, 3)
    pair.net.faults[dead] = PathFault(blackhole=True)
    assert pair.transfer(400 * MTU)
    evs = data_evs(pair)
    assert evs.count(dead) >= 400 // 8 - 1  # its share of the packets, every cycle: no path health
    assert pair.T.ev[0, 3]["state"] == D.EV_GOOD
    assert int(pair.qp(0)["rtx_pkts"]) >= evs.count(dead) - 1  # every packet sent there was resent
    # the same transfer under MRC retires the EV after its first loss
    mrc = recording(n_planes=1, evs_per_plane=8, seed=4)
    mrc.net.faults[dead] = PathFault(blackhole=True)
    assert mrc.transfer(400 * MTU)
    assert data_evs(mrc).count(dead) < evs.count(dead) / 3
    assert mrc.T.ev[0, 3]["state"] == D.EV_ASSUMED_BAD


# ---------------------------------------------------------------- REPS


def reps_pair(**kw) -> Pair:
    kw.setdefault("reps_reuse", 1)
    kw.setdefault("n_planes", 1)
    kw.setdefault("evs_per_plane", 32)
    return Pair(ev_policy="REPS", **kw)


def select(pair, now=0, i=0, port_mask=0xFF):
    return int(evpolicy.select_ev(pair.T, i, port_mask, now))


def test_reps_reuses_the_oldest_ev_whose_sack_came_back_unmarked():
    pair = reps_pair()
    T = pair.T
    for slot in (5, 9, 2):
        evpolicy.on_feedback(T, 0, slot, D.FB_ACKED, M_NONE, 0)
    assert [select(pair) for _ in range(3)] == [5, 9, 2]  # oldest first, each used once
    q = pair.qp(0)
    assert int(q["reps_valid"]) == 0
    rng_before = int(q["rng"])
    k = select(pair)  # nothing fresh: a random EV
    assert 0 <= k < 32 and int(q["rng"]) != rng_before


def test_reps_reuses_a_recycled_ev_as_many_times_as_one_sack_stands_for():
    pair = reps_pair(reps_reuse=3)
    evpolicy.on_feedback(pair.T, 0, 5, D.FB_ACKED, M_NONE, 0)
    evpolicy.on_feedback(pair.T, 0, 6, D.FB_ACKED, M_NONE, 0)
    assert [select(pair) for _ in range(6)] == [5, 5, 5, 6, 6, 6]
    q = Pair(ev_policy="REPS", ack_every_pkts=4).qp(0)
    assert int(q["reps_reuse"]) == 1 and int(q["reps_per_psn"]) == 1  # defaults: htsim's lifetime 1, per PSN


def test_reps_buffer_keeps_the_newest_entries():
    pair = reps_pair(reps_buffer=4)
    for slot in range(10):
        evpolicy.on_feedback(pair.T, 0, slot, D.FB_ACKED, M_NONE, 0)
    assert [select(pair) for _ in range(4)] == [6, 7, 8, 9]


def test_reps_freezes_after_a_timeout_reuses_the_cache_admits_good_evs_then_explores():
    freeze = 50 * US
    pair = reps_pair(reps_buffer=4, reps_explore=16, reps_freeze_ps=freeze)
    T = pair.T
    for slot in (3, 4, 5):
        evpolicy.on_feedback(T, 0, slot, D.FB_ACKED, M_NONE, 0)
    evpolicy.on_feedback(T, 0, 3, D.FB_TIMEOUT, 0, 10)
    q = pair.qp(0)
    assert q["reps_frozen"] == 1
    evpolicy.on_feedback(T, 0, 20, D.FB_ACKED, M_NONE, 11)  # still admitted while frozen (htsim)
    assert int(q["reps_n"]) == 4
    assert [select(pair, 12) for _ in range(9)] == [3, 4, 5, 20, 3, 4, 5, 20, 3]  # the cache in turn, fresh or not
    # the freeze ends: the buffer is emptied and 16 random EVs are explored
    assert select(pair, 10 + freeze) >= 0
    assert q["reps_frozen"] == 0 and int(q["reps_n"]) == 0
    assert int(q["reps_explore_left"]) == 15
    evpolicy.on_feedback(T, 0, 7, D.FB_ACKED, M_NONE, 20 + freeze)
    evpolicy.on_feedback(T, 0, 7, D.FB_TIMEOUT, 0, 20 + freeze)  # exploring: a timeout does not freeze
    assert q["reps_frozen"] == 0
    for _ in range(15):
        select(pair, 30 + freeze)
    assert int(q["reps_explore_left"]) == 0
    assert select(pair, 40 + freeze) == 7  # exploring over: the recycled EV again


def _slot_of_ev(pair, ev, i=0):
    return int(evset.find_slot(pair.T, i, int(ev)))


@pytest.mark.parametrize("per_psn", [1, 0])
def test_reps_an_unmarked_coalesced_sack_recycles_every_psn_it_acknowledges(per_psn):
    pair = reps_pair(ack_every_pkts=4, ack_every_bytes=1 << 30, reps_per_psn=per_psn)
    pair.post_write(0, 4 * MTU)
    pkts = [p for _, p in pair.collect(0)]
    assert len(pkts) == 4
    for p in pkts:
        pair.deliver(1, p)
    (sack,) = [p for _, p in pair.collect(1)]  # one SACK for the four packets
    pair.deliver(0, sack)
    q = pair.qp(0)
    if per_psn:
        assert int(q["reps_n"]) == 4
        assert [int(q["reps_buf"][j]) for j in range(4)] == [_slot_of_ev(pair, p["ev"]) for p in pkts]
    else:
        assert int(q["reps_n"]) == 1 and int(q["reps_buf"][0]) == _slot_of_ev(pair, pkts[3]["ev"])


def test_reps_a_marked_sack_recycles_nothing():
    pair = reps_pair(ack_every_pkts=4, ack_every_bytes=1 << 30)
    pair.post_write(0, 4 * MTU)
    pkts = [p for _, p in pair.collect(0)]
    pkts[3]["ecn"] = 3
    for p in pkts:
        pair.deliver(1, p)
    for _, s in pair.collect(1):
        pair.deliver(0, s)
    assert int(pair.qp(0)["reps_n"]) == 0


def test_reps_a_rack_loss_does_not_freeze_a_timeout_does():
    pair = reps_pair(ack_every_pkts=1, cc=setup.fixed_window_profile(window_bytes=1 << 30))
    pair.post_write(0, 8 * MTU)
    pkts = [p for _, p in pair.collect(0)]
    for p in pkts[1:]:  # PSN 0 lost: the later ones overtake it, RACK declares it lost
        pair.deliver(1, p)
    for _, s in pair.collect(1):
        pair.deliver(0, s)
    q = pair.qp(0)
    pair.advance(pair.now + 100 * US)
    assert int(q["losses"]) >= 1 and q["reps_frozen"] == 0
    pair.collect(0)  # the retransmission, lost too
    pair.advance(pair.now + 10_000 * US)  # the retransmission timeout
    assert int(q["rtx_timeouts"]) >= 1 and q["reps_frozen"] == 1


def test_reps_transfer_recycles_unmarked_evs_and_avoids_marked_ones():
    marked = 5  # EV of slot 4 on QP 0 (make_evs: plane 0, side 0, k + 1)
    net = Network(jitter_ps=0, rate_bps=200 * 10**9, faults={marked: PathFault(ecn=1.0)})
    pair = recording(n_planes=1, evs_per_plane=32, ev_policy="REPS", network=net, seed=7)
    assert pair.ev_of(0, 4) == marked
    assert pair.transfer(400 * MTU)
    evs = data_evs(pair)
    counts = Counter(evs)
    # recycling concentrates traffic on EVs that worked; the always-marked EV is never recycled,
    # so it only gets the random picks
    assert counts[marked] <= len(evs) / 32 / 3
    assert max(counts.values()) > 2 * len(evs) / 32


@pytest.mark.parametrize("policy", evpolicy.NAMES)
def test_every_policy_completes_a_lossy_transfer_exactly_once(policy):
    net = Network(default=PathFault(loss=0.02, ecn=0.05))
    pair = Pair(n_planes=2, evs_per_plane=8, ev_policy=policy, network=net, seed=11)
    assert pair.transfer(200 * MTU)
    assert int(pair.qp(1)["rx_bytes"]) == 200 * MTU


# ---------------------------------------------------------------- P2C (the worked example)


def test_p2c_takes_the_lower_rtt_of_two_random_draws():
    n = 8
    pair = Pair(n_planes=1, evs_per_plane=n, ev_active_target=n, ev_policy="P2C", seed=5)
    T = pair.T
    T.ev[0, :n]["last_rtt"] = [(k + 1) * 1000 for k in range(n)]  # slot k: the k-th fastest
    picks = Counter(select(pair) for _ in range(6400))
    for k in range(n):
        # the minimum of two uniform draws is slot k with probability ((n - k)^2 - (n - k - 1)^2) / n^2
        want = 6400 * ((n - k) ** 2 - (n - k - 1) ** 2) / n ** 2
        assert abs(picks[k] - want) < 5 * want ** 0.5 + 5, (k, picks[k], want)


def test_p2c_passes_over_skip_and_retired_evs_and_prefers_unmeasured_ones():
    pair = Pair(n_planes=1, evs_per_plane=4, ev_active_target=4, ev_policy="P2C", seed=2)
    T = pair.T
    T.ev[0, :4]["last_rtt"] = [5000, 5000, 5000, 0]  # slot 3 has no sample yet
    evpolicy.on_feedback(T, 0, 1, D.FB_LOSS, 0, 0)  # retired (path health kept)
    evpolicy.on_feedback(T, 0, 2, D.FB_SACK, M_SKIP_ONCE, 0)  # skipped once
    picks = [select(pair) for _ in range(200)]
    assert 1 not in picks
    assert T.ev[0, 2]["state"] == G  # its skip was consumed when a draw passed it
    assert Counter(picks)[3] > Counter(picks)[0]


# ---------------------------------------------------------------- next_ev_hint


@pytest.mark.parametrize("name", evpolicy.NAMES)
def test_next_ev_hint_changes_nothing_and_names_what_select_takes(name):
    pair = Pair(n_planes=2, evs_per_plane=8, ev_active_target=16, ev_policy=name, seed=4)
    T = pair.T
    if name == "REPS":
        for slot in (3, 12):
            evpolicy.on_feedback(T, 0, slot, D.FB_ACKED, M_NONE, 0)
    hits = 0
    for step in range(40):
        plane = step % 2
        qp_before, ev_before, order_before = T.qp[0].tobytes(), T.ev[0].tobytes(), T.ev_order[0].tobytes()
        k, o = (int(x) for x in evpolicy.next_ev_hint(T, 0, plane))
        assert (T.qp[0].tobytes(), T.ev[0].tobytes(), T.ev_order[0].tobytes()) == (qp_before, ev_before, order_before)
        got = int(evpolicy.select_ev(T, 0, 1 << plane, step))
        if k >= 0:
            assert T.ev[0, k]["plane"] == plane
            hits += k == got
        if o >= 0:
            assert 0 <= o < 16
    if name in ("MRC", "OBLIVIOUS"):
        assert hits >= 30  # every pick but a new cycle's first
    if name == "ONE":
        assert hits >= 19  # the pinned EV, on its plane
