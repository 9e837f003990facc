"""Library calls check their arguments' types and ranges at the call and name the argument and its value
(issue 34, item 3): each of these used to crash deep inside (a TypeError, an OverflowError, a numba
TypingError, a 256 GiB allocation) or was silently accepted."""
from __future__ import annotations

import numpy as np
import pytest

from mrc.api import Device
from mrc.errors import EINVAL
from mrc.wire.records import PKT

from tests.twodevices import RTR


def test_setup_ev_profile_count_must_be_an_integer():
    with pytest.raises(EINVAL, match="setup_ev_profile: count = '8' must be an integer in \\[1, 256\\]"):
        Device().ctl.setup_ev_profile(count="8")


def test_setup_cc_profile_base_rtt_beyond_uint32_is_refused():
    with pytest.raises(EINVAL, match="base_rtt_ns = 1000000000000000000000000000000 must be an integer in "
                                     "\\[0, 4294967295\\]"):
        Device().ctl.setup_cc_profile(base_rtt_ns=10**30)


def test_reg_mr_of_an_object_array_is_refused():
    with pytest.raises(EINVAL, match="reg_mr: buf is a numpy array of object"):
        Device().reg_mr(np.array([1, "a", None], dtype=object))


def test_receive_of_something_that_is_not_a_packet_record():
    with pytest.raises(EINVAL, match="receive: pkt must be a PKT record .* got dict"):
        Device().receive({"dqpn": 2}, b"", now=0)
    with pytest.raises(EINVAL, match="receive: payload must be bytes, got str"):
        Device().receive(np.zeros(1, dtype=PKT)[0], "abc", now=0)


@pytest.mark.parametrize("now", [2**70, -1, 1.5, None])
def test_handle_timer_takes_a_time_in_range(now):
    with pytest.raises(EINVAL, match=f"handle_timer: now = {now!r} must be an integer time in ps in \\[0, 2\\^62\\)"):
        Device().handle_timer(now)


def test_set_port_state_port_must_be_an_integer():
    with pytest.raises(EINVAL, match="set_port_state: port = 1.0 must be an integer in \\[1, 2\\]"):
        Device().set_port_state(1.0, True)


def test_set_port_state_up_must_be_a_bool():
    dev = Device()
    with pytest.raises(EINVAL, match="set_port_state: up = 'no' must be a bool"):
        dev.set_port_state(1, "no")
    assert dev.ctl.local_ports == 0b11  # nothing changed


def test_a_device_whose_tables_would_not_fit_is_refused_with_the_estimate():
    with pytest.raises(EINVAL, match="max_qp = 65536 x max_ev = 65536 .* need [0-9]+\\.[0-9] GiB of core tables, "
                                     "more than max_table_bytes = 2.0 GiB"):
        Device(max_qp=65536, max_ev=65536, max_mpr=255)
    Device(max_qp=4, max_ev=64, max_mpr=255)  # each argument at its bound is fine when the product fits


@pytest.mark.parametrize("qpn, what", [(2, "MRC endpoint QP"), (0, "IB SMI"), (1, "IB GSI")])
def test_connect_to_a_reserved_qpn_is_refused(two_devices, qpn, what):
    qp = two_devices.a.create_qp()
    with pytest.raises(EINVAL, match=f"dest_qp_num = {qpn} is QP {qpn} \\(.*{what}.*\\), not a peer's QP"):
        qp.connect(dest_qp_num=qpn, remote_address="B")
    assert qp.state == "RESET"
    qp.modify("INIT", ev_profile_id=1, cc_profile_id=1)
    with pytest.raises(EINVAL, match="not a peer's QP"):
        qp.modify("RTR", dest_qp_num=qpn, remote_address="B", **RTR)


def test_other_driving_calls_check_now_and_masks():
    dev = Device()
    with pytest.raises(EINVAL, match="packets_to_send: now = -5"):
        dev.packets_to_send(-5)
    with pytest.raises(EINVAL, match="port_mask = 4 must be a bit mask of the 2 ports"):
        dev.packets_to_send(0, port_mask=4)
    with pytest.raises(EINVAL, match="receive: now = 'x'"):
        dev.receive(np.zeros(1, dtype=PKT)[0], b"", now="x")
