"""Craft an MRC packet with the scapy layers, encode and decode it with the fast codec, and
dissect what comes back (docs/library.md, section 4)."""
from scapy.layers.inet6 import IPv6, UDP
from scapy.packet import Raw

from mrc.wire import DecodeError, Opcode, decode, encode
from mrc.wire.layers import BTH, METH, RETH, TSETH, build, parse

# an RDMA Write Only packet, MRC style: BTH, then METH / TSETH / RETH, the payload; ICRC computed
crafted = (IPv6(src="2001:db8::1", dst="2001:db8::2", fl=0x42)
           / UDP(sport=0xC000, dport=4791)
           / BTH(opcode=Opcode.MRC_WRITE_ONLY, dqpn=0x123, psn=1000, ackreq=1, ts=1)
           / METH(rqmsn=7, msn=3) / TSETH(tx_timestamp=0x1234)
           / RETH(va=0x7F0000001000, rkey=0xBEEF, dma_len=16) / Raw(b"sixteen bytes..!"))
wire = bytes(crafted)

pkt, net, payload = parse(IPv6(wire))              # scapy's dissection, as a PKT row and a NET row
assert encode(pkt, net, payload) == wire           # the fast codec writes the same bytes
pkt2, net2, payload2 = decode(wire)                # ... and reads them back, checking the ICRC
print(f"opcode {Opcode(int(pkt2['opcode'])).name} dqpn {int(pkt2['dqpn']):#x} psn {int(pkt2['psn'])} "
      f"ev {int(pkt2['ev']):#x} va {int(pkt2['va']):#x} rkey {int(pkt2['rkey']):#x} payload {payload2!r}")
build(pkt2, net2, payload2)[BTH].show()             # the scapy layers dissect the codec's record

damaged = wire[:-5] + bytes([wire[-5] ^ 1]) + wire[-4:]   # one payload bit flipped
try:
    decode(damaged)
except DecodeError as e:
    print("refused:", e)
