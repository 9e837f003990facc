"""Every example under examples/ runs as a user would run it (as ``__main__``) and prints what
docs/library.md says it prints; the page shows the examples' code verbatim, so it cannot rot."""
from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# example -> patterns its output must match, in order (each a regular expression searched line by line)
EXPECTED = {
    "write_over_lossy_net.py": [
        r"^WorkCompletion\(wr_id=1, status=SUCCESS, opcode=RDMA_WRITE, byte_len=1048576 B, qp_num=0x[0-9a-f]+\)$",
        r"^verified at \d+\.\d us; [1-9]\d* packets retransmitted$",
        r"^WorkCompletion\(wr_id=2, status=SUCCESS, opcode=RDMA_WRITE, byte_len=4096 B",
        r"^WorkCompletion\(wr_id=7, status=SUCCESS, opcode=RECV_RDMA_WITH_IMM, byte_len=4096 B, qp_num=0x[0-9a-f]+, "
        r"imm_data=0xc0ffee\)$",
        r"^SimNetStatistics\(now_us=[\d.]+, sent=\d+, data_sent=\d+, delivered=\d+, dropped=[1-9]\d*, link_down=0",
    ],
    "ev_events.py": [
        r"^EvProfileAttr\(profile_state=<ProfileState.ONLINE: 2>, .*ev_mode=<EvProfileMode.AUTO: 1>, .*ev_count=8, "
        r"ev_min_active=2, ev_event_mask=3",
        r"^WorkCompletion\(wr_id=1, status=SUCCESS, opcode=RDMA_WRITE, byte_len=163840 B, qp_num=0x[0-9a-f]+\) at [\d.]+ us$",
        r"^\[EvEvent\(CtlEv\(0x[0-9a-f]{8}, port=2\), state=ASSUMED_BAD, profile_id=1, drop_count=0 event\(s\), "
        r"qp=0x[0-9a-f]+, value=0x[0-9a-f]+, losses=[1-9]\d* packet\(s\)\)\]$",
        r"^EvEvent\(CtlEv\(0x[0-9a-f]{8}, port=2\), state=GOOD, profile_id=1, drop_count=0 event\(s\), .*\) at [\d.]+ us$",
        r"^\[EpResponse\(req_id=1, port=2, rtt_ns=4000",
    ],
    "udp_with_trio.py": [
        r"^4 MiB verified over UDP from 127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+ to 127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+$",
        r"^EndpointStatistics\(rx_datagrams=\d+, .*rx_garbage=0, .*tx_errors=0",
    ],
    "packets.py": [
        r"^opcode MRC_WRITE_ONLY dqpn 0x123 psn 1000 ev 0xc0000042 va 0x7f0000001000 rkey 0xbeef "
        r"payload b'sixteen bytes\.\.!'$",
        r"^###\[ BTH \]###$",
        r"^  dqpn\s+= 0x123$",
        r"^###\[ RETH \]###$",
        r"^refused: UDP\.chksum: checksum is wrong$",
    ],
    "sans_io_asyncio.py": [
        r"^WorkCompletion\(wr_id=1, status=SUCCESS, opcode=RDMA_WRITE, byte_len=65536 B, qp_num=0x[0-9a-f]+\)$",
        r"^\{'tx_pkts': \d+, 'rtx_pkts': \d+, 'rtx_spurious': \d+, 'sacks_rx': [1-9]\d*\}$",
    ],
    "harness_results.py": [
        r"^QP 0: 1 write\(s\) completed \(0 failed\), 1048576 B in [\d.]+ us = [\d.]+ Gb/s; 256 data packets, "
        r"[1-9]\d* retransmitted",
        r"^Completion\(qp=0, wr_id=1, status='SUCCESS', byte_len=1048576, time_us=[\d.]+, imm_data=None\)$",
        r"^32 message\(s\) done \(0 failed\), 33554432 B in [\d.]+ us = [\d.]+ Gb/s; 8192 data packets, "
        r"[1-9]\d* retransmitted; network: [1-9]\d* dropped, [1-9]\d* trimmed, 0 CE-marked$",
        r"^\{'end_ps': \d+, 'data': 8192, ",
    ],
}


def test_every_example_has_expectations():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_and_prints_what_the_page_says(name, capsys):
    # in this process, as ``python examples/NAME.py`` would run it (``__main__``): the compiled core is
    # loaded once for all of them instead of once per interpreter
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    out = capsys.readouterr().out
    lines = out.splitlines()
    k = 0
    for pattern in EXPECTED[name]:
        while k < len(lines) and not re.search(pattern, lines[k]):
            k += 1
        assert k < len(lines), f"{name}: no line matching {pattern!r} (in order) in:\n{out}"
        k += 1


def test_the_library_page_shows_each_example_verbatim():
    page = (ROOT / "docs" / "library.md").read_text()
    blocks = dict(re.findall(r"```python\n# (examples/[\w.]+)\n(.*?)```", page, flags=re.S))
    assert sorted(blocks) == sorted(f"examples/{n}" for n in EXPECTED), "every example appears once on the page"
    for path, code in blocks.items():
        assert code == (ROOT / path).read_text(), f"docs/library.md shows an old copy of {path}: run python docs/sync_examples.py"
