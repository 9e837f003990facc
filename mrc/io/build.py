"""The two endpoints and the transfer options an ``mrc io transfer`` command line describes: used by the one
transfer of `mrc.io.cli` and the several of `mrc.io.localize` (``--pairs``)."""
from __future__ import annotations

import re
import sys

from mrc.errors import UsageError

ID_SEED_WARNING = ("mrc: warning: --id-seed draws QPNs, R_Keys and initial PSNs from a seed: anyone who knows it "
                   "can forge packets the QPs accept, and a capture of an earlier run with the same seed, replayed, "
                   "kills this one (REM_ACCESS_ERR); for tests only")

def parse_size(text: str) -> int:
    """``4096``, ``64K``, ``16M``, ``1G`` (binary multiples; a trailing ``B`` / ``iB`` is allowed)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:i?[bB])?\s*", str(text))
    if not m:
        raise UsageError(f"size = {text!r}: give bytes, optionally with K, M or G (e.g. 64M)")
    return int(float(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()])


def _addrs(text: str) -> list[str]:
    return [a.strip() for a in text.split(",") if a.strip()]


def build(args):
    """(device a, transport a, device b, transport b, fabric, hosts) for the mode asked."""
    from mrc.io import session as S
    from mrc.io.transports import NativeSrv6, UdpEncap

    if args.mode == "udp":
        local, remote = _addrs(args.local), _addrs(args.remote)
        if len(local) != len(remote):
            raise UsageError(f"--local has {len(local)} address(es) and --remote {len(remote)}: one per NIC port each")
        ta, tb = UdpEncap(local), UdpEncap(remote)
        ports, fab, hosts = len(local), None, None
    else:
        from mrc.fabric import netns

        netns.check_privileges()
        fab = netns.load(args.prefix)
        t = fab.topo
        hosts = (t.parse_node(args.src), t.parse_node(args.dst) if args.dst else t.n_hosts - 1)
        for h in hosts:
            if int(t.node[h]["kind"]) != 0:
                raise UsageError(f"--src/--dst: {t.node_name(h)} is a switch; give hosts (h0 .. h{t.n_hosts - 1})")
        if hosts[0] == hosts[1]:
            raise UsageError("--src and --dst are the same host")
        ta = NativeSrv6(t, hosts[0], netns=fab.host_ns(hosts[0]))
        tb = NativeSrv6(t, hosts[1], netns=fab.host_ns(hosts[1]))
        ports = t.n_planes
    if args.id_seed is not None:
        print(ID_SEED_WARNING, file=sys.stderr)
    devs = []
    for k, name in enumerate(("requester", "responder")):
        id_seed = None if args.id_seed is None else args.id_seed + k  # QPNs, R_Keys, PSNs: random unless asked
        d = S.make_device(name, ports, seed=id_seed, port_gbps=args.port_gbps, mtu=args.mtu)
        if args.mode == "udp":
            S.setup_udp_profiles(d, args.ev_count)
        else:
            S.setup_native_profiles(d, fab.topo, hosts[k], hosts[1 - k])
        S.setup_cc(d, algorithm=args.cc, base_rtt_us=args.base_rtt_us, target_delay_us=args.target_delay_us,
                   window_bytes=parse_size(args.window) if args.window else None)
        devs.append(d)
    return devs[0], ta, devs[1], tb, fab, hosts


def transfer_options(args):
    """(`TransferOptions`, RTS attributes) of an ``mrc io transfer`` command line."""
    from mrc.io.transfer import TransferOptions

    reorder = args.reorder_us if args.reorder_us is not None else 4 * args.base_rtt_us
    opts = TransferOptions(nbytes=parse_size(args.bytes), chunk=parse_size(args.chunk), max_wr=args.max_wr,
                           rto_ms=args.rto_ms, ev_probe_interval_ms=args.probe_interval_ms,
                           reorder_window_us=reorder, seed=args.seed, timeout_s=args.timeout_s,
                           settle_s=args.settle_s)
    return opts, {"rev_probe_interval_ps": int(args.rev_probe_interval_ms * 1e9)}
