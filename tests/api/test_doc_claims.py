"""Claims of docs/protocol.md that issue 30 found untrue, held to the code."""
from __future__ import annotations

import re
from pathlib import Path

from mrc.core import dtypes as D
from mrc.testing.harness import Pair
from mrc.wire.constants import NackReason, Opcode

MTU = 4096
DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def test_stash_overflow_is_an_aeth_nak_that_ends_the_qp_not_a_no_pkt_buffer_nack():
    """docs/protocol.md ("The responder sends rcv_cwnd_pen ..."): the Write-with-Immediate stash is bounded by
    max_wimm_dest, and an immediate beyond it is answered with an AETH NAK "invalid request" that ends the QP
    (the OCP README: exceeding max_wimm "moves the QP to an error state"), never with NACK NO_PKT_BUFFER."""
    pair = Pair(max_wimm_dest=2)
    for r in range(4):
        pair.post_recv(1, r)
    pair.post_write(0, MTU, wr_id=0)  # PSN 0, held back: the immediates after it wait in the stash
    for n in range(3):
        pair.post_write(0, 10, wr_id=n + 1, imm=n)
    pkts = [p for _, p in pair.collect(0)]
    answers = []
    for p in pkts[1:]:
        pair.deliver(1, p)
        answers += [a for _, a in pair.collect(1)]
    assert pair.qp(1)["state"] == D.QPS_ERROR
    naks = [a for a in answers if int(a["opcode"]) == int(Opcode.MRC_ACKNOWLEDGE) and int(a["aeth_syndrome"]) == D.AETH_NAK_INV_REQ]
    nacks = [a for a in answers if int(a["opcode"]) == int(Opcode.MRC_RELIABILITY_NACK)
             and int(a["nack_reason"]) == int(NackReason.NO_PKT_BUFFER)]
    assert naks and not nacks
    text = " ".join(DOC.read_text().split())
    claim = re.search(r"the out-of-order Write-with-Immediate stash, (.*?) So it sends", text).group(1)
    assert "AETH NAK" in claim and "NO_PKT_BUFFER" in claim and "never a NACK" in claim
