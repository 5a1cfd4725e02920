"""The native modules: which C sources each is built from (the one list).

Read by setup.py (which builds them), emu/native.py (which loads them and
says what is missing), tests/test_layout.py (their layers), the registry
of twins (emu/twins.py) and the test build with fault switches
(tests/helpers/nativebuild.py).  Pure data: setup.py reads this file without
importing the package.

Each module's files sit beside the Python they speed up, in the layer
that Python is in (docs/architecture.md): the module-defining file first,
then its other files; headers are found by the modules' #includes.
"""

NATIVE_MODULES = {
    # the clock's types; its steps are emu/_clock.h, shared by every module below
    "emu._clock": ["emu/_clock.c"],
    # the register-access fabric: MMIO callbacks, the op interpreter, Cells, streams
    "emu.soc._mmio": ["emu/soc/_mmio.c", "emu/soc/_cells.c", "emu/soc/_slot.c",
                      "emu/soc/_ops.c", "emu/soc/_streams.c"],
    # the block hook: cycles, deadlines, the mask and loop watches (loaded with ctypes)
    "emu.cpu._blockhook": ["emu/cpu/_blockhook.c"],
    # the Cortex-M: registers, NVIC, MPU checks, exceptions, WFE, the run loop
    "emu.cpu._core": ["emu/cpu/_core.c", "emu/cpu/_fastregs.c", "emu/cpu/_nvic.c",
                      "emu/cpu/_mpu.c", "emu/cpu/_exceptions.c", "emu/cpu/_wfe.c",
                      "emu/cpu/_runloop.c", "emu/cpu/_flashguard.c", "emu/cpu/_pagemap.c",
                      "emu/cpu/_cost.c"],
    # peripherals' cores: RTC, TIMER, WDT
    "emu.peripherals._cores": ["emu/peripherals/_cores.c", "emu/peripherals/_rtc.c",
                               "emu/peripherals/_timer.c", "emu/peripherals/_wdt.c"],
}

# every module is compiled with these (hidden symbols: one module's
# functions never meet another's; the block hook marks its ctypes entry
# points EMU_EXPORT)
CFLAGS = ["-O2", "-fvisibility=hidden", "-flto"]
# a module's files are compiled apart and optimised together (link-time:
# the MMIO callbacks' calls into the op interpreter inline as they did when
# all was one file)
LDFLAGS = ["-O2", "-flto"]
