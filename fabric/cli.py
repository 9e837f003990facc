"""``mrc fabric``: presets, fabric summaries and static routes.

    mrc fabric presets
    mrc fabric show PRESET|FILE
    mrc fabric routes PRESET|FILE --switch ID [--iproute2]

More subcommands are added by giving `SUBCOMMANDS` another entry: a name and
a function that takes the group's sub-parser action and registers the leaf
(e.g. ``netns`` from its own module).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util

from mrc.fabric.presets import PRESETS

SOURCE_HELP = "a preset name (see `mrc fabric presets`) or a TOML topology file"


def _load(source):
    from mrc.fabric.topology import load

    return load(source)


def _gbps(x: float) -> str:
    return f"{x:g}G"


# ---------------------------------------------------------------- presets


def _presets(args) -> int:
    from mrc.fabric.spec import resolve

    width = max(len(n) for n in PRESETS)
    for name, p in PRESETS.items():
        s = resolve({"preset": name})
        print(f"{name:<{width}}  {s.hosts:>7} hosts  {s.planes} plane(s)  {_gbps(s.link_gbps):>5} links  "
              f"{s.kind:<10}  {p.description}")
    return 0


def _register_presets(sub):
    p = sub.add_parser("presets", help="list the preset fabrics", description="List the preset fabrics: "
                       "name, hosts, planes, host link speed, kind, description (one line each).")
    p.set_defaults(func=_presets)


# ---------------------------------------------------------------- show


def _show(args) -> int:
    from mrc.fabric import address as AD

    topo = _load(args.source)
    s = topo.spec
    tiers = ["T0", "T1", "T2"][: topo.tiers]
    counts = [topo.n_t0, topo.n_t1, topo.n_t2][: topo.tiers]
    n_links = topo.n_ports // 2
    print(f"fabric         {s.name}")
    print(f"kind           {s.kind}, {topo.tiers} switch tiers" + (f", k = {s.k}" if s.k else ""))
    print(f"hosts          {topo.n_hosts} ({topo.hosts_per_leaf} per T0), {topo.n_planes} NIC port(s) each")
    print("switches       " + ", ".join(f"{c} {t}" for t, c in zip(tiers, counts))
          + f" per plane; {topo.switches_per_plane * topo.n_planes} in all"
          + (f" (radix {s.radix})" if s.radix else ""))
    for line in node_names(topo):
        print(line)
    speeds = [s.link_gbps, *s.fabric_gbps]
    names = ["host-T0", "T0-T1", "T1-T2"][: topo.tiers]
    print("links          " + ", ".join(f"{n} {_gbps(g)} {d:g} ns" for n, g, d in zip(names, speeds, s.link_delay_ns))
          + f"; {n_links} links in all")
    print(f"oversub.       {s.oversubscription:g}:1 at the T0")
    print("paths/plane    " + ", ".join(f"{k}: {v}" for k, v in topo.paths_per_pair().items()))
    print(f"bisection      {topo.bisection_gbps() / 1000:g} Tb/s (all planes)")
    fmt = topo.ev_format
    print("EV format      " + " | ".join(f"{f.name}:{f.width}b ({f.count})" for f in fmt.fields)
          + f" | pad:{32 - fmt.total_bits}b; {fmt.n_valid} valid EVs")
    blocks = [str(AD.prefix48_text(int(b) << 16)).replace("/48", "/32") for b in topo.plane_block]
    print("uSID blocks    " + (blocks[0] if len(blocks) == 1 else f"{blocks[0]} .. {blocks[-1]} (one per plane)")
          + "; hosts fd00:<plane>:<T0>:<port>::1")
    d = topo.switch_defaults
    print(f"switch dflt.   queue {d.queue_bytes} B, ECN {d.ecn_min_bytes}..{d.ecn_max_bytes} B, MTU {d.mtu_bytes} B, "
          f"trim to {d.trim_header_bytes} B ({d.source})")
    return 0


def _span(first: str, last: str) -> str:
    return first if first == last else f"{first} .. {last}"


def node_names(topo) -> list[str]:
    """How the nodes and ports of `topo` are named (what ``--switch``, ``[[failures]]`` and ``--capture`` take)."""
    P = topo.n_planes
    counts = [topo.n_t0, topo.n_t1, topo.n_t2][: topo.tiers]
    out = [f"host names     {_span('h0', f'h{topo.n_hosts - 1}')}; NIC ports h<N>:nic0 .. h<N>:nic{P - 1} "
           "(one per plane)"]
    tiers = ", ".join(f"T{k}: {_span(f'p0.t{k}.0', f'p0.t{k}.{c - 1}')}" for k, c in enumerate(counts))
    out.append(f"switch names   {tiers}" + (f" on plane 0; pP.tT.I on plane P (0..{P - 1})" if P > 1 else ""))
    n = topo.node[topo.switch(0, 0, 0)]
    out.append(f"port names     <switch>:down<K> (to the tier below), <switch>:up<K> (above), e.g. "
               f"p0.t0.0:down0 .. p0.t0.0:down{int(n['n_down']) - 1}"
               + (f", p0.t0.0:up0 .. p0.t0.0:up{int(n['n_up']) - 1}" if int(n["n_up"]) else "")
               + "; :d<K> / :u<K> for short")
    return out


def _register_show(sub):
    p = sub.add_parser("show", help="summarise a fabric", description="Hosts, switches per tier and plane, links, "
                       "paths per host pair per plane, bisection bandwidth, EV format, switch defaults.")
    p.add_argument("source", metavar="PRESET|FILE", help=SOURCE_HELP)
    p.set_defaults(func=_show)


# ---------------------------------------------------------------- routes


def _routes(args) -> int:
    from mrc.fabric.tables import ACTION_NAMES

    topo = _load(args.source)
    node = topo.parse_node(args.switch)
    if args.iproute2:
        for line in topo.iproute2(node, args.local_dev):
            print(line)
        return 0
    what = "host" if topo.node[node]["kind"] == 0 else f"{topo.tier_name(node)} switch"
    print(f"# {topo.node_name(node)} (node {node}, {what}, uSID {int(topo.node[node]['usid']):#06x})")
    print(f"{'prefix':<22} {'action':<8} egress")
    for e in topo.table(node):
        if e.port < 0:
            egress = "-"
        else:
            egress = f"{topo.port_name(e.port)} -> {topo.node_name(topo.peer_node(e.port))}"
        print(f"{e.prefix:<22} {ACTION_NAMES[e.action]:<8} {egress}")
    return 0


def _register_routes(sub):
    p = sub.add_parser("routes", help="print the static table a switch (or host) installs",
                       description="The static SRv6 /48 table of one node: prefix, action, egress port.")
    p.add_argument("source", metavar="PRESET|FILE", help=SOURCE_HELP)
    p.add_argument("--switch", required=True, metavar="ID",
                   help="node id, or a name: pP.tT.I (switch I of tier T on plane P) or hN (host N)")
    p.add_argument("--iproute2", action="store_true", help="print `ip -6 route add` commands instead of a table")
    p.add_argument("--local-dev", default=None, help="device anchoring End routes in --iproute2 output "
                   "(default: the node's first interface)")
    p.set_defaults(func=_routes)


# (name, register function or "module:function" of another module, if installed)
SUBCOMMANDS = [
    ("presets", _register_presets),
    ("show", _register_show),
    ("routes", _register_routes),
    ("netns", "mrc.fabric.netns_cli:register"),
]


def register(parser: argparse.ArgumentParser) -> None:
    from mrc.cli import subcommands

    sub = subcommands(parser)
    for _name, reg in SUBCOMMANDS:
        if isinstance(reg, str):
            module, func = reg.split(":")
            try:
                if importlib.util.find_spec(module) is None:
                    continue
            except ModuleNotFoundError:
                continue
            reg = getattr(importlib.import_module(module), func)
        reg(sub)
