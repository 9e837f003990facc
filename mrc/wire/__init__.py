"""MRC wire formats: packet records, a fast compiled codec, scapy layers, pcap tools.

Cheap to import (numpy only): `PKT` / `NET` records, constants and errors.
The rest loads on first use:

- `encode`, `decode`, `encode_batch`, `decode_batch` (`mrc.wire.codec`, numba);
- `DscpTable` (`mrc.wire.dscp`), `trim_bytes` / `trim_record` (`mrc.wire.trim`);
- `mrc.wire.layers`: scapy layers (imports scapy), `mrc.wire.srv6`: uSID carriers;
- `mrc.wire.pcap`: pcap read / write.
"""
from __future__ import annotations

import importlib

from mrc.wire.constants import DscpClass, EndpointOp, EvMode, NackReason, Opcode, SackM, Trim
from mrc.wire.errors import DecodeError, EncodeError
from mrc.wire.records import NET, PKT

_LAZY = {
    "encode": "mrc.wire.codec",
    "decode": "mrc.wire.codec",
    "encode_batch": "mrc.wire.codec",
    "decode_batch": "mrc.wire.codec",
    "DscpTable": "mrc.wire.dscp",
    "DEFAULT_DSCP": "mrc.wire.dscp",
    "trim_bytes": "mrc.wire.trim",
    "trim_record": "mrc.wire.trim",
}
_SUBMODULES = {"layers", "srv6", "pcap", "codec", "trim", "dscp", "ev", "samples", "checksum", "headers", "packet", "layout"}

__all__ = [
    "PKT", "NET", "DecodeError", "EncodeError", "Opcode", "NackReason", "SackM", "EndpointOp", "EvMode", "Trim",
    "DscpClass", *_LAZY,
]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"mrc.wire.{name}")
    raise AttributeError(f"module 'mrc.wire' has no attribute {name!r}")
