"""The MRC transports' QP options from issue 30 in the emulator: responder service time (``svc_time``),
dynamic MPR with a per-host budget (``mpr_budget``) and QP hints (``qp_hint``); docs/protocol.md."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.core import dtypes as D
from tests.emulator.helpers import flow, make, run

# 16 hosts: 4 leaves x 4 spines, 100G, one plane
LS = {"kind": "leaf-spine", "hosts_per_leaf": 4, "leaves": 4, "spines": 4, "link_gbps": 100}
INCAST = {"kind": "flows", "flows": [flow(s, 0, 1_000_000) for s in range(4, 16)]}  # 12 -> 1, from other leaves


def _requesters(simu):
    core = simu.T.core
    return np.array([int(f["ep"]) for f in simu.E.flow]), core


def test_service_time_keeps_coalesced_acks_out_of_the_rtt():
    """The responders coalesce SACKs for up to 8 us (a 1 MB flow each, one SACK per 64 packets at most);
    with the service time the requesters' RTT samples are the fabric's, without they carry the wait."""
    wl = {"kind": "flows", "flows": [flow(0, 12, 1_000_000), flow(1, 13, 1_000_000)]}
    srtt = {}
    for on in (False, True):
        r, s, simu = run(make(topology=LS, transport={"name": "mrc", "svc_time": on, "ack_every_pkts": 64,
                                                      "ack_every_bytes": 1 << 30, "ack_delay_us": 8.0},
                              workload=wl))
        assert s["flows"]["completed"] == 2
        req, core = _requesters(simu)
        assert set(core.qp["svc_time_report"][req].tolist()) == {int(on)}
        srtt[on] = core.qp["srtt"][req] / 1e6
    assert srtt[True].max() < 10.0 < srtt[False].min()  # us


def test_the_default_run_reports_no_service_time():
    """Off by default (the published runs stay as they were): no SACK says anything, no sample changes."""
    r, s, simu = run(make(topology=LS, transport={"name": "mrc"}, workload=INCAST))
    core = simu.T.core
    n = int(simu.T.mrc_p[0]["n_qp"])
    assert not core.qp["svc_time_report"][:n].any() and not core.qp["svc_time_peer"][:n].any()
    assert not core.qp["dynamic_mpr"][:n].any() and set(core.qp["hint_share"][:n].tolist()) == {1}
    assert len(simu.T.mrc_rx_active) == len(simu.T.mrc_rx_on) == 0


def _incast_budget(budget):
    # a fixed window far above MPR: what bounds each flow in flight is MPR (8 units = 1024 PSNs = 4 MB)
    tp = {"name": "mrc", "cc": "none", "cc_window_bytes": 1 << 24, "mpr": 8, "mpr_budget": budget}
    return run(make(topology=LS, transport=tp, workload={"kind": "flows", "flows": [
        flow(s, 0, 6_000_000, start=10.0 * k) for k, s in enumerate(range(4, 12))]}))


def test_a_host_budget_shares_mpr_among_its_receiving_qps_and_no_psn_is_refused():
    r0, s0, _ = _incast_budget(0)
    r1, s1, simu = _incast_budget(8)
    assert s0["flows"]["completed"] == s1["flows"]["completed"] == 8
    core = simu.T.core
    n = int(simu.T.mrc_p[0]["n_qp"])
    assert core.qp["dynamic_mpr"][:n].all()
    resp = np.arange(1, n, 2)
    # every message is received: nobody is receiving any more, every share was handed back
    assert simu.T.mrc_rx_active.tolist() == [0] * len(simu.T.mrc_rx_active) and not simu.T.mrc_rx_on.any()
    # while eight received, each responder advertised 1 unit (128 PSNs), and the requesters followed; the
    # last one to finish had the whole budget again (8 units: its configured MPR)
    dest = core.qp["mpr_dest"][resp]
    seen = core.qp["peer_mpr"][resp - 1]
    assert dest.max() == 8 and dest.min() == 1 and seen.min() == 1 and seen.max() == 8
    # shrinks never refused a PSN sent under the larger window
    assert r1.counters["nacks_psn_oor_window"] == 0
    # the static run's responders kept their MPR
    r0_core = _incast_budget(0)[2].T.core
    assert set(r0_core.qp["mpr_dest"][resp].tolist()) == {8}


def test_mpr_budget_is_checked():
    from mrc.errors import ConfigError
    with pytest.raises(ConfigError) as exc:
        run(make(topology=LS, transport={"name": "mrc", "mpr_budget": -1}, workload=INCAST))
    assert exc.value.key == "transport.mpr_budget"


def test_auto_qp_hint_starts_an_incast_at_its_share():
    """Twelve flows into one host, starting together: each requester's hint says 12 share the target,
    NSCC starts each at a twelfth of the window; the first round trip trims less at the last hop."""
    out = {}
    for hint in ("none", "auto"):
        r, s, simu = run(make(topology=LS, transport={"name": "mrc", "qp_hint": hint}, workload=INCAST))
        assert s["flows"]["completed"] == 12
        req, core = _requesters(simu)
        out[hint] = (r.counters, core.qp["hint_share"][req])
    assert set(out["none"][1].tolist()) == {1} and set(out["auto"][1].tolist()) == {12}
    assert out["auto"][0]["nacks_trimmed_lasthop"] < out["none"][0]["nacks_trimmed_lasthop"]


def test_auto_hint_counts_flows_running_at_the_start():
    """From the workload: flows to the same host and from the same host that run when a flow starts (a
    flow runs for its ideal FCT); a flow started by another's completion has no start to compare."""
    from mrc.emulator.transports.mrc_setup import auto_hint_share

    flows = np.zeros(5, [("src", np.int32), ("dst", np.int32), ("start", np.int64)])
    flows["src"] = [1, 2, 3, 1, 4]
    flows["dst"] = [0, 0, 0, 5, 6]
    flows["start"] = [0, 0, 50, 10, -1]
    ideal = np.array([100, 30, 100, 100, 100])
    share = auto_hint_share(flows, np.arange(5), ideal)
    # flow 0: 0 and 1 to host 0 at t=0 (2); flow 1: the same; flow 2 at t=50: 0 and 2 still run (1 ended
    # at 30); flow 3 at t=10: host 1 sends 0 and 3 (2); flow 4: triggered, no hint
    assert share.tolist() == [2, 2, 2, 2, 1]
    assert D.QP["hint_share"] == np.uint16
