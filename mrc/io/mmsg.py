"""Reading many datagrams with one system call: Linux ``recvmmsg(2)``, which Python's socket API lacks.

`MmsgReader(fd, count, size)` keeps `count` receive buffers of `size` bytes (one numpy array, one row per
datagram), their ``struct mmsghdr`` / ``struct iovec`` arrays and room for each source address, all
allocated once. `read()` fills up to `count` rows without blocking and returns how many: ``rows[k]`` holds
datagram k, ``lens[k]`` its length, ``truncated[k]`` whether it was longer than `size` (MSG_TRUNC), and
`source(k)` its (host, port). A caller can then look at every datagram of a batch at once (numpy) and make
Python objects only of those it keeps: under a flood, one call and a few array operations per batch
instead of one ``recvmsg`` call and a bytes object per datagram.

`available()` says whether the platform has it (Linux with a C library exporting ``recvmmsg``); elsewhere the
caller reads one datagram at a time. The layouts are those of the Linux x86-64 / aarch64 ABI (LP64:
pointers and ``size_t`` 8 bytes); `available` is False on anything else.
"""
from __future__ import annotations

import ctypes
import errno
import socket
import sys

import numpy as np

MSG_DONTWAIT = 0x40
MSG_TRUNC = 0x20
NAME_BYTES = 28  # sockaddr_in6, the largest address a UDP socket of either family receives

# struct msghdr followed by msg_len: struct mmsghdr (LP64)
MMSGHDR = np.dtype({"names": ["name", "namelen", "iov", "iovlen", "control", "controllen", "flags", "len"],
                    "formats": [np.uint64, np.uint32, np.uint64, np.uint64, np.uint64, np.uint64, np.int32, np.uint32],
                    "offsets": [0, 8, 16, 24, 32, 40, 48, 56], "itemsize": 64})
IOVEC = np.dtype([("base", np.uint64), ("len", np.uint64)])

_libc = None


def _recvmmsg():
    global _libc
    if _libc is None:
        try:
            lib = ctypes.CDLL(None, use_errno=True)
            fn = lib.recvmmsg
        except (OSError, AttributeError):
            _libc = False
            return None
        fn.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_void_p)
        fn.restype = ctypes.c_int
        _libc = fn
    return _libc or None


def available() -> bool:
    return sys.platform.startswith("linux") and ctypes.sizeof(ctypes.c_void_p) == 8 and _recvmmsg() is not None


class MmsgReader:
    """Batched non-blocking reads of one datagram socket (see the module docstring)."""

    def __init__(self, fd: int, count: int = 64, size: int = 9216 + 512):
        self.fd = fd
        self.fn = _recvmmsg()
        self.rows = np.zeros((count, size), dtype=np.uint8)
        self.names = np.zeros((count, NAME_BYTES), dtype=np.uint8)
        self.iov = np.zeros(count, dtype=IOVEC)
        self.iov["base"] = self.rows.ctypes.data + np.arange(count, dtype=np.uint64) * size
        self.iov["len"] = size
        self.hdr = np.zeros(count, dtype=MMSGHDR)
        self.hdr["name"] = self.names.ctypes.data + np.arange(count, dtype=np.uint64) * NAME_BYTES
        self.hdr["iov"] = self.iov.ctypes.data + np.arange(count, dtype=np.uint64) * IOVEC.itemsize
        self.hdr["iovlen"] = 1
        self.n = 0
        self._sources: dict = {}  # raw address bytes -> (host, port)

    @property
    def lens(self) -> np.ndarray:
        return self.hdr["len"][: self.n]

    @property
    def truncated(self) -> np.ndarray:
        return (self.hdr["flags"][: self.n] & MSG_TRUNC) != 0

    def read(self) -> int:
        """Fill rows with what the socket holds, up to `count`, without waiting; the number read (0: none).
        Raises OSError for a socket error (e.g. an ICMP error reported on a connected socket)."""
        self.hdr["namelen"] = NAME_BYTES  # in-out: the kernel writes back each address's length
        n = self.fn(self.fd, self.hdr.ctypes.data, len(self.hdr), MSG_DONTWAIT, None)
        if n < 0:
            self.n = 0
            err = ctypes.get_errno()
            if err in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR):
                return 0
            raise OSError(err, errno.errorcode.get(err, "error"))
        self.n = n
        return n

    def data(self, k: int) -> bytes:
        """Datagram k (of the last `read`) as bytes (at most the buffer's size)."""
        return self.rows[k, : min(int(self.hdr["len"][k]), self.rows.shape[1])].tobytes()

    def source(self, k: int) -> tuple[str, int]:
        """Datagram k's source (host, port), as ``recvfrom`` gives it."""
        raw = self.names[k, : int(self.hdr["namelen"][k])].tobytes()
        got = self._sources.get(raw)
        if got is None:
            family = int.from_bytes(raw[:2], sys.byteorder)
            port = int.from_bytes(raw[2:4], "big")
            if family == socket.AF_INET:
                got = (socket.inet_ntop(socket.AF_INET, raw[4:8]), port)
            else:
                got = (socket.inet_ntop(socket.AF_INET6, raw[8:24]), port)
            if len(self._sources) > 4096:
                self._sources.clear()
            self._sources[raw] = got
        return got
