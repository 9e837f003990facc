"""EV format and EV profile fields: validation, expansion and generation (mrc_ctl.h).

An EV *format* profile is a list of field widths whose sum is the width of
an EV on the wire (STEV: up to 32 bits over UDP source port + flow label;
UDP: up to 16 bits in the source port; SRv6: up to 256 bits, the 128-bit
uSID address and the 128-bit single-segment SRH address).

An EV *profile* field has ``width, init_val, min_val, max_val, mask``
(``struct mrc_ctl_ev_field``: five 32-bit values, so a field is at most 32
bits wide). Expansion of a raw EV, field by field, exactly as ``mrc_ctl.h``
describes it (checked against the behaviour documented by the OCP
repository's ``examples/ev_expansion``):

1. the field value starts as ``init_val`` (zero-filled to the field width);
2. for each bit set in ``mask``, the next most significant bit of the raw EV
   is pulled (the raw EV is then shifted left by one) and overwrites that
   bit of the value. The mask bits are visited from the most significant
   down, so the bits pulled for a field, read as a number, keep their order:
   the first pulled bit lands on the highest mask bit. (``ev_expansion.c``
   does the same thing the other way round: it reads the pulled bits as a
   number and deposits them from the lowest mask bit up.)
3. the expanded value is placed right-aligned in its format field (the
   format field's extra high bits stay zero) and the fields are
   concatenated, first field most significant. Format fields beyond the
   profile's fields are zero.

A raw EV is held MSB-first in a container of ``container_bits`` bits (the
controller passes the whole 256-bit ``mrc_ctl_ev_t``, byte 0 first); bits the
fields do not pull must be zero (``ev_expansion.c``: ``verify_unused_bits_zero``).

A field with mask 0 is fixed (its ``init_val``; mrc_ctl.h: "min_val/max_val/
mask are all set to zero"). ``min_val`` / ``max_val`` bound the values the
device generates for a field ("Minimum/Maximum field value for generated
EVs"): they apply to GEN profiles only; an explicit EV is taken as the
controller gives it. ``min_val = max_val = 0`` on a field with mask bits means
the whole range of its mask bits (our reading: the OCP ``ev_expansion``
example configures its first generated STEV profile that way and fills it with
arbitrary values; a field whose mask bits could only be zero would be a fixed
field, which mrc_ctl.h writes with mask 0). Generated (GEN) profiles draw
distinct raw values inside the ranges from a seeded generator and assign ports
round robin, so the EVs spread evenly over the planes.

An explicit profile given no fields (the OCP ``mrc_ctl_exp_ev.md`` example
sets none) takes `identity_fields`: one field per format field, its whole
width pulled from the EV, so the EV the controller gives is the EV on the wire.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mrc.errors import ConfigError
from mrc.wire.constants import EvMode

FORMAT_MAX_BITS = {EvMode.STEV: 32, EvMode.UDP: 16, EvMode.SRV6: 256}
FIELD_MAX_BITS = 32  # struct mrc_ctl_ev_field holds width, init_val, min, max and mask as uint32_t


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
        """How many bits the field pulls from the raw EV (the bits set in `mask`)."""
        return bin(self.mask).count("1") if self.mask > 0 else 0

    @property
    def value_range(self) -> tuple[int, int]:
        """The allowed values of the pulled bits: (min_val, max_val), or every value when both are 0."""
        if self.mask == 0:
            return (0, 0)
        if self.min_val == 0 and self.max_val == 0:
            return (0, (1 << self.mask_bits) - 1)
        return (self.min_val, self.max_val)


def identity_fields(fmt_widths: list[int]) -> list[EvField]:
    """The fields of an explicit profile configured without any: each format field taken whole from the EV
    (`EvField` holds 32-bit values, so a format field wider than 32 bits needs fields of its own)."""
    if any(w > FIELD_MAX_BITS for w in fmt_widths):
        raise ConfigError("ev_profile.fields", None, f"a format field is wider than {FIELD_MAX_BITS} bits "
                          f"({fmt_widths}): give the profile's fields (EV_FIELDS_OP MODIFY_FIELDS)")
    return [EvField(w, 0, 0, 0, (1 << w) - 1) for w in fmt_widths]


def check_format(mode: EvMode, widths: list[int]) -> None:
    if not widths:
        raise ConfigError("ev_format.fields", widths, "at least one field is required")
    for n, w in enumerate(widths):
        if not isinstance(w, int) or isinstance(w, bool) or w < 1 or w > 128:
            raise ConfigError(f"ev_format.fields[{n}].width", w, "must be an integer in [1, 128]")
    total = sum(widths)
    if total > FORMAT_MAX_BITS[EvMode(mode)]:
        limit = FORMAT_MAX_BITS[EvMode(mode)]
        raise ConfigError("ev_format.fields", widths, f"total width {total} exceeds {limit} bits of {EvMode(mode).name}")


def check_fields(fmt_widths: list[int], fields: list[EvField], max_raw_bits: int | None = None) -> None:
    """The restrictions mrc_ctl.h lists for an EV profile's fields.

    `max_raw_bits` (the device's ``ev_max_bits``, i.e. the raw EV container)
    bounds the bits all fields pull together.
    """
    if not fields:
        raise ConfigError("ev_profile.fields", fields, "at least one field is required")
    if len(fields) > len(fmt_widths):
        raise ConfigError("ev_profile.fields", len(fields), f"more fields than the format has ({len(fmt_widths)})")
    if sum(f.width for f in fields) > sum(fmt_widths):
        raise ConfigError("ev_profile.fields", [f.width for f in fields],
                          f"total width exceeds the format's {sum(fmt_widths)} bits")
    for n, (f, fw) in enumerate(zip(fields, fmt_widths)):
        key = f"ev_profile.fields[{n}]"
        for name in ("width", "init_val", "min_val", "max_val", "mask"):
            v = getattr(f, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise ConfigError(f"{key}.{name}", v, "must be an integer")
        if f.width < 1 or f.width > min(fw, FIELD_MAX_BITS):
            raise ConfigError(f"{key}.width", f.width,
                              f"must be in [1, {min(fw, FIELD_MAX_BITS)}] (the format field's width, at most {FIELD_MAX_BITS})")
        limit = (1 << f.width) - 1
        if not 0 <= f.init_val <= limit:
            raise ConfigError(f"{key}.init_val", f.init_val, f"wider than the field's {f.width} bits")
        if f.mask < 0 or f.mask & ~limit:
            raise ConfigError(f"{key}.mask", hex(f.mask), f"has bits outside the field's {f.width} bits")
        vmax = (1 << f.mask_bits) - 1
        if not 0 <= f.max_val <= vmax:
            raise ConfigError(f"{key}.max_val", f.max_val, f"wider than the {f.mask_bits} mask bits")
        if f.min_val < 0 or f.min_val > f.max_val:
            raise ConfigError(f"{key}.min_val", f.min_val, f"must be within [0, max_val={f.max_val}]")
    if max_raw_bits is not None and raw_bits(fields) > max_raw_bits:
        raise ConfigError("ev_profile.fields", [hex(f.mask) for f in fields],
                          f"the masks pull {raw_bits(fields)} raw EV bits, more than the {max_raw_bits}-bit EV (ev_max_bits)")


def raw_bits(fields: list[EvField]) -> int:
    return sum(f.mask_bits for f in fields)


def overlay(init_val: int, pulled: int, mask: int, width: int) -> int:
    """Step 2: put the pulled bits into the mask positions of init_val (lowest pulled bit on the lowest mask bit)."""
    value = init_val
    j = 0
    for bit in range(width):
        if (mask >> bit) & 1:
            value &= ~(1 << bit)
            if (pulled >> j) & 1:
                value |= 1 << bit
            j += 1
    return value


def _check_raw(raw: int, container_bits: int) -> None:
    if not isinstance(raw, (int, np.integer)) or isinstance(raw, bool) or not 0 <= raw < 1 << container_bits:
        raise ConfigError("ev", raw, f"a raw EV must be an integer in [0, 2^{container_bits})")


def split_raw(raw: int, container_bits: int, fields: list[EvField]) -> list[int]:
    """The bits each field pulls from a raw EV held MSB-first in a `container_bits` container."""
    _check_raw(raw, container_bits)
    raw = int(raw)
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
        raise ConfigError("ev", hex(raw), f"has bits set beyond the {container_bits - pos} the fields pull")
    return out


def join_raw(values: list[int], container_bits: int, fields: list[EvField]) -> int:
    """Inverse of `split_raw`: the raw EV (MSB-first) whose fields pull `values`."""
    if len(values) != len(fields):
        raise ConfigError("ev", values, f"{len(values)} values for {len(fields)} fields")
    raw = 0
    pos = container_bits
    for n, (f, v) in enumerate(zip(fields, values)):
        bits = f.mask_bits
        if not 0 <= v < 1 << bits:
            raise ConfigError(f"ev.fields[{n}]", v, f"does not fit the field's {bits} mask bits")
        if bits == 0:
            continue
        pos -= bits
        if pos < 0:
            raise ConfigError("ev", values, f"the fields pull more bits than the {container_bits}-bit container holds")
        raw |= int(v) << pos
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
    """False when a field's pulled bits fall outside its range: such an EV is DENIED."""
    for f, v in zip(fields, split_raw(raw, container_bits, fields)):
        lo, hi = f.value_range
        if f.mask and not lo <= v <= hi:
            return False
    return True


def generate(
    count: int, container_bits: int, fields: list[EvField], n_ports: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """GEN mode: `count` distinct raw EVs inside every field's range, ports round robin.

    Returns (raw EVs as Python ints in an object array, 1-based ports).
    """
    if not isinstance(count, (int, np.integer)) or count < 1:
        raise ConfigError("ev_profile.ev_count", count, "must be a positive integer")
    if n_ports < 1:
        raise ConfigError("ports", n_ports, "must be at least 1")
    if raw_bits(fields) > container_bits:
        raise ConfigError("ev_profile.fields", [hex(f.mask) for f in fields],
                          f"the masks pull {raw_bits(fields)} bits, more than the {container_bits}-bit EV")
    ranges = [f.value_range for f in fields]
    spans = [hi - lo + 1 for lo, hi in ranges]
    total = 1
    for s in spans:
        total *= s
    if count > total:
        raise ConfigError("ev_profile.ev_count", count, f"the fields allow only {total} distinct EVs")
    rng = np.random.default_rng(seed)
    if total <= 4 * count or total <= 1 << 16:
        picks = [int(x) for x in rng.permutation(total)[:count]]
    elif total < 1 << 62:
        seen: dict[int, None] = {}
        while len(seen) < count:
            seen[int(rng.integers(0, total))] = None
        picks = list(seen)
    else:  # wider than numpy's integers: draw each field on its own
        seen_t: dict[tuple, None] = {}
        while len(seen_t) < count:
            seen_t[tuple(int(rng.integers(0, s)) for s in spans)] = None
        picks = []
        for t in seen_t:
            idx = 0
            for s, x in zip(spans, t):
                idx = idx * s + x
            picks.append(idx)
    chosen: list[int] = []
    for idx in picks:
        values = []
        for lo, s in zip(reversed([r[0] for r in ranges]), reversed(spans)):
            values.append(lo + idx % s)
            idx //= s
        values.reverse()
        chosen.append(join_raw(values, container_bits, fields))
    raws = np.empty(count, dtype=object)
    raws[:] = chosen
    ports = (np.arange(count) % n_ports + 1).astype(np.uint8)
    return raws, ports
