"""The application API of OCP ``mrc.h`` (itself modelled on libibverbs).

A `Device` is one MRC NIC (the ``ibv_context``): it owns the core's state tables for its QPs, its
memory regions, completion queues and the controller (`device.ctl`, see `mrc.ctl`). A `Context`
(``mrc_create_context``, `create_context`) records the API version the application uses and tracks
and cleans up what it creates. Every function of the header has a counterpart here, taking the
header's arguments and structs (dataclasses with the header's field names, masks as `enum.IntFlag`s)
and raising the header's errors as errno-named exceptions (`mrc.errors.EINVAL`, `EBUSY`, ...; all
`mrc.errors.UsageError`s); docs/ocp-coverage.md lists them and where they differ.

It is sans-IO, like aioquic's ``QuicConnection``: nothing here reads a clock or touches a socket.
The caller feeds it:

- ``device.receive(packet, payload, now, src=...)`` for every packet that arrives (a
  `mrc.wire.records.PKT` record and its payload bytes);
- ``device.packets_to_send(now)`` to collect what must go out (`OutPacket`: record, payload,
  destination);
- ``device.next_deadline()`` and ``device.handle_timer(now)`` for timers.

Times are integer picoseconds. Completion channels (`CompChannel`) and the device's `Device.async_fd`
are real file descriptors, so a trio or asyncio program can sleep on them while another task drives
the device. Local misuse (wrong state, bad arguments, unsupported opcodes) raises an error naming the
argument and its value; a peer's misbehaviour never raises: it becomes a NACK, a counter or an event.

Queue pairs follow RESET -> INIT -> RTR -> RTS (and ERROR) with the attributes mrc.h requires at
each step (`REQUIRED_ATTRS`): INIT takes the EV and CC profile ids (learned from the controller out of
band) and the QP hint, RTR the peer (QPN, address, expected PSN) and the responder's MPR / max WIMM
(and, as the OCP example does, the requester's), RTS the first PSN and the requester's MPR, max WIMM,
retry counts (linear, exponential) and timeout. RTS -> RTS changes attributes; RESET (from any state)
discards the QP's state and outstanding work requests without completions and releases its profiles
(IB verbs semantics); ERROR completes every outstanding work request with WR_FLUSH_ERR; a QP may be
destroyed in any state. Only RDMA Write and Write-with-Immediate may be posted.

The package: `mrc.api.device` (`Device`, `connect`, the names exported here), `mrc.api.qp`
(`QueuePair`, the attribute tables), `mrc.api.context` (`Context`, `QpHint`), `mrc.api.types` (the
header's structs and enums and what the API hands out: completions, events, packets to send, memory
regions, completion channels and queues), `mrc.api.version` (API versions), `mrc.api.corefeatures`
(what the core offers: dynamic MPR, service time, hints). A device talks to its controller
(`mrc.ctl`) only through `mrc.ctl.link`. The names are loaded on first use (PEP 562), so the
controller can use `mrc.api.types` without loading the device: the modules depend one way,
`mrc.api.types` <- `mrc.ctl` <- `mrc.api.device`.
"""
from __future__ import annotations

import importlib

__all__ = ["Device", "QueuePair", "Context", "QpHint", "connect", "create_context", "query_version", "api_ver",
           "VersionInfo", "QpCap", "REQUIRED_ATTRS", "ALLOWED_ATTRS", "VENDOR_QP_ATTRS", "MRC_API_CURRENT_VERSION",
           "MRC_API_LAST_SUPPORTED_VERSION", "MRC_API_VER_LATEST", "MRC_VENDOR_API_CURRENT_VERSION",
           "MRC_VENDOR_API_LAST_SUPPORTED_VERSION", "MRC_MAX_VENDOR_CFG_SIZE", "MRC_PROTOCOL_VERSION_0",
           "MRC_PROTOCOL_VERSION_1", "MRC_DEVICE_CAP_TRIM_NACK", "MRC_DEVICE_CAP_DYNAMIC_MPR", "MRC_DEVICE_CAP_SVC_TIME",
           "IBV_QP_EX_WITH_RDMA_WRITE", "IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM", "WC_STATUS", "Access", "AsyncEvent",
           "CompChannel", "CompletionQueue", "ContextAttr", "DeviceAttr", "DeviceCap", "IbvQpAttr", "IbvQpAttrMask",
           "MemoryRegion", "OutPacket", "ProtocolVersion", "QpAttr", "QpAttrMask", "QpCapFlags", "QpHintAttr",
           "QpHintAttrMask", "QpHintInitAttr", "QpInitAttr", "SendOpcode", "WcOpcode", "WorkCompletion"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("mrc.api.device"), name)
    raise AttributeError(f"module 'mrc.api' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
