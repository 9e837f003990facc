"""Slow, obviously correct reference models for the core (the stumpy pattern)."""
from __future__ import annotations

PSN_MOD = 1 << 24


def cack_psn(received: set[int], start: int = 0) -> int:
    """The highest PSN such that it and every PSN from `start` up to it were received (start - 1 when none)."""
    cack = (start - 1) % PSN_MOD
    while (cack + 1) % PSN_MOD in received:
        cack = (cack + 1) % PSN_MOD
    return cack


def distance(a: int, b: int) -> int:
    """a - b as a signed 24-bit PSN distance."""
    return (a - b + (PSN_MOD >> 1)) % PSN_MOD - (PSN_MOD >> 1)


def accepts(received: set[int], psn: int, start: int = 0, window: int | None = None) -> bool:
    """Whether a responder holding `received` places `psn`: new, after cack_psn, and within the MPR window.

    The window (MPR x 128 PSNs) is counted from cack_psn + 1: PSNs cack + 1 .. cack + window fit, the
    next one does not (it gets NACK PSN_OOR_WINDOW). `window` None: no limit.
    """
    d = distance(psn, cack_psn(received, start)) - 1
    return psn not in received and d >= 0 and (window is None or d < window)


def sack_bitmap(received: set[int], trigger: int, start: int = 0, window: int | None = None) -> tuple[int, int, int]:
    """(cack_psn, bitmap base PSN, 64-bit bitmap) a responder reports after `received`.

    cack_psn: the highest PSN such that it and every PSN from `start` up to it
    were received (start - 1 when none). The bitmap starts right after
    cack_psn when the trigger is within 64 of it, else it ends at the trigger.
    It reports nothing beyond the MPR window, cack_psn + `window` (the responder
    holds no state there).
    """
    cack = cack_psn(received, start)
    off = distance(trigger, cack)
    base = (cack + 1) % PSN_MOD if off <= 64 else (trigger - 63) % PSN_MOD
    bits = 0
    for b in range(64):
        psn = (base + b) % PSN_MOD
        if window is not None and distance(psn, cack) > window:
            break
        if psn in received:
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
