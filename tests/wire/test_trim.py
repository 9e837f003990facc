"""Trimming: bytes and rows agree, headers survive, DSCP re-marked, the receiver accepts the cut packet."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrc.errors import ConfigError
from mrc.wire.codec import decode, encode
from mrc.wire.constants import MRC_DATA_OPCODES, DscpClass, EvMode, Trim
from mrc.wire.dscp import DEFAULT_DSCP, DscpTable
from mrc.wire.trim import header_bytes, trim_bytes, trim_record
from tests.wire.strategies import packets

DATA = sorted(MRC_DATA_OPCODES)


@settings(max_examples=300)
@given(packets(opcodes=DATA), st.integers(0, 700), st.booleans())
def test_decode_of_trimmed_bytes_equals_trimmed_row(x, extra, lasthop):
    p, n, payload = x
    p["dscp"], p["trim"] = DEFAULT_DSCP.data, 0
    data = encode(p, n, payload)
    hint = EvMode(int(n["ev_mode"])) if n["ev_mode"] != EvMode.SRV6 else EvMode.STEV
    pn = np.zeros(1, dtype=n.dtype)
    pn[0] = n
    pp = np.zeros(1, dtype=p.dtype)
    pp[0] = p
    size = int(header_bytes(pp, 0, pn, 0)) + extra
    cut = trim_bytes(data, size, lasthop=lasthop, ev_mode=hint)
    assert len(cut) == min(size, len(data))
    q, m, pay = decode(cut, ev_mode=hint)
    want = trim_record(p, n, size, lasthop=lasthop)
    assert q.tobytes() == want.tobytes()
    assert m.tobytes() == n.tobytes()
    assert q["trim"] == (Trim.TRIMMED_LASTHOP if lasthop else Trim.TRIMMED)
    assert q["dscp"] == (DEFAULT_DSCP.trimmed_lasthop if lasthop else DEFAULT_DSCP.trimmed)
    assert q["ecn"] == p["ecn"]
    assert pay == (payload + data[-4:])[: int(q["payload_len"])]


def test_trimmed_packet_keeps_every_header_and_sets_both_srv6_headers():
    from mrc.wire.samples import mrc_packets, net_row

    n = net_row(EvMode.SRV6, srh=True)
    _, p, payload = mrc_packets(EvMode.SRV6)[4]
    cut = trim_bytes(encode(p, n, payload), 256)
    assert len(cut) == 256
    assert (cut[0] & 0xF) << 2 | cut[1] >> 6 == DEFAULT_DSCP.trimmed  # outer DSCP
    inner = 40 + 8 + 16
    assert (cut[inner] & 0xF) << 2 | cut[inner + 1] >> 6 == DEFAULT_DSCP.trimmed
    q, _, _ = decode(cut)
    assert q["psn"] == p["psn"] and q["va"] == p["va"] and q["trim"] == Trim.TRIMMED


def test_trim_size_below_the_headers_is_a_config_error():
    from mrc.wire.samples import mrc_packets, net_row

    n = net_row(EvMode.STEV)
    _, p, payload = mrc_packets(EvMode.STEV)[0]
    with pytest.raises(ConfigError, match="trim.size"):
        trim_bytes(encode(p, n, payload), 60)
    with pytest.raises(ConfigError, match="trim.size"):
        trim_record(p, n, 60)


def test_a_custom_dscp_table_drives_decode_and_trim():
    from mrc.wire.samples import mrc_packets, net_row

    table = DscpTable(data=10, retx=11, control=48, trimmed=20, trimmed_lasthop=21, no_trim=0)
    n = net_row(EvMode.STEV)
    _, p, payload = mrc_packets(EvMode.STEV, dscp=table)[4]
    cut = trim_bytes(encode(p, n, payload), 200, dscp=table)
    q, _, _ = decode(cut, dscp=table)
    assert q["dscp"] == 20 and q["trim"] == Trim.TRIMMED
    # With the default table DSCP 20 means nothing, so the cut packet's ICRC is checked and fails.
    from mrc.wire import DecodeError

    with pytest.raises(DecodeError, match="ICRC"):
        decode(cut)


@pytest.mark.parametrize(
    "kwargs,key",
    [(dict(data=64), "dscp.data"), (dict(retx=4), "dscp.retx"), (dict(control=-1), "dscp.control"),
     (dict(trimmed=True), "dscp.trimmed")],
)
def test_dscp_table_rejects_bad_values(kwargs, key):
    with pytest.raises(ConfigError) as info:
        DscpTable(**kwargs)
    assert info.value.key == key


def test_dscp_table_from_dict_names_unknown_keys():
    with pytest.raises(ConfigError, match="dscp.bulk"):
        DscpTable.from_dict({"bulk": 3})
    t = DscpTable.from_dict({"data": 10})
    assert t.class_of(10).name == "DATA" and t.class_of(5).name == "UNKNOWN" and t.trimmable(8)
    assert not t.trimmable(t.control)


def test_the_dscp_class_array_is_built_once_per_table_and_cannot_be_changed(monkeypatch):
    """decode() and trimming read ``table.classes`` on every packet: it used to be rebuilt each
    time (~20 us per packet); the table is frozen, so it is built once and shared read-only."""
    from mrc.wire.samples import mrc_packets, net_row

    table = DscpTable(data=10, retx=11, control=48, trimmed=20, trimmed_lasthop=21, no_trim=0)
    classes = table.classes
    assert classes is table.classes and classes[20] == DscpClass.TRIMMED and classes[4] == DscpClass.UNKNOWN
    with pytest.raises(ValueError, match="read-only"):
        classes[4] = DscpClass.DATA
    _, p, payload = mrc_packets(EvMode.STEV, dscp=table)[4]
    data = encode(p, net_row(EvMode.STEV), payload)
    built = []
    monkeypatch.setattr(DscpTable, "dscp_of", lambda self, cls: built.append(cls))
    for _ in range(3):
        q, _, _ = decode(data, dscp=table)
        assert q["trim"] == Trim.NONE
    assert built == []  # nothing rebuilt
    assert DscpTable(data=10, retx=11, control=48, trimmed=20, trimmed_lasthop=21, no_trim=0) == table  # still a value
