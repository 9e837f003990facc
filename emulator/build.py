"""Building the engine's tables for a scenario: ports from the fabric, flows, endpoints, failures.

Port kinds (`state.PK_*`): NIC ports (host side) are fed by the transmit
scheduler; switch ports get ECN (unless ``ecn`` is off, or the port is a T0
downlink to a host and ``ecn_last_hop`` is off), trimming and PFC as the
``[switch]`` section says. A switch's latency is added to the wires that
lead into it (equivalent for FIFO wires of constant delay).
"""
from __future__ import annotations

import numpy as np

from mrc.core.cachelines import aligned_zeros, fill_rows
from mrc.emulator import capture
from mrc.emulator import failures as FA
from mrc.emulator import state as ST
from mrc.emulator import transports
from mrc.emulator.events import HEAP, MAX_ID, heap_new
from mrc.emulator.ideal import fabric_best
from mrc.emulator.scenario import Scenario
from mrc.emulator.workloads import FlowSet
from mrc.errors import ConfigError
from mrc.units import serialization_ps


def ports_table(sc: Scenario) -> np.ndarray:
    topo, sw = sc.topo, sc.switch
    fp = topo.port
    n = len(fp)
    # what every port starts with, set in one row and copied whole (one pass over 4 M ports at 131k hosts,
    # not a strided pass per field)
    row = np.zeros(1, ST.PORTS)
    for f in ("head0", "tail0", "head1", "tail1", "cur", "pipe_head", "pipe_tail", "ring_head", "ring_tail"):
        row[f] = -1
    row["up"] = row["rloc"] = row["rglob"] = 1
    row["qscale"] = 1.0
    P = aligned_zeros(n, ST.PORTS)
    fill_rows(P, row)
    P["rate"] = fp["rate"]
    peer_node = fp["node"][fp["peer"]]
    to_host = topo.node["kind"][peer_node] == 0
    is_nic = topo.node["kind"][fp["node"]] == 0
    lat = int(round(sw.latency_ns * 1000))
    P["delay"] = fp["delay"] + np.where(to_host, 0, lat)
    kind = np.zeros(n, np.int32)
    kind[is_nic] |= ST.PK_NIC
    kind[to_host] |= ST.PK_TO_HOST | ST.PK_LASTHOP
    sw_port = ~is_nic
    if sw.ecn:
        kind[sw_port & (sw.ecn_last_hop | ~to_host)] |= ST.PK_ECN
    if sw.trim:
        kind[sw_port] |= ST.PK_TRIM
    if sw.pfc:
        kind[sw_port] |= ST.PK_PFC
    kind[list(sc.capture.ports)] |= ST.PK_CAPTURE
    P["kind"] = kind
    return P


def cfg_row(sc: Scenario) -> np.ndarray:
    sw = sc.switch
    c = np.zeros(1, ST.CFG)
    r = c[0]
    r["limit0"] = sw.queue_bytes
    r["limit1"] = sw.ctrl_queue_bytes
    r["ecn_kmin"] = sw.ecn_min_bytes
    r["ecn_kmax"] = sw.ecn_max_bytes
    r["ecn_pmax"] = sw.ecn_pmax
    r["ecn_dequeue"] = 1 if sw.ecn_mark == "dequeue" else 0
    r["trim_size"] = sw.trim_header_bytes
    r["pfc_xoff"] = sw.pfc_xoff_bytes
    r["pfc_xon"] = sw.pfc_xon_bytes
    r["pfc_limit"] = sw.pfc_xoff_bytes + sw.pfc_headroom_bytes
    r["framing"] = sw.framing_bytes
    # a PAUSE frame is 64 B on the wire (the fastest link's time, as a switch sends it at once)
    r["pause_ps"] = serialization_ps(64, int(sc.topo.port["rate"].max()))
    r["fwd"] = ST.FWD_ECMP
    r["dscp_trimmed"] = sw.dscp.trimmed
    r["dscp_trimmed_lasthop"] = sw.dscp.trimmed_lasthop
    r["n_planes"] = sc.topo.n_planes
    r["trace_all"] = 0
    r["cap_t0"], r["cap_t1"] = capture.window_ps(sc.capture)
    return c


def engine(sc: Scenario, fs: FlowSet, ep: np.ndarray, rng_seed: int) -> ST.Engine:
    """The `Engine` of a run (flows already carry their ``ep``, ``alone`` and ``ideal``)."""
    topo = sc.topo
    for what, n in (("topology (ports)", len(topo.port)), ("workload (flows)", len(fs.flows)),
                    ("transport (endpoints)", len(ep))):
        if n >= MAX_ID:
            raise ConfigError(what, n, f"the event word holds ids below {MAX_ID}")
    S = np.zeros(ST.N_S, np.int64)
    S[ST.S_RNG] = np.int64(np.uint64(rng_seed) | np.uint64(1))  # xorshift state must not be 0
    pkt, hdr, free = ST.new_pool(sc.pool_packets if sc.pool_packets is not None else ST.pool_rows_for(fs.flows["size"]))
    S[ST.S_FREE_N] = len(free)
    flows = fs.flows
    timed = np.flatnonzero(flows["start"] >= 0)
    arr = timed[np.argsort(flows["start"][timed], kind="stable")].astype(np.int32)
    end_ps = sc.end_ps
    act = FA.expand(sc.failures, topo, end_ps, sc.switch.route_detect_ps, sc.switch.route_converge_ps,
                    sc.metrics.reroute_window_ps)
    trace_flow = np.zeros(len(flows), np.int8)
    for f in sc.metrics.trace_flows:
        if f < len(flows):
            trace_flow[f] = 1
    host_ep_start, host_ep = host_endpoints(ep["host"], topo.n_hosts)
    fstat = np.zeros(len(sc.failures), ST.FSTAT)
    fstat["t0"] = ST.NEVER
    fstat["first_away"] = ST.NEVER
    heap_t, heap = heap_new(ST.heap_rows_for(len(topo.port)))
    cap, cap_hdr = capture.tables(sc.capture)
    return ST.Engine(
        S=S, ctr=np.zeros(ST.N_C, np.int64), cfg=cfg_row(sc), heap_t=heap_t, heap=heap,
        theap=np.zeros(max(len(ep), 1), HEAP), tpos=np.full(max(len(ep), 1), -1, np.int64),
        pkt=pkt, hdr=hdr, free=free, port=ports_table(sc), ep=ep,
        ring=np.full(len(ep) * topo.n_planes, -1, np.int32), flow=flows, arr_order=arr,
        trig=fs.trig, trig_tgt=fs.trig_tgt, act=act, dscp_classes=sc.switch.dscp.classes,
        trace=np.zeros(sc.metrics.trace_capacity, ST.TRACE), trace_flow=trace_flow,
        host_ep_start=host_ep_start, host_ep=host_ep, wake=np.zeros(max(len(ep), 1), np.int32),
        pmeta=np.zeros(len(pkt), np.int64), fstat=fstat, cap=cap, cap_hdr=cap_hdr,
    )


def host_endpoints(hosts: np.ndarray, n_hosts: int):
    """CSR of the endpoints per host: ``eps[start[h]:start[h + 1]]`` (ascending)."""
    order = np.argsort(hosts, kind="stable").astype(np.int32)
    counts = np.bincount(hosts.astype(np.int64), minlength=n_hosts)
    start = np.zeros(n_hosts + 1, np.int64)
    np.cumsum(counts, out=start[1:])
    return start, order


def transport(sc: Scenario, fs: FlowSet, rng: np.random.Generator):
    """Endpoints and `Transports` bundle of the scenario's transport; writes each flow's FCT alone over
    the transport's own path(s) (``alone``) and the fabric's best (``ideal``, `ideal.fabric_best`)."""
    mod = sc.transport_module
    lat = int(round(sc.switch.latency_ns * 1000))
    ep, fields, alone = mod.setup(sc.topo, fs.flows, sc.transport, sc.switch, rng, lat)
    fs.flows["alone"] = alone
    fs.flows["ideal"] = fabric_best(sc.topo, fs.flows, sc.switch.mtu_bytes, lat)
    return ep, transports.bundle(fields)
