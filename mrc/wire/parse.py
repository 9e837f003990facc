"""Compiled decode of one whole packet: `decode_packet`, the inverse of `mrc.wire.packet.encode_packet`.

Reads ``buf[start:end]`` from its first IP header: IPv4, IPv6, or IPv6-in-IPv6
with an optional SRH (SRv6 mode); UDP; BTH; the extension headers the opcode
calls for (`mrc.wire.layout`); the payload; the ICRC. Every step checks that
its bytes are present before it reads them, and a problem is returned as a
positive code (`mrc.wire.errors`), never raised.
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.wire import errors as E
from mrc.wire import headers as H
from mrc.wire.checksum import icrc, ipv4_checksum, udp_checksum
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
from mrc.wire.packet import (
    C_TRIMMED,
    C_TRIMMED_LASTHOP,
    MAXSEG,
    SRV6,
    STEV,
    T_TRIMMED,
    T_TRIMMED_LASTHOP,
    UDPMODE,
    ext_len,
)


@njit
def _get_addr(buf, off, addr):
    for k in range(16):
        addr[k] = buf[off + k]


@njit
def _pull_ipv6_fields(buf, off, n, outer):
    flow = ((np.uint32(buf[off + 1]) & np.uint32(0xF)) << np.uint32(16)) | H.get16(buf, off + 2)
    if outer:
        n["outer_flow_label"] = flow
        n["outer_hop_limit"] = buf[off + 7]
        _get_addr(buf, off + 8, n["outer_src"])
        _get_addr(buf, off + 24, n["outer_dst"])
    else:
        n["flow_label"] = flow
        n["hop_limit"] = buf[off + 7]
        _get_addr(buf, off + 8, n["src"])
        _get_addr(buf, off + 24, n["dst"])


@njit
def decode_packet(buf, start, end, pkts, i, nets, j, ev_hint, dport, dscp_classes, verify_icrc, verify_udp):
    """Decode ``buf[start:end]`` (a packet from its first IP header) into zeroed rows (i, j).

    Returns ``(code, payload_offset)``: code 0 on success, else a positive error code. For
    `E_PAYLOAD_NONE` and `E_PADCNT` the row is filled (the message quotes its values).
    `dport` 0 accepts any UDP destination port. `dscp_classes` maps DSCP -> `DscpClass`.
    """
    p = pkts[i]
    n = nets[j]
    if end - start < 1:
        return E.E_TRUNC_IPV6, 0
    version = buf[start] >> 4
    pos = start
    if version == 4:
        if end - pos < 20:
            return E.E_TRUNC_IPV4, 0
        ihl = int(buf[pos] & 0xF) * 4
        if ihl < 20:
            return E.E_IPV4_IHL, 0
        if end - pos < ihl:
            return E.E_TRUNC_IPV4, 0
        if int(H.get16(buf, pos + 2)) != end - pos:
            return E.E_IPV4_LEN, 0
        if H.get16(buf, pos + 6) & 0x3FFF:
            return E.E_IPV4_FRAG, 0
        if buf[pos + 9] != 17:
            return E.E_IPV4_PROTO, 0
        if H.get16(buf, pos + 10) != ipv4_checksum(buf, pos, ihl):
            return E.E_IPV4_CHKSUM, 0
        tc = buf[pos + 1]
        n["ip_version"] = 4
        n["ev_mode"] = UDPMODE
        n["hop_limit"] = buf[pos + 8]
        n["src"][10] = 0xFF
        n["src"][11] = 0xFF
        n["dst"][10] = 0xFF
        n["dst"][11] = 0xFF
        for k in range(4):
            n["src"][12 + k] = buf[pos + 12 + k]
            n["dst"][12 + k] = buf[pos + 16 + k]
        ip_off = pos
        pos += ihl
    elif version == 6:
        if end - pos < 40:
            return E.E_TRUNC_IPV6, 0
        if int(H.get16(buf, pos + 4)) != end - pos - 40:
            return E.E_IPV6_PLEN, 0
        tc = ((buf[pos] & 0xF) << 4) | (buf[pos + 1] >> 4)
        nh = buf[pos + 6]
        n["ip_version"] = 6
        if nh == 17:
            if ev_hint != STEV and ev_hint != UDPMODE:
                return E.E_EV_MODE, 0
            n["ev_mode"] = ev_hint
            _pull_ipv6_fields(buf, pos, n, False)
            ip_off = pos
            pos += 40
        elif nh == 41 or nh == 43:
            n["ev_mode"] = SRV6
            _pull_ipv6_fields(buf, pos, n, True)
            pos += 40
            if nh == 43:
                if end - pos < 8:
                    return E.E_TRUNC_SRH, 0
                if buf[pos + 2] != 4:
                    return E.E_SRH_TYPE, 0
                if buf[pos] != 41:
                    return E.E_SRH_NH, 0
                hlen = 8 + 8 * int(buf[pos + 1])
                if end - pos < hlen:
                    return E.E_TRUNC_SRH, 0
                last = int(buf[pos + 4])
                if 8 + 16 * (last + 1) > hlen:
                    return E.E_SRH_LEN, 0
                if last >= MAXSEG:
                    return E.E_SRH_SEGS, 0
                if buf[pos + 3] > last + 1:
                    return E.E_SRH_SEGLEFT, 0
                n["srh"] = 1
                n["srh_segleft"] = buf[pos + 3]
                n["srh_lastentry"] = last
                n["srh_tag"] = H.get16(buf, pos + 6)
                for s in range(last + 1):
                    for k in range(16):
                        n["srh_segments"][s, k] = buf[pos + 8 + 16 * s + k]
                pos += hlen  # TLVs, if any, are skipped (not kept)
            if end - pos < 40:
                return E.E_TRUNC_INNER, 0
            if buf[pos] >> 4 != 6:
                return E.E_INNER_VERSION, 0
            if int(H.get16(buf, pos + 4)) != end - pos - 40:
                return E.E_INNER_PLEN, 0
            if buf[pos + 6] != 17:
                return E.E_INNER_NH, 0
            _pull_ipv6_fields(buf, pos, n, False)
            ip_off = pos
            pos += 40
        else:
            return E.E_IPV6_NH, 0
    else:
        return E.E_IP_VERSION, 0
    p["dscp"] = tc >> 2
    p["ecn"] = tc & 3
    # --- UDP ---
    if end - pos < 8:
        return E.E_TRUNC_UDP, 0
    udp_off = pos
    if int(H.get16(buf, pos + 4)) != end - pos:
        return E.E_UDP_LEN, 0
    n["dport"] = H.get16(buf, pos + 2)
    if dport != 0 and n["dport"] != dport:
        return E.E_UDP_DPORT, 0
    ipv = 4 if version == 4 else 6
    if verify_udp:
        c = H.get16(buf, pos + 6)
        if c != 0 and c != udp_checksum(buf, ip_off, ipv, udp_off, end):
            return E.E_UDP_CHKSUM, 0
    sport = H.get16(buf, pos)
    if n["ev_mode"] == UDPMODE:
        p["ev"] = sport
    else:
        p["ev"] = (sport << np.uint32(16)) | (n["flow_label"] & np.uint32(0xFFFF))
    pos += 8
    # --- BTH and what follows ---
    r = H.pull_bth(buf, pos, end, pkts, i)
    if r < 0:
        return -r, 0
    pos = r
    m = HEADER_TABLE[p["opcode"]]
    if not (m & H_KNOWN):
        return E.E_OPCODE, 0
    if end - pos < ext_len(p["opcode"], p["ts"]):
        return E.E_TRUNC_EXT, 0
    if m & H_METH:
        pos = H.pull_meth(buf, pos, end, pkts, i)
    if (m & H_TSETH_IF_TS) and p["ts"]:
        pos = H.pull_tseth(buf, pos, end, pkts, i)
    if m & H_RETH:
        pos = H.pull_reth(buf, pos, end, pkts, i)
    if m & H_ATOMICETH:
        pos = H.pull_atomiceth(buf, pos, end, pkts, i)
    if m & H_AETH:
        pos = H.pull_aeth(buf, pos, end, pkts, i)
    if m & H_ATOMICACKETH:
        pos = H.pull_atomicacketh(buf, pos, end, pkts, i)
    if m & H_IMMDT:
        pos = H.pull_immdt(buf, pos, end, pkts, i)
    if m & H_SETH:
        pos = H.pull_seth(buf, pos, end, pkts, i)
        pos = H.pull_cc_state(buf, pos, end, pkts, i)
    if m & H_NETH:
        pos = H.pull_neth(buf, pos, end, pkts, i)
    if m & H_PETH:
        pos = H.pull_peth(buf, pos, end, pkts, i)
    if m & H_ERTH:
        pos = H.pull_erth(buf, pos, end, pkts, i)
    if m & H_EETH:
        pos = H.pull_eeth(buf, pos, end, pkts, i)
    if m & H_CNP:
        pos = H.pull_cnp(buf, pos, end, pkts, i)
    if pos < 0:  # unreachable: the length was checked above; kept as a guard
        return E.E_TRUNC_EXT, 0
    # --- payload and ICRC (a trimmed packet has lost its ICRC) ---
    cls = dscp_classes[p["dscp"]]
    trimmed = cls == C_TRIMMED or cls == C_TRIMMED_LASTHOP
    if cls == C_TRIMMED:
        p["trim"] = T_TRIMMED
    elif cls == C_TRIMMED_LASTHOP:
        p["trim"] = T_TRIMMED_LASTHOP
    rem = end - pos
    if rem >= 4 and (verify_icrc or trimmed):
        stored = (
            np.uint32(buf[end - 4])
            | (np.uint32(buf[end - 3]) << np.uint32(8))
            | (np.uint32(buf[end - 2]) << np.uint32(16))
            | (np.uint32(buf[end - 1]) << np.uint32(24))
        )
        if stored == icrc(buf, ip_off, ipv, udp_off, end - 4):
            p["payload_len"] = rem - 4
            return check_payload(pkts, i, m, trimmed), pos
    if trimmed:
        # a kind without payload is cut inside its ICRC: what is left of the ICRC is no payload
        p["payload_len"] = 0 if (m & H_NO_PAYLOAD) and rem <= 4 else rem
        return check_payload(pkts, i, m, trimmed), pos
    if rem < 4:
        return E.E_TRUNC_ICRC, 0
    if verify_icrc:
        return E.E_ICRC, 0
    p["payload_len"] = rem - 4
    return check_payload(pkts, i, m, trimmed), pos


@njit
def check_payload(pkts, i, m, trimmed):
    """0, or the code of a payload row (i) its kind cannot have: payload bytes on a kind that carries none
    (`H_NO_PAYLOAD` in its header mask `m`), or a BTH pad count beyond the payload (IBTA: the pad bytes end
    the payload). A trimmed packet has lost its tail, pad bytes included: its pad count is not checked."""
    p = pkts[i]
    if (m & H_NO_PAYLOAD) and p["payload_len"] > 0:
        return E.E_PAYLOAD_NONE
    if not trimmed and p["padcnt"] > p["payload_len"]:
        return E.E_PADCNT
    return 0
