"""Goodput of `mrc io transfer` on loopback with and without a flood, at several flood rates.

The transfer runs as `benchmarks/io_goodput.py` runs it (UDP encapsulation, both endpoints in this
process) on fixed loopback ports. A second local process floods all four sockets of the two endpoints
(`mrc.testing.flood`), bounded in count (``--flood-packets``), in rate (each of ``--flood-pps``) and in
time (it stops with the transfer), to 127.0.0.1 only. Kinds (``--kind``): ``garbage`` (random bytes from
the flooder's own socket: off-path), ``forged`` (well-formed MRC packets with random QPNs, PSNs and
R_Keys, from the flooder's own socket) and ``spoofed`` (the forged packets with the peer's own source
address and port, through a raw socket: root; only the QPN check stands between them and the device).

Every run must complete and verify; the script prints goodput per run (wall clock, and per CPU second of this
process, which runs both endpoints: on a shared machine the CPU a run gets varies, the CPU it needs per byte
much less), the median of each set, what the endpoints dropped and where, the rate the flooder achieved (a flooder that
gets less CPU than the rate asked for needs, as on a loaded machine, sends fewer) and the load average.

    python benchmarks/io_spoof.py [--bytes 64M] [--runs 3] [--kind garbage] [--flood-pps 25000,50000,100000]
                                  [--burner] [--rx-buffer-min 8M]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import time

import trio

from mrc.cli import build_parser
from mrc.io import endpoint
from mrc.io.cli import parse_size, run_from_args
from mrc.testing.flood import KINDS, flood

PORTS = (47911, 47912, 47913, 47914)  # requester port 1, 2; responder port 1, 2
PEER_OF = {47911: 47913, 47912: 47914, 47913: 47911, 47914: 47912}  # who sends to each socket
TARGETS = [(("127.0.0.1", p), ("127.0.0.1", PEER_OF[p])) for p in PORTS]


def _flood(targets, stop, kind, pps, max_packets, max_s, seed, sent, took) -> None:
    """The flooder's process: records how many packets it sent and for how long (on a loaded machine it gets
    less CPU than the rate asked for needs: the rate achieved is printed with every run)."""
    t = time.monotonic()
    sent.value = flood(targets, stop, kind, pps, max_packets, max_s, seed)
    took.value = time.monotonic() - t


def _burn(stop) -> None:
    """The control of ``--burner``: a process that only wants CPU (no network traffic)."""
    while not stop.is_set():
        sum(range(10_000))


def one_run(nbytes: str, kind: str | None, pps: float, args, seed: int) -> dict:
    argv = ["io", "transfer", "--bytes", nbytes, "--local", f"127.0.0.1:{PORTS[0]},127.0.0.1:{PORTS[1]}",
            "--remote", f"127.0.0.1:{PORTS[2]},127.0.0.1:{PORTS[3]}", "--timeout-s", str(args.timeout_s)]
    ns = build_parser().parse_args(argv)
    stop, sent, took = mp.Event(), mp.Value("q", 0), mp.Value("d", 0.0)
    proc = burner = None
    if args.burner:
        burner = mp.Process(target=_burn, args=(stop,), daemon=True)
        burner.start()
    if kind is not None:
        proc = mp.Process(target=_flood, args=(TARGETS, stop, kind, pps, args.flood_packets, args.timeout_s, seed,
                                               sent, took), daemon=True)
        proc.start()
        time.sleep(0.5)  # the flood is on before the endpoints open
    try:
        cpu = time.process_time()
        report = trio.run(run_from_args, ns)
        report["cpu_s"] = time.process_time() - cpu  # both endpoints: this process
    finally:
        stop.set()
        for p in (proc, burner):
            if p is not None:
                p.join(10)
    report["flood_pps"] = sent.value / took.value if took.value > 0 else 0.0
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bytes", default="64M")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kind", choices=KINDS, default="garbage")
    ap.add_argument("--flood-pps", default="25000,50000,100000", help="comma-separated flood rates")
    ap.add_argument("--flood-packets", type=int, default=10_000_000, help="at most this many per run")
    ap.add_argument("--timeout-s", type=float, default=120.0, help="a run gives up (and says so) after this long")
    ap.add_argument("--flood-only", action="store_true", help="only the runs under the flood")
    ap.add_argument("--burner", action="store_true", help="a control: a process that only burns CPU runs beside "
                    "every run (what any second runnable process costs the transfer)")
    ap.add_argument("--rx-buffer-min", type=parse_size, default=None, metavar="BYTES",
                    help="every receive socket's buffer at least this (mrc.io.endpoint.MIN_RX_BUFFER; default: "
                         "sized to a quarter of the RTO)")
    args = ap.parse_args(argv)
    if args.rx_buffer_min is not None:
        endpoint.MIN_RX_BUFFER = args.rx_buffer_min
    rates = [float(x) for x in args.flood_pps.split(",") if x]
    print(f"mrc io transfer --bytes {args.bytes} on loopback, {args.runs} runs each; {args.kind} flood at "
          f"{', '.join(f'{r:,.0f}' for r in rates)} packets/s (at most {args.flood_packets:,} a run) from a second "
          f"process; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
          + ("; a CPU burner beside every run" if args.burner else "")
          + (f"; receive buffers at least {args.rx_buffer_min:,} B" if args.rx_buffer_min else ""))
    one_run("1M", None, 0, args, 0)  # load compiled code
    ok = True
    sets = ([] if args.flood_only else [(None, 0.0)]) + [(args.kind, r) for r in rates]
    medians = {}
    for kind, pps in sets:
        label = "clean" if kind is None else f"{pps:,.0f} pps"
        got, per_cpu, sent = [], [], []
        for r in range(args.runs):
            rep = one_run(args.bytes, kind, pps, args, r + 1)
            ok &= rep["verified"]
            sent.append(rep["flood_pps"])
            got.append(rep["goodput_gbps"] if rep["verified"] else 0.0)
            per_cpu.append(rep["bytes"] * 8 / rep["cpu_s"] / 1e6 if rep["verified"] else 0.0)
            ea, eb = rep["endpoints"]["requester"], rep["endpoints"]["responder"]
            both = {k: ea.get(k, 0) + eb.get(k, 0) for k in ea}
            print(f"  {label} run {r + 1}: verified {rep['verified']}  flood sent {rep['flood_pps']:,.0f} pps  goodput {rep['goodput_gbps'] * 1000:7.1f} Mb/s  "
                  f"{rep['seconds']:.2f} s  per CPU second {per_cpu[-1]:7.1f} Mb  ({rep['cpu_s']:.1f} CPU s)  rx datagrams {both['rx_datagrams']:,}  wrong source "
                  f"{both['rx_wrong_source']:,}  unknown QPN {both.get('rx_unknown_qpn', 0):,}  garbage "
                  f"{both['rx_garbage']:,}  inbox drops {both['rx_queue_drops']:,}  endpoint requests refused "
                  f"{both['ep_unknown_source'] + both['ep_rate_limited']:,}  sockets connected "
                  f"{both.get('sockets_connected', 0)}  rtx {rep['requester']['rtx_pkts']}  timeouts "
                  f"{rep['requester']['rtx_timeouts']}  load {os.getloadavg()[0]:.1f}"
                  + (f"\n    error: {rep['error']}" if rep.get("error") else ""))
        medians[label] = (statistics.median(got), statistics.median(per_cpu))
        print(f"{label}: median goodput {medians[label][0] * 1000:.1f} Mb/s (range {min(got) * 1000:.1f}-"
              f"{max(got) * 1000:.1f}); per CPU second {medians[label][1]:.1f} Mb (range {min(per_cpu):.1f}-"
              f"{max(per_cpu):.1f})" + (f"; the flood sent {min(sent):,.0f}-{max(sent):,.0f} packets/s" if kind else ""))
    if "clean" in medians:
        c0, c1 = medians["clean"]
        for label, (m0, m1) in medians.items():
            if label != "clean":
                print(f"{label}: {m0 / c0:.2f} of the clean goodput, {m1 / c1:.2f} of its goodput per CPU second")
    print("every run verified" if ok else "SOME RUN DID NOT VERIFY")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
