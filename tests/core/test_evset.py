"""The EV set: the per-EV state table, the active/backup split per plane, selection, events."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.core import dtypes as D, evpolicy, evset
from mrc.testing.harness import Pair

MTU = 4096
G, S, B, X = D.EV_GOOD, D.EV_SKIP, D.EV_ASSUMED_BAD, D.EV_DENIED

# The transitions of mrc-public-notes 3.4 (MANI; EMU "spec Figure 5"), written out independently
# of EV_FSM: (state, input) -> next state.
NOTES_TABLE = {
    (G, D.EVI_ECN_SACK): S,  # SACK M = SKIP_ONCE
    (G, D.EVI_TRIM_NACK): S,  # NACK TRIMMED
    (G, D.EVI_ALWAYS_SKIP): B,  # SACK M = ALWAYS_SKIP
    (G, D.EVI_LOSS): B,  # timeout with no trim and no SACK
    (S, D.EVI_ROTATION): G,  # the skip is consumed by the next rotation
    (S, D.EVI_LOSS): B,
    (B, D.EVI_PROBE_OK): G,  # probe answered, M = NONE
    (B, D.EVI_PROBE_ECN): S,  # probe answered, M = SKIP_ONCE
    (B, D.EVI_ROTATION): B,  # the rotation never revives a retired EV
    (G, D.EVI_CTL_DENY): X,
    (X, D.EVI_CTL_GOOD): G,  # DENIED: only the controller brings it back
}


def test_ev_fsm_has_the_transitions_of_the_notes():
    for (state, inp), nxt in NOTES_TABLE.items():
        assert evset.EV_FSM[state, inp] == nxt, (D.EV_STATE_NAMES[state], inp)


@pytest.mark.parametrize("inp", [i for i in range(D.N_EV_INPUTS) if i not in (D.EVI_CTL_GOOD,)])
def test_denied_leaves_only_by_the_controller(inp):
    assert evset.EV_FSM[X, inp] == X
    assert evset.EV_FSM[D.EV_UNUSED, inp] == D.EV_UNUSED


@pytest.mark.parametrize("state", [G, S, B])
def test_the_controller_reaches_every_state_from_every_state(state):
    assert evset.EV_FSM[state, D.EVI_CTL_DENY] == X
    assert evset.EV_FSM[state, D.EVI_CTL_GOOD] == G
    assert evset.EV_FSM[state, D.EVI_CTL_BAD] == B


def active(pair, i=0):
    out = np.zeros(D.MAX_PLANES, dtype=np.int64)
    evset.active_per_plane(pair.T, i, out)
    return out[: int(pair.qp(i)["n_planes"])].tolist()


def test_active_set_is_spread_evenly_over_the_planes():
    pair = Pair(n_planes=3, evs_per_plane=8, ev_active_target=14)
    assert active(pair) == [5, 5, 4]  # 14 = 5 + 5 + 4
    assert [evset.plane_share(pair.qp(0), p) for p in range(3)] == [5, 5, 4]
    pair = Pair(n_planes=4, evs_per_plane=4, ev_active_target=2)
    assert active(pair) == [1, 1, 1, 1]  # at least one per plane


def test_a_retired_ev_is_replaced_by_a_backup_of_the_same_plane():
    pair = Pair(n_planes=2, evs_per_plane=8, ev_active_target=8, ev_min_active=0)
    T = pair.T
    row = T.ev[0]
    for plane in (0, 1):
        for _ in range(3):
            victim = next(k for k in range(16) if row[k]["active"] and row[k]["plane"] == plane)
            backups_before = {k for k in range(16) if not row[k]["active"] and row[k]["plane"] == plane
                              and row[k]["state"] == G}
            evset.ev_input(T, 0, victim, D.EVI_LOSS, 0)
            assert row[victim]["state"] == B and not row[victim]["active"]
            promoted = {k for k in range(16) if row[k]["active"]} & backups_before
            assert len(promoted) == 1  # exactly one backup of the same plane took its place
            assert active(pair) == [4, 4]


def test_a_plane_that_runs_out_of_evs_keeps_what_it_has_and_the_others_keep_their_share():
    pair = Pair(n_planes=2, evs_per_plane=4, ev_active_target=6, ev_min_active=0)
    T = pair.T
    plane1 = [k for k in range(8) if T.ev[0, k]["plane"] == 1]
    assert active(pair) == [3, 3]
    for n, k in enumerate(plane1):
        evset.ev_input(T, 0, k, D.EVI_CTL_DENY, 0)
        assert active(pair) == [3, min(3, 3 - n)]
    assert active(pair) == [3, 0]  # plane 0 still sprays over its full share
    evset.ev_input(T, 0, plane1[0], D.EVI_CTL_GOOD, 0)
    assert active(pair) == [3, 1]


def test_the_active_set_follows_a_new_target():
    pair = Pair(n_planes=2, evs_per_plane=8, ev_active_target=16)
    assert active(pair) == [8, 8]
    pair.qp(0)["ev_active_target"] = 4
    evset.rebalance(pair.T, 0)
    assert active(pair) == [2, 2]


def test_selection_visits_every_active_ev_once_per_cycle_alternating_planes():
    pair = Pair(n_planes=2, evs_per_plane=8, ev_active_target=8)
    T = pair.T
    act = {k for k in range(16) if T.ev[0, k]["active"]}
    picks = [evpolicy.select_ev(T, 0, 0xFF, 0) for _ in range(3 * len(act))]
    assert [int(T.ev[0, k]["plane"]) for k in picks[:8]] == [0, 1] * 4
    for c in range(3):
        assert set(picks[c * 8:(c + 1) * 8]) == act  # one packet per active EV per cycle
    assert picks[:8] != picks[8:16]  # the visiting order is re-drawn every cycle


def test_selection_respects_the_port_mask_and_port_status():
    pair = Pair(n_planes=2, evs_per_plane=4)
    T = pair.T
    assert {int(T.ev[0, evpolicy.select_ev(T, 0, 0b10, 0)]["plane"]) for _ in range(8)} == {1}
    pair.qp(0)["remote_ports"] = 0b01
    assert evpolicy.select_ev(T, 0, 0b10, 0) == -1  # the only allowed port's plane is down at the peer
    assert {int(T.ev[0, evpolicy.select_ev(T, 0, 0xFF, 0)]["plane"]) for _ in range(8)} == {0}


def test_a_skipped_ev_misses_exactly_one_turn():
    pair = Pair(n_planes=1, evs_per_plane=4, ev_active_target=4)
    T = pair.T
    evset.ev_input(T, 0, 2, D.EVI_ECN_SACK, 0)
    assert T.ev[0, 2]["state"] == S and T.ev[0, 2]["active"]  # skipped, still in the active set
    picks = [evpolicy.select_ev(T, 0, 0xFF, 0) for _ in range(7)]
    assert picks.count(2) == 1 and 2 not in picks[:3]  # skipped once, then back
    assert T.ev[0, 2]["state"] == G


def test_ev_min_active_counts_usable_evs_and_skips_instead():
    pair = Pair(n_planes=1, evs_per_plane=4, ev_active_target=4, ev_min_active=2)
    T = pair.T
    evset.ev_input(T, 0, 0, D.EVI_LOSS, 0)
    evset.ev_input(T, 0, 1, D.EVI_ALWAYS_SKIP, 0)
    assert [int(T.ev[0, k]["state"]) for k in range(4)] == [B, B, G, G]
    evset.ev_input(T, 0, 2, D.EVI_LOSS, 0)  # would leave 1 < 2 usable: only skipped
    assert int(T.ev[0, 2]["state"]) == S and pair.qp(0)["ev_floor_hits"] == 1
    evset.ev_input(T, 0, 3, D.EVI_CTL_BAD, 0)  # the controller is not held back by the floor
    assert int(T.ev[0, 3]["state"]) == B


@pytest.mark.parametrize("inp", [D.EVI_LOSS, D.EVI_ALWAYS_SKIP])
def test_ev_min_active_floor_holds_for_a_loss_and_for_always_skip(inp):
    """A retirement down to exactly ev_min_active usable EVs happens; one below it only skips, each time."""
    pair = Pair(n_planes=1, evs_per_plane=4, ev_active_target=4, ev_min_active=3)
    T = pair.T
    assert evset.ev_input(T, 0, 0, inp, 0) == B  # 4 usable -> 3: at the floor, allowed
    assert evset.ev_input(T, 0, 1, inp, 0) == S  # 3 -> 2 would be below it: skipped instead
    assert pair.qp(0)["ev_floor_hits"] == 1 and pair.qp(0)["ev_skips"] == 1
    assert evset.ev_input(T, 0, 1, inp, 0) == S  # again, on the skipped EV: still held, counted again
    assert pair.qp(0)["ev_floor_hits"] == 2
    assert evset.usable_count(T, 0) == 3
    assert [int(T.ev[0, k]["state"]) for k in range(4)] == [B, S, G, G]


def _answer_probe(T, k, m=0):
    T.ev[0, k]["probe_outstanding"] = 1
    evset.probe_answered(T, 0, k, m, 0)
    return int(T.ev[0, k]["state"])


@pytest.mark.parametrize("back_via", ["GOOD", "SKIP"])
def test_a_re_retired_ev_needs_probe_successes_answers_again(back_via):
    """The count of answered probes starts from zero at each retirement: an EV that came back and is
    retired again needs `probe_successes` answers again, not one."""
    pair = Pair(n_planes=1, evs_per_plane=4, probe_successes=3, ev_min_active=0)
    T = pair.T
    m = 0 if back_via == "GOOD" else 1  # the last answer unmarked -> GOOD, ECN-marked -> SKIP
    assert evset.ev_input(T, 0, 0, D.EVI_LOSS, 0) == B
    assert [_answer_probe(T, 0, m) for _ in range(3)] == [B, B, G if m == 0 else S]
    assert evset.ev_input(T, 0, 0, D.EVI_LOSS, 0) == B  # retired again
    assert T.ev[0, 0]["probe_ok"] == 0
    assert [_answer_probe(T, 0) for _ in range(3)] == [B, B, G]


def events(pair):
    return [(int(e["value"]), D.EV_STATE_NAMES[int(e["ev_state"])], int(e["drop_count"]))
            for e in pair.events if e["kind"] == D.E_EV_STATE]


def test_events_on_transitions_to_assumed_bad_and_back_to_good_only():
    pair = Pair(n_planes=1, evs_per_plane=4, ev_active_target=4, ev_min_active=0, probe_successes=1)
    T = pair.T
    for inp in (D.EVI_ECN_SACK, D.EVI_ROTATION, D.EVI_TRIM_NACK, D.EVI_ROTATION):
        evset.ev_input(T, 0, 0, inp, 0)
    assert events(pair) == [] and pair.T.evt_n[0] == 0  # SKIP is GOOD to the controller: no events
    T.ev[0, 1]["losses"] = 3
    evset.ev_input(T, 0, 1, D.EVI_LOSS, 0)
    evset.ev_input(T, 0, 2, D.EVI_LOSS, 0)
    T.ev[0, 1]["probe_outstanding"] = T.ev[0, 2]["probe_outstanding"] = 1
    evset.probe_answered(T, 0, 1, 0, 0)  # M = NONE -> GOOD
    evset.probe_answered(T, 0, 2, 1, 0)  # M = SKIP_ONCE -> SKIP, which the controller sees as GOOD
    pair._drain_events()
    assert events(pair) == [(1, "ASSUMED_BAD", 3), (2, "ASSUMED_BAD", 0), (1, "GOOD", 3), (2, "GOOD", 0)]
    assert [int(T.ev[0, k]["state"]) for k in (1, 2)] == [G, S]


@pytest.mark.parametrize("mask, expected", [(0, []), (1, ["ASSUMED_BAD"]), (2, ["GOOD"]), (3, ["ASSUMED_BAD", "GOOD"])])
def test_ev_event_mask(mask, expected):
    pair = Pair(n_planes=1, evs_per_plane=4, ev_event_mask=mask, probe_successes=1, ev_min_active=0)
    evset.ev_input(pair.T, 0, 0, D.EVI_LOSS, 0)
    evset.ev_input(pair.T, 0, 0, D.EVI_CTL_GOOD, 0)
    pair._drain_events()
    assert [s for _, s, _ in events(pair)] == expected


def test_probe_answers_need_probe_successes_in_a_row():
    pair = Pair(n_planes=1, evs_per_plane=4, probe_successes=3, ev_min_active=0)
    T = pair.T
    evset.ev_input(T, 0, 0, D.EVI_LOSS, 0)
    for n in range(2):
        T.ev[0, 0]["probe_outstanding"] = 1
        evset.probe_answered(T, 0, 0, 0, 0)
        assert T.ev[0, 0]["state"] == B and pair.qp(0)["ev_probe_due"] == 1  # probes again at once
    evset.probe_answered(T, 0, 0, 0, 0)  # no probe outstanding (a duplicate answer): ignored
    assert T.ev[0, 0]["probe_ok"] == 2
    T.ev[0, 0]["probe_outstanding"] = 1
    evset.probe_answered(T, 0, 0, 0, 0)
    assert T.ev[0, 0]["state"] == G


def test_fresh_reverse_evs_owed_per_plane_are_capped_at_64():
    """Each piece of evidence of lost control packets owes the plane one fresh reverse EV, up to
    REV_FRESH_MAX = 64 (a burst of evidence does not owe more); other planes owe nothing."""
    pair = Pair(n_planes=2, evs_per_plane=4)
    T = pair.T
    for n in range(1, 101):
        evset.drop_rev_ev(T, 0, 1)
        assert int(pair.qp(0)["rev_fresh"][1]) == min(n, 64)
    assert int(pair.qp(0)["rev_fresh"][0]) == 0 and int(pair.qp(0)["rev_ev"][1]) == -1
    evset.drop_rev_ev(T, 0, 2)  # no such plane: nothing
    evset.drop_rev_ev(T, 0, -1)
    assert list(pair.qp(0)["rev_fresh"][:2]) == [0, 64]


def test_next_probe_time_is_strictly_after_now():
    """A probe due at `now` is not a future deadline: it is sent (ev_probe_due), not re-armed at `now`."""
    pair = Pair(n_planes=1, evs_per_plane=4, ev_min_active=0)
    T = pair.T
    evset.ev_input(T, 0, 0, D.EVI_LOSS, 0)
    evset.ev_input(T, 0, 1, D.EVI_LOSS, 0)
    T.ev[0, 0]["probe_deadline"] = 1000
    T.ev[0, 1]["probe_deadline"] = 3000
    assert evset.next_probe_time(T, 0, 999) == 1000
    assert evset.next_probe_time(T, 0, 1000) == 3000  # the one due now is not "next"
    assert evset.next_probe_time(T, 0, 3000) == D.NEVER


def test_a_plane_coming_back_makes_a_probe_due_at_exactly_now():
    pair = Pair(n_planes=2, evs_per_plane=4, ev_min_active=0)
    T = pair.T
    evset.ev_input(T, 0, 0, D.EVI_LOSS, 0)  # slot 0: plane 0
    T.ev[0, 0]["probe_deadline"] = 5000
    pair.qp(0)["ev_probe_due"] = 0
    evset.planes_back(T, 0, 0b10, 5000)  # another plane: nothing
    assert pair.qp(0)["ev_probe_due"] == 0
    evset.planes_back(T, 0, 0b01, 4999)  # not yet due: its deadline is armed instead
    assert pair.qp(0)["ev_probe_due"] == 0 and pair.qp(0)["ev_probe_deadline"] <= 5000
    evset.planes_back(T, 0, 0b01, 5000)  # due at exactly now
    assert pair.qp(0)["ev_probe_due"] == 1
