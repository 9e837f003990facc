"""QP and CC configuration: documented defaults, validation naming the key, table-size checks."""
from __future__ import annotations

import pytest

from mrc.core import dtypes as D, setup, tables
from mrc.errors import ConfigError
from mrc.units import US


def test_defaults_are_written_and_derived_ones_follow_the_profile():
    T = tables.allocate(1, max_ev=64, window=1024)
    cfg = setup.configure_qp(T, 0, 64, 5 * US)
    q = T.qp[0]
    assert cfg["ev_min_active"] == 16 and q["ev_min_active"] == 16  # n_ev / 4
    assert cfg["reorder_window_ps"] == 5 * US and cfg["rev_probe_interval_ps"] == 5 * US  # the base RTT
    for key in ("mtu", "mpr", "mpr_dest", "timeout", "retry_linear", "retry_exp", "ack_every_pkts", "always_skip_marks"):
        assert q[key] == setup.QP_DEFAULTS[key], key


@pytest.mark.parametrize("key, value", [("mpr", 0), ("timeout", 25), ("retry_linear", 8), ("retry_exp", 26),
                                        ("dscp_data", 64), ("probe_successes", 0), ("mtu", 1.5), ("ack_every_pkts", True)])
def test_out_of_range_attributes_name_the_key(key, value):
    T = tables.allocate(1, max_ev=8)
    with pytest.raises(ConfigError) as e:
        setup.configure_qp(T, 0, 8, 5 * US, **{key: value})
    assert e.value.key == f"qp.{key}"


def test_unknown_attribute_and_table_limits():
    T = tables.allocate(1, max_ev=8, window=256)
    with pytest.raises(ConfigError, match="unknown QP attribute"):
        setup.configure_qp(T, 0, 8, 5 * US, mrp=2)
    with pytest.raises(ConfigError) as e:
        setup.configure_qp(T, 0, 8, 5 * US, mpr=3)  # 384 PSNs in a 256-slot window would alias
    assert e.value.key == "qp.mpr"
    with pytest.raises(ConfigError) as e:
        setup.configure_qp(T, 0, 8, 5 * US, mpr=2, mpr_dest=4)
    assert e.value.key == "qp.mpr_dest"
    with pytest.raises(ConfigError) as e:
        setup.configure_qp(T, 0, 9, 5 * US, mpr=2, mpr_dest=2)
    assert e.value.key == "qp.n_ev"
    with pytest.raises(ConfigError) as e:
        setup.configure_qp(T, 0, 8, 5 * US, mpr=2, mpr_dest=2, ev_min_active=9)
    assert e.value.key == "qp.ev_min_active"
    setup.configure_qp(T, 0, 8, 5 * US, mpr=2, mpr_dest=2)


def test_nscc_profile_scales_with_the_bandwidth_delay_product():
    prof = setup.nscc_profile(mtu=4096, rate_bps=800 * 10**9, base_rtt_ps=10 * US)
    bdp = 800 * 10**9 * 10 * US // (8 * 10**12)
    assert prof["init_cwnd"] == prof["max_cwnd"] == 3 * bdp // 2  # UE 1.0.3 Table 3-77: cwnd starts at MaxWnd
    assert prof["target_delay"] == 7_500_000 and prof["qa_threshold"] == 4 * prof["target_delay"]
    assert prof["algorithm"] == D.CC_NSCC
    with pytest.raises(ConfigError) as e:
        setup.nscc_profile(min_cwnd=10**9)
    assert e.value.key == "cc.min_cwnd"
    with pytest.raises(ConfigError) as e:
        setup.nscc_profile(alpha=1.0)
    assert e.value.key == "cc.alpha"


def test_allocate_refuses_bad_sizes():
    for kw, key in ((dict(window=1000), "window"), (dict(window=64), "window"), (dict(max_ev=0), "max_ev"),
                    (dict(window=1 << 24), "window")):
        with pytest.raises(ConfigError) as e:
            tables.allocate(1, **kw)
        assert e.value.key == key


def test_nscc_profile_derived_values_follow_overrides():
    # A lower max_cwnd also bounds the initial and minimum windows (first burst within max_cwnd).
    p = setup.nscc_profile(mtu=4096, rate_bps=400 * 10**9, base_rtt_ps=8 * US, max_cwnd=16384)
    assert p["max_cwnd"] == 16384 and p["init_cwnd"] == 16384 and p["min_cwnd"] == 4096
    # QuickAdapt threshold and proportional gain follow an overridden target delay.
    p = setup.nscc_profile(mtu=4096, base_rtt_ps=8 * US, target_delay=2 * US)
    a, b = (800 * 10**9 * 8 * US // (8 * 10**12)) / setup.REF_BDP_BYTES, 2 * US / setup.REF_RTT_PS
    assert p["qa_threshold"] == 8 * US and p["pi_gain"] == pytest.approx(4.0 * 4096 * a * b / (2 * US))
    # An explicit initial window outside [min_cwnd, max_cwnd] is refused, naming the key.
    with pytest.raises(ConfigError, match="cc.init_cwnd"):
        setup.nscc_profile(max_cwnd=16384, init_cwnd=65536)


def test_work_completion_statuses_are_ibverbs_values():
    """The WC status codes are ibv_wc_status's (rdma-core verbs.h: SUCCESS 0, WR_FLUSH_ERR 5,
    REM_INV_REQ_ERR 9, REM_ACCESS_ERR 10, REM_OP_ERR 11, RETRY_EXC_ERR 12), each named once."""
    from mrc.core import dtypes as D

    verbs = {"SUCCESS": 0, "WR_FLUSH_ERR": 5, "REM_INV_REQ_ERR": 9, "REM_ACCESS_ERR": 10, "REM_OP_ERR": 11,
             "RETRY_EXC_ERR": 12}
    assert {name: getattr(D, f"WC_{name}") for name in verbs} == verbs
    assert D.WC_STATUS_NAMES == {v: k for k, v in verbs.items()}
