"""htsim connection matrices (``.cm``), read as htsim's ``ConnectionMatrix::load`` reads them.

Header lines ``Nodes N``, ``Connections C``, optional ``Triggers T`` and
``Failures F``; then one line per connection, ``src->dst`` followed by
``id K`` (non-zero), ``start T`` (microseconds, as ``main_uec`` uses it;
fractional allowed) or ``trigger X``, ``size B``, and optionally
``send_done_trigger Y``, ``recv_done_trigger Z``, ``prio P`` and ``msg M``
(accepted and ignored: every line is its own flow on its own QP);
and ``trigger id X oneshot|multishot|barrier [count N]`` lines. ``#`` starts a
comment line. Errors name the file, line and token (htsim exits instead).
Failure lines (htsim's switch_type / switch_id / link_id) are accepted only
when ``Failures 0``; describe failures in the scenario's ``[[failures]]``.
"""
from __future__ import annotations

import dataclasses
import pathlib

from mrc.errors import ConfigError, read_text


@dataclasses.dataclass
class CmConnection:
    src: int
    dst: int
    size: int
    start_us: float | None  # None: started by `trigger`
    cm_id: int = 0
    trigger: int = 0
    send_done_trigger: int = 0
    recv_done_trigger: int = 0
    line: int = 0


@dataclasses.dataclass
class CmTrigger:
    tid: int
    kind: str  # "oneshot" | "multishot" | "barrier"
    count: int = 0


@dataclasses.dataclass
class ConnectionMatrix:
    nodes: int
    connections: list[CmConnection]
    triggers: dict[int, CmTrigger]
    path: str = ""


def parse(text: str, name: str = "<cm>") -> ConnectionMatrix:
    def err(line, token, problem):
        raise ConfigError(f"{name}:{line}", token, problem)

    def number(line, tok, value, kind=int):
        try:
            return kind(value)
        except (TypeError, ValueError):
            err(line, tok, f"{tok} needs a number, got {value!r}")

    nodes = n_conn = n_trig = n_fail = None
    conns: list[CmConnection] = []
    trigs: dict[int, CmTrigger] = {}
    referenced: dict[int, int] = {}
    for ln, raw in enumerate(text.splitlines(), 1):
        tok = raw.split()
        if not tok or tok[0].startswith("#"):
            continue
        head = tok[0]
        if head in ("Nodes", "Connections", "Triggers", "Failures"):
            if len(tok) != 2:
                err(ln, raw.strip(), f"write '{head} <number>'")
            v = number(ln, head, tok[1])
            if v < 0:
                err(ln, head, "must be >= 0")
            if head == "Nodes":
                nodes = v
            elif head == "Connections":
                n_conn = v
            elif head == "Triggers":
                n_trig = v
            else:
                n_fail = v
        elif "->" in head:
            a, _, b = head.partition("->")
            c = CmConnection(number(ln, "src", a), number(ln, "dst", b), 0, None, line=ln)
            has_start = False
            has_size = False
            k = 1
            while k < len(tok):
                t = tok[k]
                if k + 1 >= len(tok):
                    err(ln, t, f"'{t}' needs a value")
                v = tok[k + 1]
                if t == "start":
                    c.start_us = number(ln, t, v, float)
                    if c.start_us < 0:
                        err(ln, t, "start must be >= 0")
                    has_start = True
                elif t == "size":
                    c.size = number(ln, t, v)
                    has_size = True
                elif t == "id":
                    c.cm_id = number(ln, t, v)
                    if c.cm_id == 0:
                        err(ln, t, "flow id zero is not allowed")
                elif t == "trigger":
                    c.trigger = number(ln, t, v)
                    referenced.setdefault(c.trigger, ln)
                elif t == "send_done_trigger":
                    c.send_done_trigger = number(ln, t, v)
                    referenced.setdefault(c.send_done_trigger, ln)
                elif t == "recv_done_trigger":
                    c.recv_done_trigger = number(ln, t, v)
                    referenced.setdefault(c.recv_done_trigger, ln)
                elif t in ("prio", "msg"):
                    number(ln, t, v)
                else:
                    err(ln, t, "unknown token")
                k += 2
            if not has_size or c.size <= 0:
                err(ln, head, "every connection needs 'size B' with B > 0")
            if has_start and c.trigger:
                err(ln, head, "both a start time and a trigger")
            if not has_start and not c.trigger:
                err(ln, head, "no start time and no trigger")
            if c.trigger and not c.cm_id:
                err(ln, head, "a triggered connection needs an id")
            conns.append(c)
        elif head == "trigger":
            tid = None
            kind = None
            count = 0
            k = 1
            while k < len(tok):
                t = tok[k]
                if t == "id" and k + 1 < len(tok):
                    tid = number(ln, t, tok[k + 1])
                    k += 2
                elif t == "count" and k + 1 < len(tok):
                    count = number(ln, t, tok[k + 1])
                    k += 2
                elif t in ("oneshot", "multishot", "barrier"):
                    if kind is not None:
                        err(ln, t, "a trigger has one type")
                    kind = t
                    k += 1
                else:
                    err(ln, t, "unknown trigger token")
            if not tid:
                err(ln, raw.strip(), "trigger with no (non-zero) id")
            if kind is None:
                err(ln, raw.strip(), "trigger with no type (oneshot, multishot or barrier)")
            if kind == "barrier" and count < 1:
                err(ln, raw.strip(), "a barrier trigger needs 'count N' with N >= 1")
            if tid in trigs:
                err(ln, raw.strip(), f"trigger {tid} defined twice")
            trigs[tid] = CmTrigger(tid, kind, count)
        elif head == "failure":
            err(ln, head, "failure lines are not read; describe failures in the scenario's [[failures]]")
        else:
            err(ln, head, "unknown line")
    if nodes is None or nodes < 1:
        raise ConfigError(name, nodes, "missing 'Nodes N' header (N >= 1)")
    if n_conn is not None and n_conn != len(conns):
        raise ConfigError(name, n_conn, f"'Connections' says {n_conn}, the file has {len(conns)}")
    if n_trig is not None and n_trig != len(trigs):
        raise ConfigError(name, n_trig, f"'Triggers' says {n_trig}, the file has {len(trigs)}")
    if n_fail:
        raise ConfigError(name, n_fail, "failure lines are not read; describe failures in [[failures]]")
    for tid, ln in referenced.items():
        if tid not in trigs:
            raise ConfigError(f"{name}:{ln}", tid, f"trigger {tid} is referenced but not defined")
    for c in conns:
        for h in (c.src, c.dst):
            if not 0 <= h < nodes:
                raise ConfigError(f"{name}:{c.line}", h, f"node outside 0..{nodes - 1}")
        if c.src == c.dst:
            raise ConfigError(f"{name}:{c.line}", f"{c.src}->{c.dst}", "a connection from a node to itself")
    return ConnectionMatrix(nodes, conns, trigs, name)


def load(path) -> ConnectionMatrix:
    p = pathlib.Path(path)
    if not p.is_file():
        raise ConfigError("workload.file", str(path), "no such file")
    return parse(read_text(p, "workload.file"), p.name)
