"""`Topology`: a built fabric (arrays, tables, EV format, switch defaults) and its Python API.

Compiled code takes ``topo.arrays`` (a `FabricArrays` namedtuple of numpy
arrays and ints; docs/fabric.md lists every field). The methods here are the
Python faces of the compiled functions in `paths`, `ecmp` and `reverse`.
"""
from __future__ import annotations

import ipaddress
import pathlib
import re
from typing import Any, Mapping, NamedTuple

import numpy as np

from mrc.errors import ConfigError, UsageError
from mrc.fabric import address as AD
from mrc.fabric import ecmp as _ecmp
from mrc.fabric import paths as _paths
from mrc.fabric.build import HOST, TIER_NAMES, build_arrays, seeds
from mrc.fabric.evformat import EvFormat, ev_format, srv6_profile
from mrc.fabric.presets import PRESETS, SwitchDefaults, switch_defaults
from mrc.fabric.spec import FabricSpec, load_toml, resolve
from mrc.fabric.tables import build_tables, entries, iproute2


class FabricArrays(NamedTuple):
    """Everything compiled code needs: a few structured arrays and ints (no Python object per link).

    Rows: ``node[n]`` (`build.NODE`), ``port[q]`` (`build.PORT`), ``tbl[e]``
    (`tables.TBL`), ``ev[f]`` (`evformat.EVF`). docs/fabric.md documents every field.
    """

    # shape
    n_hosts: int
    n_planes: int
    tiers: int  # 2 (leaf-spine) or 3 (fat-tree)
    hosts_per_leaf: int
    n_t0: int  # switches per plane in each tier
    n_t1: int
    n_t2: int
    t0_per_pod: int  # fat-tree: k/2 (leaf-spine: n_t0)
    t1_per_pod: int  # fat-tree: k/2 (leaf-spine: n_t1)
    switches_per_plane: int
    n_nodes: int
    n_ports: int
    agg_bits: int  # fat-tree uSID layout: bits of k/2
    core_bits: int
    node: np.ndarray  # NODE[n_nodes]
    port: np.ndarray  # PORT[n_ports]
    plane_block: np.ndarray  # uint64[n_planes]: 32-bit uSID block of each plane
    tbl_start: np.ndarray  # int64[n_nodes + 1]: node n's entries are tbl[tbl_start[n]:tbl_start[n+1]]
    tbl: np.ndarray  # TBL[...], sorted by prefix within a node
    htbl_start: np.ndarray  # int64[n_nodes + 1]: node n's hash table is htbl[htbl_start[n]:htbl_start[n+1]]
    htbl: np.ndarray  # TBL[...]: the same entries hashed by prefix (prefix 0: empty slot)
    ev_nfields: int
    ev: np.ndarray  # EVF[3]: width, count, shift of plane, choice 1, choice 2
    ev_pad_mask: int


_NODE_NAME = re.compile(r"(?P<id>\d+)|h(?P<host>\d+)|p(?P<plane>\d+)\.t(?P<tier>\d+)\.(?P<index>\d+)")


class Topology:
    """A built multi-plane fabric. Attributes mirror `FabricArrays`; see docs/fabric.md."""

    def __init__(self, spec: FabricSpec, ecmp_seed: int = 0):
        self.spec = spec
        self.ev_format: EvFormat = ev_format(spec)
        a = build_arrays(spec, ecmp_seed)
        a.update(build_tables(spec, a))
        n, evf, pad = self.ev_format.arrays()
        a.update(ev_nfields=n, ev=evf, ev_pad_mask=pad)
        self.arrays = FabricArrays(**a)
        self.ecmp_seed = ecmp_seed
        self.switch_defaults: SwitchDefaults = switch_defaults(spec)

    def __getattr__(self, name):
        if name in FabricArrays._fields:
            return getattr(self.__dict__["arrays"], name)
        raise AttributeError(name)

    def __repr__(self):
        return f"<Topology {self.spec.name}: {self.n_hosts} hosts, {self.n_planes} plane(s), {self.tiers} tiers>"

    # ------------------------------------------------------------ construction

    def reseed_ecmp(self, ecmp_seed: int) -> None:
        """Replace the per-switch ECMP seeds (derived from `ecmp_seed`)."""
        self.ecmp_seed = ecmp_seed
        self.node["seed"] = seeds(ecmp_seed, self.n_nodes)

    # ------------------------------------------------------------ names and numbers

    @property
    def planes(self) -> int:
        return self.n_planes

    def _host(self, name, h):
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or not 0 <= h < self.n_hosts:
            raise UsageError(f"{name} = {h!r}: hosts are 0..{self.n_hosts - 1}")
        return int(h)

    def _plane(self, p):
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or not 0 <= p < self.n_planes:
            raise UsageError(f"plane = {p!r}: planes are 0..{self.n_planes - 1}")
        return int(p)

    def nic_port(self, host: int, plane: int) -> int:
        return self._host("host", host) * self.n_planes + self._plane(plane)

    def switch(self, plane: int, tier: int, index: int) -> int:
        """Node id of switch `index` of `tier` (0 = T0, 1 = T1, 2 = T2) on `plane`."""
        counts = (self.n_t0, self.n_t1, self.n_t2)
        if tier not in (0, 1, 2) or not 0 <= index < counts[tier]:
            raise UsageError(f"switch T{tier} #{index}: tier {tier} has {counts[tier] if tier in (0, 1, 2) else 0} "
                             "switches per plane")
        return int(_paths.switch_node(self.arrays, self._plane(plane), tier, index))

    def node_name(self, node: int) -> str:
        """``h12`` for hosts, ``p3.t1.17`` for switch 17 of tier T1 on plane 3."""
        n = self.node[node]
        if n["kind"] == HOST:
            return f"h{node}"
        return f"p{n['plane']}.t{n['tier']}.{n['index']}"

    def parse_node(self, text: str) -> int:
        """Node id from a name (`node_name`) or a number. A name of the right form that names no node of this
        fabric is refused with what does exist (``p0.t1.9``: "no such switch: tier T1 has switches 0..7 per
        plane"), a name of another form with the forms."""
        t = str(text).strip()
        m = _NODE_NAME.fullmatch(t)
        if m is None:
            raise UsageError(f"node = {text!r}: give a node id (0..{self.n_nodes - 1}), hN (a host) or pP.tT.I "
                             "(switch I of tier T on plane P)")
        if m["id"] is not None:
            n = int(m["id"])
            if not 0 <= n < self.n_nodes:
                raise UsageError(f"node = {text!r}: no such node: node ids are 0..{self.n_nodes - 1}")
            return n
        if m["host"] is not None:
            h = int(m["host"])
            if not 0 <= h < self.n_hosts:
                raise UsageError(f"node = {text!r}: no such host: hosts are h0..h{self.n_hosts - 1}")
            return h
        plane, tier, idx = int(m["plane"]), int(m["tier"]), int(m["index"])
        if not 0 <= plane < self.n_planes:
            raise UsageError(f"node = {text!r}: no such plane: planes are p0..p{self.n_planes - 1}")
        if not 0 <= tier < self.tiers:
            raise UsageError(f"node = {text!r}: no such tier: this fabric's switch tiers are "
                             + ", ".join(f"t{k} (T{k})" for k in range(self.tiers)))
        count = (self.n_t0, self.n_t1, self.n_t2)[tier]
        if not 0 <= idx < count:
            raise UsageError(f"node = {text!r}: no such switch: tier T{tier} has switches 0..{count - 1} per plane "
                             f"(p{plane}.t{tier}.0 .. p{plane}.t{tier}.{count - 1})")
        return self.switch(plane, tier, idx)

    def port_name(self, port: int) -> str:
        node = int(self.port[port]["node"])
        n = self.node[node]
        k = int(port) - int(n["port_start"])
        if n["kind"] == HOST:
            return f"h{node}:nic{k}"
        nd = int(n["n_down"])
        return f"{self.node_name(node)}:" + (f"down{k}" if k < nd else f"up{k - nd}")

    def peer_node(self, port: int) -> int:
        """The node at the other end of `port`'s link."""
        return int(self.port[port]["peer_node"])

    def tier_name(self, node: int) -> str:
        return TIER_NAMES[int(self.node[node]["tier"])]

    def host_address(self, host: int, plane: int) -> ipaddress.IPv6Address:
        """The address of `host`'s NIC port on `plane` (one address per port)."""
        h = self._host("host", host)
        return AD.host_address(h // self.hosts_per_leaf, h % self.hosts_per_leaf, self._plane(plane))

    # ------------------------------------------------------------ EVs and routes

    def make_ev(self, plane: int, *choices: int) -> int:
        return self.ev_format.make_ev(plane, *choices)

    def ev_fields(self, ev: int) -> tuple[int, ...]:
        return self.ev_format.ev_fields(ev)

    def _check_ev(self, ev):
        reason = self.ev_format.invalid_reason(ev)
        if reason:
            raise UsageError(f"ev = {ev!r}: {reason}")
        return int(ev)

    def route(self, src: int, dst: int, ev: int) -> np.ndarray:
        """Port ids a packet from `src` to `dst` on `ev` leaves from (STEV and SRv6 alike)."""
        src, dst, ev = self._host("src", src), self._host("dst", dst), self._check_ev(ev)
        out = np.empty(_paths.MAX_ROUTE_PORTS, np.int64)
        n = _paths.ev_route(self.arrays, src, dst, ev, out)
        return out[:n].copy()

    def carrier(self, src: int, dst: int, ev: int) -> ipaddress.IPv6Address:
        """The SRv6 carrier (outer destination address) of `ev`'s path from `src` to `dst`."""
        src, dst, ev = self._host("src", src), self._host("dst", dst), self._check_ev(ev)
        hi, lo = _paths.ev_carrier(self.arrays, src, dst, ev)
        return ipaddress.IPv6Address(AD.words_int(hi, lo))

    def ev_of_carrier(self, carrier) -> int:
        """The EV whose path a carrier of `carrier` encodes (the inverse of `carrier`; unused choices 0)."""
        blk, usids = AD.parse_carrier(carrier)
        plane = blk - AD.BLOCK_BASE
        problem = None
        choices = [0] * (len(self.ev_format.fields) - 1)
        if not 0 <= plane < self.n_planes:
            problem = f"block {blk:#x} is no plane's block of this fabric"
        elif len(usids) == 4:
            mid = usids[1]
            if self.tiers == 2:
                choices[0] = mid - AD.T1_BASE
            elif AD.AGG_BASE <= mid < AD.T1_BASE:
                choices[0] = (mid - AD.AGG_BASE) & ((1 << self.agg_bits) - 1)
            else:
                choices[0], choices[1] = (mid - AD.T1_BASE) >> self.core_bits, (mid - AD.T1_BASE) & (
                    (1 << self.core_bits) - 1)
        elif len(usids) != 2:
            problem = f"{len(usids)} uSIDs; a path carrier has 2 (same T0) or 4"
        if problem is None:
            try:
                ev = self.make_ev(plane, *choices)
            except UsageError as exc:
                problem = str(exc)
        if problem is not None:
            raise UsageError(f"carrier = {ipaddress.IPv6Address(carrier)}: {problem}")
        return ev

    def srv6_route(self, src: int, carrier) -> np.ndarray:
        """Follow the static tables from `src` for a carrier address; the plane is the carrier's block."""
        src = self._host("src", src)
        value = int(ipaddress.IPv6Address(carrier))
        blk = value >> 96
        if not 0 <= blk - AD.BLOCK_BASE < self.n_planes:
            raise UsageError(f"carrier = {carrier}: block {blk:#x} is no plane's block of this fabric")
        out = np.empty(_paths.MAX_ROUTE_PORTS, np.int64)
        hi, lo = AD.carrier_words(value)
        n = _paths.srv6_route(self.arrays, src, blk - AD.BLOCK_BASE, hi, lo, out)
        if n < 0:
            raise UsageError(f"carrier = {carrier}: "
                             + {_paths.ROUTE_DROPPED: "a node has no entry for it (dropped)",
                                _paths.ROUTE_TOO_LONG: "it does not reach a host"}.get(n, f"code {n}"))
        return out[:n].copy()

    def srv6_profile(self, src: int, dst: int) -> dict:
        return srv6_profile(self, src, dst)

    def ecmp_route(self, src: int, dst: int, plane: int, sport: int, flow_label: int, proto: int = 17) -> np.ndarray:
        """Ports the 5-tuple's packets leave from under ECMP hashing."""
        src, dst, plane = self._host("src", src), self._host("dst", dst), self._plane(plane)
        for name, v, top in (("sport", sport, 0xFFFF), ("flow_label", flow_label, 0xFFFFF), ("proto", proto, 0xFF)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v <= top:
                raise UsageError(f"{name} = {v!r}: must be 0..{top:#x}")
        out = np.empty(_paths.MAX_ROUTE_PORTS, np.int64)
        n = _ecmp.ecmp_route(self.arrays, src, dst, plane, sport, flow_label, proto, out)
        return out[:n].copy()

    def path_nodes(self, ports) -> list[int]:
        """Nodes a route visits, source host first, destination last."""
        return [int(self.port[ports[0]]["node"])] + [self.peer_node(p) for p in ports]

    # ------------------------------------------------------------ tables

    def table(self, node: int):
        return entries(self, node)

    def iproute2(self, node: int, local_dev: str | None = None) -> list[str]:
        return iproute2(self, node, local_dev)

    # ------------------------------------------------------------ figures

    def paths_per_pair(self) -> dict[str, int]:
        """Distinct paths per host pair and plane, by where the pair sits."""
        if self.tiers == 2:
            return {"same T0": 1, "different T0": self.n_t1}
        A = self.t1_per_pod
        return {"same T0": 1, "same pod": A, "different pod": A * A}

    def bisection_gbps(self) -> float:
        """Bisection bandwidth (all planes): min of half the host capacity and half of each tier's uplinks."""
        s = self.spec
        cuts = [s.hosts * s.link_gbps / 2, self.n_t0 * int(self.node[self.n_hosts]["n_up"]) * s.fabric_gbps[0] / 2]
        if self.tiers == 3:
            cuts.append(self.n_t1 * self.t1_per_pod * s.fabric_gbps[1] / 2)
        return float(min(cuts) * self.n_planes)


# ---------------------------------------------------------------- loading


def build(spec_or_mapping, ecmp_seed: int = 0, radix: int | None = None) -> Topology:
    """A `Topology` from a `FabricSpec` or a mapping of topology keys (may name a preset)."""
    if isinstance(spec_or_mapping, FabricSpec):
        return Topology(spec_or_mapping, ecmp_seed)
    return Topology(resolve(spec_or_mapping, where="topology", radix=radix), ecmp_seed)


def from_preset(name: str, ecmp_seed: int = 0, **overrides: Any) -> Topology:
    return build({"preset": name, **overrides}, ecmp_seed)


def load(source, ecmp_seed: int = 0) -> Topology:
    """A preset name, a TOML file path, or a mapping of topology keys."""
    if isinstance(source, Mapping):
        return build(source, ecmp_seed)
    if isinstance(source, str) and source in PRESETS:
        return from_preset(source, ecmp_seed)
    path = pathlib.Path(source)
    if path.suffix == ".toml" or path.exists():
        return Topology(load_toml(path), ecmp_seed)
    raise ConfigError("topology", str(source), f"neither a preset ({', '.join(PRESETS)}) nor a TOML file")
