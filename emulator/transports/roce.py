"""`roce-ecmp`: RoCEv2 RC as deployed today, the baseline MRC is measured against.

One flow (or one connection's messages) = ``qps`` RC QP pairs (default 1):
each a requester endpoint on the source host (RDMA WRITE packets FIRST /
MIDDLE / LAST / ONLY) and a responder endpoint on the destination (ACK, NAK,
CNP). Behaviour (IBTA RoCEv2; parameters in `roce_setup`, documented in
docs/emulator.md):

- QP scaling: with ``qps = N`` a message is split into N parts, one per QP,
  as NCCL's IB transport splits a message over a connection's QPs
  (``NCCL_IB_QPS_PER_CONNECTION`` = N with ``NCCL_IB_SPLIT_DATA_ON_QPS`` = 1:
  `ncclIbMultiSend` posts part k, ``ceil(ceil(size / N) / 128) * 128`` bytes
  (the last ones shorter, or empty and then not posted), on QP k); each QP has
  its own PSNs, go-back-N, retransmission timer and DCQCN state, and the
  message completes when every part is acknowledged (received: when every part
  is). The group's first requester row (``grp``) counts the parts still
  outstanding; a QP that errors fails the message and stops its siblings;
- one path per QP: ECMP hashing of the 5-tuple, whose UDP source port is
  drawn per QP (`setup`: distinct within a connection); or, with
  ``forwarding = "srv6"``, one static SRv6 path per QP (an EV drawn per QP,
  its carrier from `mrc.fabric`);
- the responder accepts only the expected PSN. It ACKs every ``ack_every``
  packets and the last packet of the message; on a gap it sends one NAK
  (PSN sequence error, carrying the expected PSN) per gap and discards
  out-of-order packets; a duplicate is re-ACKed and counted as a spurious
  retransmission; a trimmed packet is discarded (RoCE NICs cannot use one);
- go-back-N: on a NAK, or when the retransmission timer expires with data
  outstanding, the requester resends from the first unacknowledged PSN; the
  timer starts at ``rto_us`` and doubles with each timeout without progress
  up to ``rto_max_us`` (the shape of ConnectX adaptive retransmission); after
  ``retry_cnt`` timeouts without progress the QP goes to the error state and
  the flow is reported failed;
- DCQCN (`dcqcn`): the responder returns a CNP for a CE-marked packet, at
  most one per ``cnp_interval_us`` per QP; the requester paces its packets
  at its current rate (re-paced whenever DCQCN changes it);
- ``window`` (packets, 0 = none) optionally caps the PSNs in flight.

Lossless (PFC) or lossy is a fabric setting (``[switch] pfc``); `roce-ecmp`
asks for PFC and last-hop ECN marking by default (`SWITCH_DEFAULTS`).
"""
from __future__ import annotations

import numpy as np

from mrc.core.psn import PSN_MASK
from mrc.emulator._jit import njit
from mrc.emulator import flows
from mrc.emulator import state as ST
from mrc.emulator.pool import pkt_new, pkt_route_ecmp, pkt_route_srv6
from mrc.emulator.sched import wake
from mrc.emulator.state import NEVER
from mrc.emulator.transports import dcqcn
from mrc.units import serialization_ps
from mrc.wire import constants as C
from mrc.wire.constants import (
    OP_CNP, OP_RC_ACKNOWLEDGE, OP_RC_RDMA_WRITE_FIRST, OP_RC_RDMA_WRITE_LAST, OP_RC_RDMA_WRITE_MIDDLE,
    OP_RC_RDMA_WRITE_ONLY,
)

ROLE_REQ = 0
ROLE_RESP = 1

HDR_BYTES = C.IPV6_LEN + C.UDP_LEN + C.BTH_LEN + C.ICRC_LEN  # 64
RETH_BYTES = C.RETH_LEN  # on WRITE FIRST / ONLY
ACK_BYTES = HDR_BYTES + C.AETH_LEN  # 68
CNP_BYTES = HDR_BYTES + C.CNP_PAD_LEN  # 80
AETH_ACK = 0x1F  # syndrome: ACK, credit count invalid
AETH_NAK_SEQ = 0x60  # syndrome: NAK, PSN sequence error

ROCE = np.dtype([
    # both ends
    ("size", np.int64),  # message bytes
    ("n_pkts", np.int64),  # PSN after the message's last (its first is ``base``)
    ("base", np.int64),  # the message's first PSN (0, or where a connection's previous message ended)
    ("hi", np.uint64),  # SRv6 carrier of this QP's path (forwarding = "srv6")
    ("lo", np.uint64),
    ("ev", np.int64),
    ("flow", np.int32),
    ("peer", np.int32),
    ("grp", np.int32),  # the connection's first requester row (itself with one QP)
    ("nqp", np.int32),  # QPs of the connection (qps)
    ("parts", np.int32),  # on the grp row: parts of the current message not yet acknowledged
    ("parts_rx", np.int32),  # on the grp row: parts not yet received whole
    ("host", np.int32),
    ("peer_host", np.int32),
    ("sport", np.int32),
    ("flow_label", np.int32),
    ("role", np.int8),
    ("plane", np.int8),
    ("active", np.int8),
    # requester
    ("snd_nxt", np.int64),
    ("snd_una", np.int64),
    ("max_sent", np.int64),
    ("next_send", np.int64),  # pacing: tx_at + the last packet's time at the current rate
    ("tx_at", np.int64),  # when the last data packet was sent
    ("tx_bytes", np.int64),  # its bytes on the wire (framing included)
    ("rto_at", np.int64),  # the armed timer: at or before rto_due (re-armed lazily, not on every ACK)
    ("rto_due", np.int64),  # when the retransmission timeout expires (NEVER: nothing outstanding)
    ("rto_cur", np.int64),  # current timeout: rto, doubled per timeout without progress up to rto_max
    ("rate", np.int64),  # DCQCN current rate Rc, bits/s
    ("target", np.int64),  # DCQCN target rate Rt
    ("alpha", np.float64),
    ("alpha_t", np.int64),
    ("last_dec", np.int64),
    ("inc_at", np.int64),
    ("bc_bytes", np.int64),
    ("t_cnt", np.int32),
    ("bc_cnt", np.int32),
    ("retries", np.int32),
    ("cnps", np.int32),  # CNPs received (requester) / sent (responder)
    ("cuts", np.int32),  # DCQCN rate decreases
    ("alpha_cnp", np.int8),
    ("cc_on", np.int8),  # DCQCN rate limiter allocated (first CNP seen)
    ("dec_pending", np.int8),  # a CNP arrived within the rate-decrease period
    ("inc_flags", np.int8),  # dcqcn.INC_*: increases since the last cut
    # responder
    ("epsn", np.int64),
    ("last_cnp", np.int64),
    ("unacked", np.int32),
    ("nak_sent", np.int8),
    ("ack_pending", np.int8),
    ("nak_pending", np.int8),
    ("cnp_pending", np.int8),
], align=True)

RP = np.dtype([
    ("mtu", np.int64),  # payload bytes per packet
    ("ack_every", np.int64),
    ("rto", np.int64),  # ps
    ("rto_max", np.int64),  # ps
    ("retry_cnt", np.int64),
    ("window", np.int64),
    ("dcqcn", np.int64),
    ("line_rate", np.int64),
    ("min_rate", np.int64),
    ("rai", np.int64),
    ("rhai", np.int64),
    ("g", np.float64),
    ("alpha_init", np.float64),
    ("alpha_ps", np.int64),
    ("dec_ps", np.int64),
    ("inc_ps", np.int64),
    ("F", np.int64),
    ("bc", np.int64),
    ("clamp", np.int64),  # ConnectX clamp_tgt_rate
    ("clamp_time", np.int64),  # ConnectX clamp_tgt_rate_after_time_inc
    ("cnp_interval", np.int64),
    ("framing", np.int64),
    ("dscp_data", np.int64),
    ("dscp_ctrl", np.int64),
    ("fwd", np.int64),
], align=True)


@njit(inline="always")
def _abs_psn(psn24, ref):
    """The absolute PSN nearest `ref` whose low 24 bits are `psn24`."""
    d = (np.int64(psn24) - (ref & PSN_MASK)) & PSN_MASK
    if d >= 0x800000:
        d -= 0x1000000
    return ref + d


@njit(inline="always")
def _hdr(E, i, opcode, psn, dqpn, payload, ev):
    """Every header field either end reads (pool rows are not zeroed)."""
    h = E.hdr[i]
    h["opcode"] = opcode
    h["psn"] = psn & PSN_MASK
    h["dqpn"] = dqpn
    h["payload_len"] = payload
    h["ev"] = ev
    h["ackreq"] = 0
    h["rtx"] = 0
    h["becn"] = 0
    h["aeth_syndrome"] = 0
    h["dma_len"] = 0


@njit(inline="always")
def _route(E, r, i, rp):
    if rp["fwd"] == ST.FWD_SRV6:
        pkt_route_srv6(E, i, r["hi"], r["lo"])
    else:
        pkt_route_ecmp(E, i, r["sport"], r["flow_label"])


@njit(inline="always")
def _start_qp(E, R, rp, ep, f, size, now):
    """Start `size` bytes of flow f on the QP pair of requester `ep`. A connection's next message (the one
    before it acknowledged: `engine.start_flow`) continues the QP as it is: its PSNs go on from where the last
    message ended, DCQCN's rate and timers carry on."""
    r = R[ep]
    n = (size + rp["mtu"] - 1) // rp["mtu"]
    s = R[r["peer"]]
    r["flow"] = f
    s["flow"] = f
    if r["n_pkts"] > 0:
        base = r["n_pkts"]
        r["base"] = base
        s["base"] = base
        r["size"] = size
        s["size"] = size
        r["n_pkts"] = base + n
        s["n_pkts"] = base + n
        r["active"] = 1
        s["active"] = 1
        if r["next_send"] < now:
            r["next_send"] = now
        r["rto_cur"] = rp["rto"]
        return
    r["size"] = size
    r["n_pkts"] = n
    r["active"] = 1
    s["size"] = size
    s["n_pkts"] = n
    s["active"] = 1
    r["snd_nxt"] = 0
    r["snd_una"] = 0
    r["max_sent"] = 0
    r["next_send"] = now
    r["tx_at"] = now
    r["tx_bytes"] = 0
    r["rto_at"] = NEVER
    r["rto_due"] = NEVER
    r["rto_cur"] = rp["rto"]
    r["rate"] = rp["line_rate"]
    r["target"] = rp["line_rate"]
    r["alpha"] = rp["alpha_init"]
    r["alpha_t"] = now
    r["alpha_cnp"] = 0
    r["cc_on"] = 0
    r["dec_pending"] = 0
    r["inc_flags"] = 0
    r["cnps"] = 0
    r["cuts"] = 0
    r["last_dec"] = -1
    r["inc_at"] = NEVER
    r["bc_bytes"] = 0
    r["t_cnt"] = 0
    r["bc_cnt"] = 0
    r["retries"] = 0
    s["epsn"] = 0
    s["last_cnp"] = -1
    s["unacked"] = 0
    s["nak_sent"] = 0
    s["ack_pending"] = 0
    s["nak_pending"] = 0
    s["cnp_pending"] = 0
    s["cnps"] = 0


@njit(inline="always")
def part_bytes(size, nqp, k):
    """Bytes of a `size`-byte message that QP k of `nqp` carries: NCCL's split (net_ib.cc `ncclIbMultiSend`,
    NCCL_IB_SPLIT_DATA_ON_QPS = 1): chunks of ceil(ceil(size / nqp) / 128) * 128 bytes (128-byte multiples keep
    NCCL's LL / LL128 protocols working), in QP order, the last ones shorter or empty."""
    if nqp == 1:
        return size
    chunk = ((size + nqp - 1) // nqp + 127) // 128 * 128
    left = size - k * chunk
    if left <= 0:
        return 0
    return chunk if left > chunk else left


@njit
def flow_start(E, F, R, RPa, f, now):
    """Start flow f on its connection's QP pairs (`_start_qp`), one part per QP (`part_bytes`); the QPs past the
    first are queued for the NIC (`sched.wake`). On a connection with a QP in the error state the message fails
    at once."""
    rp = RPa[0]
    lead = E.flow[f]["ep"]
    nqp = R[lead]["nqp"]
    for k in range(nqp):
        if R[lead + 2 * k]["retries"] > rp["retry_cnt"]:
            flows.failed(E, f, now, ST.WHY_RETRY_EXCEEDED)
            return
    size = E.flow[f]["size"]
    parts = 0
    for k in range(nqp):
        b = part_bytes(size, nqp, k)
        if b <= 0 and k > 0:
            continue  # NCCL posts an empty write there; no packet of data: nothing to model
        ep = lead + 2 * k
        _start_qp(E, R, rp, ep, f, b, now)
        parts += 1
        if k > 0:
            E.ep[ep]["flow"] = f
            E.ep[ep + 1]["flow"] = f
            wake(E, ep)
    R[lead]["parts"] = parts
    R[lead]["parts_rx"] = parts


@njit(inline="always")
def _can_send_data(r, rp):
    if r["active"] == 0 or r["snd_nxt"] >= r["n_pkts"]:
        return False
    return rp["window"] <= 0 or r["snd_nxt"] - r["snd_una"] < rp["window"]


@njit(inline="always")
def ready_at(E, R, RPa, ep, now):
    """When this endpoint next has a packet for the NIC (NEVER: nothing)."""
    r = R[ep]
    if r["role"] == ROLE_RESP:
        if r["cnp_pending"] or r["nak_pending"] or r["ack_pending"]:
            return now
        return NEVER
    if not _can_send_data(r, RPa[0]):
        return NEVER
    return r["next_send"] if r["next_send"] > now else now


@njit(inline="always")
def next_deadline(E, R, RPa, ep):
    r = R[ep]
    if r["role"] == ROLE_RESP or r["active"] == 0:
        return NEVER
    d = r["rto_at"] if r["rto_at"] < r["inc_at"] else r["inc_at"]
    c = dcqcn.dec_deadline(r, RPa[0])
    return c if c < d else d


@njit(inline="always")
def _control(E, R, rp, ep, i, opcode, size, psn, now):
    r = R[ep]
    pkt_new(E, i, r["host"], r["peer_host"], r["peer"], r["flow"], r["plane"], size, ST.CLS_CTRL,
            ST.ECN_NOT_ECT, rp["dscp_ctrl"], now)
    _route(E, r, i, rp)
    _hdr(E, i, opcode, psn, r["peer"], 0, r["ev"])


@njit(inline="always")
def tx_next(E, F, R, RPa, ep, now, port, allow_data, pkt):
    """Build this endpoint's next packet for NIC port `port` into pool row `pkt`; returns 1 if built."""
    rp = RPa[0]
    r = R[ep]
    if r["role"] == ROLE_RESP:
        if r["cnp_pending"]:
            _control(E, R, rp, ep, pkt, OP_CNP, CNP_BYTES, 0, now)
            E.hdr[pkt]["becn"] = 1
            r["cnp_pending"] = 0
            r["last_cnp"] = now
            r["cnps"] += 1
            E.ctr[ST.C_CNPS] += 1
            return 1
        if r["nak_pending"]:
            _control(E, R, rp, ep, pkt, OP_RC_ACKNOWLEDGE, ACK_BYTES, r["epsn"], now)
            E.hdr[pkt]["aeth_syndrome"] = AETH_NAK_SEQ
            r["nak_pending"] = 0
            E.ctr[ST.C_NAKS] += 1
            return 1
        if r["ack_pending"]:
            _control(E, R, rp, ep, pkt, OP_RC_ACKNOWLEDGE, ACK_BYTES, r["epsn"] - 1, now)
            E.hdr[pkt]["aeth_syndrome"] = AETH_ACK
            r["ack_pending"] = 0
            r["unacked"] = 0
            E.ctr[ST.C_ACKS] += 1
            return 1
        return 0
    if not allow_data or not _can_send_data(r, rp) or r["next_send"] > now:
        return 0
    psn = r["snd_nxt"]
    n = r["n_pkts"]
    mtu = rp["mtu"]
    base = r["base"]
    payload = mtu if psn < n - 1 else r["size"] - mtu * (n - 1 - base)
    if n - base == 1:
        op = OP_RC_RDMA_WRITE_ONLY
    elif psn == base:
        op = OP_RC_RDMA_WRITE_FIRST
    elif psn == n - 1:
        op = OP_RC_RDMA_WRITE_LAST
    else:
        op = OP_RC_RDMA_WRITE_MIDDLE
    size = HDR_BYTES + payload + (RETH_BYTES if (op == OP_RC_RDMA_WRITE_FIRST or op == OP_RC_RDMA_WRITE_ONLY) else 0)
    ecn = ST.ECN_ECT0 if rp["dcqcn"] != 0 else ST.ECN_NOT_ECT
    pkt_new(E, pkt, r["host"], r["peer_host"], r["peer"], r["flow"], r["plane"], size, ST.CLS_DATA, ecn,
            rp["dscp_data"], now)
    _route(E, r, pkt, rp)
    _hdr(E, pkt, op, psn, r["peer"], payload, r["ev"])
    h = E.hdr[pkt]
    h["ackreq"] = 1 if (op == OP_RC_RDMA_WRITE_LAST or op == OP_RC_RDMA_WRITE_ONLY) else 0
    if op == OP_RC_RDMA_WRITE_FIRST or op == OP_RC_RDMA_WRITE_ONLY:
        h["dma_len"] = r["size"]
    if psn < r["max_sent"]:
        h["rtx"] = 1
        E.ctr[ST.C_RETX] += 1
        E.flow[r["flow"]]["retx"] += 1
    r["snd_nxt"] = psn + 1
    if psn + 1 > r["max_sent"]:
        r["max_sent"] = psn + 1
    E.ctr[ST.C_DATA_PKTS] += 1
    E.ctr[ST.C_PAYLOAD_SENT] += payload
    r["tx_at"] = now
    r["tx_bytes"] = size + rp["framing"]
    r["next_send"] = now + serialization_ps(size + rp["framing"], r["rate"])
    if rp["dcqcn"] != 0:
        dcqcn.on_sent(r, rp, size)
    if r["rto_due"] == NEVER:
        r["rto_due"] = now + r["rto_cur"]
        if r["rto_at"] > r["rto_due"]:
            r["rto_at"] = r["rto_due"]
    return 1


@njit(inline="always")
def _on_data(E, R, rp, ep, i, now):
    r = R[ep]
    if r["active"] == 0:
        return
    p = E.pkt[i]
    h = E.hdr[i]
    if p["trim"] != 0:
        E.ctr[ST.C_RX_TRIMMED] += 1
        return
    if rp["dcqcn"] != 0 and p["ecn"] == ST.ECN_CE and r["cnp_pending"] == 0:
        if r["last_cnp"] < 0 or now - r["last_cnp"] >= rp["cnp_interval"]:
            r["cnp_pending"] = 1
    psn = _abs_psn(h["psn"], r["epsn"])
    if psn == r["epsn"]:
        r["epsn"] = psn + 1
        r["nak_sent"] = 0
        r["unacked"] += 1
        flows.delivered(E, r["flow"], h["payload_len"])
        if r["epsn"] >= r["n_pkts"]:
            g = R[r["grp"]]
            g["parts_rx"] -= 1
            if g["parts_rx"] == 0:
                flows.recv_done(E, r["flow"], now)
            r["ack_pending"] = 1
        elif r["unacked"] >= rp["ack_every"] or h["ackreq"] != 0:
            r["ack_pending"] = 1
    elif psn > r["epsn"]:
        E.ctr[ST.C_OOO_DISCARD] += 1
        if r["nak_sent"] == 0:
            r["nak_pending"] = 1
            r["nak_sent"] = 1
    else:
        E.ctr[ST.C_SPURIOUS] += 1
        r["ack_pending"] = 1


@njit(inline="always")
def _on_ack(E, R, rp, ep, i, now):
    r = R[ep]
    if r["active"] == 0:
        return
    h = E.hdr[i]
    a = _abs_psn(h["psn"], r["snd_una"])
    if h["aeth_syndrome"] == AETH_NAK_SEQ:
        una = a  # everything before the expected PSN arrived
        if una < r["snd_una"] or una > r["max_sent"]:
            return
        r["snd_nxt"] = una
    else:
        una = a + 1
        if una <= r["snd_una"] or una > r["max_sent"]:
            return
        if r["snd_nxt"] < una:
            r["snd_nxt"] = una
    if una > r["snd_una"]:
        r["retries"] = 0
        r["rto_cur"] = rp["rto"]
    r["snd_una"] = una
    if una >= r["n_pkts"]:
        r["active"] = 0
        r["rto_at"] = NEVER
        r["rto_due"] = NEVER
        g = R[r["grp"]]
        g["parts"] -= 1
        if g["parts"] == 0:
            flows.send_done(E, r["flow"], now)
        return
    # the timeout restarts; the armed timer stays where it is (it fires early and re-arms: moving an
    # endpoint's timer on every ACK cost a heap update per ACK)
    r["rto_due"] = now + r["rto_cur"] if una < r["max_sent"] else NEVER
    if r["rto_at"] == NEVER:
        r["rto_at"] = r["rto_due"]


@njit(inline="always")
def on_rx(E, F, R, RPa, ep, pkt, now):
    rp = RPa[0]
    op = E.hdr[pkt]["opcode"]
    if R[ep]["role"] == ROLE_RESP:
        _on_data(E, R, rp, ep, pkt, now)
    elif op == OP_RC_ACKNOWLEDGE:
        _on_ack(E, R, rp, ep, pkt, now)
    elif op == OP_CNP:
        r = R[ep]
        if r["active"] != 0 and rp["dcqcn"] != 0:
            dcqcn.on_cnp(r, rp, now)


@njit(inline="always")
def on_timer(E, F, R, RPa, ep, now):
    rp = RPa[0]
    r = R[ep]
    if r["role"] == ROLE_RESP or r["active"] == 0:
        return
    if now >= r["rto_at"]:
        if r["rto_due"] == NEVER or r["snd_una"] >= r["max_sent"]:
            r["rto_at"] = NEVER
            r["rto_due"] = NEVER
        elif now < r["rto_due"]:
            r["rto_at"] = r["rto_due"]  # progress since it was armed: not a timeout
        else:
            r["retries"] += 1
            E.ctr[ST.C_TIMEOUTS] += 1
            if r["retries"] > rp["retry_cnt"]:
                # the QP errors; its message fails, and the connection's other QPs stop with it (NCCL aborts
                # the communicator on any QP's error completion)
                lead = r["grp"]
                for k in range(R[lead]["nqp"]):
                    x = R[lead + 2 * k]
                    x["active"] = 0
                    x["rto_at"] = NEVER
                    x["rto_due"] = NEVER
                    R[x["peer"]]["active"] = 0
                flows.failed(E, r["flow"], now, ST.WHY_RETRY_EXCEEDED)
                return
            r["snd_nxt"] = r["snd_una"]
            # ConnectX adaptive retransmission: the timeout doubles per retry (up to rto_max)
            r["rto_cur"] = min(2 * r["rto_cur"], rp["rto_max"])
            r["rto_due"] = now + r["rto_cur"]
            r["rto_at"] = r["rto_due"]
    if rp["dcqcn"] != 0:
        dcqcn.on_timer(r, rp, now)
