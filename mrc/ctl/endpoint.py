"""Endpoint requests and ports of the controller (`mrc_ctl.h` endpoint operations, port admin).

A mixin of `mrc.ctl.Controller`: batches of EV probes (with their RTT) and port
status updates sent to peers, the answers to peers' requests, and the local
ports' link and administrative state (a port that goes down leaves every QP's
plane set at once and every peer is told).
"""
from __future__ import annotations

import collections

import numpy as np

from mrc.api.types import AsyncEvent, OutPacket
from mrc.core import dispatch, dtypes as D, evset
from mrc.core.setup import QP_DEFAULTS
from mrc.ctl.types import EpBatch, EpRequest, EpResponse, parse_enum
from mrc.errors import UsageError
from mrc.wire.constants import DSCP_CONTROL, ENDPOINT_QPN, EndpointOp, Opcode
from mrc.wire.records import PKT


# TSETH unit of the controller's own requests: the QPs' default (8 ns). The answer's RTT comes
# from the local send time matched by req_id, so this stamp is informational for the peer.
EP_TS_UNIT_PS = QP_DEFAULTS["ts_unit_ps"]


class EndpointMixin:
    def query_port(self, port: int) -> dict:
        """A local port's (1-based) administrative state and whether it is up."""
        self._check_port(port)
        return {"admin_state": "DISABLED" if self.admin_down >> (port - 1) & 1 else "ENABLED",
                "up": bool(self.local_ports >> (port - 1) & 1)}

    def modify_port(self, port: int, admin_enabled: bool, now: int = 0) -> None:
        """Administratively disable or enable a port (reported as down while disabled)."""
        self._check_port(port)
        bit = 1 << (port - 1)
        self.admin_down = (self.admin_down & ~bit) if admin_enabled else (self.admin_down | bit)
        self._update_ports(port, now)

    def _check_port(self, port: int) -> None:
        if not isinstance(port, (int, np.integer)) or not 1 <= port <= self.device.ports:
            raise UsageError(f"port {port!r} outside [1, {self.device.ports}]")

    def ep_batch_send(self, op: EndpointOp | str, requests: list[EpRequest], *, now: int, rsp_timeout_ns: int,
                      req_tc: int = DSCP_CONTROL) -> EpBatch:
        """Queue a batch of EV probes or port status updates; responses arrive in `EpBatch.responses`
        (RTT in ns); `EpBatch.timed_out` becomes true when `rsp_timeout_ns` passes first."""
        op = parse_enum(EndpointOp, op, "ep.op")
        ids = [r.req_id for r in requests]
        if not requests:
            raise UsageError("ep_batch_send: no requests")
        if len(set(ids)) != len(ids):
            raise UsageError("ep_batch_send: req_id values must be unique within a batch")
        if not isinstance(req_tc, int) or not 0 <= req_tc <= 63:
            raise UsageError(f"ep_batch_send: req_tc {req_tc!r} is not a DSCP value")
        if not isinstance(rsp_timeout_ns, int) or rsp_timeout_ns < 0:
            raise UsageError(f"ep_batch_send: rsp_timeout_ns {rsp_timeout_ns!r} must be a non-negative integer")
        for r in requests:
            self._check_port(r.port)
            if not isinstance(r.req_id, int) or not 0 <= r.req_id < 1 << 16:
                raise UsageError(f"ep_batch_send: req_id {r.req_id!r} is not 16-bit")
            if not isinstance(r.ev, (int, np.integer)) or not 0 <= r.ev < 1 << 32:
                raise UsageError(f"ep_batch_send: ev {r.ev!r} is not a 32-bit EV")
        batch = EpBatch(op, list(requests), now + rsp_timeout_ns * 1000)
        for r in requests:
            pkt = np.zeros(1, dtype=PKT)[0]
            pkt["opcode"] = int(Opcode.MRC_ENDPOINT_REQUEST)
            pkt["dqpn"] = ENDPOINT_QPN
            pkt["pkey"] = 0xFFFF
            pkt["ep_op"] = int(op)
            pkt["req_id"] = r.req_id
            pkt["port_status_mask"] = r.port_status
            pkt["ts"] = 1
            pkt["ev"] = r.ev
            pkt["port"] = r.port - 1
            pkt["dscp"] = req_tc
            self._ep_out.append((pkt, r.dest, r.port, batch, r.req_id))
        self._batches.append(batch)
        return batch

    def _endpoint_packets(self, now: int, port_mask: int) -> list:
        out = []
        keep = collections.deque()
        while self._ep_out:
            pkt, dest, port, batch, req_id = self._ep_out.popleft()
            if not (port_mask >> (port - 1)) & 1 or not (self.local_ports >> (port - 1)) & 1:
                keep.append((pkt, dest, port, batch, req_id))
                continue
            if batch is not None:
                pkt["tx_timestamp"] = (now // EP_TS_UNIT_PS) & 0xFFFF
                batch.sent[req_id] = now
            out.append(OutPacket(pkt, b"", dest, port, ENDPOINT_QPN))
        self._ep_out = keep
        return out

    def _on_endpoint_packet(self, pkt, now: int, src) -> None:
        op = int(pkt["opcode"])
        if op == int(Opcode.MRC_ENDPOINT_REQUEST):
            if int(pkt["ep_op"]) == EndpointOp.PORT_STATUS_UPDATE:
                mask = int(pkt["port_status_mask"]) & ((1 << self.device.ports) - 1)
                T = self.device.T
                for qp in self.device._live_qps():
                    if qp.peer.address == src and qp.state in ("RTR", "RTS"):
                        dispatch.set_remote_ports(T, qp.index, np.uint32(mask), now)
                self.counters["port_status_rx"] += 1
            rsp = np.zeros(1, dtype=PKT)[0]
            rsp["opcode"] = int(Opcode.MRC_ENDPOINT_RESPONSE)
            rsp["dqpn"] = ENDPOINT_QPN
            rsp["pkey"] = 0xFFFF
            rsp["ep_op"] = pkt["ep_op"]
            rsp["req_id"] = pkt["req_id"]
            rsp["port_status_mask"] = self.local_ports
            rsp["tx_timestamp"] = pkt["tx_timestamp"]
            rsp["svc_time"] = 0
            rsp["ev"] = pkt["ev"]
            rsp["port"] = pkt["port"]
            rsp["dscp"] = pkt["dscp"]
            self._ep_out.append((rsp, src, int(pkt["port"]) + 1, None, 0))
        elif op == int(Opcode.MRC_ENDPOINT_RESPONSE):
            req_id, ep_op = int(pkt["req_id"]), int(pkt["ep_op"])
            for batch in self._batches:
                if batch.op == ep_op and req_id in batch.sent and all(r.req_id != req_id for r in batch.responses):
                    rtt_ns = (now - batch.sent[req_id]) // 1000
                    batch.responses.append(EpResponse(req_id, int(pkt["port"]) + 1, rtt_ns, False))
                    break
            else:
                self.counters["ep_unmatched"] += 1
        else:
            self.counters["ep_unknown"] += 1

    def _next_deadline(self) -> int:
        return min((b.deadline for b in self._batches if not b.done), default=D.NO_DEADLINE)

    def _on_timer(self, now: int) -> None:
        for b in self._batches:
            if not b.done and b.deadline <= now:
                b.timed_out = True
        self._batches = [b for b in self._batches if not b.done and b.deadline > now]

    def _set_local_port(self, port: int, up: bool, now: int) -> None:
        """The link of a local port went down or came back (Device.set_port_state)."""
        bit = 1 << (port - 1)
        self.phys_ports = (self.phys_ports | bit) if up else (self.phys_ports & ~bit)
        self._update_ports(port, now)

    def _update_ports(self, port: int, now: int) -> None:
        before = self.local_ports
        self.local_ports = self.phys_ports & ~self.admin_down & ((1 << self.device.ports) - 1)
        if before == self.local_ports:
            return
        up = bool(self.local_ports >> (port - 1) & 1)
        dev = self.device
        for qp in dev._live_qps():
            if qp.state in ("RTR", "RTS"):
                dispatch.set_local_ports(dev.T, qp.index, np.uint32(self.local_ports), now)
        dev._post_async(AsyncEvent("PORT_ACTIVE" if up else "PORT_ERR", port=port))
        # tell every peer at once, on a plane that is still up (OAI: "immediately tells peers")
        peers = {}
        for qp in dev._live_qps():
            if qp.state in ("RTR", "RTS") and qp.peer.address not in peers:
                peers[qp.peer.address] = qp
        req_id = self.counters["psu_seq"]
        for dest, qp in peers.items():
            T = dev.T
            q = T.qp[qp.index]
            for k in range(int(q["n_ev"])):
                e = T.ev[q["ev_row"], k]
                if (self.local_ports >> int(e["plane"])) & 1 and evset.is_usable(e["state"]):
                    req = EpRequest(req_id & 0xFFFF, dest, int(e["plane"]) + 1, int(e["ev"]), self.local_ports)
                    self.ep_batch_send(EndpointOp.PORT_STATUS_UPDATE, [req], now=now, rsp_timeout_ns=1_000_000)
                    req_id += 1
                    break
        self.counters["psu_seq"] = req_id
        dev._drain()
