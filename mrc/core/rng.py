"""Seeded pseudo-random numbers inside compiled code.

Each QP keeps its own generator state (``qp.rng``), so EV choices of QPs that
share an EV profile do not synchronise, and a run is reproducible from its
seed. The generator is xorshift32 (Marsaglia 2003) computed with masks in
int64, which gives the same numbers compiled and under NUMBA_DISABLE_JIT.
"""
from __future__ import annotations

from mrc._jit import njit_core

M32 = 0xFFFFFFFF


def seed_state(seed: int, stream: int) -> int:
    """A non-zero 32-bit state for (seed, stream), well mixed (splitmix64 finaliser)."""
    z = (seed * 0x9E3779B97F4A7C15 + (stream + 1) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return int(z & M32) or 0x6C8E9CF5


@njit_core(inline="always")
def next_u32(qp, i):
    x = int(qp[i]["rng"])
    x ^= (x << 13) & M32
    x ^= x >> 17
    x ^= (x << 5) & M32
    qp[i]["rng"] = x
    return x


@njit_core(inline="always")
def below(qp, i, n):
    """Uniform integer in [0, n) (n >= 1)."""
    return next_u32(qp, i) % n
