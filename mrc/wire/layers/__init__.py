"""scapy layers of every MRC header (importing this module imports scapy).

One class per header, fields in wire order under the spec's names, reserved
bits named ``resv*``. BTH computes the ICRC in ``post_build`` when ``icrc`` is
None (an explicit value wins, to craft bad packets). Which header follows
which is decided by `mrc.wire.layout` (opcode, and BTH ``ts`` for TSETH), the
same table the compiled codec uses. `build` / `parse` convert between scapy
packets and `PKT` / `NET` rows.

    >>> from mrc.wire.layers import BTH, METH, RETH
"""
from mrc.wire.layers.endpoint import EETH, ERTH
from mrc.wire.layers.reliability import CC_STATE, NETH, PETH, SETH
from mrc.wire.layers.transport import AETH, BTH, CNP, METH, RETH, TSETH, AtomicAckETH, AtomicETH, ImmDt
from mrc.wire.layers.convert import build, parse

__all__ = [
    "BTH", "METH", "TSETH", "RETH", "ImmDt", "AETH", "AtomicETH", "AtomicAckETH", "CNP",
    "SETH", "CC_STATE", "NETH", "PETH", "ERTH", "EETH", "build", "parse",
]
