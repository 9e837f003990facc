"""MRC reliability headers: SETH + CC_STATE (SACK), NETH (NACK), PETH (reliability probe)."""
from __future__ import annotations

from scapy.fields import BitField, ByteEnumField, ByteField, ShortField, SignedShortField, XByteField, XIntField, XLongField, XShortField

from mrc.wire.constants import NETH_DEFAULT_CC_TYPE, TSETH_FTYPE, NackReason, SackM
from mrc.wire.layers.base import AfterBTH, register

PROLOGUE_NAMES = {"type": "ext_type", "next": "ext_next"}


def _prologue():
    # bytes 0-1: type 4 | next 5 | m 2 | rsvd 1 | pr 1 | rsvd 3 (see docs/wire.md)
    return [
        BitField("type", 0, 4),
        BitField("next", 0, 5),
        BitField("m", 0, 2),
        BitField("resv1", 0, 1),
        BitField("pr", 0, 1),
        BitField("resv3", 0, 3),
    ]


M_NAMES = {int(m): m.name for m in SackM}
NACK_NAMES = {int(r): r.name for r in NackReason}


@register
class SETH(AfterBTH):
    """MRC SACK Extended Transport Header: cumulative ACK PSN (``cack_psn``), the SACK bitmap and its offset,
    the reflected ``entropy`` (EV), the responder's ``mpr`` and its service time (``svc_time``, units of
    64 ns: an extension in the byte MRC leaves reserved, docs/wire.md)."""

    name = "SETH"
    fields_desc = _prologue() + [
        SignedShortField("ack_psn_offset", 0),
        XIntField("entropy", 0),
        XShortField("spdcid", 0),
        XShortField("dpdcid", 0),
        ByteField("svc_time", 0),
        BitField("cack_psn", 0, 24),
        BitField("cc_type", 0, 4),
        BitField("cc_flags", 0, 4),
        ByteField("mpr", 0),
        SignedShortField("sack_offset", 0),
        XLongField("sack_bitmap", 0),
    ]
    PKT_NAMES = PROLOGUE_NAMES




@register
class CC_STATE(AfterBTH):
    """The congestion-control state a SACK carries for NSCC (out-of-order count, receiver window penalty,
    received bytes)."""

    name = "CC_STATE"
    fields_desc = [
        ShortField("tx_timestamp", 0),
        BitField("resv1", 0, 1),
        BitField("ooo_count", 0, 15),
        BitField("r_c", 0, 1),
        BitField("rcv_cwnd_pen", 0, 7),
        BitField("rcvd_bytes", 0, 24),
    ]


@register
class NETH(AfterBTH):
    """MRC NACK Extended Transport Header: ``nack_reason`` (trimmed, trimmed at the last hop, ...), ``nack_psn``,
    the reflected ``entropy`` and the responder's service time (``svc_time``, as in SETH)."""

    name = "NETH"
    fields_desc = _prologue() + [
        ByteEnumField("nack_reason", NackReason.TRIMMED, NACK_NAMES),
        XByteField("vendor", 0),
        XIntField("entropy", 0),
        XShortField("spdcid", 0),
        XShortField("dpdcid", 0),
        ByteField("svc_time", 0),
        BitField("nack_psn", 0, 24),
        BitField("cc_type", NETH_DEFAULT_CC_TYPE, 4),
        BitField("cc_flags", 0, 4),
        ByteField("resv8b", 0),
        ShortField("tx_timestamp", 0),
    ]
    PKT_NAMES = PROLOGUE_NAMES


@register
class PETH(AfterBTH):
    """MRC Probe Extended Transport Header: a reliability probe (``probe_id``) and its timestamp."""

    name = "PETH"
    fields_desc = _prologue() + [
        ByteField("resv8", 0),
        XByteField("vendor", 0),
        ShortField("probe_id", 0),
        ShortField("resv16", 0),
        XShortField("spdcid", 0),
        XShortField("dpdcid", 0),
        ShortField("tx_timestamp", 0),
        BitField("tsr", 0, 1),
        BitField("resv11", 0, 11),
        BitField("ftype", TSETH_FTYPE, 4),
    ]
    PKT_NAMES = PROLOGUE_NAMES
