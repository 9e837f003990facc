"""Controller cases through the controller surface (adapter feature ``ctl``): the ``mrc_ctl.h`` operations
themselves, as a controller calls them: profile state machines and the attributes each transition needs,
EBUSY, explicit EV arrays and the EV operations, the EV event CQ, ports, CC profiles, binding at INIT,
endpoint requests and the device query.

Each case cites the header line it checks (``mrc_ctl.h:N`` / ``mrc.h:N``: OCP-Multipath-Reliable-Connection
at the version the project read, see docs/ocp-coverage.md) or the OCP example it follows. Profiles made by
the cases use ids 2 and up: id 1 is the endpoint's own (its QP is bound to EV format, EV and CC profile 1).
"""
from __future__ import annotations

from ..adapter import EndpointConfig
from ..case import MUST, case
from .common import MS, US, evs, pattern, post, requester_pair, responder_pair, sends_done

CASES: list = []
CTL = ["ctl"]


def _one(t, **cfg):
    """One IUT endpoint (two ports, the default explicit EVs) and its controller call."""
    sc = t.scenario()
    node = sc.add("iut", EndpointConfig(**{"ports": 2, "evs": evs(2, 4), **cfg}), iut=True)
    return sc, node


def _call(t, node, call: str, now: int = 0, *, want=None, **args) -> dict:
    """A controller call; `want` (an errno name, or None for success) is asserted when given."""
    a = node.ep.ctl(call, args, now)
    if want is not ...:
        t.expect(a.get("errno") == want, f"{call}({_show(args)}) answered {a.get('errno') or 'success'}"
                 f"{': ' + a['error'] if a.get('error') else ''}, expected {want or 'success'}")
    return a


def _show(args: dict) -> str:
    s = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return s if len(s) < 160 else s[:157] + "..."


def _offline_exp(t, node, pid: int, count: int, **extra) -> None:
    _call(t, node, "modify_ev_profile", profile_id=pid, profile_state="OFFLINE", ev_mode="EXP",
          ev_fmt_profile_id=1, ev_count=count, **extra)


def _populate(t, node, pid: int, evs_: list) -> None:
    for ev in evs_:
        _call(t, node, "ev_op", profile_id=pid, op="REPLACE_EV", entries=[{"ev": None, "ev_new": list(ev)}])


def _online(t, node, pid: int, **kw) -> None:
    _call(t, node, "modify_ev_profile", profile_id=pid, profile_state="ONLINE", ev_min_active=0,
          ev_event_mask=["ASSUMED_BAD", "GOOD"], **kw)


def _array(t, node, pid: int) -> list:
    a = _call(t, node, "query_ev_profile", profile_id=pid, ev_op={"op": "QUERY_EV_ARRAY"})
    return [None if e["ev"] is None else tuple(e["ev"]) for e in a["entries"]]


def _state(t, node, pid: int, kind: str = "ev") -> str:
    return _call(t, node, f"query_{kind}_profile", profile_id=pid)["profile_state"]


EV_A, EV_B, EV_C, EV_D = (0x0C000001, 1), (0x0C000002, 2), (0x0C000003, 1), (0x0C000004, 2)


# --- profile state machines ---------------------------------------------------------------------------------

@case("controller.ev-profile-required-attrs", MUST, registry=CASES,
      ref="mrc_ctl.h:706-710 (EV profile 'State transition requirements: To OFFLINE: MODE, FMT_ID, COUNT, "
          "MODIFY_FIELDS; To ONLINE: MIN_ACTIVE, EVENT_MASK, REPLACE_EV (for EXPLICIT)'); :760 (EINVAL)",
      behaviour="An EV profile sent INIT -> OFFLINE without COUNT, or without MODE, is refused with EINVAL and "
                "stays INIT; with MODE, FMT_ID and COUNT it goes OFFLINE, and query_ev_profile reports the "
                "mode and count given.",
      failure="an EV profile changed state without the attributes the header requires for it",
      network="none (controller calls only)", mutants=["ev-profile-defaults"], needs=CTL)
def _required(t):
    sc, n = _one(t)
    _call(t, n, "modify_ev_profile", want="EINVAL", profile_id=2, profile_state="OFFLINE", ev_mode="EXP",
          ev_fmt_profile_id=1)
    _call(t, n, "modify_ev_profile", want="EINVAL", profile_id=2, profile_state="OFFLINE", ev_fmt_profile_id=1,
          ev_count=4)
    t.expect(_state(t, n, 2) == "INIT", f"after two refused transitions the profile is {_state(t, n, 2)}, not INIT")
    _offline_exp(t, n, 2, 4)
    q = _call(t, n, "query_ev_profile", profile_id=2)
    t.expect((q["profile_state"], q["ev_mode"], q["ev_count"]) == ("OFFLINE", "EXP", 4),
             f"query says {q['profile_state']}, {q['ev_mode']}, count {q['ev_count']}: expected OFFLINE, EXP, 4")


@case("controller.profile-state-machine", MUST, registry=CASES,
      ref="mrc_ctl.h:698 and :870 ('INIT -> OFFLINE -> ONLINE -> OFFLINE -> INIT', EV and CC profiles); "
          ":712-720 (what each state allows)",
      behaviour="EV and CC profiles move one step at a time: INIT -> ONLINE and ONLINE -> INIT are refused "
                "(EINVAL) and change nothing; ONLINE -> OFFLINE -> INIT is accepted and a profile back in INIT "
                "reports INIT.",
      failure="a profile skipped a state of the header's state machine",
      network="none (controller calls only)", mutants=["profile-any-transition"], needs=CTL)
def _state_machine(t):
    sc, n = _one(t)
    _call(t, n, "modify_ev_profile", want="EINVAL", profile_id=2, profile_state="ONLINE", ev_mode="GEN",
          ev_fmt_profile_id=1, ev_count=4, ev_min_active=0, ev_event_mask=["GOOD"],
          ev_fields_op={"op": "MODIFY_FIELDS", "fields": [[32, 0, 0, 0, 0xFFFF]]})
    t.expect(_state(t, n, 2) == "INIT", "INIT -> ONLINE was refused but the profile left INIT")
    _offline_exp(t, n, 2, 2)
    _populate(t, n, 2, [EV_A, EV_B])
    _online(t, n, 2)
    _call(t, n, "modify_ev_profile", want="EINVAL", profile_id=2, profile_state="INIT")
    t.expect(_state(t, n, 2) == "ONLINE", f"ONLINE -> INIT was refused but the profile is {_state(t, n, 2)}")
    _call(t, n, "modify_ev_profile", profile_id=2, profile_state="OFFLINE")
    _call(t, n, "modify_ev_profile", profile_id=2, profile_state="INIT")
    t.expect(_state(t, n, 2) == "INIT", f"after ONLINE -> OFFLINE -> INIT the profile is {_state(t, n, 2)}")
    _call(t, n, "modify_cc_profile", profile_id=2, profile_state="OFFLINE", algorithm="uet-1.0-nscc")
    _call(t, n, "modify_cc_profile", profile_id=2, profile_state="ONLINE", cc_config={"base_rtt": 8000})
    _call(t, n, "modify_cc_profile", want="EINVAL", profile_id=2, profile_state="INIT")
    t.expect(_state(t, n, 2, "cc") == "ONLINE", "CC ONLINE -> INIT was refused but the profile left ONLINE")


@case("controller.profile-busy", MUST, registry=CASES,
      ref="mrc_ctl.h:764 (modify_ev_profile 'EBUSY One or more active QPs are associated with this profile'); "
          ":894 (modify_cc_profile, the same)",
      behaviour="While a QP is bound to them, the EV and CC profiles cannot leave ONLINE (EBUSY, still ONLINE); "
                "once that QP is destroyed they can.",
      failure="a profile in use by a QP was taken offline, or the refusal was not EBUSY",
      network="none (controller calls only)", mutants=["ebusy-not-reported"], needs=CTL)
def _busy(t):
    sc, n = _one(t)
    _offline_exp(t, n, 2, 2)
    _populate(t, n, 2, [EV_A, EV_B])
    _online(t, n, 2)
    _call(t, n, "modify_cc_profile", profile_id=2, profile_state="OFFLINE", algorithm="uet-1.0-nscc")
    _call(t, n, "modify_cc_profile", profile_id=2, profile_state="ONLINE", cc_config={"base_rtt": 8000})
    qp = _call(t, n, "create_qp", ev_profile_id=2, cc_profile_id=2)["qp"]
    _call(t, n, "modify_ev_profile", want="EBUSY", profile_id=2, profile_state="OFFLINE")
    _call(t, n, "modify_cc_profile", want="EBUSY", profile_id=2, profile_state="OFFLINE")
    t.expect(_state(t, n, 2) == "ONLINE" and _state(t, n, 2, "cc") == "ONLINE", "a profile left ONLINE after EBUSY")
    _call(t, n, "destroy_qp", qp=qp)
    _call(t, n, "modify_ev_profile", profile_id=2, profile_state="OFFLINE")
    _call(t, n, "modify_cc_profile", profile_id=2, profile_state="OFFLINE")


@case("controller.bind-at-init", MUST, registry=CASES,
      ref="mrc.h:518-526 (QP attribute profile {ev_profile_id, cc_profile_id}: 'an EV and CC profile that was "
          "previously programmed by a system controller'); mrc_ctl.h:703 ('ONLINE: Active and usable')",
      behaviour="A QP taken to INIT with an EV profile that does not exist, or one that is only OFFLINE, is "
                "refused (EINVAL); with both profiles ONLINE it is accepted.",
      failure="a QP was bound to a profile that is not ONLINE (or to another profile than asked)",
      network="none (controller calls only)", mutants=["bind-ignores-profile-id", "ebusy-not-reported"], needs=CTL)
def _bind(t):
    sc, n = _one(t)
    _call(t, n, "create_qp", want="EINVAL", ev_profile_id=7, cc_profile_id=1)
    _offline_exp(t, n, 2, 2)
    _populate(t, n, 2, [EV_A, EV_B])
    _call(t, n, "create_qp", want="EINVAL", ev_profile_id=2, cc_profile_id=1)
    _online(t, n, 2)
    qp = _call(t, n, "create_qp", ev_profile_id=2, cc_profile_id=1)["qp"]
    _call(t, n, "modify_ev_profile", want="EBUSY", profile_id=2, profile_state="OFFLINE")
    _call(t, n, "destroy_qp", qp=qp)


# --- explicit EV arrays and the EV operations ------------------------------------------------------------------

@case("controller.explicit-array-unpopulated", MUST, registry=CASES,
      ref="mrc_ctl.h:748-749 ('On INIT -> OFFLINE, Explicit array EVs are all EV_UNPOPULATED; MUST be replaced "
          "before moving to ONLINE'); OCP examples/mrc_ctl_exp_ev.md ('Populate the Explicit EVs')",
      behaviour="An EXP profile of 4 EVs just OFFLINE holds 4 unpopulated entries (QUERY_EV_ARRAY); ONLINE is "
                "refused (EINVAL) while one is left; with all 4 replaced (MRC_CTL_EV_UNPOPULATED as the current "
                "EV) it goes ONLINE and the array is the 4 EVs in order.",
      failure="an explicit array did not start unpopulated, or went ONLINE with unpopulated entries",
      network="none (controller calls only)", mutants=["fills-unpopulated-evs"], needs=CTL)
def _unpopulated(t):
    sc, n = _one(t)
    _offline_exp(t, n, 2, 4)
    arr = _array(t, n, 2)
    t.expect(arr == [None] * 4, f"a new explicit array holds {arr}, expected 4 unpopulated entries")
    _populate(t, n, 2, [EV_A, EV_B, EV_C])
    _call(t, n, "modify_ev_profile", want="EINVAL", profile_id=2, profile_state="ONLINE", ev_min_active=0,
          ev_event_mask=["GOOD"])
    _populate(t, n, 2, [EV_D])
    _online(t, n, 2)
    arr = _array(t, n, 2)
    t.expect(arr == [EV_A, EV_B, EV_C, EV_D], f"the array is {arr}, expected the 4 EVs in the order given")


@case("controller.replace-ev-all-copies", MUST, registry=CASES,
      ref="mrc_ctl.h:741-745 (REPLACE_EV: 'flags & MRC_CTL_EV_OP_F_ALL_COPIES to request replacement of all "
          "occurrences for that entry; otherwise a single implementation-selected occurrence'); :560",
      behaviour="In an explicit array holding EV A three times (A, B, A, A), REPLACE_EV A -> C without the flag "
                "replaces exactly one A; A -> D with ALL_COPIES replaces both remaining ones.",
      failure="REPLACE_EV replaced the wrong number of copies",
      network="none (controller calls only)", mutants=["all-copies-ignored"], needs=CTL)
def _all_copies(t):
    sc, n = _one(t)
    _offline_exp(t, n, 2, 4)
    _populate(t, n, 2, [EV_A, EV_B, EV_A, EV_A])
    _call(t, n, "ev_op", profile_id=2, op="REPLACE_EV", entries=[{"ev": list(EV_A), "ev_new": list(EV_C)}])
    arr = _array(t, n, 2)
    t.expect(arr.count(EV_A) == 2 and arr.count(EV_C) == 1, f"after one REPLACE_EV the array is {arr}")
    _call(t, n, "ev_op", profile_id=2, op="REPLACE_EV",
          entries=[{"ev": list(EV_A), "ev_new": list(EV_D), "all_copies": True}])
    arr = _array(t, n, 2)
    t.expect(EV_A not in arr and arr.count(EV_D) == 2 and arr.count(EV_B) == 1,
             f"after REPLACE_EV with ALL_COPIES the array is {arr}")


@case("controller.query-ev-array", MUST, registry=CASES,
      ref="mrc_ctl.h:788-791 (QUERY_EV_ARRAY: 'If the array is too small, the provider returns E2BIG and returns "
          "the required array size in ev_op.entry_count'); OCP examples/mrc_ctl_exp_ev.md ('Query the EV Profile')",
      behaviour="QUERY_EV_ARRAY with room for 2 entries of a 4-EV array fails with E2BIG and says 4 are needed; "
                "with room for 4 it returns the EVs as the controller named them (value and port), in order.",
      failure="QUERY_EV_ARRAY truncated silently or returned EVs other than those installed",
      network="none (controller calls only)", mutants=["ev-array-truncated"], needs=CTL)
def _query_array(t):
    sc, n = _one(t)
    _offline_exp(t, n, 2, 4)
    _populate(t, n, 2, [EV_D, EV_C, EV_B, EV_A])
    a = _call(t, n, "query_ev_profile", want="E2BIG", profile_id=2, ev_op={"op": "QUERY_EV_ARRAY", "entry_count": 2})
    t.expect(a.get("required") == 4, f"E2BIG says {a.get('required')} entries are needed, expected 4")
    a = _call(t, n, "query_ev_profile", profile_id=2, ev_op={"op": "QUERY_EV_ARRAY", "entry_count": 4})
    got = [tuple(e["ev"]) for e in a["entries"]]
    t.expect(got == [EV_D, EV_C, EV_B, EV_A], f"QUERY_EV_ARRAY returned {got}")


@case("controller.ev-op-partial-success", MUST, registry=CASES,
      ref="mrc_ctl.h:732-734 ('Success semantics are per-entry: error returns on first failing entry; partial "
          "success is possible'); :761 (ENOENT EV not found)",
      behaviour="MODIFY_EV_STATE DENIED over [A, X, B] where X is not in the array fails with ENOENT; the entry "
                "after the failing one (B) is not applied: B stays GOOD.",
      failure="an EV operation went on past its first failing entry (or did not report ENOENT)",
      network="none (controller calls only)", mutants=["ev-op-continues-after-error", "unknown-ev-ignored"], needs=CTL)
def _partial(t):
    sc, n = _one(t)
    _offline_exp(t, n, 2, 2)
    _populate(t, n, 2, [EV_A, EV_B])
    _online(t, n, 2)
    a = _call(t, n, "ev_op", want="ENOENT", profile_id=2, op="MODIFY_EV_STATE",
              entries=[{"ev": list(EV_A), "state": "DENIED"}, {"ev": [0x0DEAD000, 1], "state": "DENIED"},
                       {"ev": list(EV_B), "state": "DENIED"}])
    if a.get("entry") is not None:
        t.expect(a["entry"] == 1, f"the error names entry {a['entry']}, the failing one is 1")
    q = _call(t, n, "query_ev_profile", profile_id=2, ev_op={"op": "QUERY_EV_STATE", "entries": [{"ev": list(EV_B)}]})
    t.expect(q["entries"][0]["state"] == "GOOD", f"the entry after the failing one was applied: B is "
                                                 f"{q['entries'][0]['state']}")


@case("controller.ev-op-fields-op-exclusive", MUST, registry=CASES,
      ref="mrc_ctl.h:726-727 ('MRC_CTL_EV_PROFILE_EV_OP and MRC_CTL_EV_PROFILE_EV_FIELDS_OP are mutually "
          "exclusive; setting both returns EINVAL')",
      behaviour="modify_ev_profile with both EV_OP (REPLACE_EV) and EV_FIELDS_OP (MODIFY_FIELDS) is refused with "
                "EINVAL and applies neither: the entry stays unpopulated.",
      failure="EV_OP and EV_FIELDS_OP were accepted together",
      network="none (controller calls only)", mutants=["both-ops-accepted"], needs=CTL)
def _exclusive(t):
    sc, n = _one(t)
    _offline_exp(t, n, 2, 1)
    _call(t, n, "modify_ev_profile", want="EINVAL", profile_id=2,
          ev_op={"op": "REPLACE_EV", "entries": [{"ev": None, "ev_new": list(EV_A)}]},
          ev_fields_op={"op": "MODIFY_FIELDS", "fields": [[32, 0, 0, 0, 0xFFFFFFFF]]})
    t.expect(_array(t, n, 2) == [None], f"a refused call changed the array: {_array(t, n, 2)}")


FIELDS_T0 = [[8, 0, 0, 179, 0xFF], [24, 0, 0, 0, 0xFFFFFF]]  # T0 'Maximum of 180 links' (mrc_ctl_gen_ev.md)


def _fmt_8_24(t, n) -> None:
    _call(t, n, "modify_ev_fmt_profile", profile_id=2, state="OFFLINE", mode="STEV", fields=[8, 24])
    _call(t, n, "modify_ev_fmt_profile", profile_id=2, state="ONLINE")


@case("controller.field-ranges-generated-only", MUST, registry=CASES,
      ref="mrc_ctl.h:547-549 (struct mrc_ctl_ev_field: min_val / max_val are the 'field value for generated EVs'); "
          "OCP examples/mrc_ctl_gen_ev.md (T0 max_val 179)",
      behaviour="With a T0 field of [0, 179], an explicit EV whose T0 is 200 is accepted by REPLACE_EV and held "
                "as given (the range bounds generated EVs, not the controller's own).",
      failure="a field's min/max was applied to an explicit EV",
      network="none (controller calls only)", mutants=["ranges-on-explicit"], needs=CTL)
def _ranges(t):
    sc, n = _one(t)
    _fmt_8_24(t, n)
    _call(t, n, "modify_ev_profile", profile_id=2, profile_state="OFFLINE", ev_mode="EXP", ev_fmt_profile_id=2,
          ev_count=2, ev_fields_op={"op": "MODIFY_FIELDS", "fields": FIELDS_T0})
    high, low = (200 << 24 | 0x000102, 1), (17 << 24 | 0x000304, 2)
    _populate(t, n, 2, [high, low])
    t.expect(_array(t, n, 2) == [high, low], f"the array is {_array(t, n, 2)}, expected the two EVs as given")


@case("controller.min-active-within-count", MUST, registry=CASES,
      ref="mrc_ctl.h:659-663 (ev_min_active: 'Min number of EVs that must remain active'); :760 (EINVAL)",
      behaviour="An EV profile of 4 EVs with ev_min_active 5 is refused (EINVAL: more EVs cannot stay active "
                "than there are); ev_min_active 4 is accepted.",
      failure="ev_min_active above ev_count was accepted (or silently clamped)",
      network="none (controller calls only)", mutants=["min-active-unchecked"], needs=CTL)
def _min_active(t):
    sc, n = _one(t)
    _offline_exp(t, n, 2, 4)
    _populate(t, n, 2, [EV_A, EV_B, EV_C, EV_D])
    _call(t, n, "modify_ev_profile", want="EINVAL", profile_id=2, ev_min_active=5)
    _call(t, n, "modify_ev_profile", profile_id=2, ev_min_active=4)
    q = _call(t, n, "query_ev_profile", profile_id=2)
    t.expect(q["ev_min_active"] == 4, f"ev_min_active reads {q['ev_min_active']}, expected 4")


@case("controller.ev-unknown-enoent", MUST, registry=CASES,
      ref="mrc_ctl.h:761 and :802 ('ENOENT EV not found', modify and query)",
      behaviour="MODIFY_EV_STATE and QUERY_EV_STATE of an EV that is not in the array fail with ENOENT; an EV "
                "with the right value on another port is another EV (ENOENT too).",
      failure="an EV operation on an EV not in the array did not fail with ENOENT",
      network="none (controller calls only)", mutants=["unknown-ev-ignored"], needs=CTL)
def _enoent(t):
    sc, n = _one(t)
    _offline_exp(t, n, 2, 2)
    _populate(t, n, 2, [EV_A, EV_B])
    _online(t, n, 2)
    for ev in ([0x0DEAD000, 1], [EV_A[0], 2]):
        _call(t, n, "ev_op", want="ENOENT", profile_id=2, op="MODIFY_EV_STATE", entries=[{"ev": ev, "state": "DENIED"}])
        _call(t, n, "query_ev_profile", want="ENOENT", profile_id=2,
              ev_op={"op": "QUERY_EV_STATE", "entries": [{"ev": ev}]})


# --- EV events -----------------------------------------------------------------------------------------------

@case("controller.ev-event-cq-no-overrun", MUST, registry=CASES,
      ref="mrc_ctl.h:952-953 (EV CQs 'do not support CQ overruns'); :935-942 (drop_count: 'the number of EV "
          "Events dropped between the previous and current event delivered', exact with "
          "MRC_CTL_OPT_CAP_EV_EVENT_PRECISE_DROP_CNT)",
      behaviour="An EV event CQ of 2 entries, given 5 ASSUMED_BAD events, holds 2; after they are polled, the "
                "next event delivered carries drop_count 3 (or 1 when PRECISE_DROP_CNT is not advertised).",
      failure="the EV event CQ overran, or the events it dropped were not counted",
      network="none (controller calls only)", mutants=["ev-cq-overruns", "drop-count-zero"], needs=CTL)
def _no_overrun(t):
    sc, n = _one(t)
    precise = "EV_EVENT_PRECISE_DROP_CNT" in _call(t, n, "query_device")["opt_attr"]
    cq = _call(t, n, "create_ev_event_cq", cqe=2)["cq"]
    arr = _array(t, n, 1)
    for k, ev in enumerate(arr[:5]):
        _call(t, n, "ev_op", (k + 1) * US, profile_id=1, op="MODIFY_EV_STATE",
              entries=[{"ev": list(ev), "state": "ASSUMED_BAD"}])
    got = _call(t, n, "poll_ev_event", cq=cq, num_entries=16)["events"]
    t.expect(len(got) == 2, f"{len(got)} events in an EV event CQ of 2 entries")
    t.expect(all(e["drop_count"] == 0 for e in got), f"drop counts {[e['drop_count'] for e in got]} on events "
                                                     "delivered before any was dropped")
    _call(t, n, "ev_op", 10 * US, profile_id=1, op="MODIFY_EV_STATE", entries=[{"ev": list(arr[0]), "state": "GOOD"}])
    nxt = _call(t, n, "poll_ev_event", cq=cq, num_entries=16)["events"]
    t.expect(len(nxt) == 1, f"{len(nxt)} events after one more state change")
    want = 3 if precise else 1
    t.expect(nxt[0]["drop_count"] == want, f"drop_count {nxt[0]['drop_count']} on the event after 3 were dropped, "
                                           f"expected {want}")
    t.expect(tuple(nxt[0]["ev"]) == arr[0] and nxt[0]["state"] == "GOOD",
             f"the event names {nxt[0]['ev']} {nxt[0]['state']}, expected {arr[0]} GOOD")


# --- ports ----------------------------------------------------------------------------------------------------

@case("controller.port-admin-disabled-down", MUST, registry=CASES,
      ref="mrc_ctl.h:267-268 ('Providers must report disabled ports as IBV_PORT_DOWN in ibv_query_port()'); "
          ":294-304 (mrc_ctl_modify_port)",
      behaviour="A port administratively disabled mid-transfer is reported DISABLED and DOWN, carries no packet "
                "from then on, and the transfer completes on the other port; enabled again it is ACTIVE.",
      failure="an administratively disabled port was reported up, or still carried packets",
      network="the requester's port 2 is disabled at 6 us", mutants=["admin-disable-shown-up"], needs=CTL)
def _admin_down(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(mtu=1024))
    post(sc, req, 1, pattern(128 * 1024), region)
    sc.run_for(6 * US)
    _call(t, req, "modify_port", sc.now, port=2, port_admin_state="DISABLED")
    since = sc.now
    q = _call(t, req, "query_port", port=2)
    t.expect((q["port_admin_state"], q["state"]) == ("DISABLED", "DOWN"),
             f"a disabled port reads {q['port_admin_state']} / {q['state']}, expected DISABLED / DOWN")
    t.expect(sc.run(sends_done(req, 1), max_ps=20 * MS), "the write did not complete on the port left")
    late = [p for p in sc.sent(req, since=since + 1) if p.port == 2]
    t.expect(not late, f"{len(late)} packet(s) sent on the disabled port, first {late[0]}" if late else "")
    _call(t, req, "modify_port", sc.now, port=2, port_admin_state="ENABLED")
    q = _call(t, req, "query_port", port=2)
    t.expect(q["state"] == "ACTIVE", f"an enabled port with its link up reads {q['state']}")


# --- CC profiles -------------------------------------------------------------------------------------------------

@case("controller.cc-algorithm-names", MUST, registry=CASES,
      ref="mrc_ctl.h:835-836 (algorithm: 'Must string match a device_attr.cc.algorithms entry; NULL disables "
          "CC'); :878 ('To OFFLINE: CC_ALGORITHM')",
      behaviour="A CC profile given an algorithm name the device does not list is refused (EINVAL); every name "
                "query_device lists is accepted; NULL (no algorithm) is accepted, the profile goes ONLINE and "
                "reads back NULL.",
      failure="the CC algorithm string was not matched against the device's list, or NULL was refused",
      network="none (controller calls only)", mutants=["cc-unknown-algorithm-accepted", "cc-null-refused"],
      needs=CTL)
def _cc_names(t):
    sc, n = _one(t)
    names = _call(t, n, "query_device")["algorithms"]
    t.expect(names, "query_device lists no CC algorithm")
    _call(t, n, "modify_cc_profile", want="EINVAL", profile_id=2, profile_state="OFFLINE", algorithm="no-such-cc")
    t.expect(_state(t, n, 2, "cc") == "INIT", "a refused algorithm moved the profile")
    for k, name in enumerate(names):
        _call(t, n, "modify_cc_profile", profile_id=3 + k, profile_state="OFFLINE", algorithm=name)
    _call(t, n, "modify_cc_profile", profile_id=2, profile_state="OFFLINE", algorithm=None)
    _call(t, n, "modify_cc_profile", profile_id=2, profile_state="ONLINE", cc_config={})
    q = _call(t, n, "query_cc_profile", profile_id=2)
    t.expect(q["algorithm"] is None, f"a NULL-algorithm profile reads algorithm {q['algorithm']!r}")


@case("controller.cc-config-online", MUST, registry=CASES,
      ref="mrc_ctl.h:879 ('To ONLINE: CC_CONFIG'); :881-882 ('If MRC_CTL_OPT_CAP_CC_PROFILE_MODIFY_ONLINE is "
          "advertised: ONLINE: CC_CONFIG')",
      behaviour="A CC profile goes OFFLINE -> ONLINE only with CC_CONFIG (EINVAL without); while ONLINE and in "
                "use, CC_CONFIG is accepted if the device advertises CC_PROFILE_MODIFY_ONLINE (EINVAL if "
                "not), and the algorithm cannot change (EINVAL).",
      failure="CC_CONFIG while ONLINE was not handled as the capability says",
      network="none (controller calls only)", mutants=["cc-online-config-refused"], needs=CTL)
def _cc_online(t):
    sc, n = _one(t)
    online_ok = "CC_PROFILE_MODIFY_ONLINE" in _call(t, n, "query_device")["opt_attr"]
    _call(t, n, "modify_cc_profile", profile_id=2, profile_state="OFFLINE", algorithm="uet-1.0-nscc")
    _call(t, n, "modify_cc_profile", want="EINVAL", profile_id=2, profile_state="ONLINE")
    _call(t, n, "modify_cc_profile", profile_id=2, profile_state="ONLINE", cc_config={"base_rtt": 8000})
    _call(t, n, "modify_cc_profile", want=None if online_ok else "EINVAL", profile_id=1,
          cc_config={"base_rtt": 12000, "target_delay": 16000})
    _call(t, n, "modify_cc_profile", want="EINVAL", profile_id=1, algorithm="uet-1.0-nscc")


# --- endpoint requests ------------------------------------------------------------------------------------------

def _probe(t, sc, rsp, **kw):
    ev = next(e for e, port in rsp.cfg.evs if port == 2)
    a = _call(t, rsp, "ep_batch_send", sc.now, op="EV_PROBE", requests=[{"req_id": 0x51, "ev": [ev, 2]}], **kw)
    return a["batch"], [p for p in sc.pull(rsp) if p.kind == "ep_req"]


@case("controller.ep-req-tc", MUST, registry=CASES,
      ref="mrc_ctl.h:1059 (mrc_ctl_ep_batch_send_wait 'req_tc[in] - Request traffic class (DSCP)')",
      behaviour="An EV probe sent with req_tc 26 leaves with DSCP 26; with req_tc 10, DSCP 10.",
      failure="an endpoint request did not leave in the traffic class the controller asked for",
      network="crafted peer (the requests are only looked at)", mutants=["req-tc-ignored"], needs=CTL)
def _req_tc(t):
    sc, rsp, req, c, region = responder_pair(t)
    for tc in (26, 10):
        _, out = _probe(t, sc, rsp, req_tc=tc, rsp_timeout_ns=1_000_000)
        t.expect(len(out) == 1, f"{len(out)} endpoint requests for one EV probe")
        t.expect(out[0]["dscp"] == tc, f"the request left with DSCP {out[0]['dscp']}, req_tc was {tc}")


@case("controller.ep-rsp-timeout", MUST, registry=CASES,
      ref="mrc_ctl.h:1063 ('rsp_timeout[in] - Response wait timeout; units = 1ns'); :1075 ('ETIMEDOUT Timeout "
          "occurred before all responses received')",
      behaviour="An EV probe nobody answers, sent with rsp_timeout 50 us, is still waiting at 45 us and has "
                "failed with ETIMEDOUT by 55 us; one answered 7 us later completes without error.",
      failure="an unanswered endpoint request did not time out at rsp_timeout",
      network="crafted peer: the first probe is never answered, the second after 7 us",
      mutants=["no-rsp-timeout"], needs=CTL)
def _timeout(t):
    sc, rsp, req, c, region = responder_pair(t)
    start = sc.now
    b, out = _probe(t, sc, rsp, req_tc=46, rsp_timeout_ns=50_000)
    sc.advance(start + 45 * US)
    w = _call(t, rsp, "ep_batch_wait", want=..., batch=b)
    t.expect(not w["done"] and w["errno"] is None, f"at 45 us of a 50 us timeout the batch says {w}")
    sc.advance(start + 55 * US)
    w = _call(t, rsp, "ep_batch_wait", want=..., batch=b)
    t.expect(w["errno"] == "ETIMEDOUT", f"at 55 us of a 50 us timeout the batch says {w}")
    start = sc.now
    b, out = _probe(t, sc, rsp, req_tc=46, rsp_timeout_ns=50_000)
    t.expect(out, "tester problem: the second probe did not leave")
    sc.advance(start + 7 * US)
    sc.inject(rsp, c.ep_response(1, 0x51, ev=0x0B0B0002, ts=out[0]["tx_timestamp"]), port=2)
    sc.advance(start + 60 * US)
    w = _call(t, rsp, "ep_batch_wait", batch=b)
    t.expect(w["done"] and len(w["responses"]) == 1, f"the answered probe's batch says {w}")


@case("controller.ep-adj-svc-time", MUST, registry=CASES,
      ref="mrc_ctl.h:1040-1044 (mrc_ctl_ep_rsp: rtt in ns; 'adj_svc_time: Non-zero if rtt has been adjusted for "
          "responder service time'); notes §2.4 (EETH svc_time)",
      behaviour="An EV probe answered 9 us after it left by a responder that reports 4 us of service time is "
                "reported with rtt 5 us and adj_svc_time set; an answer reporting none gives the measured RTT "
                "and adj_svc_time clear.",
      failure="the responder's reported service time was not taken off the RTT (or not flagged)",
      network="crafted peer: answers after 9 us with svc_time 4000 ns, then with 0", mutants=["svc-time-ignored"],
      needs=CTL)
def _svc(t):
    sc, rsp, req, c, region = responder_pair(t)
    for svc, rtt, adj in ((4000, 5000, True), (0, 9000, False)):
        start = sc.now
        b, out = _probe(t, sc, rsp, req_tc=46, rsp_timeout_ns=1_000_000)
        t.expect(out, "tester problem: the probe did not leave")
        sc.advance(start + 9 * US)
        sc.inject(rsp, c.ep_response(1, 0x51, ev=0x0B0B0002, ts=out[0]["tx_timestamp"], svc_time=svc), port=2)
        w = _call(t, rsp, "ep_batch_wait", batch=b)
        t.expect(len(w["responses"]) == 1, f"the answer was not reported: {w}")
        r = w["responses"][0]
        t.note(f"rtt_ns_svc{svc}", r["rtt_ns"])
        t.expect(abs(r["rtt_ns"] - rtt) <= 100 and bool(r["adj_svc_time"]) == adj,
                 f"svc_time {svc} ns: reported rtt {r['rtt_ns']} ns, adj_svc_time {r['adj_svc_time']}; expected "
                 f"{rtt} ns, {adj}")


# --- the device query --------------------------------------------------------------------------------------------

@case("controller.device-query", MUST, registry=CASES,
      ref="mrc_ctl.h:132-135 (ev_count_align: 'explicit EV arrays must be a multiple of this'); :181 "
          "(phy_port_mask); OCP examples/mrc_ctl_exp_ev.md (ev_count % ev_count_align)",
      behaviour="query_device gives ev_count_align >= 1 and an explicit array of that many EVs is accepted (one "
                "more is refused with EINVAL when the alignment is above 1); phy_port_mask names the ports the "
                "device owns (bits 1 and 2 of a two-port device) and still does with port 2 disabled.",
      failure="a device attribute is missing or says something other than the device is",
      network="none (controller calls only)", mutants=["device-port-mask-up-ports", "ev-count-align-zero"],
      needs=CTL)
def _device(t):
    sc, n = _one(t)
    d = _call(t, n, "query_device")
    align = d["ev_count_align"]
    t.expect(isinstance(align, int) and align >= 1, f"ev_count_align {align!r} (the example divides by it)")
    t.expect(d["phy_port_mask"] == 0b110, f"phy_port_mask {d['phy_port_mask']:#b} on a two-port device, expected "
                                          "0b110 (bit N = port N)")
    _offline_exp(t, n, 2, align)
    if align > 1:
        _call(t, n, "modify_ev_profile", want="EINVAL", profile_id=3, profile_state="OFFLINE", ev_mode="EXP",
              ev_fmt_profile_id=1, ev_count=align + 1)
    _call(t, n, "modify_port", port=2, port_admin_state="DISABLED")
    mask = _call(t, n, "query_device")["phy_port_mask"]
    t.expect(mask == 0b110, f"with port 2 disabled phy_port_mask reads {mask:#b}: the ports owned are 0b110")


# --- the OCP exp example, on the wire ------------------------------------------------------------------------------

EXAMPLE_EVS = [((i << 16) | i, 1) for i in range(64)]  # mrc_ctl_exp_ev.md: 'EV value = array index in both fields'


@case("controller.ev-out-of-range-denied", MUST, registry=CASES,
      ref="OCP examples/mrc_ctl_exp_ev.md ('Modify EV State to DENIED for a Subset of EVs': MODIFY_EV_STATE "
          "DENIED for the EVs (i << 16) | i, i = 13..42, port 1, on the ONLINE profile)",
      behaviour="With the example's explicit array (64 EVs on port 1, value (i << 16) | i), the controller "
                "denies the range i = 13..42 one EV at a time, each named as installed; from then on no packet "
                "carries a denied EV and the others still carry the transfer.",
      failure="an EV the controller denied by the example's steps still carried packets (or could not be named)",
      network="lossless, one plane", mutants=["uses-denied-ev", "sticky-ev"], needs=CTL)
def _example_deny(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(ports=1, evs=EXAMPLE_EVS, ev_active=64, mtu=1024))
    for i in range(13, 43):
        _call(t, req, "ev_op", sc.now, profile_id=1, op="MODIFY_EV_STATE",
              entries=[{"ev": [(i << 16) | i, 1], "state": "DENIED"}])
    since = sc.now
    post(sc, req, 1, pattern(128 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=20 * MS), "the write did not complete")
    denied = {(i << 16) | i for i in range(13, 43)}
    used = [p for p in sc.sent(req, since=since) if p.ev in denied]
    t.expect(not used, f"{len(used)} packet(s) on denied EVs, first {used[0]}" if used else "")
    t.expect(len({p.ev for p in sc.data_sent(req, since)}) >= 16, "the EVs left carried too little of the write")


@case("controller.replace-ev-online", MUST, registry=CASES,
      ref="OCP examples/mrc_ctl_exp_ev.md ('Replace the Values of a Subset of EVs': REPLACE_EV (i << 16) | i -> "
          "((i + 128) << 16) | (i + 128), i = 13..42, on the ONLINE profile, 'if the device supports "
          "MRC_CTL_OPT_CAP_EV_PROFILE_MODIFY_ONLINE'); mrc_ctl.h:722-723",
      behaviour="On a device advertising EV_PROFILE_MODIFY_ONLINE, the example's replacement of EVs 13..42 by "
                "their value + 128 in both fields is accepted while ONLINE and bound, the new EVs carry packets "
                "and the replaced ones none; without the capability it is refused (EINVAL).",
      failure="REPLACE_EV on an ONLINE profile did not behave as the capability says",
      network="lossless, one plane", mutants=["online-replace-refused", "sticky-ev"], needs=CTL)
def _example_replace(t):
    sc, req, rsp, region = requester_pair(t, iut=dict(ports=1, evs=EXAMPLE_EVS, ev_active=64, mtu=1024))
    online = "EV_PROFILE_MODIFY_ONLINE" in _call(t, req, "query_device")["opt_attr"]
    for i in range(13, 43):
        j = i + 128
        _call(t, req, "ev_op", sc.now, want=None if online else "EINVAL", profile_id=1, op="REPLACE_EV",
              entries=[{"ev": [(i << 16) | i, 1], "ev_new": [(j << 16) | j, 1]}])
    if not online:
        return
    since = sc.now
    post(sc, req, 1, pattern(256 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=20 * MS), "the write did not complete")
    seen = {p.ev for p in sc.data_sent(req, since)}
    old = {(i << 16) | i for i in range(13, 43)}
    new = {((i + 128) << 16) | (i + 128) for i in range(13, 43)}
    t.expect(not seen & old, f"replaced EVs still carried data: {sorted(hex(e) for e in seen & old)[:4]}")
    t.expect(len(seen & new) >= 10, f"only {len(seen & new)} of the 30 new EVs carried data")


FIXED = [[16, 0xA5A5, 0, 0, 0x0000], [16, 0, 0, 0, 0xFFFF]]  # a fixed upper half (init_val, no mask bits)


@case("controller.ev-named-as-given", MUST, registry=CASES,
      ref="mrc_ctl.h:620-630 (a fixed portion of the EV is a field with init_val and no mask bits); :741 (EV_OP "
          "entries name struct mrc_ctl_ev, the EV as given to REPLACE_EV)",
      behaviour="In a profile whose fields fix the upper 16 bits (init_val 0xA5A5), the controller installs raw "
                "EVs and later denies one by the raw value it installed: accepted (not ENOENT), QUERY_EV_STATE "
                "says DENIED, and no packet carries its expansion.",
      failure="an EV could not be named by the value the controller installed",
      network="lossless", mutants=["ev-named-by-expansion", "uses-denied-ev"], needs=CTL)
def _named(t):
    raws = [(k << 16, 1 + k % 2) for k in range(1, 9)]  # the mask bits pull the raw EV's top 16 bits
    sc, req, rsp, region = requester_pair(t, iut=dict(evs=raws, ev_format=[16, 16], ev_fields=[
        dict(width=16, init_val=0xA5A5, mask=0), dict(width=16, mask=0xFFFF)], ev_active=8, mtu=1024))
    x = list(raws[2])
    _call(t, req, "ev_op", sc.now, profile_id=1, op="MODIFY_EV_STATE", entries=[{"ev": x, "state": "DENIED"}])
    q = _call(t, req, "query_ev_profile", profile_id=1, ev_op={"op": "QUERY_EV_STATE", "entries": [{"ev": x}]})
    t.expect(q["entries"][0]["state"] == "DENIED", f"QUERY_EV_STATE says {q['entries'][0]['state']}")
    since = sc.now
    post(sc, req, 1, pattern(64 * 1024), region)
    t.expect(sc.run(sends_done(req, 1), max_ps=20 * MS), "the write did not complete")
    wire = 0xA5A50000 | (x[0] >> 16)
    used = [p for p in sc.sent(req, since=since) if p.ev == wire]
    t.expect(not used, f"{len(used)} packet(s) on the denied EV ({wire:#x} on the wire)")

