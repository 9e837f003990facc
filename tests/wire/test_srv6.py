"""uSID carriers and the shift a switch performs (RFC 9800 NEXT-C-SID, F3216; RFC 8754 SRH)."""
from __future__ import annotations

import ipaddress

import pytest

from mrc.errors import UsageError
from mrc.wire.ev import ev_from_wire, ev_to_wire
from mrc.wire.constants import EvMode
from mrc.wire.srv6 import UsidAction, carrier, parse_carrier, usid_step

BLOCK = 0xFCBBBB00


def test_carrier_layout_is_block_then_usids_then_zeros():
    # RFC 9800 figure style: fcbb:bb00 block, then 0100, 0200, 0300
    assert str(carrier(BLOCK, [0x100, 0x200, 0x300])) == "fcbb:bb00:100:200:300::"
    assert parse_carrier("fcbb:bb00:100:200:300::") == (BLOCK, [0x100, 0x200, 0x300])
    six = carrier(BLOCK, [1, 2, 3, 4, 5, 6])
    assert int(six) & 0xFFFF == 6


@pytest.mark.parametrize("usids", [[], [0], [1, 2, 3, 4, 5, 6, 7], [0x10000]])
def test_bad_carriers_are_refused(usids):
    with pytest.raises(UsageError):
        carrier(BLOCK, usids)


def test_a_path_of_two_containers_walks_to_its_end():
    first = carrier(BLOCK, [0x101, 0x202, 0x103])
    second = carrier(BLOCK, [0x107, 0xFE0])
    dst, segleft = first, 1
    seen = []
    for usid in [0x101, 0x202, 0x103, 0x107, 0xFE0]:
        # a switch that is not on the path leaves the packet alone
        assert usid_step(dst, BLOCK, 0x999, [second], segleft)[0] == UsidAction.NOT_MINE
        action, dst, segleft = usid_step(dst, BLOCK, usid, [second], segleft)
        seen.append(action)
    assert seen == [UsidAction.SHIFTED, UsidAction.SHIFTED, UsidAction.NEXT_CONTAINER, UsidAction.SHIFTED,
                    UsidAction.END]
    assert segleft == 0


def test_shift_moves_the_argument_and_zero_fills():
    action, dst, _ = usid_step("fcbb:bb00:1:2:3:4:5:6", BLOCK, 1)
    assert action == UsidAction.SHIFTED and dst == ipaddress.IPv6Address("fcbb:bb00:2:3:4:5:6:0")


@pytest.mark.parametrize("mode", [EvMode.STEV, EvMode.SRV6])
def test_stev_splits_the_ev_over_port_and_flow_label(mode):
    sport, fl = ev_to_wire(0x12345678, mode, flow_label=0xA0000)
    assert (sport, fl) == (0x1234, 0xA5678)
    assert ev_from_wire(sport, fl, mode) == 0x12345678


def test_udp_mode_carries_sixteen_bits():
    assert ev_to_wire(0xBEEF, EvMode.UDP, 0x12345) == (0xBEEF, 0x12345)
    with pytest.raises(UsageError):
        ev_to_wire(0x10000, EvMode.UDP)
