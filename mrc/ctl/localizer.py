"""Fault localisation from EV events: which link, switch or NIC port is broken, and how.

MRC's paths are explicit: on a fabric with SRv6 (or STEV) EVs, an EV between two hosts is a
known list of links (`mrc.fabric.Topology.route`), the same switches both ways. When the EVs
that cross one element go ASSUMED_BAD across many QPs, the intersection of their paths points
at the element (mrc-public-notes 3.9: the controller "can correlate these events across QPs to
pinpoint the specific failing link"). This is controller-side analysis: it reads what a
controller has (EV events, `mrc_ctl.h`; optionally the per-EV counters a QUERY_EV_STATE
returns) plus path knowledge, and decides nothing for the QPs. The emulator runs it live
between chunks (`mrc.emulator.localize`); `mrc.io` runs it on the events of real endpoints.

Evidence
--------
- *Events*: ``(t, local host, remote host, EV, state, drop_count)``; an ASSUMED_BAD event makes
  the path ``(hosts, EV)`` bad (a loss with no trim, or a timeout, on data one way or SACKs the
  other: both cross the same links), a GOOD event says it works again. SKIP (ECN or a trim) is
  never an event (`mrc_ctl.h` raises events for ASSUMED_BAD and GOOD only), so congestion that
  the fabric signals by marks and trims implicates nothing.
- *Paths in use* (`PATHS` rows): every (host pair, EV) some QP sprays on, with, when known, the
  EV's counters (packets sent, losses, ECN-marked acknowledgements, trims). A path in use
  that did not go bad is evidence that its elements carry traffic.

Algorithm (`Localizer.verdict`), at time t over the events of the window:
1. the bad paths, and per element (undirected link, switch) the bad paths through it ``b``,
   the paths in use through it ``u`` and the distinct host pairs among the bad ones;
2. greedy explanation (as set-cover fault localisation does): the element that explains the
   most bad paths not yet explained, ties to the one with the fewest paths in use (the most
   specific: a link before the switches at its ends, which also carry healthy paths); it is a
   suspect if it explains at least ``min_paths`` bad paths from ``min_pairs`` host pairs (one
   QP alone cannot tell its own NIC from the far end's); its paths are then explained; repeat;
3. each suspect is classified: ``congestion`` (its losses are a trickle beside the marks and
   trims on its bad paths, or a few of its paths went bad and those are the fabric's most marked:
   queues that overflow now and then; reported, never blamed), ``degraded`` (it loses packets and
   its paths are marked far above the fabric: a slow link), ``flapping`` (separate bursts that each
   take most of its paths), ``down`` (one such burst, or most of its bad paths still ASSUMED_BAD:
   probes fail), ``gray`` (paths that go bad and come back independently: random loss);
4. score: ``b / u``, the fraction of the element's paths in use that went bad (1 for a dead
   link once every EV through it was tried), with the evidence: which paths, QPs, EVs, when.

With EV counters, `degraded` finds links whose paths are marked far more than the parallel
links of the same tier and plane (spraying makes parallel links alike, so an outlier is the
link, not the load). Limits: one QP pair cannot localise (``min_pairs``); elements that every
bad path shares with another element are indistinguishable (a host with one peer: its NIC
link and the peer's); a gray loss is found once its losses have hit paths of two pairs.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable

import numpy as np

from mrc._jit import njit
from mrc.core import dtypes as D
from mrc.fabric.paths import MAX_ROUTE_PORTS, ev_route

EV_ASSUMED_BAD = int(D.EV_ASSUMED_BAD)
EV_GOOD = int(D.EV_GOOD)

EVENTS = np.dtype([("t", np.int64), ("a", np.int32), ("b", np.int32), ("ev", np.int64), ("state", np.int8),
                   ("drops", np.int64), ("label", np.int64)])
"""An EV event: time (ps), local host, remote host, EV, state (`mrc.core.dtypes` EV_*), drop
count, a label the caller chooses (the emulator: the QP)."""

PATHS = np.dtype([("a", np.int32), ("b", np.int32), ("ev", np.int64), ("tx", np.int64), ("losses", np.int64),
                  ("marks", np.int64), ("trims", np.int64)])
"""A path in use: hosts, EV and its counters (tx = -1: unknown, counted as in use)."""

VERDICTS = ("down", "flapping", "gray", "degraded", "congestion")
INT_PARAMS = ("min_pairs", "min_paths", "evidence_max", "compare_min_tx")


@dataclasses.dataclass(frozen=True)
class Params:
    min_pairs: int = 2  # distinct host pairs a suspect's bad paths must come from
    min_paths: int = 2  # bad paths a suspect must explain
    alpha: float = 0.01  # its bad paths must be this unlikely as noise (binomial tail at the rate elsewhere)
    window_us: float | None = None  # only events this recent (None: all)
    down_still: float = 0.5  # share of its bad paths still ASSUMED_BAD that makes a suspect "down"
    down_ratio: float = 0.8  # an outage: this share of the element's paths in use still ASSUMED_BAD ...
    outage_us: float = 0.0  # ... each for at least this long while its QPs went on (real endpoints: noise recovers)
    burst_gap_us: float = 20.0  # an element's bad events further apart than this are separate bursts
    congestion_min: float = 0.01  # marks + trims per packet on its paths below which its queues are not full
    load_ratio: float = 2.0  # its paths carry this many times the marks + trims per packet of comparable paths: its
    # queues are fuller than theirs (load, or a slow link)
    loss_ratio: float = 2.0  # its paths lose this many times the share of packets comparable paths lose (and
    # significantly, `alpha`): losses that load elsewhere does not explain
    compare_min_tx: int = 1000  # packets the comparable paths (same host pairs, avoiding it) must have carried, else
    # every path avoiding it is the comparison
    congestion_ratio: float = 10.0  # with nothing to compare to: marks + trims per loss on its paths that make it load
    saturated_min: float = 0.03  # marks + trims per packet on its paths from which, when comparable paths are loaded
    # (congestion_min) and lose packets too, losses a trickle beside its marks (congestion_ratio) are congestion drops
    # even when they exceed the comparable paths': such drops come in bursts, the binomial test does not apply
    burst_loss_ratio: float = 20.0  # ... as long as its share of packets lost is under this many times theirs (at
    # least 0.5 loss over their packets: few comparable packets prove little). localize_eval: a gray or dead link
    # on a saturated path loses 36-180x its neighbours; 4x overload's bursts 2.5-4.7x, an incast's host link 10.6x
    stuck_us: float = 250.0  # a path still ASSUMED_BAD this long after its last bad event is stuck: probes fail (the
    # core probes an ASSUMED_BAD EV every 100 us, `ev_probe_interval_ps`; a gray loss lets the first probe through)
    outage_share: float = 0.5  # a burst of bad events is an outage when it takes this share of the element's bad
    outage_repeat: float = 1.5  # ... paths and each of them at most this many times on average (churn is not)
    degraded_ratio: float = 4.0  # marks per packet of a link vs the median of its parallel links
    degraded_min: float = 0.02
    evidence_max: int = 12  # events kept per suspect

    def check(self) -> "Params":
        from mrc.errors import ConfigError

        for k in INT_PARAMS:
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"localize.{k}", v, "must be an integer >= 1")
        for k in ("alpha", "down_still", "down_ratio", "outage_us", "burst_gap_us", "congestion_ratio", "congestion_min",
                  "saturated_min", "burst_loss_ratio", "load_ratio", "loss_ratio", "stuck_us", "outage_share",
                  "outage_repeat", "degraded_ratio", "degraded_min"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
                raise ConfigError(f"localize.{k}", v, "must be a number >= 0")
        if self.window_us is not None and (not isinstance(self.window_us, (int, float)) or self.window_us <= 0):
            raise ConfigError("localize.window_us", self.window_us, "must be a positive number of us (or none)")
        return self


@dataclasses.dataclass(frozen=True)
class Suspect:
    element: str  # "p0.t0.1-p0.t1.3" (link), "p0.t1.3" (switch), "h5:nic0" (a NIC port's link)
    kind: str  # "link", "switch", "nic-port"
    verdict: str  # one of VERDICTS
    score: float  # bad paths / paths in use through it
    bad_paths: int
    paths: int
    pairs: int
    still_bad: int  # bad paths whose last event is ASSUMED_BAD
    first_us: float
    last_us: float
    ports: tuple[int, ...]  # fabric ports of the element (both ends of a link; every port of a switch)
    evidence: tuple[dict, ...] = ()
    marks_per_pkt: float | None = None
    source: str = "ev"  # "ev": EV events and paths; "port": the hosts' own NIC port states; "counters"
    decided_us: float | None = None  # "port": when the port events that make it were all in
    load: dict | None = None  # the counters its verdict weighed (`Load`), when the paths had counters

    @property
    def blamed(self) -> bool:
        return self.verdict != "congestion"

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["evidence"] = list(self.evidence)
        d["ports"] = list(self.ports)
        return d


@dataclasses.dataclass(frozen=True)
class Verdict:
    t_us: float
    suspects: tuple[Suspect, ...]
    bad_paths: int
    unexplained: int  # bad paths no suspect explains

    @property
    def blamed(self) -> tuple[Suspect, ...]:
        return tuple(s for s in self.suspects if s.blamed)

    def as_dict(self) -> dict:
        return {"t_us": self.t_us, "bad_paths": self.bad_paths, "unexplained": self.unexplained,
                "suspects": [s.as_dict() for s in self.suspects]}


@dataclasses.dataclass(frozen=True)
class Load:
    """What the path counters say about an element: marks + trims (``sig``), losses and packets (``tx``) over the
    paths through it, the same over comparable paths (``c_*``: the same host pairs' paths that avoid it, or every
    path that avoids it, as ``compared`` says; "" when too few packets were left to compare), and whether it is a
    fabric link whose mark rate stands out among its parallel links (``outlier``)."""

    sig: float
    losses: float
    tx: float
    c_sig: float
    c_losses: float
    c_tx: float
    compared: str
    outlier: bool


def load_verdict(load: Load | None, p: "Params") -> str | None:
    """"congestion" or "degraded" when load explains an element's losses, None when it does not (a fault: then the
    timing of its bad paths decides, `outage_verdict`).

    Losses coincide with full queues when the element's paths are marked and trimmed ``load_ratio`` times as much
    as comparable ones (its queues are fuller) or when they lose no more than comparable paths that are themselves
    loaded (congestion everywhere); losses well above the comparable paths' (``loss_ratio`` times, and unlikely as
    noise at ``alpha``) on paths no fuller than theirs are a fault, whatever the load around, unless its queues are
    saturated (``saturated_min``), the comparable paths loaded, its loss rate under ``burst_loss_ratio`` times
    theirs (floored at 0.5 loss) and its losses a trickle beside its marks and trims (``congestion_ratio``):
    congestion drops, which come in bursts. Full queues with excess
    losses are a slow link (`degraded`) when the link stands out among its parallel links, else congestion (an
    incast at a host's link, a hot switch). Without anything to compare to, losses a trickle beside marks and trims
    (``congestion_ratio``) are congestion."""
    if load is None or load.tx <= 0:
        return None
    m_e = load.sig / load.tx
    if not load.compared:
        full = m_e >= p.congestion_min and load.sig >= p.congestion_ratio * max(load.losses, 1.0)
        return "congestion" if full else None
    m_c = load.c_sig / load.c_tx
    rate = max(load.c_losses / load.c_tx, 0.5 / load.c_tx)
    full = m_e >= p.congestion_min and m_e >= p.load_ratio * m_c
    excess = load.losses > p.loss_ratio * rate * load.tx and \
        _tail(int(load.losses), int(load.tx), rate) <= p.alpha
    if excess:
        if full:
            return "degraded" if load.outlier else "congestion"
        # its queues full, those around loaded, its losses a trickle beside its marks and trims and within
        # burst_loss_ratio of the comparable paths' (their rate floored at 0.5 loss): congestion drops, which come in
        # bursts, so more here than on comparable paths by chance (one plane of a host's links under 4x overload or
        # an incast). Where many comparable packets lose nothing (trimming keeps congestion lossless), a gray link's
        # losses stand far above the floor
        saturated = m_e >= p.saturated_min and m_c >= p.congestion_min and \
            load.losses / load.tx < p.burst_loss_ratio * rate and load.sig >= p.congestion_ratio * load.losses
        return "congestion" if saturated else None
    return "congestion" if max(m_e, m_c) >= p.congestion_min else None


def outage_verdict(times: list, stuck: int, p: "Params") -> str:
    """down, flapping or gray from the times of an element's bad events (one list per bad path) and how many of its
    bad paths are stuck ASSUMED_BAD (``stuck_us``: their probes fail).

    Most paths stuck: down. Otherwise the events are split into bursts where they pause longer than
    ``burst_gap_us``; an *outage* burst takes ``outage_share`` of the bad paths, each about once (at most
    ``outage_repeat`` events per path: paths that fail and come back over and over within a burst are churn, which
    random loss makes). Outages that hold most of the events: two or more, flapping; one, down (a reboot: every path
    fails at once, then all come back). Anything else, gray: paths that go bad and come back independently."""
    n = len(times)
    if n and stuck >= p.down_still * n:
        return "down"
    events = sorted((t, k) for k, ts in enumerate(times) for t in ts)
    gap = p.burst_gap_us * 1e6
    bursts: list[list] = []
    last = None
    for t, k in events:
        if last is None or t - last > gap:
            bursts.append([])
        bursts[-1].append(k)
        last = t
    need = max(p.min_paths, p.outage_share * n)
    outages = [b for b in bursts if len(set(b)) >= need and len(b) <= p.outage_repeat * len(set(b))]
    held = sum(len(b) for b in outages)
    if outages and held >= 0.5 * len(events):
        return "flapping" if len(outages) >= 2 else "down"
    return "gray"


def _tail(b: int, n: int, p: float) -> float:
    """P(X >= b) for X ~ Binomial(n, p)."""
    import math

    if b <= 0:
        return 1.0
    if p >= 1.0:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    below = sum(math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * lp + (n - k) * lq)
                for k in range(min(b, n + 1)))
    return max(0.0, 1.0 - below)


@njit
def _route_ports(F, a, b, ev, out, lens):
    """Ports of each (a, b, ev) path into out[k, :lens[k]] (lens -1: invalid)."""
    row = np.empty(out.shape[1], np.int64)
    for k in range(a.shape[0]):
        from_ = a[k]
        n = ev_route(F, from_, b[k], ev[k], row)
        lens[k] = n
        for j in range(max(n, 0)):
            out[k, j] = row[j]



class Localizer:
    """Accumulates EV events and path knowledge for one fabric; `verdict(t)` localises.

    >>> loc = Localizer(topo)
    >>> loc.add_events(t_ps, local_hosts, remote_hosts, evs, states)
    >>> loc.set_paths(paths)              # PATHS rows: what the QPs spray on (and counters)
    >>> v = loc.verdict()                 # Verdict: ranked suspects with evidence
    >>> loc.update(t_ps); loc.named_at    # live: when each element was first blamed
    """

    def __init__(self, topo, params: Params | None = None, **kw):
        self.topo = topo
        self.p = (params or Params(**kw)).check() if not (params and kw) else dataclasses.replace(params, **kw).check()
        self.events = np.zeros(0, EVENTS)
        self._pending: list[np.ndarray] = []
        self.port_events: list[tuple[int, int, int, bool]] = []  # (t ps, host, plane, up)
        self.pair_active: dict[tuple[int, int], int] = {}  # (lo, hi) host pair -> its QPs ran until (ps)
        self.paths = np.zeros(0, PATHS)
        self._rates = self._link_rates = self._by_pair = None  # per set of paths: `_mark_rates`, `_counts`,
        self._totals = np.zeros(3)  # `_pair_keys`; the totals of marks + trims, losses, packets
        self._route_cache: dict[tuple[int, int, int], np.ndarray] = {}
        self.named_at: dict[str, float] = {}  # element -> first time (us) blamed, by `update`
        self.first_verdict: dict[str, Suspect] = {}
        fp = topo.port
        self.n_ports = int(topo.n_ports)
        self.link_of = np.minimum(np.arange(self.n_ports), fp["peer"].astype(np.int64))  # undirected link id

    # ------------------------------------------------------------ input

    def add_events(self, t, a, b, ev, state, drops=None, label=None) -> None:
        """EV events (arrays or scalars): time in ps, local and remote host, EV, state, drop count, label."""
        t = np.atleast_1d(np.asarray(t, np.int64))
        n = len(t)
        rows = np.zeros(n, EVENTS)
        rows["t"] = t
        for name, v in (("a", a), ("b", b), ("ev", ev), ("state", state)):
            rows[name] = np.broadcast_to(np.asarray(v), (n,))
        rows["drops"] = 0 if drops is None else np.broadcast_to(np.asarray(drops), (n,))
        rows["label"] = -1 if label is None else np.broadcast_to(np.asarray(label), (n,))
        nh = self.topo.n_hosts
        bad = (rows["a"] < 0) | (rows["a"] >= nh) | (rows["b"] < 0) | (rows["b"] >= nh)
        if bad.any():
            from mrc.errors import UsageError

            k = int(np.flatnonzero(bad)[0])
            raise UsageError(f"event {k}: hosts {rows['a'][k]}, {rows['b'][k]}: the fabric's hosts are 0..{nh - 1}")
        if n:
            self._pending.append(rows)

    def note_pair_active(self, a: int, b: int, t: int) -> None:
        """The QPs between hosts `a` and `b` were running until `t` ps (a transfer's end): how long a path has
        stayed ASSUMED_BAD is measured against this as well as against the pair's last EV event."""
        k = (min(int(a), int(b)), max(int(a), int(b)))
        self.pair_active[k] = max(int(t), self.pair_active.get(k, 0))

    def add_port_event(self, t: int, host: int, plane: int, up: bool) -> None:
        """A host's NIC port on `plane` went down (or up) at `t` ps: what the host's controller knows of its own
        ports (the NIC sees its link; peers learn it by the port status update, not by EV events)."""
        if not 0 <= host < self.topo.n_hosts or not 0 <= plane < self.topo.n_planes:
            from mrc.errors import UsageError

            raise UsageError(f"port event: host {host}, plane {plane}: hosts are 0..{self.topo.n_hosts - 1}, "
                             f"planes 0..{self.topo.n_planes - 1}")
        self.port_events.append((int(t), int(host), int(plane), bool(up)))

    def _port_suspects(self, t: int) -> list[Suspect]:
        """NIC ports that went down: a T0 whose host links went down together (`min_pairs` of them or more) is
        the suspect, else each NIC port's link."""
        lo = t - int(self.p.window_us * 1e6) if self.p.window_us is not None else -1
        down: dict[tuple[int, int], int] = {}
        for tt, h, pl, up in sorted(self.port_events):
            if tt <= t and not up and tt >= lo and (h, pl) not in down:
                down[(h, pl)] = tt
        topo = self.topo
        by_t0: dict[int, list[tuple[int, int, int]]] = {}
        for (h, pl), tt in down.items():
            q = topo.nic_port(h, pl)
            by_t0.setdefault(int(topo.port[q]["peer_node"]), []).append((tt, h, pl))
        out = []
        for t0, items in sorted(by_t0.items()):
            items.sort()
            ev = tuple({"t_us": tt / 1e6, "host": h, "plane": pl, "port": "down"} for tt, h, pl in items)
            n_hosts = int(topo.node[t0]["n_down"])
            if len(items) >= self.p.min_pairs:
                name, kind, ports = self.element_name(self.n_ports + t0)
                out.append(Suspect(name, kind, "down", len(items) / n_hosts, 0, 0, len(items), len(items),
                                   items[0][0] / 1e6, items[-1][0] / 1e6, ports, ev[: self.p.evidence_max],
                                   source="port", decided_us=items[self.p.min_pairs - 1][0] / 1e6))
                continue
            for tt, h, pl in items:
                name, kind, ports = self.element_name(int(self.link_of[topo.nic_port(h, pl)]))
                out.append(Suspect(name, kind, "down", 1.0, 0, 0, 1, 1, tt / 1e6, tt / 1e6, ports,
                                   ({"t_us": tt / 1e6, "host": h, "plane": pl, "port": "down"},), source="port",
                                   decided_us=tt / 1e6))
        return out

    def set_paths(self, paths: np.ndarray) -> None:
        """The paths in use now (`PATHS` rows), replacing the previous set."""
        if paths.dtype != PATHS:
            raise TypeError("paths must be a PATHS table (mrc.ctl.localizer.PATHS)")
        self.paths = paths
        self._rates = self._link_rates = self._by_pair = None  # computed again from these paths when first asked

    def _merge(self) -> None:
        if self._pending:
            ev = np.concatenate([self.events] + self._pending)
            self.events = ev[np.argsort(ev["t"], kind="stable")]
            self._pending = []

    # ------------------------------------------------------------ paths -> elements

    def _routes(self, a, b, ev) -> list[np.ndarray]:
        """Each path's elements: undirected link ids (lower port) and switch ids (n_ports + node)."""
        keys = list(zip(a.tolist(), b.tolist(), ev.tolist()))
        missing = [k for k in dict.fromkeys(keys) if k not in self._route_cache]
        if missing:
            m = np.array(missing, np.int64).reshape(-1, 3)
            lo, hi = np.minimum(m[:, 0], m[:, 1]), np.maximum(m[:, 0], m[:, 1])
            out = np.zeros((len(m), MAX_ROUTE_PORTS), np.int64)
            lens = np.zeros(len(m), np.int64)
            _route_ports(self.topo.arrays, lo, hi, m[:, 2], out, lens)
            fp = self.topo.port
            for k, key in enumerate(missing):
                n = int(lens[k])
                if n <= 0:
                    self._route_cache[key] = np.zeros(0, np.int64)
                    continue
                ports = out[k, :n]
                links = self.link_of[ports]
                nodes = fp["peer_node"][ports[:-1]].astype(np.int64)  # switches passed (the last peer is a host)
                self._route_cache[key] = np.concatenate([links, self.n_ports + nodes])
        return [self._route_cache[k] for k in keys]

    def element_name(self, e: int) -> tuple[str, str, tuple[int, ...]]:
        topo = self.topo
        if e >= self.n_ports:
            node = e - self.n_ports
            n = topo.node[node]
            start = int(n["port_start"])
            return topo.node_name(node), "switch", tuple(range(start, start + int(n["n_down"]) + int(n["n_up"])))
        q, peer = int(e), int(topo.port[e]["peer"])
        a, b = int(topo.port[q]["node"]), int(topo.port[peer]["node"])
        if topo.node[a]["kind"] == 0 or topo.node[b]["kind"] == 0:
            nic = q if topo.node[a]["kind"] == 0 else peer
            return topo.port_name(nic), "nic-port", (q, peer)
        if topo.node[a]["tier"] > topo.node[b]["tier"]:
            a, b = b, a
        return f"{topo.node_name(a)}-{topo.node_name(b)}", "link", (q, peer)

    # ------------------------------------------------------------ the verdict

    def verdict(self, t: int | None = None, upto: int | None = None) -> Verdict:
        """Suspects at time `t` (ps; default: the last event) from the events so far (the first `upto`)."""
        self._merge()
        ev = self.events if upto is None else self.events[:upto]
        if t is None:
            t = int(ev["t"][-1]) if len(ev) else 0
        ev = ev[ev["t"] <= t]
        if self.p.window_us is not None:
            ev = ev[ev["t"] >= t - int(self.p.window_us * 1e6)]
        t_us = t / 1e6
        ports = self._port_suspects(t)
        if not len(ev):
            return Verdict(t_us, tuple(ports), 0, 0)
        lo = np.minimum(ev["a"], ev["b"]).astype(np.int64)
        hi = np.maximum(ev["a"], ev["b"]).astype(np.int64)
        # per path (pair, EV): bad events, last state, first / last bad time
        paths: dict[tuple[int, int, int], dict] = {}
        for k in range(len(ev)):
            pk = (int(lo[k]), int(hi[k]), int(ev["ev"][k]))
            st = int(ev["state"][k])
            d = paths.get(pk)
            if d is None:
                if st != EV_ASSUMED_BAD:
                    continue
                d = paths[pk] = {"bad": 0, "first": int(ev["t"][k]), "last": 0, "state": st, "events": [],
                                 "times": []}
            if st == EV_ASSUMED_BAD:
                d["bad"] += 1
                d["last"] = int(ev["t"][k])
                d["times"].append(d["last"])
            d["state"] = st
            if len(d["events"]) < 4:
                d["events"].append(k)
        if not paths:
            return Verdict(t_us, tuple(ports), 0, 0)
        bad_keys = list(paths)
        bk = np.array(bad_keys, np.int64).reshape(-1, 3)
        bad_elems = self._routes(bk[:, 0], bk[:, 1], bk[:, 2])
        # paths in use: the declared ones plus the bad ones (a path that went bad was in use)
        use = self.paths[self.paths["tx"] != 0]  # tx -1: counters unknown, in use
        ukeys = set(zip(np.minimum(use["a"], use["b"]).tolist(), np.maximum(use["a"], use["b"]).tolist(),
                        use["ev"].tolist())) | set(bad_keys)
        uk = np.array(sorted(ukeys), np.int64).reshape(-1, 3)
        used_elems = self._routes(uk[:, 0], uk[:, 1], uk[:, 2])
        n_el = self.n_ports + int(self.topo.n_nodes)
        u = np.bincount(np.concatenate(used_elems) if used_elems else np.zeros(0, np.int64), minlength=n_el)
        # congestion rates per path (when counters are known)
        rate_all, path_rate = self._mark_rates()
        n_used = len(uk)
        # still ASSUMED_BAD, for `outage_us` at least while its host pair's QPs went on (their last event)
        pair_last: dict[tuple[int, int], int] = {k: min(v, t) for k, v in self.pair_active.items()}
        for a_, b_, tt in zip(lo.tolist(), hi.tolist(), ev["t"].tolist()):
            pair_last[(a_, b_)] = max(tt, pair_last.get((a_, b_), 0))
        hold = int(self.p.outage_us * 1e6)
        stuck = [i for i, k in enumerate(bad_keys) if paths[k]["state"] == EV_ASSUMED_BAD
                 and paths[k]["last"] <= pair_last[(k[0], k[1])] - hold]
        # pass 1, outages: the paths still ASSUMED_BAD (probes fail), explained by elements most of whose
        # paths are; pass 2, everything that went bad in the window and is not explained yet
        suspects: list[Suspect] = []
        remaining = set(range(len(bad_keys)))
        for pool, min_ratio in ((stuck, self.p.down_ratio), (sorted(remaining), 0.0)):
            pool = [i for i in pool if i in remaining]
            for e, expl in self._greedy(pool, bad_elems, bad_keys, u, n_used, n_el, min_ratio):
                all_through = [i for i in range(len(bad_keys)) if e in set(bad_elems[i].tolist())]
                suspects.append(self._suspect(e, all_through, bad_keys, paths, ev, int(u[e]), rate_all, path_rate, t))
                remaining -= set(expl)
        suspects += self._degraded(rate_all, {s.element for s in suspects}, t_us)
        suspects += [s for s in ports if s.element not in {x.element for x in suspects}]
        unexplained = len(remaining)
        suspects.sort(key=lambda s: (not s.blamed, -s.bad_paths, -s.score, s.element))
        return Verdict(t_us, tuple(suspects), len(bad_keys), unexplained)

    def _greedy(self, pool, bad_elems, bad_keys, u, n_used, n_el, min_ratio):
        """Greedy explanation of the bad paths `pool` (indices): yields (element, paths it explains)."""
        if not pool:
            return
        b_all = np.bincount(np.concatenate([bad_elems[i] for i in pool]), minlength=n_el)
        ratio = b_all / np.maximum(u, 1)
        remaining = set(pool)
        while remaining:
            rem = sorted(remaining)
            flat = np.concatenate([bad_elems[i] for i in rem])
            if not len(flat):
                return
            b_rem = np.bincount(flat, minlength=n_el)
            # explained bad paths weighted by how many of the element's paths went bad: a link before the
            # switches at its ends (which carry healthy paths too), a switch before one of its links when
            # the bad paths cross several of its links
            key = b_rem * ratio
            order = np.lexsort((np.arange(n_el), -ratio, -key))
            pick = None
            for e in order[:64]:
                e = int(e)
                if b_rem[e] < self.p.min_paths:
                    continue
                if ratio[e] < min_ratio:
                    continue
                expl = [i for i in rem if e in set(bad_elems[i].tolist())]
                pairs = {(bad_keys[i][0], bad_keys[i][1]) for i in expl}
                if len(pairs) < self.p.min_pairs:
                    continue
                # more bad paths than the noise elsewhere explains: binomial tail at the rate of bad
                # paths among the paths that avoid the element
                base = (len(pool) - b_all[e]) / max(n_used - u[e], 1)
                if _tail(int(b_all[e]), int(max(u[e], b_all[e])), max(base, 0.5 / n_used)) > self.p.alpha:
                    continue
                pick = (e, expl)
                break
            if pick is None:
                return
            yield pick
            remaining -= set(pick[1])

    def _mark_rates(self):
        """Marks + trims per packet over every path in use, and per path key (marks + trims, losses, packets).
        Once per set of paths (`set_paths`): a verdict and its bisection in `update` share it."""
        if self._rates is None:
            self._rates = self._compute_mark_rates()
        return self._rates

    def _compute_mark_rates(self):
        use = self.paths
        known = use[use["tx"] > 0] if len(use) else use
        if not len(known):
            return None, {}
        sig = known["marks"] + known["trims"]
        rate_all = float(sig.sum()) / float(known["tx"].sum())
        keys = np.stack([np.minimum(known["a"], known["b"]).astype(np.int64),
                         np.maximum(known["a"], known["b"]).astype(np.int64), known["ev"].astype(np.int64)], axis=1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)  # both QPs of a pair count on the same path
        inv = inv.reshape(-1)
        sums = np.zeros((len(uniq), 3), np.int64)
        for c, col in enumerate((sig, known["losses"], known["tx"])):
            np.add.at(sums[:, c], inv, col.astype(np.int64))
        per_path = dict(zip(map(tuple, uniq.tolist()), sums.tolist()))
        return rate_all, per_path

    def _suspect(self, e, idx, bad_keys, paths, ev, used, rate_all, path_rate, t) -> Suspect:
        name, kind, ports = self.element_name(e)
        recs = [paths[bad_keys[i]] for i in idx]
        pairs = {(bad_keys[i][0], bad_keys[i][1]) for i in idx}
        first = min(d["first"] for d in recs)
        last = max(d["last"] for d in recs)
        still = sum(1 for d in recs if d["state"] == EV_ASSUMED_BAD)
        stuck = sum(1 for d in recs if d["state"] == EV_ASSUMED_BAD and t - d["last"] >= self.p.stuck_us * 1e6)
        load = self._load(e, pairs)
        verdict = load_verdict(load, self.p) or outage_verdict([d["times"] for d in recs], stuck, self.p)
        score = len(idx) / used if used else 1.0
        evid = []
        for i in sorted(idx, key=lambda i: paths[bad_keys[i]]["first"])[: self.p.evidence_max]:
            d = paths[bad_keys[i]]
            k = d["events"][0]
            evid.append({"t_us": int(ev["t"][k]) / 1e6, "src": int(ev["a"][k]), "dst": int(ev["b"][k]),
                         "ev": int(ev["ev"][k]), "label": int(ev["label"][k]), "bad_events": d["bad"],
                         "drop_count": int(ev["drops"][k]),
                         "state": "ASSUMED_BAD" if d["state"] == EV_ASSUMED_BAD else "GOOD"})
        mpp = load.sig / load.tx if load is not None and load.tx > 0 else None
        return Suspect(name, kind, verdict, score, len(idx), used, len(pairs), still,
                       first / 1e6, last / 1e6, ports, tuple(evid), mpp,
                       load=None if load is None else dataclasses.asdict(load))

    def _pair_keys(self) -> dict:
        """Host pair -> the keys of its paths with counters (once per set of paths)."""
        if self._by_pair is None:
            self._by_pair = {}
            for key in self._mark_rates()[1]:
                self._by_pair.setdefault((key[0], key[1]), []).append(key)
        return self._by_pair

    def _load(self, e, pairs) -> "Load | None":
        """The counters of the paths through element `e` and of comparable ones (`Load`); None without counters."""
        rate_all, per_path = self._mark_rates()
        if rate_all is None:
            return None
        sig, tx, losses, outlier = self._counts()
        through = np.array([sig[e], losses[e], tx[e]], np.float64)
        comp = np.zeros(3)
        for pair in pairs:
            keys = self._pair_keys().get(pair, [])
            k = np.array(keys, np.int64).reshape(-1, 3)
            for key, route in zip(keys, self._routes(k[:, 0], k[:, 1], k[:, 2])):
                if e not in route:
                    comp += per_path[key]
        compared = "pairs"
        if comp[2] < self.p.compare_min_tx:
            comp = self._totals - through
            compared = "fabric"
        if comp[2] < self.p.compare_min_tx:
            comp[:] = 0
            compared = ""
        return Load(float(through[0]), float(through[1]), float(through[2]), float(comp[0]), float(comp[1]),
                    float(comp[2]), compared, bool(outlier[e]))

    def _counts(self):
        """Per element: marks + trims, packets, losses over the paths with counters, and whether it is a fabric link
        whose mark rate is an outlier among its parallel links (`_parallel_outliers`). Once per set of paths."""
        if self._link_rates is None:
            use = self.paths
            known = use[use["tx"] > 0]
            sig, tx, losses = self._element_counts(known)
            self._totals = np.array([float((known["marks"] + known["trims"]).sum()), float(known["losses"].sum()),
                                     float(known["tx"].sum())])
            self._link_rates = (sig, tx, losses, self._parallel_outliers(sig, tx))
        return self._link_rates

    def _parallel_groups(self, tx):
        """Fabric links with traffic grouped with their parallel links: same plane, the same pair of tiers, the lower
        end the same switch (a host's own link is never grouped: incast lives there). (links, groups of indices)."""
        topo = self.topo
        fp, node = topo.port, topo.node
        links = np.flatnonzero(tx[: self.n_ports] > 0)
        a_node = fp["node"][links]
        b_node = fp["peer_node"][links]
        host_link = (node["kind"][a_node] == 0) | (node["kind"][b_node] == 0)
        tiers = np.minimum(node["tier"][a_node], node["tier"][b_node])
        groups: dict[tuple, list[int]] = {}
        for k, q in enumerate(links):
            if host_link[k]:
                continue
            low = a_node[k] if node["tier"][a_node[k]] == tiers[k] else b_node[k]
            groups.setdefault((int(fp["plane"][q]), int(tiers[k]), int(low)), []).append(k)
        return links, [m for m in groups.values() if len(m) >= 3]

    def _parallel_outliers(self, sig, tx) -> np.ndarray:
        """Per element: a fabric link whose marks + trims per packet are `degraded_ratio` times its parallel links'
        median (and at least `degraded_min`): spraying loads parallel links alike, so an outlier is the link."""
        out = np.zeros(len(tx), np.bool_)
        links, groups = self._parallel_groups(tx)
        if not len(links):
            return out
        rate = sig[links] / tx[links]
        for members in groups:
            r = rate[members]
            med = float(np.median(r))
            for j in members:
                if rate[j] >= self.p.degraded_min and rate[j] > self.p.degraded_ratio * max(med, 1e-9):
                    out[int(links[j])] = True
        return out

    def _degraded(self, rate_all, named, t_us) -> list[Suspect]:
        """Fabric links whose paths carry far more marks and trims than their parallel links'."""
        if rate_all is None or not len(self.paths):
            return []
        sig, tx, _, outlier = self._counts()
        links, groups = self._parallel_groups(tx)
        out = []
        for members in groups:
            r = sig[links[members]] / tx[links[members]]
            j = int(np.argmax(r))
            e = int(links[members[j]])
            if not outlier[e]:
                continue
            name, kind, ports = self.element_name(e)
            if name in named:
                continue
            out.append(Suspect(name, kind, "degraded", float(r[j]), 0, int(tx[e]), 0, 0, t_us, t_us, ports, (
                {"marks_per_pkt": float(r[j]), "parallel_median": float(np.median(r)), "parallel_links": len(members)},),
                float(r[j]), source="counters", decided_us=t_us))
        return out

    def _element_counts(self, known):
        """Marks + trims, packets and losses per element (`_routes` ids) over the paths `known`, summed in path order
        (a loop-free path passes each element once)."""
        n_el = self.n_ports + int(self.topo.n_nodes)
        marks = np.zeros(n_el)
        tx = np.zeros(n_el)
        losses = np.zeros(n_el)
        elems = self._routes(np.minimum(known["a"], known["b"]).astype(np.int64),
                             np.maximum(known["a"], known["b"]).astype(np.int64), known["ev"].astype(np.int64))
        lens = np.fromiter((len(e) for e in elems), np.int64, len(elems))
        if lens.sum():
            flat = np.concatenate(elems)
            rep = np.repeat(np.arange(len(elems)), lens)
            np.add.at(marks, flat, (known["marks"] + known["trims"])[rep].astype(np.float64))
            np.add.at(tx, flat, known["tx"][rep].astype(np.float64))
            np.add.at(losses, flat, known["losses"][rep].astype(np.float64))
        return marks, tx, losses

    # ------------------------------------------------------------ live use

    def update(self, t: int) -> list[Suspect]:
        """Verdict at `t` (ps); elements blamed for the first time get `named_at` = the time of the earliest
        event after which the verdict names them (found by bisection over the new events). Returns them."""
        n_old = len(self.events)
        self._merge()
        v = self.verdict(t)
        new = [s for s in v.blamed if s.element not in self.named_at]
        for s in new:
            if s.source != "ev":
                self.named_at[s.element] = s.decided_us
                self.first_verdict[s.element] = s
                continue
            lo, hi = n_old, len(self.events)  # the verdict with events[:hi] names it
            while lo < hi:
                mid = (lo + hi) // 2
                if any(x.element == s.element and x.blamed for x in self.verdict(t, upto=mid).suspects):
                    hi = mid
                else:
                    lo = mid + 1
            at = int(self.events["t"][max(lo - 1, 0)]) if len(self.events) else t
            self.named_at[s.element] = at / 1e6
            self.first_verdict[s.element] = s
        return new


def localize(topo, events: np.ndarray, paths: np.ndarray | None = None, t: int | None = None, **params) -> Verdict:
    """One-shot: the `Verdict` of `events` (`EVENTS` rows) and `paths` (`PATHS` rows) at `t` (ps)."""
    loc = Localizer(topo, **params)
    if len(events):
        loc.add_events(events["t"], events["a"], events["b"], events["ev"], events["state"], events["drops"],
                       events["label"])
    if paths is not None:
        loc.set_paths(paths)
    return loc.verdict(t)


def matches(suspect_ports, failure_ports) -> bool:
    """Does a suspect name a failure's element? A link suspect (its two ports) names a failure of either
    port; a switch suspect names the failure of that switch (every one of its ports)."""
    s, f = set(int(q) for q in suspect_ports), set(int(q) for q in failure_ports)
    return f <= s and len(s) <= max(2, len(f))


def time_to_localise(named: dict, failures: Iterable[dict]) -> list[dict]:
    """Per failure (dicts with ``index``, ``at_us``, ``ports``): the first element named at or after the
    failure that `matches` it, and how long after the failure (`named`: element -> (time us, ports))."""
    out = []
    for f in failures:
        hits = [(at, name) for name, (at, ports) in named.items() if at >= f["at_us"] and matches(ports, f["ports"])]
        at, name = min(hits) if hits else (None, None)
        out.append({"index": f["index"], "element": name, "named_at_us": at,
                    "time_to_localise_us": None if at is None else at - f["at_us"]})
    return out
