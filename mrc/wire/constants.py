"""Named constants of the MRC wire format: opcodes, NACK reasons, M field, DSCP classes.

Values and sources (see `docs/wire.md` for the per-header tables):

- MRC opcodes 0xC6-0xDE: two independent third-party implementations that cite
  OCP MRC 1.0 agree on them (mrc-public-notes.md section 2.3). They sit in the
  IBTA manufacturer-specific opcode range 0xC0-0xFF.
- NACK reason codes: mrc-public-notes.md section 2.5; identical to UET 1.0's
  `UET_NACK_*` values.
- Standard RoCEv2 RC opcodes (0x00-0x14) and CNP (0x81): IBTA, as summarised in
  peer-transports-and-formats.md section 3.1.
- DSCP values: the MRC text is not public; the defaults below are the values of
  the third-party MRC emulator (EMU) and UET reference code, and every one of
  them is a parameter (`DscpTable`).
"""
from __future__ import annotations

import enum

ROCEV2_UDP_PORT = 4791
ENDPOINT_QPN = 0x2  # reserved QP number of connectionless endpoint operations (mrc-public-notes 2.7)


class Opcode(enum.IntEnum):
    # --- standard RoCEv2 RC (IBTA) -------------------------------------------
    RC_SEND_FIRST = 0x00
    RC_SEND_MIDDLE = 0x01
    RC_SEND_LAST = 0x02
    RC_SEND_LAST_IMM = 0x03
    RC_SEND_ONLY = 0x04
    RC_SEND_ONLY_IMM = 0x05
    RC_RDMA_WRITE_FIRST = 0x06
    RC_RDMA_WRITE_MIDDLE = 0x07
    RC_RDMA_WRITE_LAST = 0x08
    RC_RDMA_WRITE_LAST_IMM = 0x09
    RC_RDMA_WRITE_ONLY = 0x0A
    RC_RDMA_WRITE_ONLY_IMM = 0x0B
    RC_RDMA_READ_REQUEST = 0x0C
    RC_RDMA_READ_RESPONSE_FIRST = 0x0D
    RC_RDMA_READ_RESPONSE_MIDDLE = 0x0E
    RC_RDMA_READ_RESPONSE_LAST = 0x0F
    RC_RDMA_READ_RESPONSE_ONLY = 0x10
    RC_ACKNOWLEDGE = 0x11
    RC_ATOMIC_ACKNOWLEDGE = 0x12
    RC_CMP_SWAP = 0x13
    RC_FETCH_ADD = 0x14
    CNP = 0x81
    # --- MRC (manufacturer-specific range) -------------------------------------
    MRC_WRITE_FIRST = 0xC6
    MRC_WRITE_MIDDLE = 0xC7
    MRC_WRITE_LAST = 0xC8
    MRC_WRITE_LAST_IMM = 0xC9
    MRC_WRITE_ONLY = 0xCA
    MRC_WRITE_ONLY_IMM = 0xCB
    MRC_ACKNOWLEDGE = 0xD1
    MRC_ENDPOINT_REQUEST = 0xD8
    MRC_ENDPOINT_RESPONSE = 0xD9
    MRC_RELIABILITY_SACK = 0xDC
    MRC_RELIABILITY_NACK = 0xDD
    MRC_RELIABILITY_PROBE = 0xDE


MRC_DATA_OPCODES = frozenset(range(0xC6, 0xCC))
MRC_IMM_OPCODES = frozenset({Opcode.MRC_WRITE_LAST_IMM, Opcode.MRC_WRITE_ONLY_IMM})


class NackReason(enum.IntEnum):
    TRIMMED = 0x01
    TRIMMED_LASTHOP = 0x02
    NO_BITMAP = 0x06
    NO_PKT_BUFFER = 0x07
    NO_RESOURCE = 0x0A
    PSN_OOR_WINDOW = 0x0B
    UNEXP_EVENT = 0x19


class SackM(enum.IntEnum):
    """SETH M field: what the responder asks the requester to do with the reflected EV."""

    NONE = 0
    SKIP_ONCE = 1
    ALWAYS_SKIP = 2


class EndpointOp(enum.IntEnum):
    PORT_STATUS_UPDATE = 0
    EV_PROBE = 1


class EvMode(enum.IntEnum):
    """How the EV is carried (mrc_ctl.h EV format modes)."""

    STEV = 0  # EV split over UDP source port and IPv6 flow label
    UDP = 1  # EV entirely in the UDP source port
    SRV6 = 2  # IPv6-in-IPv6 with a uSID carrier (optional SRH)


class Trim(enum.IntEnum):
    """Whether (and where) a switch trimmed this packet; derived from DSCP by the DscpTable."""

    NONE = 0
    TRIMMED = 1
    TRIMMED_LASTHOP = 2


# Default DSCP code points (third-party MRC emulator values; MRC 1.0 text not public).
DSCP_NO_TRIM = 0
DSCP_TRIMMABLE = 4
DSCP_TRIMMABLE_RETX = 8
DSCP_TRIMMED = 12
DSCP_TRIMMED_LASTHOP = 16
DSCP_CONTROL = 46
