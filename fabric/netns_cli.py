"""``mrc fabric netns``: the namespace fabric's commands (`mrc.fabric.netns` does the work).

    mrc fabric netns up PRESET|FILE [--prefix P] [--mtu BYTES]
    mrc fabric netns down [--prefix P]
    mrc fabric netns status [--prefix P]
    mrc fabric netns link down|up NODE:IFNAME [--prefix P]
"""
from __future__ import annotations

from mrc.fabric.netns import (DEFAULT_MTU, DEFAULT_PREFIX, check_privileges, down, link_down, link_up, load,
                              namespaces, status, up)


def _cmd_up(args) -> int:
    fab = up(args.source, args.prefix, args.mtu)
    t = fab.topo
    print(f"{t.spec.name}: {t.n_nodes} namespaces ({t.n_hosts} hosts, {t.n_nodes - t.n_hosts} switches), "
          f"{t.n_ports // 2} veth links, MTU {fab.mtu}, prefix {fab.prefix!r}")
    for h in range(t.n_hosts):
        addrs = ", ".join(str(t.host_address(h, p)) for p in range(t.n_planes))
        print(f"  {fab.host_ns(h):<16} {addrs}")
    print(f"run a command on a host: ip netns exec {fab.host_ns(0)} ...; remove: mrc fabric netns down"
          + ("" if fab.prefix == DEFAULT_PREFIX else f" --prefix {fab.prefix}"))
    return 0


def _cmd_down(args) -> int:
    gone = down(args.prefix)
    print(f"removed {len(gone)} namespace(s) with prefix {args.prefix!r}")
    return 0


def _cmd_status(args) -> int:
    if not namespaces(args.prefix):
        print(f"no namespaces with prefix {args.prefix!r}")
        return 1
    s = status(args.prefix)
    print(f"fabric {s['source']} under prefix {s['prefix']!r}: {len(s['namespaces'])} of {s['expected']} "
          f"namespaces, MTU {s['mtu']}")
    print("links down: " + (", ".join(s["links_down"]) or "none"))
    return 0


def _cmd_link(args) -> int:
    check_privileges()
    fab = load(args.prefix)
    port = fab.parse_port(args.link)
    where = link_down(fab, port) if args.state == "down" else link_up(fab, port)
    print(f"{fab.topo.port_name(port)} ({where}) {args.state}")
    return 0


def register(sub) -> None:
    """Add the ``netns`` group to ``mrc fabric``."""
    from mrc.cli import subcommands

    g = sub.add_parser("netns", help="build the fabric as Linux network namespaces (root)",
                       description="A fabric as network namespaces joined by veth pairs, with the static SRv6 "
                       "uSID tables installed as seg6local routes (End next-csid on switches, End.DT6 on hosts). "
                       "Needs root.")
    gs = subcommands(g)

    def prefix(p):
        p.add_argument("--prefix", default=DEFAULT_PREFIX, help=f"namespace name prefix (default {DEFAULT_PREFIX!r})")

    p = gs.add_parser("up", help="build (or repair) the fabric; idempotent",
                      description="Create one namespace per node, one veth pair per link, install the tables.")
    p.add_argument("source", metavar="PRESET|FILE", help="a preset (e.g. mrc-2plane-tiny) or a TOML topology file")
    prefix(p)
    p.add_argument("--mtu", type=int, default=DEFAULT_MTU, help=f"link MTU in bytes (default {DEFAULT_MTU})")
    p.set_defaults(func=_cmd_up)
    p = gs.add_parser("down", help="remove every namespace with the prefix", description="Remove the fabric.")
    prefix(p)
    p.set_defaults(func=_cmd_down)
    p = gs.add_parser("status", help="namespaces and links that are down", description="Show the fabric.")
    prefix(p)
    p.set_defaults(func=_cmd_status)
    p = gs.add_parser("link", help="take a link down or bring it back up",
                      description="Take a link down (its lower-tier end, administratively) or up again "
                      "(re-installing both ends' addresses and routes).")
    p.add_argument("state", choices=["down", "up"])
    p.add_argument("link", metavar="NODE:IFNAME", help="e.g. p0.t0.0:u1 (T0 0 of plane 0, uplink 1) or h0:nic1")
    prefix(p)
    p.set_defaults(func=_cmd_link)
