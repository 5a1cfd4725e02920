"""The installed names: ``emu`` and ``frontends`` served from this package.

One finder, first on ``sys.meta_path``:

* ``emu`` and ``frontends`` (the top-level names only; their submodules are
  found through the package's ``__path__`` as usual) come from the folder
  inside this package (installed) or beside it (a checkout), unless a
  *different* package of that name is found on ``sys.path``: then the finder
  steps aside and that one is imported (pinetime-emu never shadows another
  distribution), and :func:`claim` refuses, in one line, to run the emulator
  with someone else's ``emu``;
* ``pinetime_emu.emu[.x]`` and ``pinetime_emu.frontends[.x]`` are the module
  objects of ``emu[.x]`` and ``frontends[.x]``: one copy of each module,
  whichever name imported it first.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

NAMES = ("emu", "frontends")
HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = __package__ + "."              # "pinetime_emu."


def source_dir(name: str):
    """The folder of ``name`` (emu or frontends): inside this package when
    installed, beside it in a checkout; None if neither holds it."""
    for base in (HERE, os.path.dirname(HERE)):
        d = os.path.join(base, name)
        if os.path.isfile(os.path.join(d, "__init__.py")):
            return d
    return None


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def foreign(name: str):
    """The folder of another package called ``name`` that an import would
    find on sys.path (or that is imported already), else None."""
    ours = source_dir(name)
    mod = sys.modules.get(name)
    if mod is not None:
        where = os.path.dirname(getattr(mod, "__file__", None) or "") or "?"
        return None if ours and _same(where, ours) else where
    spec = importlib.machinery.PathFinder.find_spec(name)
    if spec is None or not spec.origin or spec.origin in ("namespace", None):
        locs = list(getattr(spec, "submodule_search_locations", None) or []) if spec else []
        if not locs or (ours and any(_same(loc, ours) for loc in locs)):
            return None
        return locs[0]
    where = os.path.dirname(spec.origin)
    return None if ours and _same(where, ours) else where


class ClaimError(ImportError):
    """Another package of one of our names is on sys.path or imported."""


def claim() -> None:
    """Make sure ``emu`` and ``frontends`` are ours, or raise ClaimError with
    one line that names the other package (the command line and the pytest
    plugin call this before they import anything of the emulator)."""
    for name in NAMES:
        other = foreign(name)
        if other is not None:
            raise ClaimError(
                f"pinetime-emu: another package named {name!r} ({other}) is on sys.path or "
                f"imported, and the emulator's modules are named {name}.*: run it from a "
                f"directory or an environment without that package")


class _Alias(importlib.abc.Loader):
    """Loads ``pinetime_emu.X`` as the module ``X`` itself (import then
    returns what sys.modules holds under the name after exec_module)."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        top = self.target.partition(".")[0]
        if foreign(top) is not None:
            claim()
        real = importlib.import_module(self.target)
        sys.modules[module.__name__] = real


class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in NAMES:
            d = source_dir(fullname)
            if d is None or foreign(fullname) is not None:
                return None                       # someone else's emu: theirs
            return importlib.util.spec_from_file_location(
                fullname, os.path.join(d, "__init__.py"), submodule_search_locations=[d])
        if fullname.startswith(PREFIX):
            rest = fullname[len(PREFIX):]
            if rest.partition(".")[0] in NAMES:
                return importlib.machinery.ModuleSpec(fullname, _Alias(rest),
                                                      is_package=True)
        return None


_FINDER = Finder()


def install() -> None:
    """Put the finder first on sys.meta_path (once)."""
    if not any(isinstance(f, Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _FINDER)
