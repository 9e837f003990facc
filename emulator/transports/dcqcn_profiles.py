"""Published DCQCN parameter sets (``[transport] dcqcn_profile``), each value with its source.

A profile fills every ``dcqcn_*`` key (and ``cnp_interval_us``) that the
scenario does not set; values that depend on the link rate are functions of
its Gb/s. Sources:

- ``tuned`` (default): ``connectx`` with the two values that are tied to
  40G-era links re-tuned for 100G and faster, each after a published
  setting: R_AI / R_HAI scaled with the link rate as HPCC's ns-3 does
  (5 / 50 Mb/s per 25 Gb/s: 20 / 200 Mb/s at 100G; the firmware's 5 / 50 Mb/s
  add 0.005 % of a 100G link per step), and the rate-increase timer at the
  paper's T = 55 us (HPCC's ``dcqcn_paper``; the firmware's 300 us is longer
  than a 2 MB message at 100 Gb/s; the Barre paper's DCQCN tuning for
  BlueField-3, its Table 2, sets ``rpg_time_reset`` to 20-100 us). Measured effect on the library
  scenarios: docs/emulator.md ("DCQCN defaults").
- ``connectx`` (RoCE exactly as shipped): the NVIDIA ConnectX-4 and
  later firmware defaults, as ``mlxconfig query`` prints them on ConnectX-5/6
  (``RPG_TIME_RESET 300``, ``RPG_BYTE_RESET 32767``, ``RPG_THRESHOLD 1``,
  ``RPG_AI_RATE 5``, ``RPG_HAI_RATE 50``, ``RPG_GD 11`` (Gd = 2: cut by alpha/2),
  ``RPG_MIN_DEC_FAC 50``, ``RPG_MIN_RATE 1``, ``DCE_TCP_G 1019``,
  ``DCE_TCP_RTT 1``, ``RATE_REDUCE_MONITOR_PERIOD 4``, ``INITIAL_ALPHA_VALUE
  1023``, ``MIN_TIME_BETWEEN_CNPS 4``, ``CLAMP_TGT_RATE False``,
  ``CLAMP_TGT_RATE_AFTER_TIME_INC True``), with the meanings of NVIDIA's
  "DCQCN Parameters" page (DOCA / MLNX_OFED documentation): alpha is
  ``1019/1024 alpha (+ 5/1024 with a CNP)`` every ``DCE_TCP_RTT`` us, so
  g = 5/1024; rates in Mb/s; byte counter in bytes; times in us.
- ``hpcc``: the DCQCN setting of the HPCC ns-3 simulator
  (alibaba-edu/High-Precision-Congestion-Control, ``simulation/run.py``,
  ``--cc dcqcn``; "Mellanox's version of DCQCN" in ``rdma-hw.cc``):
  ``ALPHA_RESUME_INTERVAL 1``, ``RATE_DECREASE_INTERVAL 4``, ``RP_TIMER 300``,
  ``EWMA_GAIN 1/256``, ``FAST_RECOVERY_TIMES 1``, ``CLAMP_TARGET_RATE 0``,
  ``RATE_AI 5 x Gb/s / 25`` and ``RATE_HAI 50 x Gb/s / 25`` Mb/s, ``MIN_RATE
  1000Mb/s``, no byte counter, and a CNP flag on the ACK of every marked
  packet (no CNP interval). Its switches mark with Kmin / Kmax / Pmax =
  100 / 400 KB x Gb/s / 25 and 0.2 (``KMIN_MAP`` etc.; ConWeave's ns-3,
  built on it, uses 100 / 400 KB at 100G, calling the former too large).
- ``paper``: the algorithm as the DCQCN paper states it: the target is set
  to the current rate on every cut, fast recovery for F = 5 events, a byte
  counter of 10 MB, g = 1/256; its timers as HPCC's ``dcqcn_paper`` setting
  has them (alpha 50 us, one cut per 50 us, increase timer 55 us); R_AI and
  R_HAI as ``hpcc``; the CNP interval 50 us (the paper's NP); the paper's
  switches mark with Kmin 5 KB, Kmax 200 KB, Pmax 1 % at 40 Gb/s.
"""
from __future__ import annotations

from mrc.errors import ConfigError

KEYS = ("dcqcn_g", "dcqcn_alpha_us", "dcqcn_dec_us", "dcqcn_inc_us", "dcqcn_f", "dcqcn_bc_bytes",
        "dcqcn_rai_mbps", "dcqcn_rhai_mbps", "dcqcn_min_rate_mbps", "dcqcn_alpha_init", "dcqcn_clamp_tgt_rate",
        "dcqcn_clamp_after_time_inc", "cnp_interval_us")

CONNECTX = {
    "dcqcn_g": 5 / 1024, "dcqcn_alpha_us": 1.0, "dcqcn_dec_us": 4.0, "dcqcn_inc_us": 300.0, "dcqcn_f": 1,
    "dcqcn_bc_bytes": 32767, "dcqcn_rai_mbps": 5.0, "dcqcn_rhai_mbps": 50.0, "dcqcn_min_rate_mbps": 1.0,
    "dcqcn_alpha_init": 1023 / 1024, "dcqcn_clamp_tgt_rate": False, "dcqcn_clamp_after_time_inc": True,
    "cnp_interval_us": 4.0,
}

PROFILES = {
    "tuned": {**CONNECTX, "dcqcn_inc_us": 55.0, "dcqcn_rai_mbps": lambda g: 5.0 * g / 25,
              "dcqcn_rhai_mbps": lambda g: 50.0 * g / 25},
    "connectx": CONNECTX,
    "hpcc": {
        "dcqcn_g": 1 / 256, "dcqcn_alpha_us": 1.0, "dcqcn_dec_us": 4.0, "dcqcn_inc_us": 300.0, "dcqcn_f": 1,
        "dcqcn_bc_bytes": 0, "dcqcn_rai_mbps": lambda g: 5.0 * g / 25, "dcqcn_rhai_mbps": lambda g: 50.0 * g / 25,
        "dcqcn_min_rate_mbps": 1000.0, "dcqcn_alpha_init": 1.0, "dcqcn_clamp_tgt_rate": False,
        "dcqcn_clamp_after_time_inc": True, "cnp_interval_us": 0.0,
    },
    "paper": {
        "dcqcn_g": 1 / 256, "dcqcn_alpha_us": 50.0, "dcqcn_dec_us": 50.0, "dcqcn_inc_us": 55.0, "dcqcn_f": 5,
        "dcqcn_bc_bytes": 10_000_000, "dcqcn_rai_mbps": lambda g: 5.0 * g / 25,
        "dcqcn_rhai_mbps": lambda g: 50.0 * g / 25, "dcqcn_min_rate_mbps": 100.0, "dcqcn_alpha_init": 1.0,
        "dcqcn_clamp_tgt_rate": True, "dcqcn_clamp_after_time_inc": True, "cnp_interval_us": 50.0,
    },
}


def defaults(profile: str, link_gbps: float) -> dict:
    """Every DCQCN key's default under `profile` for a `link_gbps` NIC."""
    if profile not in PROFILES:
        raise ConfigError("transport.dcqcn_profile", profile, f"unknown; known: {', '.join(PROFILES)}")
    return {k: (v(link_gbps) if callable(v) else v) for k, v in PROFILES[profile].items()}
