"""bench/bench_cpu.py prints emulated MIPS: its untimed counting run executes
the same instructions and cycles as the timed run (the emulator is
deterministic), so instructions / wall time of the timed run is exact."""
from __future__ import annotations

import importlib.util

from helpers.paths import ROOT


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_cpu", ROOT / "bench" / "bench_cpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_counts_instructions_and_prints_mips(firmware_dir, capsys):
    bench = load_bench()
    insns, cycles = bench.count_instructions("bench_idle", 200_000, False)
    from emu import Machine
    m = Machine(str(firmware_dir / "bench_idle.elf"), board="nrf52832")
    m.run(ms=200_000)
    assert cycles == m.cpu.cycles
    assert 0 < insns <= cycles          # Cortex-M4: at least one cycle per instruction
    bench.bench("bench_idle", 200_000, False)
    out = capsys.readouterr().out
    assert f"instructions={insns} " in out and "MIPS=" in out and "warning" not in out
