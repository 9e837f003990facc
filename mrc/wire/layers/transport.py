"""BTH and the RoCEv2 / MRC transport headers: METH, TSETH, RETH, ImmDt, AETH, atomics, CNP."""
from __future__ import annotations

import struct

from scapy.fields import BitField, ByteEnumField, FCSField, ShortField, XBitField, XByteField, XIntField, XLongField, XShortField
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import bind_layers, raw

from mrc.wire.checksum import icrc_bytes
from mrc.wire.constants import ROCEV2_UDP_PORT, TSETH_FTYPE, Opcode
from mrc.wire.layers.base import AfterBTH, register

OPCODE_NAMES = {int(op): op.name for op in Opcode}


def _ip_header(ip, udp_len: int) -> bytes:
    """The IP header `ip` will have on the wire (lengths filled in), without payload."""
    h = ip.copy()
    h.remove_payload()
    if isinstance(ip, IPv6):
        h.plen = ip.plen if ip.plen is not None else udp_len
        h.nh = 17
        return raw(h)[:40]
    h.len = ip.len if ip.len is not None else 4 * (ip.ihl or 5) + udp_len
    h.proto = 17
    return raw(h)


@register
class BTH(AfterBTH):
    """Base Transport Header (IBTA, 12 bytes; MRC opcodes 0xC6.. and its ``rtx`` / ``ts`` bits). The RoCEv2
    ICRC follows the payload: computed in ``post_build`` while ``icrc`` is None."""

    name = "BTH"
    fields_desc = [
        ByteEnumField("opcode", Opcode.MRC_WRITE_ONLY, OPCODE_NAMES),
        BitField("se", 0, 1),
        BitField("mig", 0, 1),
        BitField("padcnt", 0, 2),
        BitField("tver", 0, 4),
        XShortField("pkey", 0xFFFF),
        BitField("fecn", 0, 1),
        BitField("becn", 0, 1),
        BitField("resv6", 0, 6),
        XBitField("dqpn", 0, 24),
        BitField("ackreq", 0, 1),
        BitField("r", 0, 1),
        BitField("rtx", 0, 1),
        BitField("ts", 0, 1),
        BitField("resv4", 0, 4),
        BitField("psn", 0, 24),
        FCSField("icrc", None, fmt="<I"),
    ]
    PKT_NAMES = {"r": "bth_r"}

    def extract_padding(self, s):
        return s, b""

    def post_build(self, p, pay):
        p += pay
        if self.icrc is None:
            udp = self.underlayer
            if not isinstance(udp, UDP) or not isinstance(udp.underlayer, (IP, IPv6)):
                raise ValueError("BTH needs IP(v6) / UDP under it to compute the ICRC")
            udp_len = udp.len if udp.len is not None else 8 + len(p)
            udp_hdr = struct.pack("!HHHH", udp.sport, udp.dport, udp_len, 0xFFFF)
            crc = icrc_bytes(_ip_header(udp.underlayer, udp_len), udp_hdr, p[:-4])
            p = p[:-4] + struct.pack("<I", crc)
        return p


@register
class METH(AfterBTH):
    """MRC Message Extended Transport Header: the request and message sequence numbers (``rqmsn``, ``msn``)."""

    name = "METH"
    fields_desc = [ShortField("rqmsn", 0), ShortField("msn", 0)]


@register
class TSETH(AfterBTH):
    """MRC Timestamp Extended Transport Header (present when BTH ``ts`` is set): the sender's ``tx_timestamp``."""

    name = "TSETH"
    fields_desc = [
        ShortField("tx_timestamp", 0),
        BitField("tsr", 0, 1),
        BitField("resv11", 0, 11),
        BitField("ftype", TSETH_FTYPE, 4),
    ]


@register
class RETH(AfterBTH):
    """RDMA Extended Transport Header (IBTA): remote virtual address ``va``, ``rkey``, ``dma_len``."""

    name = "RETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), BitField("dma_len", 0, 32)]


@register
class ImmDt(AfterBTH):
    """Immediate Data (IBTA): the 32-bit ``imm`` of a Write-with-Immediate's last packet."""

    name = "ImmDt"
    fields_desc = [XIntField("imm", 0)]


@register
class AETH(AfterBTH):
    """ACK Extended Transport Header (IBTA): syndrome (ACK or NAK code) and MSN."""

    name = "AETH"
    fields_desc = [XByteField("syndrome", 0), BitField("msn", 0, 24)]
    PKT_NAMES = {"syndrome": "aeth_syndrome", "msn": "aeth_msn"}


@register
class AtomicETH(AfterBTH):
    """Atomic Extended Transport Header (IBTA). MRC does not permit atomics; the layer dissects RoCEv2 traffic."""

    name = "AtomicETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), XLongField("swap_add", 0), XLongField("compare", 0)]


@register
class AtomicAckETH(AfterBTH):
    """Atomic Acknowledge Extended Transport Header (IBTA), for dissecting RoCEv2 traffic."""

    name = "AtomicAckETH"
    fields_desc = [XLongField("orig_data", 0)]


@register
class CNP(AfterBTH):
    """The 16 reserved bytes after BTH of a congestion notification packet (opcode 0x81)."""

    name = "CNP"
    fields_desc = [XLongField("resv64a", 0), XLongField("resv64b", 0)]


bind_layers(UDP, BTH, dport=ROCEV2_UDP_PORT)
