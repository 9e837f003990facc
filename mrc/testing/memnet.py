"""A compiled in-memory network for many connected QP pairs: the core driven from compiled code.

`mrc.testing.harness.Pair` drives the core from Python, one call at a time, which is
right for tests but hides the core's own cost. `run` does what an emulator's
inner loop does, entirely in compiled code: one `CoreTables` holds every QP
(QP 2k and 2k+1 are connected), packets wait in a pooled table ordered by a
binary heap of arrival times, timers are heap entries too (one armed per QP,
re-armed lazily), and only the QPs an event touched are asked for packets.
Each endpoint has one link of ``rate_bps`` (packets leave one after the
other, payload + ``OVERHEAD_BYTES`` each) and a fixed one-way delay. Loss,
trimming and ECN marking are drawn per packet from a seeded xorshift, so a
run is reproducible. The benchmark ``benchmarks/core_harness.py`` uses it to
measure packets per second of the core itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy import int64 as i64

from mrc._jit import njit
from mrc.core import dispatch, dtypes as D, qp as core_qp, setup, tables
from mrc.core.rng import seed_state
from mrc.errors import ConfigError
from mrc.testing.harness import configure_pair_qp, make_evs
from mrc.units import US
from mrc.wire.constants import ECN_CE
from mrc.wire.records import PKT

OVERHEAD_BYTES = 100  # headers on the wire per packet (IPv6 + UDP + BTH + METH + TSETH + RETH + ICRC, roughly)
EVT_TIMER = -1  # heap entry that is a timer, not a packet

# counters of a run (the `stats` array)
S_DATA, S_RTX, S_CONTROL, S_PROBE, S_DROPPED, S_TRIMMED, S_MARKED, S_DELIVERED, S_TIMERS, S_DONE, S_FAILED, S_RNG = range(12)
N_STATS = 12


def build(n_pairs: int, *, n_planes: int = 4, evs_per_plane: int = 32, rate_bps: int = 400 * 10**9,
          base_rtt_ps: int = 8 * US, window: int = 1024, seed: int = 1, cc: dict | None = None, **qp_attrs):
    """CoreTables for `n_pairs` connected pairs (QP 2k <-> 2k+1), every QP in RTS."""
    if n_pairs < 1:
        raise ConfigError("n_pairs", n_pairs, "must be at least 1")
    n_qp, n_ev = 2 * n_pairs, n_planes * evs_per_plane
    T = tables.allocate(n_qp, max_ev=n_ev, window=window, max_wr=16, max_recv=16, evt_capacity=1 << 14)
    setup.write_cc(T, 0, cc or setup.nscc_profile(rate_bps=rate_bps, base_rtt_ps=base_rtt_ps))
    evs = [make_evs(n_planes, evs_per_plane, side) for side in (0, 1)]
    for i in range(n_qp):
        configure_pair_qp(T, i, n_planes, evs[i & 1], seed, base_rtt_ps, qp_attrs)
    return T


@njit
def _draw(stats):
    """xorshift32 (Marsaglia 2003) in int64, the run's own stream: an integer in [1, 2^32)."""
    x = stats[S_RNG]
    x ^= (x << 13) & 0xFFFFFFFF
    x ^= x >> 17
    x ^= (x << 5) & 0xFFFFFFFF
    stats[S_RNG] = x
    return x


@njit
def _push(h_time, h_item, n, t, item):
    """Binary min-heap on (time, item) in arrays; returns the new size."""
    k = n
    h_time[k] = t
    h_item[k] = item
    while k > 0:
        parent = (k - 1) >> 1
        if h_time[parent] < h_time[k] or (h_time[parent] == h_time[k] and h_item[parent] <= h_item[k]):
            break
        h_time[parent], h_time[k] = h_time[k], h_time[parent]
        h_item[parent], h_item[k] = h_item[k], h_item[parent]
        k = parent
    return n + 1


@njit
def _pop(h_time, h_item, n):
    """Remove the root; returns the new size (the root is read before calling)."""
    n -= 1
    h_time[0] = h_time[n]
    h_item[0] = h_item[n]
    k = 0
    while True:
        c = 2 * k + 1
        if c >= n:
            break
        if c + 1 < n and (h_time[c + 1] < h_time[c] or (h_time[c + 1] == h_time[c] and h_item[c + 1] < h_item[c])):
            c += 1
        if h_time[k] < h_time[c] or (h_time[k] == h_time[c] and h_item[k] <= h_item[c]):
            break
        h_time[c], h_time[k] = h_time[k], h_time[c]
        h_item[c], h_item[k] = h_item[k], h_item[c]
        k = c
    return n


@njit
def _run(T, pool, pool_dst, free, h_time, h_item, armed, tx_free, touched, mark, out, stats,
         msgs, msg_bytes, depth, loss_u32, trim_u32, ecn_u32, delay_ps, ps_per_byte, max_time):
    n_qp = T.qp.shape[0]
    n_heap = 0
    n_free = pool.shape[0]
    for s in range(n_free):
        free[s] = s
    posted = np.zeros(n_qp, dtype=np.int64)
    done = np.zeros(n_qp, dtype=np.int64)
    total = (n_qp // 2) * msgs
    now = 0
    n_touched = 0
    for i in range(0, n_qp, 2):  # the requesters (even QPs) start with `depth` messages posted
        touched[n_touched] = i
        n_touched += 1
        mark[i] = 1
    while True:
        # 1. every QP an event touched: post more work, send what it can, re-arm its timer
        for j in range(n_touched):
            i = touched[j]
            mark[i] = 0
            if i % 2 == 0:
                while posted[i] < msgs and posted[i] - done[i] < depth:
                    core_qp.post_write(T, i, posted[i] + 1, D.WR_WRITE, 0, 0, 0x10000, 7, msg_bytes, 0, now)
                    posted[i] += 1
            while n_free > 0:
                kind = dispatch.next_packet(T, i, now, 0xFF, out, 0)
                if kind == dispatch.K_NONE:
                    break
                stats[kind - 1] += 1  # K_DATA .. K_PROBE (1 .. 4) -> S_DATA .. S_PROBE (0 .. 3)
                is_data = kind == dispatch.K_DATA or kind == dispatch.K_RTX
                depart = tx_free[i] if tx_free[i] > now else now
                tx_free[i] = depart + (i64(out[0]["payload_len"]) + OVERHEAD_BYTES) * ps_per_byte
                r = _draw(stats)
                if r < loss_u32:
                    stats[S_DROPPED] += 1
                    continue
                n_free -= 1
                s = free[n_free]
                pool[s] = out[0]
                pool_dst[s] = i ^ 1
                if is_data and _draw(stats) < trim_u32:
                    pool[s]["trim"] = 1
                    pool[s]["payload_len"] = 0
                    stats[S_TRIMMED] += 1
                elif is_data and _draw(stats) < ecn_u32:
                    pool[s]["ecn"] = ECN_CE
                    stats[S_MARKED] += 1
                n_heap = _push(h_time, h_item, n_heap, depart + delay_ps, s)
                if n_heap + n_qp >= h_time.shape[0]:
                    stats[S_FAILED] = -1  # the heap is full: report instead of overrunning it
                    return now
            d = dispatch.next_deadline(T, i)
            if d < armed[i]:
                armed[i] = d
                n_heap = _push(h_time, h_item, n_heap, d, EVT_TIMER - i)
                if n_heap + n_qp >= h_time.shape[0]:
                    stats[S_FAILED] = -1
                    return now
        n_touched = 0
        if stats[S_DONE] + stats[S_FAILED] >= total or n_heap == 0:
            break
        # 2. the next event (a packet arrival or a timer), then everything due at the same time
        now = h_time[0]
        if now > max_time:
            break
        while n_heap > 0 and h_time[0] == now:
            item = h_item[0]
            n_heap = _pop(h_time, h_item, n_heap)
            if item >= 0:
                i = pool_dst[item]
                dispatch.on_packet(T, i, pool[item], now)
                free[n_free] = item
                n_free += 1
                stats[S_DELIVERED] += 1
            else:
                i = EVT_TIMER - item
                if armed[i] != now:
                    continue  # stale: the timer was re-armed since
                armed[i] = D.NEVER
                if dispatch.next_deadline(T, i) <= now:
                    dispatch.on_timer(T, i, now)
                    stats[S_TIMERS] += 1
            if mark[i] == 0:
                mark[i] = 1
                touched[n_touched] = i
                n_touched += 1
            # completions: count them and keep the event table empty
            for e in range(T.evt_n[0]):
                ev = T.evt[e]
                if ev["kind"] == D.E_SEND_DONE:
                    if ev["status"] == D.WC_SUCCESS:
                        stats[S_DONE] += 1
                    else:
                        stats[S_FAILED] += 1
                    done[ev["qp"]] += 1
                    if mark[ev["qp"]] == 0:
                        mark[ev["qp"]] = 1
                        touched[n_touched] = ev["qp"]
                        n_touched += 1
            T.evt_n[0] = 0
    return now



@dataclass(frozen=True)
class RunResult:
    """A `run` in stated units: times in us, rates in Gb/s, sizes in bytes; `counters` holds the raw
    counts (``end_ps`` and the `stats` names)."""

    time_us: float  # when the last event was processed
    messages_done: int  # writes completed with SUCCESS, all pairs
    messages_failed: int
    bytes_written: int  # messages_done x msg_bytes
    goodput_gbps: float  # bytes_written over time_us, all pairs together
    data_packets: int  # first transmissions
    retransmissions: int
    control_packets: int  # ACKs, SACKs, NACKs
    probes: int
    dropped: int  # lost by the network (`loss`)
    trimmed: int
    ce_marked: int
    delivered: int
    timers: int  # timer events handled
    counters: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return (f"{self.messages_done} message(s) done ({self.messages_failed} failed), {self.bytes_written} B in "
                f"{self.time_us:.2f} us = {self.goodput_gbps:.2f} Gb/s; {self.data_packets} data packets, "
                f"{self.retransmissions} retransmitted; network: {self.dropped} dropped, {self.trimmed} trimmed, "
                f"{self.ce_marked} CE-marked")


def run(T, *, msgs: int, msg_bytes: int, depth: int = 4, loss: float = 0.0, trim: float = 0.0, ecn: float = 0.0,
        delay_ps: int = 2 * US, rate_bps: int = 400 * 10**9, seed: int = 1, pool_size: int | None = None,
        max_time_ps: int = 1 << 62) -> dict:
    """Every requester (even QP) writes `msgs` messages of `msg_bytes` to its peer, `depth` at a time.

    `loss` applies to every packet (data and control), `trim` (core trimming) and `ecn` (CE mark)
    to data packets. Returns a `RunResult` (us, Gb/s, bytes; the raw counters in ``.counters``).
    """
    n_qp = T.qp.shape[0]
    pool_size = pool_size or max(4096, 512 * n_qp)
    pool = np.zeros(pool_size, dtype=PKT)
    heap = 2 * pool_size + 64 * n_qp  # packets, plus timer entries (live and stale)
    stats = np.zeros(N_STATS, dtype=np.int64)
    stats[S_RNG] = seed_state(seed, 1 << 20)
    u32 = lambda p: int(min(max(p, 0.0), 1.0) * (1 << 32))  # noqa: E731
    end = _run(T, pool, np.zeros(pool_size, np.int64), np.zeros(pool_size, np.int64), np.zeros(heap, np.int64),
               np.zeros(heap, np.int64), np.full(n_qp, D.NEVER, np.int64), np.zeros(n_qp, np.int64),
               np.zeros(n_qp + 1, np.int64), np.zeros(n_qp, np.int64), np.zeros(1, dtype=PKT), stats,
               msgs, msg_bytes, depth, u32(loss), u32(trim), u32(ecn), delay_ps, 8 * 10**12 // rate_bps,
               max_time_ps)
    names = ("data", "rtx", "control", "probe", "dropped", "trimmed", "marked", "delivered", "timers", "done", "failed")
    c = {"end_ps": int(end), **{n: int(stats[k]) for k, n in enumerate(names)}}
    done_bytes = c["done"] * msg_bytes
    return RunResult(time_us=end / US, messages_done=c["done"], messages_failed=c["failed"], bytes_written=done_bytes,
                     goodput_gbps=done_bytes * 8 / (end / 1e3) if end else 0.0, data_packets=c["data"],
                     retransmissions=c["rtx"], control_packets=c["control"], probes=c["probe"], dropped=c["dropped"],
                     trimmed=c["trimmed"], ce_marked=c["marked"], delivered=c["delivered"], timers=c["timers"], counters=c)
