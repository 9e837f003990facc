"""Connecting two devices for a real-network run: EV and CC profiles, QPs, attributes.

What a controller and an application would do out of band before traffic
flows (OCP ``mrc_ctl.h`` / ``mrc.h`` calls, through `mrc.ctl` and `mrc.api`):

- UDP encapsulation: an AUTO EV profile (``ev_count`` EVs, spread round robin
  over the ports); the EVs only label packets (nothing routes on them).
- Native SRv6: an explicit (EXP) EV profile whose format and fields are the
  fabric's SRv6 GEN profile for the pair (`Topology.srv6_profile`), holding
  every EV that names a path between the two hosts, each on the NIC port of
  its plane; the controller's expansion of an EV is its uSID carrier, which a
  test checks against `Topology.carrier` (what the transport sends to).
- CC: NSCC (UET 1.0 as in `mrc.core.nscc`) with the base RTT given, or a
  fixed window ("none": the controller's "fixed-window" algorithm).

Software endpoints are far slower than a NIC, so the port rate the CC
profile scales its windows by is a parameter (`port_gbps`), as are the RTO
exponent and the EV probe interval.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from mrc.api import Device
from mrc.errors import UsageError
from mrc.ctl import EV_UNPOPULATED, CtlEv
from mrc.ctl.ev_fields import EvField

EV_PROFILE = 1
CC_PROFILE = 1
RTR = dict(mpr_dest=8, max_wimm_dest=16)
RTS = dict(mpr=8, max_wimm=16, retry_linear=7, retry_exp=7)


def make_device(name: str, ports: int, *, seed: int | None = None, port_gbps: float, mtu: int, address=None) -> Device:
    if not 0 < port_gbps <= 1000:
        raise UsageError(f"port_gbps = {port_gbps!r}: must be in (0, 1000]")
    return Device(name, ports=ports, seed=seed, mtu=mtu, port_rate_bps=int(port_gbps * 1e9), address=address)


def pair_evs(topo, src: int, dst: int) -> list[int]:
    """Every EV that names a distinct path from `src` to `dst` (choices the pair does not use are 0)."""
    prof = topo.srv6_profile(src, dst)
    unused = [f for f in topo.ev_format.fields if f.name not in prof["uses"]]
    return [int(ev) for ev in topo.ev_format.all_evs() if all(((int(ev) >> f.shift) & f.mask) == 0 for f in unused)]


def setup_native_profiles(dev: Device, topo, src: int, dst: int, *, min_active: int | None = None) -> list[int]:
    """EV format + EXP EV profile carrying every path of (src -> dst); returns the EVs."""
    prof = topo.srv6_profile(src, dst)
    c = dev.ctl
    c.modify_ev_fmt_profile(EV_PROFILE, mode="SRv6", fields=list(prof["fmt_widths"]), state="OFFLINE")
    c.modify_ev_fmt_profile(EV_PROFILE, state="ONLINE")
    fields = [EvField(f["width"], f["init_val"], f["min_val"], f["max_val"], f["mask"]) for f in prof["fields"]]
    evs = pair_evs(topo, src, dst)
    c.modify_ev_profile(EV_PROFILE, mode="EXP", fmt_id=EV_PROFILE, count=len(evs), fields=fields, state="OFFLINE")
    for ev in evs:
        c.replace_ev(EV_PROFILE, EV_UNPOPULATED, CtlEv.from_int(ev, topo.ev_fields(ev)[0] + 1))
    c.modify_ev_profile(EV_PROFILE, min_active=max(1, len(evs) // 4) if min_active is None else min_active,
                        event_mask=3, state="ONLINE")
    return evs


def carrier_of(dev: Device, ev: int) -> int:
    """The controller's expansion of `ev` as a 128-bit address (what the NIC puts in the outer header)."""
    widths = [f.width for f in dev.ctl.query_ev_fmt_profile(EV_PROFILE).ev_fmt_op.fmt_fields]
    for e in dev.ctl.ev_table(EV_PROFILE):
        if e["value"] == ev:
            return int(e["expanded"]) << (128 - sum(widths))
    raise UsageError(f"ev = {ev:#x} is not in EV profile {EV_PROFILE}")


def setup_udp_profiles(dev: Device, ev_count: int) -> list[int]:
    c = dev.ctl
    c.modify_ev_profile(EV_PROFILE, mode="AUTO", count=ev_count, min_active=max(1, ev_count // 4), event_mask=3,
                        state="OFFLINE")
    c.modify_ev_profile(EV_PROFILE, state="ONLINE")
    return [e["value"] for e in c.ev_table(EV_PROFILE)]


def setup_cc(dev: Device, *, algorithm: str, base_rtt_us: float, window_bytes: int | None = None,
             target_delay_us: float | None = None) -> None:
    """CC profile: "nscc" (base RTT and, optionally, target queuing delay) or "none" (a fixed window)."""
    if not 1 <= base_rtt_us <= 1e6:
        raise UsageError(f"base_rtt_us = {base_rtt_us!r}: must be in [1, 1e6] microseconds")
    if algorithm not in ("nscc", "none"):
        raise UsageError(f"cc = {algorithm!r}: one of nscc, none")
    cfg = {"base_rtt_ns": int(base_rtt_us * 1000)}
    if target_delay_us is not None and algorithm == "nscc":
        if not 1 <= target_delay_us <= 1e6:
            raise UsageError(f"target_delay_us = {target_delay_us!r}: must be in [1, 1e6] microseconds")
        cfg["target_delay_ns"] = int(target_delay_us * 1000)
    if algorithm == "none":
        if not window_bytes or window_bytes < dev.mtu:
            raise UsageError(f"window = {window_bytes!r}: a fixed window needs at least one MTU ({dev.mtu} B)")
        cfg["max_cwnd"] = int(window_bytes)
    c = dev.ctl
    c.modify_cc_profile(CC_PROFILE, algorithm="uet-1.0-nscc" if algorithm == "nscc" else "fixed-window", state="OFFLINE")
    c.modify_cc_profile(CC_PROFILE, config=cfg, state="ONLINE")


def timeout_exponent(rto_ms: float) -> int:
    """The mrc.h ``timeout`` exponent whose 4.096 us x 2^t first reaches `rto_ms`."""
    if not 0 < rto_ms <= 60_000:
        raise UsageError(f"rto_ms = {rto_ms!r}: must be in (0, 60000]")
    return max(0, min(24, math.ceil(math.log2(rto_ms * 1000 / 4.096))))


@dataclass
class Connection:
    qa: object  # requester's QP (on device a)
    qb: object  # responder's QP (on device b)
    cqa: object
    cqb: object


def connect(dev_a: Device, dev_b: Device, peer_a, peer_b, *, rts: dict, cqe: int = 4096) -> Connection:
    """One QP on each device, connected to the other's `Peer` (`QueuePair.connect` both ways, with this
    module's profiles and `RTR` / `RTS` attributes, then `rts`)."""
    cqa, cqb = dev_a.create_cq(cqe), dev_b.create_cq(cqe)
    qa, qb = dev_a.create_qp(cqa), dev_b.create_qp(cqb)
    psn_a, psn_b = dev_a.initial_psn(), dev_b.initial_psn()  # random unless the devices are seeded
    attrs = {"ev_profile_id": EV_PROFILE, "cc_profile_id": CC_PROFILE, **RTR, **RTS, **rts}
    qa.connect(qb.qp_num, peer_b, sq_psn=psn_a, rq_psn=psn_b, **attrs)
    qb.connect(qa.qp_num, peer_a, sq_psn=psn_b, rq_psn=psn_a, **attrs)
    return Connection(qa, qb, cqa, cqb)
