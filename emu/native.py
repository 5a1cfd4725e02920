"""The native helpers: loading them, and reading what they declare.

The emulator runs on its Python reference throughout, or with parts of it
carried out by C modules (emu/native_build.py lists them and their
sources; docs/architecture.md says where each sits).  Every user of a
native module asks here (:func:`load`), so that one place decides:

* ``PINETIME_EMU_PURE_PYTHON=1`` (or a caller's ``pure``): none is used;
* a module that is not built, or whose declarations do not match the
  Python's (an old build beside new sources): none is used either, and
  the reason is logged once;

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
        log.warning("native helper %s unavailable (%s); its part runs on the pure-Python "
                    "reference, many times slower (rebuild with `pip install -e .`)", name, exc)
        mod = None
    _loaded[name] = mod
    return mod


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
