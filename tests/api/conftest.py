"""The two-device fixtures (`tests/twodevices.py`) for the library API tests."""
from tests.twodevices import make_two_devices, two_devices  # noqa: F401  (pytest fixtures)
