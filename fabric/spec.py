"""Fabric parameters: the TOML keys, their validation, and what they imply.

A fabric is described by the keys of the issue (and of the emulator's
``[topology]`` section)::

    kind             "fat-tree" | "leaf-spine"
    k                fat-tree radix (even); k^3/4 hosts without oversubscription
    hosts_per_leaf   hosts under one T0 (leaf / edge) switch, per plane
    leaves           T0 switches per plane (leaf-spine)
    spines           T1 switches per plane (leaf-spine)
    planes           NIC ports per host = parallel planes sharing no switch
    link_gbps        host <-> T0 link speed
    fabric_gbps      switch <-> switch link speed: one number, or one per tier
                     ([T0-T1] for leaf-spine, [T0-T1, T1-T2] for fat-tree)
    link_delay_ns    propagation delay: one number, or one per tier
                     ([host-T0, T0-T1] or [host-T0, T0-T1, T1-T2])
    nic_latency_ns   NIC processing latency, each way (default 0): a packet
                     pays it leaving its sender's NIC and entering its
                     receiver's (added to both directions of every host link)
    oversubscription T0 down capacity / T0 up capacity (default 1)

or ``preset = "<name>"`` plus overrides of those keys. `resolve` turns such a
mapping into a validated `FabricSpec`; every impossible value raises
`ConfigError` naming the key (``topology.spines``) and the value.

Derivations (documented in docs/fabric.md):

- leaf-spine: one link per (leaf, spine) pair, as in every standard setup
  (simulators-and-setups 5.4); ``spines = hosts_per_leaf * link_gbps /
  (oversubscription * fabric_gbps)`` when `spines` is not given.
- fat-tree: htsim's FatTreeTopology numbering; k/2 uplinks per edge switch and
  ``hosts_per_leaf = oversubscription * (k/2) * fabric_gbps / link_gbps``
  (an oversubscribed edge gets more host ports, as htsim's
  oversubscribed fat-tree does).
- The switch radix is not a TOML key: presets carry it (the 131,072-host
  design has 512-port switches) and the Python builder takes ``radix=``;
  when known, every switch must fit in it.
"""
from __future__ import annotations

import dataclasses
import math
import pathlib
import tomllib
from fractions import Fraction
from typing import Any, Mapping

from mrc.errors import ConfigError, read_text

KINDS = ("fat-tree", "leaf-spine")
KEYS = (
    "kind",
    "k",
    "hosts_per_leaf",
    "leaves",
    "spines",
    "planes",
    "link_gbps",
    "fabric_gbps",
    "link_delay_ns",
    "nic_latency_ns",
    "oversubscription",
)
# Limits of the address plan (fabric/address.py): uSID ranges and EV width.
MAX_PLANES = 16
MAX_HOSTS_PER_LEAF = 0x1000
MAX_LEAVES = 0x3000
MAX_SPINES = 0x4000
MAX_K = 128


@dataclasses.dataclass(frozen=True)
class FabricSpec:
    """A validated fabric description (see the module docstring for the keys)."""

    kind: str
    planes: int
    hosts_per_leaf: int
    leaves: int  # T0 switches per plane (fat-tree: k^2/2 edge switches)
    spines: int  # leaf-spine: T1 switches per plane; fat-tree: k/2 (T1 per pod)
    k: int | None
    link_gbps: float
    fabric_gbps: tuple[float, ...]  # one per switch-switch tier
    link_delay_ns: tuple[float, ...]  # one per link tier, host link first
    oversubscription: float
    radix: int | None = None
    nic_latency_ns: float = 0.0  # added to both directions of every host link
    preset: str | None = None  # the preset this fabric started from, if any
    overrides: tuple[str, ...] = ()  # keys given on top of the preset

    @property
    def name(self) -> str:
        """Preset name (with the overridden keys), or a description of the shape."""
        if self.preset is not None:
            return self.preset + (f" ({', '.join(self.overrides)} changed)" if self.overrides else "")
        if self.kind == "fat-tree":
            return f"fat-tree k={self.k}, {self.planes} plane(s)"
        return f"leaf-spine {self.leaves}x{self.spines}, {self.planes} plane(s)"

    @property
    def tiers(self) -> int:
        """Switch tiers: 2 (leaf-spine) or 3 (fat-tree)."""
        return 3 if self.kind == "fat-tree" else 2

    @property
    def hosts(self) -> int:
        return self.hosts_per_leaf * self.leaves

    def keys(self) -> dict[str, Any]:
        """The TOML keys that rebuild this fabric (without the preset indirection)."""
        out: dict[str, Any] = {"kind": self.kind, "planes": self.planes, "hosts_per_leaf": self.hosts_per_leaf}
        if self.kind == "fat-tree":
            out["k"] = self.k
        else:
            out["leaves"] = self.leaves
            out["spines"] = self.spines
        out["link_gbps"] = self.link_gbps
        out["fabric_gbps"] = list(self.fabric_gbps)
        out["link_delay_ns"] = list(self.link_delay_ns)
        out["oversubscription"] = self.oversubscription
        if self.nic_latency_ns:
            out["nic_latency_ns"] = self.nic_latency_ns
        return out


# ---------------------------------------------------------------- value checks


def _int(where, key, value, lo=1):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}{key}", value, "must be an integer")
    if value < lo:
        raise ConfigError(f"{where}{key}", value, f"must be >= {lo}")
    return value


def _num(where, key, value, positive=True):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{where}{key}", value, "must be a number")
    if positive and value <= 0:
        raise ConfigError(f"{where}{key}", value, "must be > 0")
    if not positive and value < 0:
        raise ConfigError(f"{where}{key}", value, "must be >= 0")
    return value


def _per_tier(where, key, value, n, positive):
    """One number for every tier, or a list of exactly `n` numbers."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ConfigError(f"{where}{key}", value, f"give one number or a list of {n} (one per tier)")
        return tuple(_num(where, key, v, positive) for v in value)
    return (_num(where, key, value, positive),) * n


def _exact(where, key, value, num: Fraction, what: str) -> int:
    if num.denominator != 1:
        raise ConfigError(f"{where}{key}", value, f"{what} = {float(num):g} is not a whole number")
    return int(num)


# ---------------------------------------------------------------- resolution


def resolve(mapping: Mapping[str, Any], where: str = "topology", radix: int | None = None) -> FabricSpec:
    """Validate a topology mapping (TOML table) into a `FabricSpec`.

    `where` prefixes key names in errors (``"topology"`` gives
    ``topology.k``). A ``preset`` key starts from that preset; the other keys
    override it (a preset key that an override determines is re-derived: a
    new ``oversubscription`` re-derives the preset's ``spines``).
    """
    from mrc.fabric.presets import PRESETS as presets  # presets are built from this module's keys

    if not isinstance(mapping, Mapping):
        raise ConfigError(where, mapping, "must be a table of topology keys")
    pre = f"{where}." if where else ""
    keys = dict(mapping)
    name = None
    overrides: tuple[str, ...] = ()
    if "preset" in keys:
        name = keys.pop("preset")
        if not isinstance(name, str) or name not in presets:
            raise ConfigError(f"{pre}preset", name, f"unknown preset; known: {', '.join(presets)}")
        base = dict(presets[name].keys)
        radix = presets[name].radix if radix is None else radix
        # Overrides win; preset keys they determine are re-derived.
        if "oversubscription" in keys:
            base.pop("spines" if base.get("kind") == "leaf-spine" else "hosts_per_leaf", None)
        if "k" in keys and "hosts_per_leaf" not in keys:
            base.pop("hosts_per_leaf", None)
        if keys.get("kind", base.get("kind")) != base.get("kind"):
            base = {"planes": base.get("planes", 1)}
        overrides = tuple(keys)
        base.update(keys)
        keys = base
    for key in keys:
        if key not in KEYS:
            raise ConfigError(f"{pre}{key}", keys[key], f"unknown key; topology keys are preset, {', '.join(KEYS)}")
    if radix is not None:
        _int("", "radix", radix, 2)
    kind = keys.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"{pre}kind", kind, f"must be one of {', '.join(KINDS)}")
    planes = _int(pre, "planes", keys.get("planes", 1))
    if planes > MAX_PLANES:
        raise ConfigError(f"{pre}planes", planes, f"at most {MAX_PLANES} planes (one SRv6 block each)")
    if "link_gbps" not in keys:
        raise ConfigError(f"{pre}link_gbps", None, "missing (host link speed in Gb/s)")
    link = _num(pre, "link_gbps", keys["link_gbps"])
    tiers = 3 if kind == "fat-tree" else 2
    fabric = _per_tier(pre, "fabric_gbps", keys.get("fabric_gbps", link), tiers - 1, True)
    delay = _per_tier(pre, "link_delay_ns", keys.get("link_delay_ns", 1000), tiers, False)
    nic_lat = float(_num(pre, "nic_latency_ns", keys.get("nic_latency_ns", 0), positive=False))
    os_given = "oversubscription" in keys
    os_value = keys.get("oversubscription", 1)
    _num(pre, "oversubscription", os_value)
    os_frac = Fraction(os_value).limit_denominator(1 << 20)
    link_f, up_f = Fraction(link).limit_denominator(1 << 20), Fraction(fabric[0]).limit_denominator(1 << 20)
    if kind == "fat-tree":
        for key in ("leaves", "spines"):
            if key in keys:
                raise ConfigError(f"{pre}{key}", keys[key], "not a fat-tree key: a k-ary fat-tree has k^2/2 edge, "
                                  "k^2/2 aggregation and k^2/4 core switches per plane")
        if "k" not in keys:
            raise ConfigError(f"{pre}k", None, "missing (fat-tree switch radix)")
        k = _int(pre, "k", keys["k"], 2)
        if k % 2:
            raise ConfigError(f"{pre}k", k, "must be even (k/2 ports go down, k/2 up)")
        if k > MAX_K:
            raise ConfigError(f"{pre}k", k, f"at most {MAX_K} (uSID plan: k^2/2 edge uSIDs per plane)")
        if radix is not None and radix < k:
            raise ConfigError(f"{pre}k", k, f"radix too small: switches have {radix} ports")
        half = k // 2
        if "hosts_per_leaf" in keys:
            hpl = _int(pre, "hosts_per_leaf", keys["hosts_per_leaf"])
            implied = Fraction(hpl) * link_f / (half * up_f)
            if os_given and implied != os_frac:
                raise ConfigError(f"{pre}oversubscription", os_value, f"hosts_per_leaf = {hpl} with k = {k} gives "
                                  f"{float(implied):g} (edge down / up capacity)")
            os_frac = implied
        else:
            hpl = _exact(pre, "oversubscription", os_value, os_frac * half * up_f / link_f,
                         "hosts per edge switch (oversubscription * k/2 * fabric_gbps / link_gbps)")
            if hpl < 1:
                raise ConfigError(f"{pre}oversubscription", os_value, "leaves no host port on an edge switch")
        leaves, spines = k * half, half
    else:
        if "k" in keys:
            raise ConfigError(f"{pre}k", keys["k"], "not a leaf-spine key (give leaves and spines)")
        if "hosts_per_leaf" not in keys:
            raise ConfigError(f"{pre}hosts_per_leaf", None, "missing (hosts under one leaf)")
        hpl = _int(pre, "hosts_per_leaf", keys["hosts_per_leaf"])
        if "leaves" not in keys:
            raise ConfigError(f"{pre}leaves", None, "missing (leaf switches per plane)")
        leaves = _int(pre, "leaves", keys["leaves"])
        down = Fraction(hpl) * link_f
        if "spines" in keys:
            spines = _int(pre, "spines", keys["spines"])
            implied = down / (spines * up_f)
            if os_given and implied != os_frac:
                raise ConfigError(f"{pre}oversubscription", os_value, f"hosts_per_leaf = {hpl} and spines = {spines} "
                                  f"give {float(implied):g} (leaf down / up capacity)")
            os_frac = implied
        else:
            spines = _exact(pre, "oversubscription", os_value, down / (os_frac * up_f),
                            "spines (hosts_per_leaf * link_gbps / (oversubscription * fabric_gbps))")
            if spines < 1:
                raise ConfigError(f"{pre}oversubscription", os_value, "leaves no uplink on a leaf")
        k = None
        if radix is not None and leaves > radix:
            raise ConfigError(f"{pre}leaves", leaves, f"radix too small: a spine has {radix} ports, one per leaf")
        if leaves > MAX_LEAVES:
            raise ConfigError(f"{pre}leaves", leaves, f"at most {MAX_LEAVES} per plane (uSID plan)")
        if spines > MAX_SPINES:
            raise ConfigError(f"{pre}spines", spines, f"at most {MAX_SPINES} per plane (uSID plan)")
    if radix is not None and hpl + spines > radix:
        # blame the key that set the port count: a derived count blames oversubscription
        derived = ("spines" not in keys) if kind == "leaf-spine" else ("hosts_per_leaf" not in keys)
        key = "oversubscription" if derived else ("spines" if "spines" in overrides else "hosts_per_leaf")
        raise ConfigError(f"{pre}{key}", keys.get(key, os_value), f"radix too small: a T0 needs {hpl} host ports + "
                          f"{spines} uplinks = {hpl + spines} > {radix}")
    if hpl > MAX_HOSTS_PER_LEAF:
        raise ConfigError(f"{pre}hosts_per_leaf", hpl, f"at most {MAX_HOSTS_PER_LEAF} (T0-local host uSIDs)")
    return FabricSpec(kind=kind, planes=planes, hosts_per_leaf=hpl, leaves=leaves, spines=spines, k=k,
                      link_gbps=link, fabric_gbps=fabric, link_delay_ns=delay,
                      oversubscription=float(os_frac), radix=radix, nic_latency_ns=nic_lat, preset=name,
                      overrides=overrides)


def load_toml(path, where: str = "topology") -> FabricSpec:
    """Read a topology file: either the keys at top level, or a ``[topology]`` table."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise ConfigError("file", str(path), "no such file")
    try:
        data = tomllib.loads(read_text(p, "file"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("file", str(path), f"not valid TOML: {exc}") from None
    if "topology" in data and isinstance(data["topology"], dict):
        return resolve(data["topology"], where="topology")
    return resolve(data, where="")
