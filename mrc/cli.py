"""The `mrc` command (also `python -m mrc`).

One argparse tree. Each subsystem owns its subcommands in its own module, which
exposes ``register(parser)``: it adds sub-parsers to ``parser`` (through
``subcommands(parser)`` for a group) and sets ``func`` on each leaf to a callable taking the parsed arguments and returning
an exit status. Modules are listed here once; a module that is not part of this
installation is simply not offered.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.util
import sys
import warnings

from mrc._version import __version__
from mrc.errors import MRCError

# (command, module that registers it, one-line help)
SUBCOMMANDS = [
    ("demo", "mrc.emulator.demo", "run the MRC vs ECMP demo on a small multi-plane fabric"),
    ("pcap", "mrc.wire.cli", "write sample pcaps of every MRC packet kind, and decode pcaps"),
    ("fabric", "mrc.fabric.cli", "multi-plane Clos fabrics: presets, SRv6 uSID routes, netns fabrics"),
    ("emu", "mrc.emulator.cli", "packet-level fabric emulator: run, compare and sweep scenarios"),
    ("conformance", "mrc.conformance.cli", "run the MRC conformance suite against an implementation"),
    ("io", "mrc.io.cli", "MRC endpoints over real sockets"),
]


class _DeprecatedSpelling(argparse.Action):
    """An old option name that still works: it sets the new option's value and says it is deprecated."""

    def __init__(self, option_strings, dest, *, new: str, **kw):
        self.new = new
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        msg = f"{option_string} is deprecated; use {self.new} (the same value, the unit now in the name)"
        warnings.warn(msg, DeprecationWarning, stacklevel=2)
        print(f"mrc: warning: {msg}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def deprecated_spelling(group, old: str, new: str, **kw) -> None:
    """Keep `old` working as a hidden alias of the option `new` already added to `group` (docs/library.md,
    "Units": options name their unit)."""
    dest = new.lstrip("-").replace("-", "_")
    group.add_argument(old, dest=dest, action=_DeprecatedSpelling, new=new, help=argparse.SUPPRESS,
                       default=argparse.SUPPRESS, **kw)


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 cell``, ``2 cells``, ``1,024 grid points`` (`words`: the plural when it is not `word` + s)."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def subcommands(parser: argparse.ArgumentParser):
    """Make ``parser`` a group: return its sub-parser action.

    Running the group without a leaf command prints the group's help.
    """
    parser.set_defaults(_parser=parser)
    return parser.add_subparsers(metavar="SUBCOMMAND")


def _available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole tree; with `only` (a command name, or "" for none), only that command's module is imported and
    registered, the others are listed by name and help (a process runs one command: importing the rest, trio,
    the conformance suite and so on, cost most of a second at start-up)."""
    parser = argparse.ArgumentParser(
        prog="mrc",
        description="MRC (OCP Multipath Reliable Connection 1.0): wire formats, protocol core, "
        "fabric emulator and conformance suite.",
    )
    parser.add_argument("--version", action="version", version=f"mrc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, help_text in SUBCOMMANDS:
        if only is not None and name != only:
            if _available(module.rpartition(".")[0]):
                sub.add_parser(name, help=help_text, description=help_text)
            continue
        if not _available(module):
            continue
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(module).register(cmd)
    return parser


class _NoScipy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "scipy" or name.startswith("scipy."):
            raise ImportError(f"{name}: not imported for numba's BLAS probe (mrc.cli)")
        return None


def _load_arraymath_without_scipy() -> None:
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    block = _NoScipy()
    sys.meta_path.insert(0, block)
    try:
        import numba.np.arraymath  # noqa: F401
    except ImportError:
        pass
    finally:
        sys.meta_path.remove(block)


def _skip_numba_blas_probe() -> None:
    """numba's array module imports scipy.linalg when it loads (0.3-0.4 s) to see whether BLAS is there for
    ``np.dot``; no compiled code of this project uses BLAS, and an ``mrc`` process runs only this project's
    code, so the module is loaded with scipy out of reach. Only a compile loads it (code read from the cache
    needs no registry, `mrc._jit`): the block is armed for numba's first compile of the process, and a warm
    run imports neither. scipy imports normally after."""
    from numba.core import event

    class _FirstCompile(event.Listener):
        def on_start(self, ev):
            _load_arraymath_without_scipy()  # returns at once after the first time

        def on_end(self, ev):
            pass

    if "numba.np.arraymath" not in sys.modules:
        event.register("numba:compile", _FirstCompile())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), "")
    parser = build_parser(only=command if command in {c[0] for c in SUBCOMMANDS} else "")
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        # A group was named without a leaf command: show that level's help.
        target = getattr(args, "_parser", parser)
        target.print_help()
        return 0 if args.command is None else 2
    for stream in (sys.stdout, sys.stderr):  # a path given with bytes that are not UTF-8 prints, escaped
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    if args.command in ("emu", "demo", "fabric"):
        _skip_numba_blas_probe()
    try:
        return int(func(args) or 0)
    except MRCError as exc:
        print(f"mrc: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:
        # a file or directory named on the command line (or in a scenario) that cannot be read or written:
        # the commands name the argument where they check it first; this is the one line for the rest
        if exc.filename is None:
            raise
        print(f"mrc: error: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
