"""The same QP pair over real UDP sockets on loopback, driven by trio (docs/library.md, section 3).

Software endpoints are far slower than a NIC, so the profiles say so: a 1 Gb/s port rate for
NSCC, a 1 ms base RTT, a reorder window of 4 ms, and an RTO of 4.096 us x 2^14 = 67 ms."""
import numpy as np
import trio

from mrc.api import Device
from mrc.io import UdpEncap, open_endpoint


async def main():
    a, b = (Device(name, port_rate_bps=1 * 10**9) for name in ("a", "b"))
    for dev in (a, b):
        dev.ctl.setup_ev_profile(1, count=16)
        dev.ctl.setup_cc_profile(1, base_rtt_ns=1_000_000)       # 1 ms
    qa, qb = a.create_qp(), b.create_qp()
    src = np.random.default_rng(0).integers(0, 256, 4 << 20, dtype=np.uint8)
    dst = np.zeros_like(src)
    ma, mb = a.reg_mr(src), b.reg_mr(dst)
    loopback = ["127.0.0.1:0", "127.0.0.1:0"]                    # one socket per NIC port, any free port
    async with open_endpoint(a, UdpEncap(loopback)) as ea, open_endpoint(b, UdpEncap(loopback)) as eb:
        software = dict(timeout=14, reorder_window_ps=4 * 10**9, ev_probe_interval_ps=2 * 10**9)
        qa.connect(qb.qp_num, eb.local_peer(), **software)       # the peer's sockets, learned out of band
        qb.connect(qa.qp_num, ea.local_peer(), **software)
        with trio.fail_after(60):
            for k in range(4):                                   # four 1 MiB writes in flight at once
                ea.post_write(qa, k, ma.sge(k << 20, 1 << 20), remote_addr=mb.addr + (k << 20), rkey=mb.rkey)
            done = []
            while len(done) < 4:
                done += await ea.wait_completion(qa.send_cq)
        assert all(wc.ok for wc in done) and (dst == src).all()
        print(f"4 MiB verified over UDP from {ea.local_peer()} to {eb.local_peer()}")
        print(ea.statistics())


trio.run(main)
