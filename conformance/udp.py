"""The UDP sockets of the wire-level adapter protocol (`mrc.conformance.protocol`), the same on both sides:
the peer's NIC ports (`peer`) and the suite's sink (`wire_adapter`)."""
from __future__ import annotations

import socket

import trio

UDP_BUFFER = 4 << 20


def udp_socket(host: str):
    """A trio UDP socket with large buffers (best effort: the kernel may cap them; loss is repaired by resend)."""
    s = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, UDP_BUFFER)
        except OSError:
            pass
    return s
