"""EV format and EV profile fields: validation, expansion and generation (mrc_ctl.h).

An EV *format* profile is a list of field widths whose sum is the width of
an EV on the wire (STEV: up to 32 bits over UDP source port + flow label;
UDP: up to 16 bits in the source port; SRv6: up to 256 bits, the 128-bit
uSID address and the 128-bit single-segment SRH address).

An EV *profile* field has ``width, init_val, min_val, max_val, mask``.
Expansion of a raw EV, field by field, exactly as ``mrc_ctl.h`` describes it
(checked against the behaviour documented by the OCP repository's
``examples/ev_expansion``):

1. the field value starts as ``init_val``;
2. for each bit set in ``mask``, from the least significant mask bit
   upwards, the next bit is taken from the raw EV (the raw EV is consumed
   most significant bit first: the first mask bit of a field receives the
   least significant of the bits pulled for that field, so the pulled bits
   keep their order as a number) and overwrites that bit of the value;
3. the expanded value is placed right-aligned in its format field (extra
   format bits stay zero) and the fields are concatenated, first field most
   significant.

A field with mask 0 is fixed (its ``init_val``). The raw bits pulled for a
field, read as a number, must lie in ``[min_val, max_val]``; EVs outside the
range are DENIED. Generated (GEN) profiles draw distinct raw values inside the
ranges from a seeded generator and assign ports round robin, so the EVs
spread evenly over the planes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mrc.errors import ConfigError
from mrc.wire.constants import EvMode

FORMAT_MAX_BITS = {EvMode.STEV: 32, EvMode.UDP: 16, EvMode.SRV6: 256}


@dataclass(frozen=True)
class EvField:
    """One field of an EV profile (``struct mrc_ctl_ev_field``)."""

    width: int
    init_val: int = 0
    min_val: int = 0
    max_val: int = 0
    mask: int = 0

    @property
    def mask_bits(self) -> int:
        return bin(self.mask).count("1")


def check_format(mode: EvMode, widths: list[int]) -> None:
    if not widths:
        raise ConfigError("ev_format.fields", widths, "at least one field is required")
    for n, w in enumerate(widths):
        if not isinstance(w, int) or w < 1 or w > 128:
            raise ConfigError(f"ev_format.fields[{n}].width", w, "must be an integer in [1, 128]")
    total = sum(widths)
    if total > FORMAT_MAX_BITS[EvMode(mode)]:
        raise ConfigError("ev_format.fields", widths, f"total width {total} exceeds {FORMAT_MAX_BITS[EvMode(mode)]} bits of {EvMode(mode).name}")


def check_fields(fmt_widths: list[int], fields: list[EvField]) -> None:
    """The restrictions mrc_ctl.h lists for an EV profile's fields."""
    if len(fields) > len(fmt_widths):
        raise ConfigError("ev_profile.fields", len(fields), f"more fields than the format has ({len(fmt_widths)})")
    if sum(f.width for f in fields) > sum(fmt_widths):
        raise ConfigError("ev_profile.fields", [f.width for f in fields], "total width exceeds the format's")
    for n, (f, fw) in enumerate(zip(fields, fmt_widths)):
        key = f"ev_profile.fields[{n}]"
        if f.width < 1 or f.width > fw:
            raise ConfigError(f"{key}.width", f.width, f"must be in [1, {fw}] (the format field's width)")
        limit = (1 << f.width) - 1
        if not 0 <= f.init_val <= limit:
            raise ConfigError(f"{key}.init_val", f.init_val, f"wider than the field's {f.width} bits")
        if f.mask & ~limit or f.mask < 0:
            raise ConfigError(f"{key}.mask", hex(f.mask), f"has bits outside the field's {f.width} bits")
        vmax = (1 << f.mask_bits) - 1
        if not 0 <= f.max_val <= vmax:
            raise ConfigError(f"{key}.max_val", f.max_val, f"wider than the {f.mask_bits} mask bits")
        if not 0 <= f.min_val <= f.max_val and f.mask:
            raise ConfigError(f"{key}.min_val", f.min_val, f"must be within [0, max_val={f.max_val}]")


def raw_bits(fields: list[EvField]) -> int:
    return sum(f.mask_bits for f in fields)


def overlay(init_val: int, pulled: int, mask: int, width: int) -> int:
    """Step 2: put the pulled bits (LSB first) into the mask positions of init_val."""
    value = init_val
    j = 0
    for bit in range(width):
        if (mask >> bit) & 1:
            value &= ~(1 << bit)
            if (pulled >> j) & 1:
                value |= 1 << bit
            j += 1
    return value


def split_raw(raw: int, container_bits: int, fields: list[EvField]) -> list[int]:
    """The bits each field pulls from a raw EV held MSB-first in a `container_bits` container."""
    out = []
    pos = container_bits
    for f in fields:
        n = f.mask_bits
        if n == 0:
            out.append(0)
            continue
        pos -= n
        if pos < 0:
            raise ConfigError("ev", hex(raw), f"the fields pull more bits than the {container_bits}-bit container holds")
        out.append((raw >> pos) & ((1 << n) - 1))
    if pos > 0 and raw & ((1 << pos) - 1):
        raise ConfigError("ev", hex(raw), "has bits set beyond those the fields use")
    return out


def join_raw(values: list[int], container_bits: int, fields: list[EvField]) -> int:
    """Inverse of `split_raw`: the raw EV (MSB-first) whose fields pull `values`."""
    raw = 0
    pos = container_bits
    for f, v in zip(fields, values):
        n = f.mask_bits
        if n == 0:
            continue
        pos -= n
        raw |= (v & ((1 << n) - 1)) << pos
    return raw


def expand(raw: int, container_bits: int, fmt_widths: list[int], fields: list[EvField]) -> int:
    """Expand a raw EV into the value carried on the wire (concatenated format fields)."""
    pulled = split_raw(raw, container_bits, fields)
    value = 0
    for n, fw in enumerate(fmt_widths):
        if n < len(fields):
            f = fields[n]
            v = overlay(f.init_val, pulled[n], f.mask, f.width) if f.mask else f.init_val
        else:
            v = 0
        value = (value << fw) | (v & ((1 << fw) - 1))
    return value


def in_range(raw: int, container_bits: int, fields: list[EvField]) -> bool:
    """False when a field's pulled bits fall outside [min_val, max_val]: such an EV is DENIED."""
    for f, v in zip(fields, split_raw(raw, container_bits, fields)):
        if f.mask and not f.min_val <= v <= f.max_val:
            return False
    return True


def generate(
    count: int, container_bits: int, fields: list[EvField], n_ports: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """GEN mode: `count` distinct raw EVs inside every field's range, ports round robin.

    Returns (raw EVs as Python ints in an object array, 1-based ports).
    """
    ranges = [(f.min_val, f.max_val) if f.mask else (0, 0) for f in fields]
    total = 1
    for lo, hi in ranges:
        total *= hi - lo + 1
    if count > total:
        raise ConfigError("ev_profile.ev_count", count, f"the fields allow only {total} distinct EVs")
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    if total <= 4 * count or total <= 1 << 16:
        picks = rng.permutation(total)[:count]
    else:
        seen: set[int] = set()
        while len(seen) < count:
            seen.add(int(rng.integers(0, total)))
        picks = rng.permutation(np.fromiter(seen, dtype=np.int64, count=count))
    for idx in picks:
        idx = int(idx)
        values = []
        for lo, hi in reversed(ranges):
            span = hi - lo + 1
            values.append(lo + idx % span)
            idx //= span
        values.reverse()
        chosen.append(join_raw(values, container_bits, fields))
    raws = np.empty(count, dtype=object)
    raws[:] = chosen
    ports = (np.arange(count) % n_ports + 1).astype(np.uint8)
    return raws, ports
