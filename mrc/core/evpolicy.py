"""EV selection policies: which EV the next data packet (or reliability probe) takes.

The one interface between the core and every policy. The rest of the core
calls only these entry points:

- `select_ev(T, i, port_mask, now)`: the EV slot for QP `i`'s next data packet
  or reliability probe, on a plane in `port_mask` (the NIC ports with room),
  or -1 (nothing usable there now: the packet waits).
- `on_feedback(T, i, slot, kind, value, now)`: evidence about EV `slot` from
  the peer's acknowledgements and the QP's timers, nothing else (`dtypes.FB_*`):
  FB_SACK (a SACK or probe answer reflected the EV; value: its M field),
  FB_ACKED (a SACK newly acknowledged a PSN sent on it; value: M; only to
  policies with TAKES_ACKED, one call per PSN), FB_NACK (value: the reason),
  FB_LOSS (RACK, or an unanswered reverse probe) and FB_TIMEOUT (the
  retransmission timeout).
- `next_ev_hint(T, i, plane)`: (EV slot, ``ev_order`` index) that the next
  `select_ev` on `plane` will most likely read first, -1 for unknown. It changes
  nothing and draws no random number, so a caller may use it for prefetching
  without changing what the QP does (`mrc.emulator.transports.mrcqp`).
- `start(T, i)`: reset every policy's state (requester start), so a QP may
  change policy later.

Registry. A policy is one module (`mrc.core.evp.*`) defining ``NAME``,
``PATH_HEALTH`` (whether its feedback moves EV states; documentation and the
test harness), ``TAKES_ACKED``, and the compiled functions ``start``,
``select``, ``feedback`` and ``hint`` with the signatures above. `REGISTRY` lists
the modules, one line each; a QP's ``ev_policy`` is its policy's position there
(names are accepted wherever a code is: `setup.ev_policy_code`).

Why slots: numba calls a function chosen at run time only through first-class
function objects, which cannot be cached (``cache=True``) and would cost an
indirect call per packet. So each entry point is a fixed chain of
`MAX_POLICIES` branches on the policy code, and each branch calls a module-level
name (``_SELECT3``, ...) bound here, at import, to the registered module's
function (or to a no-op when the slot is free). numba resolves those names when
it compiles, so the dispatch costs one comparison for MRC (code 0, always first)
and a few for the others. The compile cache is keyed by every source file
(`mrc._jit`), so adding a registry line recompiles the dispatch. More than
`MAX_POLICIES` policies means adding branches here.

Every policy respects the planes (`evset.plane_mask`: local port up, the peer's
port up) and the NIC's ``port_mask``. Random choices come from the QP's own
seeded generator (`rng`), so runs are reproducible. The built-in policies are
tabled in docs/protocol.md; ``P2C`` is the worked example of "Adding an EV policy".
"""
from __future__ import annotations

import importlib

import numpy as np

from numpy import int64 as i64

from mrc._jit import njit_core

# One line per policy; a policy's code is its position (MRC must stay first: it is the default
# and the fast path of `select_ev`).
REGISTRY = (
    "mrc.core.evp.mrc",
    "mrc.core.evp.one",
    "mrc.core.evp.oblivious",
    "mrc.core.evp.reps",
    "mrc.core.evp.p2c",  # extension: the worked example (docs/protocol.md "Adding an EV policy")
)
MAX_POLICIES = 8
INTERFACE = ("NAME", "PATH_HEALTH", "TAKES_ACKED", "start", "select", "feedback", "hint")


def _load(registry):
    mods = tuple(importlib.import_module(m) for m in registry)
    if not 0 < len(mods) <= MAX_POLICIES:
        raise ValueError(f"evpolicy.REGISTRY: {len(mods)} policies, 1 to {MAX_POLICIES} fit the dispatch")
    for m in mods:
        missing = [a for a in INTERFACE if not hasattr(m, a)]
        if missing:
            raise ValueError(f"EV policy module {m.__name__} lacks {', '.join(missing)} (evpolicy.INTERFACE)")
    names = [m.NAME for m in mods]
    for n in names:
        if not isinstance(n, str) or not n.isidentifier() or n != n.upper() or names.count(n) > 1:
            raise ValueError(f"EV policy NAME {n!r}: must be a unique upper-case identifier")
    if names[0] != "MRC":
        raise ValueError("evpolicy.REGISTRY: MRC must stay first (code 0, the default)")
    return mods


POLICIES = _load(REGISTRY)
NAMES = tuple(m.NAME for m in POLICIES)
CODE = {n: k for k, n in enumerate(NAMES)}
EVP_MRC, EVP_ONE, EVP_OBLIVIOUS, EVP_REPS = (CODE[n] for n in ("MRC", "ONE", "OBLIVIOUS", "REPS"))
PATH_HEALTH = tuple(bool(m.PATH_HEALTH) for m in POLICIES)
TAKES_ACKED = np.array([bool(m.TAKES_ACKED) for m in POLICIES] + [False] * (MAX_POLICIES - len(POLICIES)),
                       dtype=np.uint8)


@njit_core
def _free_start(T, i):
    return


@njit_core
def _free_select(T, i, port_mask, now):
    return -1


@njit_core
def _free_feedback(T, i, slot, kind, value, now):
    return


@njit_core
def _free_hint(T, i, plane):
    return i64(-1), i64(-1)


_FREE = {"start": _free_start, "select": _free_select, "feedback": _free_feedback, "hint": _free_hint}


def _slots(fn):
    return tuple(getattr(POLICIES[k], fn) if k < len(POLICIES) else _FREE[fn] for k in range(MAX_POLICIES))


_START0, _START1, _START2, _START3, _START4, _START5, _START6, _START7 = _slots("start")
_SELECT0, _SELECT1, _SELECT2, _SELECT3, _SELECT4, _SELECT5, _SELECT6, _SELECT7 = _slots("select")
_FEEDBACK0, _FEEDBACK1, _FEEDBACK2, _FEEDBACK3, _FEEDBACK4, _FEEDBACK5, _FEEDBACK6, _FEEDBACK7 = _slots("feedback")
_HINT0, _HINT1, _HINT2, _HINT3, _HINT4, _HINT5, _HINT6, _HINT7 = _slots("hint")


@njit_core
def start(T, i):
    """Reset every policy's state (requester start)."""
    _START0(T, i)
    _START1(T, i)
    _START2(T, i)
    _START3(T, i)
    _START4(T, i)
    _START5(T, i)
    _START6(T, i)
    _START7(T, i)


@njit_core(inline="always")
def select_ev(T, i, port_mask, now):
    """The EV slot for QP `i`'s next data packet or probe on a plane in `port_mask`, or -1."""
    if T.qp[i]["ev_policy"] == 0:
        return _SELECT0(T, i, port_mask, now)
    return _select_other(T, i, port_mask, now)


@njit_core
def _select_other(T, i, port_mask, now):
    pol = T.qp[i]["ev_policy"]
    if pol == 1:
        return _SELECT1(T, i, port_mask, now)
    if pol == 2:
        return _SELECT2(T, i, port_mask, now)
    if pol == 3:
        return _SELECT3(T, i, port_mask, now)
    if pol == 4:
        return _SELECT4(T, i, port_mask, now)
    if pol == 5:
        return _SELECT5(T, i, port_mask, now)
    if pol == 6:
        return _SELECT6(T, i, port_mask, now)
    if pol == 7:
        return _SELECT7(T, i, port_mask, now)
    return -1


@njit_core(inline="always")
def takes_acked(T, i):
    """Whether QP `i`'s policy wants one FB_ACKED per newly acknowledged PSN."""
    return TAKES_ACKED[T.qp[i]["ev_policy"]] != 0


@njit_core(inline="always")
def on_feedback(T, i, slot, kind, value, now):
    """Evidence `kind` (``FB_*``, with its `value`) about EV `slot` of QP `i`, to its policy."""
    pol = T.qp[i]["ev_policy"]
    _on_feedback(T, i, pol, i64(slot), i64(kind), i64(value), now)


@njit_core
def _on_feedback(T, i, pol, slot, kind, value, now):
    if pol == 0:
        _FEEDBACK0(T, i, slot, kind, value, now)
    elif pol == 1:
        _FEEDBACK1(T, i, slot, kind, value, now)
    elif pol == 2:
        _FEEDBACK2(T, i, slot, kind, value, now)
    elif pol == 3:
        _FEEDBACK3(T, i, slot, kind, value, now)
    elif pol == 4:
        _FEEDBACK4(T, i, slot, kind, value, now)
    elif pol == 5:
        _FEEDBACK5(T, i, slot, kind, value, now)
    elif pol == 6:
        _FEEDBACK6(T, i, slot, kind, value, now)
    elif pol == 7:
        _FEEDBACK7(T, i, slot, kind, value, now)


@njit_core(inline="always")
def next_ev_hint(T, i, plane):
    """(EV slot, ``ev_order`` index) the next `select_ev` on `plane` most likely reads first; -1:
    unknown. Reads only."""
    if T.qp[i]["ev_policy"] == 0:
        return _HINT0(T, i, plane)
    return _hint_other(T, i, plane)


@njit_core
def _hint_other(T, i, plane):
    pol = T.qp[i]["ev_policy"]
    if pol == 1:
        return _HINT1(T, i, plane)
    if pol == 2:
        return _HINT2(T, i, plane)
    if pol == 3:
        return _HINT3(T, i, plane)
    if pol == 4:
        return _HINT4(T, i, plane)
    if pol == 5:
        return _HINT5(T, i, plane)
    if pol == 6:
        return _HINT6(T, i, plane)
    if pol == 7:
        return _HINT7(T, i, plane)
    return i64(-1), i64(-1)
