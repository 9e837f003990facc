"""Which headers follow BTH, per opcode (one table, shared by the codec, scapy layers and docs).

MRC opcodes: mrc-public-notes 2.3 (EMU and NS3 agree). TSETH follows METH
on MRC data packets iff BTH ``ts`` = 1. Standard RoCEv2 RC opcodes keep their
IBTA layouts (RETH on WRITE first/only and READ request, AETH on ACK and READ
responses first/last/only, AtomicETH / AtomicAckETH on atomics, ImmDt on
*_IMM); CNP (0x81) carries 16 reserved bytes.
"""
from __future__ import annotations

import numpy as np

from mrc.wire.constants import Opcode

H_KNOWN = 1 << 0
H_METH = 1 << 1
H_TSETH_IF_TS = 1 << 2
H_RETH = 1 << 3
H_ATOMICETH = 1 << 4
H_AETH = 1 << 5
H_ATOMICACKETH = 1 << 6
H_IMMDT = 1 << 7
H_SETH = 1 << 8  # SETH followed by CC_STATE
H_NETH = 1 << 9
H_PETH = 1 << 10
H_ERTH = 1 << 11
H_EETH = 1 << 12
H_CNP = 1 << 13
# The packet kind carries no payload: nothing but its ICRC may follow its headers. IBTA: ACK, atomic
# ACK, RDMA READ request and the atomic requests carry none; CNP's 16 bytes are a header (Annex A17).
# MRC (EMU, NS3): ACK, SACK, NACK, probe and the endpoint request / response are header-only.
H_NO_PAYLOAD = 1 << 14

O = Opcode  # noqa: E741  (a short alias for the opcode table below)
_MRC_DATA = H_KNOWN | H_METH | H_TSETH_IF_TS | H_RETH
HEADERS_BY_OPCODE: dict[int, int] = {
    O.RC_SEND_FIRST: H_KNOWN,
    O.RC_SEND_MIDDLE: H_KNOWN,
    O.RC_SEND_LAST: H_KNOWN,
    O.RC_SEND_LAST_IMM: H_KNOWN | H_IMMDT,
    O.RC_SEND_ONLY: H_KNOWN,
    O.RC_SEND_ONLY_IMM: H_KNOWN | H_IMMDT,
    O.RC_RDMA_WRITE_FIRST: H_KNOWN | H_RETH,
    O.RC_RDMA_WRITE_MIDDLE: H_KNOWN,
    O.RC_RDMA_WRITE_LAST: H_KNOWN,
    O.RC_RDMA_WRITE_LAST_IMM: H_KNOWN | H_IMMDT,
    O.RC_RDMA_WRITE_ONLY: H_KNOWN | H_RETH,
    O.RC_RDMA_WRITE_ONLY_IMM: H_KNOWN | H_RETH | H_IMMDT,
    O.RC_RDMA_READ_REQUEST: H_KNOWN | H_RETH | H_NO_PAYLOAD,
    O.RC_RDMA_READ_RESPONSE_FIRST: H_KNOWN | H_AETH,
    O.RC_RDMA_READ_RESPONSE_MIDDLE: H_KNOWN,
    O.RC_RDMA_READ_RESPONSE_LAST: H_KNOWN | H_AETH,
    O.RC_RDMA_READ_RESPONSE_ONLY: H_KNOWN | H_AETH,
    O.RC_ACKNOWLEDGE: H_KNOWN | H_AETH | H_NO_PAYLOAD,
    O.RC_ATOMIC_ACKNOWLEDGE: H_KNOWN | H_AETH | H_ATOMICACKETH | H_NO_PAYLOAD,
    O.RC_CMP_SWAP: H_KNOWN | H_ATOMICETH | H_NO_PAYLOAD,
    O.RC_FETCH_ADD: H_KNOWN | H_ATOMICETH | H_NO_PAYLOAD,
    O.CNP: H_KNOWN | H_CNP | H_NO_PAYLOAD,
    O.MRC_WRITE_FIRST: _MRC_DATA,
    O.MRC_WRITE_MIDDLE: _MRC_DATA,
    O.MRC_WRITE_LAST: _MRC_DATA,
    O.MRC_WRITE_LAST_IMM: _MRC_DATA | H_IMMDT,
    O.MRC_WRITE_ONLY: _MRC_DATA,
    O.MRC_WRITE_ONLY_IMM: _MRC_DATA | H_IMMDT,
    O.MRC_ACKNOWLEDGE: H_KNOWN | H_AETH | H_NO_PAYLOAD,
    O.MRC_ENDPOINT_REQUEST: H_KNOWN | H_ERTH | H_NO_PAYLOAD,
    O.MRC_ENDPOINT_RESPONSE: H_KNOWN | H_EETH | H_NO_PAYLOAD,
    O.MRC_RELIABILITY_SACK: H_KNOWN | H_SETH | H_NO_PAYLOAD,
    O.MRC_RELIABILITY_NACK: H_KNOWN | H_NETH | H_NO_PAYLOAD,
    O.MRC_RELIABILITY_PROBE: H_KNOWN | H_PETH | H_NO_PAYLOAD,
}

# The same table as an array indexed by opcode, for compiled code.
HEADER_TABLE = np.zeros(256, dtype=np.uint16)
for _op, _mask in HEADERS_BY_OPCODE.items():
    HEADER_TABLE[int(_op)] = _mask

# Header sizes in the order they follow BTH.
ORDER = [
    ("METH", H_METH, 4),
    ("TSETH", H_TSETH_IF_TS, 4),
    ("RETH", H_RETH, 16),
    ("AtomicETH", H_ATOMICETH, 28),
    ("AETH", H_AETH, 4),
    ("AtomicAckETH", H_ATOMICACKETH, 8),
    ("ImmDt", H_IMMDT, 4),
    ("SETH", H_SETH, 28),
    ("CC_STATE", H_SETH, 8),
    ("NETH", H_NETH, 20),
    ("PETH", H_PETH, 16),
    ("ERTH", H_ERTH, 16),
    ("EETH", H_EETH, 36),
    ("CNP", H_CNP, 16),
]


def carries_payload(opcode: int) -> bool:
    """False for the packet kinds that carry no payload (`H_NO_PAYLOAD`): only their ICRC follows the headers."""
    return not HEADERS_BY_OPCODE.get(opcode, 0) & H_NO_PAYLOAD


def headers_after_bth(opcode: int, ts: int = 0) -> list[str]:
    """Names of the headers that follow BTH for `opcode` (and BTH ts bit)."""
    mask = HEADERS_BY_OPCODE.get(opcode, 0)
    return [name for name, bit, _ in ORDER if mask & bit and (bit != H_TSETH_IF_TS or ts)]

# PKT columns each header carries (reserved bits excluded), for display and cross-checks.
FIELDS: dict[str, list[str]] = {
    "BTH": ["opcode", "se", "mig", "padcnt", "tver", "pkey", "fecn", "becn", "dqpn", "ackreq", "bth_r", "rtx", "ts", "psn"],
    "METH": ["rqmsn", "msn"],
    "TSETH": ["tx_timestamp", "tsr", "ftype"],
    "RETH": ["va", "rkey", "dma_len"],
    "AtomicETH": ["va", "rkey", "swap_add", "compare"],
    "AETH": ["aeth_syndrome", "aeth_msn"],
    "AtomicAckETH": ["orig_data"],
    "ImmDt": ["imm"],
    "SETH": ["ext_type", "ext_next", "m", "pr", "ack_psn_offset", "entropy", "spdcid", "dpdcid", "svc_time", "cack_psn",
             "cc_type", "cc_flags", "mpr", "sack_offset", "sack_bitmap"],
    "CC_STATE": ["tx_timestamp", "ooo_count", "r_c", "rcv_cwnd_pen", "rcvd_bytes"],
    "NETH": ["ext_type", "ext_next", "m", "pr", "nack_reason", "vendor", "entropy", "spdcid", "dpdcid", "svc_time", "nack_psn",
             "cc_type", "cc_flags", "tx_timestamp"],
    "PETH": ["ext_type", "ext_next", "m", "pr", "vendor", "probe_id", "spdcid", "dpdcid", "tx_timestamp", "tsr", "ftype"],
    "ERTH": ["ep_op", "vendor", "req_id", "port_status_mask", "tx_timestamp", "tsr", "ftype"],
    "EETH": ["ep_op", "vendor", "req_id", "port_status_mask", "svc_time", "tx_timestamp", "tsr", "ftype"],
    "CNP": [],
}
