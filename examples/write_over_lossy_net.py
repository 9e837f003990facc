"""Two devices, one QP pair, a verified 1 MiB RDMA Write and a Write-with-Immediate over an
in-memory network that loses 5 % of packets and reorders them (docs/library.md, section 1)."""
import numpy as np

from mrc.api import Device, connect
from mrc.testing.simnet import SimNet
from mrc.units import US

a, b = Device("a"), Device("b")                     # two NICs, 2 ports (planes) each
for dev in (a, b):
    dev.ctl.setup_ev_profile(1, count=16)           # 16 paths (EVs), spread over the ports
    dev.ctl.setup_cc_profile(1)                     # NSCC congestion control, base RTT 8 us
qa, qb = a.create_qp(), b.create_qp()
connect(qa, qb)                                     # RESET -> INIT -> RTR -> RTS, both sides

src = np.random.default_rng(0).integers(0, 256, 1 << 20, dtype=np.uint8)
dst = np.zeros_like(src)
ma, mb = a.reg_mr(src), b.reg_mr(dst)               # local source, remote target

net = SimNet([a, b], loss=0.05, jitter_ps=3 * US, seed=1)
net.post_write(qa, 1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
(wc,) = net.wait_completion(qa.send_cq)
assert wc.ok and (dst == src).all()
print(wc)
print(f"verified at {net.now / US:.1f} us;", qa.statistics()["rtx_pkts"], "packets retransmitted")

qb.post_recv(wr_id=7)                               # a Write-with-Immediate consumes a receive
net.post_write(qa, 2, ma.sge(0, 4096), remote_addr=mb.addr, rkey=mb.rkey, imm_data=0xC0FFEE)
(sent,) = net.wait_completion(qa.send_cq)
(recv,) = net.wait_completion(qb.recv_cq)
print(sent)
print(recv)
print(net.statistics())
