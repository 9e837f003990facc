"""The library's packages: one job each, public import paths kept, dependencies one way."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import mrc

ROOT = pathlib.Path(mrc.__file__).parent


def test_the_root_holds_only_the_project_wide_modules_and_the_aliases():
    mods = sorted(p.stem for p in ROOT.glob("*.py"))
    assert mods == ["__init__", "__main__", "_jit", "_version", "cli", "errors", "harness", "memnet", "simnet",
                    "units"]
    pkgs = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and any(p.glob("*.py")))
    assert pkgs == ["api", "core", "ctl", "io", "testing", "wire"]


def test_old_import_paths_are_the_new_modules():
    import mrc.harness
    import mrc.memnet
    import mrc.simnet
    import mrc.testing.harness
    import mrc.testing.memnet
    import mrc.testing.simnet
    assert mrc.harness is mrc.testing.harness
    assert mrc.memnet is mrc.testing.memnet
    assert mrc.simnet is mrc.testing.simnet
    from mrc.harness import Pair
    assert Pair is mrc.testing.harness.Pair


def test_mrc_api_exports_the_device_modules_public_names():
    import mrc.api
    import mrc.api.device
    assert mrc.api.__all__ == mrc.api.device.__all__
    for name in mrc.api.__all__:
        assert getattr(mrc.api, name) is getattr(mrc.api.device, name)


def test_the_controller_does_not_load_the_device():
    """`mrc.api.types` <- `mrc.ctl` <- `mrc.api.device`: importing the controller leaves the device unloaded, so
    there is no import cycle to hold together with lazy imports."""
    code = "import sys, mrc.ctl; print('mrc.api.device' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
