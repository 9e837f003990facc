"""The packet record: one decoded MRC packet as one row of a numpy structured array.

This dtype is the contract between the wire codec, the protocol core and the
emulator: the core reads incoming packets as `PKT` rows and writes outgoing
packets as `PKT` rows; the codec turns rows into bytes and back; the emulator
keeps a pool of them. Field names are the spec's names (lower case). A packet
carries only some headers; fields of absent headers are zero.

Headers and the fields that hold them:

====================  =====================================================
BTH                   opcode se mig padcnt tver pkey fecn becn dqpn
                      ackreq bth_r rtx ts psn
METH                  rqmsn msn
TSETH / PETH / ERTH   tx_timestamp tsr ftype   (sender's time, 16 bit)
RETH                  va rkey dma_len
ImmDt                 imm
AETH                  aeth_syndrome aeth_msn
SETH / NETH / PETH    ext_type ext_next m pr ack_psn_offset entropy spdcid
                      dpdcid cack_psn cc_type cc_flags mpr sack_offset
                      sack_bitmap nack_reason vendor nack_psn probe_id
CC_STATE              tx_timestamp (reflected) ooo_count r_c rcv_cwnd_pen
                      rcvd_bytes
ERTH / EETH           ep_op req_id port_status_mask svc_time
AtomicETH             va rkey swap_add compare   (standard RoCEv2 only)
AtomicAckETH          orig_data                  (standard RoCEv2 only)
payload               payload_len (bytes present after the headers)
====================  =====================================================

Fields that are not MRC header fields but travel with every packet:

- ``ev``: the entropy value this packet is sent on (STEV/UDP: the bits carried
  in UDP source port and flow label; SRv6: the compact EV index the path was
  generated from, also carried in source port and flow label so the receiver
  can reflect it).
- ``port``: the local NIC port (0-based) the packet leaves by or arrived on.
- ``dscp``, ``ecn``: the IP traffic class; ``ecn == 3`` is Congestion Experienced.
- ``trim``: `Trim` code, set from the DSCP by the `DscpTable` on receive (or by
  the emulated switch that trimmed it).
"""
from __future__ import annotations

import numpy as np

PKT = np.dtype(
    [
        # --- BTH ---
        ("opcode", np.uint8),
        ("se", np.uint8),
        ("mig", np.uint8),
        ("padcnt", np.uint8),
        ("tver", np.uint8),
        ("fecn", np.uint8),
        ("becn", np.uint8),
        ("ackreq", np.uint8),
        ("bth_r", np.uint8),
        ("rtx", np.uint8),
        ("ts", np.uint8),
        ("pkey", np.uint16),
        ("dqpn", np.uint32),
        ("psn", np.uint32),
        # --- METH ---
        ("rqmsn", np.uint16),
        ("msn", np.uint16),
        # --- TSETH (and the timestamp of PETH / ERTH / NETH / CC_STATE / EETH) ---
        ("tx_timestamp", np.uint16),
        ("tsr", np.uint8),
        ("ftype", np.uint8),
        # --- RETH ---
        ("va", np.uint64),
        ("rkey", np.uint32),
        ("dma_len", np.uint32),
        # --- ImmDt ---
        ("imm", np.uint32),
        # --- AETH ---
        ("aeth_syndrome", np.uint8),
        ("aeth_msn", np.uint32),
        # --- SETH / NETH / PETH ---
        ("ext_type", np.uint8),
        ("ext_next", np.uint8),
        ("m", np.uint8),
        ("pr", np.uint8),
        ("ack_psn_offset", np.int16),
        ("entropy", np.uint32),
        ("spdcid", np.uint16),
        ("dpdcid", np.uint16),
        ("cack_psn", np.uint32),
        ("cc_type", np.uint8),
        ("cc_flags", np.uint8),
        ("mpr", np.uint8),
        ("sack_offset", np.int16),
        ("sack_bitmap", np.uint64),
        ("nack_reason", np.uint8),
        ("vendor", np.uint8),
        ("nack_psn", np.uint32),
        ("probe_id", np.uint16),
        # --- CC_STATE ---
        ("ooo_count", np.uint16),
        ("r_c", np.uint8),
        ("rcv_cwnd_pen", np.uint8),
        ("rcvd_bytes", np.uint32),
        # --- ERTH / EETH ---
        ("ep_op", np.uint8),
        ("req_id", np.uint16),
        ("port_status_mask", np.uint32),
        ("svc_time", np.uint32),
        # --- AtomicETH / AtomicAckETH (standard RoCEv2 RC atomics; MRC forbids atomics) ---
        ("swap_add", np.uint64),
        ("compare", np.uint64),
        ("orig_data", np.uint64),
        # --- payload and path ---
        ("payload_len", np.uint32),
        ("ev", np.uint32),
        ("port", np.uint8),
        ("dscp", np.uint8),
        ("ecn", np.uint8),
        ("trim", np.uint8),
    ],
    align=True,
)


MAX_SRH_SEGMENTS = 4

NET = np.dtype(
    [
        # --- how the packet is carried ---
        ("ip_version", np.uint8),  # 6, or 4 (UDP EV mode only)
        ("ev_mode", np.uint8),  # EvMode: STEV, UDP, SRV6
        # --- the IP header that carries UDP (inner header in SRv6 mode) ---
        ("hop_limit", np.uint8),  # IPv6 hop limit / IPv4 TTL
        ("flow_label", np.uint32),  # IPv6 flow label, 20 bits as on the wire
        ("src", np.uint8, (16,)),  # IPv6 address; IPv4 as ::ffff:a.b.c.d (last 4 bytes)
        ("dst", np.uint8, (16,)),
        # --- UDP (the source port is always derived from PKT.ev) ---
        ("dport", np.uint16),
        # --- SRv6 outer header (ev_mode == SRV6) ---
        ("outer_hop_limit", np.uint8),
        ("outer_flow_label", np.uint32),
        ("outer_src", np.uint8, (16,)),
        ("outer_dst", np.uint8, (16,)),  # the uSID carrier (F3216)
        # --- optional RFC 8754 SRH between the outer and inner headers ---
        ("srh", np.uint8),  # 1 if present
        ("srh_segleft", np.uint8),
        ("srh_lastentry", np.uint8),  # number of segments - 1
        ("srh_tag", np.uint16),
        ("srh_segments", np.uint8, (MAX_SRH_SEGMENTS, 16)),  # [0] is the last segment (RFC 8754 order)
    ],
    align=True,
)
"""The network part of a packet: one row per packet, beside its `PKT` row.

The IP traffic class is not here: it is `PKT.dscp` / `PKT.ecn` (copied into
both headers in SRv6 mode). The UDP source port is not here either: it is
always derived from `PKT.ev` (see `mrc.wire.ev`). In STEV and SRv6 modes the
low 16 bits of `flow_label` are overwritten by the EV on encode. Fields of
absent parts are zero. `decode(encode(pkt, net, payload))` gives back exactly
these rows (see `docs/wire.md` for the canonical form).
"""


def empty(n: int = 0) -> np.ndarray:
    """A zeroed table of `n` packet records."""
    return np.zeros(n, dtype=PKT)


def empty_net(n: int = 0) -> np.ndarray:
    """A zeroed table of `n` network records."""
    return np.zeros(n, dtype=NET)
