"""The wire-level adapter protocol: how the suite drives an implementation running in another process.

Two channels, both on the loopback interface:

- **packets**: every NIC port of an endpoint is one UDP socket of the peer
  process. A packet travels as one datagram whose payload is the packet's
  bytes from its first IP header to its ICRC (RoCEv2 without Ethernet). The
  suite sends a packet for port p of an endpoint to that endpoint's socket p;
  the peer sends what the endpoint transmits on port p *from* socket p to the
  suite's sink address (given in ``hello``).
- **control**: one TCP connection carrying JSON objects, one per line. Each
  request has an ``id`` and an ``op``; each response echoes the ``id`` with
  ``"ok": true`` and the results, or ``"ok": false`` and ``"error"`` (plus
  ``"not_implemented": FEATURE`` for an optional feature the peer lacks).

Time is the suite's: every request that can change protocol state carries
``now`` (integer picoseconds), exactly as the in-process adapter interface
(`mrc.conformance.adapter`) takes it. Datagrams and requests are kept in step
by content: the ``rx`` request lists the datagrams the suite sent (port,
digest, time) in the order the endpoint must receive them, and the peer waits
for each before feeding it; the ``tx`` response lists (port, digest) of the
datagrams the peer has just sent, in transmit order. ``digest`` is the first
16 bytes of the SHA-256 of the datagram, in hex.

Requests (fields besides ``id`` and ``op``; results in brackets):

=================  ========================================================================
hello              sink [host, port] -> [protocol, name, features]
create             config (EndpointConfig as JSON) -> [ep, qpn, address (hex), udp_ports]
connect            ep, peer_qpn, peer_address (hex), sq_psn, rq_psn, now
reg_mr             ep, length -> [va, rkey, length]
read_mr            ep, va, rkey, length -> [data (base64)]
post_write         ep, wr_id, data (base64), remote_va, rkey, imm (null or 32-bit), now
post_recv          ep, wr_id
rx                 ep, packets [[port, digest, now], ...]
tx                 ep, now -> [packets [[port, digest], ...]]
deadline           ep -> [deadline (null or ps)]
timer              ep, now
poll               ep -> [completions [{kind, wr_id, status, byte_len, imm}, ...]]
events             ep -> [events [{kind, ev, port, state, drop_count, detail}, ...]]
qp_state           ep -> [state]
ev_table           ep -> [evs [[ev, port, state], ...]]            (feature ev_query)
set_ev_state       ep, ev, state, now                             (feature ev_modify)
set_port_state     ep, port, up, now                              (feature port_status)
cc_state           ep -> [cc {cwnd, ...}]                          (feature cc_query)
ev_probe           ep, req_id, ev, port, now                      (feature ep_probe)
ep_responses       ep -> [answers [[req_id, port, rtt_ns], ...]]   (feature ep_probe)
ctl                ep, call, args, now -> [answer]                (feature ctl: adapter.CTL_CALLS)
close              ep
bye                (the peer closes the connection)
=================  ========================================================================

The peer announces itself on its standard output with one line
``MRC-CONFORMANCE-PEER <host> <port>`` (the control port), then serves.
"""
from __future__ import annotations

import hashlib
import json

PROTOCOL = 1
BANNER = "MRC-CONFORMANCE-PEER"
MAX_LINE = 16 << 20  # a control line may carry a base64 write of several MB


def digest(data: bytes) -> str:
    return hashlib.sha256(data).digest()[:16].hex()


def dumps(obj: dict) -> bytes:
    """One JSON line; ValueError for a value JSON cannot hold (NaN, infinities): never invalid JSON."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


class ProtocolError(Exception):
    """The other side broke the protocol (bad JSON, unknown op, missing field)."""


def loads(line: bytes) -> dict:
    try:
        obj = json.loads(line, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        raise ProtocolError(f"not a JSON line: {line[:80]!r} ({e})") from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"expected a JSON object, got {type(obj).__name__}")
    return obj


class LineReader:
    """Split a trio stream into lines (bounded; a longer line is a protocol error)."""

    def __init__(self, stream, max_line: int = MAX_LINE):
        self.stream = stream
        self.max_line = max_line
        self.buf = bytearray()
        self._scanned = 0  # bytes of `buf` already searched for a newline

    async def fill(self) -> bool:
        """Read what the stream has into the buffer; False at its end."""
        chunk = await self.stream.receive_some(1 << 16)
        if not chunk:
            return False
        self.buf += chunk
        return True

    async def readline(self) -> bytes | None:
        while True:
            i = self.buf.find(b"\n", self._scanned)
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 1]
                self._scanned = 0
                return line
            self._scanned = len(self.buf)
            if len(self.buf) > self.max_line:
                raise ProtocolError(f"control line longer than {self.max_line} bytes")
            if not await self.fill():
                return None
