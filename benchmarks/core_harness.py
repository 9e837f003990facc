"""Packets per second through the protocol core: requester + responder, with and without loss.

Three views of the same work (rates are per CPU-second of this process, best of
`--repeat` runs, so other load on a shared machine does not count):

1. the Python harness (`mrc.testing.harness.Pair`): Python drives the compiled core one
   call at a time, as the tests do. This is the Python loop's cost, not the core's;
2. the compiled network (`mrc.testing.memnet`): many QP pairs in one `CoreTables`, driven
   by a compiled event loop (heap of arrivals and timers, pooled packets), the
   shape of the emulator's inner loop;
3. the core's own operations, timed in compiled loops without any network: build
   a data packet (`next_packet`), receive it and build the SACKs it triggers
   (`on_packet` + `next_packet` at the responder), process a SACK (`on_packet` at
   the requester).

Scenarios: clean; 1% loss of every packet (data and control); 5% of data packets
trimmed (core trimming); 10% of data packets ECN-marked.

    python benchmarks/core_harness.py [--mbytes N] [--pairs N] [--repeat N] [--quick]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mrc.testing import memnet
from mrc._jit import njit
from mrc.core import dispatch, dtypes as D, qp as core_qp, setup
from mrc.testing.harness import Network, Pair, PathFault
from mrc.units import US
from mrc.wire.records import PKT

MTU = 4096
SCENARIOS = [("clean", {}), ("loss 1%", {"loss": 0.01}), ("trim 5%", {"trim": 0.05}), ("ecn 10%", {"ecn": 0.10})]


def best_of(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t)
    return best, out


# --- 1. the Python harness ------------------------------------------------------------------

def python_harness(nbytes: int, repeat: int, fault: dict):
    def once():
        f = PathFault(loss=fault.get("loss", 0.0), trim=fault.get("trim", 0.0), ecn=fault.get("ecn", 0.0))
        net = Network(jitter_ps=0, rate_bps=400 * 10**9, default=f)
        pair = Pair(n_planes=4, evs_per_plane=32, network=net, check=False, rate_bps=400 * 10**9, base_rtt_ps=8 * US)
        assert pair.transfer(nbytes)
        q = pair.qp(0)
        return int(q["tx_pkts"]), int(q["rtx_pkts"])
    dt, (pkts, rtx) = best_of(once, repeat)
    return pkts / dt, pkts, rtx


# --- 2. the compiled network ----------------------------------------------------------------

def compiled_network(pairs: int, nbytes_per_pair: int, repeat: int, fault: dict):
    msg = 1 << 20
    msgs = max(1, nbytes_per_pair // msg)

    def once():
        T = memnet.build(pairs)
        return memnet.run(T, msgs=msgs, msg_bytes=msg, **fault).counters
    dt, r = best_of(once, repeat)
    assert r["done"] == pairs * msgs and r["failed"] == 0, r
    pkts = r["data"] + r["rtx"]
    calls = r["data"] + r["rtx"] + r["control"] + r["probe"] + r["delivered"] + r["timers"]
    return pkts / dt, calls / dt, r


# --- 3. the core's own operations -----------------------------------------------------------

@njit
def _send(T, out, n, now):
    c = 0
    for k in range(n):
        if dispatch.next_packet(T, 0, now, 0xFF, out, k) == dispatch.K_NONE:
            break
        c += 1
    return c


@njit
def _receive(T, data, n, sacks, now):
    ns = 0
    for k in range(n):
        dispatch.on_packet(T, 1, data[k], now)
        while dispatch.next_packet(T, 1, now, 0xFF, sacks, ns) != dispatch.K_NONE:
            ns += 1
    return ns


@njit
def _acks(T, sacks, n, now):
    for k in range(n):
        dispatch.on_packet(T, 0, sacks[k], now)


def core_operations(repeat: int, n: int = 1000, rounds: int = 30):
    T = memnet.build(1, cc=setup.nscc_profile(rate_bps=400 * 10**9, base_rtt_ps=8 * US, max_cwnd=1 << 40))
    data, sacks = np.zeros(n, dtype=PKT), np.zeros(n, dtype=PKT)
    best = {"send": float("inf"), "receive": float("inf"), "sack": float("inf")}
    now = 0
    for r in range(rounds * repeat):
        core_qp.post_write(T, 0, r + 1, D.WR_WRITE, 0, 0, 0x10000, 7, MTU * n, 0, now)
        t0 = time.perf_counter()
        c = _send(T, data, n, now)
        t1 = time.perf_counter()
        now += 2_000_000
        ns = _receive(T, data, c, sacks, now)
        t2 = time.perf_counter()
        now += 2_000_000
        _acks(T, sacks, ns, now)
        t3 = time.perf_counter()
        T.evt_n[0] = 0
        now += 1_000_000
        if r:
            best["send"] = min(best["send"], (t1 - t0) / c)
            best["receive"] = min(best["receive"], (t2 - t1) / c)
            best["sack"] = min(best["sack"], (t3 - t2) / ns)
    return {k: v * 1e9 for k, v in best.items()}, c / ns


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mbytes", type=int, default=64, help="bytes written per pair, in MiB (default 64)")
    ap.add_argument("--pairs", type=int, default=64, help="QP pairs in the many-pairs run (default 64)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat (a smoke run)")
    args = ap.parse_args(argv)
    if args.quick:
        args.mbytes, args.pairs, args.repeat = 2, 4, 1
    nbytes = args.mbytes << 20
    t = time.time()
    memnet.run(memnet.build(1), msgs=1, msg_bytes=65536, loss=0.01, trim=0.01, ecn=0.01)  # compile / load the cache
    _ = core_operations(1, n=10, rounds=2)
    python_harness(65536, 1, {})
    print(f"(compiled code loaded or compiled in {time.time() - t:.1f} s)\n")

    py_bytes = min(nbytes, 8 << 20)
    print(f"1. Python harness (mrc.testing.harness.Pair), one pair, {py_bytes >> 20} MiB, 4 planes x 32 EVs, 400 Gb/s link")
    print(f"   {'scenario':10s} {'data pkts/s':>12s} {'packets':>9s} {'rtx':>7s}")
    for name, fault in SCENARIOS:
        rate, pkts, rtx = python_harness(py_bytes, args.repeat, fault)
        print(f"   {name:10s} {rate:12,.0f} {pkts:9d} {rtx:7d}")

    print(f"\n2. compiled network (mrc.testing.memnet), {args.mbytes} MiB per pair, 1 MiB messages, 4 planes x 32 EVs")
    print(f"   {'pairs':>5s} {'scenario':10s} {'data pkts/s':>12s} {'core calls/s':>13s} {'rtx':>7s} {'SACKs':>8s}")
    for pairs in (1, args.pairs):
        for name, fault in SCENARIOS:
            rate, calls, r = compiled_network(pairs, nbytes, args.repeat, fault)
            print(f"   {pairs:5d} {name:10s} {rate:12,.0f} {calls:13,.0f} {r['rtx']:7d} {r['control']:8d}")

    ops, per_sack = core_operations(args.repeat)
    total = ops["send"] + ops["receive"] + ops["sack"] / per_sack
    print("\n3. the core's own cost, compiled loops, no network (ns, best of runs)")
    print(f"   next_packet, one data packet at the requester        {ops['send']:7.0f} ns")
    print(f"   on_packet + the SACKs it triggers, at the responder   {ops['receive']:7.0f} ns per data packet")
    print(f"   on_packet of one SACK at the requester                {ops['sack']:7.0f} ns ({per_sack:.1f} data packets per SACK)")
    print(f"   per data packet, all of the above                     {total:7.0f} ns = {1e3 / total:.2f} M packets/s")


if __name__ == "__main__":
    main()
