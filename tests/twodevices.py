"""Two `mrc.api.Device`s on the library's in-memory multi-plane network (`mrc.testing.simnet.SimNet`),
with explicit EV profiles, for the API and controller tests."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from mrc.api import Device, QpCap
from mrc.ctl import EV_UNPOPULATED, CtlEv
from mrc.ctl.ev_fields import EvField
from mrc.testing.simnet import SimNet
from mrc.units import US

def explicit_evs(side: int, count: int) -> list[int]:
    """Distinct 32-bit EV values for one device's explicit profile (what its packets carry)."""
    return [0x10000 * (side + 1) + k + 1 for k in range(count)]


def ctl_evs(side: int, count: int, ports: int = 2) -> list[CtlEv]:
    """The same EVs as the controller names them (`CtlEv`: value and port, round robin over the ports)."""
    return [CtlEv.from_int(v, k % ports + 1) for k, v in enumerate(explicit_evs(side, count))]


def setup_profiles(dev: Device, *, ev_mode: str = "EXP", ev_count: int = 16, min_active: int | None = None,
                   event_mask: int = 3, side: int = 0, cc: dict | None = None) -> None:
    """EV profile 1 (explicit 32-bit EVs round robin over the ports, or AUTO) and CC profile 1 (NSCC)."""
    c = dev.ctl
    min_active = ev_count // 4 if min_active is None else min_active
    if ev_mode == "EXP":
        c.modify_ev_fmt_profile(1, mode="STEV", fields=[32], state="OFFLINE")
        c.modify_ev_fmt_profile(1, state="ONLINE")
        c.modify_ev_profile(1, mode="EXP", fmt_id=1, count=ev_count, min_active=min_active, event_mask=event_mask,
                            fields=[EvField(32, mask=0xFFFFFFFF)], state="OFFLINE")
        for ev in ctl_evs(side, ev_count, dev.ports):
            c.replace_ev(1, EV_UNPOPULATED, ev)
    else:
        c.modify_ev_profile(1, mode=ev_mode, count=ev_count, min_active=min_active, event_mask=event_mask, state="OFFLINE")
    c.modify_ev_profile(1, state="ONLINE")
    c.modify_cc_profile(1, algorithm="uet-1.0-nscc", state="OFFLINE")
    c.modify_cc_profile(1, config=cc if cc is not None else {"base_rtt_ns": 8000}, state="ONLINE")


RTR = dict(rq_psn=0, mpr_dest=8, max_wimm_dest=16)
RTS = dict(sq_psn=0, mpr=8, max_wimm=16, retry_linear=7, retry_exp=7, timeout=4)


@dataclass
class Conn:
    qa: object
    qb: object
    cqa: object
    cqb: object


class TwoDevices:
    """Devices ``a`` (address "A") and ``b`` ("B"), profiles set up, joined by ``net``."""

    def __init__(self, *, ports: int = 2, ev_count: int = 16, ev_mode: str = "EXP", seed: int = 1, net_seed: int = 7,
                 delay_ps: int = 2 * US, jitter_ps: int = 0, loss: float = 0.0, min_active: int | None = None,
                 event_mask: int = 3, max_wr: int = 64, cc: dict | None = None):
        self.a = Device("a", ports=ports, seed=seed, address="A", max_wr=max_wr)
        self.b = Device("b", ports=ports, seed=seed + 1, address="B", max_wr=max_wr)
        for side, dev in enumerate((self.a, self.b)):
            setup_profiles(dev, ev_mode=ev_mode, ev_count=ev_count, min_active=min_active, event_mask=event_mask,
                           side=side, cc=cc)
        self.net = SimNet([self.a, self.b], seed=net_seed, delay_ps=delay_ps, jitter_ps=jitter_ps, loss=loss)

    def connect(self, *, rtr: dict | None = None, rts: dict | None = None, cap: QpCap | None = None, cqe: int = 1024) -> Conn:
        """One QP on each device, connected to each other and moved to RTS."""
        cqa, cqb = self.a.create_cq(cqe), self.b.create_cq(cqe)
        qa, qb = self.a.create_qp(cqa, cap=cap), self.b.create_qp(cqb, cap=cap)
        for q in (qa, qb):
            q.modify("INIT", ev_profile_id=1, cc_profile_id=1)
        qa.modify("RTR", dest_qp_num=qb.qp_num, remote_address="B", **{**RTR, **(rtr or {})})
        qb.modify("RTR", dest_qp_num=qa.qp_num, remote_address="A", **{**RTR, **(rtr or {})})
        for q in (qa, qb):
            q.modify("RTS", **{**RTS, **(rts or {})})
        return Conn(qa, qb, cqa, cqb)


@pytest.fixture
def two_devices() -> TwoDevices:
    return TwoDevices()


@pytest.fixture
def make_two_devices():
    return TwoDevices
