"""Compiled encode / decode of one whole packet (IP [SRH, inner IPv6] UDP BTH ... ICRC).

`encode_packet` is the entry point here, `mrc.wire.parse.decode_packet` its
inverse; `codec.py` wraps both for Python callers and batches. A packet's bytes start at its first
IP header (no Ethernet). Errors are returned as ``-code`` (`mrc.wire.errors`).

EV placement (`mrc.wire.ev` holds the same rules in Python):

- STEV and SRv6: UDP source port = EV bits 31..16, flow label bits 15..0 =
  EV bits 15..0 (flow label bits 19..16 come from `NET.flow_label`);
- UDP: UDP source port = EV (16 bits), the flow label is `NET.flow_label`.

On decode a plain IPv6 packet cannot tell STEV from UDP mode (both are IPv6 /
UDP); the caller says which (`ev_hint`). IPv4 is always UDP mode and
IPv6-in-IPv6 always SRv6.
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.wire import errors as E
from mrc.wire import headers as H
from mrc.wire.checksum import icrc, ipv4_checksum, udp_checksum, udp_checksum_partial
from mrc.wire.constants import (
    OP_MRC_RELIABILITY_NACK, OP_MRC_RELIABILITY_SACK, SVC_TIME_MAX, DscpClass, EvMode, Trim,
)
from mrc.wire.layout import (
    H_AETH,
    H_ATOMICACKETH,
    H_ATOMICETH,
    H_CNP,
    H_EETH,
    H_ERTH,
    H_IMMDT,
    H_KNOWN,
    H_METH,
    H_NETH,
    H_NO_PAYLOAD,
    H_PETH,
    H_RETH,
    H_SETH,
    H_TSETH_IF_TS,
    HEADER_TABLE,
)

STEV = int(EvMode.STEV)
UDPMODE = int(EvMode.UDP)
SRV6 = int(EvMode.SRV6)
C_TRIMMED = int(DscpClass.TRIMMED)
C_TRIMMED_LASTHOP = int(DscpClass.TRIMMED_LASTHOP)
T_NONE = int(Trim.NONE)
T_TRIMMED = int(Trim.TRIMMED)
T_TRIMMED_LASTHOP = int(Trim.TRIMMED_LASTHOP)
MAXSEG = 4


@njit
def ext_len(opcode, ts):
    """Bytes of the headers between BTH and the payload, or -1 for an unknown opcode."""
    m = HEADER_TABLE[opcode]
    if not (m & H_KNOWN):
        return -1
    n = 0
    if m & H_METH:
        n += 4
    if (m & H_TSETH_IF_TS) and ts:
        n += 4
    if m & H_RETH:
        n += 16
    if m & H_ATOMICETH:
        n += 28
    if m & H_AETH:
        n += 4
    if m & H_ATOMICACKETH:
        n += 8
    if m & H_IMMDT:
        n += 4
    if m & H_SETH:
        n += 36
    if m & H_NETH:
        n += 20
    if m & H_PETH:
        n += 16
    if m & H_ERTH:
        n += 16
    if m & H_EETH:
        n += 36
    if m & H_CNP:
        n += 16
    return n


@njit
def ip_len(nets, j):
    """Bytes of IP headers before UDP (outer + SRH + inner in SRv6 mode)."""
    n = nets[j]
    if n["ip_version"] == 4:
        return 20
    if n["ev_mode"] == SRV6:
        k = 80
        if n["srh"]:
            k += 8 + 16 * (int(n["srh_lastentry"]) + 1)
        return k
    return 40


@njit
def check_widths(pkts, i, nets, j):
    """0 if every field fits its bit width and the NET row is consistent, else an error code."""
    p = pkts[i]
    n = nets[j]
    if HEADER_TABLE[p["opcode"]] & H_KNOWN == 0:
        return E.W_OPCODE
    if (p["se"] | p["mig"] | p["fecn"] | p["becn"] | p["ackreq"] | p["bth_r"] | p["rtx"] | p["ts"]) > 1 or p["padcnt"] > 3 or p["tver"] > 15:
        return E.W_BTH_WIDTH
    if p["dqpn"] > 0xFFFFFF:
        return E.W_DQPN
    if p["psn"] > 0xFFFFFF:
        return E.W_PSN
    if p["tsr"] > 1 or p["ftype"] > 15:
        return E.W_TSETH
    if p["aeth_msn"] > 0xFFFFFF:
        return E.W_AETH
    if p["ext_type"] > 15 or p["ext_next"] > 31 or p["m"] > 3 or p["pr"] > 1:
        return E.W_EXT_PROLOGUE
    if p["cack_psn"] > 0xFFFFFF:
        return E.W_CACK
    if p["cc_type"] > 15 or p["cc_flags"] > 15:
        return E.W_CC
    if p["ooo_count"] > 0x7FFF or p["r_c"] > 1 or p["rcv_cwnd_pen"] > 127 or p["rcvd_bytes"] > 0xFFFFFF:
        return E.W_CC_STATE
    if p["nack_psn"] > 0xFFFFFF:
        return E.W_NACK_PSN
    if p["svc_time"] > SVC_TIME_MAX and (p["opcode"] == OP_MRC_RELIABILITY_SACK or p["opcode"] == OP_MRC_RELIABILITY_NACK):
        return E.W_SVC_TIME
    if p["ep_op"] > 3:
        return E.W_EP_OP
    if p["dscp"] > 63 or p["ecn"] > 3:
        return E.W_DSCP
    # what decode refuses, encode does not write: payload on a kind that carries none, a pad count beyond
    # the payload (a trimmed row has lost its tail, pad bytes included: not checked)
    if (HEADER_TABLE[p["opcode"]] & H_NO_PAYLOAD) and p["payload_len"] > 0:
        return E.W_PAYLOAD_NONE
    if p["trim"] == 0 and p["padcnt"] > p["payload_len"]:
        return E.W_PADCNT
    if n["ev_mode"] != STEV and n["ev_mode"] != UDPMODE and n["ev_mode"] != SRV6:
        return E.W_EV_MODE
    if n["ip_version"] == 4:
        if n["ev_mode"] != UDPMODE:
            return E.W_IPV4_MODE
    elif n["ip_version"] != 6:
        return E.W_IP_VERSION
    if n["flow_label"] > 0xFFFFF:
        return E.W_FLOW
    if n["ev_mode"] == UDPMODE and p["ev"] > 0xFFFF:
        return E.W_EV
    if n["ev_mode"] == SRV6:
        if n["outer_flow_label"] > 0xFFFFF:
            return E.W_OUTER_FLOW
        if n["srh"]:
            if n["srh_lastentry"] >= MAXSEG:
                return E.W_SRH_SEGS
            if n["srh_segleft"] > n["srh_lastentry"] + 1:
                return E.W_SRH_SEGLEFT
    return 0


@njit
def encoded_len(pkts, i, nets, j):
    """Total bytes `encode_packet` will write for row (i, j), or ``-code``."""
    code = check_widths(pkts, i, nets, j)
    if code:
        return -code
    p = pkts[i]
    total = ip_len(nets, j) + 8 + 12 + ext_len(p["opcode"], p["ts"]) + int(p["payload_len"]) + 4
    if total - (20 if nets[j]["ip_version"] == 4 else 40) > 0xFFFF:
        return -E.W_TOO_LONG
    return total


@njit
def _put_addr(buf, off, addr):
    for k in range(16):
        buf[off + k] = addr[k]


@njit
def _put_ipv6(buf, off, tc, flow, plen, nh, hlim, src, dst):
    buf[off] = 0x60 | (tc >> 4)
    buf[off + 1] = ((tc & 0xF) << 4) | ((flow >> 16) & 0xF)
    H.put16(buf, off + 2, flow & 0xFFFF)
    H.put16(buf, off + 4, plen)
    buf[off + 6] = nh
    buf[off + 7] = hlim
    _put_addr(buf, off + 8, src)
    _put_addr(buf, off + 24, dst)


@njit
def encode_packet(pkts, i, nets, j, payload, pay_off, buf, off, csum_offload=False):
    """Write row (i, j) at ``buf[off:]``; payload from ``payload[pay_off:]`` or zeros if ``pay_off < 0``.

    Returns the end offset, or ``-code``. `buf` must hold `encoded_len` bytes from `off`.
    With `csum_offload` the ICRC and the UDP checksum are left to the NIC, as a
    driver with checksum offload hands them over: the ICRC field is zero and the
    UDP checksum field holds the pseudo-header sum (Linux ``CHECKSUM_PARTIAL``).
    """
    total = encoded_len(pkts, i, nets, j)
    if total < 0:
        return total
    if off + total > buf.shape[0]:
        return -E.W_BUFFER
    return encode_checked(pkts, i, nets, j, payload, pay_off, buf, off, total, csum_offload)


@njit
def encode_checked(pkts, i, nets, j, payload, pay_off, buf, off, total, csum_offload=False):
    """`encode_packet` for a row already checked: `total` is its `encoded_len`."""
    p = pkts[i]
    n = nets[j]
    tc = (int(p["dscp"]) << 2) | int(p["ecn"])
    ev = int(p["ev"])
    if n["ev_mode"] == UDPMODE:
        sport = ev & 0xFFFF
        flow = int(n["flow_label"])
    else:
        sport = (ev >> 16) & 0xFFFF
        flow = (int(n["flow_label"]) & 0xF0000) | (ev & 0xFFFF)
    end = off + total
    l4 = total - ip_len(nets, j)  # UDP length
    pos = off
    if n["ip_version"] == 4:
        ip_off = pos
        buf[pos] = 0x45
        buf[pos + 1] = tc
        H.put16(buf, pos + 2, total)
        H.put16(buf, pos + 4, 0)
        H.put16(buf, pos + 6, 0x4000)  # DF, no fragmentation
        buf[pos + 8] = n["hop_limit"]
        buf[pos + 9] = 17
        H.put16(buf, pos + 10, 0)
        for k in range(4):
            buf[pos + 12 + k] = n["src"][12 + k]
            buf[pos + 16 + k] = n["dst"][12 + k]
        H.put16(buf, pos + 10, ipv4_checksum(buf, pos, np.int64(20)))  # not a literal: one compiled variant
        pos += 20
    else:
        if n["ev_mode"] == SRV6:
            srh_len = 0
            if n["srh"]:
                srh_len = 8 + 16 * (int(n["srh_lastentry"]) + 1)
            nh = 43 if n["srh"] else 41
            _put_ipv6(buf, pos, tc, int(n["outer_flow_label"]), total - 40, nh, n["outer_hop_limit"], n["outer_src"], n["outer_dst"])
            pos += 40
            if n["srh"]:
                nseg = int(n["srh_lastentry"]) + 1
                buf[pos] = 41
                buf[pos + 1] = 2 * nseg
                buf[pos + 2] = 4
                buf[pos + 3] = n["srh_segleft"]
                buf[pos + 4] = n["srh_lastentry"]
                buf[pos + 5] = 0
                H.put16(buf, pos + 6, n["srh_tag"])
                for s in range(nseg):
                    for k in range(16):
                        buf[pos + 8 + 16 * s + k] = n["srh_segments"][s, k]
                pos += srh_len
        ip_off = pos
        _put_ipv6(buf, pos, tc, flow, l4, 17, n["hop_limit"], n["src"], n["dst"])
        pos += 40
    udp_off = pos
    H.put16(buf, pos, sport)
    H.put16(buf, pos + 2, n["dport"])
    H.put16(buf, pos + 4, l4)
    H.put16(buf, pos + 6, 0)
    pos += 8
    pos = H.push_bth(buf, pos, pkts, i)
    m = HEADER_TABLE[p["opcode"]]
    if m & H_METH:
        pos = H.push_meth(buf, pos, pkts, i)
    if (m & H_TSETH_IF_TS) and p["ts"]:
        pos = H.push_tseth(buf, pos, pkts, i)
    if m & H_RETH:
        pos = H.push_reth(buf, pos, pkts, i)
    if m & H_ATOMICETH:
        pos = H.push_atomiceth(buf, pos, pkts, i)
    if m & H_AETH:
        pos = H.push_aeth(buf, pos, pkts, i)
    if m & H_ATOMICACKETH:
        pos = H.push_atomicacketh(buf, pos, pkts, i)
    if m & H_IMMDT:
        pos = H.push_immdt(buf, pos, pkts, i)
    if m & H_SETH:
        pos = H.push_seth(buf, pos, pkts, i)
        pos = H.push_cc_state(buf, pos, pkts, i)
    if m & H_NETH:
        pos = H.push_neth(buf, pos, pkts, i)
    if m & H_PETH:
        pos = H.push_peth(buf, pos, pkts, i)
    if m & H_ERTH:
        pos = H.push_erth(buf, pos, pkts, i)
    if m & H_EETH:
        pos = H.push_eeth(buf, pos, pkts, i)
    if m & H_CNP:
        pos = H.push_cnp(buf, pos, pkts, i)
    plen = int(p["payload_len"])
    if pay_off < 0:
        H.zero(buf, pos, plen)
    else:
        H.copy(buf, pos, payload, pay_off, plen)
    pos += plen
    ipv = 4 if n["ip_version"] == 4 else 6
    if csum_offload:
        H.zero(buf, pos, 4)
        H.put16(buf, udp_off + 6, udp_checksum_partial(buf, ip_off, ipv, udp_off, end))
        return end
    crc = icrc(buf, ip_off, ipv, udp_off, pos)
    for k in range(4):
        buf[pos + k] = (crc >> np.uint32(8 * k)) & np.uint32(0xFF)
    H.put16(buf, udp_off + 6, udp_checksum(buf, ip_off, ipv, udp_off, end))
    return end
