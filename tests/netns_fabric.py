"""A namespace fabric for the tests that need root: can it be made here, and a fixture that builds one.

Every fabric has a prefix unique to the test module's process and is removed
even when a test fails.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from mrc.fabric import netns


def can_netns(probe_prefix: str = "mrcprobe-") -> str | None:
    """None if namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if shutil.which("ip") is None:
        return "needs iproute2's `ip`"
    probe = f"{probe_prefix}{os.getpid() % 100000}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None if r.returncode == 0 else f"network namespaces not permitted: {r.stderr.strip()}"


def tiny_fabric(prefix: str):
    """Generator for a module-scoped fixture: ``mrc-2plane-tiny`` up under `prefix`, down afterwards."""
    reason = can_netns()
    if reason:
        pytest.skip(reason)
    try:
        yield netns.up("mrc-2plane-tiny", prefix=prefix)
    finally:
        netns.down(prefix)
        assert netns.namespaces(prefix) == []
