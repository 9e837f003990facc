"""The DSCP table: which IP DSCP code point carries which MRC traffic class.

MRC 1.0 names the classes (mrc-public-notes 2.6: DSCP_TRIMMABLE, DSCP_NO_TRIM,
DSCP_TRIMMABLE_RETX for data; DSCP_CONTROL, DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP
for control) but its values are not public; the defaults are the third-party
MRC emulator's (EMU) and every one is a parameter. On decode the table sets
`PKT.trim` from the DSCP; the trimming function uses it to re-mark packets.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from mrc.errors import ConfigError
from mrc.wire import constants as C
from mrc.wire.constants import DscpClass, Trim


@dataclasses.dataclass(frozen=True)
class DscpTable:
    """DSCP code point of each traffic class. Values 0..63, all different."""

    data: int = C.DSCP_TRIMMABLE
    retx: int = C.DSCP_TRIMMABLE_RETX
    control: int = C.DSCP_CONTROL
    trimmed: int = C.DSCP_TRIMMED
    trimmed_lasthop: int = C.DSCP_TRIMMED_LASTHOP
    no_trim: int = C.DSCP_NO_TRIM

    def __post_init__(self):
        seen: dict[int, str] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 0 <= v <= 63:
                raise ConfigError(f"dscp.{f.name}", v, "a DSCP code point is an integer 0..63")
            if v in seen:
                raise ConfigError(f"dscp.{f.name}", v, f"same code point as dscp.{seen[v]}")
            seen[int(v)] = f.name

    @classmethod
    def from_dict(cls, d: dict) -> "DscpTable":
        """A table from a mapping of its field names (TOML), refusing unknown keys."""
        names = {f.name for f in dataclasses.fields(cls)}
        for k in d:
            if k not in names:
                raise ConfigError(f"dscp.{k}", d[k], f"unknown class; known: {sorted(names)}")
        return cls(**d)

    def dscp_of(self, cls: DscpClass) -> int:
        """The DSCP value that marks traffic class `cls`."""
        return {
            DscpClass.DATA: self.data,
            DscpClass.RETX: self.retx,
            DscpClass.CONTROL: self.control,
            DscpClass.TRIMMED: self.trimmed,
            DscpClass.TRIMMED_LASTHOP: self.trimmed_lasthop,
            DscpClass.NO_TRIM: self.no_trim,
        }[DscpClass(cls)]

    def class_of(self, dscp: int) -> DscpClass:
        """The traffic class a received DSCP value means."""
        return DscpClass(int(self.classes[dscp]))

    def trim_of(self, dscp: int) -> Trim:
        """Whether a packet with this DSCP was trimmed (and where)."""
        cls = self.class_of(dscp)
        if cls == DscpClass.TRIMMED:
            return Trim.TRIMMED
        if cls == DscpClass.TRIMMED_LASTHOP:
            return Trim.TRIMMED_LASTHOP
        return Trim.NONE

    def trimmable(self, dscp: int) -> bool:
        """Whether a switch may trim a packet with this DSCP (data and retransmission classes)."""
        return self.class_of(dscp) in (DscpClass.DATA, DscpClass.RETX)

    @property
    def classes(self) -> np.ndarray:
        """uint8[64]: DSCP -> `DscpClass` (UNKNOWN for unnamed code points), for compiled code.

        One read-only array per set of code points, shared by every table with those values: a copied
        or unpickled table (a deep-copied config, a Dask worker's) gives the same read-only array, so
        every decode passes the same array type and numba compiles the decoder once.
        """
        return _classes(self.data, self.retx, self.control, self.trimmed, self.trimmed_lasthop, self.no_trim)


@functools.lru_cache(maxsize=64)
def _classes(data: int, retx: int, control: int, trimmed: int, trimmed_lasthop: int, no_trim: int) -> np.ndarray:
    a = np.full(64, int(DscpClass.UNKNOWN), dtype=np.uint8)
    for cls, v in ((DscpClass.DATA, data), (DscpClass.RETX, retx), (DscpClass.CONTROL, control),
                   (DscpClass.TRIMMED, trimmed), (DscpClass.TRIMMED_LASTHOP, trimmed_lasthop),
                   (DscpClass.NO_TRIM, no_trim)):
        a[int(v)] = int(cls)
    a.flags.writeable = False
    return a


DEFAULT_DSCP = DscpTable()
