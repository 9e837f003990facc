"""`mrc.fabric.netns` errors that need no privilege: not root, bad names."""
from __future__ import annotations

import os

import pytest

from mrc.errors import MRCError
from mrc.fabric import netns

PREFIX = f"mrcfe{os.getpid() % 100000}-"


def test_without_root_the_error_says_so(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for call in (lambda: netns.up("mrc-2plane-tiny", prefix=PREFIX + "nr-"), lambda: netns.down(PREFIX + "nr-")):
        with pytest.raises(netns.NetnsError, match="need root"):
            call()


def test_bad_names_are_refused():
    with pytest.raises(MRCError, match="prefix"):
        netns.up("mrc-2plane-tiny", prefix="bad prefix/")
    with pytest.raises(MRCError, match="mtu"):
        netns.up("mrc-2plane-tiny", prefix=PREFIX + "m-", mtu=100)
