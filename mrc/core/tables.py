"""Allocation of the core's state tables, bundled in one namedtuple.

`CoreTables` is what every core function takes first. numba compiles a
namedtuple of arrays into a struct, so ``T.qp[i]`` reads the same in compiled
code and in plain Python. The library allocates one small `CoreTables` per
device; the emulator allocates one for the whole fabric.

Sizes:

- ``n_qp`` rows of QP; ``n_ev_rows`` x ``max_ev`` EV slots; ``n_tx_rows`` x
  ``window`` TX slots and ``n_rx_rows`` x ``window`` RX slots (``window`` is a
  power of two >= the largest MPR x 128 any QP uses: PSN p lives in slot
  ``p & (window - 1)``), stored in tiles of `PSN_TILE` slots: the TX table is
  ``tx[slot // PSN_TILE, row, slot % PSN_TILE]`` (`psn_slot`, read through
  `requester.tx_slot`; RX alike, `responder.rx_slot`), so a row's consecutive PSNs sit together (a SACK's
  bitmap reads a few lines) and every row's first tile sits in the first part
  of the table: QPs that never send more than a tile or two (short messages
  on many connections: 131,072 QP pairs of 16-packet messages) touch only
  those pages, not ``window`` slots each; ``n_wr_rows`` x ``max_wr`` WRs; ``n_rq_rows`` x
  ``max_recv`` posted receives; ``n_mr`` memory regions; ``n_cc`` CC
  profiles; ``evt_capacity`` events between drains.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from mrc._jit import njit_core
from mrc.core.cachelines import aligned_zeros
from mrc.core import dtypes as D
from mrc.errors import ConfigError
from mrc.wire.records import PKT

CoreTables = namedtuple(
    "CoreTables",
    ["qp", "ev", "ev_order", "tx", "rx", "wr", "rq", "mr", "cc", "evt", "evt_n", "place", "txsrc", "pkt0"],
)
CoreTables.__doc__ = """State of the protocol core (see module docstring).

``ev_order[r, start + j]`` is the slot offset (in its plane) of the j-th EV
the rotation of the plane whose slots begin at ``start`` visits (`evset`);
kept apart from the 64-byte EV rows so the rotation reads a few bytes per QP.
``evt_n[0]`` is the number of events in ``evt`` not yet drained, ``evt_n[1]``
the number dropped because ``evt`` was full (never completions: the core stops
and reports instead of losing one), ``evt_n[2]`` how many of those were EV
state events (the library counts them into its EV event CQs' ``drop_count``). ``place`` is an int64[4] scratch row where
the responder writes its placement decision for the last data packet:
(mr index, byte offset into the region, length, payload offset), -1 when none.
``txsrc`` is an int64[3] scratch row where `next_packet` says where the payload
of the data packet it just built comes from: (WR ring index, byte offset in the
message, length); the library copies those bytes from the WR's local buffer.
``pkt0`` is one zeroed packet record, the template every built packet starts from.
"""


PSN_TILE_SHIFT = 4
PSN_TILE = 1 << PSN_TILE_SHIFT  # TX / RX slots of one row stored together (TX: 768 bytes, 12 lines; RX: 192 bytes, 3)


def psn_window(table: np.ndarray) -> int:
    """The PSN slots per row of a TX or RX table (``window``)."""
    return table.shape[0] * table.shape[2]


@njit_core(inline="always")
def psn_slot(table, psn):
    """(tile, column) of PSN `psn`'s slot in a TX or RX table: ``table[tile, row, column]``."""
    s = psn & ((table.shape[0] << PSN_TILE_SHIFT) - 1)
    return s >> PSN_TILE_SHIFT, s & (PSN_TILE - 1)


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p <<= 1
    return p


def allocate(
    n_qp: int,
    *,
    max_ev: int = 256,
    window: int = 1024,
    max_wr: int = 64,
    max_recv: int = 64,
    n_mr: int = 16,
    n_cc: int = 4,
    evt_capacity: int = 4096,
    n_ev_rows: int | None = None,
    n_tx_rows: int | None = None,
    n_rx_rows: int | None = None,
    n_wr_rows: int | None = None,
    n_rq_rows: int | None = None,
) -> CoreTables:
    """Allocate zeroed tables. Row counts of the per-QP tables default to ``n_qp``."""
    for key, value in (("n_qp", n_qp), ("max_ev", max_ev), ("window", window), ("max_wr", max_wr),
                       ("max_recv", max_recv), ("n_mr", n_mr), ("n_cc", n_cc), ("evt_capacity", evt_capacity)):
        if int(value) < 1:
            raise ConfigError(key, value, "must be at least 1")
    if window != _pow2_at_least(window) or window < 128:
        raise ConfigError("window", window, "must be a power of two and at least 128 (one MPR unit)")
    if window > (1 << 23):
        raise ConfigError("window", window, "must be below 2^23 (half the 24-bit PSN space)")
    rows = lambda n: n_qp if n is None else n  # noqa: E731
    return CoreTables(
        qp=aligned_zeros(n_qp, D.QP),  # line-aligned: its field groups are whole lines (D.QP_LINES)
        ev=aligned_zeros((rows(n_ev_rows), max_ev), D.EV),
        ev_order=aligned_zeros((rows(n_ev_rows), max_ev), np.uint16),
        tx=aligned_zeros((window // PSN_TILE, rows(n_tx_rows), PSN_TILE), D.TX),
        rx=aligned_zeros((window // PSN_TILE, rows(n_rx_rows), PSN_TILE), D.RX),
        wr=np.zeros((rows(n_wr_rows), max_wr), dtype=D.WR),
        rq=np.zeros((rows(n_rq_rows), max_recv), dtype=D.RQ),
        mr=np.zeros(n_mr, dtype=D.MR),
        cc=np.zeros(n_cc, dtype=D.CC),
        evt=np.zeros(evt_capacity, dtype=D.EVT),
        evt_n=np.zeros(3, dtype=np.int64),
        place=np.full(4, -1, dtype=np.int64),
        txsrc=np.full(3, -1, dtype=np.int64),
        pkt0=np.zeros(1, dtype=PKT),
    )


def drain_events(T: CoreTables) -> np.ndarray:
    """Copy out and clear the pending events (Python side)."""
    n = int(T.evt_n[0])
    out = T.evt[:n].copy()
    T.evt_n[0] = 0
    return out
