"""DCQCN reaction point: the formulas one by one, the bugs that made roce-ecmp over-cut, and a property
test against a naive reference model (`dcqcn_ref.RefRP`) under random event sequences."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrc.emulator import scenario
from mrc.emulator.state import NEVER
from mrc.emulator.transports import dcqcn, dcqcn_profiles, roce
from mrc.errors import ConfigError
from tests.emulator.dcqcn_ref import RefRP
from tests.emulator.helpers import make

LINE = 100_000_000_000
US = 1_000_000  # ps


def _rp(**kw):
    """A parameter row: ConnectX firmware defaults at 100G unless overridden (times in ps)."""
    rp = np.zeros(1, roce.RP)
    r = rp[0]
    r["line_rate"] = LINE
    r["min_rate"] = 1_000_000
    r["rai"] = 5_000_000
    r["rhai"] = 50_000_000
    r["g"] = 5 / 1024
    r["alpha_init"] = 1023 / 1024
    r["alpha_ps"] = 1 * US
    r["dec_ps"] = 4 * US
    r["inc_ps"] = 300 * US
    r["F"] = 1
    r["bc"] = 32767
    r["clamp"] = 0
    r["clamp_time"] = 1
    r["framing"] = 0
    for k, v in kw.items():
        r[k] = v
    return rp


def _row(rate=LINE):
    R = np.zeros(1, roce.ROCE)
    r = R[0]
    r["rate"] = r["target"] = rate
    r["last_dec"] = -1
    r["inc_at"] = NEVER
    return R


def test_first_cnp_starts_alpha_and_cuts_by_half_alpha():
    rp, R = _rp(), _row()
    # long before the first CNP alpha does not decay (the old code decayed it from the flow's start, so a
    # flow congested after 1 ms cut by 1 % instead of ~50 %)
    dcqcn.on_cnp(R[0], rp[0], 1000 * US)
    a = 1023 / 1024
    assert R[0]["alpha"] == a and R[0]["cc_on"] == 1
    assert R[0]["rate"] == math.floor(LINE * (1 - a / 2))
    assert R[0]["target"] == LINE  # clamp_tgt_rate off: no increase since the (virtual) last cut
    assert R[0]["inc_at"] == 1300 * US and R[0]["cuts"] == 1


def test_consecutive_cuts_do_not_lower_the_target_without_an_increase():
    # the cause of the 10x incast: during one feedback delay every CNP also pulled the target down, so
    # recovery aimed at the collapsed rate (ConnectX clamp_tgt_rate = 0, HPCC's CLAMP_TARGET_RATE 0)
    rp, R = _rp(), _row()
    for k in range(5):
        dcqcn.on_cnp(R[0], rp[0], k * 4 * US)
    assert R[0]["cuts"] == 5 and R[0]["rate"] < LINE // 16
    assert R[0]["target"] == LINE
    # after an increase the next cut does clamp the target to the current rate
    dcqcn.on_sent(R[0], rp[0], 32767)  # byte counter: one increase (fast recovery)
    before = int(R[0]["rate"])
    dcqcn.on_cnp(R[0], rp[0], 40 * US)
    assert R[0]["target"] == before
    # with clamp_tgt_rate on (the paper's rule) every cut sets the target
    rp2, R2 = _rp(clamp=1), _row()
    dcqcn.on_cnp(R2[0], rp2[0], 0)
    r1 = int(R2[0]["rate"])
    dcqcn.on_cnp(R2[0], rp2[0], 4 * US)
    assert R2[0]["target"] == r1


def test_timer_increase_clamps_only_with_clamp_after_time_inc():
    for clamp_time, want_target_is_rate in ((1, True), (0, False)):
        rp, R = _rp(clamp_time=clamp_time, bc=0), _row()
        dcqcn.on_cnp(R[0], rp[0], 0)
        dcqcn.on_timer(R[0], rp[0], 300 * US)  # fast recovery by the timer
        rate = int(R[0]["rate"])
        dcqcn.on_cnp(R[0], rp[0], 301 * US)
        assert (R[0]["target"] == rate) == want_target_is_rate


def test_a_cut_never_goes_below_the_minimum_rate():
    rp, R = _rp(min_rate=100_000_000), _row(rate=150_000_000)
    dcqcn.on_cnp(R[0], rp[0], 0)
    assert R[0]["rate"] == 100_000_000


def test_cnp_within_the_decrease_period_cuts_when_it_ends():
    rp, R = _rp(), _row()
    dcqcn.on_cnp(R[0], rp[0], 0)
    r1 = int(R[0]["rate"])
    dcqcn.on_cnp(R[0], rp[0], 1 * US)  # remembered, not lost (the old code dropped it)
    assert R[0]["rate"] == r1 and R[0]["dec_pending"] == 1
    assert dcqcn.dec_deadline(R[0], rp[0]) == 4 * US
    dcqcn.on_timer(R[0], rp[0], 4 * US)
    assert R[0]["rate"] < r1 and R[0]["dec_pending"] == 0 and R[0]["cuts"] == 2
    assert dcqcn.dec_deadline(R[0], rp[0]) == NEVER


def test_alpha_per_interval():
    rp, R = _rp(g=1 / 256, alpha_init=1.0), _row()
    dcqcn.on_cnp(R[0], rp[0], 0)  # starts alpha at 1 (this CNP is the initialisation)
    dcqcn.on_cnp(R[0], rp[0], 2_500_000)  # a CNP in the interval 2-3 us
    dcqcn.update_alpha(R[0], rp[0], 11 * US)
    g, want = 1 / 256, 1.0
    for k in range(11):
        want = (1 - g) * want + (g if k == 2 else 0.0)
    assert R[0]["alpha"] == pytest.approx(want, rel=1e-14)
    assert R[0]["alpha_t"] == 11 * US


def test_increase_stages_fast_recovery_additive_hyper():
    # timer only, F = 5: five fast-recovery steps halve the gap to the target, the sixth adds R_AI,
    # then hyper increase adds i * R_HAI (the old code did F - 1 fast-recovery steps)
    rp = _rp(F=5, bc=0, rai=20_000_000, rhai=200_000_000)
    R = _row(rate=40_000_000_000)
    R[0]["target"] = 60_000_000_000
    seen = []
    for _ in range(8):
        dcqcn.increase(R[0], rp[0], True)
        seen.append((int(R[0]["rate"]), int(R[0]["target"])))
    gap = 20_000_000_000
    for k in range(5):
        gap //= 2
        assert seen[k] == (60_000_000_000 - gap, 60_000_000_000)
    t5 = 60_000_000_000 + 20_000_000
    assert seen[5][1] == t5
    assert seen[6][1] == t5 + 200_000_000
    assert seen[7][1] == t5 + 200_000_000 + 2 * 200_000_000
    # with the byte counter: hyper only once both counters passed F
    rp = _rp(F=1, bc=1000, rai=5, rhai=50)
    R = _row(rate=10_000_000_000)
    R[0]["target"] = 20_000_000_000
    for _ in range(3):
        dcqcn.on_sent(R[0], rp[0], 1000)  # fast recovery, then additive, additive
    assert R[0]["target"] == 20_000_000_000 + 2 * 5
    for k in range(3):  # timer stages 0, 1: additive (min(t, b) <= F); stage 2: min(2, 3) > F: hyper, 1 x rhai
        R[0]["inc_at"] = k
        dcqcn.on_timer(R[0], rp[0], k)
    assert R[0]["target"] == 20_000_000_000 + 4 * 5 + 50


def test_recovery_reaches_line_rate_and_the_timer_stops():
    rp, R = _rp(bc=0), _row()
    dcqcn.on_cnp(R[0], rp[0], 0)
    t = 0
    while R[0]["inc_at"] != NEVER:
        t = int(R[0]["inc_at"])
        dcqcn.on_timer(R[0], rp[0], t)
        assert t < 100_000 * US, "the increase timer never stops"
    assert R[0]["rate"] == LINE and R[0]["target"] == LINE


def test_a_rate_change_repaces_the_next_packet():
    # a QP paced at a collapsed rate waited the old packet gap after its rate was raised again
    # (16 ms for a 4 KB packet at 2 Mb/s): the next packet follows the new rate
    rp, R = _rp(bc=0), _row(rate=2_000_000)
    r = R[0]
    r["tx_at"] = 0
    r["tx_bytes"] = 4160
    dcqcn.repace(r)
    assert r["next_send"] == 16_640_000_000
    r["target"] = LINE
    dcqcn.increase(r, rp[0], True)
    assert r["next_send"] == math.ceil(4160 * 8 * 1e12 / r["rate"])


def _compiled(p):
    return _rp(line_rate=LINE, min_rate=p["min_rate"], rai=p["rai"], rhai=p["rhai"], g=p["g"],
               alpha_init=p["alpha_init"], alpha_ps=p["alpha_int"], dec_ps=p["dec"], inc_ps=p["inc"], F=p["F"],
               bc=p["bc"], clamp=int(p["clamp"]), clamp_time=int(p["clamp_time"]))


def _fire_timers(r, rp, t):
    """What the engine does: on_timer at each deadline up to t."""
    while True:
        d = min(r["inc_at"], dcqcn.dec_deadline(r, rp))
        if d > t:
            return
        dcqcn.on_timer(r, rp, d)


params = st.fixed_dictionaries({
    "min_rate": st.sampled_from([1_000_000, 1_000_000_000]),
    "rai": st.sampled_from([5_000_000, 20_000_000]), "rhai": st.sampled_from([50_000_000, 200_000_000]),
    "g": st.sampled_from([1 / 256, 5 / 1024, 1 / 16]), "alpha_init": st.sampled_from([1.0, 1023 / 1024, 0.5]),
    "alpha_int": st.sampled_from([1 * US, 55 * US]), "dec": st.sampled_from([0, 4 * US, 50 * US]),
    "inc": st.sampled_from([55 * US, 300 * US]), "F": st.integers(0, 5), "bc": st.sampled_from([0, 32767, 200_000]),
    "clamp": st.booleans(), "clamp_time": st.booleans(),
})
events = st.lists(st.tuples(st.integers(0, 40 * US), st.sampled_from(["cnp", "sent", "idle"]),
                            st.integers(64, 40_000)), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None)
@given(params, events)
def test_matches_the_reference_model(p, evs):
    rp = _compiled(p)[0]
    R = _row()
    r = R[0]
    ref = RefRP(p, LINE)
    t = 0
    for dt, kind, nbytes in evs:
        t += dt
        _fire_timers(r, rp, t)
        ref.advance(t)
        if kind == "cnp":
            dcqcn.on_cnp(r, rp, t)
            ref.cnp(t)
        elif kind == "sent":
            dcqcn.on_sent(r, rp, nbytes)
            ref.sent(t, nbytes)
        assert r["rate"] == pytest.approx(ref.rc, abs=4), (kind, t)
        assert r["target"] == pytest.approx(ref.rt, abs=4)
        if ref.alpha is not None:
            dcqcn.update_alpha(r, rp, t)
            assert r["alpha"] == pytest.approx(ref.alpha, rel=1e-9)
        assert min_rate_ok(r, p)


def min_rate_ok(r, p):
    return p["min_rate"] <= r["rate"] <= LINE and r["rate"] <= r["target"] <= LINE


# ---------------------------------------------------------------- profiles


def test_every_profile_sets_every_key_and_parses():
    for name in dcqcn_profiles.PROFILES:
        d = dcqcn_profiles.defaults(name, 100)
        assert set(d) == set(dcqcn_profiles.KEYS), name
        sc = scenario.parse(make(transport={"dcqcn_profile": name}), "t")
        assert sc.transport["dcqcn_profile"] == name
    tuned = dcqcn_profiles.defaults("tuned", 400)
    assert tuned["dcqcn_rai_mbps"] == 80 and tuned["dcqcn_rhai_mbps"] == 800 and tuned["dcqcn_inc_us"] == 55
    sc = scenario.parse(make(transport={"dcqcn_profile": "connectx", "dcqcn_inc_us": 100}), "t")
    assert sc.transport["dcqcn_inc_us"] == 100 and sc.transport["dcqcn_bc_bytes"] == 32767


def test_switch_marking_profile_for_dcqcn():
    assert scenario.parse(make(), "t").switch.ecn_pmax == 0.2
    assert scenario.parse(make(switch={"ecn_pmax": 1.0}), "t").switch.ecn_pmax == 1.0
    assert scenario.parse(make(transport={"dcqcn": False}), "t").switch.ecn_pmax == 1.0


def test_unknown_profile_is_an_error():
    with pytest.raises(ConfigError) as exc:
        scenario.parse(make(transport={"dcqcn_profile": "cx9"}), "t")
    assert exc.value.key == "transport.dcqcn_profile"
