"""The wire-level adapter: the suite's side of `mrc.conformance.protocol`.

`WireAdapter` drives an implementation running in another process (any
language) through UDP datagrams and a JSON-lines control connection. It
runs trio in a background thread (`trio.from_thread`), so the suite stays
synchronous and sans-IO; every wait has an absolute time limit, so a silent
peer fails the case instead of hanging the run.

    WireAdapter.spawn()                      # our reference, out of process
    WireAdapter.spawn(["./my-nic-peer"])     # anything that prints the banner
    WireAdapter.connect("127.0.0.1", 9000)   # a peer that is already running
"""
from __future__ import annotations

import base64
import collections
import os
import subprocess
import sys
import threading

import trio

from mrc.errors import MRCError

from .adapter import (FEATURES, Adapter, Completion, Endpoint, EndpointConfig, Event, EvInfo, ProbeAnswer, Region,
                      check_features)
from .peer import udp_socket
from .protocol import BANNER, PROTOCOL, LineReader, digest, dumps, loads

IO_TIMEOUT_S = 10.0
WAIT_S = 0.5  # how long to wait for a datagram before asking for it again
ATTEMPTS = 6


class PeerError(MRCError):
    """The peer process refused a request, broke the protocol or went silent."""


class _TrioThread:
    """A trio event loop in a daemon thread; `run(afn, *args)` calls into it from the suite's thread."""

    def __init__(self):
        self._ready = threading.Event()
        self.token = None
        self.nursery = None
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True, name="mrc-wire-adapter")
        self._thread.start()
        if not self._ready.wait(IO_TIMEOUT_S):
            raise PeerError("the trio thread did not start")

    async def _main(self):
        self.token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with trio.open_nursery() as n:
            self.nursery = n
            self._ready.set()
            await self._stop.wait()
            n.cancel_scope.cancel()

    def run(self, afn, *args):
        return trio.from_thread.run(afn, *args, trio_token=self.token)

    def stop(self):
        if self._thread.is_alive():
            trio.from_thread.run_sync(self._stop.set, trio_token=self.token)
            self._thread.join(IO_TIMEOUT_S)


class WireAdapter(Adapter):
    def __init__(self, host: str, port: int, *, process: subprocess.Popen | None = None, name: str | None = None):
        self.host, self.port, self.process = host, port, process
        self._loop = _TrioThread()
        self._inbox: dict = collections.defaultdict(collections.deque)  # digest -> datagrams from the peer
        self._wakeup = None
        self._seq = 0
        try:
            hello = self._loop.run(self._open)
        except BaseException:
            self.close()
            raise
        if hello.get("protocol") != PROTOCOL:
            self.close()
            raise PeerError(f"peer speaks protocol {hello.get('protocol')!r}, this suite {PROTOCOL}")
        self.name = name or f"wire:{hello.get('name', '?')}"
        self.features = check_features(set(hello.get("features", [])) & set(FEATURES))

    # -- opening and closing --------------------------------------------------------------
    @classmethod
    def spawn(cls, command: list[str] | None = None, *, adapter: str = "reference") -> "WireAdapter":
        """Start a peer process (default: this project's, serving `adapter`) and connect to it."""
        cmd = command or [sys.executable, "-m", "mrc.conformance.peer", "--adapter", adapter, "--once"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        line = _read_banner(proc)
        parts = line.split()
        if len(parts) != 3 or parts[0] != BANNER:
            proc.kill()
            raise PeerError(f"peer {cmd[0]!r} printed {line!r}, expected '{BANNER} <host> <port>'")
        return cls(parts[1], int(parts[2]), process=proc, name=f"wire:{adapter}" if command is None else None)

    @classmethod
    def connect(cls, host: str, port: int) -> "WireAdapter":
        return cls(host, port)

    async def _open(self):
        self._wakeup = trio.Event()
        with trio.fail_after(IO_TIMEOUT_S):
            self._stream = await trio.open_tcp_stream(self.host, self.port)
        self._reader = LineReader(self._stream)
        self._lock = trio.Lock()
        self._sink = udp_socket("127.0.0.1")
        await self._sink.bind(("127.0.0.1", 0))
        self._loop.nursery.start_soon(self._sink_loop)
        return await self._request({"op": "hello", "sink": list(self._sink.getsockname())})

    async def _sink_loop(self):
        try:
            while True:
                data, _ = await self._sink.recvfrom(1 << 16)
                self._inbox[digest(data)].append(data)
                self._wakeup.set()
                self._wakeup = trio.Event()
        except trio.ClosedResourceError:  # closing
            return

    async def _request(self, msg: dict) -> dict:
        async with self._lock:
            self._seq += 1
            msg = {"id": self._seq, **msg}
            with trio.fail_after(IO_TIMEOUT_S):
                await self._stream.send_all(dumps(msg))
                line = await self._reader.readline()
            if line is None:
                raise PeerError(f"the peer closed the control connection (during {msg['op']})")
            resp = loads(line)
            if resp.get("id") != msg["id"]:
                raise PeerError(f"response id {resp.get('id')!r} to request {msg['id']} ({msg['op']})")
            if not resp.get("ok"):
                if resp.get("not_implemented"):
                    raise NotImplementedError(resp["not_implemented"])
                raise PeerError(f"peer refused {msg['op']}: {resp.get('error')}")
            return resp

    async def _collect(self, ep_id: int, listed: list) -> list:
        """The datagrams of a "tx" answer, in order; lost ones are asked for again ("resend")."""
        need = collections.Counter(dig for _, dig in listed)
        for _ in range(ATTEMPTS):
            with trio.move_on_after(WAIT_S):
                while any(len(self._inbox.get(d, ())) < n for d, n in need.items()):
                    await self._wakeup.wait()
            missing = [d for d, n in need.items() if len(self._inbox.get(d, ())) < n]
            if not missing:
                return [(int(port), self._inbox[dig].popleft()) for port, dig in listed]
            await self._request({"op": "resend", "ep": ep_id, "digests": missing})
        raise PeerError(f"{len(missing)} datagram(s) of a tx batch never arrived")

    async def _deliver(self, ep_id: int, udp: list, pending: list) -> None:
        """Send received packets to the peer's port sockets and have them fed, in order ("rx")."""
        todo = [(p, d) for p, d, _ in pending]
        for _ in range(ATTEMPTS):
            for port, data in todo:
                await self._sink.sendto(data, udp[port - 1])
            r = await self._request({"op": "rx", "ep": ep_id,
                                     "packets": [[p, digest(d), now] for p, d, now in pending]})
            lost = {(int(p), str(d)) for p, d in r.get("missing", [])}
            if not lost:
                return
            todo = [(p, d) for p, d, _ in pending if (p, digest(d)) in lost]
        raise PeerError(f"{len(lost)} datagram(s) never reached the peer")

    def request(self, **msg) -> dict:
        return self._loop.run(self._request, msg)

    def close(self) -> None:
        try:
            if getattr(self, "_stream", None) is not None:
                self._loop.run(self._bye)
        except Exception:  # the peer may already be gone
            pass
        self._loop.stop()
        if self.process is not None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
            if self.process.stdout:
                self.process.stdout.close()

    async def _bye(self):
        with trio.move_on_after(2):
            await self._request({"op": "bye"})
        await self._stream.aclose()
        self._sink.close()

    # -- endpoints ------------------------------------------------------------------------------
    def create_endpoint(self, cfg: EndpointConfig) -> "WireEndpoint":
        r = self.request(op="create", config=cfg.to_json())
        return WireEndpoint(self, r)


class WireEndpoint(Endpoint):
    def __init__(self, adapter: WireAdapter, created: dict):
        self.a = adapter
        self.id = created["ep"]
        self.qpn = int(created["qpn"])
        self.address = bytes.fromhex(created["address"])
        self.udp = [(adapter.host, int(p)) for p in created["udp_ports"]]
        self.ports = len(self.udp)
        self._pending: list = []  # received packets not yet handed over: (port, data, now)

    def _req(self, op: str, **kw) -> dict:
        if self._pending and op != "rx":
            self._flush()
        return self.a.request(op=op, ep=self.id, **kw)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        self.a._loop.run(self.a._deliver, self.id, self.udp, pending)

    def connect(self, peer_qpn, peer_address, *, sq_psn, rq_psn, now):
        self._req("connect", peer_qpn=peer_qpn, peer_address=bytes(peer_address).hex(), sq_psn=sq_psn,
                  rq_psn=rq_psn, now=now)

    def reg_mr(self, length):
        r = self._req("reg_mr", length=length)
        return Region(int(r["va"]), int(r["rkey"]), int(r["length"]))

    def read_mr(self, region):
        r = self._req("read_mr", va=region.va, rkey=region.rkey, length=region.length)
        return base64.b64decode(r["data"])

    def post_write(self, wr_id, data, *, remote_va, rkey, imm, now):
        self._req("post_write", wr_id=wr_id, data=base64.b64encode(bytes(data)).decode(), remote_va=remote_va,
                  rkey=rkey, imm=imm, now=now)

    def post_recv(self, wr_id):
        self._req("post_recv", wr_id=wr_id)

    def receive(self, data, port, now):
        if not 1 <= port <= self.ports:
            raise PeerError(f"receive on port {port}: the endpoint has ports 1..{self.ports}")
        self._pending.append((port, bytes(data), now))

    def transmit(self, now):
        listed = self._req("tx", now=now)["packets"]
        return self.a._loop.run(self.a._collect, self.id, listed) if listed else []

    def next_deadline(self):
        d = self._req("deadline")["deadline"]
        return None if d is None else int(d)

    def handle_timer(self, now):
        self._req("timer", now=now)

    def poll(self):
        return [Completion(**c) for c in self._req("poll")["completions"]]

    def events(self):
        return [Event(**e) for e in self._req("events")["events"]]

    def qp_state(self):
        return self._req("qp_state")["state"]

    def ev_table(self):
        return [EvInfo(int(ev), int(port), state) for ev, port, state in self._req("ev_table")["evs"]]

    def set_ev_state(self, ev, state, now):
        self._req("set_ev_state", ev=ev, state=state, now=now)

    def set_port_state(self, port, up, now):
        self._req("set_port_state", port=port, up=bool(up), now=now)

    def cc_state(self):
        return self._req("cc_state")["cc"]

    def ev_probe(self, req_id, ev, port, now):
        self._req("ev_probe", req_id=req_id, ev=ev, port=port, now=now)

    def ep_responses(self):
        return [ProbeAnswer(int(i), int(p), int(r)) for i, p, r in self._req("ep_responses")["answers"]]

    def ctl(self, call, args=None, now=0):
        return self._req("ctl", call=call, args=args or {}, now=now)["answer"]

    def close(self):
        try:
            self._req("close")
        except PeerError:
            pass


def _read_banner(proc: subprocess.Popen) -> str:
    """The peer's first line, or an error if it does not come within the time limit."""
    box: list = []
    t = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    t.start()
    t.join(IO_TIMEOUT_S)
    if not box:
        proc.kill()
        raise PeerError(f"the peer printed nothing within {IO_TIMEOUT_S:.0f} s")
    if not box[0]:
        status = proc.wait(timeout=IO_TIMEOUT_S)
        raise PeerError(f"the peer {proc.args[0]!r} exited with status {status} before printing its banner")
    return box[0].strip()
