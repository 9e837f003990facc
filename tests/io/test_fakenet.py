"""The io tests' in-memory network (`tests.io.fakenet`) does what they rely on."""
from __future__ import annotations

import errno
import socket

import pytest
import trio

from mrc.io.sockets import Datagram

from .conftest import run_mock
from .fakenet import EPHEMERAL_FIRST, FakeNet


def test_datagrams_reach_the_bound_socket_in_order_and_the_route_hook_sees_each():
    async def main():
        net = FakeNet()
        net.enable()
        a, b = Datagram.open(socket.AF_INET), Datagram.open(socket.AF_INET6)
        assert a.fake and b.fake  # the adapter's own check: no file descriptor
        await a.bind(("127.0.0.1", 0))
        await b.bind(("::", 0))  # the wildcard binds the loopback address
        assert a.getsockname() == ("127.0.0.1", EPHEMERAL_FIRST) and b.getsockname() == ("::1", EPHEMERAL_FIRST + 1)
        seen = []

        def route(packet):
            seen.append((packet.source, packet.destination, packet.payload))
            if packet.payload != b"drop":
                net.deliver_packet(packet)

        net.route_packet = route
        c = Datagram.open(socket.AF_INET)
        await c.bind(("127.0.0.1", 0))
        for data in (b"one", b"drop", b"two"):
            await c.sendto(data, a.getsockname())
        await c.sendto(b"nobody", ("127.0.0.1", 9))  # no socket there: lost, as UDP is
        got = [(await a.recv_batch(8))[0][0] for _ in range(2)]  # (datagrams, dropped, dropped bytes)
        assert [(d, addr) for d, _, _, addr in got] == [(b"one", c.getsockname()), (b"two", c.getsockname())]
        assert [s[2] for s in seen] == [b"one", b"drop", b"two", b"nobody"]
        return True

    assert run_mock(main)


def test_binding_twice_sockopts_and_closed_sockets_fail_as_real_ones_do():
    async def main():
        net = FakeNet()
        net.enable()
        a, b = Datagram.open(socket.AF_INET), Datagram.open(socket.AF_INET)
        await a.bind(("127.0.0.1", 6000))
        with pytest.raises(OSError) as exc:
            await b.bind(("127.0.0.1", 6000))
        assert exc.value.errno == errno.EADDRINUSE
        assert a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20) is False  # refused, reported
        with pytest.raises(OSError):
            await a.sendto(b"x", ("not-an-address", 1))
        a.close()
        await b.bind(("127.0.0.1", 6000))  # free again once closed
        with pytest.raises(OSError) as exc:
            await a.sendto(b"x", ("127.0.0.1", 6000))
        assert exc.value.errno == errno.EBADF
        return True

    assert run_mock(main)


def test_a_receive_waits_until_a_datagram_arrives():
    async def main():
        net = FakeNet()
        net.enable()
        a, b = Datagram.open(socket.AF_INET), Datagram.open(socket.AF_INET)
        await a.bind(("127.0.0.1", 0))
        await b.bind(("127.0.0.1", 0))

        async def later():
            await trio.sleep(0.5)
            await b.sendto(b"late", a.getsockname())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(later)
            t0 = trio.current_time()
            ((data, _, _, _),), _, _ = await a.recv_batch(1)
            return data, trio.current_time() - t0

    data, waited = run_mock(main)
    assert data == b"late" and waited == pytest.approx(0.5)
