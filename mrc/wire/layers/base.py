"""What every header after BTH shares: the next header is chosen from `mrc.wire.layout`."""
from __future__ import annotations

from scapy.packet import Packet, Raw

from mrc.wire.layout import headers_after_bth

REGISTRY: dict[str, type] = {}


def register(cls):
    REGISTRY[cls.__name__] = cls  # class names are the header names
    return cls


def _bth_of(pkt):
    layer = pkt
    while layer is not None:
        if layer.name == "BTH":
            return layer
        layer = layer.underlayer
    return None


class AfterBTH(Packet):
    """Base of the headers that follow BTH. ``PKT_NAMES`` maps a field to its `PKT` column."""

    PKT_NAMES: dict[str, str] = {}

    def guess_payload_class(self, payload):
        bth = _bth_of(self)
        if bth is None:
            return Raw
        names = headers_after_bth(bth.opcode, bth.ts)
        idx = names.index(self.name) if self.name in names else len(names) - 1
        if self.name == "BTH":
            idx = -1
        if idx + 1 < len(names):
            return REGISTRY[names[idx + 1]]
        return Raw

    def extract_padding(self, s):
        # Headers after BTH are fixed size: the rest belongs to the next layer.
        return s, b""

    def pkt_fields(self):
        """(PKT column, value) pairs of this header's non-reserved fields."""
        for f in self.fields_desc:
            if f.name.startswith("resv") or f.name == "icrc":
                continue
            yield self.PKT_NAMES.get(f.name, f.name), self.getfieldval(f.name)
