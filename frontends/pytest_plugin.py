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

Power-cut campaigns (frontends/powercut.py, docs/powerloss.md) as tests:
a campaign YAML named on the command line is collected, one test per cut,
so that pytest-xdist (``-n auto``, or ``--dist`` over several hosts) spreads
the cases; each worker makes the same run without a cut to find them::

    pytest -p pinetime_emu examples/powercut/journal.yaml \
        --pinetime-firmware firmware/build/journal_safe.elf \
        [--powercut-sample N] [--powercut-seed S] [--powercut-modes before,during]

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
    group.addoption("--powercut-sample", type=int, default=None, metavar="N",
                    help="a campaign YAML named on the command line: a seeded sample of N cuts")
    group.addoption("--powercut-seed", type=int, default=0, metavar="S",
                    help="a campaign's seed (the sample, the interrupted bits, RAM after a cut)")
    group.addoption("--powercut-modes", default="before,during,after", metavar="MODES",
                    help="a campaign's cut modes (a comma list of before, during, after)")
    group.addoption("--powercut-flash", default="nvmc,nor", metavar="FLASHES",
                    help="a campaign's flashes (a comma list of nvmc and nor)")


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


# ---------------------------------------------------------------------------
# power-cut campaigns: a campaign YAML named on the command line, one test per cut
# ---------------------------------------------------------------------------
def _named_on_command_line(config, path) -> bool:
    want = os.path.realpath(str(path))
    for a in config.args:
        a = a.split("::")[0]
        if os.path.realpath(a if os.path.isabs(a) else os.path.join(str(config.invocation_params.dir), a)) == want:
            return True
    return False


def pytest_collect_file(parent, file_path):
    if file_path.suffix in (".yaml", ".yml") and _named_on_command_line(parent.config, file_path):
        return PowercutCampaign.from_parent(parent, path=file_path)
    return None


class PowercutCampaign(pytest.File):
    """A campaign file: the run without a cut, then one item per cut."""

    def collect(self):
        from frontends.powercut import Spec, load_campaign, plan
        config = self.config
        fw = config.getoption("pinetime_firmware")
        if not fw:
            raise pytest.UsageError(f"{self.path}: a power-cut campaign needs "
                                    "--pinetime-firmware FIRMWARE")
        modes = tuple(m for m in config.getoption("powercut_modes").split(",") if m)
        flashes = tuple(f for f in config.getoption("powercut_flash").split(",") if f)
        campaign = load_campaign(str(self.path))
        board = config.getoption("pinetime_board") or campaign["board"]
        spec = Spec(os.path.abspath(str(fw)), board, str(self.path),
                    config.getoption("powercut_seed"), flashes)
        _ops, cuts = plan(spec, modes, config.getoption("powercut_sample"))
        for cut in cuts:
            yield PowercutCase.from_parent(self, name=f"{cut.name}-{cut.flash}-{cut.kind}",
                                           spec=spec, cut=cut)


class PowercutCaseFailed(Exception):
    pass


class PowercutCase(pytest.Item):
    def __init__(self, *, spec, cut, **kw):
        super().__init__(**kw)
        self.spec, self.cut = spec, cut

    def runtest(self) -> None:
        from frontends.powercut import _case
        r = _case(self.spec, self.cut)
        if not r.ok:
            raise PowercutCaseFailed(r.message)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, PowercutCaseFailed):
            c = self.cut
            return (f"power cut {c.mode} operation {c.op} ({c.flash} {c.kind} at "
                    f"{c.address:#08x}): {excinfo.value}")
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"power cut {self.cut.name} ({self.cut.flash} {self.cut.kind})"
