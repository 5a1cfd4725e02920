"""The native helpers: loading them, and reading what they declare.

The emulator runs on its Python reference throughout, or with parts of it
carried out by C modules (emu/native_build.py lists them and their
sources; docs/architecture.md says where each sits).  Every user of a
native module asks here (:func:`load`), so that one place decides:

* ``PINETIME_EMU_PURE_PYTHON=1`` (or a caller's ``pure``): none is used;
* a module that is not built, or whose declarations do not match the
  Python's (an old build beside new sources): none is used either, and
  the reason is logged;

and one place says so (:func:`announce`): no run is slow in silence.  The
first line of a run on the pure-Python reference says why, once per
process (and once for the processes a run starts), with the fix
(:func:`fix`) when the helpers are missing;

and reads what C declares once for both languages: a struct's layout
(:func:`ctypes_struct`, built from the layout a module exports, see
emu/_layout.h); what Python declares once is checked against the module
as it loads (:func:`declare_check`: emu/soc/ops.py's op kinds against
emu.soc._mmio's).
"""
from __future__ import annotations

import ctypes
import importlib
import logging
import os
from typing import Optional

from emu.native_build import NATIVE_MODULES

log = logging.getLogger("emu.native")

_loaded: dict = {}          # name -> module, or None (not usable)
_why: dict = {}             # name -> why not
_checks: dict = {}          # name -> fn(module): raises ValueError when it does not match


def declare_check(name: str, fn) -> None:
    """``fn(module)`` is run when ``name`` loads and raises ValueError when
    the module does not match the Python that declares what it shares
    (emu/soc/ops.py checks emu.soc._mmio's op kinds so)."""
    _checks[name] = fn


def pure_python() -> bool:
    """The pure-Python reference asked for (PINETIME_EMU_PURE_PYTHON)."""
    return bool(os.environ.get("PINETIME_EMU_PURE_PYTHON"))


def load(name: str, pure: bool = False):
    """The native module ``name`` (one of NATIVE_MODULES), or None: the
    pure-Python reference is to run (asked for, or the module is missing
    or does not match this source; the reason is logged once)."""
    if pure or pure_python():
        return None
    if name in _loaded:
        return _loaded[name]
    if name not in NATIVE_MODULES:
        raise KeyError(f"{name} is not a native module of emu/native_build.py")
    mod = None
    try:
        mod = importlib.import_module(name)
        _check(name, mod)
    except (ImportError, OSError, ValueError) as exc:
        _why[name] = str(exc)
        log.info("native helper %s unavailable (%s); its part runs on the pure-Python "
                 "reference, many times slower (%s)", name, exc, fix())
        mod = None
    _loaded[name] = mod
    return mod


def fix() -> str:
    """How to build the native helpers where this copy of the emulator lives."""
    from emu.version import ROOT, installed
    if not installed() and os.path.isfile(os.path.join(ROOT, "setup.py")):
        return (f"build them with `python setup.py build_ext --inplace` in {ROOT} (needs gcc "
                "and python3-dev; scripts/setup.sh installs both)")
    return ("install gcc and the Python headers (Debian: apt-get install gcc python3-dev), "
            "then `pip install --force-reinstall --no-cache-dir pinetime-emu` "
            "(or `pipx reinstall pinetime-emu`)")


def not_built() -> dict:
    """{module: why} for the native modules not usable, as far as can be
    told without loading the others: those asked for and refused, and those
    with no built file at all."""
    import importlib.util
    out = dict(_why)
    for name in NATIVE_MODULES:
        if name in out or _loaded.get(name) is not None:
            continue
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:
            found = False
        if not found:
            out[name] = "not built"
    return out


_SAID = "PINETIME_EMU_SAID_SLOW"       # set once said: the processes a run starts stay quiet


def slow_reason(pure: bool = False) -> Optional[str]:
    """Why this run would be on the pure-Python reference, in one line, or
    None when the native helpers are used."""
    if pure or pure_python():
        how = "PINETIME_EMU_PURE_PYTHON=1" if pure_python() else "--pure-python"
        return (f"note: the pure-Python reference, as asked ({how}): the same cycles, "
                "frames and bytes, many times slower")
    gone = not_built()
    if not gone:
        return None
    what = ", ".join(f"{n} ({why})" for n, why in sorted(gone.items()))
    return (f"warning: native helpers missing: {what}; this run uses the pure-Python "
            f"reference, many times slower; fix: {fix()}")


def announce(pure: bool = False, stream=None) -> None:
    """Say on stderr, once, that this run is on the pure-Python reference
    and why (the command line calls this first; every Machine calls it)."""
    import sys
    if os.environ.get(_SAID):
        return
    line = slow_reason(pure)
    if line is None:
        return
    os.environ[_SAID] = "1"
    print(f"pinetime-emu: {line}", file=stream or sys.stderr, flush=True)


def bench_guard(prog: str, pure: bool = False) -> str:
    """For a benchmark: "" on the native helpers; with the pure-Python
    reference asked for, a label that its figures must carry; with the
    helpers missing, one line on stderr and SystemExit(1): a benchmark
    never prints figures from the slow path without saying so."""
    import sys
    from emu.version import describe, installed
    where = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print(f"{prog}: pinetime-emu {describe()}, {'installed' if installed() else 'a checkout'} "
          f"at {where}", flush=True)
    if pure or pure_python():
        print(f"{prog}: the pure-Python reference, as asked: these figures are not the "
              "emulator's usual speed", flush=True)
        return " [pure-Python reference]"
    gone = not_built()
    if gone:
        print(f"{prog}: refusing to measure: native helpers missing "
              f"({', '.join(sorted(gone))}), the figures would be the pure-Python "
              f"reference's; fix: {fix()} (or measure that reference on purpose with "
              "PINETIME_EMU_PURE_PYTHON=1)", file=sys.stderr)
        raise SystemExit(1)
    return ""


def missing() -> dict:
    """{module: why} for the native modules asked for and not usable."""
    return dict(_why)


def forget() -> None:
    """Ask again at the next load (a test that swaps the modules in)."""
    _loaded.clear()
    _why.clear()


def _check(name: str, mod) -> None:
    """A module's declarations agree with the Python's (ValueError if not)."""
    fn = _checks.get(name)
    if fn is not None:
        fn(mod)


_CTYPES = {("u", 1): ctypes.c_uint8, ("u", 2): ctypes.c_uint16, ("u", 4): ctypes.c_uint32,
           ("u", 8): ctypes.c_uint64, ("i", 1): ctypes.c_int8, ("i", 2): ctypes.c_int16,
           ("i", 4): ctypes.c_int32, ("i", 8): ctypes.c_int64}


def ctypes_struct(name: str, layout: tuple, doc: str = "") -> type:
    """A ctypes Structure over a C struct as its module exports it:
    ``layout`` is ``(size, [(field, offset, size, kind, count), ...])``
    (emu/_layout.h's layout_export).  Fields keep their C offsets (padding
    fills the gaps the compiler left); member structs (kind 'S') are not
    fields of their own, their fields are, flattened, and their offsets are
    kept in the class's ``OFFSETS``."""
    size, fields = layout
    out, at, offsets = [], 0, {}
    pad = 0
    for fname, off, fsize, kind, count in sorted(fields, key=lambda f: (f[1], f[3] != "S")):
        kind = chr(kind) if isinstance(kind, int) else kind
        offsets[fname] = off
        if kind == "S":
            continue
        if off < at:
            raise ValueError(f"{name}.{fname} overlaps the field before it")
        if off > at:
            out.append((f"_pad{pad}", ctypes.c_uint8 * (off - at)))
            pad += 1
        if kind == "p":
            t = ctypes.c_void_p
        elif kind == "o":
            t = ctypes.py_object
        else:
            t = _CTYPES[(kind, fsize)]
        if ctypes.sizeof(t) != fsize:
            raise ValueError(f"{name}.{fname}: {fsize} bytes in C, {ctypes.sizeof(t)} in ctypes")
        out.append((fname, t * count if count else t))
        at = off + fsize * (count or 1)
    if size > at:
        out.append((f"_pad{pad}", ctypes.c_uint8 * (size - at)))
    cls = type(name, (ctypes.Structure,), {"_fields_": out, "OFFSETS": offsets,
                                           "__doc__": doc or f"{name}, as C lays it out"})
    if ctypes.sizeof(cls) != size:
        raise ValueError(f"{name}: {size} bytes in C, {ctypes.sizeof(cls)} in ctypes")
    return cls


def module_of(obj) -> Optional[str]:
    """The native module an object's type comes from, or None."""
    mod = type(obj).__module__
    return mod if mod in NATIVE_MODULES else None
