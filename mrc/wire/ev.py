"""Where the entropy value (EV) travels in each EV mode (mrc_ctl.h EV format modes).

- STEV: 32-bit EV; UDP source port = EV bits 31..16, IPv6 flow label bits
  15..0 = EV bits 15..0 (MANI: "striped across the lower 16 bits of the IPv6
  flow label and the 16-bit UDP source port"; EMU: ``sport ‖ flow_lbl[15:0]``).
- UDP: 16-bit EV = UDP source port (IPv4 or IPv6); the flow label is free.
- SRv6: the path is the outer IPv6 destination (uSID carrier, `mrc.wire.srv6`);
  the compact 32-bit EV rides in the inner UDP source port and flow label as
  in STEV, so the receiver can reflect it in SACK / NACK ``entropy`` (MP).

The compiled codec (`mrc.wire.packet`) applies the same rules.
"""
from __future__ import annotations

from mrc.errors import UsageError
from mrc.wire.constants import EvMode


def ev_to_wire(ev: int, mode: EvMode, flow_label: int = 0) -> tuple[int, int]:
    """(UDP source port, 20-bit flow label) that carry `ev` in `mode`."""
    mode = EvMode(mode)
    if not 0 <= ev <= 0xFFFFFFFF:
        raise UsageError(f"ev = {ev!r}: an EV is 32 bits")
    if not 0 <= flow_label <= 0xFFFFF:
        raise UsageError(f"flow_label = {flow_label!r}: a flow label is 20 bits")
    if mode == EvMode.UDP:
        if ev > 0xFFFF:
            raise UsageError(f"ev = {ev:#x}: the UDP EV mode carries 16 bits")
        return ev, flow_label
    return ev >> 16, (flow_label & 0xF0000) | (ev & 0xFFFF)


def ev_from_wire(sport: int, flow_label: int, mode: EvMode) -> int:
    """The EV carried by a UDP source port and flow label in `mode`."""
    if EvMode(mode) == EvMode.UDP:
        return sport & 0xFFFF
    return ((sport & 0xFFFF) << 16) | (flow_label & 0xFFFF)
