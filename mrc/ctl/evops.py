"""EV operations and EV events of the controller (``mrc_ctl.h`` EV_OP and EV Event CQs).

A mixin of `mrc.ctl.Controller`. The four operations, on `EvOpEntry` arrays (`modify_ev_profile` /
`query_ev_profile` with EV_OP, or `ev_op`), and one call each for the common case:

- REPLACE_EV (`replace_ev`): the entry holding EV ``ev`` (``MRC_CTL_EV_UNPOPULATED``: an unpopulated one)
  gets ``ev_new`` with ``state`` (GOOD or DENIED); ALL_COPIES: every entry holding ``ev``; else the
  first. The new EV must fit the profile's fields (bits beyond those they pull zero) and name a port of
  the device. Field ranges (min_val / max_val) do not apply: they bound generated EVs only.
- MODIFY_EV_STATE (`modify_ev_state`): GOOD, DENIED or ASSUMED_BAD for every entry holding the EV, on
  every bound QP at once.
- QUERY_EV_STATE (`query_ev_state`): DENIED if denied, ASSUMED_BAD if a bound QP assumes it bad, else GOOD.
- QUERY_EV_ARRAY (`query_ev_array`): the array, in order, as the controller named the EVs.

An EV absent from the array is ENOENT. EV events: every EV Event CQ of the controller receives the
state changes (ASSUMED_BAD, GOOD, as the profile's event mask selects) of every QP bound to its
profiles, naming the EV as the profile holds it.
"""
from __future__ import annotations

from mrc.core import dtypes as D, evset
from mrc.ctl.types import (
    EV_UNPOPULATED, CtlEv, EvEvent, EvEventQueue, EvOp, EvOpArgs, EvOpEntry, EvOpFlags, EvProfileMode, EvState,
    ProfileState, check_int, parse_enum,
)
from mrc.errors import E2BIG, EBUSY, EINVAL, ENOENT, ApiError


class EvOpsMixin:
    # -- the operations on entry arrays -----------------------------------------------------------
    def _run_ev_op(self, profile_id: int, p, args: EvOpArgs, now: int, *, modify: bool) -> None:
        what = f"EV profile {profile_id}"
        if not isinstance(args, EvOpArgs):
            raise EINVAL(f"{what}: ev_op = {args!r} must be an EvOpArgs")
        op = parse_enum(EvOp, args.op, "ev_op.op")
        args.op = op
        if not modify and op in (EvOp.REPLACE_EV, EvOp.MODIFY_EV_STATE):
            raise EINVAL(f"{what}: query_ev_profile takes QUERY_EV_STATE and QUERY_EV_ARRAY only, not {op.name}")
        if p.state == ProfileState.INIT:
            raise EINVAL(f"{what}: EV operations need an EV array (the profile is INIT)")
        if op == EvOp.QUERY_EV_ARRAY:
            n = len(p.entries)
            if args.entry_count is not None and args.entry_count < n:
                args.entry_count = n
                raise E2BIG(f"{what}: QUERY_EV_ARRAY needs room for {n} entries", required=n)
            args.entries = [EvOpEntry(ev=e.ev, state=self._ev_state(p, [k])) for k, e in enumerate(p.entries)]
            args.entry_count = n
            return
        if args.entry_count is not None and args.entry_count != len(args.entries):
            raise EINVAL(f"{what}: entry_count = {args.entry_count!r} but {len(args.entries)} entries given")
        if not args.entries:
            raise EINVAL(f"{what}: {op.name} needs at least one entry")
        for n, e in enumerate(args.entries):
            try:
                if not isinstance(e, EvOpEntry):
                    raise EINVAL(f"entry = {e!r} must be an EvOpEntry")
                if not isinstance(e.ev, CtlEv):
                    raise EINVAL(f"ev = {e.ev!r} must be a CtlEv (value and port)")
                if op == EvOp.REPLACE_EV:
                    self._replace(profile_id, p, e, now)
                elif op == EvOp.MODIFY_EV_STATE:
                    self._set_state(profile_id, p, e, now)
                else:
                    e.state = self._ev_state(p, self._find(profile_id, p, e.ev))
            except ApiError as err:
                raise type(err)(f"{what}: {op.name} entry {n}: {err.message}", entry=n) from None

    def _find(self, profile_id: int, p, ev: CtlEv) -> list[int]:
        idxs = [k for k, e in enumerate(p.entries) if e.ev == ev]
        if not idxs:
            raise ENOENT(f"EV {ev!r} is not in the array of EV profile {profile_id}")
        return idxs

    def _replace(self, profile_id: int, p, e: EvOpEntry, now: int) -> int:
        if p.mode == EvProfileMode.AUTO:
            raise EINVAL("AUTO profiles have no controller-provided EVs (REPLACE_EV)")
        if not isinstance(e.ev_new, CtlEv):
            raise EINVAL(f"REPLACE_EV needs ev_new (a CtlEv), got {e.ev_new!r}")
        state = EvState.GOOD if e.state in (None, 0) else parse_enum(EvState, e.state, "state")
        if state not in (EvState.GOOD, EvState.DENIED):
            raise EINVAL(f"REPLACE_EV: state {state.name}: a new EV is GOOD or DENIED")
        flags = check_int("flags", e.flags, 0, (1 << 32) - 1)
        if flags & ~int(EvOpFlags.ALL_COPIES):
            raise EINVAL(f"flags = {flags:#x}: only ALL_COPIES is defined")
        idxs = self._find(profile_id, p, e.ev)
        if not flags & EvOpFlags.ALL_COPIES:
            idxs = idxs[:1]
        if e.ev_new.unpopulated and p.state != ProfileState.OFFLINE:
            raise EINVAL("REPLACE_EV with MRC_CTL_EV_UNPOPULATED needs an OFFLINE profile (an ONLINE array is full)")
        entry = self._entry(p, e.ev_new, state)
        for k in idxs:  # a bound QP's EV set is grouped by plane: its EVs cannot change port under it
            old = p.entries[k]
            if p.qps and not old.ev.unpopulated and old.ev.port != e.ev_new.port:
                raise EBUSY(f"cannot move EV {old.ev!r} from port {old.ev.port} to {e.ev_new.port} while "
                            f"{len(p.qps)} QP(s) use the profile (take them to RESET first)")
        for k in idxs:
            p.entries[k] = entry
            if p.qps:
                self._push_entry(p, k, now)
        if not e.ev_new.unpopulated and any(x.ev == e.ev_new and x.admin != state for x in p.entries):
            self._set_state(profile_id, p, EvOpEntry(e.ev_new, state=state), now)  # one state per EV, every copy
        return len(idxs)

    def _set_state(self, profile_id: int, p, e: EvOpEntry, now: int) -> None:
        if e.state is None:
            raise EINVAL("MODIFY_EV_STATE needs state")
        st = parse_enum(EvState, e.state, "state")
        if st not in (EvState.GOOD, EvState.DENIED, EvState.ASSUMED_BAD):
            raise EINVAL(f"MODIFY_EV_STATE: state {st.name} cannot be set (GOOD, ASSUMED_BAD or DENIED)")
        if e.ev.unpopulated:
            raise EINVAL("MODIFY_EV_STATE: an unpopulated entry has no state")
        idxs = self._find(profile_id, p, e.ev)
        for k in idxs:
            old = p.entries[k]
            p.entries[k] = type(old)(old.ev, old.value, old.expanded, EvState.DENIED if st == EvState.DENIED else EvState.GOOD)
        inp = {EvState.GOOD: D.EVI_CTL_GOOD, EvState.DENIED: D.EVI_CTL_DENY, EvState.ASSUMED_BAD: D.EVI_CTL_BAD}[st]
        T = self.device.T
        for qp, order in p.slots.items():
            for slot, k in enumerate(order):
                if k in idxs:
                    evset.ev_input(T, qp.index, slot, inp, now)
        self.device._drain()

    def _ev_state(self, p, idxs: list[int]) -> EvState:
        """Profile-level state of the entries `idxs` (one EV): DENIED, ASSUMED_BAD on some bound QP, or GOOD
        (UNKNOWN for an unpopulated entry)."""
        first = p.entries[idxs[0]]
        if first.ev.unpopulated:
            return EvState.UNKNOWN
        if first.admin == EvState.DENIED:
            return EvState.DENIED
        T = self.device.T
        for qp, order in p.slots.items():
            row = int(T.qp[qp.index]["ev_row"])
            for slot, k in enumerate(order):
                if k in idxs and T.ev[row, slot]["state"] == D.EV_ASSUMED_BAD:
                    return EvState.ASSUMED_BAD
        return EvState.GOOD

    # -- one operation per call ----------------------------------------------------------------------
    def ev_op(self, profile_id: int, op, entries: list[EvOpEntry] | None = None, now: int = 0) -> list[EvOpEntry]:
        """One EV operation over `entries` (``ev_op`` of `modify_ev_profile`): returns the entries, outputs filled
        (QUERY_EV_STATE: each state; QUERY_EV_ARRAY: the array)."""
        p = self._ev_profile_of(profile_id)
        args = EvOpArgs(parse_enum(EvOp, op, "ev_op.op"), list(entries or []))
        self._run_ev_op(profile_id, p, args, now, modify=True)
        return args.entries

    def replace_ev(self, profile_id: int, ev: CtlEv, new_ev: CtlEv, *, state=EvState.GOOD, all_copies: bool = False,
                   now: int = 0) -> int:
        """REPLACE_EV of one EV: `new_ev` in place of `ev` (``MRC_CTL_EV_UNPOPULATED`` / `mrc.ctl.EV_UNPOPULATED`:
        the first unpopulated entry; `all_copies`: every entry holding `ev`); returns the entries replaced."""
        p = self._ev_profile_of(profile_id)
        entry = EvOpEntry(ev, new_ev, state, int(EvOpFlags.ALL_COPIES) if all_copies else 0)
        if not isinstance(ev, CtlEv):
            raise EINVAL(f"replace_ev: ev = {ev!r} must be a CtlEv (EV_UNPOPULATED for an unpopulated entry)")
        if p.state == ProfileState.INIT:
            raise EINVAL(f"EV profile {profile_id}: REPLACE_EV needs an EV array (the profile is INIT)")
        n = self._replace(profile_id, p, entry, now)
        return n

    def modify_ev_state(self, profile_id: int, ev: CtlEv, state, now: int = 0) -> None:
        """MODIFY_EV_STATE of one EV: DENIED (never used again until GOOD), GOOD or ASSUMED_BAD, on every QP."""
        self.ev_op(profile_id, EvOp.MODIFY_EV_STATE, [EvOpEntry(ev, state=state)], now=now)

    def query_ev_state(self, profile_id: int, ev: CtlEv) -> EvState:
        """QUERY_EV_STATE of one EV."""
        return self.ev_op(profile_id, EvOp.QUERY_EV_STATE, [EvOpEntry(ev)])[0].state

    def query_ev_array(self, profile_id: int) -> list[CtlEv]:
        """QUERY_EV_ARRAY: the profile's EVs in array order (unpopulated entries are ``EV_UNPOPULATED``)."""
        return [e.ev for e in self.ev_op(profile_id, EvOp.QUERY_EV_ARRAY)]

    def ev_table(self, profile_id: int) -> list[dict]:
        """The array with what each EV became (ours, for inspection): ``ev`` (`CtlEv`), ``value`` (the 32-bit
        EV the packets carry, None if unpopulated), ``expanded`` (the wire bits: concatenated format fields;
        SRv6: the address bits), ``port``, ``state`` (as QUERY_EV_STATE; "UNPOPULATED")."""
        p = self._ev_profile_of(profile_id)
        return [{"ev": e.ev, "value": e.value, "expanded": e.expanded, "port": e.ev.port,
                 "state": "UNPOPULATED" if e.ev.unpopulated else self._ev_state(p, [k]).name}
                for k, e in enumerate(p.entries)]

    def ev_of(self, profile_id: int, value: int, port: int | None = None) -> CtlEv:
        """The EV of profile `profile_id` whose packets carry the 32-bit `value` (on `port`, when given): from
        what a capture shows to the name the controller uses (ENOENT if none)."""
        p = self._ev_profile_of(profile_id)
        for e in p.entries:
            if e.value == value and (port is None or e.ev.port == port):
                return e.ev
        raise ENOENT(f"EV profile {profile_id}: no EV carries value {value:#x}"
                     + ("" if port is None else f" on port {port}"))

    def _slot_evs(self, qp) -> list:
        """The `CtlEv` of each of `qp`'s EV slots (its profile's entries in slot order)."""
        p = self._evps.get(qp.ev_profile_id)
        order = p.slots.get(qp) if p is not None else None
        return [] if order is None else [p.entries[k].ev for k in order]

    # -- EV events ----------------------------------------------------------------------------------
    def create_ev_event_cq(self, cqe: int = 1024, cq_context=None, channel=None, comp_vector: int = 0) -> EvEventQueue:
        """``mrc_ctl_create_ev_event_cq``: an EV Event CQ of `cqe` entries receiving the EV events of every QP
        bound to this controller's profiles (poll with ``poll`` / `poll_ev_event`; destroy with ``destroy``)."""
        q = EvEventQueue(self.device, cqe, cq_context, channel, comp_vector)
        self._ev_cqs.append(q)
        return q

    @staticmethod
    def poll_ev_event(ev_cq: EvEventQueue, num_entries: int = 16) -> list[EvEvent]:
        """``mrc_ctl_poll_ev_event``: up to `num_entries` events of `ev_cq`, oldest first."""
        if not isinstance(ev_cq, EvEventQueue):
            raise EINVAL(f"poll_ev_event: ev_cq = {ev_cq!r} is not an EV event CQ (create_ev_event_cq)")
        return ev_cq.poll(num_entries)

    def _on_ev_event(self, qp, e) -> None:
        state = EvState.ASSUMED_BAD if int(e["ev_state"]) == D.EV_ASSUMED_BAD else EvState.GOOD
        p = self._evps.get(qp.ev_profile_id)
        order = p.slots.get(qp) if p is not None else None
        slot = int(e["value"])
        ev = p.entries[order[slot]].ev if order is not None and 0 <= slot < len(order) else EV_UNPOPULATED
        event = EvEvent(qp.ev_profile_id, ev, 0, state, qp.qp_num, int(e["ev"]), int(e["drop_count"]), int(e["time"]))
        for cq in self._ev_cqs:
            cq._push(event)
        if state == EvState.ASSUMED_BAD:
            self._probe_ev(qp, e)

    def _ev_events_lost(self, n: int) -> None:
        """`n` EV events were dropped inside the device (the core's full event table): every EV event CQ counts
        them into the drop_count of its next event."""
        for cq in self._ev_cqs:
            cq._lost(n)
