"""Endpoint requests and ports of the controller (`mrc_ctl.h` endpoint operations, port admin).

A mixin of `mrc.ctl.Controller`: batches of EV probes (with their RTT) and port
status updates sent to peers, the answers to peers' requests, and the local
ports' link and administrative state (a port that goes down leaves every QP's
plane set at once and every peer is told, the update sent again until it is
answered). Optionally (`set_ev_probing`) the controller probes every EV that
becomes ASSUMED_BAD and returns it to GOOD after enough answers.

The protocol is `mrc.core.ctlproto` (the same compiled functions the emulator's
controllers run): this mixin owns one host row and a request table, names peers
by small integers (`_peer_id`), builds and parses the packets and keeps the
application's `EpBatch` objects.
"""
from __future__ import annotations

import numpy as np

from mrc.api.types import AsyncEvent, OutPacket
from mrc.core import ctlproto as CP, dispatch
from mrc.core.setup import QP_DEFAULTS
from mrc.ctl.types import EpBatch, EpRequest, EpResponse, parse_enum
from mrc.errors import UsageError
from mrc.wire.constants import DSCP_CONTROL, ENDPOINT_QPN, EndpointOp, Opcode
from mrc.wire.records import PKT


# TSETH unit of the controller's own requests: the QPs' default (8 ns). The answer's RTT comes
# from the local send time matched by req_id, so this stamp is informational for the peer.
EP_TS_UNIT_PS = QP_DEFAULTS["ts_unit_ps"]
EP_CAPACITY = 4096  # rows of the request table (requests in flight + answers queued); more is refused
EP_MAX_PEERS = 4096  # peers the controller keeps ids for; requests from more are dropped and counted
PSU_TIMEOUT_PS = 1_000_000_000  # a port status update unanswered for 1 ms is sent again (ours)
PSU_RETRIES = 7  # at most this many times (ours; the emulator's ``ctl_retries`` default)
PROBE_SUCCESSES = 2  # answers in a row that return a probed EV to GOOD (ours; ``ctl_probe_successes``)


class EndpointMixin:
    def _init_endpoint(self, ports: int) -> None:
        self._ep = CP.allocate(1, EP_CAPACITY, ports)  # (requests, host row, free stack, scalars)
        self._ep_batch_of: dict[int, tuple[EpBatch, int]] = {}  # row -> (batch, req_id) of an application's request
        self._ep_peers: list = []  # peer addresses; the index is the peer's id in the request table
        self._batches: list[EpBatch] = []
        self._probe_interval_ps = 0  # controller EV probes off (`set_ev_probing`)
        self._probe_successes = PROBE_SUCCESSES
        self.phys_ports = (1 << ports) - 1  # link state of each port (Device.set_port_state)
        self.admin_down = 0  # ports administratively disabled (modify_port)

    @property
    def local_ports(self) -> int:
        """The ports up (bit p: port p + 1): link up and administratively enabled."""
        return int(self._ep[1][0]["local_ports"])

    def set_ev_probing(self, interval_ns: int, successes: int = PROBE_SUCCESSES) -> None:
        """Probe every EV that becomes ASSUMED_BAD every `interval_ns` with endpoint EV probes; after
        `successes` answers in a row an EV still ASSUMED_BAD returns to GOOD on its QP (ours, as the
        emulator's ``ctl_probe_us`` / ``ctl_probe_successes``). ``interval_ns = 0`` turns it off (the default)."""
        if not isinstance(interval_ns, int) or isinstance(interval_ns, bool) or interval_ns < 0:
            raise UsageError(f"set_ev_probing: interval_ns {interval_ns!r} must be a non-negative integer")
        if not isinstance(successes, int) or isinstance(successes, bool) or not 1 <= successes <= 1000:
            raise UsageError(f"set_ev_probing: successes {successes!r} must be an integer in [1, 1000]")
        self._probe_interval_ps = interval_ns * 1000
        self._probe_successes = successes

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

    def _peer_id(self, address, add: bool = True) -> int:
        """The request table's id of a peer address (-1: unknown and not added)."""
        for k, a in enumerate(self._ep_peers):
            if a is address or a == address:
                return k
        if not add or len(self._ep_peers) >= EP_MAX_PEERS:
            return -1
        self._ep_peers.append(address)
        return len(self._ep_peers) - 1

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
            if not isinstance(r.port_status, (int, np.integer)) or not 0 <= r.port_status < 1 << 32:
                raise UsageError(f"ep_batch_send: port_status {r.port_status!r} is not a 32-bit mask")
        C, H, free, s = self._ep
        if len(requests) > int(s[CP.S_FREE_N]):
            raise UsageError(f"ep_batch_send: {len(requests)} requests, but only {int(s[CP.S_FREE_N])} of the "
                             f"controller's {EP_CAPACITY} request rows are free (ENOMEM)")
        peers = [self._peer_id(r.dest) for r in requests]
        if min(peers) < 0:
            raise UsageError(f"ep_batch_send: more than {EP_MAX_PEERS} peers (ENOMEM)")
        batch = EpBatch(op, list(requests), now + rsp_timeout_ns * 1000)
        for r, d in zip(requests, peers):
            row = CP.request_user(C, H, free, s, 0, d, int(op), r.req_id, int(r.ev), r.port - 1,
                                  int(r.port_status) & 0xFFFFFFFF, req_tc, batch.deadline)
            self._ep_batch_of[int(row)] = (batch, r.req_id)
        self._batches.append(batch)
        return batch

    def _endpoint_packets(self, now: int, port_mask: int) -> list:
        """Every request and answer that may leave now on the ports in `port_mask` (the core picks)."""
        out = []
        C, H, free, s = self._ep
        T = self.device.T
        local = self.local_ports
        for plane in range(self.device.ports):
            if not (port_mask >> plane) & 1 or not (local >> plane) & 1:
                continue
            while True:
                r, ev = CP.pick(C, H, free, s, T, 0, plane, now, 0, 0)
                if r < 0:
                    break
                row = C[r]
                kind, user = int(row["kind"]), bool(row["flags"] & CP.F_USER)
                req = kind in (CP.K_PSU_REQ, CP.K_EVP_REQ)
                psu = kind in (CP.K_PSU_REQ, CP.K_PSU_RSP)
                pkt = np.zeros(1, dtype=PKT)[0]
                pkt["opcode"] = int(Opcode.MRC_ENDPOINT_REQUEST if req else Opcode.MRC_ENDPOINT_RESPONSE)
                pkt["dqpn"] = ENDPOINT_QPN
                pkt["pkey"] = 0xFFFF
                pkt["ep_op"] = CP.EP_PSU if psu else CP.EP_PROBE
                pkt["req_id"] = int(row["req_id"])
                pkt["port_status_mask"] = int(row["mask"]) & 0xFFFFFFFF if (psu or user or not req) else local
                pkt["ev"] = ev
                pkt["port"] = plane
                if req:
                    pkt["ts"] = 1
                    pkt["tx_timestamp"] = (now // EP_TS_UNIT_PS) & 0xFFFF
                    pkt["dscp"] = int(row["tc"]) if user else DSCP_CONTROL
                else:
                    pkt["tx_timestamp"] = int(row["echo_ts"])
                    pkt["svc_time"] = int(CP.service_time_ns(C, r, now))
                    pkt["dscp"] = int(row["tc"])
                dest = self._ep_peers[int(row["peer"])]
                if user:
                    batch, req_id = self._ep_batch_of[int(r)]
                    batch.sent[req_id] = now
                CP.sent(C, H, free, s, 0, r, now, PSU_TIMEOUT_PS, self._probe_interval_ps)
                out.append(OutPacket(pkt, b"", dest, plane + 1, ENDPOINT_QPN))
        return out

    def _on_endpoint_packet(self, pkt, now: int, src) -> None:
        C, H, free, s = self._ep
        op, ep_op = int(pkt["opcode"]), int(pkt["ep_op"])
        if op == int(Opcode.MRC_ENDPOINT_REQUEST):
            bad = CP.check_request(H, 0, self.device.ports, ep_op, int(pkt["port_status_mask"]), int(pkt["port"]))
            if bad:
                self.counters["ep_rejected"] += 1  # checked before any state changed
                return
            d = self._peer_id(src)
            if d < 0:
                self.counters["ep_dropped"] += 1
                return
            if ep_op == EndpointOp.PORT_STATUS_UPDATE:
                mask = int(pkt["port_status_mask"])
                T = self.device.T
                for qp in self.device._live_qps():
                    if qp.peer.address == src and qp.state in ("RTR", "RTS"):
                        dispatch.set_remote_ports(T, qp.index, np.uint32(mask), now)
                self.counters["port_status_rx"] += 1
            r = CP.respond(C, H, free, s, 0, d, ep_op, int(pkt["req_id"]), int(pkt["ev"]), int(pkt["port"]),
                           int(pkt["dscp"]), int(pkt["tx_timestamp"]), now)
            if r == CP.DROPPED:
                self.counters["ep_dropped"] += 1
        elif op == int(Opcode.MRC_ENDPOINT_RESPONSE):
            d = self._peer_id(src, add=False)
            r, outcome = CP.on_response(C, H, free, s, self.device.T, 0, d, ep_op, int(pkt["req_id"]),
                                        self._probe_successes, now)
            if outcome == CP.RSP_USER:
                batch, req_id = self._ep_batch_of.pop(int(r))
                rtt_ns, adjusted = CP.adjusted_rtt_ns((now - int(C[r]["t_sent"])) // 1000, int(pkt["svc_time"]))
                batch.responses.append(EpResponse(req_id, int(pkt["port"]) + 1, rtt_ns, adjusted))
            elif outcome == CP.RSP_UNMATCHED:
                self.counters["ep_unmatched"] += 1
            elif outcome == CP.RSP_RESTORED:
                self.counters["ev_probe_restored"] += 1
                self.device._drain()
        else:
            self.counters["ep_unknown"] += 1

    def _next_deadline(self) -> int:
        t = int(self._ep[1][0]["deadline"])
        return min([t] + [b.deadline for b in self._batches if not b.done])

    def _on_timer(self, now: int) -> None:
        for b in self._batches:
            if not b.done and b.deadline <= now:
                b.timed_out = True
        self._batches = [b for b in self._batches if not b.done and b.deadline > now]
        C, H, free, s = self._ep
        CP.on_timer(C, H, free, s, self.device.T, 0, now, PSU_RETRIES)

    def _set_local_port(self, port: int, up: bool, now: int) -> None:
        """The link of a local port went down or came back (Device.set_port_state)."""
        bit = 1 << (port - 1)
        self.phys_ports = (self.phys_ports | bit) if up else (self.phys_ports & ~bit)
        self._update_ports(port, now)

    def _update_ports(self, port: int, now: int) -> None:
        before = self.local_ports
        local = self.phys_ports & ~self.admin_down & ((1 << self.device.ports) - 1)
        if before == local:
            return
        C, H, free, s = self._ep
        H[0]["local_ports"] = local
        up = bool(local >> (port - 1) & 1)
        dev = self.device
        for qp in dev._live_qps():
            if qp.state in ("RTR", "RTS"):
                dispatch.set_local_ports(dev.T, qp.index, np.uint32(local), now)
        dev._post_async(AsyncEvent("PORT_ACTIVE" if up else "PORT_ERR", port=port))
        # tell every peer at once, on a plane that is still up (OAI: "immediately tells peers")
        told = set()
        for qp in dev._live_qps():
            if qp.state in ("RTR", "RTS"):
                d = self._peer_id(qp.peer.address)
                if d < 0 or d in told:
                    continue
                told.add(d)
                if CP.request_psu(C, H, free, s, 0, d, qp.index, local) == CP.DROPPED:
                    self.counters["ep_dropped"] += 1
        dev._drain()

    def _probe_ev(self, qp, e) -> None:
        """An EV of `qp` became ASSUMED_BAD (EV event `e`): probe it, when probing is on."""
        if self._probe_interval_ps <= 0 or qp.state != "RTS" or qp.peer.address is None:
            return
        d = self._peer_id(qp.peer.address)
        if d < 0:
            return
        C, H, free, s = self._ep
        r = CP.request_probe(C, H, free, s, self.device.T, 0, d, qp.index, int(e["value"]), int(e["time"]),
                             self._probe_interval_ps)
        if r == CP.DROPPED:
            self.counters["ep_dropped"] += 1
