"""The wire codec on the adapter's hot path: reused buffers, one compiled call each way.

`mrc.wire.codec.encode` / `decode` are the general Python faces; per packet
they allocate row arrays and rebuild the DSCP class table. A transport keeps
one `Codec` instead: it calls the same compiled entry points
(`mrc.wire.packet.encoded_len` / `encode_packet`, `mrc.wire.parse.decode_packet`)
with preallocated rows and an output buffer, and raises the same
`DecodeError` / `EncodeError` (the wire's messages, naming header and field).
Results are identical to `encode` / `decode` (tested).
"""
from __future__ import annotations

import numpy as np

from mrc.wire.constants import ROCEV2_UDP_PORT, EvMode
from mrc.wire.dscp import DEFAULT_DSCP, DscpTable
from mrc.wire.errors import EncodeError, decode_error, encode_error
from mrc.wire.packet import encode_packet, encoded_len
from mrc.wire.parse import decode_packet
from mrc.wire.records import NET, PKT

_EMPTY = np.zeros(0, dtype=np.uint8)


class Codec:
    """Encode into a reused buffer and decode into fresh rows, for one transport."""

    def __init__(self, *, ev_mode: EvMode = EvMode.STEV, dport: int = ROCEV2_UDP_PORT,
                 dscp: DscpTable = DEFAULT_DSCP, verify_udp: bool = True, max_packet: int = 65536 + 256):
        self.ev_hint = int(EvMode(ev_mode))
        self.dport = int(dport)
        self.classes = dscp.classes  # computed once
        self.verify_udp = bool(verify_udp)
        self._pkt = np.zeros(1, dtype=PKT)
        self._buf = np.empty(max_packet, dtype=np.uint8)

    def encode(self, pkt, net: np.ndarray, payload: bytes) -> memoryview:
        """Bytes of one packet (valid until the next call): `net` is a one-row NET array."""
        p = self._pkt
        p[0] = pkt
        if len(payload) != int(p[0]["payload_len"]):
            raise EncodeError("PKT", "payload_len", f"is {int(p[0]['payload_len'])} but {len(payload)} payload "
                              "bytes were given")
        total = encoded_len(p, 0, net, 0)
        if total < 0:
            raise encode_error(-total)
        if total > len(self._buf):
            self._buf = np.empty(total, dtype=np.uint8)
        arena = np.frombuffer(payload, dtype=np.uint8) if payload else _EMPTY
        end = encode_packet(p, 0, net, 0, arena, 0 if payload else -1, self._buf, 0)
        if end < 0:  # pragma: no cover - encoded_len checked the row
            raise encode_error(-end)
        return memoryview(self._buf)[:end]

    def decode_untrusted(self, data, port: int = 0):
        """``(pkt, payload)`` of a packet from its first IP header; raises `DecodeError`."""
        buf = np.frombuffer(data, dtype=np.uint8)
        pkts = np.zeros(1, dtype=PKT)
        nets = np.zeros(1, dtype=NET)
        code, pay = decode_packet(buf, 0, len(buf), pkts, 0, nets, 0, self.ev_hint, self.dport, self.classes, True,
                                  self.verify_udp)
        if code:
            raise decode_error(int(code))
        p = pkts[0]
        p["port"] = port
        return p, bytes(data[pay:pay + int(p["payload_len"])])
