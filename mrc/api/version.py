"""API versions as OCP ``mrc_api_ver.h`` / ``mrc_ctl_api_ver.h`` encode them, and what this library supports.

A version is one 32-bit number: major in bits 31..24, minor in 23..16, sub-minor in 15..0
(`api_ver`). ``MRC_API_VER_LATEST`` (255.255.65535) asks for the newest version the library has.
The application API (`mrc.api`, ``mrc.h``) and the controller API (`mrc.ctl`, ``mrc_ctl.h``) are
versioned independently, each with a vendor version beside it; this library implements 1.0.1 of
both (the headers' current versions) and still accepts contexts that ask for anything down to
0.0.0 (the headers' last supported version), with the same behaviour: the 1.0.1 additions
(``mrc_query_device_ex``, the EV event's ``state``) are simply there.
"""
from __future__ import annotations

from dataclasses import dataclass

from mrc.errors import EINVAL

MAJOR_OFFSET, MINOR_OFFSET, SUBMINOR_OFFSET = 24, 16, 0


def api_ver(major: int, minor: int, sub_minor: int) -> int:
    """``MRC_API_VER(major, minor, sub_minor)`` (and ``MRC_CTL_API_VER``, the same encoding)."""
    for name, value, bits in (("major", major, 8), ("minor", minor, 8), ("sub_minor", sub_minor, 16)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << bits:
            raise EINVAL(f"api_ver: {name} = {value!r} must be an integer in [0, {(1 << bits) - 1}]")
    return (major << MAJOR_OFFSET) | (minor << MINOR_OFFSET) | (sub_minor << SUBMINOR_OFFSET)


def ver_str(version: int) -> str:
    """"1.0.1" for api_ver(1, 0, 1)."""
    return f"{version >> MAJOR_OFFSET & 0xFF}.{version >> MINOR_OFFSET & 0xFF}.{version & 0xFFFF}"


MRC_API_VER_LATEST = api_ver(0xFF, 0xFF, 0xFFFF)
MRC_API_CURRENT_VERSION = api_ver(1, 0, 1)
MRC_API_LAST_SUPPORTED_VERSION = api_ver(0, 0, 0)
MRC_VENDOR_API_CURRENT_VERSION = api_ver(1, 0, 0)
MRC_VENDOR_API_LAST_SUPPORTED_VERSION = api_ver(0, 0, 0)

MRC_CTL_API_VER_LATEST = MRC_API_VER_LATEST
MRC_CTL_API_CURRENT_VERSION = api_ver(1, 0, 1)
MRC_CTL_API_LAST_SUPPORTED_VERSION = api_ver(0, 0, 0)
MRC_CTL_VENDOR_API_CURRENT_VERSION = api_ver(1, 0, 0)
MRC_CTL_VENDOR_API_LAST_SUPPORTED_VERSION = api_ver(0, 0, 0)


@dataclass(frozen=True)
class VersionInfo:
    """What ``mrc_query_version`` / ``mrc_ctl_query_version`` return: the current and oldest supported API
    versions, and the current and oldest supported vendor API versions (each an `api_ver` number)."""

    current_version: int
    last_supported_version: int
    vendor_version: int
    last_supported_vendor_version: int

    def __str__(self) -> str:
        return (f"API {ver_str(self.current_version)} (oldest {ver_str(self.last_supported_version)}), vendor API "
                f"{ver_str(self.vendor_version)} (oldest {ver_str(self.last_supported_vendor_version)})")


def query_version() -> VersionInfo:
    """``mrc_query_version``: the application API versions this library supports (callable before any context)."""
    return VersionInfo(MRC_API_CURRENT_VERSION, MRC_API_LAST_SUPPORTED_VERSION, MRC_VENDOR_API_CURRENT_VERSION,
                       MRC_VENDOR_API_LAST_SUPPORTED_VERSION)


def query_ctl_version() -> VersionInfo:
    """``mrc_ctl_query_version``: the controller API versions (versioned apart from the application API)."""
    return VersionInfo(MRC_CTL_API_CURRENT_VERSION, MRC_CTL_API_LAST_SUPPORTED_VERSION,
                       MRC_CTL_VENDOR_API_CURRENT_VERSION, MRC_CTL_VENDOR_API_LAST_SUPPORTED_VERSION)


def resolve(used: int | None, current: int, oldest: int, what: str) -> int:
    """The version a context runs at when the application says it uses `used`: 0 / None lets the library
    choose (the newest), LATEST means the newest; anything else must lie in [oldest, current] (EINVAL)."""
    if used is None or used == 0 or used == MRC_API_VER_LATEST:
        return current
    if not isinstance(used, int) or isinstance(used, bool) or not 0 <= used < 1 << 32:
        raise EINVAL(f"{what} = {used!r} must be a 32-bit api_ver() number")
    if not oldest <= used <= current:
        raise EINVAL(f"{what} = {ver_str(used)}: this library supports {ver_str(oldest)} to {ver_str(current)}")
    return used
