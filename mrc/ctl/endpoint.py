"""Endpoint requests and ports of the controller (`mrc_ctl.h` endpoint operations, port admin).

A mixin of `mrc.ctl.Controller`: batches of EV probes (with their RTT) and port
status updates sent to peers, the answers to peers' requests, and the local
ports' link and administrative state (a port that goes down leaves every QP's
plane set at once and every peer is told, the update sent again until it is
answered). Optionally (`set_ev_probing`) the controller probes every EV that
becomes ASSUMED_BAD and returns it to GOOD after enough answers.

The protocol is `mrc.core.ctlproto` (the same compiled functions the emulator's
controllers run): this mixin owns one host row and a request table, names peers
by small integers (`_peer_id`), hands over the packets `ctlproto.fill_packet` builds
and the fields of those that arrive, and keeps the application's `EpBatch` objects.

Requests are `EpRequest` (``mrc_ctl_ep_req``): the destination is the ``dgid`` (a GID, or the network's own
address object), the EV is a `CtlEv` (its port is the port the request leaves on); an EV of one of the
controller's profiles travels as that profile's EV does, any other as the wire value its format mode
gives (STEV 32 bits, UDP 16; an SRv6 EV is its address, which the `OutPacket` carries in ``ev_addr``
while the packet's UDP EV is the CRC-32 of it, a tag the answer echoes).
"""
from __future__ import annotations

import zlib

import numpy as np

from mrc.api.types import AsyncEvent, OutPacket
from mrc.core import ctlproto as CP
from mrc.ctl.types import (
    CtlEv, EpBatch, EpOpType, EpRequest, EpResponse, EvFmtMode, PortAdminState, PortAttr, PortAttrMask, check_int, gid,
    parse_enum,
)
from mrc.errors import EINVAL, ENOMEM, ETIMEDOUT
from mrc.wire.constants import DSCP_CONTROL, ENDPOINT_QPN, EndpointOp, Opcode
from mrc.wire.records import PKT


EP_CAPACITY = 4096  # rows of the request table (requests in flight + answers queued); more is refused
EP_MAX_PEERS = 4096  # peers the controller keeps ids for; requests from more are dropped and counted
PSU_TIMEOUT_PS = 1_000_000_000  # a port status update unanswered for 1 ms is sent again (ours)
PSU_RETRIES = 7  # at most this many times (ours; the emulator's ``ctl_retries`` default)
PROBE_SUCCESSES = 2  # answers in a row that return a probed EV to GOOD (ours; ``ctl_probe_successes``)


class EndpointMixin:
    def _init_endpoint(self, ports: int) -> None:
        self._ep = CP.allocate(1, EP_CAPACITY, ports)  # (requests, host row, free stack, scalars)
        self._ep_batch_of: dict[int, tuple[EpBatch, int]] = {}  # row -> (batch, req_id) of an application's request
        self._ep_addr_of: dict[int, bytes] = {}  # row -> SRv6 address (+ SRH) of a request whose EV is an address
        self._ep_peers: list = []  # peer addresses; the index is the peer's id in the request table
        self._ep_peer_keys: list = []  # each one's GID form (`gid`), so a GID given as text finds its peer
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
            raise EINVAL(f"set_ev_probing: interval_ns {interval_ns!r} must be a non-negative integer")
        if not isinstance(successes, int) or isinstance(successes, bool) or not 1 <= successes <= 1000:
            raise EINVAL(f"set_ev_probing: successes {successes!r} must be an integer in [1, 1000]")
        self._probe_interval_ps = interval_ns * 1000
        self._probe_successes = successes

    def query_port(self, port_num: int, attr_mask: int = PortAttrMask.ADMIN_STATE) -> PortAttr:
        """``mrc_ctl_query_port``: a local port's (1-based) administrative state (whether it is up:
        `mrc.api.Device.query_port`, which reports a disabled port as down)."""
        self._check_port(port_num)
        mask = check_int("query_port: attr_mask", attr_mask, 0, (1 << 32) - 1)
        if mask & ~int(PortAttrMask.ADMIN_STATE):
            raise EINVAL(f"query_port: attr_mask = {mask:#x}: only ADMIN_STATE is defined")
        out = PortAttr()
        if mask & PortAttrMask.ADMIN_STATE:
            out.port_admin_state = (PortAdminState.DISABLED if self.admin_down >> (port_num - 1) & 1
                                    else PortAdminState.ENABLED)
        return out

    def modify_port(self, port_num: int, attr: PortAttr | None = None, attr_mask: int = PortAttrMask.ADMIN_STATE, *,
                    admin_enabled: bool | None = None, now: int = 0) -> None:
        """``mrc_ctl_modify_port``: administratively disable or enable a port (`attr` with ``port_admin_state``,
        or ``admin_enabled=``). A disabled port is down to every QP and reported down while disabled; the
        peers are told, as when its link goes down."""
        self._check_port(port_num)
        if admin_enabled is not None:
            if attr is not None:
                raise EINVAL("modify_port: give attr or admin_enabled, not both")
            if not isinstance(admin_enabled, (bool, np.bool_)):
                raise EINVAL(f"modify_port: admin_enabled = {admin_enabled!r} must be a bool")
            attr = PortAttr(PortAdminState.ENABLED if admin_enabled else PortAdminState.DISABLED)
        mask = check_int("modify_port: attr_mask", attr_mask, 0, (1 << 32) - 1)
        if mask & ~int(PortAttrMask.ADMIN_STATE):
            raise EINVAL(f"modify_port: attr_mask = {mask:#x}: only ADMIN_STATE is defined")
        if not isinstance(attr, PortAttr):
            raise EINVAL(f"modify_port: attr = {attr!r} must be a PortAttr")
        if not mask & PortAttrMask.ADMIN_STATE:
            return
        enabled = parse_enum(PortAdminState, attr.port_admin_state, "port_admin_state") == PortAdminState.ENABLED
        bit = 1 << (port_num - 1)
        self.admin_down = (self.admin_down & ~bit) if enabled else (self.admin_down | bit)
        self._update_ports(port_num, now)

    def _check_port(self, port: int) -> None:
        if not isinstance(port, (int, np.integer)) or isinstance(port, bool) or not 1 <= port <= self.device.ports:
            raise EINVAL(f"port {port!r} outside [1, {self.device.ports}] (an integer, 1-based)")

    def _peer_id(self, address, add: bool = True) -> int:
        """The request table's id of a peer address (-1: unknown and not added). Addresses are compared as
        GIDs (`gid`: text, bytes and `ipaddress` objects of one address are one peer); a new peer keeps the
        object it was first seen as (what the network adapter gets back in `OutPacket.dest`)."""
        key = gid(address)
        for k, a in enumerate(self._ep_peer_keys):
            if a is key or a == key:
                return k
        if not add or len(self._ep_peers) >= EP_MAX_PEERS:
            return -1
        self._ep_peers.append(address)
        self._ep_peer_keys.append(key)
        return len(self._ep_peers) - 1

    def ep_batch_send(self, op_type, requests: list[EpRequest], *, now: int, rsp_timeout_ns: int,
                      req_tc: int = DSCP_CONTROL) -> EpBatch:
        """Queue a batch of EV probes or port status updates (`EpOpType`) and return at once (sans-IO): the
        responses arrive in `EpBatch.responses` (arrival order, RTT in ns) while the device is driven;
        `EpBatch.timed_out` turns true when `rsp_timeout_ns` passes first. `ep_batch_send_wait` is the
        header's blocking call. Errors (EINVAL, ENOMEM) name the request and the field."""
        op = parse_enum(EpOpType, op_type, "ep.op_type")
        if not isinstance(requests, (list, tuple)) or not requests:
            raise EINVAL(f"ep_batch_send: requests = {requests!r} must be a non-empty list of EpRequest")
        check_int("ep_batch_send: req_tc", req_tc, 0, 63)
        check_int("ep_batch_send: rsp_timeout_ns", rsp_timeout_ns, 0, (1 << 32) - 1)  # uint32_t rsp_timeout
        ids = []
        wires = []
        for n, r in enumerate(requests):
            if not isinstance(r, EpRequest):
                raise EINVAL(f"ep_batch_send: request {n} = {r!r} is not an EpRequest")
            ids.append(check_int(f"ep_batch_send: request {n} req_id", r.req_id, 0, (1 << 16) - 1))
            wires.append(self._ep_wire(n, r, op))
        if len(set(ids)) != len(ids):
            raise EINVAL("ep_batch_send: req_id values must be unique within a batch")
        C, H, free, s = self._ep
        if len(requests) > int(s[CP.S_FREE_N]):
            raise ENOMEM(f"ep_batch_send: {len(requests)} requests, but only {int(s[CP.S_FREE_N])} of the "
                         f"controller's {EP_CAPACITY} request rows are free")
        peers = [self._peer_id(gid(r.dgid) if isinstance(r.dgid, str) else r.dgid) for r in requests]
        if min(peers) < 0:
            raise ENOMEM(f"ep_batch_send: more than {EP_MAX_PEERS} peers")
        batch = EpBatch(op, list(requests), now + rsp_timeout_ns * 1000)
        for r, d, (value, mask, addr) in zip(requests, peers, wires):
            row = CP.request_user(C, H, free, s, 0, d, int(op.wire), r.req_id, value, r.port - 1, mask, req_tc,
                                  batch.deadline)
            self._ep_batch_of[int(row)] = (batch, r.req_id)
            if addr is not None:
                self._ep_addr_of[int(row)] = addr
        self._batches.append(batch)
        return batch

    def _ep_wire(self, n: int, r: EpRequest, op: EpOpType) -> tuple[int, int, bytes | None]:
        """(the 32-bit EV the request carries, the wire's port status mask, the SRv6 address or None)."""
        what = f"ep_batch_send: request {n}"
        if not isinstance(r.req_ev, CtlEv):
            raise EINVAL(f"{what}: req_ev = {r.req_ev!r} must be a CtlEv (value and port)")
        self._check_port(r.req_ev.port)
        mode = parse_enum(EvFmtMode, r.ev_fmt_mode, f"{what}: ev_fmt_mode")
        if r.sgid is not None and gid(r.sgid) != gid(self.device.address):
            raise EINVAL(f"{what}: sgid {r.sgid!r} is not this device's address ({self.device.address!r})")
        status = check_int(f"{what}: port_status", r.port_status, 0, (1 << 32) - 1)
        if status & 1 or status >> (self.device.ports + 1):
            raise EINVAL(f"{what}: port_status = {status:#x}: bit N is port N (1-based), ports 1..{self.device.ports}")
        mask = status >> 1 if op == EpOpType.PORT_STATUS_UPDATE else 0
        for pid, p in self._evps.items():  # an EV of a profile travels as that profile's EV does
            for e in p.entries:
                if e.ev == r.req_ev and e.value is not None:
                    pmode = self._fmt_mode(p)
                    if pmode != mode and not (p.fmt_id is None and mode in (EvFmtMode.STEV, EvFmtMode.UDP)):
                        raise EINVAL(f"{what}: req_ev {r.req_ev!r} is an EV of profile {pid}, whose format mode is "
                                     f"{pmode.name}, not {mode.name}")
                    return e.value, mask, None
        bits = {EvFmtMode.STEV: 32, EvFmtMode.UDP: 16, EvFmtMode.SRV6: 256}[mode]
        if mode != EvFmtMode.SRV6:
            if r.req_ev.raw & ((1 << (256 - bits)) - 1):
                raise EINVAL(f"{what}: req_ev {r.req_ev!r} has bits beyond the {bits} of a {mode.name} EV")
            return r.req_ev.to_int(bits), mask, None
        # an SRv6 EV is its address (and SRH segment); the packet's UDP EV is a tag of it that the answer echoes
        return zlib.crc32(r.req_ev.val), mask, r.req_ev.val

    def ep_batch_send_wait(self, req_tc: int, op_type, req: list[EpRequest], rsp_timeout_ns: int, *, now: int,
                           drive) -> list[EpResponse]:
        """``mrc_ctl_ep_batch_send_wait``: send the batch and wait until every response arrives or
        `rsp_timeout_ns` passes; returns the responses in arrival order, or raises ETIMEDOUT with those that
        arrived (``responses``). The device is sans-IO, so the caller lends it a clock and a network:
        ``drive(done, deadline_ps)`` runs them until ``done()`` is true or the deadline (ps) passes (for
        `mrc.testing.simnet.SimNet`: ``lambda done, t: net.run(done, max_time_ps=t)``)."""
        if not callable(drive):
            raise EINVAL(f"ep_batch_send_wait: drive = {drive!r} must be callable(done, deadline_ps)")
        batch = self.ep_batch_send(op_type, req, now=now, rsp_timeout_ns=rsp_timeout_ns, req_tc=req_tc)
        drive(lambda: batch.done or batch.timed_out, batch.deadline)
        if not batch.done:
            raise ETIMEDOUT(f"ep_batch_send_wait: {len(batch.responses)} of {len(batch.requests)} responses within "
                            f"{rsp_timeout_ns} ns", responses=list(batch.responses))
        return list(batch.responses)

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
                buf = np.zeros(1, dtype=PKT)
                CP.fill_packet(C, H, T, 0, r, plane, ev, now, DSCP_CONTROL, buf, 0)
                pkt = buf[0]
                row = C[r]
                user = bool(row["flags"] & CP.F_USER)
                dest = self._ep_peers[int(row["peer"])]
                if user:
                    batch, req_id = self._ep_batch_of[int(r)]
                    batch.sent[req_id] = now
                CP.sent(C, H, free, s, 0, r, now, PSU_TIMEOUT_PS, self._probe_interval_ps)
                out.append(OutPacket(pkt, b"", dest, plane + 1, ENDPOINT_QPN, self._ep_addr_of.pop(int(r), None)))
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
                mask = np.uint32(pkt["port_status_mask"])
                for qp in self.device._live_qps():
                    if qp.peer.address == src:
                        CP.apply_port_status(self.device.T, qp.index, mask, True, now)
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
            CP.apply_port_status(dev.T, qp.index, np.uint32(local), False, now)
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
