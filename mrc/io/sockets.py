"""Datagram sockets for the adapter: a fast path for real sockets, trio's API for fake ones.

`Datagram` wraps one socket made by ``trio.socket.socket`` (so that trio's
in-memory fake network, ``trio.testing``'s ``FakeNet``, can stand in for the
kernel in tests):

- a real socket is detached into a non-blocking stdlib socket; reads drain
  everything queued (up to a batch) before waiting with
  ``trio.lowlevel.wait_readable``, and sends wait (``wait_writable``) only
  when the kernel's buffer is full. A burst of packets therefore goes out
  without a scheduler round per packet, and a peer in the same process does
  not run in the middle of it;
- a fake socket (no file descriptor) goes through its async ``recvmsg`` /
  ``sendto``, one datagram per call.

Sockets are created inside a network namespace when one is named (the
namespace fabric's hosts), and get large buffers when the system allows.
"""
from __future__ import annotations

import socket as _socket

import trio

SOCKET_BUFFER = 8 << 20  # bytes asked for each socket's send and receive buffers
SO_RCVBUFFORCE, SO_SNDBUFFORCE = 33, 32  # Linux: exceed rmem_max / wmem_max when privileged


def _netns(ns):
    from mrc.fabric.netns import inside

    return inside(ns)


class Datagram:
    """One datagram socket (see the module docstring)."""

    def __init__(self, tsock):
        self.fake = False
        try:
            tsock.fileno()
        except NotImplementedError:
            self.fake = True
        if self.fake:
            self.tsock, self.sock = tsock, None
        else:
            self.sock = _socket.socket(fileno=tsock.detach())
            self.sock.setblocking(False)
            self.tsock = None

    @classmethod
    def open(cls, family: int, kind: int = _socket.SOCK_DGRAM, proto: int = 0, *, netns: str | None = None):
        with _netns(netns):
            return cls(trio.socket.socket(family, kind, proto))

    def setsockopt(self, level: int, opt: int, value) -> bool:
        """Set an option; False if the socket refuses it (fake sockets refuse all)."""
        try:
            (self.sock or self.tsock).setsockopt(level, opt, value)
            return True
        except (OSError, NotImplementedError):
            return False

    def tune(self) -> None:
        """Big buffers: the privileged FORCE options first, else the capped ones."""
        for force, plain in ((SO_RCVBUFFORCE, _socket.SO_RCVBUF), (SO_SNDBUFFORCE, _socket.SO_SNDBUF)):
            if not self.setsockopt(_socket.SOL_SOCKET, force, SOCKET_BUFFER):
                self.setsockopt(_socket.SOL_SOCKET, plain, SOCKET_BUFFER)

    async def bind(self, addr) -> None:
        if self.fake:
            await self.tsock.bind(addr)
        else:
            self.sock.bind(addr)  # numeric addresses only: never blocks

    def getsockname(self):
        return (self.sock or self.tsock).getsockname()

    async def recv_batch(self, limit: int, ancsize: int = 0) -> list:
        """At least one datagram, at most `limit`: ``(data, ancdata, flags, addr)`` each. Always a checkpoint.

        Socket errors (e.g. an ICMP error queued on the socket) come back as
        ``(None, OSError, 0, None)`` entries, so that the caller can count them.
        """
        if self.fake:
            if ancsize:
                data, anc, flags, addr = await self.tsock.recvmsg(65535)
            else:
                (data, addr), anc, flags = await self.tsock.recvfrom(65535), [], 0
            return [(data, anc, flags, addr)]
        out = []
        waited = False
        while True:
            while len(out) < limit:
                try:
                    out.append(self.sock.recvmsg(65535, ancsize))
                except BlockingIOError:
                    break
                except OSError as e:
                    out.append((None, e, 0, None))
            if out:
                if not waited:
                    await trio.lowlevel.checkpoint()  # a busy socket must not starve the other tasks
                return out
            await trio.lowlevel.wait_readable(self.sock)
            waited = True

    async def sendto(self, data, addr) -> None:
        """Send one datagram; waits only while the kernel's send buffer is full. Raises OSError."""
        if self.fake:
            await self.tsock.sendto(data, addr)
            return
        while True:
            try:
                self.sock.sendto(data, addr)
                return
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.sock)

    def close(self) -> None:
        (self.sock or self.tsock).close()
