"""The two-device fixtures (`tests/twodevices.py`), for the core tests that drive a QP through `mrc.api`."""
from tests.twodevices import make_two_devices, two_devices  # noqa: F401  (pytest fixtures)
