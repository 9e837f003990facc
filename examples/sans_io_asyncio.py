"""Drive the sans-IO core from an event loop of your own: asyncio and two UDP sockets
(docs/library.md, section 5). A `Device` never reads a clock or touches a socket; the loop
calls exactly four things:

- ``device.receive(pkt, payload, now, src=...)`` for every packet that arrives;
- ``device.packets_to_send(now)`` for what must go out (`OutPacket`: record, payload, dest);
- ``device.next_deadline()`` for the one timer to arm, ``device.handle_timer(now)`` when it fires.

Times are integer picoseconds; the packet bytes come from the fast codec (`mrc.wire`)."""
import asyncio

import numpy as np

from mrc.api import Device
from mrc.wire import NET, decode, encode

NET_ROW = np.zeros(1, dtype=NET)                   # inner IPv6 header: STEV mode, UDP 4791
NET_ROW["ip_version"], NET_ROW["hop_limit"], NET_ROW["dport"] = 6, 64, 4791


class Nic(asyncio.DatagramProtocol):
    """One device on one UDP socket: the whole adapter."""

    def __init__(self, device: Device):
        self.device, self.timer, self.last = device, None, 0
        self.loop = asyncio.get_running_loop()
        self.t0 = self.loop.time()

    def now(self) -> int:                           # the loop's clock in integer ps, never backwards
        self.last = max(self.last, int((self.loop.time() - self.t0) * 1e12))
        return self.last

    def connection_made(self, transport):
        self.transport = transport

    def connection_lost(self, exc):
        if self.timer is not None:
            self.timer.cancel()

    def datagram_received(self, data, addr):       # packets in
        try:
            pkt, _, payload = decode(data)
        except ValueError:                          # DecodeError: garbage is dropped, never raised
            return
        self.device.receive(pkt, payload, self.now(), src=addr)
        self.flush()

    def flush(self):                                # packets out, then re-arm the one timer
        for out in self.device.packets_to_send(self.now()):
            self.transport.sendto(encode(out.pkt, NET_ROW, out.payload), out.dest)
        if self.timer is not None:
            self.timer.cancel()
        deadline = self.device.next_deadline()
        if deadline is not None:
            self.timer = self.loop.call_at(self.t0 + deadline / 1e12, self.fire, deadline)

    def fire(self, deadline: int):                 # timers: never early
        self.last = max(self.now(), deadline)
        self.device.handle_timer(self.last)
        self.flush()


async def main():
    a, b = Device("a", ports=1, port_rate_bps=10**9), Device("b", ports=1, port_rate_bps=10**9)
    for dev in (a, b):
        dev.ctl.setup_ev_profile(1, count=4)
        dev.ctl.setup_cc_profile(1, base_rtt_ns=1_000_000)
    loop = asyncio.get_running_loop()
    (ta, na), (tb, nb) = [await loop.create_datagram_endpoint(lambda d=d: Nic(d), local_addr=("127.0.0.1", 0))
                          for d in (a, b)]
    qa, qb = a.create_qp(), b.create_qp()
    qa.connect(qb.qp_num, tb.get_extra_info("sockname"), timeout=14, reorder_window_ps=4 * 10**9)
    qb.connect(qa.qp_num, ta.get_extra_info("sockname"), timeout=14, reorder_window_ps=4 * 10**9)
    src, dst = bytearray(b"sans-IO " * 8192), bytearray(65536)
    ma, mb = a.reg_mr(src), b.reg_mr(dst)
    qa.post_write(1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey, now=na.now())
    na.flush()                                      # new work: let the device send
    async with asyncio.timeout(30):
        while not len(qa.send_cq):
            await asyncio.sleep(0.001)
    (wc,) = qa.send_cq.poll()
    assert wc.ok and dst == src
    print(wc)
    print({k: v for k, v in qa.statistics().items() if k in ("tx_pkts", "rtx_pkts", "rtx_spurious", "sacks_rx")})
    ta.close(), tb.close()


asyncio.run(main())
