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


# -- a cut's flash from one logged run (emu.powercut.FlashLog) --------------------
def _journal(fw, name):
    mk = lambda: Machine(fw(name), board="pinetime", flash_file=None)          # noqa: E731
    work = lambda m: m.run_until(lambda: "DONE" in m.console_text(),          # noqa: E731
                                 timeout_ms=3000)
    return mk, work


@pytest.mark.parametrize("name", ["journal_safe", "journal_unsafe"])
def test_flash_log_gives_the_flash_a_cut_leaves_at_every_operation(fw, name, tmp_path):
    """What FlashLog.state says the flashes hold after a cut is, byte for
    byte, what a PowerCut there leaves (NVMC, UICR and NOR; every operation,
    every mode, the bits of a cut during one seeded alike), also from a log
    saved and loaded again."""
    from emu.powercut import FlashLog, flash_state, logged_run
    mk, work = _journal(fw, name)
    log, m = logged_run(mk, work)
    m.close()
    assert len(log.ops) >= 20 and {o.flash for o in log.ops} == {"nvmc", "nor"}
    log.save(str(tmp_path / "j.flashlog"))
    again = FlashLog.load(str(tmp_path / "j.flashlog"))
    assert again.ops == log.ops and again.console == log.console
    for op in log.ops:
        for mode in MODES:
            m = mk()
            pc = PowerCut(m, at_op=op.index, mode=mode, seed=5)
            try:
                work(m)
            except Exception:                     # noqa: BLE001 - the power went
                pass
            assert pc.cut is not None and pc.cut["op"] == op
            got = flash_state(m)
            m.close()
            want = log.state(op.index, mode, seed=5)
            assert got == want, (op.describe(), mode,
                                 [k for k in got if got[k] != want[k]])
            assert again.state(op.index, mode, seed=5) == want
    # the seed matters only to a cut during an operation that changes bits
    op = next(o for o in log.ops if o.kind == "erase"
              and log.state(o.index, "before") != log.state(o.index, "after"))
    assert log.state(op.index, "during", 1) != log.state(op.index, "during", 2)


def test_a_case_from_the_log_boots_as_the_cut_machine_does(fw):
    """The cases of a campaign run from the log (a fresh machine given the
    flash a cut leaves, powered on) say what run_case's say: every cut of the
    unsafe journal, the same verdicts and the same console after the cut."""
    from emu.powercut import Cut, journal_check, logged_run, run_case, run_logged_case
    mk, work = _journal(fw, "journal_unsafe")
    log, m = logged_run(mk, work)
    m.close()
    consoles = {}

    def after(key):
        def fn(m):
            work(m)
            consoles[key] = m.console_text()
        return fn
    verdicts = []
    for op in log.ops:
        for mode in MODES:
            cut = Cut(op.index, mode, op.flash, op.kind, op.address)
            a = run_case(mk, work, after(("run", cut.name)), cut, seed=3,
                         checks=[journal_check()])
            b = run_logged_case(mk, log, after(("log", cut.name)), cut, seed=3,
                                checks=[journal_check()])
            assert (a.ok, a.message) == (b.ok, b.message), cut
            assert consoles[("run", cut.name)] == consoles[("log", cut.name)], cut
            verdicts.append(a.ok)
    assert not all(verdicts) and any(verdicts)    # the unsafe journal is caught either way


def test_a_resumed_run_numbers_its_operations_on(fw, tmp_path):
    """PowerCut(first_op=K) from a snapshot taken after K operations: the
    same indexes, cuts and seeded bits as in the whole run."""
    from emu.powercut import flash_state, logged_run
    mk, work = _journal(fw, "journal_safe")
    log, m = logged_run(mk, work)
    m.close()
    m = mk()
    pc = PowerCut(m)
    m.run_until(lambda: len(pc.ops) >= 10, timeout_ms=3000)
    k = len(pc.ops)
    pc.remove()
    snap = tmp_path / "mid.snap"
    m.save_snapshot(str(snap))
    m.close()
    op = next(o for o in log.ops[k:] if o.kind == "erase")
    m = Machine.from_snapshot(str(snap))
    pc = PowerCut(m, at_op=op.index, mode="during", seed=9, first_op=k)
    try:
        work(m)
    except Exception:                             # noqa: BLE001 - the power went
        pass
    assert pc.cut["op"] == op                     # same index, address, tick
    assert flash_state(m) == log.state(op.index, "during", seed=9)
    m.close()


def test_flash_log_refuses_a_cut_it_cannot_give(fw):
    from emu.powercut import FlashLog, FlashOp
    log = FlashLog.__new__(FlashLog)
    log.initial = {"flash": bytearray(16), "uicr": bytearray(16), "nor": bytearray(16)}
    log.flash_size, log.uicr_base, log.console = 16, 0x10001000, b""
    log.ops, log._changes, log._console = [], [], []
    log._add(FlashOp(0, "nor", "erase", 0, 4, 100, 50), 0, None, 0)
    log._add(FlashOp(1, "nvmc", "program", 4, 4, 120, 10), 4, b"\0" * 4, 0)
    with pytest.raises(CampaignError, match="in flight"):
        log.state(1, "before")                    # the NOR erase is not over yet
    with pytest.raises(CampaignError, match="begins before"):
        log.state(0, "after")                     # the NVMC program began meanwhile
    assert log.state(0, "before")["nor"] == bytearray(16)
    with pytest.raises(CampaignError, match="not in the log"):
        log.state(5, "before")


def test_files_check_takes_the_wasp_layout(tmp_path):
    """``files: {layout: wasp}`` (as docs/powerloss.md writes it) reads a
    wasp-os littlefs."""
    from emu.norfs import NOR_SIZE, NorFs
    from frontends.powercut import _files, load_campaign
    fs = NorFs(b"\xff" * NOR_SIZE, "wasp-os", format=True)
    fs.write("/a.txt", b"hello")
    p = tmp_path / "c.yaml"
    p.write_text("steps: [{wait_text: {text: X}}]\nafter_cut: [{wait_text: {text: X}}]\n"
                 "checks: {files: {layout: wasp}}\n")
    c = load_campaign(str(p))["checks"]["files"]

    class M:
        class board:
            class flash:
                data = fs.image()
    assert _files(M, c) == {"/a.txt": b"hello"}
