"""``mrc io transfer``: move N bytes over one QP between two real endpoints, verify, report.

Both endpoints run in this process (one trio loop, one clock), each on its own
sockets: two UDP address sets (UDP encapsulation), or two hosts of the
namespace fabric (native SRv6: each endpoint's sockets live in its host's
namespace). The requester posts RDMA Writes of `chunk` bytes from a seeded
random buffer into the responder's registered region, keeping up to
`max_wr` outstanding; when every completion is in, the region is compared
byte for byte.

A failure plan takes one fabric link down at `fail_at` seconds after the
first post and back up at `restore_at` (`mrc.fabric.netns.link_down` /
`link_up`). The report then gives, per EV of the requester whose path crosses
the link (`mrc.fabric.evs_through_link`): when it was declared ASSUMED_BAD,
and the time from the failure to the last data packet sent on it (traffic
steered away); after the restore, when EV probes brought it back to GOOD.
The run waits for that (up to `settle_s`) before it ends. If the link is a
host's NIC link, that host's device is told its port went down (the NIC sees
its own link), as `Device.set_port_state` models.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import trio

from mrc.ctl import EpRequest, EvFmtMode, EvState
from mrc.errors import UsageError
from mrc.io.endpoint import Endpoint, trio_time, unwrapped
from mrc.io.session import connect, timeout_exponent

DATA_OPCODES = range(0xC6, 0xCC)
QP_COUNTERS = ("tx_pkts", "tx_bytes", "rtx_pkts", "rtx_spurious", "rtx_timeouts", "sacks_rx", "nacks_rx", "losses",
               "probes_tx", "rx_pkts", "rx_dup", "rx_oor", "rx_dropped", "rx_oow", "sacks_tx", "nacks_tx")


@dataclass
class FailurePlan:
    port: int  # a port of the link (mrc.fabric port id)
    fail_at: float  # seconds after the first post
    restore_at: float | None = None  # seconds after the first post (None: stays down)


@dataclass
class TransferOptions:
    nbytes: int
    chunk: int = 1 << 20
    max_wr: int = 16
    rto_ms: float = 20.0
    ev_probe_interval_ms: float = 2.0
    probe_successes: int = 2
    reorder_window_us: float | None = None
    seed: int = 1
    timeout_s: float = 120.0  # the whole run gives up (and says so) after this long
    settle_s: float = 5.0  # after a restore: how long to wait for the EVs to be GOOD again
    probe_timeout_s: float = 2.0  # the path check before the transfer

    def check(self) -> None:
        if not 1 <= self.nbytes <= 1 << 34:
            raise UsageError(f"bytes = {self.nbytes!r}: must be in [1, 16 GiB]")
        if not 1 <= self.chunk < 1 << 31:
            raise UsageError(f"chunk = {self.chunk!r}: a write is 1 .. 2^31-1 bytes")
        if not 1 <= self.max_wr <= 64:
            raise UsageError(f"max_wr = {self.max_wr!r}: 1 .. 64 outstanding writes")


class _Trace:
    """The requester's data transmissions per EV while a link is down (times in ps)."""

    def __init__(self):
        self.down = False
        self.last_data: dict[int, int] = {}  # EV -> last data packet sent while the link was down
        self.data_count: dict[int, int] = {}  # EV -> data packets sent while the link was down

    def __call__(self, kind, now, obj):
        if self.down and kind == "tx" and int(obj.pkt["opcode"]) in DATA_OPCODES:
            ev = int(obj.pkt["ev"])
            self.last_data[ev] = now
            self.data_count[ev] = self.data_count.get(ev, 0) + 1


async def run_transfer(ep_a: Endpoint, ep_b: Endpoint, opts: TransferOptions, *, rts: dict | None = None,
                       fabric=None, hosts: tuple[int, int] | None = None, failure: FailurePlan | None = None,
                       started: trio.Event | None = None, ready: trio.Event | None = None,
                       go: trio.Event | None = None) -> dict:
    """Run one transfer from `ep_a` to `ep_b` (both serving); returns the report (a dict, JSON-ready).
    `started` is set when the clock starts (the first timed write is about to be posted). Several transfers
    start together with `ready` and `go`: `ready` is set once paths are probed and the warm-up write is done,
    and the clock does not start before `go` is set."""
    opts.check()
    dev_a, dev_b = ep_a.device, ep_b.device
    attrs = dict(timeout=timeout_exponent(opts.rto_ms), ev_probe_interval_ps=int(opts.ev_probe_interval_ms * 1e9),
                 probe_successes=opts.probe_successes)
    n_ev = int(dev_a.ctl.query_ev_profile(1).ev_count)
    attrs["ev_active_target"] = n_ev
    if opts.reorder_window_us is not None:
        attrs["reorder_window_ps"] = int(opts.reorder_window_us * 1e6)
    conn = connect(dev_a, dev_b, ep_a.local_peer(), ep_b.local_peer(), rts={**attrs, **(rts or {})})
    ep_a.watch_cq(conn.cqa)
    ep_b.watch_cq(conn.cqb)
    trace = _Trace()
    ep_a.tracer = trace
    evq_a, evq_b = dev_a.ctl.create_ev_event_cq(4096), dev_b.ctl.create_ev_event_cq(4096)
    events: list[tuple[int, str, int, str]] = []  # (time ps, side, ev, state)

    src = bytearray(np.random.default_rng(opts.seed).bytes(opts.nbytes))
    dst = bytearray(opts.nbytes)
    mr_a, mr_b = dev_a.reg_mr(src), dev_b.reg_mr(dst)
    paths = {"requester": await probe_paths(ep_a, ep_b.local_peer(), opts.probe_timeout_s),
             "responder": await probe_paths(ep_b, ep_a.local_peer(), opts.probe_timeout_s)}
    warm_error = None
    with trio.move_on_after(opts.timeout_s) as warm:
        warm_error = await _warm_up(ep_a, conn, mr_a, mr_b, opts)
    if warm.cancelled_caught:
        warm_error = (f"the warm-up write did not complete within {opts.timeout_s} s: the endpoints cannot reach "
                      "each other (addresses, firewall, fabric down?)")
    if ready is not None:
        ready.set()
    if go is not None:
        await go.wait()
    base = {"requester": conn.qa.statistics(), "responder": conn.qb.statistics()}
    t0 = ep_a.now()
    if started is not None:
        started.set()
    fail_info: dict = {}
    done = {"completions": [], "t_end": None}

    async def watch(ep, evq, side):
        while True:
            for e in await ep.wait_ev_events(evq, 256):
                events.append((ep.now(), side, e.value, e.state.name))

    async def inject(plan: FailurePlan):
        from mrc.fabric import netns

        await trio.sleep_until(trio_time(t0) + plan.fail_at)
        host_side = _host_port_owner(fabric, plan.port, hosts, (ep_a, ep_b))
        where = netns.link_down(fabric, plan.port)
        fail_info["t_down"] = ep_a.now()
        trace.down = True
        fail_info["where"] = where
        if host_side is not None:
            host_side[0].device.set_port_state(host_side[1], False, now=host_side[0].now())
            host_side[0].wakeup()
        if plan.restore_at is None:
            return
        await trio.sleep_until(trio_time(t0) + plan.restore_at)
        fail_info["t_up"] = ep_a.now()  # the link may forward from here on: measure from the start
        trace.down = False
        await trio.to_thread.run_sync(netns.link_up, fabric, plan.port)
        fail_info["restore_ms"] = (ep_a.now() - fail_info["t_up"]) / 1e9
        if host_side is not None:
            host_side[0].device.set_port_state(host_side[1], True, now=host_side[0].now())
            host_side[0].wakeup()

    failed_evs: list[int] = []
    if failure is not None:
        from mrc.fabric import evs_through_link

        if fabric is None or hosts is None:
            raise UsageError("a link failure needs the namespace fabric (native mode)")
        failed_evs = sorted(int(e) for e in evs_through_link(fabric.topo, failure.port, hosts[0], hosts[1]))

    with trio.move_on_after(opts.timeout_s) as budget, unwrapped():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch, ep_a, evq_a, "requester")
            nursery.start_soon(watch, ep_b, evq_b, "responder")
            if failure is not None and warm_error is None:
                nursery.start_soon(inject, failure)
            if warm_error is None:
                await _post_all(ep_a, conn, mr_a, mr_b, opts, done)
            if failure is not None and failure.restore_at is not None and warm_error is None:
                await trio.sleep_until(trio_time(t0) + failure.restore_at)
                await ep_a.wait_condition(lambda: "t_up" in fail_info)
                with trio.move_on_after(opts.settle_s):
                    await ep_a.wait_condition(_all_good, conn.qa, failed_evs)
            nursery.cancel_scope.cancel()
    completions = done["completions"]
    ok = [w for w in completions if w.ok]
    verified = len(ok) == _n_writes(opts) and bytes(dst) == bytes(src)
    seconds = ((done["t_end"] or ep_a.now()) - t0) / 1e12
    report = {
        "bytes": opts.nbytes, "seconds": seconds, "goodput_gbps": opts.nbytes * 8 / seconds / 1e9 if verified and seconds > 0 else 0.0,
        "verified": verified, "writes": _n_writes(opts), "completed": len(ok),
        "failed_completions": sorted({w.status for w in completions if not w.ok}),
        "timed_out": budget.cancelled_caught, "requester": _qp_report(conn.qa, base["requester"]),
        "responder": _qp_report(conn.qb, base["responder"]),
        "endpoints": {"requester": asdict(ep_a.statistics()), "responder": asdict(ep_b.statistics())},
        "paths_rtt_ms": paths, "t0_ps": t0,
        "ev_events": [{"t_ms": (t - t0) / 1e9, "side": s, "ev": ev, "state": st} for t, s, ev, st in events],
    }
    if failure is not None:
        report["failure"] = _failure_report(fabric, failure, fail_info, failed_evs, events, trace, conn.qa, t0)
    states = (conn.qa.state, conn.qb.state)  # before a timed-out QP is flushed below
    if conn.qa.state not in ("ERROR", "RESET") and (budget.cancelled_caught or not verified):
        conn.qa.modify("ERROR")  # what is still posted is flushed (WR_FLUSH_ERR), so its region can go
    mr_a.deregister()
    mr_b.deregister()
    if warm_error is not None:
        report["error"] = warm_error
    elif states != ("RTS", "RTS"):
        report["error"] = (f"the QP failed: requester {states[0]}, responder {states[1]}; "
                           f"{len(ok)} of {_n_writes(opts)} writes completed")
    elif budget.cancelled_caught and not verified:
        report["error"] = f"gave up after {opts.timeout_s} s ({len(ok)} of {_n_writes(opts)} writes completed)"
    return report


async def probe_paths(ep: Endpoint, peer, timeout_s: float) -> dict:
    """EV probes (controller endpoint requests) on every EV of the profile to `peer`: RTT per EV (ms, None if
    unanswered). Checks every path before the transfer and warms the code path up."""
    ctl = ep.device.ctl
    fmt_id = ctl.query_ev_profile(1).ev_fmt_profile_id
    mode = EvFmtMode.STEV if fmt_id is None else ctl.query_ev_fmt_profile(fmt_id).ev_fmt_mode
    evs = ctl.ev_table(1)
    reqs = [EpRequest(k, peer, e["ev"], ev_fmt_mode=mode) for k, e in enumerate(evs)]
    batch = ep.device.ctl.ep_batch_send("EV_PROBE", reqs, now=ep.now(), rsp_timeout_ns=int(timeout_s * 1e9))
    ep.wakeup()
    await ep.wait_condition(lambda: batch.done or batch.timed_out)
    rtt = {r.req_id: r.rtt_ns / 1e6 for r in batch.responses}
    return {f"{e['value']:#010x}": rtt.get(k) for k, e in enumerate(evs)}


async def _warm_up(ep: Endpoint, conn, mr_a, mr_b, opts: TransferOptions) -> str | None:
    """One small write before the clock starts, so that loading compiled code does not look like loss.
    Returns why it failed, or None."""
    n = min(opts.nbytes, 4 * ep.device.mtu)
    ep.post_write(conn.qa, 0, mr_a.sge(0, n), remote_addr=mr_b.addr, rkey=mr_b.rkey)
    got = await ep.wait_completion(conn.cqa, 1)
    if not got[0].ok:
        return (f"the warm-up write failed ({got[0].status}; requester QP {conn.qa.state}, responder QP "
                f"{conn.qb.state}): the endpoints cannot reach each other, or the QP failed")
    return None


def _n_writes(opts: TransferOptions) -> int:
    return -(-opts.nbytes // opts.chunk)


async def _post_all(ep: Endpoint, conn, mr_a, mr_b, opts: TransferOptions, done: dict) -> None:
    offsets = list(range(0, opts.nbytes, opts.chunk))
    posted = 0
    while len(done["completions"]) < len(offsets):
        while posted < len(offsets) and posted - len(done["completions"]) < opts.max_wr and conn.qa.state == "RTS":
            off = offsets[posted]
            n = min(opts.chunk, opts.nbytes - off)
            ep.post_write(conn.qa, posted + 1, mr_a.sge(off, n), remote_addr=mr_b.addr + off, rkey=mr_b.rkey)
            posted += 1
        if posted == len(done["completions"]):
            break  # the QP left RTS with nothing outstanding: nothing more can complete
        got = await ep.wait_completion(conn.cqa, 64)
        done["completions"].extend(got)
        if any(not w.ok for w in got):
            break  # the QP went to ERROR: every other write is flushed
    done["t_end"] = ep.now()


def _all_good(qa, evs) -> bool:
    st = {e["value"]: e["state"] for e in qa.ev_states()}
    return all(st.get(ev) == "GOOD" for ev in evs)


def _qp_report(qp, base: dict) -> dict:
    """The QP's counters since `base` (the timed transfer only), its window and its EV states."""
    s = qp.statistics()
    return {**{k: s[k] - base[k] for k in QP_COUNTERS}, "cwnd": s["cwnd"],
            "ev_states": [{"ev": e["value"], "port": e["port"], "state": e["state"], "tx_pkts": e["tx_pkts"],
                           "losses": e["losses"]} for e in qp.ev_states()]}


def _host_port_owner(fabric, port: int, hosts, eps):
    """(endpoint, 1-based NIC port) if `port`'s link is the NIC link of one of our hosts, else None."""
    t = fabric.topo
    for q in (port, int(t.port[port]["peer"])):
        node = int(t.port[q]["node"])
        if hosts is not None and node in hosts and int(t.node[node]["kind"]) == 0:
            return eps[hosts.index(node)], int(t.port[q]["plane"]) + 1
    return None


def _failure_report(fabric, plan, info, failed_evs, events, trace, qa, t0) -> dict:
    t = fabric.topo
    t_down, t_up = info.get("t_down"), info.get("t_up")
    out = {"link": f"{t.port_name(plan.port)} <-> {t.port_name(int(t.port[plan.port]['peer']))}",
           "where": info.get("where"), "down_ms": None if t_down is None else (t_down - t0) / 1e9,
           "up_ms": None if t_up is None else (t_up - t0) / 1e9, "restore_took_ms": info.get("restore_ms"),
           "evs": []}
    if t_down is None:
        out["note"] = "the transfer ended before the failure time: nothing was measured"
        return out
    final = {e["value"]: e["state"] for e in qa.ev_states()}
    for ev in failed_evs:
        mine = [(tt, st) for tt, side, e, st in events if side == "requester" and e == ev]
        before = [st for tt, st in mine if tt < t_down]
        already_bad = bool(before) and before[-1] == EvState.ASSUMED_BAD.name
        bad = [tt for tt, st in mine if st == EvState.ASSUMED_BAD.name and tt >= t_down and (t_up is None or tt < t_up)]
        if already_bad:
            bad.insert(0, t_down)  # a loss elsewhere had taken it out of use already: 0 ms
        good = [tt for tt, st in mine if st == EvState.GOOD.name and t_up is not None and tt >= t_up]
        last = trace.last_data.get(ev)
        out["evs"].append({
            "ev": ev, "assumed_bad_after_ms": (bad[0] - t_down) / 1e9 if bad else None,
            "steered_after_ms": (last - t_down) / 1e9 if last is not None else 0.0,
            "data_pkts_after_failure": trace.data_count.get(ev, 0), "already_assumed_bad": already_bad,
            "good_after_restore_ms": (good[0] - t_up) / 1e9 if good else None, "final_state": final.get(ev)})
    for key in ("assumed_bad_after_ms", "steered_after_ms", "good_after_restore_ms"):
        vals = [e[key] for e in out["evs"]]
        out[key] = None if not vals or any(v is None for v in vals) else max(vals)
    return out


__all__ = ["FailurePlan", "TransferOptions", "run_transfer"]
