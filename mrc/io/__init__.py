"""MRC endpoints over real sockets (trio): the adapter, its transports, and the transfer tool.

    from mrc.io import open_endpoint, UdpEncap, NativeSrv6, Peer

    async with open_endpoint(device, UdpEncap(["127.0.0.1:0", "127.0.0.1:0"])) as ep:
        ...   # connect a QP to a remote Peer, ep.post_write(qp, ...), await ep.wait_completion(cq)

Modules: `endpoint` (the trio adapter: `Endpoint`, `open_endpoint`,
`EndpointStatistics`), `transports` (`UdpEncap`, `NativeSrv6`, `Peer`),
`sockets` (datagram sockets: fast path, fake-net path), `codec` (the wire
codec with reused buffers), `session` (profiles and QPs for a run),
`transfer` (`run_transfer`), `cli` (``mrc io``). See docs/real-network.md.
"""
from mrc.io.endpoint import Endpoint, EndpointStatistics, open_endpoint
from mrc.io.transports import NativeSrv6, Peer, UdpEncap

__all__ = ["Endpoint", "EndpointStatistics", "NativeSrv6", "Peer", "UdpEncap", "open_endpoint"]
