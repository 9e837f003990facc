"""Every passive rule with a passing and a failing capture: a hand-built conversation (tests/conformance/captures.py)
passes all of them, and each change below makes exactly its rule fail, at the changed packet and nowhere else.

Each capture is written twice: seen once (a mirror port), and seen leaving the sender and again reaching the
receiver (both hosts), which the check folds back into one packet per transmission.
"""
from __future__ import annotations

import pytest

from mrc.conformance.passive import RULES, Options, check_capture
from mrc.wire.constants import NackReason
from tests.conformance.captures import QB, conversation

OPTS = Options(answer_us=5.0)  # the conversation lasts 56 us: judge answers 5 us on
ANSWERS = {"nack.trim-answered"}  # the rules judged with OPTS; the others with the
# default 1 ms, so that a NACK changed into something else does not also leave its trimmed packet unanswered


def _flip_last(data: bytes) -> bytes:
    """A wrong ICRC, the UDP checksum left to 0 (not computed) so that only the ICRC is wrong."""
    return data[:46] + b"\0\0" + data[48:-1] + bytes([data[-1] ^ 0x5A])


def _udp_checksum(data: bytes) -> bytes:
    c = int.from_bytes(data[46:48], "big") ^ 0x0F0F
    return data[:46] + c.to_bytes(2, "big") + data[48:]


def _unknown_opcode(data: bytes) -> bytes:
    return data[:48] + b"\xe5" + data[49:]


def _raw(number, fn):
    def change(c):
        c.recs[number - 1].raw = fn
    return change


def _t(number, **fields):
    return lambda c: c.tamper(number, **fields)


def _sack_in_place_of_nack(c):
    """The trim NACK (record 11) becomes a SACK that acknowledges the trimmed PSN 5."""
    c.tamper(11, opcode=0xDC, cack_psn=5, ack_psn_offset=0, sack_offset=1, mpr=8, nack_reason=0, nack_psn=0, cc_type=0)


# rule -> (what is changed, the record that must be flagged (None: the changed one), the changed record[, the other
# (record, rule) flags the change must raise])
CHANGES = {
    "wire.reserved-zero": (_t(1, bth_r=1), None, 1),
    "wire.icrc": (_raw(16, _flip_last), None, 16),  # the endpoint request: nothing acknowledges it
    "wire.udp-checksum": (_raw(2, _udp_checksum), None, 2),
    "wire.malformed": (_raw(14, _unknown_opcode), None, 14),
    "wire.tseth": (_t(8, ts=0), None, 8),
    "data.opcode-sequence": (_t(8, opcode=0xC8), None, 8),  # WRITE_LAST after a message's end
    "data.msn": (_t(2, msn=4), None, 2),
    "data.segmentation": (_t(2, payload_len=1000), None, 2),
    "data.reth": (_t(2, va=0x10000 + 1024 + 8), None, 2),
    "data.rtx-identical": (_t(6, rkey=0x78), None, 6),
    "data.rtx-flag": (_t(6, rtx=0), None, 6),
    "ack.unsent-psn": (_t(5, cack_psn=6, ack_psn_offset=-3), None, 5),
    "ack.trimmed-not-acked": (_sack_in_place_of_nack, None, 11),
    "ack.entropy-reflected": (_t(5, entropy=0x9999), None, 5),
    "ecn.echo": (_t(9, m=0), None, 9),
    "cc.timestamp-reflected": (_t(7, tx_timestamp=77), None, 7),
    "nack.reason": (_t(11, nack_reason=0x33), None, 11),
    "nack.trim-reason": (_t(11, nack_reason=int(NackReason.TRIMMED_LASTHOP)), None, 11),
    "nack.trim-answered": (_t(11, nack_reason=int(NackReason.NO_BITMAP)), 10, 11),  # the trimmed packet's
    "nack.oor-window": (_t(11, nack_reason=int(NackReason.PSN_OOR_WINDOW), nack_psn=3, psn=3, entropy=0x1004,
                           tx_timestamp=103), None, 11),
    "ack.damaged-not-acked": (_raw(4, _flip_last), 5, 4, {(4, "wire.icrc")}),  # PSN 3 damaged, then SACKed
    "ack.trigger-acknowledged": (_t(5, sack_bitmap=0), None, 5),
    "dscp.control": (_t(7, dscp=4), None, 7),
    "dscp.retransmission": (_t(6, dscp=4), None, 6),
    "endpoint.qp": (_t(16, dqpn=QB), None, 16),
    "endpoint.answer-matches": (_t(17, req_id=10), None, 17),
}


def _found(path, options=OPTS) -> set:
    return {(v.index, v.rule) for v in check_capture(path, options=options).violations}


@pytest.mark.parametrize("taps", [1, 2])
def test_the_clean_conversation_passes_every_rule(tmp_path, taps):
    res = check_capture(conversation().write(tmp_path / "clean.pcapng", taps), options=OPTS)
    assert res.violations == []
    assert res.counts["transmissions"] == 17 and res.counts["flows"] == 1
    (fr,) = res.flows
    assert fr.flow.view.complete and not fr.not_judged  # every flow rule judged it
    assert (fr.retransmissions, fr.spurious) == (2, 0)


def test_every_rule_has_a_failing_capture():
    assert sorted([*CHANGES, "data.mpr-window"]) == sorted(r.id for r in RULES)


@pytest.mark.parametrize("taps", [1, 2])
@pytest.mark.parametrize("rule", sorted(CHANGES))
def test_a_changed_packet_is_flagged_by_its_rule_there_and_nowhere_else(tmp_path, rule, taps):
    change, flagged, changed, *also = CHANGES[rule]
    c = conversation()
    change(c)
    got = _found(c.write(tmp_path / "changed.pcapng", taps), OPTS if rule in ANSWERS else Options())
    want = {(c.index(flagged or changed, taps), rule)} | {(c.index(n, taps), r) for n, r in (also[0] if also else ())}
    assert got == want


def test_an_echo_of_a_mark_the_packet_did_not_carry_is_judged_where_the_capture_sees_it_arrive(tmp_path):
    """SACK 13 says SKIP_ONCE for PSN 5's retransmission, which arrived unmarked: judged only when the capture shows
    the link into the responder (taps=2); a mirror of unknown place cannot tell where a mark would be added."""
    c = conversation()
    c.tamper(13, m=1)
    assert _found(c.write(tmp_path / "one.pcapng", 1)) == set()
    assert _found(c.write(tmp_path / "two.pcapng", 2)) == {(c.index(13, 2), "ecn.echo")}


def _window(last_psn: int) -> object:
    """Writes of one packet each: PSNs 0-63, a SACK of 0-63 advertising MPR 1 (128 PSNs), then PSNs 64..last_psn."""
    from tests.conformance.captures import ONLY, Conversation

    c = Conversation()
    t = 0.0
    for psn in range(last_psn + 1):
        c.data(t, psn, ONLY, msn=psn, va=0x10000 + 256 * psn, n=256, ev=0x1000 + psn % 8, ts=psn)
        t += 0.25
        if psn == 63:
            c.sack(t, cack=63, trigger=63, entropy=0x1000 + 63 % 8, ts=63, mpr=1)
            t += 0.25
    c.sack(t + 5, cack=last_psn, trigger=last_psn, entropy=0x1000 + last_psn % 8, ts=last_psn, mpr=1)
    return c


@pytest.mark.parametrize("taps", [1, 2])
def test_the_mpr_window_passes_up_to_cack_plus_mpr_x_128_and_fails_one_past(tmp_path, taps):
    assert _found(_window(63 + 128).write(tmp_path / "ok.pcapng", taps)) == set()
    c = _window(63 + 129)
    assert _found(c.write(tmp_path / "over.pcapng", taps)) == {(c.index(63 + 129 + 2, taps), "data.mpr-window")}


def test_the_rule_table_in_the_docs_is_the_rules():
    import pathlib

    from mrc.conformance.passive.cli import BEGIN, END, rules_markdown

    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "conformance.md").read_text()
    start = doc.index(BEGIN)
    assert doc[start: doc.index(END, start) + len(END)] == rules_markdown(RULES)


def test_every_rule_cites_its_source():
    import re

    for r in RULES:
        assert r.level in ("MUST", "SHOULD") and r.behaviour and r.scope in ("record", "flow", "endpoints"), r.id
        assert re.search(r"notes §\d|UET 1\.0|IBTA|RFC \d", r.ref), r.id
