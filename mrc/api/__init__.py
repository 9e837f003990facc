"""The application API, in the spirit of OCP ``mrc.h`` (itself modelled on libibverbs).

A `Device` is one MRC NIC (an ``ibv_context`` plus ``mrc_context``): it owns
the core's state tables for its QPs, its memory regions, completion queues
and the controller (`device.ctl`, see `mrc.ctl`). It is sans-IO, like
aioquic's ``QuicConnection``: nothing here reads a clock or touches a socket.
The caller feeds it:

- ``device.receive(packet, payload, now, src=...)`` for every packet that
  arrives (a `mrc.wire.records.PKT` record and its payload bytes);
- ``device.packets_to_send(now)`` to collect what must go out
  (`OutPacket`: record, payload, destination);
- ``device.next_deadline()`` and ``device.handle_timer(now)`` for timers.

Times are integer picoseconds. Local misuse (wrong state, bad arguments,
unsupported opcodes) raises `mrc.errors.UsageError` naming the problem; a
peer's misbehaviour never raises: it becomes a NACK, a counter or an event.

Queue pairs follow RESET -> INIT -> RTR -> RTS (and ERROR) with the
attributes mrc.h requires at each step (`REQUIRED_ATTRS`): INIT takes the EV
and CC profile ids (learned from the controller out of band), RTR the peer
(QPN, address, expected PSN) and the responder's MPR / max WIMM, RTS the
first PSN and the requester's MPR, max WIMM, retry counts (linear,
exponential) and timeout. RTS -> RTS changes attributes; RESET (from any
state) discards the QP's state and outstanding work requests without
completions and releases its profiles (IB verbs semantics); ERROR completes
every outstanding work request with WR_FLUSH_ERR. Only RDMA Write and
Write-with-Immediate may be posted.

The package: `mrc.api.device` (`Device`, `QueuePair`, `connect`, the attribute tables) and
`mrc.api.types` (what the API hands out and takes: work completions, events, packets to send,
memory regions, completion queues, the device's attributes, the opcode and access enums). A
device talks to its controller (`mrc.ctl`) only through `mrc.ctl.link`. The names are loaded on
first use (PEP 562), so the controller can use `mrc.api.types` without loading the device: the
modules depend one way, `mrc.api.types` <- `mrc.ctl` <- `mrc.api.device`.
"""
from __future__ import annotations

import importlib

__all__ = ["Device", "QueuePair", "connect", "QpCap", "REQUIRED_ATTRS", "ALLOWED_ATTRS", "MRC_PROTOCOL_VERSION_1",
           "MRC_DEVICE_CAP_TRIM_NACK", "MRC_DEVICE_CAP_DYNAMIC_MPR", "WC_STATUS", "Access", "AsyncEvent",
           "CompletionQueue", "DeviceAttr", "MemoryRegion", "OutPacket", "SendOpcode", "WcOpcode", "WorkCompletion"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("mrc.api.device"), name)
    raise AttributeError(f"module 'mrc.api' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
