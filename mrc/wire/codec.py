"""Python entry points of the fast codec: one packet, or a batch in one byte buffer.

- `encode(pkt, net, payload=None) -> bytes` and
  `decode(data, ...) -> (pkt, net, payload)` handle one packet (a `PKT` row,
  a `NET` row, the payload bytes); the trio adapter uses these.
- `encode_batch(pkts, nets, arena, pay_offsets) -> (buf, offsets)` writes
  every packet of a table into one uint8 buffer (packet k is
  ``buf[offsets[k]:offsets[k+1]]``); `decode_batch` reads one back. The
  emulator writes pcaps this way.

Bytes start at the first IP header. Problems raise `DecodeError` /
`EncodeError` naming header and field; the compiled code only returns codes.

Checksum offload: ``encode(..., csum_offload=True)`` leaves the ICRC and the
UDP checksum to the NIC as a driver with checksum offload does (ICRC zero, UDP
checksum field = pseudo-header sum), and ``decode(..., verify_icrc=False,
verify_udp=False)`` trusts them; together they skip the four passes over the
payload that dominate large packets (docs/wire.md, "Checksum offload").
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.wire.constants import ROCEV2_UDP_PORT, EvMode
from mrc.wire.dscp import DEFAULT_DSCP, DscpTable
from mrc.wire.errors import decode_error, encode_error
from mrc.wire.packet import encode_checked, encoded_len
from mrc.wire.parse import decode_packet
from mrc.wire.records import NET, PKT

# Compiled code is specialised per array type, and each variant of encode_checked or
# decode_packet costs seconds of compile time (their checksum helpers more), so every entry
# point passes the same kinds: payloads read-only (a view, never a copy), packet buffers
# writable (decode copies the bytes once).
_NO_PAYLOAD = np.zeros(0, dtype=np.uint8)
_NO_PAYLOAD.flags.writeable = False


def _readonly_bytes(data) -> np.ndarray:
    """A read-only uint8 view of `data` (copied only if it has no buffer interface)."""
    a = np.frombuffer(data if isinstance(data, (bytes, bytearray, memoryview)) else bytes(data), dtype=np.uint8)
    a.flags.writeable = False
    return a


def _packet_buffer(data) -> np.ndarray:
    """The bytes of `data` in a fresh writable uint8 array (one copy)."""
    return np.frombuffer(data if isinstance(data, (bytes, bytearray, memoryview)) else bytes(data), dtype=np.uint8).copy()


def _rows(x, dtype, name) -> np.ndarray:
    """A 1-D array of `dtype` rows from a row (np.void), a 0-d or 1-d array."""
    if isinstance(x, np.ndarray):
        if x.dtype != dtype:
            raise TypeError(f"{name} must have the {name.upper()} dtype, not {x.dtype}")
        return x.reshape(-1) if x.ndim == 0 else x
    if isinstance(x, np.void) and x.dtype == dtype:
        a = np.zeros(1, dtype=dtype)
        a[0] = x
        return a
    raise TypeError(f"{name} must be a {name.upper()} row or table, not {type(x).__name__}")


def encode(pkt, net, payload: bytes | None = None, *, csum_offload: bool = False) -> bytes:
    """Bytes of one packet (from its first IP header to its ICRC).

    `payload` must hold exactly ``pkt['payload_len']`` bytes; None sends zeros.
    `csum_offload` leaves the ICRC and the UDP checksum to the NIC (docs/wire.md,
    "Checksum offload"): ICRC zero, UDP checksum field = pseudo-header sum.
    """
    p = _rows(pkt, PKT, "pkt")
    n = _rows(net, NET, "net")
    if len(p) != 1 or len(n) != 1:
        raise TypeError("encode takes one packet; use encode_batch for tables")
    if payload is None:
        arena, pay_off = _NO_PAYLOAD, -1
    else:
        if len(payload) != int(p[0]["payload_len"]):
            raise _payload_mismatch(len(payload), int(p[0]["payload_len"]))
        arena, pay_off = _readonly_bytes(payload), 0
    total = encoded_len(p, 0, n, 0)
    if total < 0:
        raise encode_error(-total, p[0])
    buf = np.empty(total, dtype=np.uint8)
    encode_checked(p, 0, n, 0, arena, pay_off, buf, 0, total, bool(csum_offload))
    return buf.tobytes()


def _payload_mismatch(got, want):
    from mrc.wire.errors import EncodeError

    return EncodeError("PKT", "payload_len", f"is {want} but {got} payload bytes were given")


def decode(
    data,
    *,
    ev_mode: EvMode = EvMode.STEV,
    dport: int = ROCEV2_UDP_PORT,
    dscp: DscpTable = DEFAULT_DSCP,
    verify_icrc: bool = True,
    verify_udp: bool = True,
    port: int = 0,
):
    """Decode one packet (bytes from its first IP header).

    Returns ``(pkt, net, payload)``: a `PKT` row, a `NET` row (numpy
    records) and the payload bytes. `ev_mode` says how to read the EV of a
    plain IPv6 packet (STEV or UDP; IPv4 is always UDP mode, IPv6-in-IPv6
    always SRv6). `dport` 0 accepts any UDP port. `port` fills `PKT.port`
    (the local NIC port it arrived on). Raises `DecodeError`.
    """
    buf = _packet_buffer(data)
    pkts = np.zeros(1, dtype=PKT)
    nets = np.zeros(1, dtype=NET)
    code, pay = decode_packet(
        buf, 0, len(buf), pkts, 0, nets, 0, int(EvMode(ev_mode)), int(dport), dscp.classes, bool(verify_icrc), bool(verify_udp)
    )
    if code:
        raise decode_error(code, pkt=pkts[0])
    pkts[0]["port"] = port
    return pkts[0], nets[0], buf[pay : pay + int(pkts[0]["payload_len"])].tobytes()


# --- batches -------------------------------------------------------------------------------
@njit
def _batch_lengths(pkts, nets, lengths):
    """Fill lengths; return (index, code) of the first bad row, or (-1, 0)."""
    broadcast = nets.shape[0] == 1
    for i in range(pkts.shape[0]):
        j = 0 if broadcast else i
        k = encoded_len(pkts, i, nets, j)
        if k < 0:
            return i, -k
        lengths[i] = k
    return -1, 0


@njit
def _batch_encode(pkts, nets, arena, pay_offsets, buf, offsets, csum_offload):
    broadcast = nets.shape[0] == 1
    zero_payload = pay_offsets.shape[0] == 0
    for i in range(pkts.shape[0]):
        j = 0 if broadcast else i
        po = -1 if zero_payload else pay_offsets[i]
        r = encode_checked(pkts, i, nets, j, arena, po, buf, offsets[i], offsets[i + 1] - offsets[i], csum_offload)
        if r < 0:
            return i, -r
    return -1, 0


def encode_batch(pkts: np.ndarray, nets: np.ndarray, arena: np.ndarray | None = None, pay_offsets=None, *,
                 csum_offload: bool = False):
    """Encode a packet table into one buffer.

    `nets` has one row per packet, or a single row shared by all. Payload of
    packet k is ``arena[pay_offsets[k] : pay_offsets[k] + pkts['payload_len'][k]]``;
    without an arena payloads are zeros. Returns ``(buf, offsets)`` with
    ``len(offsets) == len(pkts) + 1``. `csum_offload` as in `encode`.
    """
    pkts = _rows(pkts, PKT, "pkts")
    nets = _rows(nets, NET, "nets")
    if len(nets) not in (1, len(pkts)):
        raise TypeError(f"nets has {len(nets)} rows; need 1 or {len(pkts)}")
    if arena is None:
        arena, pay_offsets = _NO_PAYLOAD, np.zeros(0, dtype=np.int64)
    else:
        arena = np.ascontiguousarray(arena, dtype=np.uint8).view()
        arena.flags.writeable = False  # a view: the caller's array stays writable
        pay_offsets = np.ascontiguousarray(pay_offsets, dtype=np.int64)
        if pay_offsets.shape != (len(pkts),):
            raise TypeError("pay_offsets needs one start offset per packet")
        ends = pay_offsets + pkts["payload_len"].astype(np.int64)
        bad = np.flatnonzero((pay_offsets < 0) | (ends > len(arena)))
        if len(bad):
            from mrc.wire.errors import EncodeError

            raise EncodeError("PKT", "payload_len", f"packet {bad[0]}: payload runs outside the arena")
    lengths = np.zeros(len(pkts), dtype=np.int64)
    i, code = _batch_lengths(pkts, nets, lengths)
    if i >= 0:
        err = encode_error(code, pkts[i])
        err.args = (f"packet {i}: {err.args[0]}",)
        err.index = i
        raise err
    offsets = np.zeros(len(pkts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    buf = np.empty(int(offsets[-1]), dtype=np.uint8)
    i, code = _batch_encode(pkts, nets, arena, pay_offsets, buf, offsets, bool(csum_offload))
    if i >= 0:  # pragma: no cover - lengths were checked above
        raise encode_error(code)
    return buf, offsets


@njit
def _batch_decode(buf, offsets, pkts, nets, pay_offsets, codes, ev_hint, dport, classes, verify_icrc, verify_udp):
    bad = 0
    for i in range(pkts.shape[0]):
        code, pay = decode_packet(
            buf, offsets[i], offsets[i + 1], pkts, i, nets, i, ev_hint, dport, classes, verify_icrc, verify_udp
        )
        codes[i] = code
        pay_offsets[i] = pay
        if code:
            bad += 1
    return bad


def decode_batch(
    buf: np.ndarray,
    offsets: np.ndarray,
    *,
    ev_mode: EvMode = EvMode.STEV,
    dport: int = ROCEV2_UDP_PORT,
    dscp: DscpTable = DEFAULT_DSCP,
    verify_icrc: bool = True,
    verify_udp: bool = True,
    errors: str = "raise",
):
    """Decode packets ``buf[offsets[k]:offsets[k+1]]``.

    Returns ``(pkts, nets, pay_offsets, codes)``; payload k is
    ``buf[pay_offsets[k] : pay_offsets[k] + pkts['payload_len'][k]]``.
    ``errors="raise"`` raises the first packet's `DecodeError` (with ``.index``);
    ``errors="collect"`` leaves a non-zero code per bad packet
    (`mrc.wire.errors.decode_error(code, pkt=pkts[k])` gives its message).
    """
    if errors not in ("raise", "collect"):
        raise ValueError(f"errors = {errors!r}: 'raise' or 'collect'")
    if isinstance(buf, np.ndarray) and (buf.dtype != np.uint8 or buf.ndim != 1):
        raise TypeError(f"decode_batch: buf must be a 1-D uint8 array, got {buf.ndim}-D {buf.dtype} (no silent cast)")
    offsets = np.asarray(offsets)
    if offsets.dtype.kind not in "iu" or offsets.ndim != 1:
        raise TypeError(f"decode_batch: offsets must be a 1-D integer array, got {offsets.ndim}-D {offsets.dtype} "
                        "(no silent truncation)")
    buf = np.require(buf, dtype=np.uint8, requirements=["C", "W"])  # writable, as decode's (no copy if it is)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    if n < 0 or (n > 0 and (offsets[0] < 0 or offsets[-1] > len(buf) or np.any(np.diff(offsets) < 0))):
        raise ValueError("offsets must be non-decreasing positions inside buf")
    pkts = np.zeros(n, dtype=PKT)
    nets = np.zeros(n, dtype=NET)
    pay = np.zeros(n, dtype=np.int64)
    codes = np.zeros(n, dtype=np.int32)
    bad = _batch_decode(
        buf, offsets, pkts, nets, pay, codes, int(EvMode(ev_mode)), int(dport), dscp.classes, bool(verify_icrc), bool(verify_udp)
    )
    if bad and errors == "raise":
        i = int(np.flatnonzero(codes)[0])
        err = decode_error(int(codes[i]), pkt=pkts[i])
        err.args = (f"packet {i}: {err.args[0]}",)
        err.index = i
        raise err
    return pkts, nets, pay, codes
