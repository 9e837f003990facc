"""Compiled codec of each header: ``push_<hdr>`` writes a header, ``pull_<hdr>`` reads one.

Every function works on a uint8 buffer and one row of a `PKT` table, passed as
``(pkts, i)`` so the same code serves one packet and a batch:

- ``push_<hdr>(buf, off, pkts, i) -> off + size``: the caller has sized
  `buf` and checked field widths (`packet.check_widths`);
- ``pull_<hdr>(buf, off, end, pkts, i) -> off + size`` or ``-code``: checks
  that the header fits before ``end`` before reading a single byte, and
  returns ``-errors.E_TRUNC_EXT`` (or the code given) when it does not.

Layouts (bit 7 is the most significant bit of a byte; all fields big-endian)
are tabulated with their sources in `docs/wire.md`. Reserved bits are written
as 0 and ignored on receipt (IBTA rule for reserved fields).
"""
from __future__ import annotations

from mrc._jit import njit
from mrc.wire.errors import E_TRUNC_BTH, E_TRUNC_EXT
from mrc.wire.wirebytes import copy, get16, get24, get32, get64, pull_tsword, push_tsword, put16, put24, put32, put64, zero  # noqa: F401,E501


# --- BTH (12 B) ----------------------------------------------------------------------
@njit
def push_bth(buf, off, pkts, i):
    p = pkts[i]
    buf[off] = p["opcode"]
    buf[off + 1] = (p["se"] << 7) | (p["mig"] << 6) | (p["padcnt"] << 4) | p["tver"]
    put16(buf, off + 2, p["pkey"])
    buf[off + 4] = (p["fecn"] << 7) | (p["becn"] << 6)
    put24(buf, off + 5, p["dqpn"])
    buf[off + 8] = (p["ackreq"] << 7) | (p["bth_r"] << 6) | (p["rtx"] << 5) | (p["ts"] << 4)
    put24(buf, off + 9, p["psn"])
    return off + 12


@njit
def pull_bth(buf, off, end, pkts, i):
    if end - off < 12:
        return -E_TRUNC_BTH
    p = pkts[i]
    p["opcode"] = buf[off]
    b = buf[off + 1]
    p["se"] = b >> 7
    p["mig"] = (b >> 6) & 1
    p["padcnt"] = (b >> 4) & 3
    p["tver"] = b & 0xF
    p["pkey"] = get16(buf, off + 2)
    p["fecn"] = buf[off + 4] >> 7
    p["becn"] = (buf[off + 4] >> 6) & 1
    p["dqpn"] = get24(buf, off + 5)
    b = buf[off + 8]
    p["ackreq"] = b >> 7
    p["bth_r"] = (b >> 6) & 1
    p["rtx"] = (b >> 5) & 1
    p["ts"] = (b >> 4) & 1
    p["psn"] = get24(buf, off + 9)
    return off + 12


# --- METH (4 B): rqmsn 16 | msn 16 ------------------------------------------------------
@njit
def push_meth(buf, off, pkts, i):
    put16(buf, off, pkts[i]["rqmsn"])
    put16(buf, off + 2, pkts[i]["msn"])
    return off + 4


@njit
def pull_meth(buf, off, end, pkts, i):
    if end - off < 4:
        return -E_TRUNC_EXT
    pkts[i]["rqmsn"] = get16(buf, off)
    pkts[i]["msn"] = get16(buf, off + 2)
    return off + 4


# --- TSETH (4 B): tx_timestamp 16 | tsr 1 | rsvd 11 | ftype 4 ------------------------------
@njit
def push_tseth(buf, off, pkts, i):
    put16(buf, off, pkts[i]["tx_timestamp"])
    push_tsword(buf, off + 2, pkts, i)
    return off + 4


@njit
def pull_tseth(buf, off, end, pkts, i):
    if end - off < 4:
        return -E_TRUNC_EXT
    pkts[i]["tx_timestamp"] = get16(buf, off)
    pull_tsword(buf, off + 2, pkts, i)
    return off + 4


# --- RETH (16 B): va 64 | rkey 32 | dma_len 32 -------------------------------------------
@njit
def push_reth(buf, off, pkts, i):
    put64(buf, off, pkts[i]["va"])
    put32(buf, off + 8, pkts[i]["rkey"])
    put32(buf, off + 12, pkts[i]["dma_len"])
    return off + 16


@njit
def pull_reth(buf, off, end, pkts, i):
    if end - off < 16:
        return -E_TRUNC_EXT
    pkts[i]["va"] = get64(buf, off)
    pkts[i]["rkey"] = get32(buf, off + 8)
    pkts[i]["dma_len"] = get32(buf, off + 12)
    return off + 16


# --- ImmDt (4 B) ---------------------------------------------------------------------------
@njit
def push_immdt(buf, off, pkts, i):
    put32(buf, off, pkts[i]["imm"])
    return off + 4


@njit
def pull_immdt(buf, off, end, pkts, i):
    if end - off < 4:
        return -E_TRUNC_EXT
    pkts[i]["imm"] = get32(buf, off)
    return off + 4


# --- AETH (4 B): syndrome 8 | msn 24 ---------------------------------------------------------
@njit
def push_aeth(buf, off, pkts, i):
    buf[off] = pkts[i]["aeth_syndrome"]
    put24(buf, off + 1, pkts[i]["aeth_msn"])
    return off + 4


@njit
def pull_aeth(buf, off, end, pkts, i):
    if end - off < 4:
        return -E_TRUNC_EXT
    pkts[i]["aeth_syndrome"] = buf[off]
    pkts[i]["aeth_msn"] = get24(buf, off + 1)
    return off + 4


# --- AtomicETH (28 B) / AtomicAckETH (8 B): standard RoCEv2 RC only ---------------------------
@njit
def push_atomiceth(buf, off, pkts, i):
    put64(buf, off, pkts[i]["va"])
    put32(buf, off + 8, pkts[i]["rkey"])
    put64(buf, off + 12, pkts[i]["swap_add"])
    put64(buf, off + 20, pkts[i]["compare"])
    return off + 28


@njit
def pull_atomiceth(buf, off, end, pkts, i):
    if end - off < 28:
        return -E_TRUNC_EXT
    pkts[i]["va"] = get64(buf, off)
    pkts[i]["rkey"] = get32(buf, off + 8)
    pkts[i]["swap_add"] = get64(buf, off + 12)
    pkts[i]["compare"] = get64(buf, off + 20)
    return off + 28


@njit
def push_atomicacketh(buf, off, pkts, i):
    put64(buf, off, pkts[i]["orig_data"])
    return off + 8


@njit
def pull_atomicacketh(buf, off, end, pkts, i):
    if end - off < 8:
        return -E_TRUNC_EXT
    pkts[i]["orig_data"] = get64(buf, off)
    return off + 8


# --- CNP: 16 reserved bytes after BTH -----------------------------------------------------------
@njit
def push_cnp(buf, off, pkts, i):
    zero(buf, off, 16)
    return off + 16


@njit
def pull_cnp(buf, off, end, pkts, i):
    if end - off < 16:
        return -E_TRUNC_EXT
    return off + 16


# The MRC reliability and endpoint headers live in their own module; re-exported here so
# that every push_/pull_ pair is reachable as mrc.wire.headers.<name>.
from mrc.wire.headers_ext import (  # noqa: E402
    pull_cc_state,
    pull_eeth,
    pull_erth,
    pull_neth,
    pull_peth,
    pull_prologue,
    pull_seth,
    push_cc_state,
    push_eeth,
    push_erth,
    push_neth,
    push_peth,
    push_prologue,
    push_seth,
)
