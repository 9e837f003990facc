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
    """BTH opcodes: the RoCEv2 RC ones (IBTA) and MRC's own (RDMA Write family, SACK, NACK, probe, endpoint)."""

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


# Opcode values as plain ints for compiled code: OP_<member>, the one name for each opcode
OP_CNP = int(Opcode.CNP)
OP_MRC_ACKNOWLEDGE = int(Opcode.MRC_ACKNOWLEDGE)
OP_MRC_ENDPOINT_REQUEST = int(Opcode.MRC_ENDPOINT_REQUEST)
OP_MRC_ENDPOINT_RESPONSE = int(Opcode.MRC_ENDPOINT_RESPONSE)
OP_MRC_RELIABILITY_NACK = int(Opcode.MRC_RELIABILITY_NACK)
OP_MRC_RELIABILITY_PROBE = int(Opcode.MRC_RELIABILITY_PROBE)
OP_MRC_RELIABILITY_SACK = int(Opcode.MRC_RELIABILITY_SACK)
OP_MRC_WRITE_FIRST = int(Opcode.MRC_WRITE_FIRST)
OP_MRC_WRITE_LAST = int(Opcode.MRC_WRITE_LAST)
OP_MRC_WRITE_LAST_IMM = int(Opcode.MRC_WRITE_LAST_IMM)
OP_MRC_WRITE_MIDDLE = int(Opcode.MRC_WRITE_MIDDLE)
OP_MRC_WRITE_ONLY = int(Opcode.MRC_WRITE_ONLY)
OP_MRC_WRITE_ONLY_IMM = int(Opcode.MRC_WRITE_ONLY_IMM)
OP_RC_ACKNOWLEDGE = int(Opcode.RC_ACKNOWLEDGE)
OP_RC_RDMA_WRITE_FIRST = int(Opcode.RC_RDMA_WRITE_FIRST)
OP_RC_RDMA_WRITE_LAST = int(Opcode.RC_RDMA_WRITE_LAST)
OP_RC_RDMA_WRITE_MIDDLE = int(Opcode.RC_RDMA_WRITE_MIDDLE)
OP_RC_RDMA_WRITE_ONLY = int(Opcode.RC_RDMA_WRITE_ONLY)


class NackReason(enum.IntEnum):
    """NETH ``nack_reason`` values."""

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


# SackM as plain ints, for compiled code
M_NONE = int(SackM.NONE)
M_SKIP_ONCE = int(SackM.SKIP_ONCE)
M_ALWAYS_SKIP = int(SackM.ALWAYS_SKIP)


class EndpointOp(enum.IntEnum):
    """Endpoint request operations (ERTH ``op``)."""

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


# --- header sizes (bytes) -------------------------------------------------------
IPV4_LEN = 20
IPV6_LEN = 40
SRH_FIXED_LEN = 8  # RFC 8754 fixed part; each segment adds 16
UDP_LEN = 8
BTH_LEN = 12
METH_LEN = 4
TSETH_LEN = 4
RETH_LEN = 16
IMMDT_LEN = 4
AETH_LEN = 4
SETH_LEN = 28
CC_STATE_LEN = 8
NETH_LEN = 20
PETH_LEN = 16
ERTH_LEN = 16
EETH_LEN = 36
ATOMICETH_LEN = 28
ATOMICACKETH_LEN = 8
CNP_PAD_LEN = 16
ICRC_LEN = 4

# IPv6 next-header values used by the encodings.
NH_IPV6 = 41  # IPv6-in-IPv6 (SRv6 H.Encaps)
NH_ROUTING = 43
NH_UDP = 17
SRH_ROUTING_TYPE = 4  # RFC 8754

# Fixed values of MRC header fields (mrc-public-notes 2.4).
TSETH_FTYPE = 1  # TSETH / PETH / ERTH / EETH ftype nibble (EMU, NS3)
NETH_DEFAULT_CC_TYPE = 2  # NETH cc_type default (EMU, NS3)
# Responder service time in SETH / NETH byte 12 (extension, ours; docs/wire.md): how long the responder held
# the packet a SACK or NACK answers before sending it, in units of SVC_TIME_UNIT_PS, at most SVC_TIME_MAX
# (16.32 us; a longer hold is reported as the maximum). UET 1.0 carries a 16-bit service_time in its ACK_CC
# NSCC state; MRC's CC_STATE gives those bits to the reflected timestamp, and MRC's 24-bit PSNs leave free the
# top byte of UET's 32-bit cack_psn / nack_psn, which is where it goes.
SVC_TIME_UNIT_PS = 64_000
SVC_TIME_MAX = 255

# SRv6 uSID carrier format F3216 (RFC 9800 NEXT-C-SID, Linux defaults): 32-bit block, 16-bit uSIDs.
USID_BLOCK_BITS = 32
USID_BITS = 16
USIDS_PER_CARRIER = 6
MAX_SRH_SEGMENTS = 4  # segments an SRH may carry in this implementation (MRC uses 1; see docs/wire.md)


class DscpClass(enum.IntEnum):
    """Traffic classes of the DSCP table (mrc-public-notes 2.6)."""

    DATA = 0  # trimmable data (DSCP_TRIMMABLE)
    RETX = 1  # trimmable retransmission (DSCP_TRIMMABLE_RETX)
    CONTROL = 2  # SACK / NACK / ACK / endpoint operations (DSCP_CONTROL)
    TRIMMED = 3  # a switch trimmed this packet (DSCP_TRIMMED)
    TRIMMED_LASTHOP = 4  # trimmed at the last hop (DSCP_TRIMMED_LASTHOP)
    NO_TRIM = 5  # data on a network without trimming (DSCP_NO_TRIM)
    UNKNOWN = 255  # a code point the table does not name


def opcode_name(value: int) -> str:
    """Spec name of an opcode, or its hex value if the opcode is not known."""
    try:
        return Opcode(value).name
    except ValueError:
        return f"0x{value:02x}"


# The IP header's ECN field (RFC 3168 section 5): the one definition the core, the emulator and the
# conformance suite use.
ECN_NOT_ECT = 0
ECN_ECT1 = 1
ECN_ECT0 = 2
ECN_CE = 3
