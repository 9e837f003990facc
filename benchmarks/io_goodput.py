"""Goodput of `mrc io transfer` (both endpoints in one process) and where the time goes.

Runs the transfer the command runs, in UDP-encapsulation mode on loopback and,
when this process may create network namespaces (root), in native SRv6 mode
across the ``mrc-2plane-tiny`` namespace fabric (built under a private prefix
and removed afterwards). For each mode it prints the goodput (wall clock; the
CPU is shared with whatever else runs), the CPU time per data packet, then
one profiled run's CPU time split into:

- codec:   the wire codec (encode/decode, ICRC and checksums: mrc.wire, mrc.io.codec)
- core:    the protocol core and its Python API (mrc.core, mrc.api, mrc.ctl)
- socket:  the socket system calls (sendto, recvmsg)
- trio:    the event loop (scheduling, epoll, channels)
- adapter: mrc.io's own Python (endpoint, transports, sockets, transfer)
- numpy:   array allocation and copies called from the above
- other

    python benchmarks/io_goodput.py [--bytes 64M] [--mode udp|native|both] [--no-profile]
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

import trio

from mrc.cli import build_parser
from mrc.io.build import parse_size
from mrc.io.cli import run_from_args


def categorise(filename: str, name: str) -> str:
    f = filename.replace("\\", "/")
    if "/mrc/wire/" in f or f.endswith("mrc/io/codec.py"):
        return "codec"
    if "/mrc/core/" in f or "/mrc/ctl/" in f or f.endswith(("mrc/api/device.py", "mrc/ctl/ev_fields.py")):
        return "core"
    if name.startswith("<method 'sendto'") or name.startswith("<method 'recvmsg'") or "_socket.socket" in name:
        return "socket"
    if "/trio/" in f or "/outcome/" in f or "/sniffio/" in f:
        return "trio"
    if "/mrc/io/" in f or "/mrc/fabric/" in f:
        return "adapter"
    if "/numpy/" in f or "numpy" in name:
        return "numpy"
    return "other"


def profile_split(stats: pstats.Stats) -> dict[str, float]:
    out: dict[str, float] = {}
    for (filename, _line, name), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():
        cat = categorise(filename, name if filename != "~" else name)
        out[cat] = out.get(cat, 0.0) + tottime
    return out


def args_for(mode: str, nbytes: str, prefix: str):
    argv = ["io", "transfer", "--bytes", nbytes, "--timeout-s", "300"]
    if mode == "native":
        argv += ["--mode", "native", "--prefix", prefix, "--src", "h0", "--dst", "h3"]
    return build_parser().parse_args(argv)


def run(mode: str, nbytes: str, prefix: str, profile: bool) -> None:
    trio.run(run_from_args, args_for(mode, "4M", prefix))  # load compiled code, warm caches
    cpu0, wall0 = time.process_time(), time.perf_counter()
    r = trio.run(run_from_args, args_for(mode, nbytes, prefix))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    pkts = r["requester"]["tx_pkts"] + r["requester"]["rtx_pkts"]
    print(f"{mode:>6}: {parse_size(nbytes) / 2**20:.0f} MiB in {r['seconds']:.2f} s: goodput "
          f"{r['goodput_gbps'] * 1000:.0f} Mb/s ({r['goodput_gbps'] * 125:.1f} MB/s), verified {r['verified']}, "
          f"{r['requester']['rtx_pkts']} retransmissions; CPU {cpu:.2f} s for {wall:.2f} s wall, "
          f"{cpu / max(pkts, 1) * 1e6:.0f} us CPU per data packet (both endpoints, setup and check included)")
    if not profile:
        return
    prof = cProfile.Profile()
    prof.enable()
    trio.run(run_from_args, args_for(mode, nbytes, prefix))
    prof.disable()
    split = profile_split(pstats.Stats(prof))
    total = sum(split.values())
    print("        profiled run (cProfile inflates Python-level time): "
          + ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(split.items(), key=lambda kv: -kv[1])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bytes", default="64M")
    ap.add_argument("--mode", choices=["udp", "native", "both"], default="both")
    ap.add_argument("--no-profile", action="store_true")
    a = ap.parse_args()
    print(f"mrc io transfer, both endpoints in one process; {os.cpu_count()} CPU(s), shared: figures are indicative")
    if a.mode in ("udp", "both"):
        run("udp", a.bytes, "", not a.no_profile)
    if a.mode in ("native", "both"):
        from mrc.fabric import netns

        if os.geteuid() != 0:
            print("native: skipped (needs root for network namespaces)")
            return
        prefix = f"mrcbench{os.getpid() % 100000}-"
        try:
            netns.up("mrc-2plane-tiny", prefix=prefix)
            run("native", a.bytes, prefix, not a.no_profile)
        finally:
            netns.down(prefix)


if __name__ == "__main__":
    main()
