"""Sightings to transmissions: one packet seen on several interfaces (or twice on one) is one packet.

A capture of the emulator's ports sees a packet at every port it leaves (host NIC, T0 uplink,
T1, the T0 downlink into its destination host); a mirror of both ends of a link sees it twice; a
network that duplicates delivers it twice. The rules judge what endpoints *sent*, so sightings are
folded into transmissions: records with the same *identity* (every header field an endpoint
writes: addresses, BTH, the extension headers, the EV; not what switches change: ECN, DSCP,
hop limits, the SRv6 carrier's shifts, FECN / BECN, the payload a trim cuts) within `same_us`
of the previous sighting are one transmission. A retransmission differs from the original in
its BTH ``rtx`` flag, its EV or its TSETH timestamp (8 ns units in this implementation: it
wraps after 524 us, so ``same_us`` must stay below that; 250 us by default, more than any
queue's delay in the fabrics this project runs).

Per transmission: the row of its first sighting (what the sender put on the wire, where the
capture first saw it), when it was first and last seen, whether any sighting was CE-marked or
trimmed (a switch changes a packet only one way: a mark or a trim is never undone), and whether
the interface of its last sighting is the link into its endpoint (`interface_role`), so that what
the capture saw last is what the endpoint received.
"""
from __future__ import annotations

import re

import numpy as np

from mrc.wire.constants import ECN_CE

from .decode import F_ICRC

# what an endpoint writes: the identity of a packet (PKT columns; ECN, DSCP, trim, FECN / BECN, payload length
# and the NIC port are not in it, nor the hop limits and carrier of NET, which are not kept)
IDENTITY = ("opcode", "se", "mig", "padcnt", "tver", "ackreq", "bth_r", "rtx", "ts", "pkey", "dqpn", "psn", "rqmsn",
            "msn", "tx_timestamp", "tsr", "ftype", "va", "rkey", "dma_len", "imm", "aeth_syndrome", "aeth_msn",
            "ext_type", "ext_next", "m", "pr", "ack_psn_offset", "entropy", "spdcid", "dpdcid", "cack_psn", "cc_type",
            "cc_flags", "mpr", "sack_offset", "sack_bitmap", "nack_reason", "vendor", "nack_psn", "probe_id",
            "ooo_count", "r_c", "rcv_cwnd_pen", "rcvd_bytes", "ep_op", "req_id", "port_status_mask", "svc_time", "ev")

SAME_US = 250.0

# interface roles: where a capture point sits relative to the endpoints
ROLE_UNKNOWN = 0  # not said (a capture taken at a host or on a NIC mirror, an unnamed interface)
ROLE_INTO = 1  # the link into an endpoint: what is seen there last is what the endpoint received
ROLE_FROM = 2  # the link out of an endpoint: what is seen there first is what it sent
ROLE_FABRIC = 3  # between two switches: a packet seen there may still be lost or changed on its way

TXI = np.dtype([("first", np.int64), ("row", np.int64), ("t", np.int64), ("last", np.int64), ("t_last", np.int64),
                ("sightings", np.int32), ("ce", np.bool_), ("trim", np.uint8), ("last_role", np.uint8), ("damaged", np.bool_),
                ("src", np.int32), ("dst", np.int32)], align=True)
"""Per transmission: capture index (1-based) and row (into the sightings) of its first sighting, its time (ns),
index and time of its last sighting, number of sightings, CE seen, trim code seen (max), the role of the
interface of its last sighting, whether its last sighting had a wrong ICRC (damaged: its receiver must drop it), inner
source and destination address ids."""

_ARROW = re.compile(r"^(?P<node>\S+) -> (?P<peer>\S+)")
_HOST = re.compile(r"^h\d+$")
_NETWORK = "network"


def interface_role(name: str, description: str) -> int:
    """The role of a capture interface from its description: the emulator's ``NODE -> PEER (port ...)``
    (`emulator.capture.interfaces`: hosts are ``hN``) and the conformance scenario's ``NODE -> network`` /
    ``network -> NODE``; anything else is `ROLE_UNKNOWN`."""
    m = _ARROW.match(description or "")
    if not m:
        return ROLE_UNKNOWN
    node, peer = m.group("node"), m.group("peer")
    if peer == _NETWORK or _HOST.match(node):
        return ROLE_FROM
    if node == _NETWORK or _HOST.match(peer):
        return ROLE_INTO
    return ROLE_FABRIC


def mix(*cols: np.ndarray) -> np.ndarray:
    """A 64-bit hash per row of the integer columns `cols` (FNV-style multiply and fold; collisions ~n^2 / 2^65)."""
    h = np.full(len(cols[0]) if cols else 0, 0xCBF29CE484222325, np.uint64)
    prime = np.uint64(0x100000001B3)
    with np.errstate(over="ignore"):
        for col in cols:
            h ^= col.astype(np.int64).astype(np.uint64) if col.dtype.kind == "i" else col.astype(np.uint64)
            h *= prime
            h ^= h >> np.uint64(29)
    return h


def identity(pkts: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each packet's identity (collisions: ~n^2 / 2^65, negligible for any capture)."""
    return mix(src, dst, *(pkts[c] for c in IDENTITY))


def transmissions(pkts: np.ndarray, rec: np.ndarray, roles: np.ndarray, same_us: float = SAME_US):
    """Fold the sightings (`pkts`, `rec`: MRC records in capture order) into transmissions.

    Returns ``(txi, of)``: a `TXI` row per transmission, in the order of their first sightings (by time: the rules
    walk them in that order), and per sighting the transmission it belongs to."""
    n = len(pkts)
    if n == 0:
        return np.zeros(0, TXI), np.zeros(0, np.int64)
    key = identity(pkts, rec["src"], rec["dst"])
    # sightings in time order (a capture on several interfaces is not: dumpcap writes each interface's packets in
    # runs), the record number breaking ties
    order = np.lexsort((rec["index"], rec["t"], key))
    k, t = key[order], rec["t"][order]
    new = np.ones(n, np.bool_)
    new[1:] = (k[1:] != k[:-1]) | (t[1:] - t[:-1] > int(same_us * 1000))
    gid_sorted = np.cumsum(new) - 1
    gid = np.empty(n, np.int64)
    gid[order] = gid_sorted
    ng = int(gid_sorted[-1]) + 1
    starts = np.flatnonzero(new)
    # first sighting of each group is its first row in `order` (the earliest)
    first_row = order[starts]
    last_row = order[np.append(starts[1:], n) - 1]
    ce = np.zeros(ng, np.bool_)
    np.logical_or.at(ce, gid, pkts["ecn"] == ECN_CE)
    trim = np.zeros(ng, np.uint8)
    np.maximum.at(trim, gid, pkts["trim"])
    count = np.bincount(gid, minlength=ng).astype(np.int32)
    # transmissions in the order of their first sighting: by time, then record number
    by_first = np.lexsort((rec["index"][first_row], rec["t"][first_row]))
    txi = np.zeros(ng, TXI)
    fr, lr = first_row[by_first], last_row[by_first]
    txi["first"] = rec["index"][fr]
    txi["row"] = fr
    txi["t"] = rec["t"][fr]
    txi["last"] = rec["index"][lr]
    txi["t_last"] = rec["t"][lr]
    txi["sightings"] = count[by_first]
    txi["ce"] = ce[by_first]
    txi["trim"] = trim[by_first]
    txi["last_role"] = roles[np.clip(rec["iface"][lr], 0, max(len(roles) - 1, 0))] if len(roles) else ROLE_UNKNOWN
    txi["damaged"] = (rec["flags"][lr] & F_ICRC) != 0
    txi["src"] = rec["src"][fr]
    txi["dst"] = rec["dst"][fr]
    rank = np.empty(ng, np.int64)
    rank[by_first] = np.arange(ng)
    return txi, rank[gid]
