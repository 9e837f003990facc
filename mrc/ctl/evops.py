"""EV operations and EV events of the controller (`mrc_ctl.h` EV_OP and EV Event CQs).

A mixin of `mrc.ctl.Controller`: REPLACE_EV, MODIFY_EV_STATE, QUERY_EV_STATE,
QUERY_EV_ARRAY (one at a time or batched with `ev_op`), and the EV Event
queues that receive the core's EV state changes.
"""
from __future__ import annotations

import numpy as np

from mrc.ctl import ev_fields
from mrc.core import dtypes as D, evset
from mrc.ctl.types import EvEvent, EvEventQueue, EvOpEntry, EvProfile, EvProfileMode, EvState, ProfileState, parse_enum
from mrc.errors import ConfigError, UsageError


class EvOpsMixin:
    def replace_ev(self, profile_id: int, ev: int | None, new_ev: int, port: int, *, index: int | None = None,
                   all_copies: bool = False, state: EvState | str = EvState.GOOD) -> int:
        """REPLACE_EV: put `new_ev` (a raw EV, expanded with the profile's fields) on `port` in place of
        the entry whose EV is `ev` (``ev=None``: the first unpopulated entry; `index`: that entry).

        A raw EV outside a field's [min_val, max_val] is accepted and DENIED. EVs stay unique in the
        array, so `all_copies` can only matter for unpopulated entries and is refused there when it
        would duplicate the EV. On an ONLINE profile the bound QPs switch to the new EV at once (same
        port only: moving a path to another plane under running QPs is refused). Returns entries replaced.
        """
        what = f"EV profile {profile_id}"
        p = self._get(self._evps, profile_id, "EV profile")
        if p.mode == EvProfileMode.AUTO:
            raise UsageError(f"{what}: AUTO profiles have no controller-provided EVs")
        if p.state == ProfileState.INIT:
            raise UsageError(f"{what}: REPLACE_EV needs OFFLINE (or ONLINE with MODIFY_ONLINE)")
        self._check_port(port)
        st = parse_enum(EvState, state, "replace_ev.state")
        if st not in (EvState.GOOD, EvState.DENIED):
            raise UsageError(f"{what}: REPLACE_EV state must be GOOD or DENIED, not {st.name}")
        bits = self._container_bits(p)
        new_ev = self._raw_int(p, new_ev)
        if not isinstance(new_ev, (int, np.integer)) or isinstance(new_ev, bool) or not 0 <= new_ev < 1 << bits:
            raise UsageError(f"{what}: EV {new_ev!r} is not a {bits}-bit raw EV")
        new_ev = int(new_ev)
        if index is not None:
            if not 0 <= index < p.count:
                raise UsageError(f"{what}: index {index} outside [0, {p.count})")
            idxs = [index]
        else:
            idxs = [k for k, v in enumerate(p.values) if v == ev]
        if not idxs:
            raise UsageError(f"{what}: EV {'UNPOPULATED' if ev is None else hex(ev)} not found (ENOENT)")
        try:
            value, expanded = self._expand(p, new_ev, idxs[0])
        except ConfigError as e:
            raise UsageError(f"{what}: EV {new_ev:#x} does not fit the profile's fields: {e.problem}") from None
        if not all_copies:
            idxs = idxs[:1]
        elif len(idxs) > 1:
            raise UsageError(f"{what}: all_copies would put EV {value:#x} in {len(idxs)} entries (EVs must be unique)")
        if any(r == new_ev for k, r in enumerate(p.raws) if k not in idxs):
            raise UsageError(f"{what}: EV {value:#x} (raw {new_ev:#x}) is already in the array (EVs must be unique)")
        admin = st if ev_fields.in_range(new_ev, bits, p.fields) else EvState.DENIED
        for k in idxs:
            old = p.values[k]
            if p.qps and old is not None and port != p.ports[k]:
                raise UsageError(f"{what}: cannot move EV {old:#x} from port {p.ports[k]} to {port} while "
                                 f"{len(p.qps)} QP(s) use the profile (take them to RESET first)")
        for k in idxs:
            old = p.values[k]
            p.raws[k], p.values[k], p.expanded[k], p.ports[k], p.admin[k] = new_ev, value, expanded, port, admin
            if old is not None:
                self._replace_in_qps(p, old, value, admin)
        self.device._drain()
        return len(idxs)

    def _replace_in_qps(self, p: EvProfile, old: int, value: int, admin: EvState) -> None:
        """Every bound QP's copy of the EV becomes the new path: fresh counters, GOOD (or DENIED)."""
        T = self.device.T
        for qp in p.qps:
            slot = evset.find_slot(T, qp.index, old)
            if slot < 0:
                continue
            e = T.ev[int(T.qp[qp.index]["ev_row"]), slot]
            e["ev"] = value
            for name in ("tx_pkts", "losses", "ecn_marks", "trims", "last_rtt", "probe_ok", "probe_outstanding"):
                e[name] = 0
            e["state"] = D.EV_DENIED if admin == EvState.DENIED else D.EV_GOOD
            e["active"] = 0
            evset.rebalance(T, qp.index)

    def modify_ev_state(self, profile_id: int, ev: int, state: EvState | str, now: int = 0) -> None:
        """MODIFY_EV_STATE: DENIED (never used again until GOOD), GOOD or ASSUMED_BAD, on every QP using the profile."""
        p = self._get(self._evps, profile_id, "EV profile")
        st = parse_enum(EvState, state, "ev_state")
        if st not in (EvState.GOOD, EvState.DENIED, EvState.ASSUMED_BAD):
            raise UsageError(f"modify_ev_state: state {st.name} cannot be set (GOOD, ASSUMED_BAD or DENIED)")
        idxs = [k for k, v in enumerate(p.values) if v == ev and v is not None]
        if not idxs:
            raise UsageError(f"EV profile {profile_id}: EV {ev!r} not found (ENOENT)")
        for k in idxs:
            p.admin[k] = EvState.DENIED if st == EvState.DENIED else EvState.GOOD
        inp = {EvState.GOOD: D.EVI_CTL_GOOD, EvState.DENIED: D.EVI_CTL_DENY, EvState.ASSUMED_BAD: D.EVI_CTL_BAD}[st]
        T = self.device.T
        for qp in p.qps:
            slot = evset.find_slot(T, qp.index, ev)
            if slot >= 0:
                evset.ev_input(T, qp.index, slot, inp, now)
        self.device._drain()

    def query_ev_state(self, profile_id: int, ev: int) -> EvState:
        """Profile-level state: DENIED if denied, ASSUMED_BAD if any QP currently assumes it bad, else GOOD."""
        p = self._get(self._evps, profile_id, "EV profile")
        idxs = [k for k, v in enumerate(p.values) if v == ev and v is not None]
        if not idxs:
            raise UsageError(f"EV profile {profile_id}: EV {ev!r} not found (ENOENT)")
        if p.admin[idxs[0]] == EvState.DENIED:
            return EvState.DENIED
        T = self.device.T
        for qp in p.qps:
            slot = evset.find_slot(T, qp.index, ev)
            if slot >= 0 and T.ev[int(T.qp[qp.index]["ev_row"]), slot]["state"] == D.EV_ASSUMED_BAD:
                return EvState.ASSUMED_BAD
        return EvState.GOOD

    def query_ev_array(self, profile_id: int) -> list[dict]:
        """QUERY_EV_ARRAY: every entry's EV (the value the core carries), raw EV, wire expansion, port, state."""
        p = self._get(self._evps, profile_id, "EV profile")
        return [{"ev": v, "raw": r, "expanded": x, "port": pt,
                 "state": self.query_ev_state(profile_id, v).name if v is not None else "UNPOPULATED"}
                for r, v, x, pt in zip(p.raws, p.values, p.expanded, p.ports)]

    def ev_op(self, profile_id: int, op: str, entries: list[EvOpEntry] | None = None, now: int = 0) -> list:
        """A batch of EV operations (mrc_ctl.h ``ev_op``: one op, an array of entries).

        `op` is REPLACE_EV, MODIFY_EV_STATE, QUERY_EV_STATE or QUERY_EV_ARRAY. Entries apply
        in order; the first failing entry raises `UsageError` naming its index, and the entries
        before it stay applied (mrc_ctl.h: "partial success is possible"). Returns one result
        per entry (REPLACE_EV: entries replaced; MODIFY_EV_STATE: None; QUERY_EV_STATE: the
        state), or the array for QUERY_EV_ARRAY.
        """
        ops = ("REPLACE_EV", "MODIFY_EV_STATE", "QUERY_EV_STATE", "QUERY_EV_ARRAY")
        if op not in ops:
            raise UsageError(f"ev_op: op {op!r} is not one of {ops}")
        if op == "QUERY_EV_ARRAY":
            return self.query_ev_array(profile_id)
        if not entries:
            raise UsageError(f"ev_op {op}: no entries")
        out = []
        for n, e in enumerate(entries):
            try:
                if op == "REPLACE_EV":
                    if e.ev_new is None or e.port is None:
                        raise UsageError("REPLACE_EV needs ev_new and port")
                    out.append(self.replace_ev(profile_id, e.ev, e.ev_new, e.port, all_copies=e.all_copies,
                                               state=e.state or EvState.GOOD))
                elif op == "MODIFY_EV_STATE":
                    if e.state is None:
                        raise UsageError("MODIFY_EV_STATE needs state")
                    out.append(self.modify_ev_state(profile_id, e.ev, e.state, now=now))
                else:
                    out.append(self.query_ev_state(profile_id, e.ev))
            except UsageError as err:
                raise UsageError(f"ev_op {op}: entry {n}: {err}") from None
        return out

    def create_ev_event_cq(self, cqe: int = 1024) -> EvEventQueue:
        """An EV Event CQ of `cqe` entries receiving every EV event of this controller's QPs."""
        q = EvEventQueue(cqe)
        self._ev_cqs.append(q)
        return q

    def _on_ev_event(self, qp, e) -> None:
        state = EvState.ASSUMED_BAD if int(e["ev_state"]) == D.EV_ASSUMED_BAD else EvState.GOOD
        ev = EvEvent(qp.ev_profile_id, int(e["ev"]), int(e["plane"]) + 1, 0, state)
        for cq in self._ev_cqs:
            cq._push(ev)
        if state == EvState.ASSUMED_BAD:
            self._probe_ev(qp, e)
