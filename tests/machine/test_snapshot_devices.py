"""Explicit save_state/load_state of the board devices (device level, fake
bus), and a machine snapshot with a NOR flash erase in flight."""
from __future__ import annotations

from emu.clock import TICKS_PER_MS, Clock
from emu.devices.bma421 import Bma421
from emu.devices.simple import Battery, Button, VibrationMotor
from emu.devices.xt25f32 import Xt25f32
from emu.machine import Machine
from emu.signals import Pin


def test_nor_flash_state_with_erase_in_flight():
    c = Clock()
    f = Xt25f32(c, None)
    f.data[0x1000:0x1004] = b"\x00\x01\x02\x03"
    for cmd in ([0x06], [0x20, 0x00, 0x10, 0x00]):       # WREN, sector erase 0x1000
        f.select(True)
        for b in cmd:
            f.transfer(b)
        f.select(False)
    assert f.wip and f._busy_ev.pending
    st = f.save_state()
    c2 = Clock()
    g = Xt25f32(c2, None)
    g.load_state(st)
    assert g.wip and g._busy_ev.when == f._busy_ev.when and g.data[0x1000] == 0
    c2.advance_to(f._busy_ev.when)
    assert not g.wip and g.data[0x1000:0x1004] == b"\xff" * 4 and g.dirty


def test_accelerometer_steps_and_registers():
    c = Clock()
    a = Bma421(c)
    a.regs[0x40] = 0x17
    a.set_orientation(0.5, -0.25, 0.75)
    a.set_steps_per_minute(120)
    st = a.save_state()
    c2 = Clock()
    b = Bma421(c2)
    b.load_state(st)
    assert b.regs == a.regs and b.vector == (0.5, -0.25, 0.75) and b._spm == 120
    assert b.save_state() == st


def test_button_timeline_motor_battery():
    c = Clock()
    pins = [Pin(f"P{i}", i) for i in range(4)]
    btn = Button(c, pins[0], pins[1])
    pins[1].drive("gpio", True)                  # BUTTON_EN high
    btn.hold(30, delay_ms=5)                     # queued as data
    motor = VibrationMotor(c, pins[2])
    pins[2].drive("gpio", False)                 # motor on
    bat = Battery(pins[3], Pin("x"), voltage=3.5)
    bat.charging = True
    c2 = Clock()
    pins2 = [Pin(f"P{i}", i) for i in range(4)]
    btn2 = Button(c2, pins2[0], pins2[1])
    pins2[1].drive("gpio", True)
    motor2 = VibrationMotor(c2, pins2[2])
    bat2 = Battery(pins2[3], Pin("x"))
    btn2.load_state(btn.save_state())
    motor2.load_state(motor.save_state())
    bat2.load_state(bat.save_state())
    assert motor2.timeline == motor.timeline and bat2.voltage == 3.5 and bat2.charging
    assert not pins2[3].level                    # CHARGING driven low while charging
    c2.advance_to(10 * TICKS_PER_MS)
    assert btn2.pressed and pins2[0].level       # the queued press happened at 5 ms
    c2.advance_to(40 * TICKS_PER_MS)
    assert not btn2.pressed


def test_machine_snapshot_during_nor_flash_operation(tmp_path, fw):
    m = Machine(fw("pinetime_flash"), flash_file=None)
    assert m.run_until(lambda: m.board.flash._busy_ev.pending, timeout_ms=200, poll_ms=0.05)
    path = str(tmp_path / "nor.snap")
    m.save_snapshot(path)
    r = Machine.from_snapshot(path)
    assert r.board.flash._busy_ev.when == m.board.flash._busy_ev.when
    ra, rb = m.run(ms=100), r.run(ms=100)
    assert (ra.reason, ra.exit_code) == (rb.reason, rb.exit_code)
    assert (m.clock.now, m.cpu.cycles, bytes(m.console)) == (r.clock.now, r.cpu.cycles,
                                                             bytes(r.console))
    assert m.board.flash.data == r.board.flash.data
