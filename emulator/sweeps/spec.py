"""What a sweep is: a scenario, transports, seeds and a grid; its cells, their keys, ``sweep.toml``.

Cells = transports x grid points x seeds, each the base scenario (after
``--set``) with the grid point's keys set (`scenario.apply_sets`), the
transport applied (`transports.spec.apply`) and the seed. The order runs the
seeds outermost, so a sweep stopped early holds every transport and grid point
for its first seeds.

A cell's key is a hash of the cell's scenario mapping (after every override,
with its transport and seed), the content of the files it reads (htsim ``.cm``
matrices) and the code version (`code_version`: the package version and the
hash of every source file, `mrc._jit.source_key`): ``--resume`` skips the cells
whose key is in the table with status ``ok``.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import itertools
import json
import pathlib
import tomllib

from mrc.emulator import scenario
from mrc.emulator.keys import toml_value
from mrc.emulator.transports import spec as tspec
from mrc.errors import ConfigError, read_text

RESERVED_GRID = {"seed": "--seeds", "transport.name": "--transports", "name": "the scenario"}


def parse_seeds(text: str) -> list[int]:
    """``1-10``, ``1,3,5``, ``1-4,9``: distinct seeds in the order given."""
    seeds: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise ConfigError("--seeds", text, f"{part!r}: write N, N-M or a comma-separated list of them") from None
        if a < 0 or b < a:
            raise ConfigError("--seeds", text, f"{part!r}: seeds are >= 0 and a range runs upwards")
        if b - a >= 100_000:
            raise ConfigError("--seeds", text, f"{part!r}: more than 100,000 seeds in one range")
        seeds += [s for s in range(a, b + 1) if s not in seeds]
    if not seeds:
        raise ConfigError("--seeds", text, "give at least one seed")
    return seeds


def parse_grid(items) -> dict[str, list]:
    """``KEY=V1,V2,...`` items -> {key: [values]} (TOML values; a key once)."""
    grid: dict[str, list] = {}
    for item in items or ():
        key, sep, values = str(item).partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError("--grid", item, "write KEY=V1,V2,... (e.g. switch.queue_bytes=50000,100000)")
        if key in RESERVED_GRID:
            raise ConfigError("--grid", item, f"{key} is set by {RESERVED_GRID[key]}")
        if key in grid:
            raise ConfigError("--grid", item, f"{key} given twice")
        vals = [toml_value(v.strip()) for v in values.split(",") if v.strip()]
        if not vals:
            raise ConfigError("--grid", item, "give at least one value")
        if len({json.dumps(v, sort_keys=True) for v in vals}) != len(vals):
            raise ConfigError("--grid", item, "a value appears twice")
        grid[key] = vals
    return grid


@dataclasses.dataclass(frozen=True)
class Cell:
    index: int
    transport: str  # the spec as given (name[:key=value...])
    point: tuple  # ((grid key, value), ...)
    seed: int
    data: dict  # the scenario mapping this cell runs
    key: str

    @property
    def dirname(self) -> str:
        return f"{self.index:05d}-{self.key}"


@dataclasses.dataclass
class Sweep:
    """A sweep's definition (what ``sweep.toml`` holds)."""

    source: str  # the scenario as given: a TOML file or a library name
    data: dict  # the base scenario mapping, after --set
    name: str
    base_dir: pathlib.Path | None
    transports: list[str]
    seeds: list[int]
    grid: dict[str, list]
    sets: list[str]
    cell_timeout_s: float | None = None

    def points(self) -> list[tuple]:
        keys = list(self.grid)
        return [tuple(zip(keys, vals)) for vals in itertools.product(*(self.grid[k] for k in keys))]

    def files(self) -> dict[str, bytes]:
        """The files the scenario reads (a ``cm`` workload's ``file``), by the name it gives them."""
        out = {}
        for job in _jobs(self.data):
            f = job.get("file") if isinstance(job, dict) else None
            if isinstance(f, str):
                p = _find(f, self.base_dir)
                if p is not None:
                    out[f] = p.read_bytes()
        return out

    def cells(self, code: str) -> list[Cell]:
        """Every cell, seeds outermost (see the module docstring)."""
        digests = {k: hashlib.sha256(v).hexdigest() for k, v in sorted(self.files().items())}
        out = []
        for seed in self.seeds:
            for point in self.points():
                for t in self.transports:
                    d = copy.deepcopy(self.data)
                    scenario.apply_sets(d, [f"{k}={json.dumps(v) if isinstance(v, str) else _toml(v)}"
                                            for k, v in point])
                    d = tspec.apply(d, t)
                    d["seed"] = seed
                    d.setdefault("name", self.name)
                    blob = json.dumps({"scenario": d, "files": digests, "code": code}, sort_keys=True, default=str)
                    out.append(Cell(len(out), t, point, seed, d, hashlib.sha256(blob.encode()).hexdigest()[:16]))
        return out


def _key(k: str) -> str:
    return k if k and all(c.isalnum() or c in "_-" for c in k) else json.dumps(k)


def _toml(v) -> str:
    """One TOML value (inline tables for mappings)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, float):
        return ("inf" if v > 0 else "-inf") if v in (float("inf"), float("-inf")) else ("nan" if v != v else repr(v))
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {_toml(x)}" for k, x in v.items()) + "}"
    return repr(v)


def toml_text(d: dict, prefix: str = "") -> str:
    """A mapping as a TOML document: scalars first, then sub-tables and arrays of tables."""
    lines, subs = [], []
    for k, v in d.items():
        name = prefix + _key(k)
        if isinstance(v, dict):
            subs.append(f"\n[{name}]\n" + toml_text(v, name + "."))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            subs += [f"\n[[{name}]]\n" + toml_text(x, name + ".") for x in v]
        else:
            lines.append(f"{_key(k)} = {_toml(v)}")
    return "".join(line + "\n" for line in lines) + "".join(subs)


def _jobs(data: dict) -> list:
    w = data.get("workload")
    return [w] if isinstance(w, dict) else (w if isinstance(w, list) else [])


def _find(name: str, base_dir) -> pathlib.Path | None:
    from mrc.emulator import scenarios

    for d in ([pathlib.Path(base_dir)] if base_dir is not None else []) + [scenarios.DIR]:
        p = d / name
        if p.is_file():
            return p
    return None


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """The package version and the hash of every source file of the compiled packages, as this process first
    read them (the code it runs: a worker keeps the modules it loaded; 10-15 ms to hash, once)."""
    from mrc import __version__
    from mrc._jit import source_key

    return f"{__version__}+{source_key()}"


def make(source, transports=None, seeds="1-10", grid=(), sets=(), cell_timeout_s=None) -> Sweep:
    """A `Sweep` from the command line's pieces (`source`: TOML file, library name, mapping, or a ``sweep.toml``)."""
    if isinstance(source, (str, pathlib.Path)) and _is_sweep_file(source):
        sw = load(source)
        if transports:
            sw.transports = tspec.split(transports) if isinstance(transports, str) else list(transports)
        if seeds is not None and seeds != "1-10":
            sw.seeds = parse_seeds(seeds) if isinstance(seeds, str) else [int(s) for s in seeds]
        if grid:
            sw.grid = parse_grid(grid) if not isinstance(grid, dict) else dict(grid)
        if sets:
            scenario.apply_sets(sw.data, sets)
            sw.sets += list(sets)
        if cell_timeout_s is not None:
            sw.cell_timeout_s = cell_timeout_s
        return sw
    data, name, base_dir = scenario.read(source)
    scenario.apply_sets(data, sets)
    if transports is None or transports == "":
        t = data.get("transport", {})
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise ConfigError("transport.name", t, "the scenario names no transport: give --transports")
        ts = [t["name"]]
    else:
        ts = tspec.split(transports) if isinstance(transports, str) else [str(x) for x in transports]
    sd = parse_seeds(seeds) if isinstance(seeds, str) else [int(s) for s in seeds]
    if not sd:
        raise ConfigError("--seeds", seeds, "give at least one seed")
    g = parse_grid(grid) if not isinstance(grid, dict) else {k: list(v) for k, v in grid.items()}
    if cell_timeout_s is not None and not cell_timeout_s > 0:
        raise ConfigError("--cell-timeout-s", cell_timeout_s, "seconds, > 0")
    return Sweep(str(source) if not isinstance(source, dict) else name, data, name,
                 pathlib.Path(base_dir) if base_dir is not None else None, ts, sd, g, list(sets), cell_timeout_s)


def _is_sweep_file(source) -> bool:
    p = pathlib.Path(source)
    if not p.is_file() or p.suffix != ".toml":
        return False
    try:
        return "sweep" in tomllib.loads(p.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
        return False  # not one: the scenario reader then says what is wrong with it


def dump(sw: Sweep) -> str:
    """``sweep.toml``: the sweep's definition and its base scenario; `mrc emu sweep sweep.toml` re-runs it."""
    head = {"source": sw.source, "name": sw.name, "base_dir": str(sw.base_dir) if sw.base_dir is not None else "",
            "transports": sw.transports, "seeds": sw.seeds, "sets": sw.sets}
    if sw.cell_timeout_s is not None:
        head["cell_timeout_s"] = sw.cell_timeout_s
    head["grid"] = sw.grid
    return ("# written by `mrc emu sweep`; `mrc emu sweep THIS_FILE [--out DIR] [--resume]` runs the sweep again;\n"
            "# [scenario] is the base scenario after --set\n" + toml_text({"sweep": head, "scenario": sw.data}))


def load(path) -> Sweep:
    """A `Sweep` from its ``sweep.toml``."""
    p = pathlib.Path(path)
    d = scenario.decode_toml(read_text(p, "sweep"), str(path))
    s = d.get("sweep")
    if not isinstance(s, dict) or not isinstance(d.get("scenario"), dict):
        raise ConfigError("sweep", str(path), "a sweep file has [sweep] and [scenario] tables")
    for k, kind in (("transports", list), ("seeds", list), ("sets", list), ("grid", dict), ("name", str)):
        if not isinstance(s.get(k, kind()), kind):
            raise ConfigError(f"sweep.{k}", s.get(k), f"must be a {kind.__name__}")
    base = s.get("base_dir") or None
    return Sweep(str(s.get("source", p)), d["scenario"], s.get("name", p.stem),
                 pathlib.Path(base) if base else None, [str(t) for t in s.get("transports", [])],
                 [int(x) for x in s.get("seeds", [])], dict(s.get("grid", {})), [str(x) for x in s.get("sets", [])],
                 s.get("cell_timeout_s"))
