"""Device and Controller talk through `mrc.ctl.link` only: both implement their side, neither reaches past it."""
from __future__ import annotations

import re
from pathlib import Path

from mrc.api import Device
from mrc.ctl import Controller
from mrc.ctl.link import ControllerSide, DeviceSide, members

MRC = Path(__file__).resolve().parents[2] / "mrc"


def test_each_side_implements_its_interface():
    assert members(ControllerSide) and members(DeviceSide)
    for name in members(ControllerSide):
        assert callable(getattr(Controller, name)), name
    for name in members(DeviceSide):
        assert callable(getattr(Device, name)), name


def test_the_device_uses_only_the_controller_side():
    used = set()
    for f in (MRC / "api").glob("*.py"):
        used |= set(re.findall(r"\.ctl\.(_\w+)", f.read_text()))
    assert used and used <= members(ControllerSide), used - members(ControllerSide)


def test_the_controller_uses_only_the_device_side():
    used = set()
    for f in (MRC / "ctl").glob("*.py"):
        used |= set(re.findall(r"\b(?:self\.device|dev|device)\.(_\w+)", f.read_text()))
    assert used and used <= members(DeviceSide), used - members(DeviceSide)


def test_a_port_going_down_reaches_the_application_through_the_interface():
    dev = Device(seed=3, ports=2)
    dev.set_port_state(2, up=False, now=0)
    ev = dev.get_async_event()
    assert ev is not None and ev.kind == "PORT_ERR" and ev.port == 2


def test_no_import_cycle_between_the_api_and_the_controller():
    # the controller builds on the API's plain types (mrc.api.types), never on mrc.api itself; mrc.api imports
    # the controller at module level (no import hidden in a function to dodge a cycle)
    for f in (MRC / "ctl").glob("*.py"):
        assert not re.search(r"^\s*(from mrc\.api import|import mrc\.api\b)", f.read_text(), re.M), f.name
    assert re.search(r"^from mrc\.ctl import Controller$", (MRC / "api" / "device.py").read_text(), re.M)
    assert not re.search(r"^\s+from mrc\.ctl", (MRC / "api" / "device.py").read_text(), re.M)
