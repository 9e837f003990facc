"""Slow, obviously correct reference models for the fabric tests (the stumpy pattern).

- `gen_expand`: the OCP mrc_ctl.h GEN field-expansion algorithm as its text
  describes it (init_val; for each mask bit, LSB first, the next EV bit taken
  MSB first; fields concatenated), written from the description.
- `shortest_paths`: every minimal port sequence between two hosts on a plane,
  by breadth-first search over the port arrays alone (no knowledge of the
  fabric's shape).
- `follow_tables`: SRv6 forwarding in plain Python over the printed table
  entries (`Topology.table`), with the carrier as a Python int.
"""
from __future__ import annotations


def gen_expand(fields, ev: int, ev_bits: int = 32):
    """Expand `ev` (an `ev_bits`-bit value) through GEN `fields`; None if unused EV bits are set.

    Returns (value, total width): the concatenation of the expanded fields.
    """
    pos = 0  # EV bits consumed so far, from the MSB
    out, total = 0, 0
    for f in fields:
        value = f["init_val"]
        mask = f["mask"]
        n = bin(mask).count("1")
        taken = 0
        for b in range(n):  # next n EV bits, MSB first
            bit = (ev >> (ev_bits - 1 - pos - b)) & 1
            taken = (taken << 1) | bit
        k = 0
        for i in range(f["width"]):  # the extracted value's bit k goes to the k-th lowest mask bit
            if mask >> i & 1:
                value = (value & ~(1 << i)) | (((taken >> k) & 1) << i)
                k += 1
        pos += n
        out = (out << f["width"]) | value
        total += f["width"]
    if ev & ((1 << (ev_bits - pos)) - 1):
        return None
    return out, total


def _ports_of(topo, node):
    first = int(topo.node["port_start"][node])
    return range(first, first + int(topo.node["n_down"][node] + topo.node["n_up"][node]))


def shortest_paths(topo, src: int, dst: int, plane: int) -> set[tuple[int, ...]]:
    """All minimal port sequences from `src`'s NIC port on `plane` to host `dst` (hosts are not transit).

    Breadth-first distances to `dst` over the links, then every walk from the
    source whose distance drops by one at each port.
    """
    dist = {dst: 0}
    frontier = [dst]
    while frontier:
        nxt = []
        for node in frontier:
            if topo.node["kind"][node] == 0 and node != dst:
                continue  # a host other than dst forwards nothing
            for port in _ports_of(topo, node):
                peer = int(topo.port["node"][topo.port["peer"][port]])
                if peer not in dist:
                    dist[peer] = dist[node] + 1
                    nxt.append(peer)
        frontier = nxt
    found: set[tuple[int, ...]] = set()

    def walk(path, node):
        if node == dst:
            found.add(tuple(path))
            return
        for port in _ports_of(topo, node):
            peer = int(topo.port["node"][topo.port["peer"][port]])
            if dist.get(peer, -1) == dist[node] - 1 and (topo.node["kind"][peer] != 0 or peer == dst):
                walk(path + [port], peer)

    first = src * topo.n_planes + plane
    walk([first], int(topo.port["node"][topo.port["peer"][first]]))
    return found


def follow_tables(topo, src: int, plane: int, carrier: int):
    """(ports, delivered node) following the printed tables, or (ports, None) if dropped."""
    port = src * topo.n_planes + plane
    ports = [port]
    node = int(topo.port["node"][topo.port["peer"][port]])
    for _ in range(12):
        table = {e.prefix48: e for e in topo.table(node)}
        while True:
            e = table.get(carrier >> 80)
            if e is None:
                return ports, None
            if e.action == 1:  # End: shift the uSIDs after the block
                blk = carrier >> 96
                rest = (carrier << 16) & ((1 << 96) - 1)
                carrier = (blk << 96) | rest
                if (carrier >> 80) & 0xFFFF == 0:
                    return ports, node
                continue
            break
        if e.action == 3:
            return ports, node
        ports.append(e.port)
        node = int(topo.port["node"][topo.port["peer"][e.port]])
    return ports, None
