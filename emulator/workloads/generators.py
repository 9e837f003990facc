"""The workload kinds: their keys (`parse`) and the flows they make (`generate`).

================  ==========================================================
kind              keys (besides ``kind`` and ``hosts``)
================  ==========================================================
flows             ``flows`` = [{src, dst, size_bytes, start_us = 0}, ...]
permutation       ``size_bytes``, ``start_us`` = 0: every host sends to one
                  other, every host receives once (a random derangement)
all-to-all        ``size_bytes``, ``start_us`` = 0, ``serial`` = true: in
                  round r = 1..n-1 host i sends to i + r (mod n); serial: a
                  host's round r + 1 starts when its round r send is done
                  (htsim's gen_serialn_alltoall), else all rounds at once
allreduce-ring    ``size_bytes`` (buffer per host), ``groups`` = 1 (hosts
                  split into that many rings), ``order`` = "hosts" or
                  "random" (ring order), ``start_us`` = 0: 2 (n - 1)
                  steps of size/n bytes to the ring successor; a host's
                  step s + 1 starts when it has received step s and sent
                  its own step s (a barrier of two)
incast            ``size_bytes``, ``receiver`` = 0, ``senders`` = all other
                  hosts (a count, taken in host order after the receiver,
                  or a list), ``start_us`` = 0; optional victim flow
                  ``victim_src``, ``victim_dst``, ``victim_size_bytes``,
                  ``victim_start_us``
poisson           ``cdf`` = "websearch" | "hadoop" | [[bytes, fraction],
                  ...], ``load`` (fraction of each host link), ``start_us``
                  = 0, ``until_us`` = duration_us, ``max_flows``: Poisson
                  arrivals per host, uniform random destination
cm                ``file`` (htsim .cm; relative to the scenario, or a file
                  of the scenario library), ``start_us`` = 0 (offset),
                  ``collective`` = whether the file has triggers
training          iterations of compute and collectives over parallelism
                  groups (keys in `training`)
trace             ``file``: a collective trace (format and keys in `trace`)
================  ==========================================================
"""
from __future__ import annotations

import pathlib

import numpy as np

from mrc.emulator.keys import Table
from mrc.emulator.workloads import cm as CM
from mrc.emulator.workloads import trace, training
from mrc.emulator.workloads.collectives import set_triggers
from mrc.emulator.workloads.cdf import SizeCDF
from mrc.errors import ConfigError

KINDS = ("flows", "permutation", "all-to-all", "allreduce-ring", "incast", "poisson", "cm", "training", "trace")


def _host(t: Table, name, n, default=None):
    v = t.int(name, default, lo=0) if default is not None or t.has(name) else None
    if v is not None and v >= n:
        raise ConfigError(t.key(name), v, f"the job has hosts 0..{n - 1}")
    return v


def parse(t: Table, kind: str, n: int, duration_us: float | None, base_dir: pathlib.Path | None) -> dict:
    """Validated parameters of one job of `kind` over `n` hosts (keys removed from `t`)."""
    if kind != "flows" and kind != "cm" and kind != "trace" and n < 2:
        raise ConfigError(t.key("hosts"), n, "this workload needs at least two hosts")
    if kind == "flows":
        lst = t.raw("flows")
        if not isinstance(lst, list) or not lst:
            raise ConfigError(t.key("flows"), lst, "give a list of {src, dst, size_bytes, start_us} tables")
        out = []
        for k, item in enumerate(lst):
            ft = Table(item, f"{t.key('flows')}[{k}]")
            src, dst = _host(ft, "src", n), _host(ft, "dst", n)
            if src is None or dst is None:
                raise ConfigError(ft.key("src" if src is None else "dst"), None, "missing")
            if src == dst:
                raise ConfigError(ft.key("dst"), dst, "same as src")
            out.append((src, dst, ft.int("size_bytes", lo=1), ft.num("start_us", 0.0, lo=0)))
            ft.done()
        return {"flows": out}
    if kind in ("permutation", "all-to-all", "allreduce-ring", "incast"):
        p = {"size_bytes": t.int("size_bytes", lo=1), "start_us": t.num("start_us", 0.0, lo=0)}
        if kind == "all-to-all":
            p["serial"] = t.bool("serial", True)
        elif kind == "allreduce-ring":
            g = t.int("groups", 1, lo=1)
            if n // g < 2:
                raise ConfigError(t.key("groups"), g, f"{n} hosts in {g} rings leave fewer than 2 per ring")
            p["groups"] = g
            p["order"] = t.choice("order", ("hosts", "random"), "hosts")
        elif kind == "incast":
            r = _host(t, "receiver", n, 0)
            p["receiver"] = r
            sv = t.raw("senders", n - 1)
            if isinstance(sv, list):
                for h in sv:
                    if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < n or h == r:
                        raise ConfigError(t.key("senders"), sv, f"job hosts 0..{n - 1}, not the receiver {r}")
                if len(set(sv)) != len(sv) or not sv:
                    raise ConfigError(t.key("senders"), sv, "a non-empty list without repeats")
                p["senders"] = list(sv)
            else:
                t.data["senders"] = sv
                p["senders"] = t.int("senders", n - 1, lo=1, hi=n - 1)
            if t.has("victim_size_bytes") or t.has("victim_src") or t.has("victim_dst"):
                vs, vd = _host(t, "victim_src", n), _host(t, "victim_dst", n)
                if vs is None or vd is None:
                    raise ConfigError(t.key("victim_src" if vs is None else "victim_dst"), None,
                                      "a victim flow needs victim_src, victim_dst and victim_size_bytes")
                if vs == vd:
                    raise ConfigError(t.key("victim_dst"), vd, "same as victim_src")
                p["victim"] = (vs, vd, t.int("victim_size_bytes", lo=1), t.num("victim_start_us", p["start_us"], lo=0))
        return p
    if kind == "poisson":
        cdf_v = t.raw("cdf", "websearch")
        cdf = SizeCDF.named(cdf_v, t.key("cdf")) if isinstance(cdf_v, str) else SizeCDF(cdf_v, t.key("cdf"))
        load = t.num("load", lo=0, hi=1.0, lo_open=True)
        start = t.num("start_us", 0.0, lo=0)
        until = t.num("until_us", duration_us, lo=0) if (t.has("until_us") or duration_us is not None) else None
        if until is None:
            raise ConfigError(t.key("until_us"), None, "missing (or give duration_us): when arrivals stop")
        if until <= start:
            raise ConfigError(t.key("until_us"), until, f"must be after start_us = {start}")
        return {"cdf": cdf, "load": load, "start_us": start, "until_us": until,
                "max_flows": t.int("max_flows", None, lo=1) if t.has("max_flows") else None}
    if kind == "cm":
        f = t.str("file")
        path = resolve_cm(f, base_dir, t.key("file"))
        m = CM.load(path)
        if m.nodes > n:
            raise ConfigError(t.key("file"), f, f"the matrix has {m.nodes} nodes, the job {n} hosts")
        return {"matrix": m, "start_us": t.num("start_us", 0.0, lo=0),
                "collective": t.bool("collective", bool(m.triggers))}
    if kind == "training":
        return training.parse(t, n)
    if kind == "trace":
        return trace.parse_keys(t, n, base_dir)
    raise ConfigError(t.key("kind"), kind, f"must be one of {', '.join(KINDS)}")


def resolve_cm(name: str, base_dir, key: str) -> pathlib.Path:
    from mrc.emulator import scenarios

    cands = []
    p = pathlib.Path(name)
    if p.is_absolute():
        cands.append(p)
    else:
        if base_dir is not None:
            cands.append(pathlib.Path(base_dir) / p)
        cands.append(pathlib.Path.cwd() / p)
        cands.append(scenarios.DIR / p.name)
    for c in cands:
        if c.is_file():
            return c
    raise ConfigError(key, name, "no such file (looked next to the scenario, in the current directory and in "
                      "the scenario library)")


def poisson_gap_us(p: dict, topo) -> float:
    """Mean time between a host's Poisson arrivals: the CDF's mean size at ``load`` of its link."""
    return p["cdf"].mean() * 8 / (p["load"] * float(topo.port[0]["rate"])) * 1e6


# the key that sizes each kind's flow count (what `flow_bound`'s estimate names when it is too big)
BOUND_KEY = {"flows": "flows", "permutation": "hosts", "all-to-all": "hosts", "allreduce-ring": "hosts",
             "incast": "senders", "poisson": "until_us", "cm": "file"}


def flow_bound(job, topo) -> int | None:
    """At most how many flows `generate` makes for `job`, from its keys alone (before anything is drawn or
    allocated; `memory.check_workload`); None for training and trace jobs, whose graphs only generating tells.
    Poisson: the expected count of arrivals plus six standard deviations, capped by ``max_flows``."""
    p, kind = job.params, job.kind
    n = len(job.hosts) if job.hosts is not None else topo.n_hosts
    if kind == "flows":
        return len(p["flows"])
    if kind == "permutation":
        return n
    if kind == "all-to-all":
        return n * (n - 1)
    if kind == "allreduce-ring":
        per = n // p["groups"]
        return p["groups"] * 2 * (per - 1) * per
    if kind == "incast":
        senders = len(p["senders"]) if isinstance(p["senders"], list) else p["senders"]
        return senders + (1 if "victim" in p else 0)
    if kind == "poisson":
        mean = n * (p["until_us"] - p["start_us"]) / poisson_gap_us(p, topo)
        bound = int(mean + 6 * mean**0.5) + 16
        return bound if p["max_flows"] is None else min(bound, p["max_flows"])
    if kind == "cm":
        return len(p["matrix"].connections)
    return None


def _derangement(rng, n):
    while True:
        perm = rng.permutation(n)
        if not np.any(perm == np.arange(n)):
            return perm


def generate(b, job, hosts: np.ndarray, topo, rng: np.random.Generator) -> None:
    """Add job's flows to builder `b` (hosts: job-local index -> fabric host id)."""
    p = job.params
    j = job.index
    n = len(hosts)
    kind = job.kind
    if kind == "flows":
        for src, dst, size, start in p["flows"]:
            b.flow(hosts[src], hosts[dst], size, start, job=j)
    elif kind == "permutation":
        perm = _derangement(rng, n)
        for i in range(n):
            b.flow(hosts[i], hosts[perm[i]], p["size_bytes"], p["start_us"], job=j)
    elif kind == "all-to-all":
        c = len(b.collectives)
        ids = []
        prev = [None] * n
        for r in range(1, n):
            for i in range(n):
                if p["serial"] and prev[i] is not None:
                    t = b.trigger("oneshot")
                    set_triggers(b, prev[i], send_trig=t)
                    f = b.flow(hosts[i], hosts[(i + r) % n], p["size_bytes"], None, job=j, coll=c, trigger=t)
                else:
                    f = b.flow(hosts[i], hosts[(i + r) % n], p["size_bytes"], p["start_us"], job=j, coll=c)
                prev[i] = f
                ids.append(f)
        b.collective(f"job{j}.all-to-all", j, "all-to-all", ids)
    elif kind == "allreduce-ring":
        g = p["groups"]
        per = n // g
        order = rng.permutation(hosts) if p["order"] == "random" else hosts
        for k in range(g):
            ring = order[k * per:(k + 1) * per]
            m = len(ring)
            chunk = -(-p["size_bytes"] // m)
            c = len(b.collectives)
            ids = []
            prev = [None] * m  # flow of step s sent by ring member i
            for s in range(2 * (m - 1)):
                cur = [None] * m
                for i in range(m):
                    if s == 0:
                        cur[i] = b.flow(ring[i], ring[(i + 1) % m], chunk, p["start_us"], job=j, coll=c)
                    else:
                        t = b.trigger("barrier", 2)
                        set_triggers(b, prev[i], send_trig=t)  # my own step s-1 sent
                        set_triggers(b, prev[(i - 1) % m], recv_trig=t)  # my predecessor's step s-1 received
                        cur[i] = b.flow(ring[i], ring[(i + 1) % m], chunk, None, job=j, coll=c, trigger=t)
                    ids.append(cur[i])
                prev = cur
            b.collective(f"job{j}.ring{k}", j, "allreduce-ring", ids)
    elif kind == "incast":
        r = p["receiver"]
        others = p["senders"] if isinstance(p["senders"], list) else [i for i in range(n) if i != r][: p["senders"]]
        c = len(b.collectives)
        ids = [b.flow(hosts[i], hosts[r], p["size_bytes"], p["start_us"], job=j, coll=c) for i in others]
        b.collective(f"job{j}.incast", j, "incast", ids)
        if "victim" in p:
            vs, vd, size, start = p["victim"]
            b.flow(hosts[vs], hosts[vd], size, start, job=j)
    elif kind == "poisson":
        cdf = p["cdf"]
        mean_gap_us = poisson_gap_us(p, topo)
        events = []
        for i in range(n):
            t = p["start_us"]
            while True:
                t += rng.exponential(mean_gap_us)
                if t >= p["until_us"]:
                    break
                events.append((t, i))
        events.sort()
        if p["max_flows"] is not None:
            events = events[: p["max_flows"]]
        if not events:
            raise ConfigError(f"{job.where}.load", p["load"], "no flow arrives before until_us")
        sizes = cdf.sample(rng, len(events))
        dsts = rng.integers(0, n - 1, len(events))
        for (t, i), size, d in zip(events, sizes, dsts):
            d = d + 1 if d >= i else d
            b.flow(hosts[i], hosts[d], int(size), t, job=j)
    elif kind == "cm":
        m = p["matrix"]
        tmap = {tid: b.trigger(tr.kind, tr.count) for tid, tr in sorted(m.triggers.items())}
        c = len(b.collectives) if p["collective"] else -1
        ids = []
        for conn in m.connections:
            start = None if conn.trigger else conn.start_us + p["start_us"]
            ids.append(b.flow(hosts[conn.src], hosts[conn.dst], conn.size, start, job=j, coll=c, cm_id=conn.cm_id,
                              trigger=tmap.get(conn.trigger, -1) if conn.trigger else -1,
                              send_trig=tmap[conn.send_done_trigger] if conn.send_done_trigger else -1,
                              recv_trig=tmap[conn.recv_done_trigger] if conn.recv_done_trigger else -1))
        if p["collective"]:
            b.collective(f"job{j}.{pathlib.Path(m.path).stem}", j, "cm", ids)
    elif kind == "training":
        b.jobs[j] = training.generate(b, job, hosts, topo, rng)
    elif kind == "trace":
        b.jobs[j] = trace.generate(b, job, hosts, topo, rng)
