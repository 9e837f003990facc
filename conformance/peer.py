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

    def __init__(self, adapter, nursery, host: str):
        self.adapter, self.nursery, self.host = adapter, nursery, host
        self.eps: dict[int, PeerEndpoint] = {}
        self.sink = None

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
        self.sink = (str(req["sink"][0]), int(req["sink"][1]))
        return {"protocol": PROTOCOL, "name": self.adapter.name, "features": sorted(self.adapter.features)}

    async def op_create(self, req):
        cfg = EndpointConfig.from_json(req["config"])
        ep = self.adapter.create_endpoint(cfg)
        socks = []
        for _ in range(ep.ports):
            s = udp_socket(self.host)
            await s.bind((self.host, 0))
            socks.append(s)
        pe = PeerEndpoint(ep, socks)
        key = len(self.eps) + 1
        self.eps[key] = pe
        for port, s in enumerate(socks, 1):
            self.nursery.start_soon(pe.receive_loop, port, s)
        return {"ep": key, "qpn": ep.qpn, "address": ep.address.hex(), "udp_ports": [s.getsockname()[1] for s in socks]}

    async def op_connect(self, req):
        self._ep(req).ep.connect(int(req["peer_qpn"]), bytes.fromhex(req["peer_address"]), sq_psn=int(req["sq_psn"]),
                                 rq_psn=int(req["rq_psn"]), now=int(req["now"]))

    async def op_reg_mr(self, req):
        r = self._ep(req).ep.reg_mr(int(req["length"]))
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


async def handle_connection(stream, adapter, host: str) -> None:
    reader = LineReader(stream)
    async with trio.open_nursery() as nursery:
        session = Session(adapter, nursery, host)
        try:
            while True:
                line = await reader.readline()
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
                resp["id"] = req.get("id")
                await stream.send_all(dumps(resp))
                if req.get("op") == "bye":
                    break
        finally:
            session.close()
            nursery.cancel_scope.cancel()
            await stream.aclose()


async def serve(make_adapter, host: str = "127.0.0.1", port: int = 0, *, once: bool = False,
                task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Accept control connections (one at a time); each gets a fresh adapter from `make_adapter()`."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    task_status.started(listeners[0].socket.getsockname()[1])
    async with listeners[0]:
        while True:
            stream = await listeners[0].accept()
            await handle_connection(stream, make_adapter(), host)
            if once:
                return


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
