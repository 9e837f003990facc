"""hypothesis strategies for packet records: every header field random within its bit width."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from mrc.wire.constants import EvMode
from mrc.wire.dscp import DEFAULT_DSCP
from mrc.wire.layout import FIELDS, HEADERS_BY_OPCODE, carries_payload, headers_after_bth
from mrc.wire.records import NET, PKT

BITS = {
    "opcode": 8, "se": 1, "mig": 1, "padcnt": 2, "tver": 4, "pkey": 16, "fecn": 1, "becn": 1, "dqpn": 24,
    "ackreq": 1, "bth_r": 1, "rtx": 1, "ts": 1, "psn": 24, "rqmsn": 16, "msn": 16, "tx_timestamp": 16, "tsr": 1,
    "ftype": 4, "va": 64, "rkey": 32, "dma_len": 32, "imm": 32, "aeth_syndrome": 8, "aeth_msn": 24,
    "ext_type": 4, "ext_next": 5, "m": 2, "pr": 1, "entropy": 32, "spdcid": 16, "dpdcid": 16, "cack_psn": 24,
    "cc_type": 4, "cc_flags": 4, "mpr": 8, "sack_bitmap": 64, "nack_reason": 8, "vendor": 8, "nack_psn": 24,
    "probe_id": 16, "ooo_count": 15, "r_c": 1, "rcv_cwnd_pen": 7, "rcvd_bytes": 24, "ep_op": 2, "req_id": 16,
    "port_status_mask": 32, "svc_time": 32, "swap_add": 64, "compare": 64, "orig_data": 64,
}
HEADER_BITS = {("SETH", "svc_time"): 8, ("NETH", "svc_time"): 8}  # the PKT column is EETH's 32 bits
SIGNED = {"ack_psn_offset", "sack_offset"}
OPCODES = sorted(int(op) for op in HEADERS_BY_OPCODE)
MRC_OPCODES = [op for op in OPCODES if op >= 0xC6]


def _value(name, hdr=None):
    if name in SIGNED:
        return st.integers(-(1 << 15), (1 << 15) - 1)
    return st.integers(0, (1 << HEADER_BITS.get((hdr, name), BITS[name])) - 1)


@st.composite
def pkt_rows(draw, opcodes=OPCODES, mode=None, max_payload=300):
    p = np.zeros(1, dtype=PKT)[0]
    op = draw(st.sampled_from(opcodes))
    p["opcode"] = op
    for name in FIELDS["BTH"]:
        if name != "opcode":
            p[name] = draw(_value(name))
    for hdr in headers_after_bth(op, int(p["ts"])):
        for name in FIELDS[hdr]:
            p[name] = draw(_value(name, hdr))
    p["dscp"] = draw(st.integers(0, 63))
    p["ecn"] = draw(st.integers(0, 3))
    # canonical: no payload on a kind that carries none, pad bytes within the payload (decode refuses both)
    p["payload_len"] = draw(st.integers(0, max_payload)) if carries_payload(op) else 0
    p["padcnt"] = min(int(p["padcnt"]), int(p["payload_len"]))
    p["ev"] = draw(st.integers(0, 0xFFFF if mode == EvMode.UDP else 0xFFFFFFFF))
    return p


addr = st.binary(min_size=16, max_size=16)


@st.composite
def net_rows(draw, mode=None):
    n = np.zeros(1, dtype=NET)[0]
    mode = draw(st.sampled_from(list(EvMode))) if mode is None else mode
    n["ev_mode"] = int(mode)
    n["dport"] = 4791
    n["hop_limit"] = draw(st.integers(0, 255))
    if mode == EvMode.UDP and draw(st.booleans()):
        n["ip_version"] = 4
        v4 = draw(st.binary(min_size=4, max_size=4))
        n["src"][10:12] = 0xFF
        n["dst"][10:12] = 0xFF
        n["src"][12:] = np.frombuffer(v4, np.uint8)
        n["dst"][12:] = np.frombuffer(draw(st.binary(min_size=4, max_size=4)), np.uint8)
        return n
    n["ip_version"] = 6
    n["flow_label"] = draw(st.integers(0, 0xFFFFF))
    n["src"] = np.frombuffer(draw(addr), np.uint8)
    n["dst"] = np.frombuffer(draw(addr), np.uint8)
    if mode == EvMode.SRV6:
        n["outer_hop_limit"] = draw(st.integers(0, 255))
        n["outer_flow_label"] = draw(st.integers(0, 0xFFFFF))
        n["outer_src"] = np.frombuffer(draw(addr), np.uint8)
        n["outer_dst"] = np.frombuffer(draw(addr), np.uint8)
        if draw(st.booleans()):
            last = draw(st.integers(0, 3))
            n["srh"], n["srh_lastentry"] = 1, last
            n["srh_segleft"] = draw(st.integers(0, last + 1))
            n["srh_tag"] = draw(st.integers(0, 0xFFFF))
            for s in range(last + 1):
                n["srh_segments"][s] = np.frombuffer(draw(addr), np.uint8)
    return n


@st.composite
def packets(draw, opcodes=OPCODES, mode=None):
    """(pkt, net, payload), in canonical form: decode(encode(x)) must give x back exactly."""
    n = draw(net_rows(mode))
    m = EvMode(int(n["ev_mode"]))
    p = draw(pkt_rows(opcodes, m))
    if m != EvMode.UDP:
        n["flow_label"] = (int(n["flow_label"]) & 0xF0000) | (int(p["ev"]) & 0xFFFF)
    p["trim"] = int(DEFAULT_DSCP.trim_of(int(p["dscp"])))
    payload = draw(st.binary(min_size=int(p["payload_len"]), max_size=int(p["payload_len"])))
    return p, n, payload
