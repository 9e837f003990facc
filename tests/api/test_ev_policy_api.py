"""The library takes a QP's EV policy by name (`mrc.core.evpolicy`'s registry) and refuses an unknown one."""
from __future__ import annotations

import pytest

from mrc.core import evpolicy


def test_the_library_api_takes_ev_policy_by_name(two_devices):
    from mrc.errors import UsageError

    conn = two_devices.connect(rts={"ev_policy": "oblivious"})
    T = two_devices.a.T
    assert int(T.qp[conn.qa.index]["ev_policy"]) == evpolicy.EVP_OBLIVIOUS
    assert conn.qa.query()["ev_policy"] == evpolicy.EVP_OBLIVIOUS
    with pytest.raises(UsageError, match="ev_policy"):
        conn.qb.modify("RTS", ev_policy="ecmp")
