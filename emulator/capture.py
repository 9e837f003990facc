"""Packet capture: the packets leaving chosen ports, encoded as on that wire, in one pcapng per run.

A scenario's ``[capture]`` table (or ``mrc emu run --capture PORTS``) names ports
(`select_ports`: ``p0.t1.3:down5`` or ``p0.t1.3:d5``, a node for all its ports,
``h3:nic1`` or ``h3`` for a host's NIC ports, shell patterns such as ``p*.t0.*:up*``
or ``*``), a time window and a packet budget:

    [capture]
    ports = ["h0", "p0.t1.*"]
    start_us = 0          # default: from the start
    end_us = 200          # default: to the end of the run
    max_packets = 100000  # the budget; later packets are counted, not kept

In the engine a captured port carries the ``PK_CAPTURE`` flag; `port.tx_done`
calls `capture` for a packet that leaves its serialiser onto a live wire (a tap at
the port's egress: gray loss happens on the wire, after the tap). Ports without the
flag pay one bit test on a word the loop has loaded anyway. `capture` copies the
packet's engine row (carrier, ECN, trim, size, ...) and its `PKT` header row.

`encode` turns the rows into bytes with `mrc.wire` (`codec.encode_batch`; no second
encoder): MRC packets in SRv6 mode, the outer destination the carrier as this wire
carries it (after the switches' uSID shifts so far; the outer hop limit one lower per
switch passed), the inner IPv6 from host to host (the fabric's address plan), UDP,
BTH and the MRC headers of the opcode, payload zeros (the emulator carries no
data), ECN bits as marked, DSCP as set; a trimmed packet is the full packet cut by
`mrc.wire.trim.trim_bytes` to its trimmed size (so lengths and DSCP as the switch
left them, no ICRC). ECMP packets (``roce-ecmp``) are plain IPv6 in UDP EV mode (the
QP's UDP source port, the flow label as hashed); adaptive-routing packets (``ar``) plain
IPv6 in STEV mode. `write_pcapng` writes one interface per port (named after it),
timestamps in simulated picoseconds (``if_tsresol`` 12).
"""
from __future__ import annotations

import dataclasses
import fnmatch
import re

import numpy as np

from mrc.emulator._jit import njit
from mrc.emulator import state as ST
from mrc.errors import ConfigError

DEFAULT_MAX_PACKETS = 100_000
MAX_PACKETS_LIMIT = 50_000_000  # rows of CAP + PKT (~300 B each): 15 GB; beyond that a budget is a mistake
PCAPNG_FILE = "capture.pcapng"


@njit
def capture(E, q, i, now):
    """Keep packet i leaving port q at `now` if inside the window and the budget."""
    c = E.cfg[0]
    if now < c["cap_t0"] or now >= c["cap_t1"]:
        return
    S = E.S
    n = S[ST.S_CAP_N]
    if n >= E.cap.shape[0]:
        S[ST.S_CAP_MISSED] += 1
        return
    p = E.pkt[i]
    r = E.cap[n]
    r["t"] = now
    r["hi"] = p["hi"]
    r["lo"] = p["lo"]
    r["port"] = q
    r["size"] = p["size"]
    r["src"] = p["src"]
    r["dst"] = p["dst"]
    r["flow"] = p["flow"]
    r["flow_label"] = p["flow_label"]
    r["sport"] = p["sport"]
    r["plane"] = p["plane"]
    r["ecn"] = p["ecn"]
    r["trim"] = p["trim"]
    r["fwd"] = p["fwd"]
    r["dscp"] = p["dscp"]
    r["cls"] = p["cls"]
    E.cap_hdr[n] = E.hdr[i]
    S[ST.S_CAP_N] = n + 1


# ---------------------------------------------------------------- configuration


@dataclasses.dataclass(frozen=True)
class CaptureConfig:
    ports: tuple[int, ...] = ()
    patterns: tuple[str, ...] = ()  # as given
    start_us: float = 0.0
    end_us: float | None = None
    max_packets: int = DEFAULT_MAX_PACKETS

    @property
    def on(self) -> bool:
        return bool(self.ports)


_SHORT = re.compile(r":(d(?!own)|u(?!p))")


def _long(name: str) -> str:
    """``p0.t1.3:d5`` -> ``p0.t1.3:down5``, ``p*.t0.*:u*`` -> ``p*.t0.*:up*`` (`Topology.port_name` spelling)."""
    return _SHORT.sub(lambda m: ":down" if m.group(1) == "d" else ":up", name)


def port_names(topo) -> list[str]:
    return [topo.port_name(q) for q in range(topo.n_ports)]


def select_ports(topo, patterns, key: str = "capture.ports") -> tuple[int, ...]:
    """Port ids named by `patterns` (a list of names or shell patterns); `ConfigError` naming `key` on a miss."""
    from mrc.errors import UsageError

    if isinstance(patterns, str):
        patterns = patterns.split(",")
    if not isinstance(patterns, (list, tuple)) or not patterns:
        raise ConfigError(key, patterns, "a list of port names or patterns, e.g. [\"p0.t1.3:d5\", \"h0\", \"p*.t0.*:up*\"]")
    names = port_names(topo)
    index = {n: q for q, n in enumerate(names)}
    out: set[int] = set()
    for pat in patterns:
        if not isinstance(pat, str) or not pat.strip():
            raise ConfigError(key, pat, "a port name or pattern (a non-empty string)")
        pat = _long(pat.strip())
        if any(ch in pat for ch in "*?["):
            full = pat if ":" in pat else pat + ":*"  # a pattern of nodes: all their ports
            hit = [q for q, n in enumerate(names) if fnmatch.fnmatchcase(n, full)]
            if not hit:
                raise ConfigError(key, pat, f"matches no port of this fabric (ports are named like {names[0]}, "
                                  f"{names[-1]})")
            out.update(hit)
        elif ":" in pat:
            if pat not in index:
                raise ConfigError(key, pat, f"no such port (ports are named like {names[0]}, {names[-1]}, "
                                  "or p0.t1.3:d5 for down5)")
            out.add(index[pat])
        else:
            try:
                node = topo.parse_node(pat)
            except UsageError as exc:
                raise ConfigError(key, pat, str(exc)) from None
            n = topo.node[node]
            start = int(n["port_start"])
            out.update(range(start, start + int(n["n_down"]) + int(n["n_up"])))
    return tuple(sorted(out))


def parse(t, topo, end_us: float | None) -> CaptureConfig:
    """The ``[capture]`` table (a `keys.Table`)."""
    if not t.data:
        t.done()
        return CaptureConfig()
    pats = t.raw("ports")
    ports = select_ports(topo, pats, t.key("ports"))
    start = t.num("start_us", 0.0, lo=0)
    end = t.num("end_us", None, lo=0, lo_open=True) if t.has("end_us") else None
    t.raw("end_us", None)
    if end is not None and end <= start:
        raise ConfigError(t.key("end_us"), end, f"must be after start_us = {start}")
    if end_us is not None and start >= end_us:
        raise ConfigError(t.key("start_us"), start, f"must be before the end of the run (duration_us = {end_us})")
    budget = t.int("max_packets", DEFAULT_MAX_PACKETS, lo=1, hi=MAX_PACKETS_LIMIT)
    t.done()
    given = tuple(pats.split(",")) if isinstance(pats, str) else tuple(str(p) for p in pats)
    return CaptureConfig(ports, given, float(start), None if end is None else float(end), budget)


def tables(cfg: CaptureConfig):
    """The engine's ``cap`` and ``cap_hdr`` for `cfg` (empty when off)."""
    from mrc.wire.records import PKT

    n = cfg.max_packets if cfg.on else 0
    return np.zeros(n, ST.CAP), np.zeros(n, PKT)


def window_ps(cfg: CaptureConfig) -> tuple[int, int]:
    from mrc.units import ps_from_us

    t0 = ps_from_us(cfg.start_us)
    t1 = int(ST.NEVER) if cfg.end_us is None else ps_from_us(cfg.end_us)
    return t0, t1


# ---------------------------------------------------------------- encoding


def _addr_bytes(topo, hosts: np.ndarray, planes: np.ndarray) -> np.ndarray:
    out = np.zeros((len(hosts), 16), np.uint8)
    cache: dict[tuple[int, int], bytes] = {}
    for k, (h, p) in enumerate(zip(hosts.tolist(), planes.tolist())):
        b = cache.get((h, p))
        if b is None:
            b = cache[(h, p)] = topo.host_address(h, p).packed
        out[k] = np.frombuffer(b, np.uint8)
    return out


def _words_bytes(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """(hi, lo) carrier words -> 16 address bytes per row (big-endian)."""
    w = np.empty((len(hi), 2), ">u8")
    w[:, 0] = hi
    w[:, 1] = lo
    return w.view(np.uint8).reshape(len(hi), 16)


def _usids_left(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """uSIDs after the 32-bit block still in a carrier (trailing zero uSIDs are end-of-carrier)."""
    groups = np.stack([(hi >> np.uint64(16)) & np.uint64(0xFFFF), hi & np.uint64(0xFFFF)]
                      + [(lo >> np.uint64(s)) & np.uint64(0xFFFF) for s in (48, 32, 16, 0)], axis=1)
    nz = groups != 0
    last = np.where(nz.any(axis=1), 6 - np.argmax(nz[:, ::-1], axis=1), 0)
    return last.astype(np.int64)


def _switches_passed(topo, cap: np.ndarray) -> np.ndarray:
    """Switches a packet has crossed when it leaves `cap['port']`: by the port's tier and direction, and
    (going down) how high the route between source and destination climbs."""
    fp, node = topo.port, topo.node
    q = cap["port"].astype(np.int64)
    owner = fp["node"][q]
    tier = node["tier"][owner].astype(np.int64)  # -1: a host NIC (build.TIER_HOST)
    is_host = node["kind"][owner] == 0
    up = fp["dir"][q] == 0
    src, dst = cap["src"].astype(np.int64), cap["dst"].astype(np.int64)
    same_leaf = node["leaf"][src] == node["leaf"][dst]
    same_pod = node["pod"][src] == node["pod"][dst]
    peak = np.where(same_leaf, 0, np.where((topo.tiers == 3) & same_pod, 1, topo.tiers - 1))
    passed = np.where(is_host, 0, np.where(up, tier + 1, (peak + 1) + (peak - tier)))
    return passed.astype(np.int64)


def encode(topo, cap: np.ndarray, cap_hdr: np.ndarray, dscp=None) -> list[bytes]:
    """The bytes (from the first IP header) of each captured packet, as on its wire."""
    from mrc.wire.codec import encode_batch
    from mrc.wire.constants import ROCEV2_UDP_PORT, EvMode, Trim
    from mrc.wire.dscp import DEFAULT_DSCP
    from mrc.wire.records import NET
    from mrc.wire.trim import trim_bytes

    dscp = dscp or DEFAULT_DSCP
    n = len(cap)
    if n == 0:
        return []
    pk = cap_hdr.copy()
    pk["ecn"] = cap["ecn"]
    pk["dscp"] = cap["dscp"]
    pk["trim"] = cap["trim"]
    pk["port"] = cap["plane"]
    trimmed = cap["trim"] != 0
    # a trimmed row keeps the payload left after the cut; encode it 4 bytes longer (headers + zeros up to at
    # least the cut; the ICRC is not on a trimmed packet) and cut it as the switch did. A kind that carries no
    # payload (a probe) is encoded whole: a cut can only fall in its ICRC, and it must not gain payload bytes
    # (the decoder refuses payload on such a kind)
    from mrc.wire.layout import H_NO_PAYLOAD, HEADER_TABLE

    pk["payload_len"][trimmed & ((HEADER_TABLE[pk["opcode"]] & H_NO_PAYLOAD) == 0)] += 4
    srv6 = cap["fwd"] == ST.FWD_SRV6
    ecmp = cap["fwd"] == ST.FWD_ECMP
    net = np.zeros(n, NET)
    net["ip_version"] = 6
    net["dport"] = ROCEV2_UDP_PORT
    net["ev_mode"] = np.where(srv6, int(EvMode.SRV6), np.where(ecmp, int(EvMode.UDP), int(EvMode.STEV)))
    planes = cap["plane"].astype(np.int64)
    net["src"] = _addr_bytes(topo, cap["src"].astype(np.int64), planes)
    net["dst"] = _addr_bytes(topo, cap["dst"].astype(np.int64), planes)
    passed = _switches_passed(topo, cap)
    net["hop_limit"] = np.where(srv6, 64, 64 - passed)
    net["flow_label"] = np.where(ecmp, cap["flow_label"] & 0xFFFFF, 0)
    pk["ev"] = np.where(ecmp, cap["sport"], pk["ev"])
    if srv6.any():
        s = np.flatnonzero(srv6)
        net["outer_src"][s] = net["src"][s]
        net["outer_dst"][s] = _words_bytes(cap["hi"][s], cap["lo"][s])
        net["outer_hop_limit"][s] = 64 - passed[s]
        net["outer_flow_label"][s] = pk["ev"][s] & 0xFFFF  # as mrc.io sends: the EV bits of the inner flow label
    buf, off = encode_batch(pk, net)
    data = buf.tobytes()
    out = [data[off[k]:off[k + 1]] for k in range(n)]
    for k in np.flatnonzero(trimmed):
        # never below the packet's headers: a scenario's trimmed size holds its transport's (`scenario.parse_switch`)
        size = int(cap["size"][k])
        lasthop = int(cap["trim"][k]) == int(Trim.TRIMMED_LASTHOP)
        mode = EvMode(int(net["ev_mode"][k]))
        out[k] = trim_bytes(out[k], size, lasthop=lasthop, dscp=dscp, ev_mode=EvMode.STEV if mode == EvMode.SRV6 else mode)
    return out


def interfaces(topo, ports) -> list[tuple[str, str]]:
    """(name, description) of each captured port's pcapng interface."""
    out = []
    for q in ports:
        q = int(q)
        node = int(topo.port[q]["node"])
        peer = topo.peer_node(q)
        plane = int(topo.port[q]["plane"])
        out.append((topo.port_name(q), f"{topo.node_name(node)} -> {topo.node_name(peer)} (port {q}, plane {plane}, "
                    f"{topo.tier_name(node)} {'up' if topo.port[q]['dir'] == 0 else 'down'}link)"))
    return out


def write_pcapng(path, topo, cap: np.ndarray, cap_hdr: np.ndarray, ports, dscp=None, comment: str = "") -> int:
    """Write the capture to `path`: one interface per port of `ports`; returns packets written."""
    from mrc.wire.pcapng import write_pcapng as _write

    ports = [int(q) for q in ports]
    iface = {q: k for k, q in enumerate(ports)}
    data = encode(topo, cap, cap_hdr, dscp)
    packets = ((iface[int(q)], int(t), d) for q, t, d in zip(cap["port"], cap["t"], data))
    return _write(path, interfaces(topo, ports), packets, tsresol=12, comment=comment)
