"""What the protocol core offers the API beyond the base QP: dynamic MPR, responder service time, QP hints.

One place (a seam) where the API asks the core whether a feature is there and how to drive it, so
that `DeviceAttr.cap` advertises exactly what the core does and a QP attribute the core cannot honour
is refused (ENOTSUP) rather than accepted and ignored:

- dynamic MPR (``MRC_DEVICE_CAP_DYNAMIC_MPR``, QP cap ``MRC_QP_CAP_DYNAMIC_MPR``): the core's QP
  attribute ``dynamic_mpr`` and `mrc.core.setup.modify_mpr` (MPR changes on a running QP);
- responder service time (``MRC_DEVICE_CAP_SVC_TIME``, QP cap ``SVC_TIME_DEST_UNSUPPORTED``): the QP
  attributes ``svc_time_report`` (this responder reports its service time) and ``svc_time_peer``
  (RTT samples less the peer's reported time);
- QP hints (``mrc_qp_hint``): `mrc.core.setup.hint_share`, the share of its bottleneck a hinted QP
  starts from (the QP attribute ``hint_share``).
"""
from __future__ import annotations

from mrc.core import setup


def has(attribute: str) -> bool:
    """The core's QPs have this attribute (`mrc.core.setup.QP_DEFAULTS`)."""
    return attribute in setup.QP_DEFAULTS


def dynamic_mpr() -> bool:
    """The core can change a running QP's MPR."""
    return has("dynamic_mpr") and hasattr(setup, "modify_mpr")


def svc_time() -> bool:
    """The core's responders report their service time and its requesters take it off their RTTs."""
    return has("svc_time_report") and has("svc_time_peer")


def qp_hints() -> bool:
    """The core starts a hinted QP at its share of the bottleneck."""
    return has("hint_share") and hasattr(setup, "hint_share")


def hint_attrs(num_qps_per_peer: int, num_send_peers: int, num_remote_recv_peers: int) -> dict:
    """The core QP attributes a QP hint sets ({} when the core has no use for hints)."""
    if not qp_hints():
        return {}
    return {"hint_share": setup.hint_share(num_qps_per_peer, num_send_peers, num_remote_recv_peers)}


def modify_mpr(T, i: int, mpr: int | None, mpr_dest: int | None) -> None:
    """Change a running QP's MPR (`mrc.core.setup.modify_mpr`)."""
    setup.modify_mpr(T, i, mpr=mpr, mpr_dest=mpr_dest)
