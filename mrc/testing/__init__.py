"""Tools for testing and studying the core without sockets.

- `mrc.testing.harness`: two QPs of the core on a scripted in-process network (`Pair`, `Network`, path faults,
  invariant checks after every step);
- `mrc.testing.memnet`: a compiled many-QP network for the core alone (benchmarks and long property runs);
- `mrc.testing.simnet`: an in-memory multi-plane network of `mrc.api.Device`s (loss, reordering, no sockets).

`mrc.harness`, `mrc.memnet` and `mrc.simnet` remain as aliases of these modules.
"""
