"""Snapshots through the CLI (run --save-snapshot / --snapshot), scenario
steps and --snapshot, and the test bench's boot-once helper."""
from __future__ import annotations

import io

from frontends.cli import main as cli_main
from emu.machine import Machine
from frontends.scenario import main as scenario_main
from frontends.testbench import booted


def test_cli_save_then_start_from_snapshot(tmp_path, fw, capsys):
    snap = str(tmp_path / "s.snap")
    rc = cli_main(["run", fw("snapshot_busy"), "--headless", "--seconds", "0.03",
                   "--flash-file", "none", "--console", "none", "--save-snapshot", snap])
    assert rc == 0
    assert "snapshot saved" in capsys.readouterr().err
    # continuing from the file for 20 ms == running 50 ms in one go
    one = Machine(fw("snapshot_busy"), flash_file=None)
    one.run(ms=30)
    one.run(ms=20)
    rc = cli_main(["run", fw("snapshot_busy"), "--headless", "--seconds", "0.02",
                   "--console", "none", "--snapshot", snap, "--save-snapshot", snap + "2"])
    assert rc == 0
    assert "restored" in capsys.readouterr().err
    two = Machine.from_snapshot(snap + "2")
    assert (two.clock.now, two.cpu.cycles, bytes(two.console)) == \
        (one.clock.now, one.cpu.cycles, bytes(one.console))
    assert two.board.screen().tobytes() == one.board.screen().tobytes()


def test_cli_refuses_snapshot_of_other_firmware(tmp_path, fw, capsys):
    snap = str(tmp_path / "s.snap")
    assert cli_main(["run", fw("pinetime_demo"), "--headless", "--seconds", "0.001",
                     "--flash-file", "none", "--console", "none",
                     "--save-snapshot", snap]) == 0
    capsys.readouterr()
    rc = cli_main(["run", fw("snapshot_busy"), "--headless", "--seconds", "0.001",
                   "--console", "none", "--snapshot", snap])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another firmware image" in err[0]


def test_scenario_steps_and_start_from_snapshot(tmp_path, fw):
    sc = tmp_path / "snap.yaml"
    sc.write_text("steps:\n"
                  "  - run: {ms: 40}\n"
                  "  - save_snapshot: out/b.snap\n"
                  "  - run: {ms: 30}\n"
                  "  - screenshot: out/a.png\n"
                  "  - load_snapshot: out/b.snap\n"
                  "  - run: {ms: 30}\n"
                  "  - expect_screen: out/a.png\n"
                  "  - wait_text: {text: 'frames=', timeout_ms: 50}\n")
    out = io.StringIO()
    assert scenario_main([str(sc), "--firmware", fw("snapshot_busy")], out=out) == 0, \
        out.getvalue()
    # every scenario of a suite starting from the saved, booted state
    sc2 = tmp_path / "from.yaml"
    sc2.write_text("steps:\n  - run: {ms: 30}\n  - expect_screen: out/a.png\n")
    out = io.StringIO()
    rc = scenario_main([str(sc2), "--firmware", fw("snapshot_busy"), "--snapshot",
                        str(tmp_path / "out" / "b.snap")], out=out)
    assert rc == 0, out.getvalue()
    # without the snapshot the same check fails (it can fail)
    out = io.StringIO()
    assert scenario_main([str(sc2), "--firmware", fw("snapshot_busy")], out=out) == 1


def test_scenario_load_snapshot_mismatch_is_a_failed_step(tmp_path, fw):
    m = Machine(fw("pinetime_demo"), flash_file=None)
    m.save_snapshot(str(tmp_path / "demo.snap"))
    sc = tmp_path / "bad.yaml"
    sc.write_text("steps:\n  - load_snapshot: demo.snap\n")
    out = io.StringIO()
    assert scenario_main([str(sc), "--firmware", fw("snapshot_busy")], out=out) == 1
    assert "another firmware image" in out.getvalue()


def test_booted_boots_once_and_restores(tmp_path, fw):
    a = booted(fw("snapshot_busy"), 25, cache_dir=str(tmp_path))
    files = list(tmp_path.iterdir())
    assert len(files) == 1
    b = booted(fw("snapshot_busy"), 25, cache_dir=str(tmp_path))
    assert list(tmp_path.iterdir()) == files          # no second boot
    assert a is not b
    assert (a.clock.now, a.cpu.cycles, bytes(a.console)) == \
        (b.clock.now, b.cpu.cycles, bytes(b.console))
    a.run(ms=10)
    b.run(ms=10)
    assert (a.cpu.cycles, a.board.screen().tobytes()) == \
        (b.cpu.cycles, b.board.screen().tobytes())
