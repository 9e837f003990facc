"""Packet trimming, as a switch does it: cut the payload, keep every header, re-mark DSCP.

`trim_bytes` works on an encoded packet, `trim_row` on a `PKT` row (the
emulator's view); ``decode(trim_bytes(encode(x))) == trim_row(x)``.

- The packet is cut to `size` bytes counted from the first IP header
  (Spectrum-4 allows 256..1024 B in steps of 4, mrc-public-notes 5), never
  below its headers: a size that would cut a header is a `ConfigError`.
  A packet already no longer than `size` keeps its bytes.
- DSCP becomes the table's TRIMMED (or TRIMMED_LASTHOP) code point in every IP
  header of the packet (outer and inner in SRv6 mode); ECN bits are kept.
- IP / UDP lengths, the IPv4 header checksum and the UDP checksum are
  rewritten so the packet stays a valid UDP datagram. The ICRC is not (a
  switch cannot compute it); the receiver recognises the packet as trimmed
  by its DSCP and does not check the ICRC (see `mrc.wire.packet`).

Which packets a switch may trim is its own decision (`DscpTable.trimmable`).
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.errors import ConfigError
from mrc.wire import headers as H
from mrc.wire.checksum import ipv4_checksum, udp_checksum
from mrc.wire.constants import EvMode, Trim
from mrc.wire.dscp import DEFAULT_DSCP, DscpTable
from mrc.wire.errors import decode_error
from mrc.wire.layout import H_NO_PAYLOAD, HEADER_TABLE
from mrc.wire.packet import ext_len, ip_len
from mrc.wire.parse import decode_packet
from mrc.wire.records import NET, PKT


@njit
def _rewrite(buf, new_end, dscp):
    """Rewrite lengths, DSCP and checksums of the packet ``buf[0:new_end]`` (already decodable)."""
    pos = np.int64(0)  # not literals: callees get one compiled variant, not one per constant
    ip_off = np.int64(0)
    ipv = buf[0] >> 4
    if ipv == 4:
        ihl = int(buf[0] & 0xF) * 4
        H.put16(buf, 2, new_end)
        buf[1] = (dscp << 2) | (buf[1] & 3)
        H.put16(buf, 10, ipv4_checksum(buf, ip_off, ihl))
        pos = ihl
    else:
        while True:
            H.put16(buf, pos + 4, new_end - pos - 40)
            tc = (dscp << 2) | (((buf[pos + 1] >> 4) & 3))
            buf[pos] = 0x60 | (tc >> 4)
            buf[pos + 1] = ((tc & 0xF) << 4) | (buf[pos + 1] & 0xF)
            nh = buf[pos + 6]
            ip_off = pos
            pos += 40
            if nh == 43:
                nh = buf[pos]
                pos += 8 + 8 * int(buf[pos + 1])
            if nh != 41:
                break
    H.put16(buf, pos + 4, new_end - pos)
    H.put16(buf, pos + 6, 0)
    H.put16(buf, pos + 6, udp_checksum(buf, ip_off, 4 if ipv == 4 else 6, pos, new_end))


def trim_bytes(
    data: bytes, size: int, *, lasthop: bool = False, dscp: DscpTable = DEFAULT_DSCP, ev_mode: EvMode = EvMode.STEV
) -> bytes:
    """The packet `data` (from its first IP header) trimmed to `size` bytes and re-marked."""
    buf = np.frombuffer(bytes(data), dtype=np.uint8).copy()  # writable, as `codec.decode` passes it
    pkts = np.zeros(1, dtype=PKT)
    nets = np.zeros(1, dtype=NET)
    code, pay = decode_packet(buf, 0, len(buf), pkts, 0, nets, 0, int(EvMode(ev_mode)), 0, dscp.classes, False, False)
    if code:
        raise decode_error(code, pkt=pkts[0])
    if size < pay:
        raise ConfigError("trim.size", size, f"smaller than this packet's {pay} bytes of headers")
    new_end = min(len(buf), int(size))
    mark = dscp.trimmed_lasthop if lasthop else dscp.trimmed
    out = buf[:new_end].copy()
    _rewrite(out, new_end, mark)
    return out.tobytes()


@njit
def header_bytes(pkts, i, nets, j):
    """Bytes before the payload of row (i, j) once encoded (IP, UDP, BTH, extension headers)."""
    return ip_len(nets, j) + 8 + 12 + ext_len(pkts[i]["opcode"], pkts[i]["ts"])


@njit
def trim_row(pkts, i, nets, j, size, dscp, trim_code):
    """Trim row (i, j) as `trim_bytes` trims its encoding; returns the new packet size (or -1 if
    `size` would cut a header). `dscp` / `trim_code` are the new DSCP and `Trim` value."""
    hdr = header_bytes(pkts, i, nets, j)
    if size < hdr:
        return -1
    total = hdr + int(pkts[i]["payload_len"]) + 4
    if size < total:
        # a kind without payload is cut inside its ICRC, which leaves no payload (as decode reads it)
        pkts[i]["payload_len"] = 0 if HEADER_TABLE[pkts[i]["opcode"]] & H_NO_PAYLOAD else size - hdr
        total = size
    pkts[i]["dscp"] = dscp
    pkts[i]["trim"] = trim_code
    return total


def trim_record(pkt, net, size: int, *, lasthop: bool = False, dscp: DscpTable = DEFAULT_DSCP):
    """Python face of `trim_row` for one row: returns the trimmed copy of `pkt`."""
    p = np.zeros(1, dtype=PKT)
    p[0] = pkt
    n = np.zeros(1, dtype=NET)
    n[0] = net
    mark = dscp.trimmed_lasthop if lasthop else dscp.trimmed
    code = Trim.TRIMMED_LASTHOP if lasthop else Trim.TRIMMED
    if trim_row(p, 0, n, 0, int(size), mark, int(code)) < 0:
        raise ConfigError("trim.size", size, f"smaller than this packet's {header_bytes(p, 0, n, 0)} bytes of headers")
    return p[0]


__all__ = ["trim_bytes", "trim_row", "trim_record", "header_bytes"]
