"""The trio adapter over trio's in-memory UDP network (no privileges, no wall time).

Each test decides what the network does (a seeded `LossyRoute`) and runs
under an autojumping mock clock, as trio's DTLS tests do.
"""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from mrc.errors import UsageError
from mrc.io import Endpoint, EndpointStatistics, Peer, open_endpoint
from mrc.io.endpoint import from_ps, run_epoch, to_ps
from mrc.io.transfer import TransferOptions, run_transfer
from mrc.units import US

from .conftest import LossyRoute, devices, fake_net, loopback, run_mock

OPTS = dict(rto_ms=5.0, ev_probe_interval_ms=1.0, reorder_window_us=400.0, timeout_s=30.0)


# --- time ------------------------------------------------------------------------------------

@given(st.integers(0, 3 * 10**17))  # trio's clock starts at a random offset of up to 2e5 s
def test_a_deadline_as_trio_time_is_never_before_it(ps):
    """The sleep never ends before the deadline (as floats), and is late by at most about a nanosecond.

    At 1e5 s a float second has ~15 ps granularity, so ``to_ps(from_ps(ps))`` can come out a few ps
    short: the protocol task hands the core ``max(now, deadline)`` (see the spy test below).
    """
    t = from_ps(ps)
    assert t >= ps / 1e12
    assert t - ps / 1e12 < 1.001e-9
    assert to_ps(t) >= ps - 64


# --- transfers over a faulty network -------------------------------------------------------------

async def _transfer_over(route_kw: dict, nbytes: int, seed: int, **opts):
    net = fake_net()
    da, db = devices(seed=seed)
    async with trio.open_nursery() as nursery:
        route = LossyRoute(net, nursery, seed=seed, **route_kw)
        net.route_packet = route
        async with open_endpoint(da, loopback()) as ea, open_endpoint(db, loopback()) as eb:
            report = await run_transfer(ea, eb, TransferOptions(nbytes=nbytes, chunk=64 << 10, seed=seed,
                                                                **{**OPTS, **opts}))
            stats = ea.statistics(), eb.statistics()
        nursery.cancel_scope.cancel()
    return report, route.counts, stats


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_transfer_is_byte_exact_through_drops_duplicates_and_reordering(seed):
    report, counts, (sa, sb) = run_mock(_transfer_over, dict(drop=0.03, dup=0.03, delay_s=50e-6, jitter_s=100e-6),
                                         1 << 20, seed)
    assert report["verified"] and report["completed"] == report["writes"] == 16
    assert counts["dropped"] > 0 and counts["duplicated"] > 0  # the network did misbehave
    assert report["requester"]["rtx_pkts"] > 0  # and the core recovered by retransmitting
    assert sb.rx_garbage == sa.rx_garbage == 0  # duplicates are valid packets, not garbage
    assert report["responder"]["rx_dup"] > 0


def test_same_seed_same_run():
    runs = [run_mock(_transfer_over, dict(drop=0.02, dup=0.02, jitter_s=80e-6), 256 << 10, 5)[0] for _ in range(2)]
    for r in runs:
        r.pop("endpoints")
    assert runs[0] == runs[1]


def test_a_machine_up_for_months_still_fires_the_cores_timers():
    """trio's clock is seconds since boot plus an offset: 120 days up is ~1.0e19 ps, past the core's "never"
    (2^62 ps) and int64 itself. The endpoints count from the run's first clock read, so a lossy transfer,
    which needs its retransmission timers, completes as it does on a fresh machine."""
    async def up_for_months():
        trio.lowlevel.current_clock().jump(120 * 86400)
        report, counts, _ = await _transfer_over(dict(drop=0.05), 1 << 20, 4)  # about 15 drops: data packets among them
        return report, counts, trio.current_time() - run_epoch()

    report, counts, elapsed = run_mock(up_for_months)
    assert report["verified"] and counts["dropped"] > 0 and report["requester"]["rtx_pkts"] > 0
    assert 0 < elapsed < 60  # the core's clock counted from the run, not from boot


def test_clean_network_needs_no_retransmission():
    report, counts, _ = run_mock(_transfer_over, {}, 1 << 20, 3)
    assert report["verified"] and counts["dropped"] == 0
    assert report["requester"]["rtx_pkts"] == 0 and report["requester"]["rtx_timeouts"] == 0
    assert report["requester"]["tx_pkts"] == 256  # 1 MiB in 4 KiB packets, each once
    assert all(e["state"] == "GOOD" for e in report["requester"]["ev_states"])


def test_a_blackholed_ev_goes_assumed_bad_and_the_transfer_completes():
    async def main():
        net = fake_net()
        da, db = devices(seed=4)
        hole = da.ctl.ev_table(1)[3]["value"]
        async with trio.open_nursery() as nursery:
            route = LossyRoute(net, nursery, seed=4)

            def blackhole(packet):  # packets on one EV vanish (its path is broken)
                d = packet.payload  # inner IPv6 (flow label bits 15..0) then UDP (source port): the STEV EV
                if (int.from_bytes(d[40:42], "big") << 16 | int.from_bytes(d[2:4], "big")) == hole:
                    return
                route(packet)

            net.route_packet = blackhole
            async with open_endpoint(da, loopback()) as ea, open_endpoint(db, loopback()) as eb:
                report = await run_transfer(ea, eb, TransferOptions(nbytes=1 << 20, chunk=64 << 10, **OPTS))
            nursery.cancel_scope.cancel()
        return hole, report

    hole, report = run_mock(main)
    assert report["verified"]
    states = {e["ev"]: e["state"] for e in report["requester"]["ev_states"]}
    assert states[hole] == "ASSUMED_BAD"
    bad = [e for e in report["ev_events"] if e["side"] == "requester" and e["state"] == "ASSUMED_BAD"]
    assert hole in {e["ev"] for e in bad}


# --- the adapter itself ----------------------------------------------------------------------------

def test_timers_never_fire_early_and_statistics_are_snapshots():
    async def main():
        net = fake_net()
        da, db = devices(seed=6)
        seen = []
        for d in (da, db):
            orig = d.handle_timer

            def spy(now, d=d, orig=orig):
                seen.append((d.next_deadline(), now))
                orig(now)

            d.handle_timer = spy
        async with trio.open_nursery() as nursery:
            net.route_packet = LossyRoute(net, nursery, seed=6, drop=0.05, jitter_s=100e-6)
            async with open_endpoint(da, loopback()) as ea, open_endpoint(db, loopback()) as eb:
                before = ea.statistics()
                report = await run_transfer(ea, eb, TransferOptions(nbytes=512 << 10, chunk=64 << 10, **OPTS))
                after = ea.statistics()
            nursery.cancel_scope.cancel()
        return seen, before, after, report

    seen, before, after, report = run_mock(main)
    assert report["verified"] and len(seen) > 10
    assert all(deadline is None or now >= deadline for deadline, now in seen)
    assert isinstance(before, EndpointStatistics) and after.tx_datagrams > before.tx_datagrams
    with pytest.raises(dataclasses.FrozenInstanceError):
        before.tx_datagrams = 0


def test_garbage_is_dropped_and_counted_and_never_kills_the_loop():
    async def main():
        fake_net()
        da, db = devices(seed=7)
        rng = random.Random(0)
        async with open_endpoint(da, loopback()) as ea, open_endpoint(db, loopback()) as eb:
            junk = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
            await junk.bind(("127.0.0.1", 0))
            good = None
            for k in range(60):  # random bytes, truncations of a real packet, a real packet with a bad ICRC
                if k % 3 == 0:
                    data = rng.randbytes(rng.randrange(0, 300))
                elif good is None:
                    data = b"\x60" + bytes(99)
                else:
                    data = good[: rng.randrange(len(good))]
                for addr in eb.local_peer().addrs:
                    await junk.sendto(data, addr)
            await trio.sleep(0.01)
            report = await run_transfer(ea, eb, TransferOptions(nbytes=256 << 10, chunk=64 << 10, **OPTS))
            return report, eb.statistics()

    report, st = run_mock(main)
    assert report["verified"]
    assert st.rx_garbage == 120 and st.rx_queue_drops == 0


def test_a_full_inbox_drops_and_counts_and_the_core_recovers():
    async def main():
        net = fake_net()
        da, db = devices(seed=8, port_gbps=10)  # a window far larger than the responder's inbox
        async with trio.open_nursery() as nursery:
            net.route_packet = LossyRoute(net, nursery, seed=8)
            async with open_endpoint(da, loopback()) as ea, open_endpoint(db, loopback(), inbox_size=4) as eb:
                report = await run_transfer(ea, eb, TransferOptions(nbytes=1 << 20, chunk=256 << 10, **OPTS))
                st = eb.statistics()
            nursery.cancel_scope.cancel()
        return report, st

    report, st = run_mock(main)
    assert report["verified"]
    assert st.rx_queue_drops > 0 and st.inbox_size == 4 and st.inbox_peak <= 4
    assert report["requester"]["rtx_pkts"] >= st.rx_queue_drops // 2


def test_serve_with_nursery_start_and_clean_shutdown():
    async def main():
        fake_net()
        da, _ = devices(seed=9)
        async with trio.open_nursery() as nursery:
            ep = Endpoint(da, loopback())
            started = await nursery.start(ep.serve)
            assert started is ep and ep.serving
            assert all(a[1] >= 50000 for a in ep.local_peer().addrs)  # FakeNet's ports: bound, port 0 resolved
            sock = ep.transport.socks[0]
            nursery.cancel_scope.cancel()
        assert not ep.serving
        with pytest.raises(OSError):
            await sock.sendto(b"x", ("127.0.0.1", 9))  # closed
        ep.wakeup()  # harmless after shutdown

    run_mock(main)


def test_wait_functions_return_what_the_protocol_task_produced():
    async def main():
        fake_net()
        da, db = devices(seed=10)
        async with open_endpoint(da, loopback()) as ea, open_endpoint(db, loopback()) as eb:
            from mrc.io.session import connect

            conn = connect(da, db, ea.local_peer(), eb.local_peer(), rts=dict(timeout=12))
            src = bytearray(np.arange(10_000, dtype=np.uint8).tobytes())
            dst = bytearray(10_000)
            ma, mb = da.reg_mr(src), db.reg_mr(dst)
            conn.qb.post_recv(77)
            with trio.fail_after(5):
                ea.post_write(conn.qa, 1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey, imm_data=0xABCD)
                (wc,) = await ea.wait_completion(conn.cqa)
                (rc,) = await eb.wait_completion(conn.cqb)
            assert (wc.wr_id, wc.status, wc.byte_len) == (1, "SUCCESS", 10_000)
            assert (rc.wr_id, rc.imm_data) == (77, 0xABCD)
            assert dst == src
            t = trio.current_time()
            await ea.wait_condition(lambda: True)  # already true: returns at once
            assert trio.current_time() == t

    run_mock(main)


def test_misuse_is_refused_with_the_reason():
    da, _ = devices(ports=2)
    with pytest.raises(UsageError, match="2 port\\(s\\) but the transport has 1"):
        Endpoint(da, loopback(ports=1))
    for bad in ("127.0.0.1", "localhost:80", "[::1]:99999", ("1.2.3.4",)):
        with pytest.raises(UsageError, match="address"):
            Peer.udp(bad)
    assert Peer.udp("[::1]:4791", "10.0.0.1:5").addrs == (("::1", 4791), ("10.0.0.1", 5))
    assert str(Peer.udp("[::1]:4791", None)) == "[::1]:4791, -"


def test_a_peer_without_an_address_on_a_port_is_not_sent_to():
    async def main():
        fake_net()
        da, db = devices(seed=11)
        async with open_endpoint(da, loopback()) as ea, open_endpoint(db, loopback()) as eb:
            only_port_1 = Peer((eb.local_peer().addrs[0], None))
            from mrc.io.session import connect

            conn = connect(da, db, ea.local_peer(), only_port_1, rts=dict(timeout=12))
            src = bytearray(64 << 10)
            ma, mb = da.reg_mr(src), db.reg_mr(bytearray(64 << 10))
            ea.post_write(conn.qa, 1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
            with trio.fail_after(10):
                (wc,) = await ea.wait_completion(conn.cqa)
            return wc, ea.statistics()

    wc, st = run_mock(main)
    assert wc.ok  # the core steers everything to port 1 once port 2's packets go nowhere
    assert st.tx_no_route > 0


def test_time_given_to_the_core_is_trio_time_in_picoseconds():
    async def main():
        fake_net()
        da, _ = devices(seed=12)
        async with open_endpoint(da, loopback()) as ea:
            await trio.sleep(0.25)
            return ea.now(), trio.current_time()

    now, t = run_mock(main)
    assert now == to_ps(t) and abs(now - 250_000 * US) < 10 * US
