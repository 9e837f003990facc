"""Package list for setuptools: every top-level folder is one import package.

`mrc/` is `mrc`, and `fabric/`, `emulator/`, `conformance/` are mapped to
`mrc.fabric`, `mrc.emulator`, `mrc.conformance` (the mapping itself is in
pyproject.toml, `[tool.setuptools.package-dir]`). Subpackages are found here so
that adding a folder with an `__init__.py` needs no edit anywhere else.
"""
from setuptools import find_packages, setup

FOLDERS = {"mrc": "mrc", "fabric": "mrc.fabric", "emulator": "mrc.emulator", "conformance": "mrc.conformance"}


def _packages():
    found = []
    for folder, name in FOLDERS.items():
        found.append(name)
        found.extend(f"{name}.{sub}" for sub in find_packages(folder))
    return found


setup(packages=_packages())
