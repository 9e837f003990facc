"""`Context` (``mrc_context``) and `QpHint` (``mrc_qp_hint``).

A context is the parent of the MRC objects an application creates (``mrc_create_context``): it records
the API versions the application uses, creates completion channels, CQs, QP hints and QPs on its
device, tracks them, and destroys whatever is left when it is destroyed (``mrc_destroy_context``,
or the end of a ``with`` block). `Device` is the ``ibv_context`` beside it: `Device.create_cq` and
`Device.create_qp` remain, for programs that need no context.
"""
from __future__ import annotations

from mrc.api import corefeatures
from mrc.api.types import (
    MRC_MAX_VENDOR_CFG_SIZE, CompChannel, ContextAttr, DeviceAttr, QpHintAttr, QpHintAttrMask, QpHintInitAttr,
    QpInitAttr,
)
from mrc.api.version import (
    MRC_API_CURRENT_VERSION, MRC_API_LAST_SUPPORTED_VERSION, MRC_VENDOR_API_CURRENT_VERSION,
    MRC_VENDOR_API_LAST_SUPPORTED_VERSION, resolve, ver_str,
)
from mrc.errors import EBUSY, EINVAL, ENOMEM

MAX_QP_HINT = 64  # hints one device holds (mrc_device_attr.qp_attr.max_qp_hint)


class QpHint:
    """A QP hint (``mrc_qp_hint``, `Context.create_qp_hint`): the traffic pattern a set of QPs expects
    (`QpHintAttr`). A QP takes it at RESET -> INIT (``qp_hint``); what the project does with it: a QP
    that shares its bottleneck with others (``num_qps_per_peer`` x ``num_send_peers`` QPs sending from
    this NIC, or ``num_remote_recv_peers`` QPs sending to its target) starts its congestion window at
    that share instead of the whole (`mrc.api.corefeatures.hint_attrs`; the core's ``hint_share``),
    read when the QP goes RTS. `vendor_cfg` has no keys here and must be empty."""

    def __init__(self, device, init_attr: QpHintInitAttr):
        if not isinstance(init_attr, QpHintInitAttr):
            raise EINVAL(f"create_qp_hint: init_attr = {init_attr!r} must be a QpHintInitAttr")
        self.device = device
        self.attr = QpHintAttr()
        self._set(init_attr.attr, int(sum(QpHintAttrMask)), "create_qp_hint")
        self.destroyed = False

    def __repr__(self) -> str:
        a = self.attr
        return (f"<QpHint on {self.device.name!r}: {a.num_qps_per_peer} QP(s) per peer, {a.num_send_peers} send "
                f"peer(s), {a.num_remote_recv_peers} remote receiver(s); used by {len(self._users())} QP(s)>")

    def _set(self, attr: QpHintAttr, mask: int, what: str) -> None:
        if not isinstance(attr, QpHintAttr):
            raise EINVAL(f"{what}: attr = {attr!r} must be a QpHintAttr")
        if not isinstance(mask, int) or isinstance(mask, bool) or mask < 0 or mask & ~int(sum(QpHintAttrMask)):
            raise EINVAL(f"{what}: attr_mask = {mask!r} must be QpHintAttrMask bits")
        new = {}
        for bit, key in ((QpHintAttrMask.NUM_QPS_PER_PEER, "num_qps_per_peer"),
                         (QpHintAttrMask.NUM_SEND_PEERS, "num_send_peers"),
                         (QpHintAttrMask.NUM_REMOTE_RECV_PEERS, "num_remote_recv_peers")):
            if mask & bit:
                v = getattr(attr, key)
                if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << 31:
                    raise EINVAL(f"{what}: {key} = {v!r} must be a non-negative int (0: not given)")
                new[key] = v
        if mask & QpHintAttrMask.VENDOR_CFG:
            cfg = attr.vendor_cfg or b""
            if not isinstance(cfg, (bytes, bytearray)) or len(cfg) > MRC_MAX_VENDOR_CFG_SIZE:
                raise EINVAL(f"{what}: vendor_cfg must be at most {MRC_MAX_VENDOR_CFG_SIZE} bytes")
            if bytes(cfg).rstrip(b"\0"):
                raise EINVAL(f"{what}: vendor_cfg {bytes(cfg)!r}: no vendor keys are defined for QP hints")
            new["vendor_cfg"] = bytes(cfg)
        for k, v in new.items():
            setattr(self.attr, k, v)

    def _users(self) -> list:
        return [qp for qp in self.device._live_qps() if qp.qp_hint is self]

    def _check_use(self) -> None:
        if self.destroyed:
            raise EINVAL("qp_hint: it was destroyed")

    def _core_attrs(self) -> dict:
        a = self.attr
        return corefeatures.hint_attrs(a.num_qps_per_peer, a.num_send_peers, a.num_remote_recv_peers)

    def query(self, attr_mask: int = int(sum(QpHintAttrMask))) -> QpHintAttr:
        """``mrc_query_qp_hint``: the attributes the mask names (the others 0 / empty)."""
        self._check_use()
        if not isinstance(attr_mask, int) or attr_mask < 0 or attr_mask & ~int(sum(QpHintAttrMask)):
            raise EINVAL(f"query_qp_hint: attr_mask = {attr_mask!r} must be QpHintAttrMask bits")
        out = QpHintAttr()
        for bit, key in ((QpHintAttrMask.NUM_QPS_PER_PEER, "num_qps_per_peer"),
                         (QpHintAttrMask.NUM_SEND_PEERS, "num_send_peers"),
                         (QpHintAttrMask.NUM_REMOTE_RECV_PEERS, "num_remote_recv_peers"),
                         (QpHintAttrMask.VENDOR_CFG, "vendor_cfg")):
            if attr_mask & bit:
                setattr(out, key, getattr(self.attr, key))
        return out

    def modify(self, attr: QpHintAttr, attr_mask: int) -> None:
        """``mrc_modify_qp_hint``: change the attributes the mask names (QPs read the hint when they go RTS)."""
        self._check_use()
        self._set(attr, attr_mask, "modify_qp_hint")

    def destroy(self) -> None:
        """``mrc_destroy_qp_hint``: EBUSY while QPs use it, EINVAL if already destroyed."""
        self._check_use()
        users = self._users()
        if users:
            raise EBUSY(f"destroy_qp_hint: {len(users)} QP(s) use it (QP {users[0].qp_num:#x}, ...)")
        self.destroyed = True
        self.device._hints.discard(self)

    def __enter__(self) -> "QpHint":
        return self

    def __exit__(self, *exc) -> None:
        if not self.destroyed:
            self.destroy()


class Context:
    """An MRC context (``mrc_context``) on a `Device`: see the module text. ``api_version`` and
    ``vendor_api_version`` are the versions in effect (`mrc.api.version`)."""

    def __init__(self, device, attr: ContextAttr | None = None):
        if attr is not None and not isinstance(attr, ContextAttr):
            raise EINVAL(f"create_context: context_attr = {attr!r} must be a ContextAttr or None")
        attr = attr or ContextAttr()
        self.device = device
        self.api_version = resolve(attr.mrc_api_version_used, MRC_API_CURRENT_VERSION, MRC_API_LAST_SUPPORTED_VERSION,
                                   "mrc_api_version_used")
        self.vendor_api_version = resolve(attr.mrc_vendor_api_version_used, MRC_VENDOR_API_CURRENT_VERSION,
                                          MRC_VENDOR_API_LAST_SUPPORTED_VERSION, "mrc_vendor_api_version_used")
        self._objects: list = []
        self.destroyed = False

    def __repr__(self) -> str:
        live = sum(not _gone(o) for o in self._objects)
        return (f"<Context on {self.device.name!r}: API {ver_str(self.api_version)}, vendor API "
                f"{ver_str(self.vendor_api_version)}, {live} object(s)>")

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc) -> None:
        if not self.destroyed:
            self.destroy()

    def _check(self) -> None:
        if self.destroyed:
            raise EINVAL("mrc context: it was destroyed")

    def _track(self, obj):
        self._objects.append(obj)
        return obj

    @property
    def ctl(self):
        """The device's controller (``mrc_ctl.h`` calls take the context; `mrc.ctl.Controller`)."""
        return self.device.ctl

    def query_device(self) -> DeviceAttr:
        """``mrc_query_device_ex`` with this context."""
        self._check()
        return self.device.query_device(context=self)

    def create_comp_channel(self) -> CompChannel:
        """``mrc_create_comp_channel``."""
        self._check()
        return self._track(self.device.create_comp_channel())

    def create_cq(self, cqe: int, cq_context=None, channel: CompChannel | None = None, comp_vector: int = 0):
        """``mrc_create_cq``: a CQ of at least `cqe` entries, its `cq_context`, an optional completion channel."""
        self._check()
        return self._track(self.device.create_cq(cqe, cq_context=cq_context, channel=channel, comp_vector=comp_vector))

    def create_qp_hint(self, init_attr: QpHintInitAttr) -> QpHint:
        """``mrc_create_qp_hint`` (ENOMEM beyond `MAX_QP_HINT` hints on the device)."""
        self._check()
        if len(self.device._hints) >= MAX_QP_HINT:
            raise ENOMEM(f"create_qp_hint: the device holds {MAX_QP_HINT} hints (max_qp_hint)")
        hint = QpHint(self.device, init_attr)
        self.device._hints.add(hint)
        return self._track(hint)

    def create_qp(self, init_attr: QpInitAttr):
        """``mrc_create_qp``: a QP in RESET (`QpInitAttr`: CQs, capacities, context, protocol version)."""
        self._check()
        if not isinstance(init_attr, QpInitAttr):
            raise EINVAL(f"create_qp: init_attr = {init_attr!r} must be a QpInitAttr")
        return self._track(self.device.create_qp(init_attr=init_attr))

    def get_async_event(self, *, block: bool = False, timeout: float | None = None):
        """``mrc_get_async_event`` (`Device.get_async_event`)."""
        self._check()
        return self.device.get_async_event(block=block, timeout=timeout)

    def ack_async_event(self, event) -> None:
        """``mrc_ack_async_event``."""
        self.device.ack_async_event(event)

    def destroy(self) -> None:
        """``mrc_destroy_context``: destroys every object created through it still alive (QPs, hints, CQs,
        channels, in that order; unacknowledged events of those objects are acknowledged first)."""
        self._check()
        dev = self.device
        for e in list(dev._unacked_async()):
            if any(e.qp is o or e.cq is o for o in self._objects):
                dev.ack_async_event(e)
        for kind in ("QueuePair", "QpHint", "CompletionQueue", "CompChannel"):
            for o in self._objects:
                if type(o).__name__ != kind or _gone(o):
                    continue
                if kind == "CompletionQueue" and o._unacked_events:
                    o.ack_events(o._unacked_events)
                o.destroy()
        self._objects = []
        self.destroyed = True


def _gone(obj) -> bool:
    if type(obj).__name__ == "QueuePair":
        return obj.device._qps[obj._index] is not obj
    return bool(getattr(obj, "destroyed", False))


def create_context(device, context_attr: ContextAttr | None = None) -> Context:
    """``mrc_create_context``: a context on `device` (an ``ibv_context``: a `Device`) using the API versions in
    `context_attr` (None: the library chooses, the newest)."""
    if not hasattr(device, "ctl") or not hasattr(device, "T"):
        raise EINVAL(f"create_context: {device!r} is not a Device")
    return Context(device, context_attr)
