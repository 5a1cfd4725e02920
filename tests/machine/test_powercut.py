"""Power lost at any instant (emu/powercut.py, frontends/powercut.py):
our journaling writer (firmware/common/journal.h) survives a cut at every
one of its flash operations, NVMC and NOR, before, during and after each;
its unsafe companion is caught; a cut's interrupted bits and its results are
the same for the same seed; the machine refuses to run without power; the
command, its JUnit, its bad input, and the pytest plugin's cases."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from emu import Machine
from emu.machine import POWER_LOST, PowerLostError
from emu.powercut import MODES, CampaignError, PowerCut, choose, partial_bits
from frontends.powercut import Spec, _case, plan, run_cases
from helpers.paths import ROOT

CAMPAIGN = os.path.join(ROOT, "examples", "powercut", "journal.yaml")


def _spec(fw, name: str, seed: int = 0) -> Spec:
    return Spec(fw(name), "pinetime", CAMPAIGN, seed, ("nvmc", "nor"))


def _quiet(spec, cuts):
    import io
    return run_cases(spec, cuts, out=io.StringIO())


def test_safe_journal_survives_a_cut_at_every_flash_operation(fw):
    spec = _spec(fw, "journal_safe")
    ops, cuts = plan(spec, MODES, None)
    kinds = {(o.flash, o.kind) for o in ops}
    assert kinds == {("nvmc", "erase"), ("nvmc", "program"), ("nor", "erase"),
                     ("nor", "program")}, ops
    assert len(cuts) == 3 * len(ops) and len(ops) >= 20
    results = _quiet(spec, cuts)
    bad = [(r.cut, r.message) for r in results if not r.ok]
    assert not bad, bad
    assert all(r.cut_tick is not None for r in results)


def test_unsafe_journal_is_caught(fw):
    spec = _spec(fw, "journal_unsafe")
    ops, cuts = plan(spec, MODES, None)
    results = _quiet(spec, cuts)
    bad = [r for r in results if not r.ok]
    # a cut between the erase of the only copy and its rewrite loses the counter
    assert bad and {r.cut.flash for r in bad} == {"nvmc", "nor"}, [r.message for r in bad]
    assert all("recovered" in r.message for r in bad), [r.message for r in bad]
    # and cuts outside those windows hold: the check is not simply failing everything
    assert any(r.ok for r in results)


def test_the_same_seed_gives_the_same_cuts_bits_and_results(fw):
    spec = _spec(fw, "journal_unsafe", seed=7)
    _ops, cuts = plan(spec, ("during",), 8)
    _ops2, again = plan(_spec(fw, "journal_unsafe", seed=7), ("during",), 8)
    assert cuts == again
    other = plan(_spec(fw, "journal_unsafe", seed=8), ("during",), 8)[1]
    assert other != cuts                        # the sample follows the seed
    a = [(r.ok, r.message, r.cut_tick) for r in _quiet(spec, cuts)]
    b = [(r.ok, r.message, r.cut_tick) for r in _quiet(spec, cuts)]
    assert a == b


def test_partial_bits_take_each_changing_bit_from_before_or_after():
    before = bytes([0xFF] * 64)
    after = bytes(range(64))                    # a program: only clears bits
    got = partial_bits(before, after, 1, "nvmc", 3)
    for b, a, g in zip(before, after, got):
        assert g & ~(a | b) == 0 and (g & a & b) == (a & b)   # unchanged bits stay
    assert got not in (before, after)           # some bits flipped, not all
    assert partial_bits(before, after, 1, "nvmc", 3) == got     # seeded
    assert partial_bits(before, after, 2, "nvmc", 3) != got
    assert partial_bits(after, after, 5, "nor", 0) == after     # nothing to change


def test_a_cut_mid_erase_leaves_a_partly_erased_nor_sector(fw):
    """The journal's NOR update erases a slot that holds a record: cut during
    that erase, the sector holds some of the old bits and some erased ones."""
    m = Machine(fw("journal_safe"), board="pinetime", flash_file=None)
    pc = PowerCut(m)
    m.run_until(lambda: "DONE" in m.console_text(), timeout_ms=3000)
    nor_erases = [o for o in pc.ops if o.flash == "nor" and o.kind == "erase"]
    m.close()
    # the last NOR erase rewrites slot 0, which holds the first record
    op = nor_erases[-1]
    index = pc.ops.index(op)
    m = Machine(fw("journal_safe"), board="pinetime", flash_file=None)
    seen = {}
    cut = PowerCut(m, at_op=index, mode="during", seed=3)
    cut.listeners.append(lambda o: seen.setdefault(o.index, bytes(
        m.board.flash.data[o.address:o.address + 16])) if o.index == index else None)
    r = m.run(ms=3000)
    assert r.reason == POWER_LOST and cut.cut["mode"] == "during"
    old = seen[index]
    now = bytes(m.board.flash.data[op.address:op.address + 16])
    assert old != b"\xff" * 16 and now not in (old, b"\xff" * 16)
    assert all(n & o == o for n, o in zip(now, old))   # an erase only sets bits
    m.close()


def test_cut_at_a_tick_then_no_run_until_power_comes_back(fw):
    m = Machine(fw("journal_safe"), board="pinetime", flash_file=None)
    at = 20_000_000
    pc = PowerCut(m, at_tick=at)
    r = m.run(ms=3000)
    # the tick falls inside an NVMC page erase (~85 ms, the CPU held): the
    # stall ends at the cut, and the page holds what an interrupted erase leaves
    assert r.reason == POWER_LOST and at <= m.clock.now < at + 8, m.clock.now
    assert pc.cut["mode"] == "tick-during" and pc.cut["op"].kind == "erase"
    with pytest.raises(PowerLostError):
        m.run(ms=1)
    console = m.console_text()
    pc.remove()
    m.power_cycle(seed=4)
    ram = m.cpu.read_mem(m.soc.RAM_BASE + 0x8000, 64)
    assert ram != bytes(64)                     # cells settle somewhere, seeded
    m.console.clear()
    assert m.run_until(lambda: "DONE" in m.console_text(), timeout_ms=3000)
    assert "RECOVERED nvmc" in m.console_text() and console == "RECOVERED nvmc none\n"
    m.close()


def test_bad_cut_arguments_are_refused():
    with pytest.raises(CampaignError):
        choose([], modes=("sideways",))
    with pytest.raises(ValueError):
        PowerCut.__init__(object.__new__(PowerCut), None, mode="sideways")


# -- the command -----------------------------------------------------------------
def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "frontends.cli", "powercut", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=600)


def test_command_table_junit_and_exit_status(fw, tmp_path):
    junit = tmp_path / "cuts.xml"
    r = _cli(fw("journal_safe"), "--scenario", CAMPAIGN, "--sample", "9", "--seed", "2",
             "--jobs", "2", "--junit", junit)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "| flash | operation | cut | cases | failed |" in r.stdout
    assert "9 of 9 cases held" in r.stdout
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "9" and suite.get("failures") == "0"
    r = _cli(fw("journal_unsafe"), "--scenario", CAMPAIGN, "--modes", "before",
             "--junit", junit)
    assert r.returncode == 1, r.stdout + r.stderr
    suite = ET.parse(junit).getroot()
    fails = int(suite.get("failures"))
    assert fails > 0 and r.stdout.count("  FAIL ") == fails
    assert f"FAIL the journal survives" in r.stdout


@pytest.mark.parametrize("args, says", [
    (["--modes", "sideways"], "--modes"),
    (["--flash", "eeprom"], "--flash"),
    (["--sample", "0"], "--sample"),
    (["--jobs", "0"], "--jobs"),
    (["--seed", "-1"], "--seed"),
    (["--flash-image", "/nonexistent/nor.bin"], "no such file"),
])
def test_command_bad_options_one_line(fw, args, says):
    r = _cli(fw("journal_safe"), "--scenario", CAMPAIGN, *args)
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("text, says", [
    ("steps: [", "invalid YAML"),
    ("- a list", "mapping"),
    ("steps: [{wait_text: {text: DONE}}]\n", "after_cut"),
    ("steps: [{wait_text: {text: X}}]\nafter_cut: [{wait_text: {text: X}}]\nplanets: 1\n",
     "unknown key"),
    ("steps: [{wait_text: {text: X}}]\nafter_cut: [{wait_text: {text: X}}]\n"
     "checks: {image: {start: 5}}\n", "image"),
    ("steps: [{fly: 1}]\nafter_cut: [{wait_text: {text: X}}]\n", "steps"),
])
def test_command_bad_campaign_one_line(fw, tmp_path, text, says):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    r = _cli(fw("journal_safe"), "--scenario", p)
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_pytest_plugin_gives_each_cut_as_a_test(fw, tmp_path):
    """Under pytest-xdist, as a cluster would run them."""
    def run(name):
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
             "--rootdir", str(tmp_path), CAMPAIGN, "--pinetime-firmware", fw(name),
             "--powercut-sample", "12", "--powercut-seed", "1"],
            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    r = run("journal_safe")
    assert r.returncode == 0 and "12 passed" in r.stdout, r.stdout + r.stderr
    r = run("journal_unsafe")
    assert r.returncode == 1 and " failed" in r.stdout and "power cut " in r.stdout, r.stdout
