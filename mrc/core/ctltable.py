"""The bounded request table of the controller's endpoint protocol (`mrc.core.ctlproto`).

``C`` (`REQ`) holds request rows; a row is FREE (on the free stack ``free``), QUEUED (in its host's
FIFO of rows to send) or WAITING (in its host's list of rows waiting for an answer or a timer, with
a deadline). ``H`` (`HOST`) holds per host its up ports, the heads of the two lists and its earliest
deadline. ``s`` (int64, at least `N_S`) holds the scalars: `S_FREE_N` rows on the free stack,
`S_REQ_SEQ` the next req_id, `S_STAMP` a stamp the owner may use to visit each peer once; index 1
is the owner's (the emulator keeps its EV-log count there). Nothing here grows: a full table
refuses the new row (`alloc` returns -1). The library allocates one host row per controller
(`allocate`), the emulator one table for the fabric with the same dtypes.
"""
from __future__ import annotations

import numpy as np

from numpy import int64 as i64

from mrc._jit import njit_core
from mrc.core import dtypes as D

# row states
R_FREE = 0
R_QUEUED = 1
R_WAITING = 2

# scalars
S_FREE_N = 0
S_REQ_SEQ = 2
S_STAMP = 3
N_S = 4


REQ = np.dtype([
    ("t_sent", np.int64),
    ("t_rx", np.int64),  # answer: when its request arrived (the answer's service time runs from here)
    ("deadline", np.int64),
    ("ev", np.int64),
    ("next", np.int32),  # next row in its host's FIFO or waiting list (-1)
    ("host", np.int32),  # the controller that owns the row
    ("peer", np.int32),  # the other host
    ("qp", np.int32),  # PSU: a QP with the peer (its EVs carry the update); EV probe: the QP whose EV it is
    ("slot", np.int32),  # EV probe: the EV's slot in that QP
    ("req_id", np.int32),
    ("mask", np.int32),  # port_status_mask
    ("tries", np.int16),
    ("ok", np.int16),  # EV probe: answers in a row
    ("echo_ts", np.uint16),  # answer: the request's tx_timestamp, reflected
    ("kind", np.int8),
    ("state", np.int8),
    ("plane", np.int8),
    ("answered", np.int8),
    ("flags", np.int8),
    ("tc", np.int8),  # DSCP of an application's request; an answer reflects the request's
], align=True)

HOST = np.dtype([
    ("deadline", np.int64),  # earliest deadline of its waiting rows (D.NEVER: none)
    ("local_ports", np.int32),  # bit p: NIC port p up
    ("q_head", np.int32),
    ("q_tail", np.int32),
    ("w_head", np.int32),
    ("seen", np.int32),  # the owner's stamp (S_STAMP): a peer visited once per port change
], align=True)


def allocate(n_hosts: int, capacity: int, n_ports: int, n_scalars: int = N_S):
    """Empty tables: (C, H, free, s), every host with its `n_ports` ports up; ``s`` holds `n_scalars` (at
    least `N_S`: the owner may keep its own beside the table's)."""
    H = np.zeros(n_hosts, HOST)
    H["deadline"] = D.NEVER
    H["local_ports"] = (1 << n_ports) - 1
    H["q_head"] = H["q_tail"] = H["w_head"] = -1
    C = np.zeros(capacity, REQ)
    C["next"] = -1
    free = np.arange(capacity - 1, -1, -1, dtype=np.int32)
    s = np.zeros(max(n_scalars, N_S), np.int64)
    s[S_FREE_N] = capacity
    return C, H, free, s


@njit_core
def alloc(C, free, s):
    n = s[S_FREE_N]
    if n <= 0:
        return -1
    s[S_FREE_N] = n - 1
    r = free[n - 1]
    C[r]["next"] = -1
    C[r]["tries"] = 0
    C[r]["ok"] = 0
    C[r]["answered"] = 0
    C[r]["flags"] = 0
    return r


@njit_core
def release(C, free, s, r):
    """Row r back to the free stack (its fields stay readable until it is allocated again)."""
    C[r]["state"] = R_FREE
    n = s[S_FREE_N]
    free[n] = r
    s[S_FREE_N] = n + 1


@njit_core
def enqueue(C, H, h, r):
    C[r]["state"] = R_QUEUED
    C[r]["next"] = -1
    if H[h]["q_head"] < 0:
        H[h]["q_head"] = r
    else:
        C[H[h]["q_tail"]]["next"] = r
    H[h]["q_tail"] = r


@njit_core
def unlink_queued(C, H, h, r, prev):
    nxt = C[r]["next"]
    if prev < 0:
        H[h]["q_head"] = nxt
    else:
        C[prev]["next"] = nxt
    if H[h]["q_tail"] == r:
        H[h]["q_tail"] = prev


@njit_core
def wait(C, H, h, r, deadline):
    C[r]["state"] = R_WAITING
    C[r]["deadline"] = deadline
    C[r]["next"] = H[h]["w_head"]
    H[h]["w_head"] = r
    if deadline < H[h]["deadline"]:
        H[h]["deadline"] = deadline


@njit_core
def unlink_waiting(C, H, h, r):
    prev = -1
    k = H[h]["w_head"]
    while k >= 0:
        if k == r:
            if prev < 0:
                H[h]["w_head"] = C[k]["next"]
            else:
                C[prev]["next"] = C[k]["next"]
            return
        prev = k
        k = C[k]["next"]


@njit_core
def recompute_deadline(C, H, h):
    d = i64(D.NEVER)
    k = H[h]["w_head"]
    while k >= 0:
        if C[k]["deadline"] < d:
            d = C[k]["deadline"]
        k = C[k]["next"]
    H[h]["deadline"] = d


@njit_core(inline="always")
def ready(H, h):
    """Host h has a row queued to send."""
    return H[h]["q_head"] >= 0


@njit_core
def next_req_id(s):
    v = s[S_REQ_SEQ] & 0xFFFF
    s[S_REQ_SEQ] += 1
    return v
