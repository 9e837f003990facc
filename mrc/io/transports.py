"""How MRC packets travel on real sockets: UDP encapsulation and native SRv6.

A transport owns the sockets of one endpoint (one receive socket per NIC
port) and two pure functions the adapter calls:

- ``frame(out)`` -> ``(socket index, bytes, socket address)`` for an
  `mrc.api.OutPacket`, or None when the peer has no address on that port;
- ``unframe_untrusted(port, data, ancdata, addr)`` -> ``(pkt, payload, peer)``
  for a received datagram; raises `mrc.wire.errors.DecodeError` on garbage;
- ``bth_at(data)``: where BTH starts in a received datagram (-1 when it is not
  where a well-formed packet has it), so that the endpoint reads the opcode and
  destination QP in place and drops packets for QPs it does not have, and
  endpoint requests beyond their rate, before paying for a decode
  (``dqpns`` does the same for a whole batch, as arrays);
- ``receive_only(port, addr)``: connect port's socket to the one address its
  packets may come from (the kernel drops the rest), where the mode allows.

Modes:

- `UdpEncap`: the whole MRC packet as the codec writes it (an IPv6 header in
  STEV form carrying the EV in UDP source port and flow label, UDP, BTH, MRC
  headers, payload, ICRC) is the payload of an ordinary UDP datagram between
  two socket addresses. Unprivileged; loopback or any IP network; the EV,
  DSCP/ECN and ICRC travel end to end (inside the tunnel, nothing routes on
  them).
- `NativeSrv6`: the codec's SRv6 form (outer IPv6 whose destination is the
  uSID carrier of the packet's EV, `Topology.carrier`; inner IPv6 between the
  two hosts' plane addresses; UDP 4791) sent whole through a raw IPv6 socket
  (``IPPROTO_RAW``: we write the IP headers). The fabric shifts the carrier
  and the destination host decapsulates (``End.DT6``), so the packet arrives
  on an ordinary UDP socket bound to ``[host address]:4791``; its IPv6 and
  UDP headers are rebuilt from the socket address and the ``IPV6_FLOWINFO`` /
  ``IPV6_TCLASS`` ancillary data, and the ICRC is checked over them. Needs
  CAP_NET_RAW.

A `Peer` names a remote endpoint: one socket address per NIC port.
"""
from __future__ import annotations

import errno
import ipaddress
import socket as _socket
import struct
from dataclasses import dataclass

import numpy as np

from mrc.errors import MRCError, UsageError
from mrc.io.codec import Codec
from mrc.io.sockets import SOCKET_BUFFER, Datagram
from mrc.wire.constants import ROCEV2_UDP_PORT, EvMode
from mrc.wire.errors import DecodeError
from mrc.wire.records import NET

IPV6_FLOWINFO = 11  # Linux <linux/in6.h>: receive the flow information (TC + flow label) as a cmsg
IPV6_TCLASS = getattr(_socket, "IPV6_TCLASS", 67)


@dataclass(frozen=True)
class Peer:
    """A remote endpoint: ``addrs[p]`` is its (host, port) on NIC port p + 1 (None: no address there)."""

    addrs: tuple
    host: int | None = None  # fabric host id (native mode)

    @classmethod
    def udp(cls, *addrs) -> "Peer":
        """From ``"host:port"`` strings (``"[::1]:4791"`` for IPv6) or (host, port) tuples, one per port."""
        return cls(tuple(None if a is None else parse_addr(a) for a in addrs))

    @classmethod
    def fabric_host(cls, topo, host: int, udp_port: int = ROCEV2_UDP_PORT) -> "Peer":
        """Host `host` of a `mrc.fabric` topology: its address on every plane, UDP port `udp_port`."""
        return cls(tuple((str(topo.host_address(host, p)), udp_port) for p in range(topo.n_planes)), host)

    def sent(self, port: int, src: "Peer") -> bool:
        """Whether a datagram that arrived on NIC port `port` from `src` (what ``unframe_untrusted`` returned)
        comes from this peer's address on that port: the (host, UDP port) pair, or for a fabric host its
        address on that plane."""
        if not isinstance(src, Peer) or port >= len(self.addrs) or port >= len(src.addrs) or self.addrs[port] is None:
            return False
        if self.host is not None:
            return src.host == self.host
        return src.addrs[port] == self.addrs[port]

    def __str__(self) -> str:
        where = ", ".join("-" if a is None else format_addr(a) for a in self.addrs)
        return f"h{self.host} ({where})" if self.host is not None else where


def parse_addr(a) -> tuple[str, int]:
    """A normalised (host, port) from ``"host:port"``, ``"[v6]:port"`` or a tuple."""
    if isinstance(a, str):
        host, sep, port = a.rpartition(":")
        if not sep:
            raise UsageError(f"address = {a!r}: give host:port ([v6 address]:port for IPv6)")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        a = (host, port)
    try:
        host, port = str(ipaddress.ip_address(a[0])), int(a[1])
    except (ValueError, TypeError, IndexError):
        raise UsageError(f"address = {a!r}: need a numeric IPv4/IPv6 address and a port") from None
    if not 0 <= port <= 0xFFFF:
        raise UsageError(f"address = {a!r}: port {port} outside 0..65535")
    return host, port


def _u24(rows: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The big-endian 24-bit value at byte `at[k]` of each row k."""
    i = np.arange(len(rows))
    return (rows[i, at].astype(np.int64) << 16) | (rows[i, at + 1].astype(np.int64) << 8) | rows[i, at + 2]


def format_addr(a) -> str:
    return f"[{a[0]}]:{a[1]}" if ":" in a[0] else f"{a[0]}:{a[1]}"


def _v6(host: str) -> np.ndarray:
    ip = ipaddress.ip_address(host)
    if ip.version == 4:
        ip = ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + ip.packed)
    return np.frombuffer(ip.packed, dtype=np.uint8)


class UdpEncap:
    """MRC packets as UDP payloads; one UDP socket per NIC port, bound to `local[p]`.

    `csum_offload` leaves the inner ICRC and UDP checksum unset on send and unchecked on
    receive (`mrc.io.codec`): the outer UDP checksum, which the kernel computes and checks,
    already covers every byte. Both endpoints must agree (a peer that checks the ICRC
    drops such packets).
    """

    mode = "udp"
    ev_mode = EvMode.STEV

    def __init__(self, local, *, netns: str | None = None, hop_limit: int = 64, csum_offload: bool = False):
        self.local = [parse_addr(a) for a in local]
        if not self.local:
            raise UsageError("UdpEncap: give one local address per NIC port (at least one)")
        self.netns = netns
        self.hop_limit = hop_limit
        self.socks: list[Datagram] = []
        self.rx_buffer = self.tx_buffer = SOCKET_BUFFER  # bytes per socket (the endpoint sizes them, `Endpoint`)
        # the outer UDP checksum already covers the packet: inner UDP unchecked; csum_offload skips the ICRC too
        self.codec = Codec(ev_mode=EvMode.STEV, verify_udp=False, csum_offload=csum_offload)
        self._peers: dict = {}  # (port index, (host, port)) -> Peer
        self._sources: dict = {}  # (port index, source address as received) -> Peer
        self._nets: dict = {}  # (port index, Peer) -> NET row

    @property
    def ports(self) -> int:
        """The number of NIC ports (one socket address each)."""
        return len(self.local)

    async def open_sockets(self) -> None:
        """Create and bind the sockets; `local` then holds the bound addresses (port 0 resolved)."""
        for host, _ in self.local:
            self.socks.append(Datagram.open(_socket.AF_INET6 if ":" in host else _socket.AF_INET, netns=self.netns))
        for k, (sock, addr) in enumerate(zip(self.socks, self.local)):
            sock.tune(self.rx_buffer, self.tx_buffer)
            await sock.bind(addr)
            self.local[k] = parse_addr(sock.getsockname()[:2])

    def receive_only(self, port: int, addr) -> bool:
        """Connect port's socket to `addr` (host, UDP port), or back to any source (None); False if it cannot."""
        return self.socks[port].connect(addr)

    @staticmethod
    def dqpns(rows: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """BTH's destination QP of each datagram of a batch (one per row, `lens` their lengths), and where valid."""
        b0 = rows[:, 0]
        v6 = (b0 >> 4 == 6) & (rows[:, 6] == 17)
        v4 = (b0 >> 4 == 4) & (rows[:, 9] == 17)
        at = np.where(v6, 53, (b0 & 0x0F).astype(np.int64) * 4 + 13)
        valid = (v6 | v4) & (lens >= at + 7)
        return _u24(rows, np.where(valid, at, 0)), valid

    @staticmethod
    def bth_at(data) -> int:
        """Where BTH starts in a datagram that is IPv6 (no extension header) or IPv4, then UDP, then at least a
        BTH; -1 for anything else (the decoder then decides)."""
        if len(data) < 40:
            return -1
        v = data[0] >> 4
        if v == 6 and data[6] == 17:
            at = 40 + 8
        elif v == 4 and data[9] == 17:
            at = (data[0] & 0x0F) * 4 + 8
        else:
            return -1
        return at if len(data) >= at + 12 else -1

    def rx_sockets(self):
        """(port index, socket) of every receive socket; the endpoint runs one reader task per socket."""
        return list(enumerate(self.socks))

    def local_peer(self) -> Peer:
        """This side's addresses, as the `Peer` a remote QP connects to."""
        return Peer(tuple(self.local))

    def register(self, peer: Peer) -> None:
        """Know `peer`'s addresses, so that packets from them are attributed to it."""
        for p, a in enumerate(peer.addrs):
            if a is not None:
                self._peers[(p, a)] = peer
        self._sources.clear()  # a source seen before may now belong to this peer

    def frame(self, out):
        """(socket index, datagram bytes, destination) for an `OutPacket`, or None when it cannot be addressed."""
        p = out.port - 1
        peer = out.dest
        if not isinstance(peer, Peer) or p >= len(peer.addrs) or peer.addrs[p] is None or p >= self.ports:
            return None
        net = self._nets.get((p, peer))
        if net is None:
            self.register(peer)
            net = np.zeros(1, dtype=NET)
            n = net[0]
            n["ip_version"], n["ev_mode"], n["hop_limit"], n["dport"] = 6, int(EvMode.STEV), self.hop_limit, ROCEV2_UDP_PORT
            n["src"], n["dst"] = _v6(self.local[p][0]), _v6(peer.addrs[p][0])
            self._nets[(p, peer)] = net
        return p, self.codec.encode(out.pkt, net, out.payload), peer.addrs[p]

    def unframe_untrusted(self, port: int, data: bytes, ancdata, addr):
        """(PKT row, payload, sender `Peer`) of a received datagram; raises `DecodeError` for anything else."""
        pkt, payload = self.codec.decode_untrusted(data, port)
        peer = self._sources.get((port, addr[:2]))
        if peer is None:
            a = parse_addr(addr[:2])
            peer = self._peers.get((port, a)) or Peer(tuple(a if k == port else None for k in range(self.ports)))
            if len(self._sources) > 1 << 16:
                self._sources.clear()
            self._sources[(port, addr[:2])] = peer
        return pkt, payload, peer

    def close(self) -> None:
        """Close the sockets."""
        for s in self.socks:
            s.close()


class NativeSrv6:
    """IPv6-in-IPv6 on a uSID fabric: raw-socket sends with the EV's carrier, UDP 4791 receives.

    `topo` is the fabric (`mrc.fabric.Topology`) and `host` this endpoint's host
    id; `netns` the namespace whose stack the sockets use (the namespace fabric's
    host namespace, or None for the current one, e.g. on a real SRv6 fabric).
    """

    mode = "native"
    ev_mode = EvMode.SRV6

    def __init__(self, topo, host: int, *, netns: str | None = None, udp_port: int = ROCEV2_UDP_PORT,
                 hop_limit: int = 64):
        if not 0 <= host < topo.n_hosts:
            raise UsageError(f"host = {host!r}: hosts are 0..{topo.n_hosts - 1}")
        self.topo, self.host, self.netns = topo, int(host), netns
        self.udp_port, self.hop_limit = udp_port, hop_limit
        self.local = [(str(topo.host_address(host, p)), udp_port) for p in range(topo.n_planes)]
        self.socks: list[Datagram] = []  # one UDP socket per plane, then the raw socket
        self.rx_buffer = self.tx_buffer = SOCKET_BUFFER  # bytes per socket (the endpoint sizes them, `Endpoint`)
        self.codec = Codec(ev_mode=EvMode.STEV, dport=udp_port, verify_udp=False)  # the kernel checked UDP
        self._nets: dict = {}  # (Peer, plane, ev) -> (NET row, carrier text)
        self._local_packed = [ipaddress.IPv6Address(a).packed for a, _ in self.local]
        self._by_addr = {str(topo.host_address(h, p)): (h, p) for h in range(topo.n_hosts) for p in range(topo.n_planes)}
        self._sources: dict = {}  # (port, source address text, source port) -> (packed address, Peer)

    @property
    def ports(self) -> int:
        """The number of NIC ports (one socket address each)."""
        return self.topo.n_planes

    async def open_sockets(self) -> None:
        """Create the sockets (and bind or join the host's namespace) before the endpoint starts."""
        try:
            raw = Datagram.open(_socket.AF_INET6, _socket.SOCK_RAW, _socket.IPPROTO_RAW, netns=self.netns)
        except PermissionError:
            raise MRCError("native mode sends through a raw IPv6 socket and needs CAP_NET_RAW: run as root "
                           "or grant the capability (setcap cap_net_raw+ep on the Python interpreter); "
                           "UDP encapsulation mode needs no privilege") from None
        udp = [Datagram.open(_socket.AF_INET6, netns=self.netns) for _ in self.local]
        self.socks = [*udp, raw]
        for sock, addr in zip(udp, self.local):
            sock.tune(self.rx_buffer, self.tx_buffer)
            sock.setsockopt(_socket.IPPROTO_IPV6, IPV6_FLOWINFO, 1)
            sock.setsockopt(_socket.IPPROTO_IPV6, _socket.IPV6_RECVTCLASS, 1)
            try:
                await sock.bind(addr)
            except OSError as e:
                raise MRCError(f"cannot bind [{addr[0]}]:{addr[1]} for host h{self.host}: {e.strerror}"
                               + (" (is the netns fabric up, and is this the host's namespace?)"
                                  if e.errno == errno.EADDRNOTAVAIL else "")) from None
        raw.tune(self.rx_buffer, self.tx_buffer)

    def rx_sockets(self):
        """(port index, socket) of every receive socket; the endpoint runs one reader task per socket."""
        return list(enumerate(self.socks[: len(self.local)]))

    def receive_only(self, port: int, addr) -> bool:
        """Not possible here: after decapsulation a packet's UDP source port is its entropy, so no single
        (address, port) names the peer; the endpoint's source check does the work in Python."""
        return False

    @staticmethod
    def dqpns(rows: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """BTH's destination QP of each datagram of a batch (one per row, `lens` their lengths), and where valid."""
        return _u24(rows, np.full(len(rows), 5)), lens >= 12

    @staticmethod
    def bth_at(data) -> int:
        """Where BTH starts in a datagram: the UDP payload starts with it (-1: too short to hold one)."""
        return 0 if len(data) >= 12 else -1

    def local_peer(self) -> Peer:
        """This side's addresses, as the `Peer` a remote QP connects to."""
        return Peer.fabric_host(self.topo, self.host, self.udp_port)

    def register(self, peer: Peer) -> None:
        """Know `peer`'s addresses, so that packets from them are attributed to it."""
        pass  # peers are fabric hosts: found by address

    def frame(self, out):
        """(socket index, datagram bytes, destination) for an `OutPacket`, or None when it cannot be addressed."""
        p, peer, ev = out.port - 1, out.dest, int(out.pkt["ev"])
        if not isinstance(peer, Peer) or peer.host is None or p >= self.ports:
            return None
        key = (peer, p, ev)
        hit = self._nets.get(key)
        if hit is None:
            try:
                carrier = self.topo.carrier(self.host, peer.host, ev)
            except UsageError:
                return None  # an EV that names no path of this fabric
            if (int(carrier) >> 96) & 0xFFFF != p:  # the carrier's block is its plane
                return None
            net = np.zeros(1, dtype=NET)
            n = net[0]
            n["ip_version"], n["ev_mode"], n["dport"] = 6, int(EvMode.SRV6), peer.addrs[p][1]
            n["hop_limit"] = n["outer_hop_limit"] = self.hop_limit
            n["src"] = n["outer_src"] = _v6(self.local[p][0])
            n["dst"] = _v6(peer.addrs[p][0])
            n["outer_dst"] = np.frombuffer(carrier.packed, dtype=np.uint8)
            n["outer_flow_label"] = ev & 0xFFFF  # the inner flow label's EV bits: entropy for plain IPv6 hops
            if len(self._nets) > 1 << 16:
                self._nets.clear()
            hit = self._nets[key] = (net, (str(carrier), 0))
        net, dest = hit
        return len(self.socks) - 1, self.codec.encode(out.pkt, net, out.payload), dest

    def unframe_untrusted(self, port: int, data: bytes, ancdata, addr):
        """(PKT row, payload, sender `Peer`) of a received datagram; raises `DecodeError` for anything else."""
        flowinfo = tclass = 0
        for level, kind, value in ancdata:
            if level == _socket.IPPROTO_IPV6 and kind == IPV6_FLOWINFO and len(value) >= 4:
                flowinfo = struct.unpack("!I", value[:4])[0]
            elif level == _socket.IPPROTO_IPV6 and kind == IPV6_TCLASS and len(value) >= 4:
                tclass = struct.unpack("=i", value[:4])[0] & 0xFF
        source = self._sources.get((port, addr[0], addr[1]))
        if source is None:
            src = ipaddress.IPv6Address(addr[0].split("%")[0])
            h, plane = self._by_addr.get(str(src), (None, None))
            if plane != port:
                h = None  # a host's address on another plane: not where this port's packets come from
            peer = Peer.fabric_host(self.topo, h, self.udp_port) if h is not None else Peer(
                tuple((str(src), int(addr[1])) if k == port else None for k in range(self.ports)))
            if len(self._sources) > 1 << 16:
                self._sources.clear()
            source = self._sources[(port, addr[0], addr[1])] = (src.packed, peer)
        length = 8 + len(data)
        if length > 0xFFFF:
            raise DecodeError("UDP", "length", f"datagram of {len(data)} bytes is too long")
        head = struct.pack("!IHBB16s16sHHHH", (6 << 28) | (tclass << 20) | (flowinfo & 0xFFFFF), length, 17,
                           self.hop_limit, source[0], self._local_packed[port], int(addr[1]), self.udp_port, length, 0)
        pkt, payload = self.codec.decode_untrusted(head + data, port)
        return pkt, payload, source[1]

    def close(self) -> None:
        """Close the sockets."""
        for s in self.socks:
            s.close()

