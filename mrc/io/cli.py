"""``mrc io``: MRC endpoints over real sockets.

    mrc io transfer [--bytes 64M] [--json] ...                          UDP encapsulation, loopback
    mrc io transfer --local 10.0.0.1:4791,10.0.1.1:4791 --remote ...     UDP encapsulation, any network
    mrc io transfer --mode native --src h0 --dst h3 [--fail-link p0.t0.0:u1 --fail-at-ms 50 --restore-at-ms 300]

Both endpoints run in this process (see `mrc.io.transfer`). Native mode needs
the namespace fabric (``mrc fabric netns up PRESET``) and root.
"""
from __future__ import annotations

import json
import re
import sys

from mrc.cli import deprecated_spelling
from mrc.errors import UsageError

ID_SEED_WARNING = ("mrc: warning: --id-seed draws QPNs, R_Keys and initial PSNs from a seed: anyone who knows it "
                   "can forge packets the QPs accept, and a capture of an earlier run with the same seed, replayed, "
                   "kills this one (REM_ACCESS_ERR); for tests only")
DEFAULTS = dict(base_rtt_us=1000.0, target_delay_us=4000.0, port_gbps=0.25, rto_ms=50.0, reorder_us=None,
                probe_interval_ms=2.0, rev_probe_interval_ms=10.0)


def parse_size(text: str) -> int:
    """``4096``, ``64K``, ``16M``, ``1G`` (binary multiples; a trailing ``B`` / ``iB`` is allowed)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:i?[bB])?\s*", str(text))
    if not m:
        raise UsageError(f"size = {text!r}: give bytes, optionally with K, M or G (e.g. 64M)")
    return int(float(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()])


def _addrs(text: str) -> list[str]:
    return [a.strip() for a in text.split(",") if a.strip()]


def _build(args):
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


async def run_from_args(args) -> dict:
    """Run the transfer an ``mrc io transfer`` command line describes; returns its report."""
    from mrc.io.endpoint import open_endpoint
    from mrc.io.transfer import FailurePlan, run_transfer

    da, ta, db, tb, fab, hosts = _build(args)
    failure = None
    if args.fail_link:
        if fab is None:
            raise UsageError("--fail-link needs --mode native (a fabric link of the namespace fabric)")
        if args.restore_at_ms is not None and args.restore_at_ms <= args.fail_at_ms:
            raise UsageError(f"--restore-at-ms {args.restore_at_ms} must be after --fail-at-ms {args.fail_at_ms}")
        failure = FailurePlan(fab.parse_port(args.fail_link), args.fail_at_ms / 1000,
                              None if args.restore_at_ms is None else args.restore_at_ms / 1000)
    opts, rts = transfer_options(args)
    queue_s = args.rto_ms / 4000  # receive buffers hold a quarter of the retransmission timeout (`Endpoint`)
    async with open_endpoint(da, ta, rx_queue_s=queue_s) as ea, open_endpoint(db, tb, rx_queue_s=queue_s) as eb:
        report = await run_transfer(ea, eb, opts, rts=rts, fabric=fab, hosts=hosts, failure=failure)
        report["mode"] = args.mode
        report["from"], report["to"] = str(ea.local_peer()), str(eb.local_peer())
        if fab is not None:
            report["fabric"] = {"source": fab.source, "prefix": fab.prefix}
    return report


def _transfer(args) -> int:
    import trio

    from mrc.io.endpoint import unwrapped

    run, show = run_from_args, print_report
    if args.pairs:
        from mrc.io.localize import print_several, run_several

        run, show = run_several, print_several
    with unwrapped():
        report = trio.run(run, args)
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        show(report)
    return 0 if report["verified"] else 1


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} B"


def print_report(r: dict) -> None:
    where = f" over {r['fabric']['source']}" if "fabric" in r else ""
    print(f"{_mib(r['bytes'])} from {r['from']} to {r['to']} ({r['mode']}{where}), "
          f"{r['writes']} write(s)")
    print(f"  verified byte for byte: {'yes' if r['verified'] else 'NO'}   time {r['seconds']:.3f} s   "
          f"goodput {r['goodput_gbps'] * 1000:.1f} Mb/s")
    if r.get("error"):
        print(f"  error: {r['error']}")
    if r["failed_completions"]:
        print(f"  failed completions: {', '.join(r['failed_completions'])}")
    q = r["requester"]
    print(f"  requester: {q['tx_pkts']} data packets, {q['rtx_pkts']} retransmitted ({q['rtx_timeouts']} timeouts, "
          f"{q['rtx_spurious']} spurious), {q['sacks_rx']} SACKs, {q['nacks_rx']} NACKs, {q['probes_tx']} probes, "
          f"cwnd {q['cwnd']:.0f} B")
    for e in q["ev_states"]:
        print(f"    EV {e['ev']:#010x} port {e['port']}  {e['state']:<11} {e['tx_pkts']:>8} pkts  {e['losses']} losses")
    f = r.get("failure")
    if f:
        when = lambda ms: "never" if ms is None else f"{ms:.1f} ms"  # noqa: E731
        took = "" if f.get("restore_took_ms") is None else f" (routes back {f['restore_took_ms']:.1f} ms later)"
        print(f"  failure: {f['link']} down at {when(f['down_ms'])}, up at {when(f['up_ms'])}{took}")
        if f.get("note"):
            print(f"    {f['note']}")
        for e in f["evs"]:
            bad = "never ASSUMED_BAD" if e["assumed_bad_after_ms"] is None else \
                f"ASSUMED_BAD after {e['assumed_bad_after_ms']:.2f} ms"
            good = "" if e["good_after_restore_ms"] is None else f"; GOOD {e['good_after_restore_ms']:.2f} ms after restore"
            print(f"    EV {e['ev']:#010x}: {bad}; data steered away after {e['steered_after_ms']:.2f} ms "
                  f"({e['data_pkts_after_failure']} data packets sent on it meanwhile){good}; now {e['final_state']}")
    for side in ("requester", "responder"):
        s = r["endpoints"][side]
        print(f"  {side} endpoint: rx {s['rx_datagrams']} tx {s['tx_datagrams']} garbage {s['rx_garbage']} "
              f"queue drops {s['rx_queue_drops']} tx errors {s['tx_errors']} no route {s['tx_no_route']} "
              f"wrong source {s['rx_wrong_source']} endpoint requests refused "
              f"{s['ep_unknown_source'] + s['ep_rate_limited']}")


def register(parser) -> None:
    from mrc.cli import subcommands

    sub = subcommands(parser)
    p = sub.add_parser("transfer", help="move N bytes over one QP between two endpoints, verify, report",
                       description="Move N bytes over one MRC QP between two endpoints run by this process, verify "
                       "them byte for byte, print goodput, retransmissions and EV states. UDP encapsulation "
                       "(default: two loopback endpoints with two NIC ports each) or native SRv6 between two hosts "
                       "of the namespace fabric (`mrc fabric netns up`, root), optionally taking a fabric link "
                       "down and back up during the transfer.")
    p.add_argument("--mode", choices=["udp", "native"], default="udp")
    p.add_argument("--bytes", default="16M", help="bytes to move (K, M, G suffixes; default 16M)")
    p.add_argument("--chunk", default="1M", help="bytes per RDMA Write (default 1M)")
    p.add_argument("--max-wr", type=int, default=16, help="writes outstanding at once (default 16)")
    g = p.add_argument_group("UDP encapsulation")
    g.add_argument("--local", default="127.0.0.1:0,127.0.0.1:0",
                   help="requester's address per NIC port, comma-separated (port 0: any free port)")
    g.add_argument("--remote", default="127.0.0.1:0,127.0.0.1:0", help="responder's address per NIC port")
    g.add_argument("--ev-count", type=int, default=16, help="EVs in the (AUTO) EV profile (default 16)")
    g = p.add_argument_group("native SRv6 over the namespace fabric")
    g.add_argument("--prefix", default="mrc-", help="the fabric's namespace prefix (default mrc-)")
    g.add_argument("--src", default="h0", help="requester host (default h0)")
    g.add_argument("--dst", default=None, help="responder host (default: the last host)")
    g.add_argument("--fail-link", metavar="NODE:IFNAME", help="take this link down during the transfer, e.g. p0.t0.0:u1")
    g.add_argument("--fail-at-ms", type=float, default=50.0, help="when, after the first write (default 50)")
    g.add_argument("--restore-at-ms", type=float, default=None, help="bring it back up then (default: never)")
    deprecated_spelling(g, "--fail-at", "--fail-at-ms", type=float)
    deprecated_spelling(g, "--restore-at", "--restore-at-ms", type=float)
    g.add_argument("--pairs", metavar="SRC:DST,...", help="several transfers at once (each host in one pair), "
                   "e.g. h0:h2,h1:h4,h3:h5; the controller then localises the faults from their EV events")
    g.add_argument("--netem-link", metavar="NODE:IFNAME", help="with --pairs: tc netem loss on this link (both ends)")
    g.add_argument("--netem-loss", type=float, metavar="PCT", help="with --netem-link: the loss percentage")
    g.add_argument("--settle-s", type=float, default=5.0, help="after the restore, wait this long at most for the EVs "
                   "to be GOOD again (default 5)")
    g = p.add_argument_group("protocol (software endpoints are slower than a NIC: these defaults suit them)")
    g.add_argument("--cc", choices=["nscc", "none"], default="nscc")
    g.add_argument("--window", default=None, help="--cc none: the fixed window (e.g. 256K)")
    g.add_argument("--base-rtt-us", type=float, default=DEFAULTS["base_rtt_us"])
    g.add_argument("--target-delay-us", type=float, default=DEFAULTS["target_delay_us"], help="NSCC target queuing delay")
    g.add_argument("--port-gbps", type=float, default=DEFAULTS["port_gbps"], help="NIC port rate the CC scales by")
    g.add_argument("--mtu", type=int, default=4096, help="payload bytes per packet (default 4096)")
    g.add_argument("--rto-ms", type=float, default=DEFAULTS["rto_ms"], help="retransmission timeout (rounded up to "
                   "4.096 us x 2^n)")
    g.add_argument("--reorder-us", type=float, default=None, help="loss-detection reorder window (default 4 x base RTT)")
    g.add_argument("--probe-interval-ms", type=float, default=DEFAULTS["probe_interval_ms"],
                   help="EV probe interval of ASSUMED_BAD EVs")
    g.add_argument("--rev-probe-interval-ms", type=float, default=DEFAULTS["rev_probe_interval_ms"],
                   help="reverse-path probe interval")
    p.add_argument("--seed", type=int, default=1, help="seed of the data written (default 1)")
    p.add_argument("--id-seed", type=int, default=None, help="TESTS ONLY: draw QPNs, R_Keys and initial PSNs from "
                   "this seed (reproducible, so guessable, and a replayed capture of an earlier run with the same "
                   "seed is accepted as this run's: it can kill the transfer); default: the operating system's CSPRNG")
    p.add_argument("--timeout-s", type=float, default=120.0, help="give up (and say so) after this long")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_transfer)
