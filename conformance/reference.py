"""The reference adapter: the project's own implementation (`mrc.api` + `mrc.ctl`) behind the adapter interface.

Each endpoint is one `mrc.api.Device` with one QP, set up through the
controller API exactly as an application and its controller would: an EV
format profile, an EV profile (EXP from ``cfg.evs``, or GEN) and a CC
profile, all with id 1; the QP goes RESET -> INIT here and INIT -> RTR ->
RTS in `connect`. Packets are encoded and decoded with the compiled codec
(`mrc.wire.encode` / `decode`): a packet that does not decode (bad ICRC,
unknown opcode, truncated) is dropped and counted, as a NIC drops it.

Options understood (``cfg.options``): the mrc.h / core QP attributes
``ack_every_pkts``, ``ack_every_bytes``, ``ack_delay_ps``,
``always_skip_marks``, ``rcv_cwnd_pen`` (RTR) and ``reorder_window_ps``,
``ev_probe_interval_ps``, ``probe_successes``, ``rev_probe_interval_ps``
(RTS), plus ``verify_icrc`` (default True).
"""
from __future__ import annotations

import ipaddress

import numpy as np

from mrc.api import Access, Device, QpCap, WcOpcode
from mrc.ctl import CC_NS_KEYS, EV_UNPOPULATED, CcNsccCfg, CtlEv, EpRequest, EvFmtMode, EvState
from mrc.errors import ENOENT, UsageError
from mrc.ctl.ev_fields import EvField
from mrc.wire import DecodeError, EvMode, NET
from mrc.wire.codec import decode, encode
from mrc.wire.constants import ROCEV2_UDP_PORT

from .adapter import (Adapter, Completion, Endpoint, EndpointConfig, Event, EvInfo, ProbeAnswer, Region,
                      check_features)
from .packets import Dscp
from .reference_ctl import ReferenceCtl

RTR_OPTIONS = ("ack_every_pkts", "ack_every_bytes", "ack_delay_ps", "always_skip_marks", "rcv_cwnd_pen")
RTS_OPTIONS = ("reorder_window_ps", "ev_probe_interval_ps", "probe_successes", "rev_probe_interval_ps")
ARENA = 4 << 20  # bytes of the source buffer posted writes are copied into


def default_evs(ports: int, per_port: int = 8, ev_mode: str = "STEV", side: int = 0) -> list[tuple[int, int]]:
    """Distinct EVs, `per_port` on each port: 16-bit values in UDP mode, 32-bit otherwise."""
    out = []
    for k in range(per_port):
        for p in range(1, ports + 1):
            low = (side << 12) | (p << 8) | (k + 1)
            out.append((low if ev_mode == "UDP" else (0x0A000000 | (side << 20) | (p << 16) | low), p))
    return out


class ReferenceEndpoint(ReferenceCtl, Endpoint):
    def __init__(self, cfg: EndpointConfig, name: str):
        self.cfg = cfg
        self.address = cfg.address
        self.ports = cfg.ports
        self.mode = EvMode[cfg.ev_mode]
        self.dscp = Dscp(cfg.dscp)
        self.verify_icrc = bool(cfg.options.get("verify_icrc", True))
        self.rx_errors = 0
        self.dev = dev = Device(name, ports=cfg.ports, seed=cfg.seed, address=cfg.address, mtu=cfg.mtu, max_qp=4,
                                max_mpr=min(255, max(8, cfg.mpr, cfg.mpr_dest)), max_wr=64, n_mr=64,
                                max_ev=max(256, len(cfg.evs), cfg.ev_gen_count or 0))
        self._setup_profiles(cfg)
        self.cq = dev.create_cq(4096)
        self.qp = dev.create_qp(self.cq, cap=QpCap(max_send_wr=64, max_recv_wr=64))
        self.qp.modify("INIT", ev_profile_id=1, cc_profile_id=1)
        self.qpn = self.qp.qp_num
        self.ev_cq = dev.ctl.create_ev_event_cq(4096)
        self._regions: dict[int, tuple] = {}  # va -> (mr, buffer, offset, length)
        self._arena = None
        self._arena_pos = 0
        self._carriers = self._srv6_carriers() if self.mode == EvMode.SRV6 else {}
        self._peer = None
        self._probes: list = []  # EV-probe batches whose answers are not all reported yet
        self._ctl_init()

    # -- setup -----------------------------------------------------------------------
    def _setup_profiles(self, cfg: EndpointConfig) -> None:
        c = self.dev.ctl
        if cfg.ev_mode == "SRV6" and not cfg.ev_format:
            raise UsageError("EndpointConfig: SRV6 needs ev_format and ev_fields (the uSID carrier layout)")
        widths = list(cfg.ev_format or ([16] if cfg.ev_mode == "UDP" else [32]))
        c.modify_ev_fmt_profile(1, mode=cfg.ev_mode, fields=widths, state="OFFLINE")
        c.modify_ev_fmt_profile(1, state="ONLINE")
        if cfg.ev_fields:
            fields = [EvField(f.width, f.init_val, f.min_val, f.max_val, f.mask) for f in cfg.ev_fields]
        else:
            fields = [EvField(w, mask=(1 << w) - 1) for w in widths]
        mask = 0
        for name in cfg.ev_event_mask:
            mask |= int(EvState[name])
        if cfg.ev_gen_count:
            c.modify_ev_profile(1, mode="GEN", fmt_id=1, count=cfg.ev_gen_count, min_active=cfg.ev_min_active,
                                event_mask=mask, fields=fields, seed=cfg.seed, state="OFFLINE")
        else:
            evs = list(cfg.evs) or default_evs(cfg.ports, ev_mode=cfg.ev_mode)
            c.modify_ev_profile(1, mode="EXP", fmt_id=1, count=len(evs), min_active=cfg.ev_min_active,
                                event_mask=mask, fields=fields, state="OFFLINE")
            for raw, port in evs:  # raw EVs as numbers: the EV's first 16 (UDP), 32 or 256 bits
                bits = 16 if cfg.ev_mode == "UDP" else (32 if int(raw) < 1 << 32 else 256)
                c.replace_ev(1, EV_UNPOPULATED, CtlEv.from_int(int(raw), int(port), bits))
        c.modify_ev_profile(1, state="ONLINE")
        cc = dict(cfg.cc)
        algorithm = cc.pop("algorithm", "uet-1.0-nscc")
        if algorithm == "none":  # the adapter's fixed window is the controller's "fixed-window" algorithm
            algorithm = "fixed-window"
        c.modify_cc_profile(1, algorithm=algorithm, state="OFFLINE")
        # the adapter's cc dict holds mrc_ctl_cc_nscc_cfg fields under their C names (ns), the controller spells
        # the time fields with their unit; fields of the core's CC row beyond the header's struct (a mutant's
        # pi_gain, say) go in the profile's vendor_cfg, as key=value pairs
        cc = {(k + "_ns" if k in CC_NS_KEYS else k): v for k, v in (cc or {"base_rtt": 8000}).items()}
        header = set(CcNsccCfg.__dataclass_fields__) | {"fast_increase_delay_ns"}
        extra = ",".join(f"{k}={v!r}" for k, v in cc.items() if k not in header).encode() or None
        c.modify_cc_profile(1, config={k: v for k, v in cc.items() if k in header}, vendor_cfg=extra, state="ONLINE")

    def _srv6_carriers(self) -> dict:
        """EV value -> (outer destination, SRH segment or None) from the profile's expansions."""
        width = sum(self.cfg.ev_format)
        out = {}
        for e in self.dev.ctl.ev_table(1):
            x = int(e["expanded"])
            if width <= 128:
                out[e["value"]] = ((x << (128 - width)).to_bytes(16, "big"), None)
            else:
                extra = width - 128
                seg = (x & ((1 << extra) - 1)) << (128 - extra)
                out[e["value"]] = ((x >> extra).to_bytes(16, "big"), seg.to_bytes(16, "big"))
        return out

    # -- connection and memory -----------------------------------------------------------
    def connect(self, peer_qpn, peer_address, *, sq_psn, rq_psn, now):
        cfg, opts = self.cfg, self.cfg.options
        self._peer = bytes(peer_address)
        rtr = {k: opts[k] for k in RTR_OPTIONS if k in opts}
        rts = {k: opts[k] for k in RTS_OPTIONS if k in opts}
        if cfg.ev_active is not None:
            rts["ev_active_target"] = cfg.ev_active
        self.qp.modify("RTR", dest_qp_num=peer_qpn, remote_address=bytes(peer_address), rq_psn=rq_psn,
                       mpr_dest=cfg.mpr_dest, max_wimm_dest=cfg.max_wimm_dest, now=now, **rtr)
        self.qp.modify("RTS", sq_psn=sq_psn, mpr=cfg.mpr, max_wimm=cfg.max_wimm, retry_linear=cfg.retry_linear,
                       retry_exp=cfg.retry_exp, timeout=cfg.timeout, now=now, **rts)
        # the DSCP code points of the configured table (the API leaves them at the core's defaults)
        row = self.dev.T.qp[self.qp.index]
        row["dscp_data"], row["dscp_rtx"], row["dscp_ctrl"] = self.dscp.data, self.dscp.retx, self.dscp.control

    def reg_mr(self, length: int, *, slack: int = 0) -> Region:
        """A zeroed region of `length` bytes (`slack` extra registered bytes on each side: a mutant's knob)."""
        buf = bytearray(length + 2 * slack)
        mr = self.dev.reg_mr(buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE)
        region = Region(mr.addr + slack, mr.rkey, length)
        self._regions[region.va] = (mr, buf, slack, length)
        return region

    def read_mr(self, region: Region) -> bytes:
        mr, buf, off, length = self._regions[region.va]
        return bytes(buf[off:off + length])

    def post_write(self, wr_id, data, *, remote_va, rkey, imm, now):
        data = bytes(data)
        if self._arena is None:
            self._arena = self.dev.reg_mr(bytearray(max(ARENA, len(data))), Access.LOCAL_WRITE)
        a = self._arena
        if self._arena_pos + len(data) > a.length:
            self._arena_pos = 0
        if len(data) > a.length:
            raise UsageError(f"post_write: {len(data)} bytes exceed the {a.length}-byte source arena")
        a.array[self._arena_pos:self._arena_pos + len(data)] = np.frombuffer(data, dtype=np.uint8)
        sge = a.sge(self._arena_pos, len(data))
        self._arena_pos += len(data)
        self.qp.post_write(wr_id, sge, remote_addr=remote_va, rkey=rkey, imm_data=imm, now=now)

    def post_recv(self, wr_id):
        self.qp.post_recv(wr_id)

    # -- packets and timers -----------------------------------------------------------------
    def receive(self, data, port, now):
        try:
            pkt, net, payload = decode(data, ev_mode=self.mode, dport=ROCEV2_UDP_PORT, dscp=self.dscp,
                                       verify_icrc=self.verify_icrc, port=port - 1)
        except DecodeError:
            self.rx_errors += 1
            return
        self.dev.receive(pkt, payload, now, src=bytes(net["src"]))

    def net_row(self, dest: bytes, ev: int) -> np.void:
        n = np.zeros(1, dtype=NET)[0]
        n["ip_version"], n["ev_mode"], n["hop_limit"], n["dport"] = 6, int(self.mode), 64, ROCEV2_UDP_PORT
        n["src"] = np.frombuffer(self.address, dtype=np.uint8)
        n["dst"] = np.frombuffer(bytes(dest), dtype=np.uint8)
        if self.mode == EvMode.SRV6:
            outer, seg = self._carriers.get(int(ev), (bytes(dest), None))
            n["outer_hop_limit"] = 64
            n["outer_src"] = np.frombuffer(self.address, dtype=np.uint8)
            n["outer_dst"] = np.frombuffer(outer, dtype=np.uint8)
            if seg is not None:
                n["srh"], n["srh_segleft"], n["srh_lastentry"] = 1, 1, 0
                n["srh_segments"][0] = np.frombuffer(seg, dtype=np.uint8)
        return n

    def transmit(self, now, port_mask: int | None = None):
        out = []
        for o in self.dev.packets_to_send(now, port_mask=port_mask):
            n = self.net_row(o.dest, int(o.pkt["ev"]))
            payload = o.payload if int(o.pkt["payload_len"]) else None
            out.append((o.port, encode(o.pkt, n, payload)))
        return out

    def next_deadline(self):
        return self.dev.next_deadline()

    def handle_timer(self, now):
        self.dev.handle_timer(now)

    # -- completions, events, state ----------------------------------------------------------
    def poll(self):
        out = []
        while True:
            batch = self.cq.poll(256)
            if not batch:
                return out
            for wc in batch:
                kind = "recv" if wc.opcode == WcOpcode.RECV_RDMA_WITH_IMM else "send"
                out.append(Completion(kind, wc.wr_id, wc.status, wc.byte_len, wc.imm_data))

    def events(self):
        out = []
        while (e := self.dev.get_async_event()) is not None:
            self.dev.ack_async_event(e)
            out.append(Event(e.kind, port=e.port, detail=e.detail))
        for e in self.ev_cq.poll(4096):
            out.append(Event("EV_STATE", ev=e.value, port=e.port, state=e.state.name, drop_count=e.drop_count))
        return out

    def qp_state(self):
        return self.qp.state

    def ev_table(self):
        return [EvInfo(e["value"], e["port"], e["state"]) for e in self.qp.ev_states()]

    def set_ev_state(self, ev, state, now):
        self.dev.ctl.modify_ev_state(1, self.dev.ctl.ev_of(1, int(ev)), state, now=now)

    def set_port_state(self, port, up, now):
        self.dev.set_port_state(port, up, now)

    def cc_state(self):
        return {"cwnd": float(self.qp.query()["cwnd"])}

    def ev_probe(self, req_id, ev, port, now):
        if self._peer is None:
            raise UsageError("ev_probe: the endpoint is not connected (no peer to probe)")
        try:  # the adapter names EVs by what packets carry; the controller by its own name for them
            req_ev, mode = self.dev.ctl.ev_of(1, int(ev), int(port)), EvFmtMode[self.cfg.ev_mode]
        except ENOENT:  # not an EV of the profile: the value the packet carries, as is
            udp = self.cfg.ev_mode == "UDP"
            req_ev, mode = CtlEv.from_int(int(ev), int(port), 16 if udp else 32), EvFmtMode.UDP if udp else EvFmtMode.STEV
        batch = self.dev.ctl.ep_batch_send("EV_PROBE", [EpRequest(req_id, self._peer, req_ev, ev_fmt_mode=mode)],
                                           now=now, rsp_timeout_ns=2_000_000)
        self._probes.append([batch, 0])

    def ep_responses(self):
        out = []
        for entry in self._probes:
            batch, seen = entry
            out += [ProbeAnswer(r.req_id, r.port, r.rtt_ns) for r in batch.responses[seen:]]
            entry[1] = len(batch.responses)
        self._probes = [e for e in self._probes if not e[0].done]
        return out

    def statistics(self) -> dict:
        return self.qp.statistics() | {"rx_errors": self.rx_errors}


class ReferenceAdapter(Adapter):
    """The project's implementation (`mrc.api` / `mrc.ctl` over the `mrc.core` numba core)."""

    name = "reference"
    features = check_features(["ev_query", "ev_modify", "ev_events", "ev_fields", "port_status", "cc_query",
                               "ev_mode_udp", "ev_mode_srv6", "ep_probe", "ctl"])

    def __init__(self):
        self._n = 0

    def create_endpoint(self, cfg: EndpointConfig) -> ReferenceEndpoint:
        self._n += 1
        if not cfg.address:
            cfg = cfg.replace(address=ipaddress.IPv6Address(f"2001:db8:ffff::{self._n:x}").packed)
        return ReferenceEndpoint(cfg, f"ref{self._n}")
