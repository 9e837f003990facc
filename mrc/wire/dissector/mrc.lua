-- Wireshark dissector for MRC (OCP Multipath Reliable Connection 1.0): BTH and the MRC headers after it.
--
-- Part of the mrc-transport Python package (mrc/wire/dissector/mrc.lua). Load it with
--   wireshark -X lua_script:mrc.lua        or        tshark -X lua_script:mrc.lua -r file.pcap -O mrc
-- or copy it into your personal Wireshark plugins folder (`mrc pcap dissector` prints its path).
--
-- Wireshark's own InfiniBand dissector decodes UDP 4791 / BTH but shows MRC opcodes (0xC6-0xDE)
-- as "Unknown" and the BTH bits rtx / ts as reserved. This script takes UDP port 4791 over: a
-- packet with an MRC opcode gets one "MRC" tree (BTH with the MRC flag bits, every MRC extension
-- header: METH, TSETH, RETH, ImmDt, AETH, SETH + CC_STATE, NETH, PETH, ERTH, EETH; the payload; the
-- ICRC, or none on a trimmed packet), any other opcode (RoCEv2 RC, CNP) goes to Wireshark's
-- InfiniBand dissector as before. Layouts and their sources: docs/wire.md of the project; they
-- match mrc/wire/headers.py.

local mrc = Proto("mrc", "MRC (Multipath Reliable Connection)")

local OPCODES = {
    [0xC6] = "MRC_WRITE_FIRST", [0xC7] = "MRC_WRITE_MIDDLE", [0xC8] = "MRC_WRITE_LAST",
    [0xC9] = "MRC_WRITE_LAST_IMM", [0xCA] = "MRC_WRITE_ONLY", [0xCB] = "MRC_WRITE_ONLY_IMM",
    [0xD1] = "MRC_ACKNOWLEDGE", [0xD8] = "MRC_ENDPOINT_REQUEST", [0xD9] = "MRC_ENDPOINT_RESPONSE",
    [0xDC] = "MRC_RELIABILITY_SACK", [0xDD] = "MRC_RELIABILITY_NACK", [0xDE] = "MRC_RELIABILITY_PROBE",
}
local NACK_REASONS = {
    [0x01] = "TRIMMED", [0x02] = "TRIMMED_LASTHOP", [0x06] = "NO_BITMAP", [0x07] = "NO_PKT_BUFFER",
    [0x0A] = "NO_RESOURCE", [0x0B] = "PSN_OOR_WINDOW", [0x19] = "UNEXP_EVENT",
}
local M_VALUES = { [0] = "NONE", [1] = "SKIP_ONCE", [2] = "ALWAYS_SKIP" }
local EP_OPS = { [0] = "PORT_STATUS_UPDATE", [1] = "EV_PROBE" }

local f = {}
local function add(name, field) f[name] = field end

add("opcode", ProtoField.uint8("mrc.opcode", "Opcode", base.HEX, OPCODES))
add("se", ProtoField.uint8("mrc.bth.se", "Solicited event (se)", base.DEC, nil, 0x80))
add("mig", ProtoField.uint8("mrc.bth.m", "Migration request (m)", base.DEC, nil, 0x40))
add("padcnt", ProtoField.uint8("mrc.bth.padcnt", "Pad count", base.DEC, nil, 0x30))
add("tver", ProtoField.uint8("mrc.bth.tver", "Transport header version", base.DEC, nil, 0x0F))
add("pkey", ProtoField.uint16("mrc.bth.p_key", "Partition key", base.HEX))
add("fecn", ProtoField.uint8("mrc.bth.fecn", "FECN (resv8a bit 7)", base.DEC, nil, 0x80))
add("becn", ProtoField.uint8("mrc.bth.becn", "BECN (resv8a bit 6)", base.DEC, nil, 0x40))
add("dqpn", ProtoField.uint24("mrc.bth.destqp", "Destination QP", base.HEX))
add("ackreq", ProtoField.uint8("mrc.bth.ackreq", "AckReq", base.DEC, nil, 0x80))
add("r", ProtoField.uint8("mrc.bth.r", "R", base.DEC, nil, 0x40))
add("rtx", ProtoField.uint8("mrc.bth.rtx", "Retransmission (rtx)", base.DEC, nil, 0x20))
add("ts", ProtoField.uint8("mrc.bth.ts", "TSETH present (ts)", base.DEC, nil, 0x10))
add("psn", ProtoField.uint24("mrc.bth.psn", "Packet sequence number", base.DEC))
add("meth_rqmsn", ProtoField.uint16("mrc.meth.rqmsn", "RQMSN", base.DEC))
add("meth_msn", ProtoField.uint16("mrc.meth.msn", "MSN", base.DEC))
add("tseth_ts", ProtoField.uint16("mrc.tseth.tx_timestamp", "Tx timestamp", base.DEC))
add("tseth_tsr", ProtoField.uint16("mrc.tseth.tsr", "TSR", base.DEC, nil, 0x8000))
add("tseth_ftype", ProtoField.uint16("mrc.tseth.ftype", "Format type", base.DEC, nil, 0x000F))
add("reth_va", ProtoField.uint64("mrc.reth.va", "Virtual address", base.HEX))
add("reth_rkey", ProtoField.uint32("mrc.reth.rkey", "R_Key", base.HEX))
add("reth_len", ProtoField.uint32("mrc.reth.dma_len", "DMA length", base.DEC))
add("imm", ProtoField.uint32("mrc.immdt.imm", "Immediate data", base.HEX))
add("aeth_syn", ProtoField.uint8("mrc.aeth.syndrome", "Syndrome", base.HEX))
add("aeth_msn", ProtoField.uint24("mrc.aeth.msn", "MSN", base.DEC))
-- prologue shared by SETH / NETH / PETH
add("type", ProtoField.uint16("mrc.ext.type", "Type", base.DEC, nil, 0xF000))
add("next", ProtoField.uint16("mrc.ext.next", "Next", base.DEC, nil, 0x0F80))
add("m", ProtoField.uint16("mrc.ext.m", "M", base.DEC, M_VALUES, 0x0060))
add("pr", ProtoField.uint16("mrc.ext.pr", "Probe response (pr)", base.DEC, nil, 0x0008))
add("entropy", ProtoField.uint32("mrc.ext.entropy", "Entropy (reflected EV)", base.HEX))
add("spdcid", ProtoField.uint16("mrc.ext.spdcid", "SPDCID", base.HEX))
add("dpdcid", ProtoField.uint16("mrc.ext.dpdcid", "DPDCID", base.HEX))
add("cc_type", ProtoField.uint8("mrc.ext.cc_type", "CC type", base.DEC, nil, 0xF0))
add("cc_flags", ProtoField.uint8("mrc.ext.cc_flags", "CC flags", base.HEX, nil, 0x0F))
add("vendor", ProtoField.uint8("mrc.ext.vendor", "Vendor", base.HEX))
add("tx_timestamp", ProtoField.uint16("mrc.ext.tx_timestamp", "Tx timestamp", base.DEC))
add("tsr", ProtoField.uint16("mrc.ext.tsr", "TSR", base.DEC, nil, 0x8000))
add("svc_units", ProtoField.uint8("mrc.ext.svc_time", "Service time (x64 ns)", base.DEC))
add("ftype", ProtoField.uint16("mrc.ext.ftype", "Format type", base.DEC, nil, 0x000F))
-- SETH
add("ack_psn_offset", ProtoField.int16("mrc.seth.ack_psn_offset", "ACK PSN offset", base.DEC))
add("cack_psn", ProtoField.uint24("mrc.seth.cack_psn", "Cumulative ACK PSN", base.DEC))
add("mpr", ProtoField.uint8("mrc.seth.mpr", "MPR (x128 PSNs)", base.DEC))
add("sack_offset", ProtoField.int16("mrc.seth.sack_offset", "SACK offset", base.DEC))
add("sack_bitmap", ProtoField.uint64("mrc.seth.sack_bitmap", "SACK bitmap", base.HEX))
-- CC_STATE
add("cc_ts", ProtoField.uint16("mrc.cc_state.tx_timestamp", "Reflected tx timestamp", base.DEC))
add("ooo_count", ProtoField.uint16("mrc.cc_state.ooo_count", "Out-of-order count", base.DEC, nil, 0x7FFF))
add("r_c", ProtoField.uint8("mrc.cc_state.r_c", "R_C", base.DEC, nil, 0x80))
add("rcv_cwnd_pen", ProtoField.uint8("mrc.cc_state.rcv_cwnd_pen", "Receiver cwnd penalty", base.DEC, nil, 0x7F))
add("rcvd_bytes", ProtoField.uint24("mrc.cc_state.rcvd_bytes", "Received bytes", base.DEC))
-- NETH
add("nack_reason", ProtoField.uint8("mrc.neth.nack_reason", "NACK reason", base.HEX, NACK_REASONS))
add("nack_psn", ProtoField.uint24("mrc.neth.nack_psn", "NACK PSN", base.DEC))
-- PETH
add("probe_id", ProtoField.uint16("mrc.peth.probe_id", "Probe id", base.DEC))
-- ERTH / EETH
add("ep_op", ProtoField.uint8("mrc.ep.op", "Operation", base.DEC, EP_OPS, 0xC0))
add("req_id", ProtoField.uint16("mrc.ep.req_id", "Request id", base.DEC))
add("port_status_mask", ProtoField.uint32("mrc.ep.port_status_mask", "Port status mask", base.HEX))
add("svc_time", ProtoField.uint32("mrc.eeth.svc_time", "Service time (ns)", base.DEC))
add("payload_len", ProtoField.uint32("mrc.payload_len", "Payload length", base.DEC))
add("icrc", ProtoField.uint32("mrc.icrc", "ICRC", base.HEX))
add("trimmed", ProtoField.bool("mrc.trimmed", "Trimmed (DSCP TRIMMED or TRIMMED_LASTHOP: no ICRC)"))

-- DSCP code points of trimmed packets (mrc.wire.dscp.DEFAULT_DSCP; a scenario's [switch.dscp] may differ)
mrc.prefs.dscp_trimmed = Pref.uint("DSCP TRIMMED", 12, "DSCP a switch marks a trimmed packet with")
mrc.prefs.dscp_trimmed_lasthop = Pref.uint("DSCP TRIMMED_LASTHOP", 16,
                                           "DSCP a last-hop switch marks a trimmed packet with")

local list = {}
for _, v in pairs(f) do list[#list + 1] = v end
mrc.fields = list

local dscp6_field = Field.new("ipv6.tclass.dscp")
local dscp4_field = Field.new("ip.dsfield.dscp")

local function prologue(t, r)
    t:add(f.type, r(0, 2)); t:add(f.next, r(0, 2)); t:add(f.m, r(0, 2)); t:add(f.pr, r(0, 2))
end

local function tsword(t, r)
    t:add(f.tsr, r); t:add(f.ftype, r)
end

-- returns the offset after the headers, or nil if the packet is too short
local function dissect_after_bth(tvb, tree, off, opcode, ts, limit)
    local function need(n, name)
        if off + n > limit then
            tree:add_expert_info(PI_MALFORMED, PI_ERROR, name .. " truncated")
            return false
        end
        return true
    end
    if opcode >= 0xC6 and opcode <= 0xCB then
        if not need(4, "METH") then return nil end
        local t = tree:add(tvb(off, 4), "METH")
        t:add(f.meth_rqmsn, tvb(off, 2)); t:add(f.meth_msn, tvb(off + 2, 2)); off = off + 4
        if ts == 1 then
            if not need(4, "TSETH") then return nil end
            t = tree:add(tvb(off, 4), "TSETH")
            t:add(f.tseth_ts, tvb(off, 2)); t:add(f.tseth_tsr, tvb(off + 2, 2)); t:add(f.tseth_ftype, tvb(off + 2, 2))
            off = off + 4
        end
        if not need(16, "RETH") then return nil end
        t = tree:add(tvb(off, 16), "RETH")
        t:add(f.reth_va, tvb(off, 8)); t:add(f.reth_rkey, tvb(off + 8, 4)); t:add(f.reth_len, tvb(off + 12, 4))
        off = off + 16
        if opcode == 0xC9 or opcode == 0xCB then
            if not need(4, "ImmDt") then return nil end
            tree:add(tvb(off, 4), "ImmDt"):add(f.imm, tvb(off, 4)); off = off + 4
        end
    elseif opcode == 0xD1 then
        if not need(4, "AETH") then return nil end
        local t = tree:add(tvb(off, 4), "AETH")
        t:add(f.aeth_syn, tvb(off, 1)); t:add(f.aeth_msn, tvb(off + 1, 3)); off = off + 4
    elseif opcode == 0xDC then
        if not need(36, "SETH + CC_STATE") then return nil end
        local r = tvb(off, 28)
        local t = tree:add(r, "SETH")
        prologue(t, r)
        t:add(f.ack_psn_offset, r(2, 2)); t:add(f.entropy, r(4, 4)); t:add(f.spdcid, r(8, 2)); t:add(f.dpdcid, r(10, 2))
        t:add(f.svc_units, r(12, 1)); t:add(f.cack_psn, r(13, 3)); t:add(f.cc_type, r(16, 1)); t:add(f.cc_flags, r(16, 1)); t:add(f.mpr, r(17, 1))
        t:add(f.sack_offset, r(18, 2)); t:add(f.sack_bitmap, r(20, 8))
        r = tvb(off + 28, 8)
        t = tree:add(r, "CC_STATE")
        t:add(f.cc_ts, r(0, 2)); t:add(f.ooo_count, r(2, 2)); t:add(f.r_c, r(4, 1)); t:add(f.rcv_cwnd_pen, r(4, 1))
        t:add(f.rcvd_bytes, r(5, 3))
        off = off + 36
    elseif opcode == 0xDD then
        if not need(20, "NETH") then return nil end
        local r = tvb(off, 20)
        local t = tree:add(r, "NETH")
        prologue(t, r)
        t:add(f.nack_reason, r(2, 1)); t:add(f.vendor, r(3, 1)); t:add(f.entropy, r(4, 4)); t:add(f.spdcid, r(8, 2))
        t:add(f.dpdcid, r(10, 2)); t:add(f.svc_units, r(12, 1)); t:add(f.nack_psn, r(13, 3)); t:add(f.cc_type, r(16, 1)); t:add(f.cc_flags, r(16, 1))
        t:add(f.tx_timestamp, r(18, 2))
        off = off + 20
    elseif opcode == 0xDE then
        if not need(16, "PETH") then return nil end
        local r = tvb(off, 16)
        local t = tree:add(r, "PETH")
        prologue(t, r)
        t:add(f.vendor, r(3, 1)); t:add(f.probe_id, r(4, 2)); t:add(f.spdcid, r(8, 2)); t:add(f.dpdcid, r(10, 2))
        t:add(f.tx_timestamp, r(12, 2)); tsword(t, r(14, 2))
        off = off + 16
    elseif opcode == 0xD8 or opcode == 0xD9 then
        local n = (opcode == 0xD8) and 16 or 36
        local name = (opcode == 0xD8) and "ERTH" or "EETH"
        if not need(n, name) then return nil end
        local r = tvb(off, n)
        local t = tree:add(r, name)
        t:add(f.ep_op, r(0, 1)); t:add(f.vendor, r(1, 1)); t:add(f.req_id, r(2, 2)); t:add(f.port_status_mask, r(4, 4))
        if opcode == 0xD9 then t:add(f.svc_time, r(8, 4)) end
        t:add(f.tx_timestamp, r(12, 2)); tsword(t, r(14, 2))
        off = off + n
    end
    return off
end

-- the DSCP of the IP header right before UDP (an SRv6 packet's inner header; a trimmed packet has it
-- re-marked in every header)
local function last_dscp()
    local v6, v4 = { dscp6_field() }, { dscp4_field() }
    if #v6 > 0 then return v6[#v6]() end
    if #v4 > 0 then return v4[#v4]() end
    return nil
end

-- UDP port 4791's dissector before this script (Wireshark's InfiniBand): it gets every packet that is not MRC
local udp_port = DissectorTable.get("udp.port")
local infiniband = udp_port:get_dissector(4791)

-- The datagram is claimed even when a dissector further up throws: the InfiniBand dissector offers the
-- payload of RC SEND packets to a QP other than 0 / 1 (the management QPs) to the RPC-over-RDMA
-- heuristic, which reports other payloads as malformed by throwing. Uncaught, that exception becomes a
-- Lua error, the heuristic below counts as declined, and UDP dissects the packet a second time by its
-- port: two BTHs in one packet.
local function not_mrc(tvb, pinfo, tree)
    if infiniband ~= nil then pcall(infiniband.call, infiniband, tvb, pinfo, tree) end
    return tvb:len()
end

function mrc.dissector(tvb, pinfo, tree)
    local limit = tvb:len()
    if limit < 12 then return not_mrc(tvb, pinfo, tree) end
    local opcode = tvb(0, 1):uint()
    if OPCODES[opcode] == nil then return not_mrc(tvb, pinfo, tree) end
    pinfo.cols.protocol = "MRC"
    local t = tree:add(mrc, tvb(0, limit), "MRC " .. OPCODES[opcode])
    local b = t:add(tvb(0, 12), "BTH")
    b:add(f.opcode, tvb(0, 1))
    local r1 = tvb(1, 1)
    b:add(f.se, r1); b:add(f.mig, r1); b:add(f.padcnt, r1); b:add(f.tver, r1)
    b:add(f.pkey, tvb(2, 2))
    b:add(f.fecn, tvb(4, 1)); b:add(f.becn, tvb(4, 1))
    b:add(f.dqpn, tvb(5, 3))
    local flags = tvb(8, 1)
    b:add(f.ackreq, flags); b:add(f.r, flags); b:add(f.rtx, flags); b:add(f.ts, flags)
    b:add(f.psn, tvb(9, 3))
    local ts = bit.band(bit.rshift(flags:uint(), 4), 1)
    local after = dissect_after_bth(tvb, t, 12, opcode, ts, limit)
    local dscp = last_dscp()
    local trimmed = dscp ~= nil and (dscp == mrc.prefs.dscp_trimmed or dscp == mrc.prefs.dscp_trimmed_lasthop)
    if trimmed then t:add(f.trimmed, true) end
    if after ~= nil then
        -- a trimmed packet has lost its tail: what follows the headers is payload, and no ICRC
        local tail = trimmed and 0 or 4
        if limit - after >= tail then
            t:add(f.payload_len, tvb(after, limit - after - tail), limit - after - tail)
            if tail == 4 then t:add(f.icrc, tvb(limit - 4, 4)) end
            -- ACK, endpoint request / response, SACK, NACK and probe carry no payload (docs/wire.md,
            -- "Payload"); the project's decoders refuse such a packet, the dissector shows it and flags it
            if opcode >= 0xD1 and limit - after > tail then
                t:add_expert_info(PI_MALFORMED, PI_ERROR, "payload of " .. (limit - after - tail) .. " bytes on a "
                    .. OPCODES[opcode] .. " packet, which carries none")
            end
        else
            t:add_expert_info(PI_MALFORMED, PI_ERROR, "ICRC truncated")
        end
    end
    pinfo.cols.info = string.format("%s QP=0x%06x PSN=%d%s", OPCODES[opcode], tvb(5, 3):uint(), tvb(9, 3):uint(),
                                    trimmed and " [trimmed]" or "")
    return limit
end

udp_port:add(4791, mrc)

-- Wireshark's UDP dissector tries the lower port first, so an MRC packet whose EV puts a
-- well-known port (53, 123, ...) in the UDP source port is shown as that protocol. With
-- `-o udp.try_heuristic_first:TRUE` this heuristic hands every datagram to UDP port 4791 to
-- this dissector first (and through it, a packet that is not MRC to InfiniBand).
local function rocev2_by_destination_port(tvb, pinfo, tree)
    if pinfo.dst_port ~= 4791 then return false end
    mrc.dissector(tvb, pinfo, tree)
    return true
end
mrc:register_heuristic("udp", rocev2_by_destination_port)
