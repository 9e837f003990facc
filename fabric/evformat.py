"""The EV format of a fabric, and SRv6 GEN profiles that expand EVs into carriers.

The contract with the controller (`mrc` controller API): an EV is a 32-bit
value, the MSB-first concatenation of fields, then zero padding:

- ``plane``: ceil(log2(planes)) bits (no bits with one plane);
- one field per hop choice, in path order: leaf-spine ``t1`` (the T1 the
  source T0 goes up to); fat-tree ``t1`` (the aggregation uplink of the edge
  switch) then ``t2`` (the core uplink of the aggregation switch).

A field value at or beyond the field's `count` is invalid (the controller
marks such EVs DENIED); an EV with a non-zero padding bit is invalid too. In
STEV mode the EV rides as UDP source port = bits 31..16 and flow label bits
15..0 = bits 15..0 (`mrc.wire.ev`).

`EvFormat.gen_fields` gives the OCP ``mrc_ctl.h`` GEN field definitions
(full mask, init 0, min 0, max count-1; zero-width fields are left out).
`srv6_profile` gives, for one (src, dst) pair, the GEN fields over the SRv6
format (32-bit block + 16-bit uSIDs) whose expansion of an EV is exactly the
carrier `mrc.fabric.paths.ev_carrier` builds: the plane lands in the block's
low bits, the T1 (or core) choice in the low bits of that uSID. Pairs that
use fewer choices (same T0; same pod) consume fewer EV bits, so under their
SRv6 GEN profile the unused choice fields must be zero.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from mrc.errors import ConfigError, UsageError
from mrc.fabric import address as AD

EV_BITS = 32
MAX_FIELDS = 3
EVF = np.dtype([("width", np.int64), ("count", np.int64), ("shift", np.int64)], align=True)


@dataclasses.dataclass(frozen=True)
class EvField:
    name: str
    width: int  # bits in the EV
    count: int  # valid values are 0 .. count-1
    shift: int  # value = (ev >> shift) & mask
    meaning: str

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    def gen(self) -> dict:
        """OCP GEN field definition (mrc_ctl.h): full mask, init 0, min 0, max count-1."""
        return dict(width=self.width, init_val=0, min_val=0, max_val=self.count - 1, mask=self.mask)


@dataclasses.dataclass(frozen=True)
class EvFormat:
    fields: tuple[EvField, ...]

    @property
    def total_bits(self) -> int:
        return sum(f.width for f in self.fields)

    @property
    def n_valid(self) -> int:
        return math.prod(f.count for f in self.fields)

    @property
    def pad_mask(self) -> int:
        return (1 << (EV_BITS - self.total_bits)) - 1

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def make_ev(self, plane: int, *choices: int) -> int:
        """The EV of `plane` and one choice per hop field (in path order)."""
        values = (plane, *choices)
        if len(values) != len(self.fields):
            raise UsageError(f"choices = {list(choices)!r}: this fabric's EV has fields {', '.join(self.names)}")
        ev = 0
        for f, v in zip(self.fields, values):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < f.count:
                raise UsageError(f"{f.name} = {v!r}: must be 0..{f.count - 1} ({f.meaning})")
            ev |= int(v) << f.shift
        return ev

    def invalid_reason(self, ev: int) -> str | None:
        """Why `ev` is not a valid EV of this format, or None."""
        if isinstance(ev, bool) or not isinstance(ev, (int, np.integer)) or not 0 <= ev <= 0xFFFFFFFF:
            return "an EV is a 32-bit unsigned value"
        if int(ev) & self.pad_mask:
            return f"padding bits {self.pad_mask:#x} must be zero"
        for f in self.fields:
            v = (int(ev) >> f.shift) & f.mask
            if v >= f.count:
                return f"field {f.name} = {v} is beyond its {f.count} valid values ({f.meaning})"
        return None

    def valid(self, ev: int) -> bool:
        return self.invalid_reason(ev) is None

    def ev_fields(self, ev: int) -> tuple[int, ...]:
        """(plane, choice, ...) of a valid EV."""
        reason = self.invalid_reason(ev)
        if reason:
            raise UsageError(f"ev = {ev!r}: {reason}")
        return tuple((int(ev) >> f.shift) & f.mask for f in self.fields)

    def fields_dict(self, ev: int) -> dict[str, int]:
        return dict(zip(self.names, self.ev_fields(ev)))

    def gen_fields(self) -> list[dict]:
        """GEN EV-profile fields for the controller (zero-width fields omitted), MSB first."""
        return [dict(name=f.name, **f.gen()) for f in self.fields if f.width]

    def fmt_widths(self) -> list[int]:
        """EV-format profile field widths (mrc_ctl_ev_fmt_field.width), MSB first."""
        return [f.width for f in self.fields if f.width]

    def all_evs(self) -> np.ndarray:
        """Every valid EV, ascending (int64)."""
        evs = np.zeros(1, np.int64)
        for f in self.fields:
            evs = (evs[:, None] | (np.arange(f.count, dtype=np.int64) << f.shift)[None, :]).ravel()
        return np.sort(evs)

    def arrays(self) -> tuple:
        """(n_fields, EVF[3] rows of width / count / shift, pad_mask) for compiled code."""
        evf = np.zeros(MAX_FIELDS, EVF)
        evf["count"] = 1
        for i, f in enumerate(self.fields):
            evf[i] = (f.width, f.count, f.shift)
        return len(self.fields), evf, self.pad_mask


def ev_format(spec) -> EvFormat:
    """The EV format of a fabric (see the module docstring)."""
    if spec.tiers == 2:
        parts = [("plane", spec.planes, "NIC port / plane"),
                 ("t1", spec.spines, "the T1 the source T0 goes up to")]
    else:
        half = spec.k // 2
        parts = [("plane", spec.planes, "NIC port / plane"),
                 ("t1", half, "the aggregation uplink of the source edge switch"),
                 ("t2", half, "the core uplink of that aggregation switch")]
    fields, top = [], EV_BITS
    for name, count, meaning in parts:
        width = AD.bits(count)
        top -= width
        fields.append(EvField(name, width, count, top, meaning))
    if top < 0:
        raise ConfigError("topology", spec.name, f"the EV needs {EV_BITS - top} bits; an EV has {EV_BITS}")
    return EvFormat(tuple(fields))


# ---------------------------------------------------------------- SRv6 GEN


def _fixed(name, width, value):
    return dict(name=name, width=width, init_val=value, min_val=0, max_val=0, mask=0)


def srv6_profile(topo, src: int, dst: int) -> dict:
    """SRv6 GEN profile of one (src, dst) pair: format widths and GEN fields.

    Expanding an EV with these fields (mrc_ctl.h GEN algorithm) gives the
    carrier address of that EV's path (`Topology.carrier`); ``uses`` names the
    EV fields the expansion consumes (the others must be zero).
    """
    fmt, a = topo.ev_format, topo
    hpl = topo.hosts_per_leaf
    for name, h in (("src", src), ("dst", dst)):
        if not 0 <= h < topo.n_hosts:
            raise UsageError(f"{name} = {h!r}: hosts are 0..{topo.n_hosts - 1}")
    t0s, t0d = src // hpl, dst // hpl
    plane_f = fmt.fields[0]
    block = dict(name="block", width=32, init_val=AD.BLOCK_BASE, min_val=0, max_val=plane_f.count - 1,
                 mask=plane_f.mask)
    fields = [block, _fixed("t0_src", 16, AD.T0_BASE + t0s)]
    uses = ["plane"]
    if t0s != t0d:
        if topo.tiers == 2:
            f = fmt.fields[1]
            fields.append(dict(name="t1", width=16, init_val=AD.T1_BASE, min_val=0, max_val=f.count - 1,
                               mask=f.mask))
            uses.append("t1")
        else:
            A = a.t1_per_pod
            ft1, ft2 = fmt.fields[1], fmt.fields[2]
            if t0s // A == t0d // A:  # same pod: the aggregation switch (pod, t1)
                fields.append(dict(name="agg", width=16, init_val=AD.AGG_BASE + ((t0s // A) << ft1.width), min_val=0,
                                   max_val=ft1.count - 1, mask=ft1.mask))
                uses.append("t1")
            else:  # the core (t1, t2): its uSID's low bits are t1 << width(t2) | t2, as the EV's
                fields.append(dict(name="core", width=16, init_val=AD.T1_BASE, min_val=0,
                                   max_val=((ft1.count - 1) << ft2.width) | (ft2.count - 1),
                                   mask=(1 << (ft1.width + ft2.width)) - 1))
                uses += ["t1", "t2"]
        fields.append(_fixed("t0_dst", 16, AD.T0_BASE + t0d))
    fields.append(_fixed("host", 16, AD.HOST_BASE + dst % hpl))
    return dict(fmt_widths=[f["width"] for f in fields], fields=fields, uses=uses)
