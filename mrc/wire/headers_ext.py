"""Compiled codec of the MRC reliability and endpoint headers: SETH, CC_STATE, NETH, PETH, ERTH, EETH.

Same conventions as `mrc.wire.headers` (which re-exports every function here).
"""
from __future__ import annotations

import numpy as np

from mrc._jit import njit
from mrc.wire.errors import E_TRUNC_EXT
from mrc.wire.wirebytes import get16, get24, get32, get64, put16, put24, put32, put64, pull_tsword, push_tsword, zero


# --- prologue of SETH / NETH / PETH (bytes 0-1) ---------------------------------------------
# type 4 (bits 15-12) | next 5 (11-7) | m 2 (6-5) | rsvd 1 (4) | pr 1 (3) | rsvd 3 (2-0)
@njit
def push_prologue(buf, off, pkts, i):
    p = pkts[i]
    w = (
        (np.uint32(p["ext_type"]) << 12)
        | (np.uint32(p["ext_next"]) << 7)
        | (np.uint32(p["m"]) << 5)
        | (np.uint32(p["pr"]) << 3)
    )
    put16(buf, off, w)


@njit
def pull_prologue(buf, off, pkts, i):
    w = get16(buf, off)
    pkts[i]["ext_type"] = w >> 12
    pkts[i]["ext_next"] = (w >> 7) & 0x1F
    pkts[i]["m"] = (w >> 5) & 3
    pkts[i]["pr"] = (w >> 3) & 1


# --- SETH (28 B) + CC_STATE (8 B) ----------------------------------------------------------
@njit
def push_seth(buf, off, pkts, i):
    p = pkts[i]
    push_prologue(buf, off, pkts, i)
    put16(buf, off + 2, np.uint16(p["ack_psn_offset"]))
    put32(buf, off + 4, p["entropy"])
    put16(buf, off + 8, p["spdcid"])
    put16(buf, off + 10, p["dpdcid"])
    buf[off + 12] = p["svc_time"]
    put24(buf, off + 13, p["cack_psn"])
    buf[off + 16] = (p["cc_type"] << 4) | p["cc_flags"]
    buf[off + 17] = p["mpr"]
    put16(buf, off + 18, np.uint16(p["sack_offset"]))
    put64(buf, off + 20, p["sack_bitmap"])
    return off + 28


@njit
def pull_seth(buf, off, end, pkts, i):
    if end - off < 28:
        return -E_TRUNC_EXT
    p = pkts[i]
    pull_prologue(buf, off, pkts, i)
    p["ack_psn_offset"] = np.int16(np.uint16(get16(buf, off + 2)))
    p["entropy"] = get32(buf, off + 4)
    p["spdcid"] = get16(buf, off + 8)
    p["dpdcid"] = get16(buf, off + 10)
    p["svc_time"] = buf[off + 12]
    p["cack_psn"] = get24(buf, off + 13)
    p["cc_type"] = buf[off + 16] >> 4
    p["cc_flags"] = buf[off + 16] & 0xF
    p["mpr"] = buf[off + 17]
    p["sack_offset"] = np.int16(np.uint16(get16(buf, off + 18)))
    p["sack_bitmap"] = get64(buf, off + 20)
    return off + 28


# CC_STATE: tx_timestamp 16 | rsvd 1 | ooo_count 15 | r_c 1 | rcv_cwnd_pen 7 | rcvd_bytes 24
@njit
def push_cc_state(buf, off, pkts, i):
    p = pkts[i]
    put16(buf, off, p["tx_timestamp"])
    put16(buf, off + 2, p["ooo_count"])
    buf[off + 4] = (p["r_c"] << 7) | p["rcv_cwnd_pen"]
    put24(buf, off + 5, p["rcvd_bytes"])
    return off + 8


@njit
def pull_cc_state(buf, off, end, pkts, i):
    if end - off < 8:
        return -E_TRUNC_EXT
    p = pkts[i]
    p["tx_timestamp"] = get16(buf, off)
    p["ooo_count"] = get16(buf, off + 2) & 0x7FFF
    p["r_c"] = buf[off + 4] >> 7
    p["rcv_cwnd_pen"] = buf[off + 4] & 0x7F
    p["rcvd_bytes"] = get24(buf, off + 5)
    return off + 8


# --- NETH (20 B) -----------------------------------------------------------------------------
@njit
def push_neth(buf, off, pkts, i):
    p = pkts[i]
    push_prologue(buf, off, pkts, i)
    buf[off + 2] = p["nack_reason"]
    buf[off + 3] = p["vendor"]
    put32(buf, off + 4, p["entropy"])
    put16(buf, off + 8, p["spdcid"])
    put16(buf, off + 10, p["dpdcid"])
    buf[off + 12] = p["svc_time"]
    put24(buf, off + 13, p["nack_psn"])
    buf[off + 16] = (p["cc_type"] << 4) | p["cc_flags"]
    buf[off + 17] = 0
    put16(buf, off + 18, p["tx_timestamp"])
    return off + 20


@njit
def pull_neth(buf, off, end, pkts, i):
    if end - off < 20:
        return -E_TRUNC_EXT
    p = pkts[i]
    pull_prologue(buf, off, pkts, i)
    p["nack_reason"] = buf[off + 2]
    p["vendor"] = buf[off + 3]
    p["entropy"] = get32(buf, off + 4)
    p["spdcid"] = get16(buf, off + 8)
    p["dpdcid"] = get16(buf, off + 10)
    p["svc_time"] = buf[off + 12]
    p["nack_psn"] = get24(buf, off + 13)
    p["cc_type"] = buf[off + 16] >> 4
    p["cc_flags"] = buf[off + 16] & 0xF
    p["tx_timestamp"] = get16(buf, off + 18)
    return off + 20


# --- PETH (16 B) -----------------------------------------------------------------------------
@njit
def push_peth(buf, off, pkts, i):
    p = pkts[i]
    push_prologue(buf, off, pkts, i)
    buf[off + 2] = 0
    buf[off + 3] = p["vendor"]
    put16(buf, off + 4, p["probe_id"])
    put16(buf, off + 6, 0)
    put16(buf, off + 8, p["spdcid"])
    put16(buf, off + 10, p["dpdcid"])
    put16(buf, off + 12, p["tx_timestamp"])
    push_tsword(buf, off + 14, pkts, i)
    return off + 16


@njit
def pull_peth(buf, off, end, pkts, i):
    if end - off < 16:
        return -E_TRUNC_EXT
    p = pkts[i]
    pull_prologue(buf, off, pkts, i)
    p["vendor"] = buf[off + 3]
    p["probe_id"] = get16(buf, off + 4)
    p["spdcid"] = get16(buf, off + 8)
    p["dpdcid"] = get16(buf, off + 10)
    p["tx_timestamp"] = get16(buf, off + 12)
    pull_tsword(buf, off + 14, pkts, i)
    return off + 16


# --- ERTH (16 B) / EETH (36 B) ------------------------------------------------------------
@njit
def push_erth(buf, off, pkts, i):
    p = pkts[i]
    buf[off] = p["ep_op"] << 6
    buf[off + 1] = p["vendor"]
    put16(buf, off + 2, p["req_id"])
    put32(buf, off + 4, p["port_status_mask"])
    put32(buf, off + 8, 0)
    put16(buf, off + 12, p["tx_timestamp"])
    push_tsword(buf, off + 14, pkts, i)
    return off + 16


@njit
def pull_erth(buf, off, end, pkts, i):
    if end - off < 16:
        return -E_TRUNC_EXT
    p = pkts[i]
    p["ep_op"] = buf[off] >> 6
    p["vendor"] = buf[off + 1]
    p["req_id"] = get16(buf, off + 2)
    p["port_status_mask"] = get32(buf, off + 4)
    p["tx_timestamp"] = get16(buf, off + 12)
    pull_tsword(buf, off + 14, pkts, i)
    return off + 16


@njit
def push_eeth(buf, off, pkts, i):
    push_erth(buf, off, pkts, i)
    put32(buf, off + 8, pkts[i]["svc_time"])
    zero(buf, off + 16, 20)
    return off + 36


@njit
def pull_eeth(buf, off, end, pkts, i):
    if end - off < 36:
        return -E_TRUNC_EXT
    pull_erth(buf, off, end, pkts, i)
    pkts[i]["svc_time"] = get32(buf, off + 8)
    return off + 36


