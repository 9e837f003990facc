"""Errors of the wire layer, and the numeric codes the compiled codec returns.

Compiled code cannot raise a useful exception, so every `pull_*` / `push_*`
function reports a problem as a negative integer: ``-code``. The Python
wrappers turn ``code`` into a `DecodeError` or `EncodeError` through `CODES`,
which names the header, the field and the problem.
"""
from __future__ import annotations

from mrc.errors import MRCError


class DecodeError(MRCError, ValueError):
    """Bytes that are not a well-formed MRC / RoCEv2 packet.

    ``header`` and ``field`` name where decoding stopped (e.g. ``"SETH"``,
    ``"sack_bitmap"``); ``offset`` is the byte offset in the packet, when known.
    """

    def __init__(self, header: str, field: str, problem: str, offset: int | None = None):
        self.header = header
        self.field = field
        self.problem = problem
        self.offset = offset
        where = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"{header}.{field}: {problem}{where}")


class EncodeError(MRCError, ValueError):
    """A packet record holds a value its header field cannot carry (too wide, unknown opcode...)."""

    def __init__(self, header: str, field: str, problem: str):
        self.header = header
        self.field = field
        self.problem = problem
        super().__init__(f"{header}.{field}: {problem}")


# code -> (header, field, problem). Codes are small positive integers; compiled
# functions return -code. Keep numbers stable: they appear in tests.
CODES: dict[int, tuple[str, str, str]] = {}


def _code(n: int, header: str, field: str, problem: str) -> int:
    assert n not in CODES, n
    CODES[n] = (header, field, problem)
    return n


# --- decode: truncation (checked before every pull) ---
E_TRUNC_ETH = _code(1, "Ethernet", "type", "frame shorter than its Ethernet header")
E_TRUNC_IPV4 = _code(2, "IPv4", "ihl", "packet shorter than the IPv4 header")
E_TRUNC_IPV6 = _code(3, "IPv6", "plen", "packet shorter than the IPv6 header")
E_TRUNC_SRH = _code(4, "SRH", "len", "packet shorter than the segment routing header")
E_TRUNC_INNER = _code(5, "IPv6(inner)", "plen", "packet shorter than the inner IPv6 header")
E_TRUNC_UDP = _code(6, "UDP", "len", "packet shorter than the UDP header")
E_TRUNC_BTH = _code(7, "BTH", "opcode", "packet shorter than BTH")
E_TRUNC_EXT = _code(8, "BTH", "opcode", "packet shorter than the extension headers its opcode requires")
E_TRUNC_ICRC = _code(9, "ICRC", "icrc", "packet shorter than its extension headers plus the 4-byte ICRC")
# --- decode: field values ---
E_IP_VERSION = _code(20, "IP", "version", "neither 4 nor 6")
E_IPV4_IHL = _code(21, "IPv4", "ihl", "header length below 5 words")
E_IPV4_LEN = _code(22, "IPv4", "len", "total length disagrees with the bytes present")
E_IPV4_FRAG = _code(23, "IPv4", "flags", "fragmented packets are not RoCEv2")
E_IPV4_PROTO = _code(24, "IPv4", "proto", "not UDP (17)")
E_IPV4_CHKSUM = _code(25, "IPv4", "chksum", "header checksum is wrong")
E_IPV6_PLEN = _code(26, "IPv6", "plen", "payload length disagrees with the bytes present")
E_IPV6_NH = _code(27, "IPv6", "nh", "next header is not UDP (17), IPv6-in-IPv6 (41) or SRH (43)")
E_SRH_TYPE = _code(28, "SRH", "type", "routing type is not 4 (RFC 8754)")
E_SRH_NH = _code(29, "SRH", "nh", "next header after the SRH is not IPv6 (41)")
E_SRH_LEN = _code(30, "SRH", "len", "header length smaller than its segment list")
E_SRH_SEGS = _code(31, "SRH", "lastentry", "more segments than this implementation keeps (4)")
E_SRH_SEGLEFT = _code(32, "SRH", "segleft", "segments left exceeds the number of segments")
E_INNER_VERSION = _code(33, "IPv6(inner)", "version", "inner header is not IPv6")
E_INNER_PLEN = _code(34, "IPv6(inner)", "plen", "payload length disagrees with the outer header")
E_INNER_NH = _code(35, "IPv6(inner)", "nh", "inner next header is not UDP (17)")
E_UDP_LEN = _code(36, "UDP", "len", "length disagrees with the IP payload length")
E_UDP_DPORT = _code(37, "UDP", "dport", "destination port is not the configured RoCEv2 port")
E_UDP_CHKSUM = _code(38, "UDP", "chksum", "checksum is wrong")
E_OPCODE = _code(39, "BTH", "opcode", "unknown opcode (not RoCEv2 RC, CNP or MRC)")
E_ICRC = _code(40, "ICRC", "icrc", "invariant CRC is wrong and the DSCP does not mark the packet trimmed")
E_ETH_TYPE = _code(41, "Ethernet", "type", "not IPv4 (0x0800) or IPv6 (0x86dd)")
E_EV_MODE = _code(42, "NET", "ev_mode", "unknown EV mode")
E_ETH_TRUNC_VLAN = _code(43, "802.1Q", "type", "frame shorter than its VLAN tag")
E_PAYLOAD_NONE = _code(44, "payload", "payload_len", "bytes after the headers of a packet kind that carries no payload")
E_PADCNT = _code(45, "BTH", "padcnt", "pad count exceeds the payload length")
# --- encode ---
W_OPCODE = _code(60, "BTH", "opcode", "unknown opcode")
W_BTH_WIDTH = _code(61, "BTH", "se/mig/padcnt/tver/fecn/becn/ackreq/bth_r/rtx/ts", "value wider than its bit field")
W_DQPN = _code(62, "BTH", "dqpn", "wider than 24 bits")
W_PSN = _code(63, "BTH", "psn", "wider than 24 bits")
W_TSETH = _code(64, "TSETH", "tsr/ftype", "value wider than its bit field")
W_AETH = _code(65, "AETH", "aeth_msn", "wider than 24 bits")
W_EXT_PROLOGUE = _code(66, "SETH", "ext_type/ext_next/m/pr", "value wider than its bit field")
W_CACK = _code(67, "SETH", "cack_psn", "wider than 24 bits")
W_CC = _code(68, "SETH", "cc_type/cc_flags", "wider than 4 bits")
W_CC_STATE = _code(69, "CC_STATE", "ooo_count/r_c/rcv_cwnd_pen/rcvd_bytes", "value wider than its bit field")
W_NACK_PSN = _code(70, "NETH", "nack_psn", "wider than 24 bits")
W_EP_OP = _code(71, "ERTH", "ep_op", "wider than 2 bits")
W_DSCP = _code(72, "IP", "dscp/ecn", "dscp wider than 6 bits or ecn wider than 2 bits")
W_FLOW = _code(73, "IPv6", "flow_label", "wider than 20 bits")
W_EV = _code(74, "UDP", "ev", "UDP EV mode carries 16 bits; the EV is wider")
W_IPV4_MODE = _code(75, "NET", "ip_version", "IPv4 carries only the UDP EV mode")
W_IP_VERSION = _code(76, "NET", "ip_version", "neither 4 nor 6")
W_SRH_SEGS = _code(77, "NET", "srh_lastentry", "more than 4 SRH segments")
W_SRH_SEGLEFT = _code(78, "NET", "srh_segleft", "exceeds the number of segments")
W_TOO_LONG = _code(79, "IPv6", "plen", "packet longer than 65535 bytes")
W_BUFFER = _code(80, "buffer", "size", "output buffer too small")
W_EV_MODE = _code(81, "NET", "ev_mode", "unknown EV mode")
W_OUTER_FLOW = _code(82, "IPv6(outer)", "outer_flow_label", "wider than 20 bits")
W_PAYLOAD_NONE = _code(83, "PKT", "payload_len", "payload on a packet kind that carries none")
W_PADCNT = _code(84, "BTH", "padcnt", "pad count exceeds the payload length")
W_SVC_TIME = _code(85, "SETH", "svc_time", "SETH / NETH carry 8 bits (units of 64 ns); the value is wider")


def _problem(code: int, problem: str, pkt) -> str:
    """The problem of `code`, with the values of the `PKT` row `pkt` where they make it clearer."""
    if pkt is None:
        return problem
    if code in (E_PAYLOAD_NONE, W_PAYLOAD_NONE):
        from mrc.wire.constants import Opcode

        op = int(pkt["opcode"])
        name = Opcode(op).name if op in Opcode._value2member_map_ else f"0x{op:02x}"
        return f"payload of {int(pkt['payload_len'])} bytes on a {name} packet, which carries none"
    if code in (E_PADCNT, W_PADCNT):
        return f"pad count {int(pkt['padcnt'])} exceeds the payload length {int(pkt['payload_len'])}"
    return problem


def decode_error(code: int, offset: int | None = None, pkt=None) -> DecodeError:
    """The `DecodeError` of `code`; `pkt` (the row the decoder filled) adds the values where they matter."""
    header, field, problem = CODES.get(code, ("packet", "?", f"error code {code}"))
    return DecodeError(header, field, _problem(code, problem, pkt), offset)


def encode_error(code: int, pkt=None) -> EncodeError:
    """The `EncodeError` of `code`; `pkt` (the row being encoded) adds the values where they matter."""
    header, field, problem = CODES.get(code, ("packet", "?", f"error code {code}"))
    return EncodeError(header, field, _problem(code, problem, pkt))
