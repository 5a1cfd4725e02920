"""The exception firmware the CPU's fast paths are checked on
(tests/cpu/test_cpu_fast_returns.py, test_exc_hook.py), and what two runs of
it must share."""
from __future__ import annotations

# firmware with nesting, tail-chains, PendSV, FP frames, masked pends, IT
# blocks interrupted, SysTick wake-ups from WFE/WFI
# (and how long each runs, in emulated ms)
FIRMWARE = {"cpu_fast_return": 20, "cpu_nesting": 10, "cpu_pendsv": 10, "cpu_exceptions": 10,
            "cpu_fpu": 10, "cpu_it_irq": 100, "cpu_systick": 100, "cpu_wfe_loop": 200,
            "cpu_wfi": 3000, "cpu_svc": 10, "cpu_faults": 10, "periph_rtc_timer": 100,
            "cpu_sev_wfe": 100, "cpu_unpriv": 10}


def fingerprint(m, r):
    return {"reason": r.reason, "cycles": m.cpu.cycles, "now": m.clock.now,
            "console": m.console_text(), "tail_chains": m.cpu.tail_chains,
            "svc": m.cpu.svc_calls, "pc": m.cpu.pc, "accesses": m.soc.bus.accesses}
