"""The registry of twins (emu/twins.py) holds: every behaviour written in
Python and in C is listed with both sides' fingerprints as last recorded,
and every C function of the native modules is a twin's, a twin's helper, or
glue listed with the reason it has no Python twin.

The companions edit a copy of the tree: one side of a twin alone (the test
names it and the side), both sides (the test asks for a look at the parity
test and a new record), a new C function nobody registered; and they record
a one-sided change only with a reason."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from emu import twins
from helpers.paths import ROOT


def test_every_twin_is_in_step_and_every_c_function_registered():
    found = twins.problems()
    assert not found, "\n".join(found)


@pytest.fixture
def tree(tmp_path):
    """A copy of emu/ (sources only) to edit."""
    shutil.copytree(ROOT / "emu", tmp_path / "emu",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__", "build"))
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def test_a_c_side_edited_alone_is_named(tree):
    """Companion: the RTC core's re-arm changed in C only (a compare one tick
    late), the Python untouched: the twin and its C side are named."""
    _edit(tree / "emu/peripherals/_rtc.c", "cell[r->ci[1]] + (k + dk) * cell[r->ci[2]]",
          "cell[r->ci[1]] + (k + dk) * cell[r->ci[2]] + 1")
    found = twins.problems(tree)
    assert len(found) == 1, found
    assert found[0].startswith("rtc.rearm: its C side changed alone")


def test_a_python_side_edited_alone_is_named(tree):
    """Companion: Timer._count_at changed in Python only."""
    _edit(tree / "emu/peripherals/timer.py", "def _count_at(self, t: int):",
          "def _count_at(self, t: int):\n        t += 0")
    found = twins.problems(tree)
    assert len(found) == 1 and found[0].startswith("timer.count: its Python side changed alone"), \
        found


def test_a_helper_edited_is_its_twins_change(tree):
    """Companion: a static helper a twin calls (the clock heap's sift-down)
    counts as that twin's C side."""
    _edit(tree / "emu/_clock.h", "if (c + 1 < n && hent_less(&h[c + 1], &h[c]))",
          "if (c + 1 < n && !hent_less(&h[c], &h[c + 1]))")
    found = twins.problems(tree)
    assert found and all("C side changed alone" in f for f in found), found
    assert any(f.startswith("clock.") for f in found), found


def test_both_sides_edited_ask_for_a_new_record(tree):
    _edit(tree / "emu/peripherals/wdt.py", "def _update_pause(self) -> None:",
          "def _update_pause(self) -> None:\n        pass")
    _edit(tree / "emu/peripherals/_wdt.c", "int asleep = PyObject_IsTrue(arg);",
          "int asleep = PyObject_IsTrue(arg) == 1;")
    found = twins.problems(tree)
    assert len(found) == 1 and found[0].startswith("wdt.sleep: both sides changed"), found


def test_comments_and_layout_are_not_changes(tree):
    """A comment, a docstring and re-wrapping change no fingerprint."""
    _edit(tree / "emu/peripherals/_rtc.c", "static int rc_rearm(RtcCore *r) {",
          "static int rc_rearm(RtcCore *r) {   /* a new comment */\n")
    _edit(tree / "emu/peripherals/rtc.py", "def _rearm(self) -> None:",
          "def _rearm(self) -> None:\n        # a new comment")
    assert twins.problems(tree) == []


def test_an_unregistered_c_function_is_named(tree):
    """Companion: a new C function no twin lists and NATIVE_ONLY does not
    excuse."""
    _edit(tree / "emu/peripherals/_rtc.c", "static int rc_rearm(RtcCore *r) {",
          "static int rc_new_step(RtcCore *r) {\n    return r->num_cc;\n}\n\n"
          "static int rc_rearm(RtcCore *r) {")
    found = twins.problems(tree)
    assert found == ["emu/peripherals/_rtc.c:rc_new_step is in no twin of emu/twins.py and "
                     "not in NATIVE_ONLY: register its Python twin, or say why it has none"]


def test_recording_a_one_sided_change_needs_a_reason(tree):
    """--record refuses a one-sided change without --alone, and records the
    reason with it (in the copy's registry)."""
    reg = tree / "emu" / "twins.py"
    _edit(tree / "emu/peripherals/_rtc.c", "cell[r->ci[1]] + (k + dk) * cell[r->ci[2]]",
          "cell[r->ci[1]] + (k + dk) * cell[r->ci[2]] + 1")
    before = reg.read_text()
    with pytest.raises(SystemExit, match="rtc.rearm: one side changed alone"):
        twins.record(path=reg, root=tree)
    assert reg.read_text() == before
    done = twins.record({"rtc.rearm": "a test's edit"}, path=reg, root=tree)
    assert done == ["rtc.rearm"]
    assert re.search(r'Twin\("rtc.rearm",.*?alone="a test\'s edit"\)', reg.read_text(), re.S)


def test_the_command_line_says_all_in_step(capsys):
    assert twins.main([]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("all in step") and f"{len(twins.TWINS)} twins" in out
