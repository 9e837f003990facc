"""Serve an in-process adapter over the wire-level protocol (`mrc.conformance.protocol`), with trio.

    python -m mrc.conformance.peer [--adapter reference | mutant:NAME | module:Class] [--port 0] [--once]

This is the worked example of an out-of-process implementation under test:
it runs the reference implementation (or any in-process adapter) in its own
process, exchanges packets as UDP datagrams (one socket per NIC port) and
obeys the control requests. An implementation in another language implements
the same protocol; nothing here is specific to Python but the adapter it wraps.
"""
from __future__ import annotations

import argparse
import base64
import collections
import socket
import sys

import trio

from .adapter import EndpointConfig
from .protocol import BANNER, PROTOCOL, LineReader, ProtocolError, digest, dumps, loads

IO_TIMEOUT_S = 10.0  # an absolute limit on every wait
RX_WAIT_S = 0.5  # how long an "rx" request waits for its datagrams before reporting them missing
UDP_BUFFER = 4 << 20
MAX_UNCLAIMED = 65536  # datagrams an endpoint keeps before an "rx" claims them ...
MAX_UNCLAIMED_BYTES = 64 << 20  # ... and their bytes: beyond either, the oldest is dropped and counted

# Each control connection is served on its own (one client never waits for another) and within bounds:
MAX_CLIENTS = 8  # connections served at once; more wait in the listen queue
IDLE_TIMEOUT_S = 300.0  # a connection that sends no request for this long is closed
LINE_TIMEOUT_S = 30.0  # a request line must be complete this long after its first byte
MAX_CONTROL_LINE = 16 << 20  # bytes of one request line (a base64 write of several MB)
MAX_ENDPOINTS = 16  # endpoints one connection has open at once
MAX_REGIONS = 256  # memory regions one connection has registered at once ...
MAX_REGION_BYTES = 256 << 20  # ... and their bytes (the suite's largest is a few MB)


def udp_socket(host: str):
    """A trio UDP socket with large buffers (best effort: the kernel may cap them; loss is repaired by resend)."""
    s = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, UDP_BUFFER)
        except OSError:
            pass
    return s


class PeerEndpoint:
    def __init__(self, ep, socks):
        self.ep = ep
        self.socks = socks
        self.regions = self.region_bytes = 0
        self.inbox: dict = collections.defaultdict(collections.deque)  # (port, digest) -> datagrams
        self.wakeup = trio.Event()
        self.last_tx: dict = {}  # digest -> (port, data) of the last "tx" batch, for "resend"
        # bounded: arrival order of the keys, how many of each key's oldest entries were claimed since,
        # datagrams and bytes held; `dropped` counts the unclaimed datagrams evicted (oldest first)
        self._order: collections.deque = collections.deque()
        self._claimed: collections.Counter = collections.Counter()
        self.held = self.held_bytes = self.dropped = 0

    def put(self, key, data: bytes) -> None:
        """Keep an arrived datagram until an "rx" claims it, evicting the oldest beyond the bounds."""
        self.inbox[key].append(data)
        self._order.append(key)
        self.held += 1
        self.held_bytes += len(data)
        while self.held > MAX_UNCLAIMED or self.held_bytes > MAX_UNCLAIMED_BYTES:
            k = self._order.popleft()
            if self._claimed[k]:
                self._claimed[k] -= 1  # that entry was claimed already
                continue
            old = self.inbox[k].popleft()
            if not self.inbox[k]:
                del self.inbox[k]
            self.held -= 1
            self.held_bytes -= len(old)
            self.dropped += 1

    def claim(self, key) -> bytes:
        data = self.inbox[key].popleft()
        if not self.inbox[key]:
            del self.inbox[key]
        self.held -= 1
        self.held_bytes -= len(data)
        if self.held == 0:
            self._order.clear()
            self._claimed.clear()
        else:
            self._claimed[key] += 1
        return data

    async def receive_loop(self, port: int, sock) -> None:
        try:
            while True:
                data, _ = await sock.recvfrom(1 << 16)
                self.put((port, digest(data)), data)
                self.wakeup.set()
                self.wakeup = trio.Event()
        except trio.ClosedResourceError:  # the endpoint was closed
            return

    async def arrived(self, wanted: list) -> list:
        """Wait (a little) until every (port, digest) of `wanted` is here; return those still missing."""
        need = collections.Counter((int(p), str(d)) for p, d in wanted)
        with trio.move_on_after(RX_WAIT_S):
            while any(len(self.inbox.get(k, ())) < n for k, n in need.items()):
                await self.wakeup.wait()
        return [list(k) for k, n in need.items() if len(self.inbox.get(k, ())) < n]


class Session:
    """One control connection: its endpoints and where transmitted packets go."""

    def __init__(self, adapter, nursery, host: str, client: str | None = None):
        self.adapter, self.nursery, self.host = adapter, nursery, host
        self.client = client  # the connection's source address: the only sink its packets may go to
        self.eps: dict[int, PeerEndpoint] = {}
        self.next_ep = 1
        self.sink = None

    @property
    def regions(self) -> tuple[int, int]:
        """(regions, bytes) registered on the connection's open endpoints."""
        return sum(pe.regions for pe in self.eps.values()), sum(pe.region_bytes for pe in self.eps.values())

    def _ep(self, req) -> PeerEndpoint:
        try:
            return self.eps[int(req["ep"])]
        except (KeyError, TypeError, ValueError):
            raise ProtocolError(f"unknown endpoint {req.get('ep')!r}") from None

    async def handle(self, req: dict) -> dict:
        op = req.get("op")
        fn = getattr(self, f"op_{op}", None)
        if fn is None:
            raise ProtocolError(f"unknown op {op!r}")
        return await fn(req) or {}

    async def op_hello(self, req):
        host, port = str(req["sink"][0]), int(req["sink"][1])
        if self.client is not None and host != self.client:
            raise ProtocolError(f"sink {host!r}: the peer sends packets only to the connection's own address "
                                f"{self.client!r}")
        if not 0 < port < 1 << 16:
            raise ProtocolError(f"sink port {port} outside 1..65535")
        self.sink = (host, port)
        return {"protocol": PROTOCOL, "name": self.adapter.name, "features": sorted(self.adapter.features)}

    async def op_create(self, req):
        if len(self.eps) >= MAX_ENDPOINTS:
            raise ProtocolError(f"create: {len(self.eps)} endpoints open, at most {MAX_ENDPOINTS} per connection "
                                "(close some)")
        cfg = EndpointConfig.from_json(req["config"])
        ep = self.adapter.create_endpoint(cfg)
        socks = []
        for _ in range(ep.ports):
            s = udp_socket(self.host)
            await s.bind((self.host, 0))
            socks.append(s)
        pe = PeerEndpoint(ep, socks)
        key = self.next_ep  # never reused: a late request for a closed endpoint finds nothing
        self.next_ep += 1
        self.eps[key] = pe
        for port, s in enumerate(socks, 1):
            self.nursery.start_soon(pe.receive_loop, port, s)
        return {"ep": key, "qpn": ep.qpn, "address": ep.address.hex(), "udp_ports": [s.getsockname()[1] for s in socks]}

    async def op_connect(self, req):
        self._ep(req).ep.connect(int(req["peer_qpn"]), bytes.fromhex(req["peer_address"]), sq_psn=int(req["sq_psn"]),
                                 rq_psn=int(req["rq_psn"]), now=int(req["now"]))

    async def op_reg_mr(self, req):
        pe = self._ep(req)
        length = int(req["length"])
        n, total = self.regions
        if not 0 < length <= MAX_REGION_BYTES - total or n >= MAX_REGIONS:
            raise ProtocolError(f"reg_mr: length {length} with {n} region(s) of {total} bytes registered: a connection "
                                f"holds at most {MAX_REGIONS} regions of {MAX_REGION_BYTES} bytes in all")
        r = pe.ep.reg_mr(length)
        pe.regions += 1
        pe.region_bytes += length
        return {"va": r.va, "rkey": r.rkey, "length": r.length}

    async def op_read_mr(self, req):
        from .adapter import Region

        data = self._ep(req).ep.read_mr(Region(int(req["va"]), int(req["rkey"]), int(req["length"])))
        return {"data": base64.b64encode(data).decode()}

    async def op_post_write(self, req):
        imm = req.get("imm")
        self._ep(req).ep.post_write(int(req["wr_id"]), base64.b64decode(req["data"]), remote_va=int(req["remote_va"]),
                                    rkey=int(req["rkey"]), imm=None if imm is None else int(imm), now=int(req["now"]))

    async def op_post_recv(self, req):
        self._ep(req).ep.post_recv(int(req["wr_id"]))

    async def op_rx(self, req):
        pe = self._ep(req)
        missing = await pe.arrived([(p, d) for p, d, _ in req["packets"]])
        if missing:  # nothing is fed until every datagram is here: the suite resends the missing ones
            return {"missing": missing}
        for port, dig, now in req["packets"]:
            pe.ep.receive(pe.claim((int(port), str(dig))), int(port), int(now))
        return {"missing": []}

    async def op_tx(self, req):
        pe = self._ep(req)
        out = []
        pe.last_tx = {}
        for port, data in pe.ep.transmit(int(req["now"])):
            dig = digest(data)
            pe.last_tx[dig] = (port, data)
            await pe.socks[port - 1].sendto(data, self.sink)
            out.append([port, dig])
        return {"packets": out}

    async def op_resend(self, req):
        pe = self._ep(req)
        for dig in req["digests"]:
            if dig not in pe.last_tx:
                raise ProtocolError(f"resend: {dig} was not in the last tx batch")
            port, data = pe.last_tx[dig]
            await pe.socks[port - 1].sendto(data, self.sink)

    async def op_deadline(self, req):
        return {"deadline": self._ep(req).ep.next_deadline()}

    async def op_timer(self, req):
        self._ep(req).ep.handle_timer(int(req["now"]))

    async def op_poll(self, req):
        return {"completions": [vars(c) for c in self._ep(req).ep.poll()]}

    async def op_events(self, req):
        return {"events": [vars(e) for e in self._ep(req).ep.events()]}

    async def op_qp_state(self, req):
        return {"state": self._ep(req).ep.qp_state()}

    async def op_ev_table(self, req):
        return {"evs": [[e.ev, e.port, e.state] for e in self._ep(req).ep.ev_table()]}

    async def op_set_ev_state(self, req):
        self._ep(req).ep.set_ev_state(int(req["ev"]), str(req["state"]), int(req["now"]))

    async def op_set_port_state(self, req):
        self._ep(req).ep.set_port_state(int(req["port"]), bool(req["up"]), int(req["now"]))

    async def op_cc_state(self, req):
        return {"cc": self._ep(req).ep.cc_state()}

    async def op_ev_probe(self, req):
        self._ep(req).ep.ev_probe(int(req["req_id"]), int(req["ev"]), int(req["port"]), int(req["now"]))

    async def op_ep_responses(self, req):
        return {"answers": [[a.req_id, a.port, a.rtt_ns] for a in self._ep(req).ep.ep_responses()]}

    async def op_ctl(self, req):
        return {"answer": self._ep(req).ep.ctl(str(req["call"]), dict(req.get("args") or {}), int(req["now"]))}

    async def op_close(self, req):
        pe = self.eps.pop(int(req["ep"]), None)
        if pe is not None:
            pe.ep.close()
            for s in pe.socks:
                s.close()

    async def op_bye(self, req):
        return {}

    def close(self) -> None:
        for pe in self.eps.values():
            pe.ep.close()
            for s in pe.socks:
                s.close()
        self.eps.clear()


def _echo_id(req: dict):
    """The request's ``id`` as the response may echo it: JSON's own values only (a number that is not finite,
    or anything else, becomes null: the response stays valid JSON)."""
    v = req.get("id") if isinstance(req, dict) else None
    if isinstance(v, bool) or v is None or isinstance(v, str) or (isinstance(v, int) and abs(v) < 1 << 63):
        return v
    if isinstance(v, float) and v == v and abs(v) != float("inf"):
        return v
    return None


async def _read_request(reader: LineReader) -> bytes | None:
    """The next request line: None at the end of the connection or after `IDLE_TIMEOUT_S` without one;
    `ProtocolError` for a line not complete within `LINE_TIMEOUT_S` of its first byte, or too long."""
    with trio.move_on_after(IDLE_TIMEOUT_S):
        while not reader.buf:
            if not await reader.fill():
                return None
        with trio.fail_after(LINE_TIMEOUT_S):
            return await reader.readline()
    return None


async def handle_connection(stream, adapter, host: str, client: str | None = None) -> None:
    reader = LineReader(stream, MAX_CONTROL_LINE)
    async with trio.open_nursery() as nursery:
        session = Session(adapter, nursery, host, client)
        try:
            while True:
                try:
                    line = await _read_request(reader)
                except (ProtocolError, trio.TooSlowError) as e:
                    why = e if isinstance(e, ProtocolError) else f"request line incomplete after {LINE_TIMEOUT_S:g} s"
                    with trio.move_on_after(IO_TIMEOUT_S):
                        await stream.send_all(dumps({"ok": False, "error": f"closing: {why}", "id": None}))
                    break
                if line is None:
                    break
                req: dict = {}
                try:
                    req = loads(line)
                    resp = {"ok": True, **await session.handle(req)}
                except NotImplementedError as e:
                    resp = {"ok": False, "error": f"not implemented: {e}", "not_implemented": str(e)}
                except Exception as e:  # report every failure to the suite; the session goes on
                    resp = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                resp["id"] = _echo_id(req)
                try:
                    data = dumps(resp)
                except ValueError as e:  # a value JSON cannot hold (NaN from the adapter): say so, validly
                    data = dumps({"ok": False, "error": f"the response is not valid JSON: {e}", "id": resp["id"]})
                with trio.fail_after(IO_TIMEOUT_S):  # a client that does not read its answers is dropped
                    await stream.send_all(data)
                if req.get("op") == "bye":
                    break
        except (trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            session.close()
            nursery.cancel_scope.cancel()
            await stream.aclose()


async def serve(make_adapter, host: str = "127.0.0.1", port: int = 0, *, once: bool = False,
                task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Accept control connections, each served in a task of its own with a fresh adapter from `make_adapter()`
    (at most `MAX_CLIENTS` at once); with `once`, return when the first connection ends."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    task_status.started(listeners[0].socket.getsockname()[1])
    slots = trio.Semaphore(MAX_CLIENTS)
    first_done = trio.Event()

    async def one(stream, first: bool):
        try:
            peer = stream.socket.getpeername()
            await handle_connection(stream, make_adapter(), host, str(peer[0]) if peer else None)
        finally:
            slots.release()
            if first:
                first_done.set()

    async with listeners[0], trio.open_nursery() as nursery:
        if once:
            nursery.start_soon(_cancel_when, first_done, nursery.cancel_scope)
        first = True
        while True:
            await slots.acquire()
            stream = await listeners[0].accept()
            nursery.start_soon(one, stream, first)
            first = False


async def _cancel_when(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def main(argv: list[str] | None = None) -> int:
    from .adapters import load_adapter

    ap = argparse.ArgumentParser(prog="python -m mrc.conformance.peer",
                                 description="Serve an MRC implementation to the conformance suite over UDP + JSON lines.")
    ap.add_argument("--adapter", default="reference", help="reference, mutant:NAME or module:Class (default reference)")
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=0, help="control TCP port (default 0: any free port)")
    ap.add_argument("--once", action="store_true", help="exit after the first control connection ends")
    args = ap.parse_args(argv)
    load_adapter(args.adapter)  # fail early on a bad name

    async def run():
        async with trio.open_nursery() as n:
            port = await n.start(lambda task_status: serve(lambda: load_adapter(args.adapter), args.host, args.port,
                                                           once=args.once, task_status=task_status))
            print(f"{BANNER} {args.host} {port}", flush=True)

    try:
        trio.run(run)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
