"""`mrc pcap samples FILE`, `mrc pcap decode FILE [--json]` and `mrc pcap dissector` (the Lua dissector's path)."""
from __future__ import annotations

import argparse
import ipaddress
import json
import sys

from mrc.cli import plural, subcommands


def register(parser: argparse.ArgumentParser) -> None:
    sub = subcommands(parser)
    s = sub.add_parser(
        "samples",
        help="write one packet of every MRC kind in every EV mode (and trimmed ones) to a pcap",
        description="Write one packet of every MRC kind (data, ACK, SACK, NACK of every reason, probe, "
        "endpoint request/response, CNP) in every EV mode (STEV, UDP, SRv6, SRv6 with SRH), plus trimmed "
        "data packets, to a pcap file.",
    )
    s.add_argument("file", help="pcap file to write")
    s.add_argument("--trim-size", type=int, default=256, help="bytes a trimmed packet keeps (default 256)")
    s.set_defaults(func=_samples)
    d = sub.add_parser(
        "decode",
        help="print the MRC fields of every packet in a pcap",
        description="Print every packet's MRC fields. A malformed packet is reported with its index and "
        "the decoding error; decoding goes on with the next. Exit status 1 if any packet was malformed.",
    )
    d.add_argument("file", help="pcapng or pcap file to read (Ethernet or raw IP link type)")
    d.add_argument("--json", action="store_true", help="one JSON object per packet (JSON Lines)")
    d.add_argument("--ev-mode", choices=["stev", "udp"], default="stev",
                   help="how to read the EV of plain IPv6 packets (default stev; IPv4 is always udp, "
                   "IPv6-in-IPv6 always srv6)")
    d.add_argument("--no-verify-icrc", action="store_true", help="do not check the ICRC")
    d.add_argument("--any-port", action="store_true", help="decode any UDP destination port, not only 4791")
    d.set_defaults(func=_decode)
    w = sub.add_parser(
        "dissector",
        help="print the path of the Wireshark Lua dissector shipped in the package",
        description="Print the path of the MRC Lua dissector installed with the package, for "
        "`tshark -X lua_script:$(mrc pcap dissector) -o udp.try_heuristic_first:TRUE -r FILE -O mrc` "
        "(or copy it into your Wireshark plugins folder). docs/wire.md, \"Wireshark\".",
    )
    w.set_defaults(func=_dissector)


def dissector_path():
    """The Lua dissector shipped in the package (a file on disk for an ordinary install)."""
    from importlib import resources

    return resources.files("mrc.wire") / "dissector" / "mrc.lua"


def _dissector(args) -> int:
    print(dissector_path())
    return 0


def _input_file(path: str, what: str = "FILE") -> None:
    """Refuse, in one line naming it, an input file that does not exist or cannot be read."""
    import os
    import pathlib

    from mrc.errors import ConfigError

    p = pathlib.Path(path)
    if not p.exists():
        raise ConfigError(what, path, "no such file")
    if p.is_dir():
        raise ConfigError(what, path, "a directory, not a capture file")
    if not os.access(p, os.R_OK):
        raise ConfigError(what, path, "not readable (permission denied)")


def _samples(args) -> int:
    from mrc.errors import ConfigError
    from mrc.wire.pcap import write_pcap
    from mrc.wire.samples import samples

    if args.trim_size < 1:
        raise ConfigError("--trim-size", args.trim_size, "must be a positive number of bytes")
    items = samples(trim_size=args.trim_size)
    try:
        write_pcap(args.file, [data for _, data in items])
    except OSError as exc:
        raise ConfigError("FILE", args.file, f"cannot write it: {exc.strerror or exc}") from None
    kinds = len({label.split(" ", 1)[1] for label, _ in items})
    print(f"wrote {len(items)} packets ({kinds} kinds x EV modes STEV, UDP, SRv6, SRv6+SRH) to {args.file}")
    return 0


def _addr(a) -> str:
    b = bytes(a)
    if b[:12] == b"\0" * 10 + b"\xff\xff":
        return str(ipaddress.IPv4Address(b[12:]))
    return str(ipaddress.IPv6Address(b))


def packet_dict(pkt, net, payload: bytes, dscp=None) -> dict:
    """Everything decoded about one packet, as plain JSON-able values (headers present only)."""
    from mrc.wire.constants import DscpClass, EvMode, Trim, opcode_name
    from mrc.wire.dscp import DEFAULT_DSCP
    from mrc.wire.layout import FIELDS, headers_after_bth

    dscp = dscp or DEFAULT_DSCP
    mode = EvMode(int(net["ev_mode"]))
    d: dict = {
        "ev_mode": mode.name,
        "ip_version": int(net["ip_version"]),
        "src": _addr(net["src"]),
        "dst": _addr(net["dst"]),
        "dport": int(net["dport"]),
        "flow_label": int(net["flow_label"]),
        "hop_limit": int(net["hop_limit"]),
        "dscp": int(pkt["dscp"]),
        "dscp_class": dscp.class_of(int(pkt["dscp"])).name if dscp.class_of(int(pkt["dscp"])) != DscpClass.UNKNOWN else None,
        "ecn": int(pkt["ecn"]),
        "ev": int(pkt["ev"]),
        "trim": Trim(int(pkt["trim"])).name,
        "opcode_name": opcode_name(int(pkt["opcode"])),
    }
    if mode == EvMode.SRV6:
        from mrc.wire.srv6 import parse_carrier

        block, usids = parse_carrier(bytes(net["outer_dst"]))
        d["outer"] = {
            "src": _addr(net["outer_src"]), "dst": _addr(net["outer_dst"]),
            "flow_label": int(net["outer_flow_label"]), "hop_limit": int(net["outer_hop_limit"]),
            "usid_block": block, "usids": usids,
        }
        if net["srh"]:
            last = int(net["srh_lastentry"])
            d["srh"] = {
                "segleft": int(net["srh_segleft"]), "lastentry": last, "tag": int(net["srh_tag"]),
                "segments": [_addr(net["srh_segments"][s]) for s in range(last + 1)],
            }
    for name in ["BTH"] + headers_after_bth(int(pkt["opcode"]), int(pkt["ts"])):
        d[name] = {f: int(pkt[f]) for f in FIELDS[name]}
    d["payload_len"] = int(pkt["payload_len"])
    return d


def _line(index: int, d: dict) -> str:
    ev = f"{d['ev']:#06x}" if d["ev_mode"] == "UDP" else f"{d['ev']:#010x}"
    cls = d["dscp_class"] or "?"
    head = (f"#{index:<3} {d['opcode_name']:<24} {d['ev_mode']:<4} {d['src']} -> {d['dst']}  ev={ev} "
            f"dscp={d['dscp']}({cls}) ecn={d['ecn']}")
    if d["trim"] != "NONE":
        head += f" {d['trim']}"
    lines = [head]
    if "outer" in d:
        o = d["outer"]
        lines.append(f"      outer  {o['src']} -> {o['dst']}  uSIDs {' '.join(f'{u:04x}' for u in o['usids'])}")
    if "srh" in d:
        s = d["srh"]
        lines.append(f"      SRH    segleft={s['segleft']} segments={', '.join(s['segments'])}")
    for name, fields in d.items():
        if isinstance(fields, dict) and name not in ("outer", "srh"):
            shown = " ".join(f"{k}={_fmt(k, v)}" for k, v in fields.items() if k != "opcode")
            lines.append(f"      {name:<6} {shown}")
    lines.append(f"      payload {d['payload_len']} B")
    return "\n".join(lines)


def _fmt(key: str, v: int) -> str:
    from mrc.wire.constants import EndpointOp, NackReason, SackM

    names = {"nack_reason": NackReason, "m": SackM, "ep_op": EndpointOp}
    if key in names:
        try:
            return f"{v}({names[key](v).name})"
        except ValueError:
            return str(v)
    if key in ("va", "rkey", "dqpn", "entropy", "sack_bitmap", "port_status_mask", "pkey", "imm", "swap_add",
               "compare", "orig_data", "spdcid", "dpdcid"):
        return hex(v)
    return str(v)


def _records(it, path: str):
    """The file's records; a file that is no capture at all (its header unreadable) is a one-line error naming it."""
    from mrc.errors import ConfigError
    from mrc.wire.errors import DecodeError

    while True:
        try:
            item = next(it)
        except StopIteration:
            return
        except DecodeError as exc:
            raise ConfigError("FILE", path, str(exc)) from None
        yield item


def _decode(args) -> int:
    from mrc.wire.codec import decode
    from mrc.wire.constants import EvMode
    from mrc.wire.errors import DecodeError
    from mrc.wire.pcapng import read_packets

    _input_file(args.file)
    mode = EvMode.UDP if args.ev_mode == "udp" else EvMode.STEV
    bad = total = 0
    out = sys.stdout
    for index, t, data, iface in _records(read_packets(args.file), args.file):
        total += 1
        try:
            if isinstance(data, DecodeError):
                raise data
            pkt, net, payload = decode(data, ev_mode=mode, verify_icrc=not args.no_verify_icrc,
                                       dport=0 if args.any_port else 4791)
        except DecodeError as exc:
            bad += 1
            if args.json:
                out.write(json.dumps({"index": index, "time_ns": t, "error": str(exc), "header": exc.header,
                                      "field": exc.field}) + "\n")
            else:
                out.write(f"#{index:<3} malformed: {exc}\n")
            continue
        d = packet_dict(pkt, net, payload)
        where = {"interface": iface} if iface is not None else {}
        if args.json:
            out.write(json.dumps({"index": index, "time_ns": t, **where, **d}) + "\n")
        else:
            first, _, rest = _line(index, d).partition("\n")
            if iface is not None:
                first += f"  [{iface} at {t / 1000:.3f} us]" if t is not None else f"  [{iface}, no time]"
            out.write(first + "\n" + rest + "\n")
    if not args.json:
        out.write(f"{plural(total, 'packet')}, {total - bad:,} decoded, {bad:,} malformed\n")
    return 1 if bad else 0
