"""Named fabrics and the switch parameters recommended with each.

Every preset is a set of topology keys (`fabric.spec`) plus the switch radix
and a rule for the per-port switch defaults the emulator should start from.
Sources:

- ``mrc-8plane-131k``: the two-tier 8-plane MRC design. 51.2 Tb/s switches
  run as 512 x 100G; a T0 has 256 downlinks + 256 uplinks; 512 T0 x 256 T1 per
  plane; 131,072 hosts with 8 x 100G NIC ports (mrc-public-notes 5, OAI and
  MANI). Link delay: MANI reports 5.09 us NIC-to-NIC through one T0 and 6.54 us
  through a T1 (2 B messages), so two more links and two more switch passes
  cost 1.45 us; with no separate switch latency that is 725 ns per link.
- ``fattree-k8`` / ``fattree-k16``: the htsim/UEC 3-tier fat-trees, 100G,
  1 us per link, no switch latency (simulators-and-setups 7). k is their
  radix; like htsim, an oversubscribed variant gives edge switches more host
  ports, so these presets set no radix limit.
- ``leafspine-8192-400g``: the UEC 8192-host leaf-spine, 128 leaves x 64
  spines at 400G, 1 us per hop, queues 100 packets, ECN 25/75 packets, MTU
  4150 B (simulators-and-setups 5.4).
- ``mrc-2plane-64`` (demos and tests) and ``mrc-2plane-tiny`` (2 leaves x 2
  spines x 2 hosts, for Linux network namespaces): small fabrics of the MRC
  design, same link delay and switch defaults as the 131k preset.

Switch defaults where the sources are silent (MRC's ECN thresholds, buffers
and MTU are not public, mrc-public-notes 8.5): one bandwidth-delay product
of buffer per port with ECN between 0.2 and 0.8 of it, the UET htsim
convention of simulators-and-setups 7 (# UET 1.0 behaviour; MRC 1.0 text not
public). MRC presets use an MTU of 4096 B payload + the 142 B SRv6-mode header
stack (mrc-public-notes 2.1) = 4238 B, and trim to 256 B, the smallest
trimmed size Spectrum-4 supports (mrc-public-notes 5, CUM); htsim setups
trim to 64 B headers.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from mrc.units import NS

ACK_BYTES = 64  # size of the acknowledgement counted in the base RTT (htsim's ACK size)


@dataclasses.dataclass(frozen=True)
class SwitchDefaults:
    """Recommended per-port switch parameters for a fabric (bytes, picoseconds)."""

    queue_bytes: int  # buffer per egress port
    ecn_min_bytes: int  # ECN marking starts (WRED min threshold)
    ecn_max_bytes: int  # ECN marks every packet (WRED max threshold)
    mtu_bytes: int  # largest packet on the wire
    trim_header_bytes: int  # size of a trimmed packet
    switch_latency_ps: int = 0
    ecn_on_last_hop: bool = False  # MRC: ECN on T0 uplinks and T1 only (mrc-public-notes 5, MANI)
    source: str = ""


@dataclasses.dataclass(frozen=True)
class SwitchRule:
    """How a preset's switch defaults scale with the fabric they are applied to."""

    unit: str  # "bdp": fractions of one bandwidth-delay product; "packets": multiples of the MTU
    queue: float
    ecn_min: float
    ecn_max: float
    mtu_bytes: int
    trim_header_bytes: int
    source: str


@dataclasses.dataclass(frozen=True)
class Preset:
    name: str
    keys: dict[str, Any]
    radix: int | None
    rule: SwitchRule
    description: str


_UET_BDP = "1 BDP buffer, ECN 0.2/0.8 BDP: UET htsim convention (simulators-and-setups 7)"
HTSIM_RULE = SwitchRule("bdp", 1.0, 0.2, 0.8, 4150, 64, _UET_BDP + "; MTU 4150 B, 64 B trimmed headers")
UEC_400G_RULE = SwitchRule("packets", 100, 25, 75, 4150, 64,
                           "queue 100 pkts, ECN 25/75 pkts, MTU 4150 B (UEC experiments, simulators-and-setups 5.4)")
MRC_RULE = SwitchRule("bdp", 1.0, 0.2, 0.8, 4238, 256,
                      "MRC values not public: " + _UET_BDP + "; MTU 4096+142 B; 256 B trimmed (Spectrum-4 minimum)")
MRC_DELAY_NS = 725

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset("mrc-8plane-131k",
               dict(kind="leaf-spine", planes=8, hosts_per_leaf=256, leaves=512, spines=256,
                    link_gbps=100, fabric_gbps=100, link_delay_ns=MRC_DELAY_NS),
               512, MRC_RULE, "two-tier 8-plane MRC design: 512 T0 x 256 T1 per plane, 51.2T switches as 512x100G"),
        Preset("fattree-k8",
               dict(kind="fat-tree", planes=1, k=8, link_gbps=100, fabric_gbps=100, link_delay_ns=1000),
               None, HTSIM_RULE, "htsim/UEC 3-tier k=8 fat-tree"),
        Preset("fattree-k16",
               dict(kind="fat-tree", planes=1, k=16, link_gbps=100, fabric_gbps=100, link_delay_ns=1000),
               None, HTSIM_RULE, "htsim/UEC 3-tier k=16 fat-tree"),
        Preset("leafspine-8192-400g",
               dict(kind="leaf-spine", planes=1, hosts_per_leaf=64, leaves=128, spines=64,
                    link_gbps=400, fabric_gbps=400, link_delay_ns=1000),
               128, UEC_400G_RULE, "UEC 8192-host leaf-spine: 128 leaves x 64 spines at 400G"),
        Preset("mrc-2plane-64",
               dict(kind="leaf-spine", planes=2, hosts_per_leaf=8, leaves=8, spines=8,
                    link_gbps=100, fabric_gbps=100, link_delay_ns=MRC_DELAY_NS),
               16, MRC_RULE, "small 2-plane MRC fabric for demos and tests: 8 leaves x 8 spines per plane"),
        Preset("mrc-2plane-tiny",
               dict(kind="leaf-spine", planes=2, hosts_per_leaf=2, leaves=2, spines=2,
                    link_gbps=100, fabric_gbps=100, link_delay_ns=MRC_DELAY_NS),
               4, MRC_RULE, "tiny 2-plane fabric for Linux network namespaces: 2 leaves x 2 spines x 2 hosts"),
    ]
}

DEFAULT_RULE = HTSIM_RULE  # fabrics given without a preset


def base_rtt_ps(spec) -> int:
    """Unloaded round trip over the longest path: propagation both ways, one MTU
    serialised per hop out and one ACK per hop back (the BDP's RTT)."""
    rule = rule_for(spec)
    hops_delay = 2 * sum(spec.link_delay_ns) + 2 * spec.nic_latency_ns  # host..top..host, one way
    rates = [spec.link_gbps, *spec.fabric_gbps]
    ser = 0.0
    for tier in range(spec.tiers):
        ser += 2 * (rule.mtu_bytes + ACK_BYTES) * 8 / rates[tier]  # ns, two links per tier
    return int(round((2 * hops_delay + ser) * NS))


def bdp_bytes(spec) -> int:
    """Bandwidth-delay product of a host link over the fabric's longest path."""
    return int(spec.link_gbps * 1e9 * base_rtt_ps(spec) / 8e12)


def rule_for(spec) -> SwitchRule:
    return PRESETS[spec.preset].rule if spec.preset in PRESETS else DEFAULT_RULE


def switch_defaults(spec) -> SwitchDefaults:
    """The recommended per-port switch parameters for `spec` (its preset's rule applied to its shape)."""
    rule = rule_for(spec)
    if rule.unit == "packets":
        unit = rule.mtu_bytes
    else:
        unit = bdp_bytes(spec)
    return SwitchDefaults(
        queue_bytes=int(round(rule.queue * unit)),
        ecn_min_bytes=int(round(rule.ecn_min * unit)),
        ecn_max_bytes=int(round(rule.ecn_max * unit)),
        mtu_bytes=rule.mtu_bytes,
        trim_header_bytes=rule.trim_header_bytes,
        source=rule.source,
    )
