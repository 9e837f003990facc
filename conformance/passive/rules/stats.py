"""Figures per flow that are not rules: retransmissions, and the spurious ones among them."""
from __future__ import annotations

from ..flows import K_DATA, K_SACK
from .common import Acked, cols


def retransmissions(flow) -> tuple[int, int]:
    """(retransmissions, spurious ones): data sent again for a PSN, and those whose PSN the capture had already
    seen acknowledged (cumulatively or in a bitmap) when it was sent again. Spurious retransmissions are counted,
    not violations: the requester may not have had that SACK yet, and a retransmission timeout races the SACKs."""
    c = cols(flow)
    sent: set[int] = set()
    acked = Acked()
    rtx = spurious = 0
    for i in range(c.n):
        k = c.kind[i]
        if k == K_SACK:
            acked.add(c, i)
        elif k == K_DATA:
            u = c.u[i]
            if u in sent:
                rtx += 1
                spurious += u in acked
            else:
                sent.add(u)
    return rtx, spurious
