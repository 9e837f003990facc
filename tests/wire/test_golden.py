"""Golden vectors: hand-checked bytes of every header, field by field (layouts: docs/wire.md).

Each vector sets distinctive values, then the expected hex is written out by
hand with a comment per group of bytes. push_<hdr> must write exactly these
bytes and pull_<hdr> must read the same values back.
"""
from __future__ import annotations

import numpy as np
import pytest

from mrc.wire import headers as H
from mrc.wire.records import PKT

VECTORS = [
    (
        "bth",
        dict(opcode=0xDC, se=1, mig=0, padcnt=2, tver=0, pkey=0xFFFF, fecn=1, becn=0, dqpn=0x0ABCDE,
             ackreq=1, bth_r=0, rtx=1, ts=1, psn=0x123456),
        "dc"      # opcode 0xDC = MRC_RELIABILITY_SACK
        "a0"      # se=1 (bit7) mig=0 (bit6) padcnt=2 (bits5-4 = 10) tver=0 -> 1010 0000
        "ffff"    # pkey
        "80"      # resv8a: fecn=1 (bit7) becn=0 (bit6), 6 reserved bits
        "0abcde"  # dqpn
        "b0"      # ackreq=1 (bit7) r=0 (bit6) rtx=1 (bit5) ts=1 (bit4) -> 1011 0000
        "123456",  # psn
    ),
    ("meth", dict(rqmsn=0x0102, msn=0xFFFE), "0102" "fffe"),  # rqmsn | msn
    (
        "tseth",
        dict(tx_timestamp=0xBEEF, tsr=1, ftype=1),
        "beef"   # tx_timestamp
        "8001",  # tsr=1 (bit15), 11 reserved bits, ftype=1 (bits3-0)
    ),
    (
        "reth",
        dict(va=0x0011223344556677, rkey=0x8899AABB, dma_len=4096),
        "0011223344556677" "8899aabb" "00001000",  # va | rkey | dma_len
    ),
    ("immdt", dict(imm=0xCAFEF00D), "cafef00d"),
    ("aeth", dict(aeth_syndrome=0x60, aeth_msn=0x000102), "60" "000102"),  # syndrome | msn (24)
    (
        "seth",
        dict(ext_type=0xA, ext_next=0x15, m=2, pr=1, ack_psn_offset=-2, entropy=0x00420007, spdcid=0x1111,
             dpdcid=0x2222, svc_time=0x9C, cack_psn=0x0003E9, cc_type=1, cc_flags=0x5, mpr=8, sack_offset=-64,
             sack_bitmap=0x8000000000000001),
        # type=1010 next=10101 m=10 rsvd=0 pr=1 rsvd=000 -> 1010 1010 1100 1000
        "aac8"
        "fffe"        # ack_psn_offset = -2 (two's complement)
        "00420007"    # entropy (reflected EV)
        "1111" "2222"  # spdcid | dpdcid
        "9c" "0003e9"  # svc_time = 156 x 64 ns (9.984 us; extension, docs/wire.md) | cack_psn = 1001
        "15"          # cc_type=1 (high nibble) cc_flags=5
        "08"          # mpr = 8 (x128 PSNs)
        "ffc0"        # sack_offset = -64
        "8000000000000001",  # sack_bitmap
    ),
    (
        "cc_state",
        dict(tx_timestamp=0x1234, ooo_count=0x7FFF, r_c=1, rcv_cwnd_pen=0x40, rcvd_bytes=0x010000),
        "1234"    # reflected tx_timestamp
        "7fff"    # rsvd=0 (bit15) ooo_count=0x7fff
        "c0"      # r_c=1 (bit7) rcv_cwnd_pen=0x40
        "010000",  # rcvd_bytes
    ),
    (
        "neth",
        dict(ext_type=0, ext_next=0, m=1, pr=0, nack_reason=0x0B, vendor=0x7E, entropy=0xDEADBEEF, spdcid=1,
             dpdcid=2, svc_time=0xFF, nack_psn=0xFFFFFF, cc_type=2, cc_flags=0, tx_timestamp=0x0BAD),
        "0020"        # type=0 next=0 m=01 (bits6-5) -> 0x0020
        "0b"          # nack_reason = PSN_OOR_WINDOW
        "7e"          # vendor
        "deadbeef"    # entropy
        "0001" "0002"  # spdcid | dpdcid
        "ff" "ffffff"  # svc_time = 255 x 64 ns (the largest: 16.32 us) | nack_psn
        "20"          # cc_type=2 cc_flags=0
        "00"          # reserved
        "0bad",       # tx_timestamp (reflected)
    ),
    (
        "peth",
        dict(ext_type=3, ext_next=1, m=0, pr=0, vendor=0x11, probe_id=0x0203, spdcid=0x0A0B, dpdcid=0x0C0D,
             tx_timestamp=0xF00D, tsr=0, ftype=1),
        "3080"        # type=0011 next=00001 m=00 -> 0011 0000 1000 0000
        "00" "11"     # reserved | vendor
        "0203" "0000"  # probe_id | reserved
        "0a0b" "0c0d"  # spdcid | dpdcid
        "f00d" "0001",  # tx_timestamp | tsr=0 rsvd ftype=1
    ),
    (
        "erth",
        dict(ep_op=1, vendor=0x22, req_id=0x0304, port_status_mask=0x000000FD, tx_timestamp=0x0102, tsr=1, ftype=1),
        "40"          # op=01 (bits7-6) rsvd
        "22" "0304"   # vendor | req_id
        "000000fd"    # port_status_mask
        "00000000"    # reserved
        "0102" "8001",  # tx_timestamp | tsr=1 ftype=1
    ),
    (
        "eeth",
        dict(ep_op=0, vendor=0, req_id=0xFFFF, port_status_mask=0xFFFFFFFF, svc_time=1000, tx_timestamp=7, tsr=0, ftype=1),
        "00" "00" "ffff"  # op=0 PORT_STATUS_UPDATE | vendor | req_id
        "ffffffff"        # port_status_mask
        "000003e8"        # svc_time = 1000 ns
        "0007" "0001"     # tx_timestamp | tsr/ftype
        + "00" * 20,      # 20 reserved bytes
    ),
    (
        "atomiceth",
        dict(va=0x1000, rkey=0x42, swap_add=0x0102030405060708, compare=0xFFFFFFFFFFFFFFFF),
        "0000000000001000" "00000042" "0102030405060708" "ffffffffffffffff",
    ),
    ("atomicacketh", dict(orig_data=0x00000000DEADBEEF), "00000000deadbeef"),
    ("cnp", dict(), "00" * 16),
]


@pytest.mark.parametrize("name,fields,hexstr", VECTORS, ids=[v[0] for v in VECTORS])
def test_golden(name, fields, hexstr):
    pkts = np.zeros(1, dtype=PKT)
    for k, v in fields.items():
        pkts[0][k] = v
    expected = bytes.fromhex(hexstr)
    buf = np.full(len(expected) + 4, 0xAA, dtype=np.uint8)
    end = getattr(H, f"push_{name}")(buf, 2, pkts, 0)
    assert end == 2 + len(expected)
    assert buf[2:end].tobytes().hex() == expected.hex()
    assert buf[0] == buf[1] == buf[end] == 0xAA  # nothing written outside the header
    back = np.zeros(1, dtype=PKT)
    assert getattr(H, f"pull_{name}")(buf, 2, end, back, 0) == end
    for k, v in fields.items():
        assert int(back[0][k]) == v, k
    # one byte short: the pull refuses before reading
    assert getattr(H, f"pull_{name}")(buf, 2, end - 1, back, 0) < 0


def test_scapy_layers_match_the_golden_vectors():
    from scapy.packet import raw

    from mrc.wire import layers as L

    classes = {"meth": L.METH, "tseth": L.TSETH, "reth": L.RETH, "immdt": L.ImmDt, "aeth": L.AETH, "seth": L.SETH,
               "cc_state": L.CC_STATE, "neth": L.NETH, "peth": L.PETH, "erth": L.ERTH, "eeth": L.EETH,
               "atomiceth": L.AtomicETH, "atomicacketh": L.AtomicAckETH, "cnp": L.CNP}
    for name, fields, hexstr in VECTORS:
        if name not in classes:
            continue
        cls = classes[name]
        layer = cls()
        names = {v: k for k, v in cls.PKT_NAMES.items()}
        for k, v in fields.items():
            layer.setfieldval(names.get(k, k), v)
        assert raw(layer).hex() == hexstr, name
