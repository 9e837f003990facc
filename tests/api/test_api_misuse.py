"""Misuse of the API fails at the call with a `UsageError` naming the parameter or the handle."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.api import Device, QpCap
from mrc.errors import UsageError
from mrc.wire.codec import decode_batch


@pytest.mark.parametrize("kw, name", [
    (dict(mtu=0), "mtu"), (dict(mtu="4096"), "mtu"), (dict(ports=0), "ports"), (dict(ports=2.0), "ports"),
    (dict(max_qp=0), "max_qp"), (dict(max_wr=-1), "max_wr"), (dict(n_mr=None), "n_mr"), (dict(max_mpr=256), "max_mpr"),
    (dict(port_rate_bps=0), "port_rate_bps"), (dict(seed=-1), "seed"), (dict(seed="1"), "seed"), (dict(name=3), "name"),
])
def test_device_arguments_are_checked_at_the_call(kw, name):
    with pytest.raises(UsageError, match=name):
        Device(**kw)


def test_create_qp_checks_its_arguments():
    dev, other = Device(seed=1), Device(seed=2)
    cq = dev.create_cq(8)
    for bad, name in (("cq", "send_cq"), (other.create_cq(8), "send_cq")):
        with pytest.raises(UsageError, match=name):
            dev.create_qp(bad)
    with pytest.raises(UsageError, match="recv_cq"):
        dev.create_qp(cq, recv_cq=3)
    with pytest.raises(UsageError, match="cap"):
        dev.create_qp(cq, cap={"max_send_wr": 4})
    with pytest.raises(UsageError, match="cqe"):
        dev.create_cq("8")
    assert dev.create_qp(cq, cap=QpCap(4, 4)).state == "RESET"
    assert dev.create_qp(None).send_cq.device is dev  # None: a CQ is made for it (documented), not a late failure


def test_a_destroyed_handle_raises_naming_the_qp_and_never_touches_the_qp_that_reuses_its_row():
    dev = Device(seed=1)
    cq = dev.create_cq(8)
    old = dev.create_qp(cq)
    num = old.qp_num
    dev.destroy_qp(old)
    new = dev.create_qp(cq)
    for use in (lambda: old.state, lambda: old.modify("RESET"), lambda: old.statistics(), lambda: old.query(),
                lambda: old.post_recv(1), lambda: dev.destroy_qp(old), lambda: old.qp_num):
        with pytest.raises(UsageError, match=f"QP {num}.*destroyed"):
            use()
    assert new.state == "RESET" and new.qp_num != num and dev.peer_address(new.qp_num) is None
    with pytest.raises(UsageError, match="not a QP of device"):
        Device(seed=3).destroy_qp(new)


def test_reg_mr_refuses_strided_views_and_non_buffers():
    dev = Device(seed=1)
    arr = np.zeros(64, dtype=np.uint8)
    for bad in (arr[::2], np.zeros((8, 8), dtype=np.uint8)[:, 1]):
        with pytest.raises(UsageError, match="not contiguous"):
            dev.reg_mr(bad)
    with pytest.raises(UsageError, match="buffer"):
        dev.reg_mr(12)
    with pytest.raises(UsageError, match="empty"):
        dev.reg_mr(bytearray())
    mr = dev.reg_mr(arr[8:40])  # a contiguous slice is the caller's own memory
    assert mr.addr == arr.ctypes.data + 8 and mr.length == 32


def test_decode_batch_refuses_wrong_dtypes_and_fractional_offsets():
    buf = np.zeros(128, dtype=np.uint8)
    with pytest.raises(TypeError, match="buf"):
        decode_batch(buf.astype(np.float64), np.array([0, 64]))
    with pytest.raises(TypeError, match="offsets"):
        decode_batch(buf, np.array([0.0, 63.5]))
