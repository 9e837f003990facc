"""The sampled time series (`sim.Sampler`, `sim.PlaneSampler`, `sampling.PortCells`) against the straightforward
computation: every sample recomputed from every port and flow with numpy, and the same run with the per-port pass
forced on every sample. A run with idle stretches (a flapping link, RoCE timeouts, a late flow) and PFC pauses
(lossless RoCE under an incast), so that samples are skipped and paused ports counted."""
from __future__ import annotations

import numpy as np

from mrc.emulator import sampling, sim
from mrc.emulator import state as ST
from tests.emulator.helpers import flow, make, run


def naive_groups(E, cell, n, prev_tx, rate, dt_s):
    """Per cell: sum and max of the ports' utilisation since prev_tx and of their queued bytes, over every port."""
    P = E.port
    ok = cell >= 0
    u = (P["tx_bytes"] - prev_tx)[ok] * 8.0 / (rate[ok] * dt_s)
    q = (P["bytes0"] + P["bytes1"])[ok].astype(np.float64)
    c = cell[ok]
    umax = np.zeros(n)
    qmax = np.zeros(n)
    np.maximum.at(umax, c, u)
    np.maximum.at(qmax, c, q)
    return np.bincount(c, u, minlength=n), umax, np.bincount(c, q, minlength=n), qmax


def _scenario():
    # 8 senders into host 15 (PFC pauses), flows through a link that flaps, a flow long after the others
    flows = ([flow(s, 15, 150_000) for s in range(8)] + [flow(s, 4 + s, 60_000) for s in range(4)]
             + [flow(s, 8 + s, 60_000) for s in range(4)] + [flow(4, 9, 40_000, start=400.0)])
    return make(workload={"kind": "flows", "flows": flows}, transport={"rto_us": 60.0},
                failures=[{"kind": "flap", "at_us": 6.0, "link": ["p0.t0.0", "p0.t1.0"], "period_us": 20,
                           "down_us": 8}],
                metrics_={"sample_us": 1.0, "ports": [0, 17]})


def test_samples_equal_the_straightforward_computation(monkeypatch):
    """Each sample's group figures, paused ports and affected running flows equal a recomputation over every
    port and flow, including the samples whose per-port pass was skipped (nothing moved)."""
    ref = []
    seen = {}
    orig = sim.Sampler.sample

    def spy(self, E, t):
        st = seen.setdefault("st", {"prev_tx": np.zeros(len(E.port), np.int64), "t": 0})
        seen["sampler"] = self
        if t - self.t_prev > 0:
            topo = self.sim.sc.topo
            gid = np.full(len(topo.port), -1, np.int64)
            for k, (tier, d) in enumerate(sim.GROUPS):
                gid[(topo.port["tier"] == tier) & (topo.port["dir"] == d)] = k
            stats = naive_groups(E, gid, len(sim.GROUPS), st["prev_tx"], self.rate, (t - st["t"]) / 1e12)
            running = E.flow["status"] == ST.FLOW_RUNNING
            ref.append((stats, int(np.count_nonzero(E.port["paused"])),
                        [int(np.count_nonzero(running & ((E.flow["fail_aff"] & (1 << k)) != 0)))
                         for k in range(len(self.fail_ports))]))
            st["prev_tx"] = E.port["tx_bytes"].copy()
            st["t"] = t
        orig(self, E, t)

    monkeypatch.setattr(sim.Sampler, "sample", spy)
    r, s, simu = run(_scenario())
    cells = seen["sampler"].cells
    assert cells.skipped > 10 and cells.passes > 10  # both kinds of sample were taken
    assert s["counters"]["pfc_pauses"] > 0 and s["counters"]["drops_link_down"] > 0
    smp = r.samples
    assert len(smp["t_us"]) == len(ref)
    count = seen["sampler"].count
    for name, k in seen["sampler"].groups.items():
        usum, umax, qsum, qmax = (np.array([x[0][j][k] for x in ref]) for j in range(4))
        np.testing.assert_allclose(smp[f"util_{name}_mean"], usum / count[k], rtol=1e-12, atol=0)
        np.testing.assert_array_equal(smp[f"util_{name}_max"], umax)
        np.testing.assert_allclose(smp[f"queue_{name}_mean_bytes"], qsum / count[k], rtol=1e-12, atol=0)
        np.testing.assert_array_equal(smp[f"queue_{name}_max_bytes"], qmax)
    paused = np.array([x[1] for x in ref])
    assert paused.max() > 0
    np.testing.assert_array_equal(smp["paused_ports"], paused)
    aff = np.array([x[2][0] for x in ref])
    assert aff.max() > 0
    np.testing.assert_array_equal(smp["failure0_affected_running"], aff)


def test_skipping_idle_samples_changes_no_number(monkeypatch):
    """The time series and the per-plane series are bit for bit those of the same run with the per-port pass
    forced on every sample."""
    r1, s1, _ = run(_scenario())
    orig = sampling.PortCells.update

    def always(self, E, dt_s):
        self.mark = None
        return orig(self, E, dt_s)

    monkeypatch.setattr(sampling.PortCells, "update", always)
    r2, s2, _ = run(_scenario())
    assert r1.samples.keys() == r2.samples.keys()
    for k in r1.samples:
        np.testing.assert_array_equal(r1.samples[k], r2.samples[k], err_msg=k)
    for k in r1.plane_samples:
        np.testing.assert_array_equal(r1.plane_samples[k], r2.plane_samples[k], err_msg=k)
    np.testing.assert_array_equal(r1.flows, r2.flows)


def test_port_cells_skip_only_when_nothing_moved():
    """`PortCells.update` walks the ports after any hop or queue change, and otherwise reports zero
    utilisation and the last pass's queues."""
    r, s, simu = run(make(metrics_={"sample_us": 1.0}))
    E = simu.E
    cell = np.zeros(len(E.port), np.int64)
    rate = np.full(len(E.port), 100e9)
    pc = sampling.PortCells(cell, 1, rate)
    E.port["bytes0"][3] = 500
    pc.update(E, 1e-6)
    assert pc.passes == 1 and pc.stats[3][0] == 500.0
    E.port["tx_bytes"][3] += 1250  # 10,000 bits in 1 us at 100G: 0.1 (without a counter moving: not seen)
    pc.update(E, 1e-6)
    assert pc.skipped == 1 and pc.stats[0][0] == 0.0 and pc.stats[1][0] == 0.0 and pc.stats[3][0] == 500.0
    E.S[ST.S_HOPS] += 1
    pc.update(E, 1e-6)
    assert pc.passes == 2 and np.isclose(pc.stats[1][0], 0.1)
    E.port["bytes0"][3] = 0
    E.S[ST.S_PORT_MOVES] += 1
    pc.update(E, 1e-6)
    assert pc.passes == 3 and pc.stats[3][0] == 0.0 and pc.stats[1][0] == 0.0
