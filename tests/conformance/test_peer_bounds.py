"""The conformance peer keeps at most a bounded number of unclaimed datagrams: the oldest go first, counted."""
from __future__ import annotations

from conformance import peer as P


def test_a_flood_of_unclaimed_datagrams_stays_bounded_and_the_oldest_are_dropped(monkeypatch):
    monkeypatch.setattr(P, "MAX_UNCLAIMED", 100)
    monkeypatch.setattr(P, "MAX_UNCLAIMED_BYTES", 10_000)
    pe = P.PeerEndpoint(None, [])
    pe.put((0, "keep"), b"k" * 10)
    assert pe.claim((0, "keep")) == b"k" * 10
    for n in range(1000):
        pe.put((n % 2, f"d{n}"), n.to_bytes(4, "big") * 10)
    assert pe.held == 100 and pe.dropped == 900 and pe.held_bytes == 4000
    assert (0, "d899") not in pe.inbox and pe.claim((1, "d999")) == (999).to_bytes(4, "big") * 10
    for n in range(200):  # bytes bound: 500-byte datagrams, at most 20 kept
        pe.put((0, "big"), bytes(500))
    assert pe.held_bytes <= 10_000 and len(pe.inbox[(0, "big")]) == 20


def test_claimed_datagrams_are_never_counted_as_dropped(monkeypatch):
    monkeypatch.setattr(P, "MAX_UNCLAIMED", 4)
    pe = P.PeerEndpoint(None, [])
    for n in range(3):
        pe.put((0, "same"), bytes([n]))
    assert pe.claim((0, "same")) == b"\x00"
    for n in range(3, 6):
        pe.put((0, "same"), bytes([n]))
    assert pe.dropped == 1 and [d[0] for d in pe.inbox[(0, "same")]] == [2, 3, 4, 5]
