"""Flow-size distributions for Poisson workloads, as (bytes, cumulative fraction) points.

Sampling inverts the piecewise-linear CDF through the points (sizes are
interpolated linearly within a segment, as the traffic generators of HPCC and
ConWeave do), so a sample lies between two listed sizes.

Sources (the points are the published distributions as tabulated by the HPCC
simulation repository's ``traffic_gen``, Li et al., SIGCOMM 2019, used by most
datacenter-transport papers since):

- ``websearch``: the web-search workload of DCTCP, Alizadeh et al., "Data
  Center TCP (DCTCP)", SIGCOMM 2010 (query and background flows of a
  production search cluster); mean about 1.6 MB, half the flows under 80 kB.
- ``hadoop``: Facebook Hadoop, Roy et al., "Inside the Social Network's
  (Datacenter) Network", SIGCOMM 2015; mostly small flows (70 % under 7 kB),
  mean about 120 kB.
"""
from __future__ import annotations

import numpy as np

from mrc.errors import ConfigError

WEBSEARCH = (
    (0, 0.0), (10_000, 0.15), (20_000, 0.20), (30_000, 0.30), (50_000, 0.40), (80_000, 0.53),
    (200_000, 0.60), (1_000_000, 0.70), (2_000_000, 0.80), (5_000_000, 0.90), (10_000_000, 0.97),
    (30_000_000, 1.0),
)

HADOOP = (
    (0, 0.0), (100, 0.01), (200, 0.02), (300, 0.05), (350, 0.15), (400, 0.20), (500, 0.30), (600, 0.40),
    (700, 0.50), (1_000, 0.60), (2_000, 0.67), (7_000, 0.70), (30_000, 0.72), (50_000, 0.82), (80_000, 0.87),
    (120_000, 0.90), (300_000, 0.95), (1_000_000, 0.975), (2_000_000, 0.99), (10_000_000, 1.0),
)

NAMED = {"websearch": WEBSEARCH, "hadoop": HADOOP}


class SizeCDF:
    """A flow-size CDF: points (bytes, fraction), fractions rising from 0 to 1."""

    def __init__(self, points, where: str = "workload.cdf"):
        try:
            pts = [(float(s), float(c)) for s, c in points]
        except (TypeError, ValueError):
            raise ConfigError(where, points, "give [[bytes, fraction], ...] points") from None
        if len(pts) < 2:
            raise ConfigError(where, points, "a CDF needs at least two points")
        sizes = np.array([p[0] for p in pts])
        fr = np.array([p[1] for p in pts])
        if np.any(np.diff(sizes) < 0) or np.any(np.diff(fr) < 0):
            raise ConfigError(where, points, "sizes and fractions must not decrease")
        if fr[0] < 0 or abs(fr[-1] - 1.0) > 1e-9 or sizes[0] < 0 or sizes[-1] <= 0:
            raise ConfigError(where, points, "fractions must run from >= 0 to 1, sizes from >= 0")
        self.sizes = sizes
        self.fractions = fr

    @classmethod
    def named(cls, name: str, where: str = "workload.cdf") -> "SizeCDF":
        if name not in NAMED:
            raise ConfigError(where, name, f"unknown CDF; known: {', '.join(NAMED)} (or a list of points)")
        return cls(NAMED[name], where)

    def mean(self) -> float:
        """Mean size of the piecewise-linear distribution."""
        s, f = self.sizes, self.fractions
        return float(np.sum((f[1:] - f[:-1]) * (s[1:] + s[:-1]) / 2.0)) + float(f[0] * s[0])

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        u = rng.random(n)
        sizes = np.interp(u, self.fractions, self.sizes)
        return np.maximum(1, np.round(sizes)).astype(np.int64)
