"""Goodput of `mrc io transfer` on loopback with and without a flood of spoofed packets.

The transfer runs as `benchmarks/io_goodput.py` runs it (UDP encapsulation, both endpoints in this
process) on fixed loopback ports. With ``--flood``, a second local process sends forged MRC packets
to all four sockets of the two endpoints from its own socket: writes, SACKs, NACKs of every reason
and AETH NAKs with random QPNs, PSNs and R_Keys (an off-path sender: it cannot see the identifiers,
which are drawn from the CSPRNG), plus endpoint requests. The flood is bounded in count
(``--flood-packets``), in rate (``--flood-pps``) and in time (it stops with the transfer), and goes
to 127.0.0.1 only. Every run must complete and verify; the script prints goodput per run, the
median of each set, and what the endpoints dropped.

    python benchmarks/io_spoof.py [--bytes 32M] [--runs 3] [--flood-pps 20000] [--flood-packets 2000000]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import socket
import statistics
import time

import numpy as np
import trio

from mrc.cli import build_parser
from mrc.io.cli import run_from_args

PORTS = (47911, 47912, 47913, 47914)  # requester port 1, 2; responder port 1, 2


def flood(stop, count: int, pps: float, seed: int) -> None:
    """Send up to `count` forged packets at `pps` to the four loopback sockets until `stop` is set."""
    from mrc.io.codec import Codec
    from mrc.wire.constants import ENDPOINT_QPN, EvMode, NackReason, Opcode
    from mrc.wire.records import NET, PKT

    rng = np.random.default_rng(seed)
    codec = Codec(ev_mode=EvMode.STEV, verify_udp=False)
    net = np.zeros(1, dtype=NET)
    net[0]["ip_version"], net[0]["ev_mode"], net[0]["hop_limit"], net[0]["dport"] = 6, int(EvMode.STEV), 64, 4791
    kinds = [int(Opcode.MRC_WRITE_ONLY), int(Opcode.MRC_RELIABILITY_SACK), int(Opcode.MRC_RELIABILITY_NACK),
             int(Opcode.MRC_ACKNOWLEDGE), int(Opcode.MRC_ENDPOINT_REQUEST)]
    frames = []
    for k in range(512):  # a pool of forged packets, sent round robin
        p = np.zeros(1, dtype=PKT)[0]
        op = kinds[k % len(kinds)]
        p["opcode"], p["pkey"], p["ev"] = op, 0xFFFF, int(rng.integers(1, 1 << 20))
        p["dqpn"] = ENDPOINT_QPN if op == int(Opcode.MRC_ENDPOINT_REQUEST) else int(rng.integers(0x10, 1 << 24))
        p["psn"] = int(rng.integers(0, 1 << 24))
        payload = b""
        if op == int(Opcode.MRC_WRITE_ONLY):
            payload = bytes(256)
            p["payload_len"], p["dma_len"], p["rkey"], p["va"] = 256, 256, int(rng.integers(1, 1 << 32)), 0x10000
        elif op == int(Opcode.MRC_RELIABILITY_SACK):
            p["cack_psn"], p["sack_bitmap"] = p["psn"], (1 << 64) - 1
        elif op == int(Opcode.MRC_RELIABILITY_NACK):
            p["nack_psn"], p["nack_reason"] = p["psn"], int(list(NackReason)[k % len(NackReason)])
        elif op == int(Opcode.MRC_ACKNOWLEDGE):
            p["aeth_syndrome"] = 0x60 + k % 32
        else:
            p["ep_op"] = 1
        frames.append(bytes(codec.encode(p, net, payload)))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sent, t0 = 0, time.monotonic()
    while sent < count and not stop.is_set():
        due = t0 + sent / pps
        now = time.monotonic()
        if now < due:
            time.sleep(min(due - now, 0.01))
            continue
        try:
            sock.sendto(frames[sent % len(frames)], ("127.0.0.1", PORTS[sent % 4]))
        except OSError:
            pass
        sent += 1


def one_run(nbytes: str, with_flood: bool, args, seed: int) -> dict:
    argv = ["io", "transfer", "--bytes", nbytes, "--local", f"127.0.0.1:{PORTS[0]},127.0.0.1:{PORTS[1]}",
            "--remote", f"127.0.0.1:{PORTS[2]},127.0.0.1:{PORTS[3]}", "--timeout-s", "300"]
    ns = build_parser().parse_args(argv)
    stop = mp.Event()
    proc = None
    if with_flood:
        proc = mp.Process(target=flood, args=(stop, args.flood_packets, args.flood_pps, seed), daemon=True)
        proc.start()
        time.sleep(0.5)  # the flood is on before the endpoints open
    try:
        report = trio.run(run_from_args, ns)
    finally:
        stop.set()
        if proc is not None:
            proc.join(10)
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bytes", default="32M")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--flood-pps", type=float, default=20_000.0)
    ap.add_argument("--flood-packets", type=int, default=2_000_000)
    ap.add_argument("--flood-only", action="store_true", help="only the runs under the flood")
    args = ap.parse_args(argv)
    print(f"mrc io transfer --bytes {args.bytes} on loopback, {args.runs} runs each; flood {args.flood_pps:,.0f} "
          f"packets/s (at most {args.flood_packets:,}) from a second process (pid {os.getpid()} runs the transfer)")
    one_run("1M", False, args, 0)  # load compiled code
    ok = True
    for with_flood in ((True,) if args.flood_only else (False, True)):
        rates = []
        for r in range(args.runs):
            rep = one_run(args.bytes, with_flood, args, r + 1)
            ok &= rep["verified"]
            rates.append(rep["goodput_gbps"])
            ea, eb = rep["endpoints"]["requester"], rep["endpoints"]["responder"]
            print(f"  {'flood' if with_flood else 'clean'} run {r + 1}: verified {rep['verified']}  goodput "
                  f"{rep['goodput_gbps'] * 1000:7.1f} Mb/s  rx datagrams {ea['rx_datagrams'] + eb['rx_datagrams']:,}  "
                  f"wrong source {ea['rx_wrong_source'] + eb['rx_wrong_source']:,}  garbage "
                  f"{ea['rx_garbage'] + eb['rx_garbage']:,}  endpoint requests refused "
                  f"{ea['ep_unknown_source'] + eb['ep_unknown_source'] + ea['ep_rate_limited'] + eb['ep_rate_limited']:,}  "
                  f"rtx {rep['requester']['rtx_pkts']}  timeouts {rep['requester']['rtx_timeouts']}"
                  + (f"\n    error: {rep['error']}" if rep.get("error") else ""))
        print(f"{'flood' if with_flood else 'clean'}: median goodput {statistics.median(rates) * 1000:.1f} Mb/s")
    print("every run verified" if ok else "SOME RUN DID NOT VERIFY")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
