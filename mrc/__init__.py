"""MRC: the OCP Multipath Reliable Connection transport (MRC 1.0) in Python.

Subpackages (imported lazily, so `import mrc` stays cheap):

- `mrc.wire`        every MRC header as scapy layers, plus a fast numba codec
- `mrc.core`        the protocol core: numba functions over numpy state tables
- `mrc.api`         the verbs-like application API (OCP mrc.h): Device, QueuePair
- `mrc.ctl`         the controller API (OCP mrc_ctl.h): profiles, EV events, fault localisation
- `mrc.testing`     the core and Devices on in-memory networks (harness, memnet, simnet)
- `mrc.fabric`      multi-plane Clos topologies, SRv6 uSID plan, EV -> path, ECMP
- `mrc.emulator`    packet-level fabric emulator
- `mrc.conformance` spec-referenced conformance cases and runner
- `mrc.io`          trio adapters for real sockets
"""
from mrc._version import __version__

__all__ = ["__version__"]
