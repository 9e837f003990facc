"""Fabrics the tests share, built once per session (building is fast; compiling is cached)."""
from __future__ import annotations

import functools

from mrc.fabric import build, from_preset

SMALL = {
    "tiny": lambda: from_preset("mrc-2plane-tiny"),
    "two-plane-64": lambda: from_preset("mrc-2plane-64"),
    "fattree-k8": lambda: from_preset("fattree-k8"),
    # counts that are not powers of two: EV fields have invalid values
    "odd-leaf-spine": lambda: build(dict(kind="leaf-spine", planes=3, hosts_per_leaf=3, leaves=5, spines=3,
                                         link_gbps=100, fabric_gbps=100, link_delay_ns=500)),
    "fattree-k6-2planes": lambda: build(dict(kind="fat-tree", k=6, planes=2, link_gbps=100, fabric_gbps=100)),
    "fattree-k4-os2": lambda: build(dict(kind="fat-tree", k=4, planes=2, oversubscription=2, link_gbps=100,
                                         fabric_gbps=100, link_delay_ns=[100, 200, 300])),
}


@functools.lru_cache(maxsize=None)
def small(name):
    return SMALL[name]()


@functools.lru_cache(maxsize=None)
def big():
    return from_preset("mrc-8plane-131k")
