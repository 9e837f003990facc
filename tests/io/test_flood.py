"""Floods on loopback: a transfer keeps at least half its goodput and always verifies.

Real UDP sockets, a flooder in a process of its own (as an attacker's would be), bounded in count and in
time (it stops with the transfer, and within `FLOOD_S` in any case), to 127.0.0.1 only:

- off-path garbage at 100 k packets/s from the flooder's own socket: each endpoint's receive sockets are
  connected to their one peer address, so the kernel drops the flood before the process sees it;
- forged MRC packets to QPNs the endpoints do not have, sent with the peer's own source address (a raw
  socket: root only): dropped by the QPN check before any decoding.

The floor is measured against a clean run of the same transfer just before, in goodput per CPU second of
the endpoints' process (`_check`): at most half of it lost at 100 k packets/s, and both runs verify.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import time

import pytest
import trio

from mrc.io import open_endpoint
from mrc.io.transfer import TransferOptions, run_transfer
from mrc.testing.flood import flood

from .conftest import devices, loopback

OPTS = dict(rto_ms=50.0, reorder_window_us=4000.0, ev_probe_interval_ms=2.0, timeout_s=300.0)
NBYTES = 16 << 20
FLOOD_PPS = 100_000
FLOOD_S = 400.0  # the flood stops with the transfer, and after this long in any case
FLOOR = 0.5


def _flood(targets, stop, kind, sent, took) -> None:
    t = time.monotonic()
    sent.value = flood(targets, stop, kind, FLOOD_PPS, FLOOD_PPS * FLOOD_S, FLOOD_S)
    took.value = time.monotonic() - t


def _transfer(kind: str | None):
    sent, took = mp.get_context("fork").Value("q", 0), mp.get_context("fork").Value("d", 0.0)

    async def main_():
        da, db = devices(port_gbps=0.25, base_rtt_us=1000)
        with trio.fail_after(400):
            async with open_endpoint(da, loopback()) as ea, open_endpoint(db, loopback()) as eb:
                proc = stop = None
                if kind is not None:
                    # every socket, with who sends to it: the peer's socket on the same port
                    pa, pb = ea.local_peer().addrs, eb.local_peer().addrs
                    targets = [(pb[k], pa[k]) for k in range(2)] + [(pa[k], pb[k]) for k in range(2)]
                    ctx = mp.get_context("fork")
                    stop = ctx.Event()
                    proc = ctx.Process(target=_flood, args=(targets, stop, kind, sent, took), daemon=True)
                    proc.start()
                    await trio.sleep(0.3)
                try:
                    cpu = time.process_time()
                    report = await run_transfer(ea, eb, TransferOptions(nbytes=NBYTES, **OPTS))
                    report["cpu_s"] = time.process_time() - cpu
                finally:
                    if proc is not None:
                        stop.set()
                        proc.join(10)
                return report, ea.statistics(), eb.statistics()

    report, sa, sb = trio.run(main_)
    report["flood_sent"], report["flood_s"] = sent.value, took.value
    return report, sa, sb


def _check(kind: str):
    """Goodput per CPU second of the endpoints' process: the transfer is CPU-bound, and on a shared machine the
    CPU it gets varies run to run while the CPU it needs per byte does not; an off-path flood's cost to us is
    what it makes our process do (the kernel's drops are charged to the sender on loopback, as they would
    be to another machine's NIC off loopback)."""
    clean, _, _ = _transfer(None)
    assert clean["verified"], clean.get("error")
    flooded, sa, sb = _transfer(kind)
    assert flooded["verified"], flooded.get("error")
    ratio = (NBYTES / flooded["cpu_s"]) / (NBYTES / clean["cpu_s"])
    rate = flooded["flood_sent"] / max(flooded["flood_s"], 1e-9)
    assert ratio >= FLOOR, (f"{kind} flood at {rate:,.0f} packets/s: {flooded['cpu_s']:.2f} CPU s for the transfer "
                            f"against {clean['cpu_s']:.2f} clean (wall clock {flooded['goodput_gbps'] * 1000:.0f} "
                            f"against {clean['goodput_gbps'] * 1000:.0f} Mb/s, load {os.getloadavg()[0]:.1f})")
    return flooded["flood_sent"], sa, sb


@pytest.mark.slow
def test_an_off_path_garbage_flood_costs_at_most_half_the_goodput():
    sent, sa, sb = _check("garbage")
    assert sa.sockets_connected == 2 and sb.sockets_connected == 2  # the kernel filters
    # what reached us arrived before the sockets were connected (the flood starts before the QPs exist)
    reached = sa.rx_garbage + sb.rx_garbage + sa.rx_wrong_source + sb.rx_wrong_source
    assert sent > 100_000 and reached < sent // 10, (reached, sent)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="sending with another socket's source address needs a raw socket (root)")
def test_packets_for_unknown_qpns_from_the_peers_address_are_dropped_before_decoding():
    sent, sa, sb = _check("spoofed")
    assert sa.rx_unknown_qpn + sb.rx_unknown_qpn > sent // 2  # most reached us (the rest: full socket buffers)
    assert sa.rx_garbage + sb.rx_garbage == 0 and sa.rx_fed + sb.rx_fed < sent // 10


def test_the_floods_section_states_the_code_defaults():
    """docs/real-network.md "Floods" quotes the receive path's defaults: they are the code's."""
    import inspect
    import pathlib

    from mrc.io import cli, endpoint, sockets

    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "real-network.md").read_text()
    sec = doc[doc.index("## Floods"):doc.index("## Known limits")]
    assert f"default {endpoint.RX_QUEUE_S * 1000:g} ms" in sec
    assert (endpoint.MIN_RX_BUFFER, endpoint.MAX_RX_BUFFER) == (256 << 10, 8 << 20) and "[256 KiB, 8 MiB]" in sec
    batch = inspect.signature(endpoint.Endpoint.__init__).parameters["rx_batch"].default
    assert f"`rx_batch`, {batch}" in sec
    assert "n > limit // 4" in inspect.getsource(sockets.Datagram) and "under a quarter full" in sec
    assert "rto_ms / 4000" in inspect.getsource(cli) and cli.DEFAULTS["rto_ms"] == 50 and "a quarter of its 50 ms RTO" in sec
