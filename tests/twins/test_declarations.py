"""What C and Python share is declared once, and the other side is built
from it or checked against it when the native modules load.

* bh_state (emu/cpu/_bh_state.h, with SyncCells and LoopCells of
  emu/soc/_loopcells.h) is exported by emu.cpu._blockhook with the
  compiler's offsets; Python's ctypes view is built from that export, and
  the MMIO callbacks get the addresses of its member structs from it.
* The register ops' kinds are declared in emu/soc/ops.py; emu.soc._mmio's
  OP_KINDS must be the same, or the native module is refused (and the
  pure-Python path runs, saying why).
* The C clock has the Python clock's API (the same public names).
"""
from __future__ import annotations

import ctypes

import pytest

from emu import native
from emu.clock import Clock, Event
from emu.soc import ops


def test_the_block_hook_state_is_built_from_the_c_layout():
    from emu.cpu import cycles
    mod = native.load("emu.cpu._blockhook")
    if mod is None:
        pytest.skip("native helpers not built")
    size, fields = mod.layout()
    assert cycles.load_native() is not None
    view = cycles.BhState
    assert ctypes.sizeof(view) == size
    for name, off, fsize, kind, count in fields:
        kind = chr(kind) if isinstance(kind, int) else kind
        if kind == "S":
            assert view.OFFSETS[name] == off
            continue
        assert getattr(view, name).offset == off, name
    # the loop watch's cells, as the MMIO callbacks see them, flattened
    assert view.OFFSETS["loop_skip_on"] == view.OFFSETS["loop"]
    assert view.OFFSETS["base_ticks"] == view.OFFSETS["sync"]


def test_a_view_unlike_the_c_layout_is_refused():
    """Companion: a layout whose fields overlap, or whose size ctypes cannot
    match, is refused with the field named."""
    with pytest.raises(ValueError, match="b overlaps"):
        native.ctypes_struct("X", (16, [("a", 0, 8, ord("u"), 0), ("b", 4, 4, ord("u"), 0)]))
    with pytest.raises(ValueError, match="3 bytes in C"):
        native.ctypes_struct("X", (8, [("a", 0, 3, ord("p"), 0)]))


def test_the_op_kinds_agree_and_a_build_that_differs_is_refused(monkeypatch):
    mod = native.load("emu.soc._mmio")
    if mod is None:
        pytest.skip("native helpers not built")
    assert mod.OP_KINDS == ops.op_kinds()

    class Old:                              # a module built from other sources
        OP_KINDS = dict(ops.op_kinds(), W_CALL=28)
    with pytest.raises(ValueError, match="other op kinds"):
        ops._check_native_kinds(Old)
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.setattr(native, "_why", {})
    # (the module the next load imports: the one in sys.modules)
    import importlib
    monkeypatch.setattr(importlib.import_module("emu.soc._mmio"), "OP_KINDS", Old.OP_KINDS)
    assert native.load("emu.soc._mmio") is None
    assert "other op kinds" in native.missing()["emu.soc._mmio"]


def test_the_c_clock_has_the_python_clocks_api():
    mod = native.load("emu._clock")
    if mod is None:
        pytest.skip("native helpers not built")

    def names(obj):
        return {n for n in dir(obj) if not n.startswith("__")}
    py_clock, c_clock = Clock(), mod.Clock()
    assert names(py_clock) <= names(c_clock)
    assert {n for n in names(Event(py_clock, "e", lambda: None))} <= \
        names(c_clock.event("e", lambda: None)) | {"_seq"}
