"""Adapters by name: what ``--adapter`` accepts.

- ``reference``: the project's implementation, in process;
- ``mutant:NAME``: the reference with one deliberate bug (`mrc.conformance.mutants`);
- ``wire`` / ``wire:ADAPTER``: an out-of-process peer (`python -m mrc.conformance.peer --adapter ADAPTER`)
  driven over UDP + JSON lines (`mrc.conformance.wire_adapter`);
- ``wire@HOST:PORT``: a peer that is already running (any implementation of the protocol);
- ``package.module:Class``: your own `Adapter` subclass, made with no arguments.
"""
from __future__ import annotations

import importlib

from mrc.errors import UsageError

from .adapter import Adapter


def load_adapter(spec: str, *, peer_command: list[str] | None = None) -> Adapter:
    spec = spec.strip()
    if spec == "reference":
        from .reference import ReferenceAdapter

        return ReferenceAdapter()
    if spec.startswith("mutant:"):
        from .mutants import mutant_adapter

        return mutant_adapter(spec.split(":", 1)[1])
    if spec == "wire" or spec.startswith("wire:") or spec.startswith("wire@"):
        from .wire_adapter import WireAdapter

        if spec.startswith("wire@"):
            host, _, port = spec[5:].rpartition(":")
            if not host or not port.isdigit():
                raise UsageError(f"--adapter {spec!r}: give wire@HOST:PORT")
            return WireAdapter.connect(host, int(port))
        inner = spec.split(":", 1)[1] if ":" in spec else "reference"
        load_adapter(inner)  # a bad inner name fails here, not in the peer process
        return WireAdapter.spawn(peer_command, adapter=inner)
    if ":" in spec:
        module, _, cls = spec.partition(":")
        try:
            obj = getattr(importlib.import_module(module), cls)
        except (ImportError, AttributeError) as e:
            raise UsageError(f"--adapter {spec!r}: cannot load {cls} from {module} ({e})") from None
        adapter = obj()
        if not isinstance(adapter, Adapter):
            raise UsageError(f"--adapter {spec!r}: {cls} is not a mrc.conformance.adapter.Adapter")
        return adapter
    raise UsageError(f"--adapter {spec!r}: one of reference, mutant:NAME, wire, wire:ADAPTER, wire@HOST:PORT, "
                     f"module:Class")
