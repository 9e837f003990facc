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


# --- the control connections: served each on its own, bounded, always valid JSON -------------------------

import json  # noqa: E402
import socket  # noqa: E402

import trio  # noqa: E402

from conformance.protocol import LineReader, dumps, loads  # noqa: E402

LIMIT_S = 60


async def _client(port):
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    return stream, LineReader(stream)


async def _ask(stream, reader, msg):
    await stream.send_all(msg if isinstance(msg, bytes) else dumps(msg))
    line = await reader.readline()
    json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(AssertionError(f"{c} in a response")))
    return loads(line)


def _serve(body):
    from conformance.reference import ReferenceAdapter

    async def main():
        with trio.fail_after(LIMIT_S):
            async with trio.open_nursery() as n:
                port = await n.start(lambda task_status: P.serve(ReferenceAdapter, task_status=task_status))
                await body(port)
                n.cancel_scope.cancel()

    trio.run(main)


def test_an_idle_client_or_an_unterminated_line_blocks_no_other_client(monkeypatch):
    monkeypatch.setattr(P, "LINE_TIMEOUT_S", 0.5)

    async def body(port):
        idle, _ = await _client(port)  # connects and says nothing
        slow, slow_reader = await _client(port)
        await slow.send_all(b'{"id": 1, "op": "qp_st')  # a line that never ends
        for k in range(3):  # others are served meanwhile, at once
            s, r = await _client(port)
            with trio.fail_after(2):
                assert (await _ask(s, r, {"id": k, "op": "teleport"}))["id"] == k
            await s.aclose()
        with trio.fail_after(5):  # the unterminated line is cut off with a valid answer, then the connection
            r = loads(await slow_reader.readline())
            assert r["ok"] is False and "incomplete" in r["error"] and r["id"] is None
            assert await slow_reader.readline() is None
        await idle.aclose()

    _serve(body)


def test_a_request_with_a_nan_id_gets_a_valid_answer():
    async def body(port):
        s, r = await _client(port)
        ans = await _ask(s, r, b'{"id": NaN, "op": "teleport"}\n')
        assert ans["ok"] is False and ans["id"] is None and "not a JSON line" in ans["error"]
        ans = await _ask(s, r, b'{"id": 1e999, "op": "teleport"}\n')  # JSON's own syntax, but infinite
        assert ans["id"] is None
        ans = await _ask(s, r, b'{"id": [1, 2], "op": "teleport"}\n')
        assert ans["id"] is None
        await s.aclose()

    _serve(body)


def test_endpoints_and_regions_per_connection_are_capped(monkeypatch):
    monkeypatch.setattr(P, "MAX_ENDPOINTS", 2)
    monkeypatch.setattr(P, "MAX_REGION_BYTES", 1 << 20)

    async def body(port):
        s, r = await _client(port)
        sink = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        await sink.bind(("127.0.0.1", 0))
        assert (await _ask(s, r, {"id": 0, "op": "hello", "sink": list(sink.getsockname())}))["ok"]
        eps = [(await _ask(s, r, {"id": k, "op": "create", "config": {"ports": 2}})) for k in (1, 2, 3)]
        assert [e["ok"] for e in eps] == [True, True, False] and "at most 2" in eps[2]["error"]
        ep = eps[0]["ep"]
        assert (await _ask(s, r, {"id": 4, "op": "reg_mr", "ep": ep, "length": 600_000}))["ok"]
        big = await _ask(s, r, {"id": 5, "op": "reg_mr", "ep": ep, "length": 600_000})
        assert big["ok"] is False and "at most" in big["error"]
        assert (await _ask(s, r, {"id": 6, "op": "close", "ep": ep}))["ok"]  # closing gives its regions back
        assert (await _ask(s, r, {"id": 7, "op": "create", "config": {"ports": 2}}))["ok"]
        ep2 = eps[1]["ep"]
        assert (await _ask(s, r, {"id": 8, "op": "reg_mr", "ep": ep2, "length": 1 << 20}))["ok"]
        bad = await _ask(s, r, {"id": 9, "op": "hello", "sink": ["192.0.2.1", 9]})  # packets only to the client
        assert bad["ok"] is False and "own address" in bad["error"]
        await s.aclose()
        sink.close()

    _serve(body)
