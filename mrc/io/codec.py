"""The wire codec on the adapter's hot path: one transport's settings, and a reused send buffer.

Decoding is `mrc.wire.codec.decode` itself (one copy of the received bytes;
it shares the DSCP table's cached class array). Encoding writes into a
buffer and a packet row the transport keeps, with the same compiled entry
points as `mrc.wire.codec.encode` (`encoded_len` / `encode_checked`), which
saves allocating both per packet. Both raise the wire's `DecodeError` /
`EncodeError`; the bytes and records are identical to the wire codec's (tested).

``csum_offload=True`` (for a trusted peer, or when something below already
checks integrity, e.g. the outer UDP checksum of UDP encapsulation) sends
packets with the ICRC and UDP checksum left to "hardware" and accepts packets
without checking them (docs/wire.md, "Checksum offload").
"""
from __future__ import annotations

import numpy as np

from mrc.wire.codec import _readonly_bytes, decode
from mrc.wire.constants import ROCEV2_UDP_PORT, EvMode
from mrc.wire.dscp import DEFAULT_DSCP, DscpTable
from mrc.wire.errors import EncodeError, encode_error
from mrc.wire.packet import encode_checked, encoded_len
from mrc.wire.records import PKT

_EMPTY = np.zeros(0, dtype=np.uint8)
_EMPTY.flags.writeable = False


class Codec:
    """Encode into a reused buffer and decode into fresh rows, for one transport."""

    def __init__(self, *, ev_mode: EvMode = EvMode.STEV, dport: int = ROCEV2_UDP_PORT,
                 dscp: DscpTable = DEFAULT_DSCP, verify_udp: bool = True, csum_offload: bool = False,
                 max_packet: int = 65536 + 256):
        self.ev_mode = EvMode(ev_mode)
        self.dport = int(dport)
        self.dscp = dscp
        self.csum_offload = bool(csum_offload)
        self.verify_icrc = not self.csum_offload
        self.verify_udp = bool(verify_udp) and not self.csum_offload
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
            raise encode_error(-total, p[0])
        if total > len(self._buf):
            self._buf = np.empty(total, dtype=np.uint8)
        arena = _readonly_bytes(payload) if payload else _EMPTY
        end = encode_checked(p, 0, net, 0, arena, 0 if payload else -1, self._buf, 0, total, self.csum_offload)
        return memoryview(self._buf)[:end]

    def decode_untrusted(self, data, port: int = 0):
        """``(pkt, payload)`` of a packet from its first IP header; raises `DecodeError`."""
        pkt, _, payload = decode(data, ev_mode=self.ev_mode, dport=self.dport, dscp=self.dscp,
                                 verify_icrc=self.verify_icrc, verify_udp=self.verify_udp, port=port)
        return pkt, payload
