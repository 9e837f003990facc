"""Building blocks the case scripts share: standard pairs of endpoints, data, EV shares."""
from __future__ import annotations

import collections

import numpy as np

from mrc.units import MS, NS, US

from ..adapter import EndpointConfig
from ..craft import Crafter
from ..reference import default_evs

__all__ = ["MS", "NS", "US", "pattern", "evs", "requester_pair", "responder_pair", "post", "sends_done",
           "ev_counts", "share", "by_psn", "first_seen", "retransmissions", "describe", "lose_first"]

def pattern(n: int, seed: int = 0) -> bytes:
    """`n` bytes nobody would write by accident."""
    return np.random.default_rng(seed + 1000).integers(0, 256, n, dtype=np.uint8).tobytes()


def evs(ports: int, per_port: int, side: int = 0, ev_mode: str = "STEV") -> list:
    return default_evs(ports, per_port, ev_mode, side)


def requester_pair(t, *, iut: dict | None = None, tester: dict | None = None, region: int = 1 << 20,
                   a_psn: int = 0, delay_ps: int = 2 * US):
    """The IUT as requester ("req") and the tester (reference) as responder ("rsp"), connected.

    Returns ``(scenario, req, rsp, region)`` with `region` registered on the responder.
    """
    sc = t.scenario(delay_ps=delay_ps)
    icfg = dict(ports=2, evs=evs(2, 8, 0))
    icfg.update(iut or {})
    tcfg = dict(ports=icfg["ports"], evs=evs(icfg["ports"], 8, 1, icfg.get("ev_mode", "STEV")),
                mtu=icfg.get("mtu", 4096), ev_mode=icfg.get("ev_mode", "STEV"))
    tester = dict(tester or {})
    # the tester does not probe its reverse (SACK) paths, so a requester case depends on the requester only
    tcfg["options"] = {"rev_probe_interval_ps": 1 << 50, **tester.pop("options", {})}
    tcfg.update(tester)
    req = sc.add("req", EndpointConfig(**icfg), iut=True)
    rsp = sc.add("rsp", EndpointConfig(**tcfg), iut=False)
    sc.connect(req, rsp, a_psn=a_psn)
    return sc, req, rsp, rsp.ep.reg_mr(region)


def responder_pair(t, *, iut: dict | None = None, rq_psn: int = 100, region: int = 64 * 1024):
    """The IUT as responder ("rsp") and a crafted requester ("req") whose packets the case builds.

    Returns ``(scenario, rsp, req, crafter, region)``; the crafted requester's first PSN is `rq_psn`.
    """
    sc = t.scenario()
    cfg = dict(ports=2, evs=evs(2, 4, 0))
    cfg.update(iut or {})
    rsp = sc.add("rsp", EndpointConfig(**cfg), iut=True)
    req = sc.crafted("req", qpn=0x4242, ports=cfg["ports"], ev_mode=cfg.get("ev_mode", "STEV"))
    sc.connect(req, rsp, a_psn=rq_psn)
    return sc, rsp, req, Crafter(req, rsp), rsp.ep.reg_mr(region)


def post(sc, node, wr_id: int, data: bytes, region, offset: int = 0, imm: int | None = None) -> None:
    node.ep.post_write(wr_id, data, remote_va=region.va + offset, rkey=region.rkey, imm=imm, now=sc.now)


def sends_done(node, n: int):
    """A predicate: `node` has at least `n` send completions."""
    return lambda: len(node.sends("send")) >= n


def ev_counts(pkts) -> collections.Counter:
    return collections.Counter(p.ev for p in pkts)


def share(pkts, ev: int) -> float:
    return sum(1 for p in pkts if p.ev == ev) / max(1, len(pkts))


def by_psn(pkts) -> dict:
    out = collections.defaultdict(list)
    for p in pkts:
        out[p.psn].append(p)
    return out


def first_seen(pkts) -> list:
    """Each PSN's first transmission, in send order."""
    seen, out = set(), []
    for p in pkts:
        if p.psn not in seen:
            seen.add(p.psn)
            out.append(p)
    return out


def retransmissions(pkts) -> list:
    """Every transmission of a PSN after its first."""
    seen, out = set(), []
    for p in pkts:
        if p.psn in seen:
            out.append(p)
        seen.add(p.psn)
    return out


def lose_first(psns, src: str = "req"):
    """A route that loses the first transmission of each PSN in `psns` sent by `src`."""
    todo = set(psns)

    def route(sc, p):
        if p.src == src and p.is_data and p.psn in todo:
            todo.discard(p.psn)
            return []
        return None

    return route


def describe(pkts, limit: int = 12) -> str:
    items = [f"{p.kind}:{p.psn}@{p.time / US:.1f}us" for p in pkts[:limit]]
    return "[" + ", ".join(items) + (", ..." if len(pkts) > limit else "") + "]"

