"""Every table of the engine, its named constants, and the `Engine` bundle compiled code takes.

One structured array per element kind (struct of rows, ``align=True``), small
integer ids everywhere, no Python object per packet, port or flow:

==========  ==================================================================
table       one row per
==========  ==================================================================
``pkt``     pooled packet (`PKTE`): the engine's compact fields; a free list
            (``free``) hands out rows, the transports never allocate
``hdr``     the same packet's `mrc.wire.records.PKT` header row (opcode, psn,
            ev, ...): what transports and the protocol core read and write
``port``    fabric port (`PORTS`, same ids as ``FabricArrays.port``): the
            egress queues of its node towards the peer, the wire to the peer
            (pipe), link state, PFC state, counters
``ep``      endpoint (`EP`): one transport instance (a QP) on a host
``flow``    transfer of the workload (`FLOW`): who, how much, when, and what
            happened to it
``trig``    htsim trigger (`TRIG`) with its target flows in ``trig_tgt``
``act``     failure action (`ACT`), sorted by time
``heap_t``  pending element events: times (4-ary heap, `events`)
``heap``    ... their sequence numbers and event words (`events.EVQ`)
``theap``   pending endpoint timers, at most one per endpoint (position in
            ``tpos``)
``cap``     captured packet (`CAP`, ports flagged ``PK_CAPTURE``), its header
            row in ``cap_hdr``; encoded to pcapng by `capture`
==========  ==================================================================

Scalars (now, heap size, RNG state, cursors) live in the int64 array ``S``,
counters in the int64 array ``ctr`` (indices below), run parameters in the
one-row ``cfg`` (`CFG`).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from mrc.core.cachelines import aligned_zeros
# "Never" (no deadline, not yet happened) is the core's: one value for the core and the engine (2^62 ps, so a delay
# added to it cannot overflow); engine modules read it as ST.NEVER.
from mrc.core.dtypes import NEVER  # noqa: F401
from mrc.emulator import events as EVT
from mrc.wire.records import PKT

# ---------------------------------------------------------------- packets

CLS_DATA = 0
CLS_CTRL = 1  # high priority: ACK / NACK / CNP / trimmed headers

# the ECN codepoints (RFC 3168), defined once in mrc.wire.constants; ST.ECN_* for the engine
from mrc.wire.constants import ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT  # noqa: E402, F401

FWD_ECMP = 0
FWD_SRV6 = 1
FWD_AR = 2  # switch adaptive routing: least-loaded uplink per packet (forward.py)

PKTE = np.dtype([  # 64 bytes: one cache line per packet on the hop path
    ("next_t", np.int64),  # on a wire: arrival time at the peer of the packet behind it (``next``)
    ("hi", np.uint64),  # SRv6 carrier (outer destination), two words
    ("lo", np.uint64),
    ("next", np.int32),  # next packet in the same queue or wire (-1: last)
    ("size", np.int32),  # bytes on the wire
    ("in_port", np.int32),  # ingress port at the current switch (PFC accounting), -1 none
    ("src", np.int32),  # source host
    ("dst", np.int32),  # destination host
    ("dst_ep", np.int32),  # endpoint it is delivered to
    ("flow", np.int32),  # workload flow (-1: none)
    ("flow_label", np.int32),  # IPv6 flow label (ECMP 5-tuple)
    ("sport", np.uint16),  # UDP source port (ECMP 5-tuple)
    ("cls", np.int8),  # CLS_DATA / CLS_CTRL
    ("plane", np.int8),
    ("ecn", np.uint8),  # IP ECN bits
    ("trim", np.uint8),  # mrc.wire.constants.Trim
    ("fwd", np.int8),  # FWD_ECMP / FWD_SRV6
    ("dscp", np.uint8),
], align=True)

# ---------------------------------------------------------------- ports

# port kind flags
PK_ECN = 1  # ECN marking on the data queue
PK_TRIM = 2  # trim data packets that do not fit
PK_PFC = 4  # lossless: per-ingress XOFF/XON towards the upstream port
PK_LASTHOP = 8  # T0 downlink to a host (trimmed packets become TRIMMED_LASTHOP)
PK_NIC = 16  # a host NIC port (fed by the transmit scheduler, not by a queue)
PK_TO_HOST = 32  # the peer is a host (deliver on arrival)
PK_CAPTURE = 64  # packets leaving on this port's wire are captured (`capture`)

PORTS = np.dtype([
    # first cache line: the queues and the serialiser
    ("rate", np.int64),  # current bits/s (degraded rates included)
    ("delay", np.int64),  # wire delay to the peer's queues, ps (propagation + switch latency)
    ("bytes0", np.int64),  # data queue
    ("bytes1", np.int64),  # control queue
    ("head0", np.int32),
    ("tail0", np.int32),
    ("head1", np.int32),
    ("tail1", np.int32),
    ("pkts0", np.int32),
    ("pkts1", np.int32),
    ("cur", np.int32),  # packet being serialised (-1)
    ("kind", np.int32),  # PK_* flags
    # second: the wire, the NIC ring, state flags, hot counters
    ("pipe_head", np.int32),
    ("pipe_tail", np.int32),
    ("pipe_n", np.int32),
    ("ring_head", np.int32),  # NIC ports: the transmit scheduler's ring of (endpoint, plane) slots
    ("ring_tail", np.int32),
    ("ring_n", np.int32),
    ("busy", np.int8),
    ("up", np.int8),  # the link carries packets
    ("rloc", np.int8),  # routing at this port's switch believes the link is up
    ("rglob", np.int8),  # routing elsewhere believes it is up
    ("paused", np.int8),  # data class paused by the peer (PFC)
    ("xoff", np.int8),  # this port (as an ingress) has paused its upstream
    ("watch", np.int8),  # WATCH_*: a failure's port, before (affected flows) or after its fault
    ("watch_fail", np.int8),  # that failure's index
    ("in_bytes", np.int64),  # PFC: bytes in this node's buffers that entered through this port
    ("gray", np.float64),  # drop probability on this wire (gray failure)
    ("tx_bytes", np.int64),
    ("qscale", np.float64),  # data queue limit and ECN thresholds x this (a degraded link, htsim's -failed)
    # statistics
    ("tx_pkts", np.int64),
    ("drops", np.int64),
    ("trims", np.int64),
    ("marks", np.int64),
    ("max_bytes0", np.int64),
    ("max_bytes1", np.int64),
    ("paused_since", np.int64),
    ("paused_ps", np.int64),  # time this port spent paused
    ("pauses_sent", np.int64),  # XOFF frames sent upstream (as an ingress)
    ("watch_hits", np.int64),  # packets directed to this port while it is watched (failures)
    ("watch_last", np.int64),
], align=True)

# ---------------------------------------------------------------- endpoints and flows

EP = np.dtype([
    ("timer_at", np.int64),  # time of its timer in the timer heap (NEVER: none)
    ("host", np.int32),
    ("peer", np.int32),  # endpoint at the other end
    ("flow", np.int32),  # current flow (-1)
    ("planes", np.int32),  # bit p: may send on NIC port p
    ("in_ring", np.int32),  # bit p: queued in NIC port p's ring
    ("tcode", np.int8),  # transport code (transports.dispatch)
    ("woken", np.int8),  # queued in ``wake`` (the engine syncs it after the current input)
], align=True)

FLOW_PENDING = 0
FLOW_RUNNING = 1
FLOW_DONE = 2
FLOW_FAILED = 3
FLOW_STATUS_NAMES = ("pending", "running", "done", "failed")

# why a flow did not complete
WHY_NONE = 0
WHY_RETRY_EXCEEDED = 1  # transport gave up (QP error)
WHY_END_OF_RUN = 2  # still running when the simulation ended
WHY_NOT_STARTED = 3  # its trigger never fired / its start time was after the end
WHY_NAMES = ("", "retry limit exceeded (QP error)", "running at the end of the simulation",
             "never started (trigger not fired or start after the end)")

FLOW = np.dtype([
    ("size", np.int64),  # message bytes
    ("start", np.int64),  # scheduled start (ps); -1: started by a trigger
    ("t_start", np.int64),  # actual start
    ("t_send_done", np.int64),  # sender learnt everything was delivered (FCT end)
    ("t_recv_done", np.int64),  # receiver had every byte
    ("ideal", np.int64),  # the fabric's best FCT, the same for every transport, ps (`ideal`)
    ("alone", np.int64),  # FCT alone on the idle fabric over the transport's own path(s), ps
    ("delay", np.int64),  # a triggered flow starts this long after its trigger fires (compute time), ps
    ("retx", np.int64),  # retransmitted packets
    ("cm_id", np.int64),  # id in the .cm file (0 when none)
    ("src", np.int32),
    ("dst", np.int32),
    ("ep", np.int32),  # sending endpoint
    ("job", np.int32),
    ("coll", np.int32),  # collective it belongs to (-1)
    ("trigger", np.int32),  # trigger that starts it (-1)
    ("send_trig", np.int32),  # trigger activated at send done (-1)
    ("recv_trig", np.int32),  # trigger activated at receive done (-1)
    ("status", np.int8),
    ("why", np.int8),
    ("fail_aff", np.int16),  # bit k: this flow used failure k's element around its fault (reroute metrics)
    ("conn", np.int32),  # connection: flows with the same conn >= 0 are messages on one QP pair, in order (-1: its own)
    ("msg_next", np.int32),  # the next message waiting on its connection (-1: none; `engine.start_flow`)
], align=True)

TRIG_ONESHOT = 1
TRIG_MULTISHOT = 2
TRIG_BARRIER = 3

TRIG = np.dtype([
    ("t_fired", np.int64),
    ("first", np.int32),  # its targets are trig_tgt[first:first+n]: flow f as f >= 0, trigger u as -(u + 1)
    ("n", np.int32),
    ("remaining", np.int32),  # barrier: activations still needed
    ("next", np.int32),  # multishot: next target
    ("kind", np.int8),
    ("fired", np.int8),
], align=True)

# ---------------------------------------------------------------- failures

A_LINK_DOWN = 1
A_LINK_UP = 2
A_RLOC_DOWN = 3  # routing next to the link learns it is down
A_RLOC_UP = 4
A_RGLOB_DOWN = 5  # routing everywhere learns it
A_RGLOB_UP = 6
A_GRAY = 7  # value: drop probability (0 ends it)
A_RATE = 8  # value: fraction of the nominal rate
A_WATCH = 9  # the fault: count packets directed to the port (reroute metrics)
A_MARK = 10  # record the failure's time only
A_PREWATCH = 11  # shortly before the fault: flows whose data reaches the port are "affected"
A_QSCALE = 12  # value: the port's data queue limit and ECN thresholds as a fraction of the switch's

# port watch phases (PORTS.watch)
WATCH_NONE = 0
WATCH_PRE = 1
WATCH_ON = 2
MAX_TRACKED_FAILURES = 7  # failures with per-packet reroute tracking (bits of pmeta / FLOW.fail_aff)

# pmeta[i] of a data packet while failures are watched: its send time (bits 0-47), the failures
# whose affected flows it belongs to (bits 48-54), the failures whose element it was directed to
# (bits 56-62)
PM_TIME_MASK = (1 << 48) - 1
PM_AFF_SHIFT = 48
PM_DIR_SHIFT = 56

FSTAT = np.dtype([  # per failure: reroute measurements (metrics.reroute)
    ("t0", np.int64),  # the fault (NEVER: not yet)
    ("first_away", np.int64),  # send time of the first data packet of an affected flow, sent after the
    #                            fault, delivered without being directed to the failed element
    ("aff_sent", np.int64),  # data packets of affected flows sent (NICs) since the fault
    ("aff_directed", np.int64),  # ... of which were directed to the failed element
    ("aff_rx", np.int64),  # payload bytes delivered in order to the receivers of affected flows
], align=True)

ACT = np.dtype([
    ("t", np.int64),
    ("value", np.float64),
    ("port", np.int64),
    ("failure", np.int32),
    ("kind", np.int8),
], align=True)

# ---------------------------------------------------------------- scalars and counters

S_NOW = 0
S_HEAP_N = 1
S_SEQ = 2
S_FREE_N = 3
S_RNG = 4
S_EVENTS = 5
S_HOPS = 6
S_FLOWS_ENDED = 7  # done + failed
S_ARR_NEXT = 8  # next index into arr_order
S_ACT_NEXT = 9  # next failure action
S_ROUTE_DOWN = 10  # ports whose routing knowledge says down (0: fast path)
S_INFLIGHT = 11  # packets allocated
S_PEAK_INFLIGHT = 12
S_SPARE = 13
S_TRACE_N = 14
S_FLOWS_STARTED = 15
S_THEAP_N = 16  # timers pending
S_WAKE_N = 17  # endpoints queued in ``wake``
S_WATCHING = 18  # 1 from the first failure's watch on: per-packet reroute tracking runs
S_CAP_N = 19  # packets captured (rows of ``cap``)
S_CAP_MISSED = 20  # packets on captured ports inside the window that found the capture budget used up
# change counters for the sampler (`sim.Sampler`: a sample whose counters did not move reuses the last one's
# per-port figures instead of walking every port): with S_HOPS (every serialisation that ended, i.e. every
# change of a port's ``tx_bytes``), S_PORT_MOVES counts the changes of a port's queued bytes (a packet enqueued,
# dequeued for serialisation or flushed); S_PAUSED_N is the number of PFC-paused ports; S_AFF_MARKS counts the
# flows newly marked affected by a failure (``FLOW.fail_aff``)
S_PORT_MOVES = 21
S_PAUSED_N = 22
S_AFF_MARKS = 23
N_S = 24

C_SENT_PKTS = 0  # packets the NICs put on the wire
C_SENT_BYTES = 1
C_DELIV_PKTS = 2  # packets that reached their destination host
C_DELIV_BYTES = 3
C_DROP_PKTS = 4
C_DROP_BYTES = 5
C_TRIM_BYTES = 6  # bytes removed by trimming
C_DROP_QUEUE = 7  # buffer full (drop-tail)
C_DROP_LINK = 8  # link down
C_DROP_GRAY = 9  # gray failure
C_DROP_NOROUTE = 10
C_DROP_CTRL = 11  # control queue full
C_DROP_PFC = 12  # lossless buffer overflow (headroom too small)
C_TRIMS = 13
C_ECN_MARKS = 14
C_PFC_PAUSES = 15
C_PFC_RESUMES = 16
C_DATA_PKTS = 17  # data packets sent by transports
C_RETX = 18  # retransmitted data packets
C_SPURIOUS = 19  # retransmissions whose original had been delivered
C_TIMEOUTS = 20
C_NAKS = 21
C_CNPS = 22
C_ACKS = 23
C_RX_TRIMMED = 24  # trimmed packets a transport could not use
C_OOO_DISCARD = 25  # out-of-order data discarded (go-back-N)
C_GOODPUT_BYTES = 26  # payload delivered in order to receivers
C_PAYLOAD_SENT = 27
C_PROBES = 28  # reliability / EV probes sent by transports (MRC core)
C_NACK_TRIMMED = 29  # NACKs by reason (MRC responders)
C_NACK_TRIMMED_LASTHOP = 30
C_NACK_OOR = 31  # PSN_OOR_WINDOW
C_NACK_OTHER = 32
C_EV_BAD = 33  # EV events: an EV became ASSUMED_BAD
C_EV_GOOD = 34  # ... became GOOD again
C_PSU_SENT = 35  # port status updates sent (controllers)
C_PSU_APPLIED = 36  # port status updates received and applied
C_EP_PROBES = 37  # controller EV probes (endpoint requests) sent
C_EP_PROBE_ANSWERS = 38
C_CTL_RESTORED = 39  # EVs the controller returned to GOOD after its probes
C_CTL_DROPPED = 40  # controller requests not made: its table was full
C_EVLOG_DROPPED = 41  # EV events not logged: the log was full
C_QP_ERRORS = 42
N_C = 48

COUNTER_NAMES = {
    "sent_pkts": C_SENT_PKTS, "sent_bytes": C_SENT_BYTES, "delivered_pkts": C_DELIV_PKTS,
    "delivered_bytes": C_DELIV_BYTES, "dropped_pkts": C_DROP_PKTS, "dropped_bytes": C_DROP_BYTES,
    "trimmed_bytes_removed": C_TRIM_BYTES, "drops_queue_full": C_DROP_QUEUE, "drops_link_down": C_DROP_LINK,
    "drops_gray": C_DROP_GRAY, "drops_no_route": C_DROP_NOROUTE, "drops_control_queue": C_DROP_CTRL,
    "drops_pfc_overflow": C_DROP_PFC, "trims": C_TRIMS, "ecn_marks": C_ECN_MARKS, "pfc_pauses": C_PFC_PAUSES,
    "pfc_resumes": C_PFC_RESUMES, "data_pkts": C_DATA_PKTS, "retransmissions": C_RETX,
    "spurious_retransmissions": C_SPURIOUS, "timeouts": C_TIMEOUTS, "naks": C_NAKS, "cnps": C_CNPS,
    "acks": C_ACKS, "rx_trimmed_discarded": C_RX_TRIMMED, "out_of_order_discarded": C_OOO_DISCARD,
    "goodput_bytes": C_GOODPUT_BYTES, "payload_sent_bytes": C_PAYLOAD_SENT, "probes": C_PROBES,
    "nacks_trimmed": C_NACK_TRIMMED, "nacks_trimmed_lasthop": C_NACK_TRIMMED_LASTHOP,
    "nacks_psn_oor_window": C_NACK_OOR, "nacks_other": C_NACK_OTHER, "ev_assumed_bad": C_EV_BAD,
    "ev_good": C_EV_GOOD, "port_status_updates_sent": C_PSU_SENT, "port_status_updates_applied": C_PSU_APPLIED,
    "controller_ev_probes": C_EP_PROBES, "controller_ev_probe_answers": C_EP_PROBE_ANSWERS,
    "controller_evs_restored": C_CTL_RESTORED, "controller_requests_dropped": C_CTL_DROPPED,
    "ev_events_not_logged": C_EVLOG_DROPPED, "qp_errors": C_QP_ERRORS,
}

# run status returned by engine.run_chunk
ST_CHUNK = 0  # reached t_stop
ST_BUDGET = 1  # event budget of the chunk used up
ST_GROW = 2  # pool or heap nearly full: grow and call again
ST_IDLE = 3  # nothing left to do
ST_FLOWS_DONE = 4  # every flow completed or failed

# ---------------------------------------------------------------- run parameters

CFG = np.dtype([
    ("limit0", np.int64),  # data queue bytes per port
    ("limit1", np.int64),  # control queue bytes per port
    ("ecn_kmin", np.int64),
    ("ecn_kmax", np.int64),
    ("ecn_pmax", np.float64),
    ("ecn_dequeue", np.int64),  # 1: mark when a packet leaves (htsim, ns-3 HPCC); 0: when it arrives
    ("trim_size", np.int64),  # bytes of a trimmed packet
    ("pfc_xoff", np.int64),  # per-ingress bytes that send XOFF
    ("pfc_xon", np.int64),  # ... and XON
    ("pfc_limit", np.int64),  # per-ingress bytes beyond which a lossless switch drops (xoff + headroom)
    ("framing", np.int64),  # extra bytes per packet on the wire (preamble, IFG, Ethernet header)
    ("pause_ps", np.int64),  # time a PAUSE frame takes to reach the upstream port, per port (delay added)
    ("fwd", np.int64),  # FWD_ECMP / FWD_SRV6 default
    ("dscp_trimmed", np.int64),
    ("dscp_trimmed_lasthop", np.int64),
    ("n_planes", np.int64),
    ("trace_all", np.int64),  # 1: trace every packet; 0: only flows with trace_flow[f] != 0
    ("cap_t0", np.int64),  # capture window [cap_t0, cap_t1) in ps (ports flagged PK_CAPTURE)
    ("cap_t1", np.int64),
], align=True)

# ---------------------------------------------------------------- trace hooks

TR_ARRIVE = 1  # packet arrived at a node (port = its ingress port, i.e. the wire it came on)
TR_DEPART = 2  # packet finished serialisation on `port`
TR_DROP = 3
TR_TRIM = 4
TR_DELIVER = 5
TR_MARK = 6

TRACE = np.dtype([
    ("t", np.int64),
    ("port", np.int64),
    ("flow", np.int32),
    ("psn", np.int32),
    ("size", np.int32),
    ("ev", np.uint32),  # the packet's EV (PKT.ev)
    ("kind", np.int8),
    ("cls", np.int8),
    ("plane", np.int8),
    ("reason", np.int8),
    ("opcode", np.uint8),
    ("dscp", np.uint8),
    ("trim", np.uint8),
], align=True)

# ---------------------------------------------------------------- packet capture

CAP = np.dtype([  # one captured packet: the engine fields the wire encoding needs (its header row in cap_hdr)
    ("t", np.int64),  # it left the port's serialiser (ps)
    ("hi", np.uint64),  # SRv6 carrier as on this wire (after the switches' shifts so far)
    ("lo", np.uint64),
    ("port", np.int32),
    ("size", np.int32),  # bytes on the wire (trimmed size when trimmed)
    ("src", np.int32),
    ("dst", np.int32),
    ("flow", np.int32),
    ("flow_label", np.int32),
    ("sport", np.uint16),
    ("plane", np.int8),
    ("ecn", np.uint8),
    ("trim", np.uint8),
    ("fwd", np.int8),
    ("dscp", np.uint8),
    ("cls", np.int8),
], align=True)

Engine = namedtuple("Engine", [
    "S", "ctr", "cfg", "heap_t", "heap", "theap", "tpos", "pkt", "hdr", "free", "port", "ep", "ring", "flow", "arr_order",
    "trig", "trig_tgt", "act", "dscp_classes", "trace", "trace_flow", "host_ep_start", "host_ep", "wake", "pmeta",
    "fstat", "cap", "cap_hdr",
])
Engine.__doc__ = """The engine's tables (see the module docstring); every compiled function takes it first.

``host_ep[host_ep_start[h]:host_ep_start[h + 1]]`` are the endpoints on host h; ``wake`` holds
endpoints a transport touched besides the one it was called for (``S[S_WAKE_N]`` of them), which
the engine syncs after the input; ``pmeta`` runs parallel to the pool (reroute tracking, below);
``fstat`` has one `FSTAT` row per failure; ``cap`` / ``cap_hdr`` are the packet capture (`CAP` rows
and their `PKT` header rows, as many as the capture budget; empty when nothing is captured)."""


def new_pool(n: int):
    """`n` free packet rows (zeroed pages the kernel maps only when a row is first used; `pool.alloc`
    initialises a row when it hands it out) and the free list."""
    return aligned_zeros(n, PKTE), aligned_zeros(n, PKT), np.arange(n - 1, -1, -1, dtype=np.int32)


POOL_MIN = 1 << 16  # initial packet pool rows at least ...
POOL_AUTO_MAX = 1 << 22  # ... and, sized from the workload, at most (1 GB of rows); it doubles beyond
HEAP_MIN = 1 << 14
HEAP_AUTO_MAX = 1 << 22


def pool_rows_for(sizes: np.ndarray) -> int:
    """Initial pool rows for flows of these sizes: every flow's packets at once (4 KB each) plus a
    few control packets per flow, so a workload that can put all its packets in flight (many small
    flows) does not stop to double the pool mid-run. Unused rows cost address space only."""
    want = int(np.sum((np.asarray(sizes, np.int64) + 4095) // 4096)) + 4 * len(sizes)
    return int(min(max(want, POOL_MIN), POOL_AUTO_MAX))


def heap_rows_for(n_ports: int) -> int:
    """Initial heap capacity: a pending serialisation and a wire head per port (the heap holds one
    entry per busy element), so a fabric that gets busy everywhere does not stop to grow it."""
    return int(min(max(2 * n_ports + 64, HEAP_MIN), HEAP_AUTO_MAX))


def grow(E: Engine, pool: bool, heap: bool) -> Engine:
    """A copy of `E` with the packet pool and/or the heap doubled (called between chunks)."""
    out = E
    if pool:
        n = len(E.pkt)
        pkt, hdr, _ = new_pool(2 * n)
        pkt[:n] = E.pkt
        hdr[:n] = E.hdr
        pmeta = np.zeros(2 * n, np.int64)
        pmeta[:n] = E.pmeta
        free = np.empty(2 * n, np.int32)
        k = int(E.S[S_FREE_N])
        free[:k] = E.free[:k]
        free[k:k + n] = np.arange(2 * n - 1, n - 1, -1, dtype=np.int32)
        E.S[S_FREE_N] = k + n
        out = out._replace(pkt=pkt, hdr=hdr, free=free, pmeta=pmeta)
    if heap:
        ht, hv = EVT.heap_grown(E.heap_t, E.heap, int(E.S[S_HEAP_N]))
        out = out._replace(heap_t=ht, heap=hv)
    return out
