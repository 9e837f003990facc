"""Multi-plane Clos fabrics: topologies, SRv6 uSID address plan and static routes,
ECMP hashing, EV -> path mapping (docs/fabric.md).

    >>> from mrc.fabric import load
    >>> topo = load("mrc-2plane-64")
    >>> ev = topo.make_ev(1, 5)            # plane 1, T1 #5
    >>> topo.route(0, 63, ev)              # port ids, source NIC first
    >>> topo.carrier(0, 63, ev)            # the SRv6 outer destination
    >>> topo.arrays                        # FabricArrays, for compiled code

Modules: `spec` (keys, validation, TOML), `presets`, `build` (node and port
arrays), `address` (uSID plan, host addresses), `tables` (static /48
tables), `evformat` (EV format, GEN profiles), `paths` (compiled EV ->
route, SRv6 forwarding), `ecmp` (compiled hashing), `reverse` (path -> EVs),
`topology` (the `Topology` object), `cli`.
"""
from mrc.fabric.build import DOWN, HOST, SWITCH, T0, T1, T2, TIER_HOST, UP
from mrc.fabric.evformat import EvField, EvFormat
from mrc.fabric.presets import PRESETS, SwitchDefaults
from mrc.fabric.reverse import evs_for_route, evs_through, evs_through_link, suspect_ports
from mrc.fabric.spec import FabricSpec, load_toml, resolve
from mrc.fabric.tables import ACT_END, ACT_END_DT6, ACT_FORWARD, TableEntry
from mrc.fabric.topology import FabricArrays, Topology, build, from_preset, load

__all__ = [
    "ACT_END", "ACT_END_DT6", "ACT_FORWARD", "DOWN", "EvField", "EvFormat", "FabricArrays", "FabricSpec",
    "HOST", "PRESETS", "SWITCH", "SwitchDefaults", "T0", "T1", "T2", "TIER_HOST", "TableEntry", "Topology",
    "UP", "build", "evs_for_route", "evs_through", "evs_through_link", "from_preset", "load", "load_toml",
    "resolve", "suspect_ports",
]
