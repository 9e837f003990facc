"""`emulator.aqm` at its edges: which packets WRED may mark, the thresholds exactly, trimming field by field.

The functions are called directly on an engine built from a scenario (as `test_port.py` does); the
WRED probability itself is measured there.
"""
from __future__ import annotations

import pytest

from mrc.emulator import aqm, scenario, sim
from mrc.emulator import state as ST
from mrc.wire.constants import DscpClass, Trim
from tests.emulator.helpers import make

PORT = 40  # a switch port of the small fabric of `helpers.make`
KMIN, KMAX = 10_000, 50_000


@pytest.fixture(scope="module")
def engine():
    sc = scenario.parse(make(switch={"ecn_min_bytes": KMIN, "ecn_max_bytes": KMAX, "ecn_pmax": 1.0, "trim": True,
                                     "trim_header_bytes": 64}), "t")
    E = sim.Simulation(sc).E
    assert len(E.port) > PORT and len(E.pkt) > 2
    return E


@pytest.fixture
def E(engine):
    """The engine with fresh counters and an undegraded, non-last-hop port `PORT`."""
    engine.port[PORT]["marks"] = engine.port[PORT]["trims"] = 0
    engine.port[PORT]["qscale"] = 1.0
    engine.port[PORT]["kind"] &= ~ST.PK_LASTHOP
    engine.ctr[:] = 0
    return engine


def marks(E) -> tuple[int, int]:
    return int(E.port[PORT]["marks"]), int(E.ctr[ST.C_ECN_MARKS])


@pytest.mark.parametrize("ecn", [ST.ECN_ECT0, ST.ECN_ECT1])
def test_an_ecn_capable_packet_above_kmax_is_marked_and_counted_once(E, ecn):
    E.pkt[0]["ecn"] = ecn
    assert aqm.ecn_mark(E, PORT, 0, KMAX) == 1
    assert E.pkt[0]["ecn"] == ST.ECN_CE and marks(E) == (1, 1)


def test_a_packet_already_marked_ce_is_not_marked_again_nor_counted(E):
    E.pkt[0]["ecn"] = ST.ECN_CE
    for qbytes in (KMIN + 1, KMAX, 10 * KMAX):
        assert aqm.ecn_mark(E, PORT, 0, qbytes) == 0
    assert E.pkt[0]["ecn"] == ST.ECN_CE and marks(E) == (0, 0)


def test_a_packet_that_is_not_ecn_capable_is_never_marked(E):
    E.pkt[0]["ecn"] = ST.ECN_NOT_ECT
    assert aqm.ecn_mark(E, PORT, 0, 10 * KMAX) == 0
    assert E.pkt[0]["ecn"] == ST.ECN_NOT_ECT and marks(E) == (0, 0)


def test_thresholds_exactly(E):
    """At kmin: never (q <= kmin); at kmax and above: always; pmax = 1 makes kmin + 1 almost never."""
    E.pkt[0]["ecn"] = ST.ECN_ECT0
    for _ in range(200):
        assert aqm.ecn_mark(E, PORT, 0, KMIN) == 0
    assert aqm.ecn_mark(E, PORT, 0, KMAX) == 1
    E.pkt[0]["ecn"] = ST.ECN_ECT0
    assert aqm.ecn_mark(E, PORT, 0, KMAX - 1) in (0, 1)  # probability (kmax - 1 - kmin) / (kmax - kmin)
    hits = 0
    for _ in range(400):
        E.pkt[0]["ecn"] = ST.ECN_ECT0
        hits += aqm.ecn_mark(E, PORT, 0, KMIN + 1)  # probability 1 / 40000
    assert hits <= 1


def mark_rate(E, qbytes, n=400) -> float:
    hits = 0
    for _ in range(n):
        E.pkt[0]["ecn"] = ST.ECN_ECT0
        hits += aqm.ecn_mark(E, PORT, 0, qbytes)
    return hits / n


def test_a_degraded_port_scales_both_thresholds(E):
    """qscale 0.5 (a degraded link, htsim's -failed): kmin 5,000 and kmax 25,000 bytes."""
    E.port[PORT]["qscale"] = 0.5
    assert mark_rate(E, KMAX // 2, n=60) == 1.0  # scaled kmax: always (unscaled: 3 in 8)
    assert mark_rate(E, KMIN // 2, n=60) == 0.0  # scaled kmin: never
    assert 0.4 < mark_rate(E, 15_000) < 0.6  # half-way between the scaled thresholds
    E.port[PORT]["qscale"] = 1.0
    assert mark_rate(E, KMIN, n=60) == 0.0  # the same queues on a healthy port
    assert 0.07 < mark_rate(E, 15_000) < 0.19  # (15,000 - 10,000) / 40,000


def test_pmax_below_one_still_marks_every_packet_at_kmax(E):
    """WRED: pmax is the probability just below kmax; at kmax and above every packet is marked."""
    cfg = E.cfg[0]
    pmax = float(cfg["ecn_pmax"])
    cfg["ecn_pmax"] = 0.2
    try:
        assert mark_rate(E, KMAX, n=60) == 1.0 and mark_rate(E, 2 * KMAX, n=60) == 1.0
        assert 0.13 < mark_rate(E, KMAX - 1) < 0.27
    finally:
        cfg["ecn_pmax"] = pmax


def test_no_random_draw_outside_the_thresholds(E):
    """A run's random stream is consumed only by real WRED decisions: none at or below kmin, at or above
    kmax, for a CE or non-ECT packet (so a queue that never reaches kmin leaves every later draw as it was)."""
    def draws(qbytes, ecn=ST.ECN_ECT0):
        before = int(E.S[ST.S_RNG])
        E.pkt[0]["ecn"] = ecn
        aqm.ecn_mark(E, PORT, 0, qbytes)
        return int(E.S[ST.S_RNG]) != before

    assert not draws(0) and not draws(KMIN) and not draws(KMAX) and not draws(3 * KMAX)
    assert not draws(KMAX - 1, ST.ECN_CE) and not draws(KMAX - 1, ST.ECN_NOT_ECT)
    assert draws(KMIN + 1) and draws(KMAX - 1)


def test_the_marking_probability_rises_linearly_between_the_thresholds(E):
    """Half-way between the thresholds about half the packets are marked (pmax = 1)."""
    hits = 0
    for _ in range(2000):
        E.pkt[0]["ecn"] = ST.ECN_ECT0
        hits += aqm.ecn_mark(E, PORT, 0, (KMIN + KMAX) // 2)
    assert 0.44 < hits / 2000 < 0.56
    assert marks(E) == (hits, hits)


# --- trimming -------------------------------------------------------------------------------------------

def data_packet(E, i=1, dscp_class=DscpClass.DATA, size=4160, payload=4096):
    dscp = int(next(d for d in range(64) if E.dscp_classes[d] == int(dscp_class)))
    E.pkt[i]["trim"] = 0
    E.pkt[i]["cls"] = ST.CLS_DATA
    E.pkt[i]["dscp"] = dscp
    E.pkt[i]["size"] = size
    E.hdr[i]["payload_len"] = payload
    E.hdr[i]["trim"] = 0
    E.hdr[i]["dscp"] = dscp
    return i


@pytest.mark.parametrize("cls", [DscpClass.DATA, DscpClass.RETX])
def test_data_and_retransmissions_are_trimmable(E, cls):
    assert aqm.trimmable(E, data_packet(E, dscp_class=cls))


def test_what_is_not_trimmable(E):
    i = data_packet(E)
    E.pkt[i]["trim"] = int(Trim.TRIMMED)
    assert not aqm.trimmable(E, i)  # already trimmed
    i = data_packet(E)
    E.pkt[i]["cls"] = ST.CLS_CTRL
    assert not aqm.trimmable(E, i)  # control class
    others = [c for c in DscpClass if c not in (DscpClass.DATA, DscpClass.RETX)
              and any(E.dscp_classes[d] == int(c) for d in range(64))]
    assert others
    for c in others:
        assert not aqm.trimmable(E, data_packet(E, dscp_class=c)), c


def test_trim_in_the_fabric(E):
    i = data_packet(E)
    keep = int(E.cfg[0]["trim_size"])
    aqm.trim(E, PORT, i)
    p, h = E.pkt[i], E.hdr[i]
    assert (p["size"], p["cls"], p["trim"], h["trim"]) == (keep, ST.CLS_CTRL, Trim.TRIMMED, Trim.TRIMMED)
    assert p["dscp"] == h["dscp"] == E.cfg[0]["dscp_trimmed"]
    assert h["payload_len"] == 4096 - (4160 - keep)
    assert (int(E.port[PORT]["trims"]), int(E.ctr[ST.C_TRIMS]), int(E.ctr[ST.C_TRIM_BYTES])) == (1, 1, 4160 - keep)


def test_trim_on_the_last_hop_marks_trimmed_lasthop(E):
    E.port[PORT]["kind"] |= ST.PK_LASTHOP
    i = data_packet(E)
    aqm.trim(E, PORT, i)
    assert E.pkt[i]["trim"] == E.hdr[i]["trim"] == Trim.TRIMMED_LASTHOP
    assert E.pkt[i]["dscp"] == E.hdr[i]["dscp"] == E.cfg[0]["dscp_trimmed_lasthop"]


def test_trim_of_a_packet_no_bigger_than_the_trimmed_size_removes_nothing(E):
    keep = int(E.cfg[0]["trim_size"])
    for size in (keep, keep - 1):
        i = data_packet(E, size=size, payload=size // 2)
        aqm.trim(E, PORT, i)
        assert E.pkt[i]["size"] == size and E.hdr[i]["payload_len"] == size // 2
        assert E.pkt[i]["trim"] == Trim.TRIMMED
    assert int(E.ctr[ST.C_TRIM_BYTES]) == 0 and int(E.ctr[ST.C_TRIMS]) == 2


def test_trim_never_makes_the_payload_length_negative(E):
    keep = int(E.cfg[0]["trim_size"])
    i = data_packet(E, size=keep + 100, payload=100)  # all of the payload goes
    aqm.trim(E, PORT, i)
    assert E.hdr[i]["payload_len"] == 0
    i = data_packet(E, size=keep + 100, payload=60)  # a header row claiming less than was cut: 0, not negative
    aqm.trim(E, PORT, i)
    assert E.hdr[i]["payload_len"] == 0
    i = data_packet(E, size=keep + 100, payload=101)
    aqm.trim(E, PORT, i)
    assert E.hdr[i]["payload_len"] == 1
