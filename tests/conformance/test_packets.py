"""The suite's own tools: the independent ICRC, the network's byte operations, crafted packets, scenarios."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from mrc.conformance.adapter import EndpointConfig
from mrc.conformance.case import Case, Context
from mrc.conformance.craft import Crafter
from mrc.conformance.packets import Packet, ecn_of, icrc_ok, mark_ce, opcode_of, trim, with_icrc
from mrc.conformance.reference import ReferenceAdapter
from mrc.conformance.scenario import ScenarioError, drop
from mrc.wire.samples import samples

SAMPLES = samples()


@pytest.mark.parametrize("label,data", SAMPLES[:40:3], ids=[s[0] for s in SAMPLES[:40:3]])
def test_independent_icrc_agrees_with_the_codec(label, data):
    assert icrc_ok(data)
    assert with_icrc(data[:-4] + b"\0\0\0\0") == data


@given(st.sampled_from([d for label, d in SAMPLES if "trimmed" not in label]), st.integers(0, 1 << 20))
@settings(max_examples=60)
def test_a_flipped_bit_is_seen_by_the_icrc(data, where):
    from mrc.conformance.packets import _ip_headers

    pos, v = _ip_headers(data)[-1]
    bth = pos + (40 if v == 6 else 20) + 8
    k = bth + 5 + where % (len(data) - bth - 5)  # BTH after its resv8a byte, the headers, payload, ICRC
    bad = data[:k] + bytes([data[k] ^ (1 << (where % 8))]) + data[k + 1:]
    assert not icrc_ok(bad)


@pytest.mark.parametrize("label,data", [s for s in SAMPLES if s[0].endswith("MRC_WRITE_ONLY")])
def test_ce_mark_keeps_the_icrc_valid(label, data):
    marked = mark_ce(data)
    assert ecn_of(marked) == 3 and icrc_ok(marked) and opcode_of(marked) == opcode_of(data) == 0xCA


def _ctx():
    return Context(Case("wire.x", "MUST", "project choice", "b", "f", "n", lambda t: None, ("m",)), ReferenceAdapter())


def test_crafted_packets_decode_and_trim_like_a_switch():
    sc = _ctx().scenario()
    rsp = sc.add("rsp", EndpointConfig())
    req = sc.crafted("req")
    c = Crafter(req, rsp)
    p = Packet(c.data(7, b"x" * 300, va=0x1000, rkey=9, ev=0x12345678, imm=5), "crafted", 1, 0, dscp=c.dscp)
    assert (p.kind, p.psn, p.ev, p["rkey"], p["payload_len"]) == ("data", 7, 0x12345678, 9, 300)
    t = Packet(trim(p, lasthop=True), "crafted", 1, 0, dscp=c.dscp)
    assert t["trim"] == 2 and t["payload_len"] == 0 and t.psn == 7


def test_scenario_routes_drops_and_link_down():
    t = _ctx()
    sc = t.scenario()
    a = sc.add("a", EndpointConfig())
    b = sc.add("b", EndpointConfig(), iut=False)
    sc.connect(a, b)
    region = b.ep.reg_mr(8192)
    sc.route = lambda sc, p: drop(p) if p.is_data and p.psn == 0 and p.time == 0 else None
    a.ep.post_write(1, b"y" * 8192, remote_va=region.va, rkey=region.rkey, imm=None, now=0)
    sc.set_port(b, 2, False)
    assert sc.run(lambda: a.sends("send"), max_ps=10**10)
    fates = {(p.psn, p.fate) for p in sc.data_sent(a)}
    assert {(0, "dropped"), (1, "link down")} <= fates  # PSN 1 left on port 2 before the port status update
    assert all(p.port == 1 or p.fate == "link down" for p in sc.data_sent(a))
    assert b.ep.read_mr(region) == b"y" * 8192


def test_scenario_stops_a_runaway_exchange():
    sc = _ctx().scenario(max_packets=10)
    a = sc.add("a", EndpointConfig())
    b = sc.add("b", EndpointConfig(), iut=False)
    sc.connect(a, b)
    a.ep.post_write(1, b"z" * 65536, remote_va=0, rkey=1, imm=None, now=0)
    with pytest.raises(ScenarioError, match="more than 10 packets"):
        sc.run(max_ps=10**9)
