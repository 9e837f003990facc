"""Invariants of any run (hypothesis): bytes and packets conserved, buffers respected, causality, determinism."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrc.emulator import state as ST
from tests.emulator.helpers import make, run

flows_st = st.lists(st.tuples(st.integers(0, 15), st.integers(0, 15), st.integers(1, 300_000),
                              st.floats(0, 30)), min_size=1, max_size=12).map(
    lambda fs: [{"src": a, "dst": b if b != a else (a + 1) % 16, "size_bytes": n, "start_us": round(t, 3)}
                for a, b, n, t in fs])

failure_st = st.one_of(
    st.none(),
    st.builds(lambda at, d: {"kind": "link-down", "at_us": at, "duration_us": d, "link": ["p0.t0.1", "p0.t1.2"]},
              st.floats(0, 40), st.floats(1, 40)),
    st.builds(lambda at, p: {"kind": "gray-loss", "at_us": at, "probability": p, "switch": "p0.t1.0"},
              st.floats(0, 40), st.floats(0.001, 0.2)),
    st.builds(lambda at, f: {"kind": "degrade", "at_us": at, "rate_fraction": f, "link": ["h3", "p0.t0.0"]},
              st.floats(0, 40), st.floats(0.1, 1.0)),
)


@given(flows=flows_st, lossless=st.booleans(), queue=st.integers(12_000, 200_000), trim=st.booleans(),
       failure=failure_st, cut=st.one_of(st.none(), st.floats(5, 200)), seed=st.integers(0, 5))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_run_invariants(flows, lossless, queue, trim, failure, cut, seed):
    data = make(workload={"kind": "flows", "flows": flows}, seed=seed,
                transport={"lossless": lossless, "trimmable": trim, "rto_us": 50.0},
                switch={"queue_bytes": queue, "trim": trim and not lossless},
                failures=[failure] if failure else None)
    if cut is not None:
        data["duration_us"] = cut
    r, s, _ = run(data)
    b, p = s["bytes"], s["packets"]
    assert b["sent"] == b["delivered"] + b["dropped"] + b["trimmed_away"] + b["in_flight"]
    assert p["sent"] == p["delivered"] + p["dropped"] + p["in_flight"]
    if not lossless:
        assert r.port_stats["max_bytes0"].max() <= queue
    assert r.port_stats["max_bytes1"].max() <= queue
    if lossless and failure is None:
        assert p["dropped"] == 0
    f = r.flows
    done = f["status"] == ST.FLOW_DONE
    assert np.all(f["t_recv_done"][done] <= f["t_send_done"][done])
    assert np.all(f["t_send_done"][done] - f["t_start"][done] >= f["alone"][done] - 6 * 5440)
    assert np.all(f["t_send_done"][done] - f["t_start"][done] >= f["ideal"][done])  # the fabric's best: a bound
    assert np.all(f["t_start"][f["start"] >= 0] >= 0) or cut is not None
    assert s["counters"]["goodput_bytes"] <= int(f["size"].sum())
    if cut is None:
        assert s["flows"]["completed"] + s["outcome"]["failed"] == len(f)
    r2, s2, _ = run(data)
    assert np.array_equal(r2.flows, f)
