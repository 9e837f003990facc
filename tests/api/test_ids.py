"""Identifiers an off-path sender would need (QPN, R_Key, initial PSN): random unless a seed is given."""
from __future__ import annotations

from mrc.api import Device


def ids(dev: Device) -> tuple:
    cq = dev.create_cq(16)
    qps = [dev.create_qp(cq).qp_num for _ in range(3)]
    rkeys = [dev.reg_mr(bytearray(64)).rkey for _ in range(3)]
    return qps, rkeys, [dev.initial_psn() for _ in range(3)]


def test_devices_without_a_seed_draw_different_qpns_rkeys_and_psns():
    a, b = ids(Device()), ids(Device())
    for x, y in zip(a, b):
        assert not set(x) & set(y), (x, y)
    assert all(0x10 <= q < 1 << 24 for q in a[0] + b[0])
    assert all(0 <= p < 1 << 24 for p in a[2] + b[2])


def test_a_seed_makes_the_identifiers_reproducible():
    assert ids(Device(seed=5)) == ids(Device(seed=5))
    assert ids(Device(seed=5)) != ids(Device(seed=6))


def test_unseeded_auto_ev_profiles_differ_between_devices():
    evs = []
    for dev in (Device(), Device()):
        dev.ctl.modify_ev_profile(1, mode="AUTO", count=8, min_active=2, event_mask=3, state="OFFLINE")
        dev.ctl.modify_ev_profile(1, state="ONLINE")
        evs.append(dev.ctl.query_ev_array(1))
    assert evs[0] != evs[1]
