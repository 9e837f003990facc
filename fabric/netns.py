"""A fabric as Linux network namespaces: one namespace per node, one veth pair per link.

    mrc fabric netns up PRESET|FILE [--prefix P] [--mtu BYTES]
    mrc fabric netns down [--prefix P]
    mrc fabric netns status [--prefix P]
    mrc fabric netns link down|up NODE:IFNAME [--prefix P]

Every node ``n`` of a `Topology` becomes the namespace ``<prefix><node name>``
(``mrc-h0``, ``mrc-p1.t0.0``); every link a veth pair whose ends carry the
names `tables.ifname` gives (``nic<p>``, ``d<i>``, ``u<j>``), the MTU asked
for (jumbo by default, so a 4 KiB MRC payload plus its SRv6 header stack
fits) and the link-local address `address.link_local` of their port. Each
node installs exactly the lines `Topology.iproute2` prints (switches: ``End``
with ``flavors next-csid lblen 32 nflen 16`` for their own uSID and /48
forwarding routes; hosts: ``End.DT6`` into table ``local``, i.e. table 255,
so the inner packet is delivered to the host's own sockets). A host also gets,
per plane, its address ``fd00:<p>:<t0>:<d>::1/128`` on ``nic<p>`` and a
route for the plane's uSID block ``5f00:<p>::/32`` towards its T0 (what
`docs/fabric.md` lists). IPv6 forwarding is on in every namespace.

`up` is idempotent: existing namespaces and veths are kept, addresses and
routes are *replaced*, links are set up again, and namespaces with the
prefix that the fabric does not have are removed. `down` removes every
namespace with the prefix (their veths go with them). The fabric a prefix
was built from is recorded in ``/run/mrc-netns/<prefix>.json`` (tmpfs, gone
at reboot like the namespaces) so `load` and ``mrc io transfer`` find it.

Taking a link down (`link_down`) sets the lower-tier end administratively
down; the kernel then drops its address and routes and the peer sees its
carrier go. `link_up` sets it up and re-installs both ends' addresses and
routes. Everything needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN): without it
the functions raise `MRCError` saying so.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import shutil
import socket
import struct
import subprocess
from dataclasses import dataclass

import numpy as np

from mrc.errors import UsageError
from mrc.fabric import address as AD
from mrc.fabric.build import HOST
from mrc.fabric.reverse import evs_through_link
from mrc.fabric.tables import ifname
from mrc.io.netns import NETNS_DIR, NetnsError, inside  # noqa: F401  (NetnsError: this module's error too)

DEFAULT_PREFIX = "mrc-"
DEFAULT_MTU = 9000
STATE_DIR = pathlib.Path("/run/mrc-netns")
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
SYSCTLS = ("net/ipv6/conf/all/forwarding", "net/ipv6/conf/default/forwarding")


# ---------------------------------------------------------------- privileges and plumbing


def check_privileges() -> None:
    """Raise `NetnsError` unless this process may create network namespaces."""
    if shutil.which("ip") is None:
        raise NetnsError("the `ip` command (iproute2) is not installed")
    if os.geteuid() != 0:
        raise NetnsError("network namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN): run as root, "
                         "e.g. `sudo mrc fabric netns up ...`")


def _run(cmd: list[str], stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60)
    if check and r.returncode:
        raise NetnsError(f"`{' '.join(cmd)}` failed: {r.stderr.strip() or r.stdout.strip()}")
    return r


def _batch(ns: str | None, lines: list[str]) -> None:
    """Run `ip -6 [-n ns] -batch -` on `lines` (one `ip` command each, without the `ip`)."""
    if not lines:
        return
    cmd = ["ip", "-6"] + (["-n", ns] if ns else []) + ["-batch", "-"]
    _run(cmd, "\n".join(lines) + "\n")


def namespaces(prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Names of existing network namespaces that start with `prefix`."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(prefix))


def _links(ns: str) -> dict[str, str]:
    """Interfaces of namespace `ns`: name -> its `ip -o link` line."""
    out = _run(["ip", "-n", ns, "-o", "link", "show"], check=False).stdout
    links = {}
    for line in out.splitlines():
        parts = line.split(": ", 2)
        if len(parts) == 3:
            links[parts[1].split("@")[0]] = parts[2]
    return links


def _sysctl_on(ns: str) -> None:
    with inside(ns):
        for key in SYSCTLS:
            pathlib.Path("/proc/sys", key).write_text("1\n")


# ---------------------------------------------------------------- the fabric


def _check_prefix(prefix: str) -> str:
    ok = prefix and len(prefix) <= 40 and all(c.isalnum() or c in "-_." for c in prefix)
    if not ok:
        raise UsageError(f"prefix = {prefix!r}: use 1..40 letters, digits, '-', '_' or '.'")
    return prefix


@dataclass
class NetnsFabric:
    """A fabric built (or to be built) as namespaces: names of everything, from the topology."""

    topo: object  # mrc.fabric.Topology
    prefix: str = DEFAULT_PREFIX
    source: str = ""
    mtu: int = DEFAULT_MTU

    def ns(self, node: int) -> str:
        return self.prefix + self.topo.node_name(int(node))

    def host_ns(self, host: int) -> str:
        if not 0 <= host < self.topo.n_hosts:
            raise UsageError(f"host = {host!r}: hosts are 0..{self.topo.n_hosts - 1}")
        return self.ns(host)

    @property
    def all_ns(self) -> list[str]:
        return [self.ns(n) for n in range(self.topo.n_nodes)]

    def links(self):
        """(port, peer port) once per link, the lower-tier end (or lower id) first."""
        t = self.topo
        for q in range(t.n_ports):
            peer = int(t.port[q]["peer"])
            if q < peer:
                yield q, peer

    def parse_port(self, text: str) -> int:
        """A port from ``NODE:IFNAME`` (``p0.t0.0:u1``, ``h3:nic0``) or a port id."""
        t = self.topo
        s = str(text).strip()
        if s.isdigit() and int(s) < t.n_ports:
            return int(s)
        node_text, _, name = s.partition(":")
        try:
            node = t.parse_node(node_text)
        except UsageError:
            node = None
        if node is not None:
            n = t.node[node]
            for q in range(int(n["port_start"]), int(n["port_start"]) + int(n["n_down"]) + int(n["n_up"])):
                if ifname(t, q) == name:
                    return q
        raise UsageError(f"link = {text!r}: give NODE:IFNAME (e.g. p0.t0.0:u1, h0:nic1; interfaces are nic<p>, "
                         f"d<i>, u<j>) or a port id 0..{t.n_ports - 1}")

    def link_down(self, port: int) -> str:
        """Take the link of `port` down (`link_down`): what `mrc.io.transfer`'s failure plan calls."""
        return link_down(self, port)

    def link_up(self, port: int) -> str:
        """Bring the link of `port` back (`link_up`)."""
        return link_up(self, port)

    def evs_through_link(self, port: int, src: int, dst: int | None = None) -> np.ndarray:
        """EVs from `src` (to `dst`) whose path crosses the link of `port` (`mrc.fabric.evs_through_link`)."""
        return evs_through_link(self.topo, port, src, dst)

    def node_lines(self, node: int) -> list[str]:
        """Everything `node` installs, as `ip -6` batch lines (idempotent: replace)."""
        t = self.topo
        n = t.node[node]
        lines = []
        for q in range(int(n["port_start"]), int(n["port_start"]) + int(n["n_down"]) + int(n["n_up"])):
            dev = ifname(t, q)
            lines.append(f"link set dev {dev} mtu {self.mtu} up")
            lines.append(f"addr replace {AD.link_local(q)}/64 dev {dev} nodad")
        if n["kind"] == HOST:
            for p in range(t.n_planes):
                q = t.nic_port(node, p)
                lines.append(f"addr replace {t.host_address(node, p)}/128 dev nic{p} nodad")
                lines.append(f"route replace {AD.prefix48_text(AD.block(p) << 16).replace('/48', '/32')} "
                             f"via {AD.link_local(int(t.port[q]['peer']))} dev nic{p}")
        for line in t.iproute2(node):  # exactly the printed table
            words = line.split()
            if words[:4] != ["ip", "-6", "route", "add"]:  # pragma: no cover - tables.iproute2 contract
                raise NetnsError(f"unexpected table line {line!r}")
            lines.append("route replace " + " ".join(words[4:]))
        return lines

    # -- state file --------------------------------------------------------------------
    def save_state(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        (STATE_DIR / f"{self.prefix}json").write_text(json.dumps({"source": self.source, "mtu": self.mtu}) + "\n")


def _source_text(source) -> str:
    s = str(source)
    p = pathlib.Path(s)
    return str(p.resolve()) if p.suffix == ".toml" or p.exists() else s


def load(prefix: str = DEFAULT_PREFIX, source=None) -> NetnsFabric:
    """The fabric that is up under `prefix` (or, given `source`, that fabric's names)."""
    from mrc.fabric.topology import load as load_topology

    _check_prefix(prefix)
    mtu = DEFAULT_MTU
    if source is None:
        state = STATE_DIR / f"{prefix}json"
        if not state.exists() or not namespaces(prefix):
            raise NetnsError(f"no namespace fabric is up under prefix {prefix!r} (`mrc fabric netns up PRESET`)")
        d = json.loads(state.read_text())
        source, mtu = d["source"], int(d.get("mtu", DEFAULT_MTU))
    return NetnsFabric(load_topology(source), prefix, _source_text(source), mtu)


def up(source, prefix: str = DEFAULT_PREFIX, mtu: int = DEFAULT_MTU) -> NetnsFabric:
    """Build (or repair) the namespace fabric of `source` under `prefix`; idempotent."""
    from mrc.fabric.topology import load as load_topology

    _check_prefix(prefix)
    if not isinstance(mtu, int) or not 1280 <= mtu <= 65535:
        raise UsageError(f"mtu = {mtu!r}: an IPv6 link MTU is 1280..65535")
    check_privileges()
    fab = NetnsFabric(load_topology(source), prefix, _source_text(source), mtu)
    wanted = fab.all_ns
    existing = set(namespaces(prefix))
    for ns in sorted(existing - set(wanted)):
        _run(["ip", "netns", "del", ns], check=False)
    for ns in wanted:
        if ns not in existing:
            _run(["ip", "netns", "add", ns])
    have = {ns: set(_links(ns)) for ns in wanted}
    t = fab.topo
    veths = []
    for q, peer in fab.links():
        a, b = int(t.port[q]["node"]), int(t.port[peer]["node"])
        na, nb, ia, ib = fab.ns(a), fab.ns(b), ifname(t, q), ifname(t, peer)
        if ia in have[na] and ib in have[nb]:
            continue
        for ns, dev in ((na, ia), (nb, ib)):  # half a pair left over from an interrupted run
            if dev in have[ns]:
                _run(["ip", "-n", ns, "link", "del", dev], check=False)
        veths.append(f"link add name {ia} netns {na} mtu {mtu} type veth peer name {ib} netns {nb} mtu {mtu}")
    _batch(None, veths)
    for node in range(t.n_nodes):
        ns = fab.ns(node)
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        _sysctl_on(ns)
        _batch(ns, fab.node_lines(node))
    fab.save_state()
    return fab


def down(prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Remove every namespace whose name starts with `prefix` (and the state file); returns their names."""
    _check_prefix(prefix)
    check_privileges()
    gone = namespaces(prefix)
    for ns in gone:
        _run(["ip", "netns", "del", ns], check=False)
    with contextlib.suppress(FileNotFoundError):
        (STATE_DIR / f"{prefix}json").unlink()
    left = namespaces(prefix)
    if left:
        raise NetnsError(f"could not remove namespace(s) {', '.join(left)}")
    return gone


def set_admin_state(ns: str, dev: str, up: bool) -> None:
    """Set interface `dev` of namespace `ns` administratively up or down, at once (SIOCSIFFLAGS, no subprocess)."""
    with inside(ns):
        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    with sock:
        ifr = struct.pack("16sH14x", dev.encode(), 0)
        try:
            flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, ifr))[1]
            flags = (flags | IFF_UP) if up else (flags & ~IFF_UP)
            fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", dev.encode(), flags))
        except OSError as e:
            raise NetnsError(f"cannot set {ns}:{dev} {'up' if up else 'down'}: {e.strerror}") from None


def link_down(fab: NetnsFabric, port: int) -> str:
    """Take the link of `port` down (its lower-tier end, administratively). Returns ``ns:dev``."""
    q, _ = _ordered(fab, port)
    ns, dev = fab.ns(int(fab.topo.port[q]["node"])), ifname(fab.topo, q)
    set_admin_state(ns, dev, False)
    return f"{ns}:{dev}"


def link_up(fab: NetnsFabric, port: int) -> str:
    """Bring the link of `port` back and re-install both ends' addresses and routes."""
    q, peer = _ordered(fab, port)
    t = fab.topo
    for end in (q, peer):
        node = int(t.port[end]["node"])
        _batch(fab.ns(node), fab.node_lines(node))
    return f"{fab.ns(int(t.port[q]['node']))}:{ifname(t, q)}"


def _ordered(fab: NetnsFabric, port: int) -> tuple[int, int]:
    t = fab.topo
    if not 0 <= port < t.n_ports:
        raise UsageError(f"port = {port!r}: ports are 0..{t.n_ports - 1}")
    peer = int(t.port[port]["peer"])
    return (port, peer) if port < peer else (peer, port)


def status(prefix: str = DEFAULT_PREFIX) -> dict:
    """What is up under `prefix`: the source, namespaces, and links whose end is down."""
    fab = load(prefix)
    down_links = []
    for ns in fab.all_ns:
        for dev, line in _links(ns).items():
            flags = line.split(">", 1)[0].lstrip("<").split(",")
            if dev != "lo" and "UP" not in flags:
                down_links.append(f"{ns[len(fab.prefix):]}:{dev}")
    return {"prefix": fab.prefix, "source": fab.source, "mtu": fab.mtu, "namespaces": namespaces(prefix),
            "expected": len(fab.all_ns), "links_down": down_links}
