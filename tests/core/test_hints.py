"""QP hints (mrc.h ``mrc_qp_hint_attr``): what a hint changes here is where NSCC starts (docs/protocol.md,
"QP hints"); `setup.hint_share` maps the hint's three counts to the QP attribute ``hint_share``."""
from __future__ import annotations

import pytest

from mrc.core import tables
from mrc.core.setup import fixed_window_profile, hint_share, nscc_profile
from mrc.errors import ConfigError
from mrc.testing.harness import Network, Pair
from mrc.units import US


@pytest.mark.parametrize("counts,share", [
    ((0, 0, 0), 1),  # no hint
    ((1, 1, 1), 1),
    ((2, 0, 0), 2),  # two QPs to the one peer
    ((2, 4, 0), 8),  # two QPs to each of four peers: eight share the NIC
    ((1, 1, 16), 16),  # an incast of 16 at the target
    ((2, 3, 5), 6),  # the tighter of the two bottlenecks
    ((-3, 2, 0), 2),  # not given
    ((1000, 1000, 0), 65535),  # at most the attribute's range
])
def test_hint_share_is_the_larger_of_the_senders_and_the_targets_sharing(counts, share):
    assert hint_share(*counts) == share


def test_a_hint_that_is_not_a_number_is_refused_naming_the_field():
    with pytest.raises(ConfigError, match=r"qp_hint.num_send_peers = '4': must be an integer"):
        hint_share(1, "4", 0)


def test_nscc_starts_a_hinted_qp_at_its_share_of_the_window_never_below_min_cwnd():
    cc = nscc_profile(rate_bps=200 * 10**9, base_rtt_ps=4 * US)
    full = Pair(cc=cc).qp(0)["cwnd"]
    assert full == cc["init_cwnd"]
    assert Pair(cc=cc, hint_share=4).qp(0)["cwnd"] == cc["init_cwnd"] / 4
    assert Pair(cc=cc, hint_share=60000).qp(0)["cwnd"] == cc["min_cwnd"]
    fixed = fixed_window_profile(window_bytes=1 << 20)
    assert Pair(cc=fixed, hint_share=4).qp(0)["cwnd"] == 1 << 20  # "none" keeps its window


def test_a_hinted_qp_grows_from_its_share_when_it_turns_out_alone():
    """The hint only sets the start: NSCC's increases take a QP that is alone after all back to the full
    window (here within 200 us on a 4 us path)."""
    net = Network(jitter_ps=0, rate_bps=100 * 10**9)
    cc = nscc_profile(rate_bps=100 * 10**9, base_rtt_ps=4 * US)
    pair = Pair(cc=cc, network=net, hint_share=16)
    start = float(pair.qp(0)["cwnd"])
    pair.post_write(0, 1 << 24)
    assert pair.run_until(lambda p: p.now > 200 * US)
    assert start == cc["init_cwnd"] / 16 and pair.qp(0)["cwnd"] >= 0.9 * float(pair.qp(0)["max_wnd"])


def test_rows_not_configured_take_no_share():
    """A row never configured holds 0, which is no hint (the division is only for a share above 1)."""
    T = tables.allocate(1, max_ev=1)
    assert T.qp[0]["hint_share"] == 0
