"""The emulator's MRC QPs go RESET -> INIT -> RTR -> RTS as the library's do, through `mrc.core.qp.modify`.

The glue (`emulator/transports/mrcqp.py`) writes no QP state itself (`test_mrc_transports`'s AST check);
here its calls are seen: the engine's flow start run as Python (``NUMBA_DISABLE_JIT=1``, in a subprocess)
with `modify` wrapped to record every move, and the compiled run's QPs checked at the end.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mrc.core import dtypes as D
from tests.emulator.helpers import flow, make

ROOT = Path(__file__).resolve().parents[2]
TOPO = {"kind": "leaf-spine", "hosts_per_leaf": 1, "leaves": 2, "spines": 2, "link_gbps": 100, "planes": 2}

SCRIPT = r"""
import json
from mrc.core import qp as core_qp
from mrc.emulator import scenario, sim, state as ST
from mrc.emulator.transports import mrcqp
from tests.emulator.helpers import flow, make

moves = []
real = core_qp.modify
def modify(T, i, target, attrs, now):
    before = int(T.qp[i]["state"])
    rc = real(T, i, target, attrs, now)
    moves.append((int(i), before, int(target), int(rc), int(T.qp[i]["state"])))
    return rc
core_qp.modify = modify

topo = %r
s = sim.Simulation(scenario.parse(make(topology=topo, transport={"name": "%s"},
                                       workload={"kind": "flows", "flows": [flow(0, 1, 10_000)]}), "life"))
mrcqp.flow_start(s.E, s.F, s.T, 0, 0)
print("MOVES", json.dumps(moves))
"""


def _moves(transport: str) -> list:
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT % (TOPO, transport)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("MOVES "))
    return json.loads(line[len("MOVES "):])


def test_the_emulators_qps_pass_through_init_and_rtr():
    for transport in ("mrc", "mrc-1ev"):
        moves = _moves(transport)
        by_qp: dict = {}
        for qp, before, target, rc, after in moves:
            assert rc == 0, f"{transport}: QP {qp}: the core refused {before} -> {target}"
            by_qp.setdefault(qp, [before]).append(after)
        assert len(by_qp) == 2  # the flow's requester and responder
        for qp, states in by_qp.items():
            assert states == [D.QPS_RESET, D.QPS_INIT, D.QPS_RTR, D.QPS_RTS], (transport, qp, states)


def test_a_compiled_run_ends_with_every_started_qp_in_rts():
    from mrc.emulator import scenario, sim

    s = sim.Simulation(scenario.parse(make(topology=TOPO, transport={"name": "mrc"},
                                           workload={"kind": "flows", "flows": [flow(0, 1, 50_000)]}), "life"))
    s.run()
    q = s.T.core.qp[:2]
    assert list(q["state"]) == [D.QPS_RTS, D.QPS_RTS]
    assert list(q["dest_qpn"]) == [int(q["qpn"][1]), int(q["qpn"][0])]
