"""The controller API, in the spirit of OCP ``mrc_ctl.h``: one privileged controller per node.

`Controller` (``device.ctl``) manages three kinds of profile, each with the
state machine INIT -> OFFLINE -> ONLINE -> OFFLINE -> INIT (entering INIT
clears the profile's configuration):

- EV format profiles: mode (STEV / SRv6 / UDP) and field widths. To OFFLINE:
  MODE; to ONLINE: MODIFY_FIELDS (which the same call as INIT -> OFFLINE may
  carry, as the OCP examples do). Refused while ONLINE EV profiles use it.
- EV profiles: mode AUTO / EXP / GEN, format, ``ev_count``,
  ``ev_min_active``, event mask, fields (`mrc.ctl.ev_fields.EvField`) and the
  EV array. To OFFLINE: MODE, COUNT (and FMT_ID and fields unless AUTO); to
  ONLINE: MIN_ACTIVE, EVENT_MASK, and for EXP every entry populated by
  REPLACE_EV. While ONLINE only STATE, EVENT_MASK and the EV operations
  REPLACE_EV (MODIFY_ONLINE is advertised), MODIFY_EV_STATE,
  QUERY_EV_STATE, QUERY_EV_ARRAY are accepted. Changing MODE, FMT_ID or the
  fields while OFFLINE rebuilds the array (an explicit array becomes
  unpopulated again); changing COUNT resizes it.
- CC profiles: algorithm ("uet-1.0-nscc" or None / "none") and its config
  (``mrc_ctl_cc_nscc_cfg`` fields, times in ns). CONFIG may change while
  ONLINE (MODIFY_ONLINE is advertised): bound QPs see the new row at once.

EV values: the controller works with *raw* EVs, held MSB-first in a
container (``mrc_ctl_ev_t``) and expands them with the profile's fields: a
32-bit container for STEV, 16-bit for UDP; for SRv6 a 32-bit container when
the fields pull at most 32 bits (a compact EV, as `mrc.fabric` builds them),
else the whole 256-bit ``mrc_ctl_ev_t`` (the OCP ``ev_expansion`` example's
explicit SRv6 and SRv6+SRH profiles pull 64 and 128 bits). A raw EV is an
int (the container as a big-endian number) or bytes (the container's leading
bytes). The 32-bit value the core and the wire's ``entropy`` field carry is
the expanded value for STEV and UDP (at most 32 bits), the raw EV for
compact SRv6, and the entry's index in the profile array for wider SRv6
(an earlier mrc_ctl.h revision: the UDP source port holds "the EV index,
from the EV profile, of the SRv6 EV entry"); an SRv6 expansion is the uSID
address (and SRH segment). EVs are unique within a profile: the core and
SACK reflection identify a path by that value, and EV operations name an EV
by it.

It also delivers EV events (transitions to ASSUMED_BAD and GOOD, with drop
counts; the event queue never overruns: surplus events are counted and the
count rides on the next delivered event), sends endpoint requests (EV probes
with their RTT; port status updates, sent again until answered; optionally,
`Controller.set_ev_probing`, probes of every EV that becomes ASSUMED_BAD) and
answers those of peers. That endpoint protocol is `mrc.core.ctlproto`, the
compiled functions the emulator's controllers run too; requests that fail its
checks are dropped unanswered and counted (``counters["ep_rejected"]``).

Profiles are bound to a QP at RESET -> INIT (`QueuePair.modify("INIT",
ev_profile_id=..., cc_profile_id=...)`) and released when the QP returns to
RESET or is destroyed; a profile with bound QPs cannot leave ONLINE (EBUSY).
Each QP keeps its own copy of the EV states; controller state changes
(DENIED, GOOD) reach every QP using the profile at once.

Layout (the package `mrc.ctl`): profiles and binding in `controller`; EV
operations and EV events in `evops`, endpoint requests and ports in
`endpoint` (mixins of `Controller`), the types in `types` (re-exported here),
the fault localisation in `localizer` (`mrc.ctl.localize`, `mrc.ctl.Localizer`).
"""
from __future__ import annotations

from mrc.ctl.controller import Controller
from mrc.ctl.types import (
    AUTO_EV_COUNT, CC_ALGORITHMS, CC_NS_KEYS, EV_MAX_BYTES, CcProfile, EpBatch, EpRequest, EpResponse, EvEvent,
    EvEventQueue, EvFormatProfile, EvOpEntry, EvProfile, EvProfileMode, EvState, ProfileState,
)
from mrc.ctl.ev_fields import EvField

__all__ = ["Controller", "AUTO_EV_COUNT", "CC_ALGORITHMS", "CC_NS_KEYS", "EV_MAX_BYTES", "CcProfile", "EpBatch", "EpRequest",
           "EpResponse", "EvEvent", "EvEventQueue", "EvField", "EvFormatProfile", "EvOpEntry", "EvProfile",
           "EvProfileMode", "EvState", "ProfileState"]


def __getattr__(name):
    """``mrc.ctl.localize`` / ``mrc.ctl.Localizer``: the controller's fault localisation (`mrc.ctl.localizer`),
    loaded on first use (it needs `mrc.fabric`)."""
    if name in ("localize", "Localizer", "Verdict", "Suspect"):
        from mrc.ctl import localizer

        return getattr(localizer, name)
    raise AttributeError(f"module 'mrc.ctl' has no attribute {name!r}")
