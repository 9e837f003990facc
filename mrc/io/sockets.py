"""Datagram sockets for the adapter: a fast path for real sockets, trio's API for fake ones.

`Datagram` wraps one socket made by ``trio.socket.socket`` (so that an
in-memory network installed with trio's socket-factory hook, the tests'
``tests/io/fakenet.py``, can stand in for the kernel):

- a real socket is detached into a non-blocking stdlib socket; reads drain
  everything queued (up to a batch; while the socket is backlogged, one
  ``recvmmsg`` call per batch on Linux, `mrc.io.mmsg`, which also lets the
  caller screen the batch as arrays) before waiting with ``trio.lowlevel.wait_readable``, and sends wait (``wait_writable``) only
  when the kernel's buffer is full. A burst of packets therefore goes out
  without a scheduler round per packet, and a peer in the same process does
  not run in the middle of it;
- a fake socket (no file descriptor) goes through its async ``recvmsg`` /
  ``sendto``, one datagram per call.

Sockets are created inside a network namespace when one is named (the
namespace fabric's hosts), get buffers of the size asked (`tune`: what the
endpoint's retransmission timeout makes worth holding) when the system allows,
and may be connected to one remote address (`connect`): the kernel then drops
datagrams from every other source before they cost the process anything.
"""
from __future__ import annotations

import socket as _socket

import numpy as np
import trio

MSG_TRUNC = 0x20  # Linux

SOCKET_BUFFER = 8 << 20  # bytes asked for each socket's send and receive buffers, unless told otherwise
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
        self._mm = None  # the recvmmsg reader, made at the first batched read (False: not available)
        self._backlog = False  # the last read filled its batch: read the next ones with recvmmsg

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

    def tune(self, rx_bytes: int = SOCKET_BUFFER, tx_bytes: int = SOCKET_BUFFER) -> None:
        """Buffers of these sizes: the privileged FORCE options first (they may exceed the system's caps),
        else the capped ones."""
        for force, plain, n in ((SO_RCVBUFFORCE, _socket.SO_RCVBUF, rx_bytes), (SO_SNDBUFFORCE, _socket.SO_SNDBUF, tx_bytes)):
            if not self.setsockopt(_socket.SOL_SOCKET, force, n):
                self.setsockopt(_socket.SOL_SOCKET, plain, n)

    def connect(self, addr) -> bool:
        """Receive only from `addr` from now on (the kernel drops the rest); None: from anyone again. False for
        a socket that cannot (a fake one); sends to explicit addresses still work either way."""
        if self.fake:
            return False
        if addr is None:
            return _dissolve(self.sock.fileno())
        try:
            self.sock.connect(addr)  # numeric addresses only: never blocks
            return True
        except OSError:
            return False


    async def bind(self, addr) -> None:
        if self.fake:
            await self.tsock.bind(addr)
        else:
            self.sock.bind(addr)  # numeric addresses only: never blocks

    def getsockname(self):
        return (self.sock or self.tsock).getsockname()

    async def recv_batch(self, limit: int, ancsize: int = 0, screen=None) -> tuple[list, int, int]:
        """At least one datagram, at most `limit`: ``(data, ancdata, flags, addr)`` each, and how many datagrams
        (and bytes) `screen` dropped. Always a checkpoint.

        Datagrams are read one ``recvmsg`` at a time (about 2 us each: the cheapest way while a few wait).
        When a read fills its batch (the socket holds more than the reader keeps up with: a burst, a flood),
        reads without ancillary data switch to one ``recvmmsg`` call per batch on Linux (`mrc.io.mmsg`, a fixed
        cost of tens of us that pays off only for full batches) until batches are small again; then
        ``screen(rows, lens)`` (optional) sees the whole batch as arrays (one row of bytes per datagram, their
        lengths) and returns which to keep: the others never become Python objects. Socket errors (e.g. an
        ICMP error queued on the socket) come back as ``(None, OSError, 0, None)`` entries, so that the caller
        can count them.
        """
        if self.fake:
            if ancsize:
                data, anc, flags, addr = await self.tsock.recvmsg(65535)
            else:
                (data, addr), anc, flags = await self.tsock.recvfrom(65535), [], 0
            return [(data, anc, flags, addr)], 0, 0
        if not ancsize and self._backlog and self._mm is not False:
            return await self._recv_mmsg(limit, screen)
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
                self._backlog = len(out) >= limit  # a full batch: the socket holds more than we keep up with
                if not waited:
                    await trio.lowlevel.checkpoint()  # a busy socket must not starve the other tasks
                return out, 0, 0
            await trio.lowlevel.wait_readable(self.sock)
            waited = True

    async def _recv_mmsg(self, limit: int, screen) -> tuple[list, int, int]:
        from mrc.io import mmsg

        mm = self._mm
        if mm is None or len(mm.hdr) != limit:
            if not mmsg.available():
                self._mm = False
                return await self.recv_batch(limit, 0)
            mm = self._mm = mmsg.MmsgReader(self.sock.fileno(), limit)
        waited = False
        while True:
            try:
                n = mm.read()
            except OSError as e:
                return [(None, e, 0, None)], 0, 0
            if n:
                self._backlog = n > limit // 4  # back to one call per datagram once the socket keeps up again
                if not waited:
                    await trio.lowlevel.checkpoint()  # a busy socket must not starve the other tasks
                lens, trunc = mm.lens, mm.truncated
                keep = range(n)
                dropped = dropped_bytes = 0
                if screen is not None:
                    mask = screen(mm.rows[:n], lens)
                    keep = np.flatnonzero(mask)
                    dropped = n - len(keep)
                    dropped_bytes = int(lens.sum()) - int(lens[keep].sum())
                return [(mm.data(k), [], MSG_TRUNC if trunc[k] else 0, mm.source(k)) for k in keep], dropped, dropped_bytes
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


def _dissolve(fd: int) -> bool:
    """Undo a datagram socket's connect: connect(2) to an address of family AF_UNSPEC (Linux: "connectionless
    sockets may dissolve the association"), which Python's socket API cannot spell."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    unspec = (ctypes.c_ubyte * 28)()  # sa_family 0 = AF_UNSPEC, room for any address length the kernel checks
    return libc.connect(fd, unspec, ctypes.sizeof(unspec)) == 0
