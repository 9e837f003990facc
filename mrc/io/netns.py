"""Linux network namespaces for the library's sockets: `inside(ns)` runs a block with the calling thread in a
named namespace (``/run/netns/NAME``, as ``ip netns`` makes them), so one process can own endpoints on several
hosts of a namespace fabric (`mrc.io.sockets`; `mrc.fabric.netns` builds the fabric and uses it too)."""
from __future__ import annotations

import contextlib
import ctypes
import os
import pathlib

from mrc.errors import MRCError

NETNS_DIR = pathlib.Path("/run/netns")
CLONE_NEWNET = 0x40000000


class NetnsError(MRCError):
    """A namespace operation failed (not root, no `ip`, an `ip` command refused)."""


_libc = None


def _setns(fd: int) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise NetnsError(f"setns failed: {os.strerror(err)} (needs CAP_SYS_ADMIN)")


@contextlib.contextmanager
def inside(ns: str | None):
    """Run the block with the calling thread in namespace `ns` (None: stay where we are).

    Sockets created inside stay in `ns` for their whole life, so one process can
    own endpoints on several hosts of the fabric.
    """
    if ns is None:
        yield
        return
    path = NETNS_DIR / ns
    if not path.exists():
        raise NetnsError(f"network namespace {ns!r} does not exist (is the fabric up? `mrc fabric netns up`)")
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(path, os.O_RDONLY)
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(home)
