"""pytest plugin: a ``watch`` fixture that builds emulated watches for tests.

Registered through the ``pytest11`` entry point ``pinetime_emu``, so any
project with pinetime-emu installed can write::

    import pytest
    from frontends.testbench import wait_for_text

    @pytest.mark.pinetime_firmware("build/app.elf", board="pinetime")
    def test_boots(watch):
        m = watch()                       # a fresh Machine for this test
        wait_for_text(m, "ready", timeout_ms=500)

``watch(firmware=None, board=None, boot_ms=None, **board_options)`` returns
a new :class:`emu.machine.Machine` each call; with ``boot_ms`` the machine
is already booted that far: the first test boots and snapshots it, the
others restore the snapshot (:func:`frontends.testbench.booted`).  The firmware
comes from the argument, else the nearest ``pinetime_firmware`` marker,
else the ``--pinetime-firmware`` option; the board from the argument, the marker's
``board=``, ``--pinetime-board``, else ``pinetime``.  Relative paths are
tried against the rootdir, then the test file's directory.  On the PineTime
board the NOR flash is kept in memory (no flash file) unless the test passes
``flash_file``.

When a test using ``watch`` fails, its report gets a section per machine
with the emulated time and the console transcript, and the machine's last
screen (when the board has one) is saved as a PNG whose path the section
names (under ``--pinetime-artifacts``, default the pytest temporary
directory).

Not modelled / limits: machines are not shared between tests (a booted
state is shared through its snapshot, ``boot_ms``); no automatic
golden-screen update switch.
"""
from __future__ import annotations

import os
import re
from typing import Optional

import pytest

_MACHINES = pytest.StashKey[list]()


def pytest_addoption(parser) -> None:
    group = parser.getgroup("pinetime-emu", "emulated PineTime / nRF52832")
    group.addoption("--pinetime-firmware", default=None, metavar="FIRMWARE",
                    help="firmware (ELF/HEX/BIN) for the 'watch' fixture when a test has no "
                         "pinetime_firmware marker")
    group.addoption("--pinetime-board", default=None, metavar="BOARD",
                    help="board for the 'watch' fixture (default: pinetime)")
    group.addoption("--pinetime-artifacts", default=None, metavar="DIR",
                    help="where to save the last screen of a failing test (default: pytest's "
                         "temporary directory)")


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "pinetime_firmware(path, board=None): firmware (and board) the 'watch' "
                   "fixture loads")


def _resolve(config, item, path: str) -> str:
    if os.path.isabs(path):
        return path
    for base in (str(config.rootpath), os.path.dirname(str(item.path)), os.getcwd()):
        p = os.path.join(base, path)
        if os.path.exists(p):
            return p
    return path        # let the loader report it


@pytest.fixture
def watch(request):
    """Factory: ``watch(firmware=None, board=None, **board_options) -> Machine``."""
    from emu.machine import Machine
    config, item = request.config, request.node
    machines: list = []
    item.stash[_MACHINES] = machines

    def make(firmware: Optional[str] = None, board: Optional[str] = None,
             boot_ms: Optional[float] = None, **options):
        marker = item.get_closest_marker("pinetime_firmware")
        mk_fw = mk_board = None
        if marker is not None:
            mk_fw = marker.args[0] if marker.args else marker.kwargs.get("path")
            mk_board = marker.kwargs.get("board")
        fw = firmware or mk_fw or config.getoption("pinetime_firmware")
        if not fw:
            pytest.fail("watch: no firmware given (pass watch(firmware=...), mark the test "
                        "with @pytest.mark.pinetime_firmware(path) or run pytest with "
                        "--pinetime-firmware PATH)", pytrace=False)
        b = board or mk_board or config.getoption("pinetime_board") or "pinetime"
        if b == "pinetime":
            options.setdefault("flash_file", None)
        if boot_ms is not None:
            from frontends.testbench import booted
            m = booted(_resolve(config, item, str(fw)), boot_ms, board=b, **options)
        else:
            m = Machine(_resolve(config, item, str(fw)), board=b, **options)
        machines.append(m)
        return m

    yield make
    for m in machines:
        close = getattr(m.board, "close", None)
        if callable(close):
            try:
                close()
            except Exception:          # a teardown problem must not hide the test result
                pass


def _artifact_dir(item) -> str:
    d = item.config.getoption("pinetime_artifacts")
    if not d:
        factory = getattr(item.config, "_tmp_path_factory", None)
        if factory is not None:
            return str(factory.getbasetemp() / "pinetime-emu")
        import tempfile
        return tempfile.mkdtemp(prefix="pinetime-emu-")
    return d


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when != "call" or not rep.failed:
        return
    machines = item.stash.get(_MACHINES, None)
    if not machines:
        return
    from emu.clock import TICKS_PER_SECOND
    for i, m in enumerate(machines):
        t = m.clock.now / TICKS_PER_SECOND
        label = f"machine {i}" if len(machines) > 1 else "machine"
        text = m.console_text() or "(no console output)\n"
        screen_note = ""
        fn = getattr(m.board, "screen", None)
        if callable(fn):
            try:
                from frontends.testbench import write_png
                d = _artifact_dir(item)
                os.makedirs(d, exist_ok=True)
                safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid)[-120:]
                path = os.path.join(d, f"{safe}-{i}.png")
                write_png(path, fn())
                screen_note = f"\nlast screen saved to {path}\n"
            except Exception as e:           # never let reporting break the run
                screen_note = f"\n(could not save the screen: {e})\n"
        rep.sections.append((f"pinetime-emu {label}: console at t={t:.6f} s "
                             f"({m.board_name})", text + screen_note))
