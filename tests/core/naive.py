"""Slow, obviously correct reference models for the core (the stumpy pattern)."""
from __future__ import annotations

PSN_MOD = 1 << 24


def sack_bitmap(received: set[int], trigger: int, start: int = 0) -> tuple[int, int, int]:
    """(cack_psn, bitmap base PSN, 64-bit bitmap) a responder reports after `received`.

    cack_psn: the highest PSN such that it and every PSN from `start` up to it
    were received (start - 1 when none). The bitmap starts right after
    cack_psn when the trigger is within 64 of it, else it ends at the trigger.
    """
    cack = (start - 1) % PSN_MOD
    while (cack + 1) % PSN_MOD in received:
        cack = (cack + 1) % PSN_MOD
    off = (trigger - cack + (PSN_MOD >> 1)) % PSN_MOD - (PSN_MOD >> 1)  # signed 24-bit distance
    base = (cack + 1) % PSN_MOD if off <= 64 else (trigger - 63) % PSN_MOD
    bits = 0
    for b in range(64):
        if (base + b) % PSN_MOD in received:
            bits |= 1 << b
    return cack, base, bits


def ev_expand(raw: int, container_bits: int, fmt_widths: list[int], fields: list[tuple[int, int, int]]) -> int:
    """mrc_ctl.h EV expansion, step by step on bit lists. `fields`: (width, init_val, mask) per field.

    The raw EV is a string of `container_bits` bits, most significant first.
    Per field: start from init_val; for each mask bit (most significant mask
    bit first, as the OCP ev_expansion example orders them) pull the next
    bit off the front of the EV and write it there. Each field value is
    right-aligned in its format field; the format fields are concatenated
    (missing profile fields are zero). Bits nobody pulled must be zero.
    """
    ev = [(raw >> (container_bits - 1 - b)) & 1 for b in range(container_bits)]
    out: list[int] = []
    for n, fw in enumerate(fmt_widths):
        bits = [0] * fw
        if n < len(fields):
            width, init_val, mask = fields[n]
            value = [(init_val >> (width - 1 - b)) & 1 for b in range(width)]  # MSB first
            for b in range(width):  # b = 0 is the field's most significant bit
                if (mask >> (width - 1 - b)) & 1:
                    value[b] = ev.pop(0)
            bits[fw - width:] = value
        out += bits
    if any(ev):
        raise ValueError("raw EV has bits beyond the ones the fields pull")
    result = 0
    for bit in out:
        result = (result << 1) | bit
    return result
