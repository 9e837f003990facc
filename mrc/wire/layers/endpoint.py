"""MRC endpoint operations (connectionless, QP 0x2): ERTH (request) and EETH (response)."""
from __future__ import annotations

from scapy.fields import BitEnumField, BitField, ShortField, StrFixedLenField, XByteField, XIntField

from mrc.wire.constants import TSETH_FTYPE, EndpointOp
from mrc.wire.layers.base import AfterBTH, register

OP_NAMES = {int(o): o.name for o in EndpointOp}


def _common():
    return [
        BitEnumField("op", EndpointOp.EV_PROBE, 2, OP_NAMES),
        BitField("resv6", 0, 6),
        XByteField("vendor", 0),
        ShortField("req_id", 0),
        XIntField("port_status_mask", 0),
    ]


def _timestamp():
    return [
        ShortField("tx_timestamp", 0),
        BitField("tsr", 0, 1),
        BitField("resv11", 0, 11),
        BitField("ftype", TSETH_FTYPE, 4),
    ]


@register
class ERTH(AfterBTH):
    """MRC Endpoint Request Transport Header: an EV probe or port status update between controllers (QP 1)."""

    name = "ERTH"
    fields_desc = _common() + [XIntField("resv32", 0)] + _timestamp()
    PKT_NAMES = {"op": "ep_op"}


@register
class EETH(AfterBTH):
    """MRC Endpoint response Extended Transport Header: the answer to an endpoint request, with the
    responder's service time."""

    name = "EETH"
    fields_desc = _common() + [BitField("svc_time", 0, 32)] + _timestamp() + [StrFixedLenField("resv160", b"\0" * 20, 20)]
    PKT_NAMES = {"op": "ep_op"}
