"""Determinism: same firmware -> same cycles, time and console; the native block
hook and the pure-Python fallback count identical cycles; guest bus errors never
raise Python exceptions."""
import pytest

from emu import Machine

FIRMWARES = ["cpu_exceptions", "cpu_systick", "cpu_pendsv", "cpu_fpu", "cpu_wfi"]


def run(path, **kw):
    m = Machine(path, board="nrf52832", **kw)
    r = m.run(ms=3000)
    return m, r


@pytest.mark.parametrize("name", FIRMWARES)
def test_same_run_twice(fw, name):
    m1, r1 = run(fw(name))
    m2, r2 = run(fw(name))
    assert r1.reason == r2.reason == "exit"
    assert (m1.cpu.cycles, m1.clock.now) == (m2.cpu.cycles, m2.clock.now)
    assert m1.console_text() == m2.console_text()


@pytest.mark.parametrize("name", ["cpu_exceptions", "cpu_systick", "cpu_dwt", "cpu_nesting"])
def test_native_and_python_block_hooks_agree(fw, name):
    m1, r1 = run(fw(name))
    m2, r2 = run(fw(name), pure_python=True)
    assert type(m1.cpu.counter).__name__ != type(m2.cpu.counter).__name__
    assert r1.reason == r2.reason == "exit"
    assert m1.cpu.cycles == m2.cpu.cycles
    assert m1.console_text() == m2.console_text()


def test_unmapped_access_never_raises(fw):
    # cpu_faults reads 0x30000000 and 0x30000004 (unmapped): handled as BusFaults
    m, r = run(fw("cpu_faults"))
    assert r.reason == "exit" and r.exit_code == 0
    assert m.cpu.bfar == 0x30000004
