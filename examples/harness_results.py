"""Results a person reads: the core-level harness (two QPs, no Device) and the compiled in-memory
network (many QP pairs), each giving a record in microseconds, Gb/s and bytes, with the raw
counters beside it (docs/library.md, "Results")."""
from mrc.testing import memnet
from mrc.testing.harness import Network, Pair, PathFault

pair = Pair(network=Network(default=PathFault(loss=0.05)), seed=1)   # 5 % loss on every path
assert pair.transfer(1 << 20)                                        # one 1 MiB write, QP 0 -> QP 1
result = pair.result()
print(result)
print(result.completions[0])

run = memnet.run(memnet.build(4), msgs=8, msg_bytes=1 << 20, loss=0.01, trim=0.01)   # 4 pairs, 8 MiB each
print(run)
print(run.counters)
