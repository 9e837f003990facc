"""The wire-level adapter: the reference out of process, over UDP datagrams and JSON lines (loopback only,
port 0, an absolute time limit on every I/O wait)."""
from __future__ import annotations

import json
import socket

import pytest
import trio

from mrc.conformance.cases import BY_ID
from mrc.conformance.protocol import BANNER, LineReader, digest, dumps, loads
from mrc.conformance.runner import run_case
from mrc.conformance.wire_adapter import PeerError, WireAdapter

from .known import KNOWN_REFERENCE_FAILURES

# a cross-section of the suite: every group, crafted and tester peers, timers, controller operations, SRv6
SUBSET = [
    "wire.decoders-agree", "wire.icrc-checked", "wire.srv6-carrier", "wire.golden-sack",
    "requester.segmentation", "requester.selective-retransmit", "requester.trimmed-immediate-rtx",
    "requester.rto-backoff", "requester.probe-recovery", "requester.dead-plane-keeps-spraying",
    "responder.sack-bitmap", "responder.trim-nack[lasthop]", "responder.wimm-in-order",
    "responder.write-refused[past-end]", "nscc.quadrant[ecn-high-delay]", "nscc.quick-adapt",
    "controller.ev-events", "controller.port-status-tx", "controller.ev-state-query",
    # the controller surface (feature ctl): JSON calls and errno answers over the control connection
    "controller.ev-profile-required-attrs", "controller.replace-ev-all-copies", "controller.ev-op-partial-success",
    "controller.query-ev-array", "controller.ev-event-cq-no-overrun", "controller.port-admin-disabled-down",
    "controller.ep-adj-svc-time", "controller.ev-out-of-range-denied",
]
LIMIT_S = 60  # the whole module's I/O, absolutely


@pytest.fixture(scope="module")
def wire():
    a = WireAdapter.spawn()
    yield a
    a.close()
    assert a.process.returncode == 0  # the peer left cleanly after "bye"


@pytest.mark.parametrize("case_id", SUBSET)
def test_the_reference_out_of_process_gives_the_in_process_verdicts(wire, case_id):
    r = run_case(BY_ID[case_id], wire)
    assert r.failed == (case_id in KNOWN_REFERENCE_FAILURES), r.message
    assert r.outcome in ("PASS", "FAIL"), r.message


def test_a_mutant_peer_is_caught_over_the_wire():
    a = WireAdapter.spawn(adapter="mutant:no-ev-echo")
    try:
        assert a.name == "wire:mutant:no-ev-echo"
        r = run_case(BY_ID["responder.sack-reflects-ev"], a)
        assert r.outcome == "FAIL" and "entropy 0x0" in r.message
    finally:
        a.close()


def test_a_controller_mutant_peer_is_caught_over_the_wire():
    a = WireAdapter.spawn(adapter="mutant:all-copies-ignored")
    try:
        assert "ctl" in a.features
        r = run_case(BY_ID["controller.replace-ev-all-copies"], a)
        assert r.outcome == "FAIL" and "ALL_COPIES" in r.message
    finally:
        a.close()


def test_a_peer_that_prints_no_banner_is_refused():
    import sys

    with pytest.raises(PeerError, match="printed 'hello'"):
        WireAdapter.spawn([sys.executable, "-c", "print('hello')"])


# --- the peer server itself, driven with trio (in this process) ---------------------------------------

async def _client(port):
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    return stream, LineReader(stream)


async def _ask(stream, reader, msg):
    await stream.send_all(dumps(msg))
    return loads(await reader.readline())


def test_peer_answers_garbage_and_unknown_ops_with_errors_and_keeps_serving():
    from mrc.conformance.peer import serve
    from mrc.conformance.reference import ReferenceAdapter

    async def main():
        with trio.fail_after(LIMIT_S):
            async with trio.open_nursery() as n:
                port = await n.start(lambda task_status: serve(ReferenceAdapter, once=True, task_status=task_status))
                stream, reader = await _client(port)
                await stream.send_all(b"{not json\n")
                r = loads(await reader.readline())
                assert r["ok"] is False and "not a JSON line" in r["error"]
                r = await _ask(stream, reader, {"id": 1, "op": "teleport"})
                assert r == {"ok": False, "error": "ProtocolError: unknown op 'teleport'", "id": 1}
                r = await _ask(stream, reader, {"id": 2, "op": "poll", "ep": 9})
                assert r["ok"] is False and "unknown endpoint 9" in r["error"]
                sink = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                await sink.bind(("127.0.0.1", 0))
                r = await _ask(stream, reader, {"id": 3, "op": "hello", "sink": list(sink.getsockname())})
                assert r["ok"] and r["protocol"] == 1 and "ev_query" in r["features"]
                r = await _ask(stream, reader, {"id": 4, "op": "create", "config": {"ports": 2}})
                assert r["ok"] and len(r["udp_ports"]) == 2
                ep = r["ep"]
                # a datagram announced but never sent: reported missing, nothing fed, the session goes on
                r = await _ask(stream, reader, {"id": 5, "op": "rx", "ep": ep, "packets": [[1, digest(b"x"), 0]]})
                assert r["ok"] and r["missing"] == [[1, digest(b"x")]]
                r = await _ask(stream, reader, {"id": 6, "op": "qp_state", "ep": ep})
                assert r == {"ok": True, "state": "INIT", "id": 6}
                r = await _ask(stream, reader, {"id": 7, "op": "bye"})
                assert r["ok"]
                await stream.aclose()
                sink.close()

    trio.run(main)


def test_config_round_trips_through_json():
    from mrc.conformance.adapter import EndpointConfig, EvFieldDef

    cfg = EndpointConfig(address=bytes(range(16)), evs=[(5, 1), (6, 2)], ev_format=[16, 16],
                         ev_fields=[EvFieldDef(16, mask=0xFFFF), EvFieldDef(16, 3)], ev_event_mask=("GOOD",))
    back = EndpointConfig.from_json(json.loads(json.dumps(cfg.to_json())))
    assert back == cfg
    with pytest.raises(Exception, match="unknown key"):
        EndpointConfig.from_json({"colour": "red"})


def test_banner_constant_is_what_the_peer_prints():
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "mrc.conformance.peer", "--once"], stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline().split()
        assert line[0] == BANNER and line[1] == "127.0.0.1" and int(line[2]) > 0
    finally:
        p.kill()
        p.wait(timeout=10)
        p.stdout.close()
