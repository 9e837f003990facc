"""Helpers for the adapter tests: an in-memory UDP network with a seeded route, and endpoint pairs.

The network is `tests.io.fakenet.FakeNet` (ours, over trio's public socket-factory hook; it once
was trio's private ``trio.testing._fake_net``, which a trio release may move or drop).
`LossyRoute` is its ``route_packet`` hook: every datagram is dropped, duplicated and delayed (so
reordered) with probabilities drawn from one ``random.Random(seed)``, as trio's ``test_dtls.py``
does. Run under ``MockClock(autojump_threshold=0)``, time only moves when every task waits, so a
run is deterministic and takes no wall time.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import trio
from trio.testing import MockClock

from mrc.io import session as S
from mrc.io.transports import UdpEncap

from .fakenet import FakeNet


@dataclass
class LossyRoute:
    net: object
    nursery: object
    seed: int = 0
    drop: float = 0.0
    dup: float = 0.0
    delay_s: float = 50e-6  # one-way delay
    jitter_s: float = 0.0  # extra delay drawn uniformly in [0, jitter): reorders
    counts: dict = field(default_factory=lambda: {"sent": 0, "dropped": 0, "duplicated": 0, "delivered": 0})

    def __post_init__(self):
        self.rng = random.Random(self.seed)

    def __call__(self, packet) -> None:
        self.counts["sent"] += 1
        if self.rng.random() < self.drop:
            self.counts["dropped"] += 1
            return
        copies = 1
        if self.rng.random() < self.dup:
            copies = 2
            self.counts["duplicated"] += 1
        for _ in range(copies):
            self.nursery.start_soon(self._later, packet, self.delay_s + self.rng.random() * self.jitter_s)

    async def _later(self, packet, delay: float) -> None:
        await trio.sleep(delay)
        self.counts["delivered"] += 1
        self.net.deliver_packet(packet)


def fake_net() -> FakeNet:
    net = FakeNet()
    net.enable()
    return net


def devices(*, ports: int = 2, ev_count: int = 8, base_rtt_us: float = 200, port_gbps: float = 1.0, seed: int = 1):
    """Two devices with AUTO EV profiles and NSCC, as the transfer tool sets them up in UDP mode."""
    out = []
    for k in range(2):
        d = S.make_device(f"d{k}", ports, seed=seed + k, port_gbps=port_gbps, mtu=4096)
        S.setup_udp_profiles(d, ev_count)
        S.setup_cc(d, algorithm="nscc", base_rtt_us=base_rtt_us, target_delay_us=4 * base_rtt_us)
        out.append(d)
    return out


def loopback(ports: int = 2, host: str = "127.0.0.1") -> UdpEncap:
    return UdpEncap([f"{host}:0"] * ports)


def run_mock(fn, *args):
    """``trio.run`` under an autojumping mock clock."""
    return trio.run(fn, *args, clock=MockClock(autojump_threshold=0))
