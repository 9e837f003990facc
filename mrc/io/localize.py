"""Several transfers at once across the namespace fabric, faults injected, and the controller's verdict.

``mrc io transfer --mode native --pairs h0:h2,h1:h4,h3:h5 [--fail-link p0.t0.0:u1 --fail-at-ms 150]
[--netem-link p1.t0.2:u0 --netem-loss 5]`` runs one `mrc.io.transfer.run_transfer` per pair (each
host in one pair: an endpoint owns its host's UDP port 4791), all in one trio loop with one clock.
The transfers start their clocks together (once every pair has probed its paths and done its warm-up write);
it takes the link down ``--fail-at-ms`` after that common start (`mrc.fabric.netns.link_down`) and puts
``tc netem loss`` on the other link's interfaces (both ends; an nftables egress rule that drops at
random where the kernel has no netem) for the whole run. Then the localiser
(`mrc.ctl.localizer`) reads what the endpoints' controllers saw, the EV events of every QP and the
EV states with their counters, and names the elements: `localize_reports`.
"""
from __future__ import annotations

import contextlib
import copy
import subprocess

import numpy as np
import trio

from mrc.errors import UsageError
from mrc.io.build import build, transfer_options


def parse_pairs(text: str, topo) -> list[tuple[int, int]]:
    pairs = []
    for item in (x.strip() for x in str(text).split(",")):
        if not item:
            continue
        a, sep, b = item.partition(":")
        if not sep:
            raise UsageError(f"--pairs {text!r}: write SRC:DST pairs, e.g. h0:h2,h1:h4")
        pa, pb = topo.parse_node(a), topo.parse_node(b)
        for h in (pa, pb):
            if int(topo.node[h]["kind"]) != 0:
                raise UsageError(f"--pairs: {topo.node_name(h)} is a switch; give hosts")
        pairs.append((pa, pb))
    hosts = [h for p in pairs for h in p]
    if len(pairs) < 1 or len(set(hosts)) != len(hosts):
        raise UsageError(f"--pairs {text!r}: give host pairs with every host at most once (an endpoint owns its "
                         "host's UDP port 4791)")
    return pairs


def netem(fab, port: int, loss_pct: float, on: bool) -> list[str]:
    """Put (or take off) random loss on both ends of `port`'s link: ``tc netem loss`` on the interface, or,
    where the kernel has no netem qdisc (``CONFIG_NET_SCH_NETEM``), the same drop by an nftables rule on
    the interface's egress hook (``numgen random``). Returns ``ns:dev (method)`` of each end."""
    from mrc.fabric.tables import ifname

    if not 0 < loss_pct <= 100:
        raise UsageError(f"--netem-loss {loss_pct!r}: a percentage in (0, 100]")
    t = fab.topo
    where = []
    for q in (port, int(t.port[port]["peer"])):
        ns, dev = fab.ns(int(t.port[q]["node"])), ifname(t, q)
        if not on:
            loss_off(ns, dev)
            where.append(f"{ns}:{dev}")
        else:
            where.append(f"{ns}:{dev} ({loss_on(ns, dev, loss_pct)})")
    return where


def loss_on(ns: str, dev: str, loss_pct: float) -> str:
    """Random loss of `loss_pct` % on the egress of `dev` in namespace `ns`: ``tc netem``, else an nftables rule on
    the egress hook; returns which. `UsageError` (saying what to install) when neither works here."""
    import shutil

    r = subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "netem", "loss",
                        f"{loss_pct}%"], capture_output=True, text=True)
    if r.returncode == 0:
        return "tc netem"
    if shutil.which("nft") is None:
        raise UsageError(f"random loss on {ns}:{dev}: tc netem failed ({r.stderr.strip() or 'tc missing'}) and "
                         "nftables is not installed; install iproute2's tc with netem (CONFIG_NET_SCH_NETEM), or "
                         "nftables")
    table = f"mrcloss_{dev}"
    ppm = int(round(loss_pct * 10_000))
    script = (f"add table netdev {table}\n"
              f"add chain netdev {table} egress {{ type filter hook egress device \"{dev}\" priority 0; }}\n"
              f"add rule netdev {table} egress numgen random mod 1000000 < {ppm} drop\n")
    r2 = subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=script, capture_output=True, text=True)
    if r2.returncode != 0:
        raise UsageError(f"random loss on {ns}:{dev}: tc netem failed ({r.stderr.strip()}) and so did nftables "
                         f"({r2.stderr.strip()}); install iproute2's tc with netem, or nftables")
    return "nftables egress, the kernel has no netem"


def loss_off(ns: str, dev: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev, "root"], capture_output=True)
    subprocess.run(["ip", "netns", "exec", ns, "nft", "delete", "table", "netdev", f"mrcloss_{dev}"],
                   capture_output=True)


def random_loss_unavailable(probe: str = "mrclossprobe") -> str | None:
    """None if `loss_on` works on this machine (root, namespaces, and tc netem or nftables), else why not: tried on
    a veth pair in a scratch namespace, removed afterwards."""
    import os
    import shutil

    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    ns = f"{probe}{os.getpid() % 100000}"
    r = subprocess.run(["ip", "netns", "add", ns], capture_output=True, text=True)
    if r.returncode:
        return f"network namespaces: {r.stderr.strip() or 'ip netns add failed'}"
    try:
        r = subprocess.run(["ip", "-n", ns, "link", "add", "lp0", "type", "veth", "peer", "name", "lp1"],
                           capture_output=True, text=True)
        if r.returncode:
            return f"veth: {r.stderr.strip()}"
        try:
            loss_on(ns, "lp0", 1.0)
        except UsageError as exc:
            return str(exc)
        return None
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


OUTAGE_US = 200_000.0  # software endpoints: an EV still ASSUMED_BAD after 200 ms (100 probe intervals) is an outage


def localize_reports(topo, reports: list[dict], pairs, params=None) -> dict:
    """The localiser's verdict over several transfers' EV events and EV states (`run_transfer` reports), at
    the end of the last transfer. Real endpoints on a shared CPU declare spurious losses now and then, so an
    outage is an EV still ASSUMED_BAD after `OUTAGE_US` (unless `params` say otherwise)."""
    from mrc.ctl import localizer as CL

    loc = CL.Localizer(topo, params or CL.Params(outage_us=OUTAGE_US))
    rows = []
    names = {"ASSUMED_BAD": CL.EV_ASSUMED_BAD, "GOOD": CL.EV_GOOD}
    for k, (r, (src, dst)) in enumerate(zip(reports, pairs)):
        t0 = int(r["t0_ps"])
        loc.note_pair_active(src, dst, t0 + int(r["seconds"] * 1e12))
        for e in r["ev_events"]:
            st = names.get(e["state"])
            if st is None:
                continue
            a, b = (src, dst) if e["side"] == "requester" else (dst, src)
            loc.add_events(t0 + int(round(e["t_ms"] * 1e9)), a, b, int(e["ev"]), st, 0, 2 * k + (e["side"] != "requester"))
        for side in ("requester", "responder"):
            for e in r[side]["ev_states"]:
                rows.append((src, dst, int(e["ev"]), int(e["tx_pkts"]) or -1, int(e["losses"]), 0, 0))
    loc.set_paths(np.array(rows, CL.PATHS))
    end = max(int(r["t0_ps"]) + int(r["seconds"] * 1e12) for r in reports)
    v = loc.verdict(max(end, int(loc.events["t"][-1]) if len(loc.events) else end))
    return {"verdict": v.as_dict(), "events": int(len(loc.events)), "paths": len(rows)}


async def run_several(args) -> dict:
    """Run ``mrc io transfer --pairs ...``: the transfers, the faults, the localisation."""
    from mrc.io.endpoint import open_endpoint
    from mrc.io.transfer import run_transfer

    if args.mode != "native":
        raise UsageError("--pairs needs --mode native (hosts of the namespace fabric)")
    from mrc.fabric import netns

    netns.check_privileges()
    fab = netns.load(args.prefix)
    pairs = parse_pairs(args.pairs, fab.topo)
    built = []
    for src, dst in pairs:
        a = copy.copy(args)
        a.src, a.dst = fab.topo.node_name(src), fab.topo.node_name(dst)
        built.append(build(a))
    fail_port = fab.parse_port(args.fail_link) if args.fail_link else None
    netem_port = fab.parse_port(args.netem_link) if args.netem_link else None
    if netem_port is not None and args.netem_loss is None:
        raise UsageError("--netem-link needs --netem-loss PCT")
    opts, rts = transfer_options(args)
    reports: list[dict | None] = [None] * len(pairs)
    faults: dict = {}
    if netem_port is not None:
        faults["netem"] = {"link": fab.topo.port_name(netem_port), "loss_pct": args.netem_loss,
                           "where": netem(fab, netem_port, args.netem_loss, True)}
    try:
        async with contextlib.AsyncExitStack() as stack:
            eps = []
            for da, ta, db, tb, _, _ in built:
                eps.append((await stack.enter_async_context(open_endpoint(da, ta)),
                            await stack.enter_async_context(open_endpoint(db, tb))))

            # the transfers start their clocks together, once every pair has probed its paths and done its
            # warm-up write (these take from milliseconds to seconds per pair): otherwise a fast pair could be done
            # before the last one starts, and never see a fault timed from the start
            ready, go = [trio.Event() for _ in pairs], trio.Event()
            started = [trio.Event() for _ in pairs]

            async def one(k):
                ea, eb = eps[k]
                reports[k] = await run_transfer(ea, eb, opts, rts=rts, fabric=fab, hosts=pairs[k], started=started[k],
                                                ready=ready[k], go=go)

            async def start_together():
                for r in ready:
                    await r.wait()
                go.set()

            async def fail():
                for s in started:  # --fail-at-ms counts from the common start, as from the first write of one transfer
                    await s.wait()
                await trio.sleep(args.fail_at_ms / 1000)
                faults["down"] = {"link": fab.topo.port_name(fail_port), "where": netns.link_down(fab, fail_port),
                                  "t_ps": eps[0][0].now()}

            async with trio.open_nursery() as nursery:
                for k in range(len(pairs)):
                    nursery.start_soon(one, k)
                nursery.start_soon(start_together)
                if fail_port is not None:
                    nursery.start_soon(fail)
    finally:
        if netem_port is not None:
            netem(fab, netem_port, args.netem_loss, False)
        if fail_port is not None and "down" in faults:
            await trio.to_thread.run_sync(netns.link_up, fab, fail_port)
    loc = localize_reports(fab.topo, reports, pairs)
    return {"pairs": [[fab.topo.node_name(a), fab.topo.node_name(b)] for a, b in pairs], "transfers": reports,
            "faults": faults, "localization": loc,
            "verified": all(r["verified"] for r in reports)}


def print_several(r: dict) -> None:
    for (a, b), t in zip(r["pairs"], r["transfers"]):
        print(f"{a} -> {b}: {t['bytes'] / (1 << 20):.1f} MiB, verified {'yes' if t['verified'] else 'NO'}, "
              f"{t['seconds']:.3f} s, {len(t['ev_events'])} EV events")
    f = r["faults"]
    if "down" in f:
        print(f"link down: {f['down']['link']} ({f['down']['where']})")
    if "netem" in f:
        print(f"netem loss {f['netem']['loss_pct']} %: {f['netem']['link']} ({', '.join(f['netem']['where'])})")
    v = r["localization"]["verdict"]
    print(f"localisation from {r['localization']['events']} EV events ({v['bad_paths']} bad paths):")
    for s in v["suspects"]:
        print(f"  {s['element']:<24} {s['kind']:<8} {s['verdict']:<10} score {s['score']:.2f}  "
              f"{s['bad_paths']}/{s['paths']} paths bad from {s['pairs']} host pairs")
    if not v["suspects"]:
        print("  no suspect")
