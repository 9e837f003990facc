"""Render docs/api.md, the API reference, from the docstrings of the library's public modules.

A public name is one in a module's ``__all__``; for a class, its public methods and properties
(defined in the project, not inherited from Python), for an enum its members, for a dataclass its
fields. Classes and functions must have a docstring; constants (tables, numbers, dtypes) cannot
carry one in Python and are listed with their type. `missing()` lists what has no docstring;
tests/test_api_docs.py fails on any, and when docs/api.md differs from `render()`.

Why a script and not pdoc or Sphinx: the reference lives in the repository as Markdown beside the
other pages, reviewed in diffs, and its freshness is a plain string comparison in the normal pytest
run, with no extra dependency; pdoc renders HTML and Sphinx needs a build tree.

    python docs/make_api.py          # rewrite docs/api.md
"""
from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = ["mrc.api", "mrc.ctl", "mrc.testing.simnet", "mrc.io", "mrc.wire", "mrc.wire.layers"]


def _public(mod) -> list[str]:
    return list(mod.__all__)


def _own_members(cls):
    """(name, object) of the public methods and properties a project class defines or inherits from
    project classes, in definition order, except overrides of a foreign base's methods."""
    # hooks a project class overrides for a foreign base (scapy's post_build, say) belong to that API
    foreign = {n for b in cls.__mro__ if not (getattr(b, "__module__", "") or "").startswith("mrc") for n in vars(b)}
    seen, out = set(foreign), []
    for base in cls.__mro__:
        if not (getattr(base, "__module__", "") or "").startswith("mrc"):
            continue
        for name, obj in vars(base).items():
            if name.startswith("_") or name in seen:
                continue
            if isinstance(obj, (staticmethod, classmethod)):
                obj = obj.__func__
            if inspect.isfunction(obj) or isinstance(obj, property):
                seen.add(name)
                out.append((name, obj))
    return out


class _Annotation(str):
    """An annotation kept as the source wrote it (the modules use postponed annotations)."""

    def __repr__(self) -> str:
        return str(self)


def _signature(obj) -> str:
    """The call signature without ``self``, annotations as written, no return annotation on classes."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    params = [p.replace(annotation=_Annotation(p.annotation)) if isinstance(p.annotation, str) else p
              for p in sig.parameters.values() if p.name != "self"]
    ret = sig.return_annotation
    if inspect.isclass(obj):
        ret = inspect.Signature.empty
    elif isinstance(ret, str):
        ret = _Annotation(ret)
    return str(sig.replace(parameters=params, return_annotation=ret))


def _doc(obj) -> str | None:
    # a function's own docstring: inspect.getdoc would borrow an overridden method's (scapy's, say)
    doc = obj.__doc__ if isinstance(obj, property) or inspect.isfunction(obj) else inspect.getdoc(obj)
    if doc and isinstance(obj, type) and doc == inspect.getdoc(obj.__mro__[1]) and obj.__mro__[1] is not object:
        return None  # only inherited
    if isinstance(obj, type) and dataclasses.is_dataclass(obj) and doc and doc.startswith(obj.__name__ + "("):
        return None  # the generated dataclass signature is not a docstring
    return inspect.cleandoc(doc) if doc else None


def _items(modname: str):
    """(qualified name, object, kind) of every public name of the module and its classes' members."""
    mod = importlib.import_module(modname)
    for name in _public(mod):
        obj = getattr(mod, name)
        if inspect.isclass(obj):
            yield f"{modname}.{name}", obj, "class"
            if not issubclass(obj, enum.Enum):
                for mname, m in _own_members(obj):
                    yield f"{modname}.{name}.{mname}", m, "property" if isinstance(m, property) else "method"
        elif inspect.isfunction(obj) or inspect.isbuiltin(obj) or callable(obj) and hasattr(obj, "__wrapped__"):
            yield f"{modname}.{name}", obj, "function"
        elif inspect.ismodule(obj):
            continue
        else:
            yield f"{modname}.{name}", obj, "constant"


def missing() -> list[str]:
    """Public classes, functions, methods and properties without a docstring."""
    return [q for m in MODULES for q, obj, kind in _items(m) if kind != "constant" and not _doc(obj)]


def _constant(obj) -> str:
    if isinstance(obj, int) and not isinstance(obj, bool):
        return f"`{obj:#x}`" if obj > 9 else f"`{obj}`"
    if hasattr(obj, "names") and hasattr(obj, "fields"):  # a numpy structured dtype
        return f"numpy structured dtype, {obj.itemsize} bytes: " + ", ".join(f"`{n}`" for n in obj.names)
    if isinstance(obj, dict):
        return f"dict of {len(obj)} entries: " + ", ".join(f"`{k}`" for k in obj)
    if isinstance(obj, tuple):
        return "`" + repr(obj) + "`"
    return f"`{type(obj).__name__}`"


def _class_extra(cls) -> list[str]:
    if issubclass(cls, enum.Enum):
        return ["Members: " + ", ".join(f"`{m.name}` = {m.value}" if not isinstance(m.value, str) else f"`{m.name}`"
                                        for m in cls) + "."]
    if dataclasses.is_dataclass(cls):
        fields = [f"`{f.name}`" + (f" ({f.type})" if isinstance(f.type, str) else "") for f in dataclasses.fields(cls)]
        return ["Fields: " + ", ".join(fields) + "."]
    return []


def render() -> str:
    out = ["# API reference", "",
           "Generated by `python docs/make_api.py` from the docstrings of the library's public modules "
           "(each module's `__all__`); do not edit by hand. The quickstart is docs/library.md; units: "
           "times are integer picoseconds unless a name says otherwise (docs/library.md, \"Units\").", ""]
    out += [f"- [`{m}`](#{m.replace('.', '')})" for m in MODULES] + [""]
    for modname in MODULES:
        mod = importlib.import_module(modname)
        out += [f"## {modname}", "", inspect.cleandoc(mod.__doc__ or ""), ""]
        for qual, obj, kind in _items(modname):
            short = qual[len(modname) + 1:]
            doc = _doc(obj) or ""
            if kind == "class":
                sig = "" if issubclass(obj, enum.Enum) else _signature(obj)
                out += [f"### class `{short}{sig}`", "", doc, *_class_extra(obj), ""]
            elif kind == "function":
                out += [f"### `{short}{_signature(obj)}`", "", doc, ""]
            elif kind == "method":
                out += [f"#### `{short}{_signature(obj)}`", "", doc, ""]
            elif kind == "property":
                out += [f"#### `{short}` (property)", "", doc, ""]
            else:
                out += [f"### `{short}`", "", _constant(obj), ""]
    text = "\n".join(out)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.rstrip() + "\n"


if __name__ == "__main__":
    (ROOT / "docs" / "api.md").write_text(render())
    gaps = missing()
    if gaps:
        print(f"{len(gaps)} public name(s) without a docstring:", *gaps, sep="\n  ")
