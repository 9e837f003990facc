"""QP pairs for a run's flows: one per connection, one per flow without a connection.

A flow whose ``conn`` is >= 0 is a message on that connection (the training and
trace workloads name one per communicator, channel, sender and receiver,
`workloads.collectives`); every flow on it shares its QP pair, and the engine
sends them one after another (`engine.start_flow`). A flow whose ``conn`` is
-1 has a QP pair of its own. Pairs are numbered in order of their first flow,
so a run without connections has pair f for flow f, as before connections.
"""
from __future__ import annotations

import numpy as np

from mrc.errors import ConfigError


def of_flows(flows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the pair of each flow, the first flow of each pair). Raises if a connection's flows disagree on
    their sender or receiver."""
    n = len(flows)
    conn = flows["conn"].astype(np.int64)
    if n == 0 or (conn < 0).all():
        return np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64)
    key = np.where(conn >= 0, conn, -1 - np.arange(n, dtype=np.int64))
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    pair = rank[inv.ravel()]
    firsts = first[order].astype(np.int64)
    for side in ("src", "dst"):
        bad = np.flatnonzero(flows[side] != flows[side][firsts[pair]])
        if len(bad):
            f = int(bad[0])
            raise ConfigError("workload", f"flow {f}",
                              f"its connection {int(conn[f])} joins hosts {int(flows['src'][firsts[pair[f]]])} -> "
                              f"{int(flows['dst'][firsts[pair[f]]])}, the flow {int(flows['src'][f])} -> "
                              f"{int(flows['dst'][f])}")
    return pair, firsts


def count(flows: np.ndarray) -> int:
    """Pairs these flows need (for memory estimates)."""
    conn = flows["conn"]
    own = int(np.count_nonzero(conn < 0))
    return own + len(np.unique(conn[conn >= 0]))
