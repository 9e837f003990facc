"""An in-memory UDP network for trio, through trio's public socket-factory hook.

``trio.socket.set_custom_socket_factory`` (public API, documented for testing) makes every
``trio.socket.socket(...)`` of the current ``trio.run`` a `FakeUdpSocket` of this module, so the
adapter's own code (`mrc.io.sockets.Datagram`, which treats a socket without a file descriptor as
fake) runs unchanged over it. What the tests need, and no more:

- UDP over IPv4 and IPv6 by numeric address: `bind` (port 0 picks the next free port from 50000
  up, a wildcard address binds the loopback one), `sendto`, `recvfrom`, `recvmsg` (no ancillary
  data: the reply's is empty), `getsockname`, `close`; a socket option is refused with OSError;
- every datagram goes to ``FakeNet.route_packet(packet)`` when one is set (the test decides what
  the network does: drop, duplicate, delay), else straight to `FakeNet.deliver_packet`, which
  queues it at the socket bound to its destination or drops it when there is none (as UDP does);
- a packet is a `UdpPacket` (``source`` and ``destination`` socket addresses, ``payload`` bytes).

Every send and receive is a trio checkpoint. Under ``MockClock(autojump_threshold=0)`` time moves
only when every task waits, so a run is deterministic and takes no wall time.
"""
from __future__ import annotations

import errno
import ipaddress
import socket as _socket
from dataclasses import dataclass
from typing import Callable

import trio

EPHEMERAL_FIRST = 50_000  # the first port handed out for a bind to port 0


@dataclass(frozen=True)
class UdpPacket:
    source: tuple  # (host, port) as the sender's getsockname() says it
    destination: tuple  # (host, port) as given to sendto, the host's address normalised
    payload: bytes


def _address(family: int, addr) -> tuple[str, int]:
    """A numeric (host, port[, flowinfo, scope]) socket address as (normalised host, port)."""
    if not isinstance(addr, tuple) or len(addr) not in ((2,) if family == _socket.AF_INET else (2, 4)):
        raise OSError(errno.EINVAL, f"fake network: bad socket address {addr!r}")
    host, port = addr[0], addr[1]
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise OSError(errno.EINVAL, f"fake network: {host!r} is not a numeric address") from None
    if (ip.version == 4) != (family == _socket.AF_INET):
        raise OSError(errno.EAFNOSUPPORT, f"fake network: {host} is not of the socket's address family")
    if not isinstance(port, int) or not 0 <= port <= 0xFFFF:
        raise OSError(errno.EINVAL, f"fake network: bad port {port!r}")
    return ip.compressed, port


class FakeNet:
    """The network: which socket is bound where, and the test's `route_packet` hook."""

    def __init__(self) -> None:
        self.route_packet: Callable[[UdpPacket], None] | None = None
        self._bound: dict[tuple[str, int], FakeUdpSocket] = {}
        self._next_port = EPHEMERAL_FIRST

    def enable(self) -> None:
        """Make every socket the current ``trio.run`` opens one of this network's (call inside the run)."""
        trio.socket.set_custom_socket_factory(_Factory(self))

    def send_packet(self, packet: UdpPacket) -> None:
        if self.route_packet is None:
            self.deliver_packet(packet)
        else:
            self.route_packet(packet)

    def deliver_packet(self, packet: UdpPacket) -> None:
        """Queue `packet` at the socket bound to its destination; none there: it is dropped, as UDP does."""
        sock = self._bound.get(packet.destination)
        if sock is not None:
            sock._arrive(packet)

    def _bind(self, sock: "FakeUdpSocket", host: str, port: int) -> tuple[str, int]:
        if port == 0:
            while (host, self._next_port) in self._bound:
                self._next_port += 1
            port = self._next_port
            self._next_port += 1
        if (host, port) in self._bound:
            raise OSError(errno.EADDRINUSE, f"fake network: {host} port {port} is in use")
        self._bound[(host, port)] = sock
        return host, port

    def _unbind(self, local: tuple[str, int]) -> None:
        self._bound.pop(local, None)


class _Factory(trio.abc.SocketFactory):
    def __init__(self, net: FakeNet) -> None:
        self.net = net

    def socket(self, family=_socket.AF_INET, type=_socket.SOCK_DGRAM, proto=0):  # noqa: A002 (trio's names)
        return FakeUdpSocket(self.net, family, type, proto)


class FakeUdpSocket:
    """One UDP socket of a `FakeNet` (the subset of trio's socket API the adapter uses)."""

    def __init__(self, net: FakeNet, family: int, kind: int, proto: int) -> None:
        if family not in (_socket.AF_INET, _socket.AF_INET6):
            raise OSError(errno.EAFNOSUPPORT, f"fake network: address family {family} (only AF_INET, AF_INET6)")
        if kind != _socket.SOCK_DGRAM:
            raise OSError(errno.EPROTONOSUPPORT, f"fake network: socket type {kind} (only SOCK_DGRAM)")
        self.net, self.family, self.type, self.proto = net, family, kind, proto
        self.local: tuple[str, int] | None = None
        self.closed = False
        self._send, self._recv = trio.open_memory_channel(float("inf"))

    # --- state -------------------------------------------------------------------------------
    def fileno(self) -> int:
        raise NotImplementedError("a fake socket has no file descriptor")

    def getsockname(self) -> tuple[str, int]:
        self._check_open()
        if self.local is None:
            return ("0.0.0.0" if self.family == _socket.AF_INET else "::", 0)
        return self.local

    def setsockopt(self, level: int, opt: int, value) -> None:
        self._check_open()
        raise OSError(errno.ENOPROTOOPT, f"fake network: no socket options ({level}, {opt})")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.local is not None:
            self.net._unbind(self.local)
        self._recv.close()

    def _check_open(self) -> None:
        if self.closed:
            raise OSError(errno.EBADF, "fake network: socket is closed")

    # --- I/O -----------------------------------------------------------------------------------
    async def bind(self, addr) -> None:
        self._check_open()
        await trio.lowlevel.checkpoint()
        if self.local is not None:
            raise OSError(errno.EINVAL, "fake network: socket is already bound")
        host, port = _address(self.family, addr)
        if ipaddress.ip_address(host).is_unspecified:
            host = "127.0.0.1" if self.family == _socket.AF_INET else "::1"
        self.local = self.net._bind(self, host, port)

    async def sendto(self, data, addr) -> int:
        self._check_open()
        await trio.lowlevel.checkpoint()
        destination = _address(self.family, addr)
        if self.local is None:
            await self.bind(("0.0.0.0" if self.family == _socket.AF_INET else "::", 0))
        payload = bytes(data)
        self.net.send_packet(UdpPacket(self.local, destination, payload))
        return len(payload)

    async def recvfrom(self, bufsize: int):
        data, _anc, _flags, addr = await self.recvmsg(bufsize)
        return data, addr

    async def recvmsg(self, bufsize: int, ancbufsize: int = 0, flags: int = 0):
        self._check_open()
        if self.local is None:
            raise OSError(errno.EINVAL, "fake network: receive on an unbound socket would wait forever")
        if flags:
            raise OSError(errno.EINVAL, f"fake network: no receive flags ({flags})")
        packet = await self._recv.receive()
        data = packet.payload[:bufsize]
        return data, [], (_socket.MSG_TRUNC if len(packet.payload) > bufsize else 0), packet.source

    def _arrive(self, packet: UdpPacket) -> None:
        try:
            self._send.send_nowait(packet)
        except trio.BrokenResourceError:  # closed meanwhile: the datagram is lost, as on a real host
            pass
