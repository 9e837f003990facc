"""A conformance case's traffic as a capture: every packet where it leaves a node and where it reaches one.

    with recording() as rec:
        run_case(case, adapter)
    for path, nodes in rec.write(tmp_dir):      # one pcapng per scenario the case built
        check_capture(path)

`recording` hooks `mrc.conformance.scenario.Scenario.recorder` for its duration. Each node's NIC
port gets two interfaces: ``NODE:pN:out`` ("NODE -> network": what the node sent, as it sent it)
and ``NODE:pN:in`` ("network -> NODE": what reached it, after the scripted network's trims and
CE marks), so the check folds the two sightings of a packet into one transmission and knows which
one is on the link into the receiver (`observe.interface_role`). A packet a case crafts and
injects is seen only arriving. Times are the scenario's clock, in picoseconds (``if_tsresol`` 12).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os

from mrc.wire.pcapng import write_pcapng

from ..scenario import Scenario


@dataclasses.dataclass
class Tapped:
    """One scenario's records: (time ps, node, port, way, bytes), in the order they happened."""

    records: list = dataclasses.field(default_factory=list)

    def interfaces(self) -> list[tuple[str, int, str]]:
        return sorted({(node, port, way) for _, node, port, way, _ in self.records})

    def write(self, path) -> str:
        keys = self.interfaces()
        index = {k: i for i, k in enumerate(keys)}
        ifaces = [(f"{node}:p{port}:{way}", f"{node} -> network" if way == "out" else f"network -> {node}")
                  for node, port, way in keys]
        packets = ((index[(node, port, way)], t, data) for t, node, port, way, data in self.records)
        write_pcapng(path, ifaces, packets, tsresol=12, comment="mrc conformance case traffic")
        return str(path)

    def sender(self, number: int) -> str:
        """The node that sent (or, for an injected packet, received) the packet of capture record `number`."""
        _, node, _, _, _ = self.records[number - 1]
        return node

    def way(self, number: int) -> str:
        return self.records[number - 1][3]


class Recording:
    def __init__(self):
        self.tapped: dict[int, Tapped] = {}
        self._order: list[int] = []
        self.iut_nodes: dict[int, set] = {}

    def add(self, scenario, t, node, port, way, data) -> None:
        k = id(scenario)
        tp = self.tapped.get(k)
        if tp is None:
            tp = self.tapped[k] = Tapped()
            self._order.append(k)
            self.iut_nodes[k] = set()
        n = scenario.nodes.get(node)
        if n is not None and n.iut:
            self.iut_nodes[k].add(node)
        tp.records.append((int(t), node, int(port), way, bytes(data)))

    def scenarios(self) -> list[tuple[Tapped, set]]:
        """(records, names of the IUT's nodes) per scenario, in the order they were built."""
        return [(self.tapped[k], self.iut_nodes[k]) for k in self._order]

    def write(self, directory, stem: str = "case") -> list[tuple[str, Tapped, set]]:
        out = []
        for n, (tp, iut) in enumerate(self.scenarios()):
            out.append((tp.write(os.path.join(directory, f"{stem}-{n}.pcapng")), tp, iut))
        return out


@contextlib.contextmanager
def recording():
    """Record every scenario built inside the block (see the module docstring)."""
    rec = Recording()
    prev = Scenario.recorder
    Scenario.recorder = rec.add
    try:
        yield rec
    finally:
        Scenario.recorder = prev
