"""The registry of twins: every behaviour written both in Python and in C.

The Python is the reference (the pure-Python path runs it, and so does any
machine whose model or CPU has a step replaced); the C is the fast path of
the native modules (emu/native_build.py), written again from the Python,
step for step.  Two copies of one behaviour drift apart unless something
watches them; this registry is that watch.  Each :class:`Twin` names:

* ``python``: the reference's functions, ``"module:Qualified.name"``;
* ``native``: the C functions that stand for them, ``"path.c:function"``
  (their static helpers count as part of them, found by the calls);
* ``cases``: runs of our own firmware (firmware/tests) that reach the twin,
  and ``drivers``: differential drivers (tests/twins/drivers.py) for what
  only the Python API reaches (a clock advanced by hand, a register read
  between runs)
  (tests/twins/test_parity.py runs each with the twin's C side on and
  off and compares the machines; tests/twins/test_coverage.py runs them on
  a coverage build and requires every behavioural line of the C side to
  run: error paths aside);
* ``off``: how the C side is turned off for that comparison;
* ``fingerprint``: both sides' bodies, hashed (comments, docstrings and
  layout aside), as last recorded.

tests/twins/test_registry.py fails when one side of a twin changed and the
other did not (change both, or say why not: ``python -m emu.twins --record
--alone NAME "why"``), when both changed and were not recorded again (look
at the parity test, then ``python -m emu.twins --record``), and when a C
function exists that is neither a twin's, a twin's helper, nor listed in
:data:`NATIVE_ONLY` with the reason it has no Python twin.

A behaviour with no Python twin at all (the block hook's loop skipping,
the engine's TLB fill) is a twin with an empty ``python``: it is compared
against the machine without it (``off``), and only its C side is watched.
"""
from __future__ import annotations

import argparse
import ast
import fnmatch
import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    """A run of one of our firmware images (firmware/build/<firmware>.elf);
    ``power``: with the energy model watching (machine.power(): the models
    hand watched events to their Python)."""
    firmware: str
    ms: float = 100
    board: str = "nrf52832"
    power: bool = False

    def machine(self, build_dir):
        """The machine of this case, not run yet."""
        from emu import Machine
        kw = {"board": self.board}
        if self.board == "pinetime":
            kw["flash_file"] = None
        return Machine(f"{build_dir}/{self.firmware}.elf", **kw)

    def start(self, m) -> None:
        if self.power:
            m.power(record=False)


@dataclass(frozen=True)
class Twin:
    name: str
    python: tuple
    native: tuple
    cases: tuple
    # ("pure",): the whole pure-Python path; ("attr", "module:Class.attr", value):
    # a class switch set to value for the run (the C side off)
    off: tuple
    fingerprint: str = ""
    alone: str = ""                 # why one side last changed alone (--alone)
    drivers: tuple = ()             # differential drivers of both sides: "path.py::function"


# the cases several twins share
RTC = Case("periph_rtc_core", 300)
TIMER = Case("periph_timer_core", 300)
EXC = Case("cpu_exceptions", 100)
FAST_RET = Case("cpu_fast_return", 100)
NEST = Case("cpu_nesting", 100)
PENDSV = Case("cpu_pendsv", 100)
FPU = Case("cpu_fpu", 100)
MPU = Case("cpu_mpu", 300)
WFE = Case("cpu_sev_wfe", 200)
WFE_LOOP = Case("cpu_wfe_loop", 200)
WFI = Case("cpu_wfi", 3000)
SYSTICK = Case("cpu_systick", 200)
POLL = Case("cpu_poll_loops", 300)
SPIN = Case("cpu_idle_spin", 100)
LOCKUP = Case("cpu_lockup", 100)
PATHS = Case("cpu_twin_paths", 100)
STACK_ERR = Case("cpu_stack_error", 50)
UNSTACK_ERR = Case("cpu_unstack_error", 50)
BAD_VECTOR = Case("cpu_bad_vector", 50)
BAD_CHAIN = Case("cpu_bad_vector_chain", 50)
PERIPH = Case("periph_twin_paths", 300)
TIMER_POWER = Case("periph_timer_core", 300, power=True)
RTC_POWER = Case("periph_rtc_core", 300, power=True)
FAULTS = Case("cpu_faults", 3000)
SENSORS = Case("pinetime_sensors", 3000, "pinetime")
WEB = Case("pinetime_web", 3000, "pinetime")
STORES = Case("cpu_loop_stores", 100)
FAST = Case("periph_fastpath", 100)
DISPLAY = Case("pinetime_display", 1500, "pinetime")
NVMC = Case("periph_nvmc", 300)
RAMCODE = Case("cpu_ram_code", 100)
WDT_FEED = Case("periph_wdt_feed", 300)
WDT_SLEEP = Case("periph_wdt_sleep", 300)
WDT_POLL = Case("periph_wdt_poll", 300)
PURE = ("pure",)

TWINS = (
    # -- the clock (emu/clock.py; emu/_clock.h, emu/_clock.c) ---------------
    Twin("clock.schedule",
         python=("emu.clock:Event.schedule_at", "emu.clock:Event.schedule_in",
                 "emu.clock:Event.schedule_first", "emu.clock:_push",
                 "emu.clock:Event.cancel", "emu.clock:Clock.event", "emu.clock:Clock._compact"),
         native=("emu/_clock.h:clk_schedule", "emu/_clock.h:clk_schedule_seq",
                 "emu/_clock.h:clk_schedule_first", "emu/_clock.h:clk_cancel",
                 "emu/_clock.h:clk_compact", "emu/_clock.c:Event_schedule_in",
                 "emu/_clock.c:Event_schedule_first", "emu/_clock.c:Clock_event"),
         cases=(RTC, TIMER, SYSTICK), off=PURE,
         drivers=("tests/twins/drivers.py::clock",),
         fingerprint="da811ac179387984/9eed4772b40a8d4d",
         alone="the Python side's schedule_at and schedule_first share one _push (as the C side's clk_schedule and clk_schedule_first share clk_schedule_seq): the same steps, written once"),
    Twin("clock.fire",
         python=("emu.clock:Clock._clean", "emu.clock:Clock.next_event_time",
                 "emu.clock:Clock.run_due", "emu.clock:Clock.advance_to",
                 "emu.clock:Clock.pending_events"),
         native=("emu/_clock.h:clk_clean", "emu/_clock.h:clk_run_due",
                 "emu/_clock.c:Clock_next_event_time", "emu/_clock.c:Clock_advance_to",
                 "emu/_clock.c:Clock_pending_events"),
         cases=(RTC, TIMER, SYSTICK), off=PURE,
         drivers=("tests/twins/drivers.py::clock",),
         fingerprint="6307b525433765bb/2680b94ed85061d7"),
    # -- the register-access fabric (emu/soc/ops.py, bus.py; emu/soc/_*.c) ----
    Twin("cells",
         python=("emu.soc.ops:PyCells._check", "emu.soc.ops:PyCells.__setitem__",
                 "emu.soc.ops:PyCells.replace", "emu.soc.ops:PyCells.level"),
         native=("emu/soc/_cells.c:cells_index", "emu/soc/_cells.c:Cells_setitem",
                 "emu/soc/_cells.c:Cells_replace", "emu/soc/_cells.c:Cells_level"),
         cases=(FAST, RTC), off=PURE,
         drivers=("tests/twins/drivers.py::cells",),
         fingerprint="3406ab3b2fbb035c/d7ed469c8b282e29"),
    Twin("ops.resolve",
         python=("emu.soc.ops:Op.steady", "emu.soc.ops:Op.with_guard"),
         native=("emu/soc/_ops.c:op_resolve", "emu/soc/_ops.c:op_bind_cells"),
         cases=(PATHS, FAST, RTC, POLL), off=PURE,
         fingerprint="e50131b510c00ba6/456d28e8a58571b4",
         alone="a new op kind, FEED (a watchdog's reload request on the model's cells): resolved and bound to the cells in C; the pure-Python interpreter hands FEED to the model's write (Wdt.write, the reference), as it does TXD"),
    Twin("ops.read",
         python=("emu.soc.ops:py_reader", "emu.soc.ops:_guard_hit"),
         native=("emu/soc/_ops.c:exec_read", "emu/soc/_ops.c:cells_read",
                 "emu/soc/_ops.c:guard_hit", "emu/soc/_ops.c:clock_now"),
         cases=(FAST, RTC, POLL, Case("cpu_dwt", 100)), off=PURE,
         drivers=("tests/twins/drivers.py::outside_slice", "tests/twins/drivers.py::bus_probe",),
         fingerprint="4d014d8954c368a8/6b56c8ff172d0cc8"),
    Twin("ops.write",
         python=("emu.soc.ops:py_writer", "emu.soc.ops:_level"),
         native=("emu/soc/_ops.c:exec_write", "emu/soc/_ops.c:cells_write_x",
                 "emu/soc/_ops.c:cells_write", "emu/soc/_ops.c:cells_lower"),
         cases=(PERIPH, PATHS, FAST, RTC, Case("periph_line_lower", 100), Case("gpio_out_ops", 100)),
         off=PURE,
         fingerprint="c3cd05f01c60185d/c43ed09ca1856e32"),
    Twin("bus.access",
         python=("emu.soc.bus:PeripheralBus._handlers",
                 "emu.soc.bus:PeripheralBus._ctypes_callbacks"),
         native=("emu/soc/_slot.c:slot_read", "emu/soc/_slot.c:slot_write",
                 "emu/soc/_slot.c:slot_op", "emu/soc/_slot.c:report"),
         cases=(FAST, RTC), off=PURE,
         drivers=("tests/twins/drivers.py::bus_probe",),
         fingerprint="816689d5ec2f23ed/c213dd7a3986e3d0",
         alone="slot_write carries the FEED op out without the GIL inside a slice (the time from the slice's base) and notes it for the loop watch; the pure-Python bus hands FEED to the model"),
    Twin("cpu.sync_time",
         python=("emu.cpu.cortexm:CortexM.sync_time",),
         native=("emu/soc/_slot.c:do_sync", "emu/soc/_slot.c:sync_native",
                 "emu/soc/_slot.c:sync_attrs", "emu/cpu/_runloop.c:lc_sync"),
         cases=(RTC, TIMER, FAST), off=PURE,
         drivers=("tests/twins/drivers.py::outside_slice",),
         fingerprint="6fa3a10510db697f/011f926fed699451"),
    Twin("spi.stream",
         python=("emu.peripherals.spi:Spi._write_txd", "emu.peripherals.spi:Spi._read_rxd",
                 "emu.peripherals.spi:Spi._byte_done", "emu.peripherals.spi:Spi._rx_push",
                 "emu.peripherals.spi:Spi._rx_pop", "emu.peripherals.spi:Spi._stream_flush"),
         native=("emu/soc/_streams.c:stream_access", "emu/soc/_streams.c:stream_complete",
                 "emu/soc/_streams.c:streams_off_c"),
         cases=(Case("pinetime_spi_stream", 300, "pinetime"), DISPLAY, Case("pinetime_flash", 1500, "pinetime")), off=PURE,
         fingerprint="ba6b08023812509a/896f44b098db5b19"),
    # -- the block hook (emu/cpu/cycles.py; emu/cpu/_blockhook.c) -------------
    Twin("cycles.block_hook",
         python=("emu.cpu.cycles:PyBlockCounter._hook", "emu.cpu.cycles:PyBlockCounter.insert"),
         native=("emu/cpu/_blockhook.c:bh_block_hook", "emu/cpu/_blockhook.c:bh_insert_flags",
                 "emu/cpu/_blockhook.c:bh_insert"),
         cases=(Case("cpu_many_blocks", 300), EXC, NEST, FAST_RET, Case("cpu_poll_loop_boundary", 100)), off=PURE,
         fingerprint="25943418e85fc913/900e69029c6c44f5",
         alone="the hook calls countdown_step (loop.countdown, native only: the pure-Python counter runs every iteration, which is the reference)"),
    Twin("loop.skip", python=(),
         native=("emu/cpu/_blockhook.c:loop_step", "emu/cpu/_blockhook.c:bh_call_skip",
                 "emu/soc/_slot.c:loop_note", "emu/soc/_slot.c:loop_note_write",
                 "emu/soc/_slot.c:loop_note_other_write", "emu/soc/_slot.c:loop_note_counter",
                 "emu/soc/_slot.c:op_stable_read", "emu/soc/_slot.c:slot_replay",
                 "emu/soc/_ops.c:feed_replay"),
         cases=(PATHS, POLL, SPIN, STORES, WDT_POLL), off=("attr", "emu.cpu.cortexm:CortexM.loop_skip", False),
         drivers=("tests/twins/drivers.py::loop_log",),
         fingerprint="-/94e00a9d6770c5c8",
         alone="a write whose effect is its time plus a constant (the watchdog's reload, LOOP_TIMED) may repeat in a counted loop: slot_replay moves the deadline to the last iteration counted's feed (feed_replay); up to 16 accesses an iteration (the Adafruit bootloader's: RUNSTATUS and eight RR); native only, compared with the machine that runs every iteration and in pure Python (periph_wdt_poll)"),
    Twin("loop.countdown", python=(),
         native=("emu/cpu/_blockhook.c:countdown_step",),
         cases=(Case("cpu_delay_loops", 200),),
         off=("attr", "emu.cpu.cortexm:CortexM.delay_skip", False),
         fingerprint="-/d2e7e54aa34455f9",
         alone="new: a native-only behaviour (no Python twin), compared with the machine that runs every iteration (delay_skip False) and in pure Python"),
    # -- the CPU (emu/cpu/*.py; emu/cpu/_core's files) ------------------------
    Twin("regs.access",
         python=("emu.cpu.fastregs:install",),
         native=("emu/cpu/_fastregs.c:Regs_reg_read", "emu/cpu/_fastregs.c:Regs_reg_write",
                 "emu/cpu/_fastregs.c:Regs_reg_read_batch",
                 "emu/cpu/_fastregs.c:Regs_reg_write_batch"),
         cases=(EXC, FPU), off=PURE,
         drivers=("tests/twins/drivers.py::regs",),
         fingerprint="d6c4ea5c483d32bb/99e50688716e5365"),
    Twin("exc.frames",
         python=("emu.cpu.exceptions:Exceptions._entry_frame", "emu.cpu.exceptions:Exceptions._enter",
                 "emu.cpu.exceptions:Exceptions._set_mode",
                 "emu.cpu.exceptions:Exceptions._exception_return"),
         native=("emu/cpu/_fastregs.c:Regs_exc_push", "emu/cpu/_fastregs.c:Regs_exc_enter",
                 "emu/cpu/_fastregs.c:exc_pop_c", "emu/cpu/_fastregs.c:Regs_exc_pop"),
         cases=(STACK_ERR, UNSTACK_ERR, PATHS, EXC, FPU, NEST, Case("cpu_unpriv", 100)), off=PURE,
         fingerprint="e79bf1a5542155b9/d83638169eed9c07"),
    Twin("nvic.priorities",
         python=("emu.cpu.nvic:Nvic.group_prio", "emu.cpu.nvic:Nvic.exc_prio",
                 "emu.cpu.nvic:Nvic.exc_enabled", "emu.cpu.nvic:Nvic.active_priority",
                 "emu.cpu.nvic:Nvic.execution_priority", "emu.cpu.nvic:Nvic.best_pending",
                 "emu.cpu.exceptions:Exceptions._priority_after_return"),
         native=("emu/cpu/_nvic.c:nvic_load", "emu/cpu/_nvic.c:nv_group",
                 "emu/cpu/_nvic.c:nv_best", "emu/cpu/_nvic.c:nv_active_prio",
                 "emu/cpu/_nvic.c:nv_exec_prio"),
         cases=(PATHS, NEST, FAST_RET, Case("cpu_nvic_enable", 100)),
         off=("attr", "emu.cpu.cortexm:CortexM.native_entries", False),
         fingerprint="b5b1aaa5b00b380c/6d80511eee7b3e79"),
    Twin("nvic.pending_to_enter",
         python=("emu.cpu.nvic:Nvic._pending_to_enter",),
         native=("emu/cpu/_nvic.c:nv_pending_to_enter",),
         cases=(PATHS, FAST_RET, NEST), off=("attr", "emu.cpu.cortexm:CortexM.native_entries", False),
         fingerprint="12239565e2214e3e/ca0c8f89086ac400"),
    Twin("nvic.pends",
         python=("emu.cpu.nvic:Nvic.set_pending", "emu.cpu.nvic:Nvic._pending_changed",
                 "emu.cpu.scs:SystemControlSpace.write_word"),
         native=("emu/cpu/_nvic.c:pend_changed", "emu/cpu/_nvic.c:pend_one",
                 "emu/cpu/_nvic.c:ExcHook_pend_write"),
         cases=(PATHS, PATHS, PENDSV, FAST_RET, Case("cpu_it_irq", 100)),
         off=("attr", "emu.cpu.cortexm:CortexM.native_entries", False),
         fingerprint="2d6880de6b43ba19/e0cb65699a0b4af6",
         alone="write_word takes the MPU's registers right after ICPR (the same write, 25 comparisons and a closure sooner); the pends it shares with ExcHook_pend_write are unchanged"),
    Twin("scs.icsr",
         python=("emu.cpu.scs:SystemControlSpace._icsr",),
         native=("emu/cpu/_nvic.c:ExcHook_icsr_read",),
         cases=(PATHS, PENDSV, NEST), off=PURE,
         fingerprint="86ac395815885432/6289e11ac8c7756e"),
    Twin("mpu.checks",
         python=("emu.cpu.mpu:Mpu.access", "emu.cpu.mpu:Mpu.off_now", "emu.cpu.mpu:Mpu.sync",
                 "emu.cpu.exceptions:Exceptions._stacking_violation"),
         native=("emu/cpu/_mpu.c:mpu_load", "emu/cpu/_mpu.c:mpu_access",
                 "emu/cpu/_mpu.c:mpu_off_now", "emu/cpu/_mpu.c:mpu_stack_ok",
                 "emu/cpu/_mpu.c:mpu_sync_c"),
         cases=(PATHS, MPU,),
         off=("attr", "emu.cpu.cortexm:CortexM.native_entries", False),
         fingerprint="bfb7c1d73bfaa09a/14c5301ba8ce80c2",
         alone="sync counts the RAM pages of a map through _ram_pages, which _follow_runs shares: the same decision, no change C mirrors"),
    Twin("exc.return",
         python=("emu.cpu.hooks:Hooks._hook_intr", "emu.cpu.hooks:Hooks._return_in_hook",
                 "emu.cpu.exceptions:Exceptions.exception_return"),
         native=("emu/cpu/_exceptions.c:exc_intr_hook", "emu/cpu/_exceptions.c:exc_return_here",
                 "emu/cpu/_exceptions.c:hook_keep_exception"),
         cases=(UNSTACK_ERR, BAD_CHAIN, PATHS, SENSORS, FAULTS, FAST_RET, NEST, FPU, MPU),
         off=("attr", "emu.cpu.cortexm:CortexM.native_returns", False),
         fingerprint="279b6ce9b99438af/681c3ba21969b33f"),
    Twin("exc.entry",
         python=("emu.cpu.nvic:Nvic._take_pending", "emu.cpu.nvic:Nvic._enter_in_hook",
                 "emu.cpu.exceptions:Exceptions.exception_entry",
                 "emu.cpu.exceptions:Exceptions._exception_entry"),
         native=("emu/cpu/_exceptions.c:exc_enter_here", "emu/cpu/_exceptions.c:ExcHook_take",
                 "emu/cpu/_exceptions.c:ExcHook_enter_in_hook"),
         cases=(STACK_ERR, BAD_VECTOR, PATHS, SENSORS, LOCKUP, FAULTS, FAST_RET, NEST, MPU, Case("cpu_it_irq", 100)),
         off=("attr", "emu.cpu.cortexm:CortexM.native_entries", False),
         fingerprint="71a0fddfe9294fc8/e0f9e2ac8f4aefc6"),
    Twin("wfe",
         python=("emu.cpu.hooks:Hooks._hook_insn_invalid", "emu.cpu.hooks:Hooks._wfe_in_hook",
                 "emu.cpu.hooks:Hooks._sleep_in_hook"),
         native=("emu/cpu/_wfe.c:wfe_here", "emu/cpu/_wfe.c:exc_insn_hook"),
         cases=(PATHS, WFE, WFE_LOOP), off=("attr", "emu.cpu.cortexm:CortexM.native_wfe", False),
         fingerprint="4494a5263dc46bd3/9e7b8a1dff4aa126"),
    Twin("runloop.run",
         python=("emu.cpu.runloop:RunLoop.run",),
         native=("emu/cpu/_runloop.c:ExcHook_run", "emu/cpu/_runloop.c:lc_next",
                 "emu/cpu/_runloop.c:lc_run_due", "emu/cpu/_runloop.c:lc_reason"),
         cases=(STACK_ERR, Case("periph_systemoff", 3000), Case("board_nrf52dk", 3000, "nrf52dk"), LOCKUP, RTC, SYSTICK, WFI, EXC, Case("cpu_fault_repeat", 3000)),
         off=("attr", "emu.cpu.cortexm:CortexM.native_loop", False),
         drivers=("tests/twins/drivers.py::sleep_forever", "tests/twins/drivers.py::stop_request", "tests/twins/drivers.py::run_until",),
         fingerprint="fffee28db4dcb5cb/604edca1263dacc2",
         alone="run() sets the block hook's dl_on from CortexM.delay_skip before either loop starts; the C loop never reads it"),
    Twin("runloop.slice",
         python=("emu.cpu.runloop:RunLoop._start_slice", "emu.cpu.cortexm:CortexM._rebase"),
         native=("emu/cpu/_runloop.c:lc_start_slice",),
         cases=(RTC, SYSTICK), off=("attr", "emu.cpu.cortexm:CortexM.native_loop", False),
         fingerprint="ef27b43c743cbdb1/918f8538dae863e5"),
    Twin("runloop.after_slice",
         python=("emu.cpu.runloop:RunLoop._after_slice",),
         native=("emu/cpu/_runloop.c:lc_after_slice",),
         cases=(FAULTS, WFI, WFE, EXC, Case("cpu_svc", 100)),
         off=("attr", "emu.cpu.cortexm:CortexM.native_loop", False),
         fingerprint="a3d12a4975470427/69f8824368056ad1",
         alone="only the fault's log line for a fetch refused in RAM (the MPU's execute-never pages): C hands that error to this Python as before"),
    Twin("runloop.idle",
         python=("emu.cpu.runloop:RunLoop._idle_to_next_event", "emu.cpu.nvic:Nvic._wake_condition",
                 "emu.cpu.cortexm:CortexM.sleeping"),
         native=("emu/cpu/_runloop.c:lc_idle", "emu/cpu/_runloop.c:lc_wake_condition",
                 "emu/cpu/_runloop.c:lc_set_sleeping"),
         cases=(PATHS, WEB, WFI, WFE, WFE_LOOP, SYSTICK),
         off=("attr", "emu.cpu.cortexm:CortexM.native_loop", False),
         drivers=("tests/twins/drivers.py::sleep_forever",),
         fingerprint="56adec79a8eb849c/861219287007d94f"),
    Twin("flash.guard",
         python=("emu.cpu.hooks:Hooks._hook_write_prot",
                 "emu.cpu.hooks:Hooks._first_ignored_flash_write"),
         native=("emu/cpu/_flashguard.c:guard_hook", "emu/cpu/_flashguard.c:guard_go_on"),
         cases=(NVMC, MPU, Case("periph_nvmc_stall", 300)), off=PURE,
         fingerprint="b19f75725d861635/7745c9817ddfee7c",
         alone="the Python hook notes a further refused store in the same trap (Unicorn runs on past a store refused inside an IT block); FlashGuard's part (stores outside write mode) is unchanged"),
    Twin("tlb.fill", python=(),
         native=("emu/cpu/_pagemap.c:pagemap_fill",),
         cases=(RAMCODE, EXC, MPU, Case("bench_mpu_hot", 1100)),
         off=("attr", "emu.cpu.cortexm:CortexM.fast_ram", False),
         fingerprint="-/9f4cff65ac2742ed",
         alone="the fill refuses fetches from the RAM pages the MPU makes wholly execute-never (set_xn); the twin has no Python side (the reference is Unicorn's own TLB, compared by the parity test's fast_ram cases, cpu_mpu among them)"),
    Twin("cost.block",
         python=("emu.cpu.cycles:CostModel._block_cost_py", "emu.cpu.cycles:CostModel._insn_facts",
                 "emu.cpu.cycles:CostModel.insn_cost", "emu.cpu.cycles:_insn_pure",
                 "emu.cpu.cycles:_insn_call", "emu.cpu.cycles:_insn_stack",
                 "emu.cpu.cycles:countdown_flags"),
         native=("emu/cpu/_cost.c:cost_block", "emu/cpu/_cost.c:cost_insn"),
         cases=(EXC, FPU, POLL, STORES, PATHS),
         off=("attr", "emu.cpu.cycles:CostModel.native_cost", False),
         drivers=("tests/twins/drivers.py::cost",),
         fingerprint="aeb85335f4d858f2/5b7c87a831e1b60c",
         alone="the reference no longer remembers facts by instruction text (it did not pay on a first run; the answers are the same)"),
    # -- the peripherals' cores (emu/peripherals/*.py; _cores' files) ---------
    Twin("rtc.count",
         python=("emu.peripherals.rtc:Rtc._count_at",),
         native=("emu/peripherals/_rtc.c:rc_count_at",),
         cases=(RTC, Case("periph_rtc_evten", 300)),
         off=("attr", "emu.peripherals.rtc:Rtc.native_core", False),
         fingerprint="965380381c695fcc/9c6769403e38efe2"),
    Twin("rtc.rearm",
         python=("emu.peripherals.rtc:Rtc._rearm",),
         native=("emu/peripherals/_rtc.c:rc_rearm", "emu/peripherals/_rtc.c:RtcCore_rearm"),
         cases=(RTC, Case("periph_rtc_evten", 300), Case("periph_rtc_timer", 300)),
         off=("attr", "emu.peripherals.rtc:Rtc.native_core", False),
         fingerprint="f96e0759184412d9/59ba940f83ad3e69"),
    Twin("rtc.event",
         python=("emu.peripherals.rtc:Rtc._on_event", "emu.peripherals.rtc:Rtc.fire",
                 "emu.peripherals.base:NrfPeripheral.update_irq"),
         native=("emu/peripherals/_rtc.c:RtcCore_fire", "emu/peripherals/_rtc.c:rc_hand_over",
                 "emu/peripherals/_cores.c:cells_update_irq"),
         cases=(RTC_POWER, PERIPH, RTC, Case("periph_rtc_evten", 300)),
         off=("attr", "emu.peripherals.rtc:Rtc.native_core", False),
         fingerprint="db99f8e067c7a4ef/98d79de82feafc23"),
    Twin("rtc.writes",
         python=("emu.peripherals.rtc:Rtc.write", "emu.peripherals.rtc:Rtc._wr_cc"),
         native=("emu/peripherals/_rtc.c:RtcCore_write_cc",
                 "emu/peripherals/_rtc.c:RtcCore_write_inten"),
         cases=(RTC_POWER, PERIPH, RTC, Case("periph_rtc_evten", 300)),
         off=("attr", "emu.peripherals.rtc:Rtc.native_core", False),
         fingerprint="bb5c7309e33b8846/3351e7a7f0085ef8"),
    Twin("timer.count",
         python=("emu.peripherals.timer:Timer._count_at", "emu.peripherals.timer:Timer._mask",
                 "emu.peripherals.timer:Timer._tpc"),
         native=("emu/peripherals/_timer.c:tc_count_at", "emu/peripherals/_timer.c:tc_cfg"),
         cases=(TIMER, Case("periph_timer_adjacent_cc", 300)),
         off=("attr", "emu.peripherals.timer:Timer.native_core", False),
         fingerprint="6677aa4587812427/a22259f0ff25299e"),
    Twin("timer.rearm",
         python=("emu.peripherals.timer:Timer._rearm",),
         native=("emu/peripherals/_timer.c:tc_rearm", "emu/peripherals/_timer.c:TimerCore_rearm"),
         cases=(TIMER, Case("periph_timer_adjacent_cc", 300)),
         off=("attr", "emu.peripherals.timer:Timer.native_core", False),
         fingerprint="caf71cdaa05b43bb/9a03a7777d2c51e9"),
    Twin("timer.compare",
         python=("emu.peripherals.timer:Timer._on_compare", "emu.peripherals.base:NrfPeripheral.fire",
                 "emu.peripherals.base:NrfPeripheral.trigger"),
         native=("emu/peripherals/_timer.c:TimerCore_fire", "emu/peripherals/_timer.c:tc_listened"),
         cases=(TIMER_POWER, Case("periph_ccm_aar", 3000), TIMER, Case("periph_timer_adjacent_cc", 300)),
         off=("attr", "emu.peripherals.timer:Timer.native_core", False),
         fingerprint="e77688864c0152aa/06d762f2bca1a4f0"),
    Twin("timer.writes",
         python=("emu.peripherals.timer:Timer.write", "emu.peripherals.timer:Timer._wr_cc",
                 "emu.peripherals.timer:Timer.task_CAPTURE"),
         native=("emu/peripherals/_timer.c:TimerCore_write_cc",
                 "emu/peripherals/_timer.c:TimerCore_capture"),
         cases=(TIMER_POWER, PERIPH, TIMER, Case("periph_timer_adjacent_cc", 300)),
         off=("attr", "emu.peripherals.timer:Timer.native_core", False),
         fingerprint="7c8ef9f9c57807c1/44f4312177e9246d"),
    Twin("wdt.reload",
         python=("emu.peripherals.wdt:Wdt.write", "emu.peripherals.wdt:Wdt._handle_rr",
                 "emu.peripherals.wdt:Wdt._reload"),
         native=("emu/soc/_ops.c:feed_write",),
         cases=(PERIPH, WDT_FEED, Case("periph_wdt", 300), WDT_POLL),
         off=("attr", "emu.peripherals.wdt:Wdt.native_core", False),
         fingerprint="77c14551255af8b5/584c13b786ae1c91",
         alone="the C side now also takes the RR writes that _handle_rr returns from (a value other than the reload, not running, RR[n] not enabled): the same no-op, without the call"),
    Twin("wdt.sleep",
         python=("emu.peripherals.wdt:Wdt._cpu_sleep", "emu.peripherals.wdt:Wdt._update_pause"),
         native=("emu/peripherals/_wdt.c:WdtCore_cpu_sleep",),
         cases=(WDT_SLEEP,), off=("attr", "emu.peripherals.wdt:Wdt.native_core", False),
         fingerprint="104fd793757ec74a/daba5675cd31a0ba"),
)

#: C functions with no Python twin, by (file pattern, function pattern): the
#: glue of the Python object protocol and of the engine, each with why
NATIVE_ONLY = (
    ("emu/*.h", "clock_import", "finds emu._clock's types at a module's import"),
    ("emu/*.h", "is_clock", "a type test"),
    ("emu/*.h", "is_event", "a type test"),
    ("emu/*.h", "clock_get_now", "reads clock.now (the C clock's field or a Python clock's "
                                 "attribute): Python reads the attribute"),
    ("emu/*.h", "clock_set_now", "writes clock.now, as Python assigns it"),
    ("emu/_pyhelp.h", "*", "the C API's attribute and dict access, shared by every module"),
    ("emu/_layout.h", "*", "exports a struct's layout to Python (no behaviour)"),
    ("emu/_clock.c", "Event_*", "the Event type's slots and accessors (Python's object "
                                "protocol: the Python class has them for free)"),
    ("emu/_clock.c", "Clock_tp_new", "the type's constructor"),
    ("emu/_clock.c", "Clock_traverse", "garbage collection"),
    ("emu/_clock.c", "Clock_clear", "garbage collection"),
    ("emu/_clock.c", "Clock_dealloc", "garbage collection"),
    ("emu/_clock.c", "Clock_compact", "the Python name of clk_compact (a twin's)"),
    ("emu/_clock.c", "Clock_clean_m", "the Python name of clk_clean (a twin's)"),
    ("emu/_clock.c", "Clock_run_due", "the Python name of clk_run_due (a twin's)"),
    ("emu/_clock.c", "Clock_get_*", "attribute access (Python's attributes)"),
    ("emu/_clock.c", "Clock_set_*", "attribute access (Python's attributes)"),
    ("emu/_clock.c", "PyInit__clock", "the module"),
    ("emu/soc/_cells.c", "*", "the Cells mapping's protocol (PyCells is a dict)"),
    ("emu/soc/_cells.h", "*", "finds the Cells type at a module's import"),
    ("emu/soc/_fabric.h", "*", "the slice's time, read from the block hook's state"),
    ("emu/soc/_mmio.c", "*", "the module: map(), the op kinds, the types"),
    ("emu/soc/_ops.c", "op_clear", "releases an op's references"),
    ("emu/soc/_ops.c", "op_sync", "do_sync when the clock is behind (cpu.sync_time's twin)"),
    ("emu/soc/_ops.c", "ops_intern", "interned names"),
    ("emu/soc/_slot.c", "slot_intern", "interned names"),
    ("emu/soc/_slot.c", "table_*", "the op tables' memory"),
    ("emu/soc/_slot.c", "slot_flush", "forgets the resolved ops (the model's table changed)"),
    ("emu/soc/_slot.c", "Slot_*", "the Slot type's slots and methods"),
    ("emu/soc/_streams.c", "StreamSet_*", "the StreamSet type's slots and methods"),
    ("emu/cpu/_blockhook.c", "bh_new", "allocates the state"),
    ("emu/cpu/_blockhook.c", "bh_free", "frees the state"),
    ("emu/cpu/_blockhook.c", "bh_clear", "empties the cost table (code invalidated)"),
    ("emu/cpu/_blockhook.c", "bh_cost", "reads the cost table (tests)"),
    ("emu/cpu/_blockhook.c", "bh_hook_address", "the hook's address for uc_hook_add"),
    ("emu/cpu/_blockhook.c", "bh_layout", "exports bh_state's layout"),
    ("emu/cpu/_blockhook.c", "PyInit__blockhook", "the module"),
    ("emu/cpu/_core.h", "*", "the CortexM's attributes read and written through the C API"),
    ("emu/cpu/_core.c", "*", "the module and its interned names"),
    ("emu/cpu/_fastregs.c", "Regs_init", "the type's slots"),
    ("emu/cpu/_fastregs.c", "Regs_traverse", "garbage collection"),
    ("emu/cpu/_fastregs.c", "Regs_clear", "garbage collection"),
    ("emu/cpu/_fastregs.c", "Regs_dealloc", "garbage collection"),
    ("emu/cpu/_fastregs.c", "Regs_set_exc", "hands the engine's memory functions over"),
    ("emu/cpu/_fastregs.c", "regs_err", "raises the binding's UcError"),
    ("emu/cpu/_exceptions.c", "ExcHook_install", "installs the INTR hook"),
    ("emu/cpu/_exceptions.c", "ExcHook_traverse", "garbage collection"),
    ("emu/cpu/_exceptions.c", "ExcHook_clear", "garbage collection"),
    ("emu/cpu/_exceptions.c", "ExcHook_dealloc", "garbage collection"),
    ("emu/cpu/_wfe.c", "ExcHook_install_insn", "installs the invalid-instruction hook"),
    ("emu/cpu/_runloop.c", "ExcHook_loop_setup", "hands the run loop its clock and engine"),
    ("emu/cpu/_flashguard.c", "FlashGuard_*", "the FlashGuard type's slots and set-up"),
    ("emu/cpu/_pagemap.c", "PageMap_*", "the PageMap type's slots and set-up"),
    ("emu/peripherals/_cores.h", "check_clock_event", "a constructor's argument check"),
    ("emu/peripherals/_cores.c", "PyInit__cores", "the module"),
    ("emu/peripherals/_rtc.c", "RtcCore_init", "the type's slots"),
    ("emu/peripherals/_rtc.c", "RtcCore_traverse", "garbage collection"),
    ("emu/peripherals/_rtc.c", "RtcCore_clear", "garbage collection"),
    ("emu/peripherals/_rtc.c", "RtcCore_dealloc", "garbage collection"),
    ("emu/peripherals/_timer.c", "TimerCore_init", "the type's slots"),
    ("emu/peripherals/_timer.c", "TimerCore_traverse", "garbage collection"),
    ("emu/peripherals/_timer.c", "TimerCore_clear", "garbage collection"),
    ("emu/peripherals/_timer.c", "TimerCore_dealloc", "garbage collection"),
    ("emu/peripherals/_wdt.c", "WdtCore_init", "the type's slots"),
    ("emu/peripherals/_wdt.c", "WdtCore_traverse", "garbage collection"),
    ("emu/peripherals/_wdt.c", "WdtCore_clear", "garbage collection"),
    ("emu/peripherals/_wdt.c", "WdtCore_dealloc", "garbage collection"),
)


# ----------------------------------------------------------------------
# reading both sides
# ----------------------------------------------------------------------
def native_files(root: Path = ROOT) -> list:
    """Every C source and header of the native modules (relative paths)."""
    return sorted(str(p.relative_to(root)) for p in (root / "emu").rglob("*")
                  if p.suffix in (".c", ".h") and "build" not in p.relative_to(root).parts)


_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def _strip_c(text: str) -> str:
    """Comments and preprocessor lines out, string literals kept, newlines kept."""
    out = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    lines = []
    cont = False
    for line in out.split("\n"):
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            lines.append("")
        else:
            lines.append(line)
    return "\n".join(lines)


def c_functions(path: Path) -> dict:
    """{name: (first line, last line, body text)} of the function definitions
    in a C file (top level; macros invoking themselves are not definitions)."""
    text = _strip_c(path.read_text())
    out = {}
    depth = 0
    i = 0
    n = len(text)
    start_of_decl = 0
    while i < n:
        c = text[i]
        if c == '"':
            m = _STRING.match(text, i)
            i = m.end() if m else i + 1
            continue
        if c == "'":
            j = text.find("'", i + 1)
            while j > 0 and text[j - 1] == "\\" and text[j - 2] != "\\":
                j = text.find("'", j + 1)
            i = j + 1 if j > 0 else i + 1
            continue
        if depth == 0 and c in ";}":
            start_of_decl = i + 1
        if c == "{":
            if depth == 0:
                head = text[start_of_decl:i]
                m = re.search(r"\b([A-Za-z_]\w*)\s*\(([^()]|\([^()]*\))*\)\s*$", head)
                is_fn = (m is not None and "=" not in head and not re.match(
                    r"\s*(typedef|struct|enum|union)\b", head)
                    and m.group(1) not in ("if", "while", "for", "switch"))
                if is_fn:
                    depth_j, j = 0, i
                    while j < n:
                        if text[j] == "{":
                            depth_j += 1
                        elif text[j] == "}":
                            depth_j -= 1
                            if depth_j == 0:
                                break
                        j += 1
                    name = m.group(1)
                    first = text.count("\n", 0, start_of_decl + len(head) - len(head.lstrip()))
                    last = text.count("\n", 0, j)
                    out[name] = (first + 1, last + 1, head.strip() + " " + text[i:j + 1])
                    i = j + 1
                    start_of_decl = i
                    continue
            depth += 1
        elif c == "}":
            depth -= 1
        i += 1
    return out


def _norm_c(body: str) -> str:
    return " ".join(body.split())


class Index:
    """Every C function of the native files, and the calls between them."""

    def __init__(self, root: Path = ROOT):
        self.root = root
        self.where: dict = {}        # name -> [file, ...]
        self.body: dict = {}         # (file, name) -> text
        self.lines: dict = {}        # (file, name) -> (first, last)
        for f in native_files(root):
            for name, (a, b, body) in c_functions(root / f).items():
                self.where.setdefault(name, []).append(f)
                self.body[(f, name)] = body
                self.lines[(f, name)] = (a, b)

    def find(self, spec: str) -> tuple:
        f, _, name = spec.partition(":")
        if (f, name) not in self.body:
            raise KeyError(f"{spec}: no such C function")
        return f, name

    def callees(self, key: tuple) -> set:
        """The functions a body calls that are defined in the native files
        (a static helper: the definition in the same file, else the one
        definition there is)."""
        f, _name = key
        out = set()
        for callee in set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", self.body[key])):
            files = self.where.get(callee)
            if not files or callee == key[1]:
                continue
            target = f if f in files else (files[0] if len(files) == 1 else None)
            if target is not None:
                out.add((target, callee))
        return out


def native_closure(index: Index, specs, stop: set) -> list:
    """The functions of ``specs`` and, transitively, the helpers they call,
    except functions in ``stop`` (another twin's own sides)."""
    todo = [index.find(s) for s in specs]
    seen: list = []
    while todo:
        k = todo.pop(0)
        if k in seen:
            continue
        seen.append(k)
        for c in sorted(index.callees(k)):
            if c not in seen and c not in stop and c not in todo:
                todo.append(c)
    return seen


def python_body(spec: str, root: Path = ROOT) -> str:
    """A Python function's (or property's) source, docstring and comments
    aside (the module's file under ``root`` is parsed, not imported)."""
    mod, _, qual = spec.partition(":")
    base = root.joinpath(*mod.split("."))
    path = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
    if not path.exists():
        raise KeyError(f"{spec}: no module {mod}")
    tree = ast.parse(path.read_text())
    scope: list = [tree]
    parts = qual.split(".")
    nodes: list = []
    for k, part in enumerate(parts):
        last = k == len(parts) - 1
        nxt = []
        for s in scope:
            for node in getattr(s, "body", []):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                        and node.name == part:
                    (nodes if last else nxt).append(node)
        scope = nxt
    if not nodes:
        raise KeyError(f"{spec}: no such function")
    out = []
    for node in nodes:                 # a property's getter and setter: both
        node = ast.fix_missing_locations(_without_docstring(node))
        out.append(ast.unparse(node))
    return "\n".join(out)


def _without_docstring(node):
    import copy
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        body = getattr(n, "body", None)
        if (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            n.body = body[1:] or [ast.Pass()]
    return node


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def own_native(index: Index) -> set:
    """The functions that are a twin's own side, or glue (NATIVE_ONLY): a
    twin's helpers are the other functions its side calls."""
    own = {index.find(s) for t in TWINS for s in t.native}
    return own | {k for k in index.body if native_only(*k)}


def fingerprints(twin: Twin, index: Index, stop: set) -> tuple:
    py = (_h("\n".join(python_body(s, index.root) for s in twin.python))
          if twin.python else "-")
    mine = {index.find(s) for s in twin.native}
    keys = native_closure(index, twin.native, stop - mine)
    c = _h("\n".join(f"{f}:{n}:{_norm_c(index.body[(f, n)])}" for f, n in keys))
    return py, c


def native_only(f: str, name: str):
    for fpat, npat, why in NATIVE_ONLY:
        if fnmatch.fnmatch(f, fpat) and fnmatch.fnmatch(name, npat):
            return why
    return None


def problems(root: Path = ROOT, twins: tuple = None) -> list:
    """Everything the registry test fails on, one line each (``root``: the
    tree to read, the registry's own by default)."""
    index = Index(root)
    twins = TWINS if twins is None else twins
    out = []
    names = [t.name for t in twins]
    for n in sorted({n for n in names if names.count(n) > 1}):
        out.append(f"two twins named {n}")
    try:
        stop = own_native(index)
    except KeyError as e:
        return [str(e)]
    covered = set()
    for t in twins:
        try:
            py, c = fingerprints(t, index, stop)
        except KeyError as e:
            out.append(f"{t.name}: {e}")
            continue
        mine = {index.find(s) for s in t.native}
        covered |= set(native_closure(index, t.native, stop - mine))
        rec_py, _, rec_c = t.fingerprint.partition("/")
        if (py, c) == (rec_py, rec_c):
            continue
        py_changed, c_changed = py != rec_py, c != rec_c
        if not t.fingerprint:
            out.append(f"{t.name}: no fingerprint recorded (python -m emu.twins --record)")
        elif py_changed and c_changed:
            out.append(f"{t.name}: both sides changed since they were recorded: check that "
                       f"they still agree (tests/twins/test_parity.py -k {t.name}), then "
                       f"python -m emu.twins --record")
        else:
            side, other = ("Python", "C") if py_changed else ("C", "Python")
            what = ", ".join(t.python if py_changed else t.native)
            out.append(f"{t.name}: its {side} side changed alone ({what}): change its {other} "
                       f"twin the same way, or record why not: python -m emu.twins --record "
                       f"--alone {t.name} \"why\"")
    glue = [k for k in index.body if native_only(*k)]
    covered |= set(native_closure(index, [f"{f}:{n}" for f, n in glue], stop))
    for (f, name) in sorted(index.body):
        if (f, name) in covered or native_only(f, name):
            continue
        out.append(f"{f}:{name} is in no twin of emu/twins.py and not in NATIVE_ONLY: "
                   f"register its Python twin, or say why it has none")
    return out


# ----------------------------------------------------------------------
# recording
# ----------------------------------------------------------------------
def record(alone: dict = None, path: Path = None, root: Path = ROOT) -> list:
    """Write every twin's current fingerprints into this file.  A twin one of
    whose sides changed alone is recorded only with a reason (``alone``:
    name -> why), which is written beside it.  Returns what was recorded."""
    alone = alone or {}
    path = path or Path(__file__)
    index = Index(root)
    stop = own_native(index)
    text = path.read_text()
    done = []
    for t in TWINS:
        py, c = fingerprints(t, index, stop)
        rec_py, _, rec_c = t.fingerprint.partition("/")
        if (py, c) == (rec_py, rec_c):
            continue
        one_sided = t.fingerprint and ((py != rec_py) != (c != rec_c))
        if one_sided and t.name not in alone:
            raise SystemExit(f"{t.name}: one side changed alone; record it with --alone "
                             f"{t.name} \"why\", or change the other side too")
        text = _set_field(text, t.name, "fingerprint", f"{py}/{c}")
        if t.name in alone:
            text = _set_field(text, t.name, "alone", alone[t.name])
        done.append(t.name)
    path.write_text(text)
    return done


def _set_field(text: str, name: str, fld: str, value: str) -> str:
    """Set ``fld="..."`` in the Twin(...) call named ``name`` (added before its
    closing parenthesis when absent)."""
    start = text.index(f'Twin("{name}",')
    depth, i = 0, start + len("Twin")
    while True:
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                break
        elif ch == '"':
            i = text.index('"', i + 1)
            while text[i - 1] == "\\":
                i = text.index('"', i + 1)
        i += 1
    call = text[start:i]
    value = value.replace("\\", "\\\\").replace('"', '\\"')
    if re.search(rf"\b{fld}=\"", call):
        call = re.sub(rf'\b{fld}="(?:\\.|[^"\\])*"', f'{fld}="{value}"', call)
    else:
        indent = " " * 9
        call = call.rstrip().rstrip(",") + f',\n{indent}{fld}="{value}"'
    return text[:start] + call + text[i:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emu.twins",
                                 description="the registry of twins (Python and C): check, record")
    ap.add_argument("--record", action="store_true", help="record the current fingerprints")
    ap.add_argument("--alone", nargs=2, action="append", default=[], metavar=("NAME", "WHY"),
                    help="with --record: twin NAME's one-sided change, and why")
    a = ap.parse_args(argv)
    if a.record:
        done = record(dict(a.alone))
        print("recorded: " + (", ".join(done) if done else "nothing had changed"))
        return 0
    found = problems()
    for p in found:
        print(p)
    print(f"{len(TWINS)} twins: " + ("all in step" if not found else f"{len(found)} problems"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
