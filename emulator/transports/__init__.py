"""Transports the emulator runs, selected by ``[transport] name``.

Each transport is a compiled module (`roce` with `dcqcn`; `mrcqp` with
`mrcctl` for the MRC family) plus a Python setup module (`roce_setup`;
`mrc_setup`, one `Variant` per MRC transport: ``mrc``, ``mrc-1ev``,
``spray``, ``reps``, ``ar``) exposing ``NAME``, ``DESCRIPTION``,
``parse(table, topo) -> params``, ``switch_defaults(params)``,
``trim_headers(params)`` (bytes of the largest header stack of a packet it marks trimmable, 0 for
none: a trimmed packet keeps at least that), ``check_switch(params, switch)`` and ``setup(topo, flows, params, switch,
rng, switch_latency_ps) -> (EP rows, Transports fields, ideal FCT per flow)``,
``memory(topo, flows, params) -> bytes`` (what ``setup`` will allocate, counted without
allocating: `emulator.memory`), and optionally ``collect(T) -> dict`` (what the results keep of its state).
`dispatch` is the compiled interface the engine calls (docs/emulator.md,
"Adding a transport").
"""
from __future__ import annotations

import numpy as np

from mrc.emulator.transports import mrc_setup, roce, roce_setup
from mrc.emulator.transports.dispatch import Transports
from mrc.errors import ConfigError

REGISTRY = {m.NAME: m for m in (roce_setup, *mrc_setup.VARIANTS)}


def get(name: str):
    if name not in REGISTRY:
        raise ConfigError("transport.name", name, f"unknown transport; known: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def empty() -> dict:
    """Empty tables of every transport: the fields of `Transports` a run does not use."""
    return {"roce": np.zeros(0, roce.ROCE), "roce_p": np.zeros(1, roce.RP), **mrc_setup.empty()}


def bundle(fields: dict) -> Transports:
    return Transports(**{**empty(), **fields})


__all__ = ["REGISTRY", "Transports", "bundle", "empty", "get"]
