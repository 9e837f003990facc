"""Packets an off-path sender forges: out-of-window feedback, data and probes are counted and dropped.

The requester acts on a SACK, NACK (any reason) or AETH NAK only when it fits its window; the responder
answers data and probes only within `D.MAX_PSN_SPAN` of the next PSN expected. What stays fatal (an
UNEXP_EVENT NACK or AETH NAK for a PSN in flight, a wrong R_Key inside the window) is tested in
test_loss.py / test_responder.py.
"""
from __future__ import annotations

import pytest

from mrc.core import dtypes as D
from mrc.core.psn import psn_add
from mrc.core.setup import fixed_window_profile
from mrc.testing.harness import Pair
from mrc.wire.constants import NackReason, Opcode

MTU = 4096
SPAN = D.MAX_PSN_SPAN


def sent(pair, i=0):
    return [p for _, p in pair.collect(i)]


def started(start_psn=0, writes=4):
    """QP 0 has `writes` MTU packets in flight (PSNs start_psn ..) into QP 1's region (R_Key 7), none delivered."""
    pair = Pair(start_psn=start_psn, ack_every_pkts=1, emulate_access=0, cc=fixed_window_profile(window_bytes=1 << 30))
    mr = pair.T.mr[0]
    mr["valid"], mr["access"], mr["rkey"], mr["va"], mr["length"] = 1, 1, 7, 0x10000, 64 * MTU
    pair.post_write(0, writes * MTU, wr_id=5, remote_va=0x10000, rkey=7)
    return pair, sent(pair)


def forged(pkt, opcode, **fields):
    f = pkt.copy()
    f["opcode"] = opcode
    for k, v in fields.items():
        f[k] = v
    return f


def assert_untouched(pair, una):
    q = pair.qp(0)
    assert q["state"] == D.QPS_RTS and int(q["una_psn"]) == una and not pair.completions()


# PSNs relative to the first one sent: never sent (at sq_psn and far above), and far below una_psn
OUT_OF_WINDOW = [4, 5, 1000, -SPAN - 1, 1 << 22]


@pytest.mark.parametrize("start", [0, 0xFFFFFE])
@pytest.mark.parametrize("reason", list(NackReason))
@pytest.mark.parametrize("rel", OUT_OF_WINDOW)
def test_nack_of_any_reason_outside_the_window_is_counted_and_dropped(start, reason, rel):
    pair, pkts = started(start)
    psn = psn_add(start, rel)
    pair.deliver(0, forged(pkts[0], Opcode.MRC_RELIABILITY_NACK, nack_reason=reason, nack_psn=psn))
    assert_untouched(pair, start)
    assert pair.qp(0)["rx_oow"] == 1 and pair.qp(0)["nacks_rx"] == 0
    assert not sent(pair), "a forged NACK triggered a retransmission"


def test_unexp_event_nack_for_an_acknowledged_psn_is_ignored():
    pair, pkts = started()
    pair.deliver(1, pkts[0])
    for p in sent(pair, 1):
        pair.deliver(0, p)
    assert pair.qp(0)["una_psn"] == 1
    pair.deliver(0, forged(pkts[0], Opcode.MRC_RELIABILITY_NACK, nack_reason=NackReason.UNEXP_EVENT, nack_psn=0))
    assert pair.qp(0)["state"] == D.QPS_RTS


@pytest.mark.parametrize("syndrome", [D.AETH_NAK_INV_REQ, D.AETH_NAK_REMOTE_ACCESS, D.AETH_NAK_REMOTE_OP, 0x7F])
@pytest.mark.parametrize("rel", OUT_OF_WINDOW + [-1])
def test_aeth_nak_outside_the_window_leaves_the_qp_in_rts(syndrome, rel):
    pair, pkts = started(0x10)
    pair.deliver(0, forged(pkts[0], Opcode.MRC_ACKNOWLEDGE, aeth_syndrome=syndrome, psn=psn_add(0x10, rel)))
    assert_untouched(pair, 0x10)
    assert pair.qp(0)["rx_oow"] == 1


def test_aeth_nak_inside_the_window_is_still_fatal():
    pair, pkts = started(0x10)
    pair.deliver(0, forged(pkts[0], Opcode.MRC_ACKNOWLEDGE, aeth_syndrome=D.AETH_NAK_REMOTE_ACCESS, psn=0x12))
    assert pair.qp(0)["state"] == D.QPS_ERROR
    assert [int(e["status"]) for e in pair.completions()] == [D.WC_REM_ACCESS_ERR]


def real_sack(pair, pkts):
    pair.deliver(1, pkts[0])
    (s,) = sent(pair, 1)
    assert s["opcode"] == Opcode.MRC_RELIABILITY_SACK
    return s


@pytest.mark.parametrize("cack_rel", [4, 100, 1 << 22, -SPAN - 2])
@pytest.mark.parametrize("pr", [0, 1])
def test_sack_beyond_the_sent_psn_or_too_old_is_ignored(cack_rel, pr):
    pair, pkts = started(0x800000)
    s = real_sack(pair, pkts)
    pair.deliver(0, forged(s, Opcode.MRC_RELIABILITY_SACK, cack_psn=psn_add(0x800000, cack_rel),
                           sack_bitmap=(1 << 64) - 1, pr=pr, mpr=1))
    assert_untouched(pair, 0x800000)
    q = pair.qp(0)
    assert q["rx_oow"] == 1 and q["sacks_rx"] == 0 and q["peer_mpr"] != 1 and q["inflight"] == 4 * MTU
    pair.deliver(0, s)  # the real SACK still works
    assert pair.qp(0)["una_psn"] == 0x800001


@pytest.mark.parametrize("rel", [SPAN + 1, 1 << 22, -SPAN - 1])
def test_data_far_outside_the_window_is_not_answered_even_with_a_bad_rkey(rel):
    pair, pkts = started()
    pair.deliver(1, forged(pkts[0], pkts[0]["opcode"], psn=psn_add(0, rel), rkey=0xBAD))
    q = pair.qp(1)
    assert q["state"] == D.QPS_RTS and q["rx_oow"] == 1 and q["rx_pkts"] == 0 and q["rx_oor"] == 0
    assert not sent(pair, 1)
    trimmed = forged(pkts[1], pkts[1]["opcode"], psn=psn_add(0, rel), trim=1)
    pair.deliver(1, trimmed)
    assert pair.qp(1)["rx_oow"] == 2 and not sent(pair, 1)


def test_data_in_the_band_beyond_the_window_is_still_answered_once():
    pair, pkts = started()
    pair.deliver(1, forged(pkts[0], pkts[0]["opcode"], psn=SPAN - 1))
    (n,) = sent(pair, 1)
    assert n["nack_reason"] == NackReason.PSN_OOR_WINDOW and pair.qp(1)["rx_oow"] == 0


def test_a_qp_in_error_does_not_repeat_its_nak_to_forged_psns():
    pair, pkts = started()
    pair.deliver(1, forged(pkts[0], pkts[0]["opcode"], rkey=0xBAD))  # in window: fatal, NAK owed
    assert pair.qp(1)["state"] == D.QPS_ERROR
    assert len(sent(pair, 1)) == 1
    pair.deliver(1, forged(pkts[1], pkts[1]["opcode"], psn=1 << 22))
    assert not sent(pair, 1) and pair.qp(1)["rx_oow"] == 1
    pair.deliver(1, pkts[1])  # the requester's own retransmission: the NAK is repeated
    assert len(sent(pair, 1)) == 1


@pytest.mark.parametrize("rel", [SPAN + 1, 1 << 22, -SPAN - 1])
def test_probe_far_outside_the_window_is_not_answered(rel):
    pair, pkts = started()
    probe = forged(pkts[0], Opcode.MRC_RELIABILITY_PROBE, psn=psn_add(0, rel))
    pair.deliver(1, probe)
    assert not sent(pair, 1) and pair.qp(1)["rx_oow"] == 1
    pair.deliver(1, forged(pkts[0], Opcode.MRC_RELIABILITY_PROBE, psn=4))
    assert [int(p["pr"]) for p in sent(pair, 1)] == [1]
