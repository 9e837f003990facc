"""The controller's endpoint protocol through the library (`mrc.ctl` driving `mrc.core.ctlproto`): hostile
requests, answers from the wrong host, a full request table."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.api import Device
from mrc.core import ctlproto as CP
from mrc.ctl import CtlEv, EpRequest
from mrc.errors import UsageError
from mrc.wire.constants import ENDPOINT_QPN, Opcode
from mrc.wire.records import PKT


def _request(op, ep_op, *, mask=0, port=0, req_id=1):
    p = np.zeros(1, dtype=PKT)[0]
    p["opcode"], p["dqpn"], p["pkey"], p["ep_op"] = int(op), ENDPOINT_QPN, 0xFFFF, ep_op
    p["req_id"], p["port_status_mask"], p["port"] = req_id, mask, port
    return p


def test_the_library_refuses_hostile_endpoint_requests_without_answering_or_changing_ports(two_devices):
    env = two_devices
    conn = env.connect()
    b = env.b
    before = (int(b.T.qp[conn.qb.index]["remote_ports"]), b.ctl._ep[2].copy(), int(b.ctl._ep[3][CP.S_FREE_N]))
    for pkt in (_request(Opcode.MRC_ENDPOINT_REQUEST, 0, mask=0b100), _request(Opcode.MRC_ENDPOINT_REQUEST, 2),
                _request(Opcode.MRC_ENDPOINT_REQUEST, 1, port=5), _request(Opcode.MRC_ENDPOINT_REQUEST, 0, port=-1 & 0xFF)):
        b.receive(pkt, b"", now=0, src="A")
    assert b.ctl.counters["ep_rejected"] == 4
    assert int(b.T.qp[conn.qb.index]["remote_ports"]) == before[0] and int(b.ctl._ep[3][CP.S_FREE_N]) == before[2]
    assert [o for o in b.packets_to_send(0) if int(o.pkt["dqpn"]) == ENDPOINT_QPN] == []
    b.receive(_request(Opcode.MRC_ENDPOINT_RESPONSE, 1, req_id=77), b"", now=0, src="A")  # answers nothing we asked
    assert b.ctl.counters["ep_unmatched"] == 1
    b.receive(_request(Opcode.MRC_ENDPOINT_REQUEST, 0, mask=0b01), b"", now=0, src="A")  # a good one applies
    assert int(b.T.qp[conn.qb.index]["remote_ports"]) == 0b01


def test_an_answer_from_another_host_does_not_answer_a_probe(make_two_devices):
    env = make_two_devices()
    batch = env.a.ctl.ep_batch_send("EV_PROBE", [EpRequest(9, "B", CtlEv.from_int(0x1234, 1))], now=0, rsp_timeout_ns=1000)
    (out,) = env.a.packets_to_send(0)
    env.a.receive(_request(Opcode.MRC_ENDPOINT_RESPONSE, 1, req_id=9), b"", now=10, src="C")
    assert batch.responses == [] and env.a.ctl.counters["ep_unmatched"] == 1
    env.a.receive(_request(Opcode.MRC_ENDPOINT_RESPONSE, 1, req_id=9), b"", now=2000, src="B")
    assert [r.req_id for r in batch.responses] == [9] and batch.responses[0].rtt_ns == 2


def test_the_library_refuses_a_batch_larger_than_its_free_rows():
    dev = Device(ports=2)
    n = int(dev.ctl._ep[3][CP.S_FREE_N])
    with pytest.raises(UsageError, match="ENOMEM"):
        dev.ctl.ep_batch_send("EV_PROBE", [EpRequest(k, "B", CtlEv.from_int(k, 1)) for k in range(n + 1)], now=0, rsp_timeout_ns=10)
    with pytest.raises(UsageError, match="interval_ns"):
        dev.ctl.set_ev_probing(-1)
