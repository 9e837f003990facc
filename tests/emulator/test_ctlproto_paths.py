"""One controller exchange through both users of `mrc.core.ctlproto`, compared field by field.

The library path: two `mrc.api.Device`s (their controllers, `mrc.ctl`), packets handed over by hand.
The emulator path: the host controllers of a two-host fabric (`emulator/transports/mrcctl.py`), their
glue functions called directly, each packet built into a pool row and delivered to the peer's
controller at once. The same steps at the same times: a port goes down (port status update, its
answer), an EV is taken out (the controller probes it, two answers return it to GOOD), a stale and a
forged answer. After every step the request tables, the QPs' port masks and EV states and the packets
must agree (ids mapped: a QP, a peer, an EV by its plane and rank in the plane), every header field
`ctlproto.fill_packet` writes, the timestamps included: a request carries its sender's, its answer
echoes it.
"""
from __future__ import annotations

from mrc.core import ctlproto as CP, dtypes as D, evset
from mrc.emulator import scenario, sim, state as ST
from mrc.emulator.transports import mrcctl, mrcqp
from mrc.units import US
from mrc.wire.constants import ENDPOINT_QPN
from tests.emulator.helpers import flow, make
from tests.twodevices import TwoDevices

P = 2  # planes (ports)
N_EV = 4
PROBE_US = 500


def _ev_key(core, qp, ev):
    """An EV value of QP `qp` as (plane, rank among that plane's slots): the same path in both worlds."""
    q = core.qp[qp]
    row = core.ev[int(q["ev_row"])]
    for k in range(int(q["n_ev"])):
        if int(row[k]["ev"]) == int(ev):
            p = int(row[k]["plane"])
            return p, k - int(q["plane_start"][p])
    raise AssertionError(f"EV {ev:#x} is not one of QP {qp}'s")


def _table(C, H, h, core, qp_names, peer_names):
    """Host h's rows (queued, then waiting), ids mapped to names, EVs to (plane, rank)."""
    rows = []
    for head in ("q_head", "w_head"):
        r = int(H[h][head])
        while r >= 0:
            c = C[r]
            qp = qp_names.get(int(c["qp"]), int(c["qp"]))
            row = {k: int(c[k]) for k in ("kind", "state", "req_id", "tries", "ok", "plane", "answered", "flags",
                                          "deadline", "t_sent")}
            row["mask"] = int(c["mask"]) if c["kind"] in (CP.PSU_REQUEST, CP.PSU_RESPONSE) else None
            row["peer"], row["qp"] = peer_names[int(c["peer"])], qp
            if c["kind"] == CP.PROBE_REQUEST:
                row["ev"] = _ev_key(core, int(c["qp"]), int(c["ev"]))
            if head == "q_head":
                row["deadline"] = None  # only a waiting row's deadline means anything
            rows.append((head, row))
            r = int(c["next"])
    d = int(H[h]["deadline"])
    return {"rows": rows, "deadline": None if d >= ST.NEVER else d, "local_ports": int(H[h]["local_ports"])}


def _qp_state(core, qp):
    q = core.qp[qp]
    evs = {}
    for k in range(int(q["n_ev"])):
        e = core.ev[int(q["ev_row"]), k]
        evs[_ev_key(core, qp, int(e["ev"]))] = int(e["state"])
    return {"local_ports": int(q["local_ports"]), "remote_ports": int(q["remote_ports"]), "evs": evs}


class Library:
    def __init__(self):
        self.env = TwoDevices(ports=P, ev_count=N_EV)
        self.conn = self.env.connect()
        self.devs = {"A": self.env.a, "B": self.env.b}
        self.qps = {"A": self.conn.qa, "B": self.conn.qb}
        self.env.a.ctl.set_ev_probing(PROBE_US * 1000, 2)

    def state(self, side):
        dev, qp = self.devs[side], self.qps[side]
        C, H, _, s = dev.ctl._ep
        peers = dict(enumerate(dev.ctl._ep_peers))
        return {"table": _table(C, H, 0, dev.T, {qp.index: "qp"}, peers), "qp": _qp_state(dev.T, qp.index)}

    def totals(self):
        """Requests numbered and rows in use, both controllers together."""
        ss = [dev.ctl._ep for dev in self.devs.values()]
        return sum(int(s[CP.S_REQ_SEQ]) for _, _, _, s in ss), sum(len(C) - int(s[CP.S_FREE_N]) for C, _, _, s in ss)

    def port(self, side, plane, up, now):
        self.devs[side].set_port_state(plane + 1, up, now=now)

    def bad(self, side, key, now):
        dev, qp = self.devs[side], self.qps[side]
        q = dev.T.qp[qp.index]
        ev = int(dev.T.ev[int(q["ev_row"]), int(q["plane_start"][key[0]]) + key[1]]["ev"])
        dev.ctl.modify_ev_state(1, dev.ctl.ev_of(1, ev, key[0] + 1), "ASSUMED_BAD", now=now)

    def timer(self, side, now):
        self.devs[side].handle_timer(now)

    def send(self, side, now):
        """(packets as comparable dicts, delivery callables) of every endpoint packet `side` sends now."""
        dev, other = self.devs[side], "B" if side == "A" else "A"
        out = []
        for o in dev.packets_to_send(now):
            if int(o.pkt["dqpn"]) != ENDPOINT_QPN:
                continue  # the QPs' own packets (the core's probes of an ASSUMED_BAD EV): not this exchange
            out.append((_pkt(o.pkt, dev.T, self.qps[side].index),
                        lambda t, p=o.pkt, s=side, d=other: self.devs[d].receive(p, b"", now=t, src=s)))
        return out


class Emulator:
    def __init__(self):
        topo = {"kind": "leaf-spine", "hosts_per_leaf": 1, "leaves": 2, "spines": 2, "link_gbps": 100, "planes": P}
        data = make(topology=topo, transport={"name": "mrc", "ev_count": N_EV, "ctl_probe_us": PROBE_US,
                                              "ctl_probe_successes": 2},
                    workload={"kind": "flows", "flows": [flow(0, 1, 100_000)]})
        self.s = sim.Simulation(scenario.parse(data, "ctl"))
        E, F, T = self.s.E, self.s.F, self.s.T
        mrcqp.flow_start(E, F, T, 0, 0)
        E.flow[0]["status"] = ST.FLOW_RUNNING
        req = int(E.flow[0]["ep"])
        self.qps = {"A": req, "B": int(E.ep[req]["peer"])}
        self.hosts = {"A": int(E.ep[req]["host"]), "B": int(E.ep[self.qps["B"]]["host"])}

    def state(self, side):
        T, h = self.s.T, self.hosts[side]
        other = self.hosts["B" if side == "A" else "A"]
        C, H = T.mrc_ctl, T.mrc_host
        return {"table": _table(C, H, h, T.core, {self.qps[side]: "qp"}, {other: "B" if side == "A" else "A"}),
                "qp": _qp_state(T.core, self.qps[side])}

    def totals(self):
        """Requests numbered and rows in use (one table for the fabric)."""
        s = self.s.T.mrc_s
        return int(s[CP.S_REQ_SEQ]), len(self.s.T.mrc_ctl) - int(s[CP.S_FREE_N])

    def port(self, side, plane, up, now):
        mrcqp.port_event(self.s.E, self.s.F, self.s.T, self.hosts[side], plane, int(up), now)

    def bad(self, side, key, now):
        T, qp = self.s.T, self.qps[side]
        slot = int(T.core.qp[qp]["plane_start"][key[0]]) + key[1]
        evset.ev_input(T.core, qp, slot, D.EVI_CTL_BAD, now)
        mrcqp._drain(self.s.E, T, now)  # the EV event reaches the host's controller (`mrcctl.probe_ev`)

    def timer(self, side, now):
        T = self.s.T
        if mrcctl.deadline(T, self.hosts[side]) <= now:
            mrcctl.on_timer(self.s.E, self.s.F, T, mrcctl.ctl_ep(T, self.hosts[side]), now)

    def send(self, side, now):
        E, F, T = self.s.E, self.s.F, self.s.T
        h, d = self.hosts[side], self.hosts["B" if side == "A" else "A"]
        out = []
        for plane in range(P):
            while True:
                i = len(out)
                if not mrcctl.tx_next(E, F, T, mrcctl.ctl_ep(T, h), now, h * P + plane, i):
                    break
                out.append((_pkt(E.hdr[i], T.core, self.qps[side]),
                            lambda t, i=i, d=d: mrcctl.on_rx(E, F, T, mrcctl.ctl_ep(T, d), i, t)))
        return out


def _pkt(p, core, qp):
    """An endpoint packet's fields (`mrc.core.ctlproto.fill_packet` builds them for both); its EV as (plane, rank)
    of the sender's QP (an answer: of the request's)."""
    return {"opcode": int(p["opcode"]), "dqpn": int(p["dqpn"]), "pkey": int(p["pkey"]), "ep_op": int(p["ep_op"]),
            "req_id": int(p["req_id"]), "port": int(p["port"]), "mask": int(p["port_status_mask"]), "ev": int(p["ev"]),
            "ts": int(p["ts"]), "tx_timestamp": int(p["tx_timestamp"]), "svc_time": int(p["svc_time"])}


ECHO = {}  # req_id -> the tx_timestamp its request carried, per sender


def _echoes(pkts, side):
    """Requests note their stamp; an answer must echo its request's (MRC notes 2.4), in both worlds."""
    for p in pkts:
        if p["opcode"] == 0xD8:
            assert p["ts"] == 1
            ECHO[(side, p["req_id"])] = p["tx_timestamp"]
        else:
            peer = "B" if side == "A" else "A"
            assert p["tx_timestamp"] == ECHO[(peer, p["req_id"])], p


def _same_packets(lib, emu, lib_w, emu_w, side):
    """Packets agree field by field; EVs through each world's own QP (requests) or the peer's (answers)."""
    assert len(lib) == len(emu), (lib, emu)
    _echoes(lib, side)
    for a, b in zip(lib, emu):
        ea, eb = a.pop("ev"), b.pop("ev")
        assert a == b
        is_req = a["opcode"] == 0xD8
        who = side if is_req else ("B" if side == "A" else "A")
        ka = _ev_key(lib_w.devs[who].T, lib_w.qps[who].index, ea)
        kb = _ev_key(emu_w.s.T.core, emu_w.qps[who], eb)
        assert ka == kb


def test_the_same_controller_exchange_gives_the_same_state_in_the_library_and_the_emulator():
    lib, emu = Library(), Emulator()
    log = []
    ECHO.clear()

    def check(what):
        for side in ("A", "B"):
            a, b = lib.state(side), emu.state(side)
            assert a == b, f"after {what}, {side}: library {a} != emulator {b}"
        assert lib.totals() == emu.totals(), what
        log.append(what)

    def exchange(side, t, rtt=2 * US):
        """`side` sends what it has at t; the peer gets it at t + rtt/2 and answers at once; back at t + rtt."""
        lp, ep = lib.send(side, t), emu.send(side, t)
        _same_packets([x for x, _ in lp], [x for x, _ in ep], lib, emu, side)
        for (_, dl), (_, de) in zip(lp, ep):
            dl(t + rtt // 2)
            de(t + rtt // 2)
        check(f"{side} sends at {t}")
        other = "B" if side == "A" else "A"
        if lp:
            lp, ep = lib.send(other, t + rtt // 2), emu.send(other, t + rtt // 2)
            _same_packets([x for x, _ in lp], [x for x, _ in ep], lib, emu, other)
            for (_, dl), (_, de) in zip(lp, ep):
                dl(t + rtt)
                de(t + rtt)
            check(f"{other} answers")
        return len(lp)

    check("start")
    t = 10 * US
    for w in (lib, emu):
        w.port("A", 1, False, t)
    check("A's port 2 down")
    assert lib.state("A")["table"]["rows"][0][1]["kind"] == CP.PSU_REQUEST
    assert lib.state("A")["table"]["rows"][0][1]["mask"] == 0b01
    assert exchange("A", t) == 1
    assert lib.state("B")["qp"]["remote_ports"] == 0b01 and lib.totals()[1] == 0

    t = 20 * US
    for w in (lib, emu):
        w.bad("A", (0, 0), t)
    check("EV (plane 0, rank 0) ASSUMED_BAD")
    assert lib.state("A")["qp"]["evs"][(0, 0)] == D.EV_ASSUMED_BAD
    for k in range(2):
        t += PROBE_US * US
        for w in (lib, emu):
            w.timer("A", t)
        check(f"probe timer {k}")
        assert exchange("A", t) == 1
    assert lib.state("A")["qp"]["evs"][(0, 0)] == D.EV_GOOD  # two answers in a row: back to GOOD
    assert lib.totals()[1] == 0

    t += 5 * US  # A's port 2 back: the update, answered; a duplicate of the answer changes nothing
    for w in (lib, emu):
        w.port("A", 1, True, t)
    check("A's port 2 up")
    lp, ep = lib.send("A", t), emu.send("A", t)
    for (_, dl), (_, de) in zip(lp, ep):
        dl(t + US)
        de(t + US)
    check("update delivered")
    la, ea = lib.send("B", t + US), emu.send("B", t + US)
    for (_, dl), (_, de) in zip(la, ea):
        dl(t + 2 * US)
        de(t + 2 * US)
        dl(t + 3 * US)  # again: late or duplicate
        de(t + 3 * US)
    check("answer and its duplicate")
    assert lib.state("B")["qp"]["remote_ports"] == 0b11
    assert lib.env.a.ctl.counters["ep_unmatched"] == 1
    assert len(log) >= 12
