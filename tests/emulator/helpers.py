"""Small scenarios for the emulator tests (tiny fabrics, short runs)."""
from __future__ import annotations

import copy

from mrc.emulator import metrics, scenario, sim

# 16 hosts: 4 leaves x 4 spines, 100G, 1 us per link (4 ECMP paths between leaves)
SMALL_LS = {"kind": "leaf-spine", "hosts_per_leaf": 4, "leaves": 4, "spines": 4, "link_gbps": 100}
K4 = {"kind": "fat-tree", "k": 4, "link_gbps": 100}  # 16 hosts, 3 tiers


def make(topology=None, transport=None, workload=None, switch=None, failures=None, metrics_=None, **top):
    d = {"topology": copy.deepcopy(topology or SMALL_LS),
         "transport": {"name": "roce-ecmp", **(transport or {})},
         "workload": workload or {"kind": "flows", "flows": [{"src": 0, "dst": 15, "size_bytes": 100_000}]}}
    if switch:
        d["switch"] = switch
    if failures:
        d["failures"] = failures
    if metrics_:
        d["metrics"] = metrics_
    d.update(top)
    return d


def run(data, name="test"):
    """(RunData, summary, Simulation) of a scenario dict."""
    sc = scenario.parse(copy.deepcopy(data), name)
    s = sim.Simulation(sc)
    r = s.run()
    return r, metrics.summary(r), s


def flow(src, dst, size, start=0.0):
    return {"src": src, "dst": dst, "size_bytes": size, "start_us": start}
