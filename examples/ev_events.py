"""The controller: EV profiles, a path that starts losing every packet goes ASSUMED_BAD (an EV
event), traffic carries on over the other paths, and once the path heals EV probes bring it back
to GOOD (a second event). Then an EV probe sent by hand measures one path's RTT
(docs/library.md, section 2)."""

from mrc.api import Device, connect
from mrc.ctl import EpRequest, EvState
from mrc.testing.simnet import SimNet
from mrc.units import US

a, b = Device("a", seed=1), Device("b", seed=2)
for dev in (a, b):
    dev.ctl.setup_ev_profile(1, count=8)            # AUTO: 8 EVs, 4 per port
    dev.ctl.setup_cc_profile(1, base_rtt_ns=8000)   # NSCC, base RTT 8 us
print(a.ctl.query_ev_profile(1))                    # mrc_ctl_query_ev_profile: state, mode, count, ...
events = a.ctl.create_ev_event_cq()                 # EV events of every QP using a's profiles
qa, qb = a.create_qp(), b.create_qp()
connect(qa, qb, ev_active_target=8)                 # spray over all 8 EVs
net = SimNet([a, b], seed=3)

slot = qa.ev_states()[5]                            # a path on port 2
bad = slot["ev"]                                    # the EV as the controller names it (value and port)
net.drop = lambda sent: sent.src == "a" and sent.ev == slot["value"]   # loses everything a sends on it
src, dst = bytearray(bytes(range(256)) * 640), bytearray(160 * 1024)
ma, mb = a.reg_mr(src), b.reg_mr(dst)
net.post_write(qa, 1, ma.sge(), remote_addr=mb.addr, rkey=mb.rkey)
(wc,) = net.wait_completion(qa.send_cq)
assert wc.ok and dst == src                         # nothing lost: the data went around the bad path
print(f"{wc} at {net.now / US:.1f} us")
print(net.wait_ev_events(events))                   # the EV went ASSUMED_BAD (drop_count: events dropped, 0)
assert a.ctl.query_ev_state(1, bad) == EvState.ASSUMED_BAD

net.drop = None                                     # the path heals: EV probes find out
(good,) = net.wait_ev_events(events)
print(f"{good} at {net.now / US:.1f} us")
assert good.state == EvState.GOOD and a.ctl.query_ev_state(1, bad) == EvState.GOOD

rsps = a.ctl.ep_batch_send_wait(0, "EV_PROBE", [EpRequest(req_id=1, dgid="b", req_ev=bad)], 100_000,
                                now=net.now, drive=lambda done, t: net.run(done, max_time_ps=t))
print(rsps)                                         # RTT of the path, in ns
