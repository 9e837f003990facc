"""Hostile traffic on loopback for tests and benchmarks: a flooder to run in a process of its own.

`flood(targets, stop, kind, pps, max_packets, max_s)` sends to every ``(address, peer)`` of `targets` in
turn (``address``: a socket to flood; ``peer``: the address that socket's real traffic comes from), at
`pps` packets per second, until `stop` is set, `max_packets` are sent or `max_s` seconds pass, whichever
comes first. It only ever sends to 127.0.0.1. Kinds:

- ``garbage``: random bytes (60-1400 of them) from the flooder's own socket: an off-path sender;
- ``forged``: well-formed MRC packets (writes, SACKs, NACKs of every reason, AETH NAKs, endpoint
  requests) with random QPNs, PSNs and R_Keys (`forged_frames`), from the flooder's own socket;
- ``spoofed``: the same forged packets sent with each target's *peer* address and UDP port as their
  source (a raw IPv4 socket: root only), so that no source check can tell them from the peer's.
"""
from __future__ import annotations

import socket
import struct
import time

import numpy as np

KINDS = ("garbage", "forged", "spoofed")
LOOPBACK = "127.0.0.1"


def forged_frames(seed: int, n: int = 512) -> list[bytes]:
    """`n` well-formed MRC packets (IPv6 in STEV form, UDP, BTH and the rest) with random identifiers."""
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
    for k in range(n):
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
    return frames


def ipv4_udp(src_port: int, dst_port: int, payload: bytes) -> bytes:
    """An IPv4 + UDP datagram from 127.0.0.1 to 127.0.0.1 (UDP checksum 0: none, allowed over IPv4)."""
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28 + len(payload), 0, 0x4000, 64, socket.IPPROTO_UDP, 0,
                     socket.inet_aton(LOOPBACK), socket.inet_aton(LOOPBACK))
    c = sum(struct.unpack("!10H", ip))
    c = (c & 0xFFFF) + (c >> 16)
    ip = ip[:10] + struct.pack("!H", ~((c & 0xFFFF) + (c >> 16)) & 0xFFFF) + ip[12:]
    return ip + struct.pack("!HHHH", src_port, dst_port, 8 + len(payload), 0) + payload


def flood(targets, stop, kind: str, pps: float, max_packets: int, max_s: float, seed: int = 1) -> int:
    """Flood `targets` (see the module docstring); returns the number of packets sent."""
    if kind not in KINDS:
        raise ValueError(f"kind = {kind!r}: one of {', '.join(KINDS)}")
    for addr, peer in targets:
        if addr[0] != LOOPBACK or (kind == "spoofed" and peer[0] != LOOPBACK):
            raise ValueError(f"{addr} / {peer}: the flooder sends on {LOOPBACK} only")
    rng = np.random.default_rng(seed)
    if kind == "garbage":
        frames = [rng.bytes(int(rng.integers(60, 1400))) for _ in range(512)]
    else:
        frames = forged_frames(seed)
    if kind == "spoofed":
        sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        wire = [[(ipv4_udp(peer[1], addr[1], f), (LOOPBACK, 0)) for addr, peer in targets] for f in frames]
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((LOOPBACK, 0))
        wire = [[(f, tuple(addr)) for addr, _ in targets] for f in frames]
    n = len(targets)
    sent, t0 = 0, time.monotonic()
    with sock:
        while sent < max_packets and not stop.is_set():
            elapsed = time.monotonic() - t0
            if elapsed >= max_s:
                break
            due = int(elapsed * pps) + 1
            if sent >= due:
                time.sleep(min((sent + 1) / pps - elapsed, 0.001))
                continue
            for _ in range(min(due - sent, 256, max_packets - sent)):  # a burst per clock read
                data, dest = wire[(sent // n) % len(wire)][sent % n]
                try:
                    sock.sendto(data, dest)
                except OSError:
                    pass
                sent += 1
    return sent
