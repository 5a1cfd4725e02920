"""The Cortex-M4's Memory Protection Unit (ARMv7-M ARM B3.5, PMSAv7): 8 regions.

Registers (SCS offsets): TYPE 0xD90 (DREGION = 8), CTRL 0xD94 (ENABLE,
HFNMIENA, PRIVDEFENA), RNR 0xD98, RBAR 0xD9C (ADDR, VALID, REGION), RASR 0xDA0
(XN, AP, TEX/S/C/B, SRD, SIZE, ENABLE) and the aliases RBAR_A1..A3 /
RASR_A1..A3 at 0xDA4-0xDB8.  The highest-numbered enabled region that holds
an address decides (a disabled subregion lets lower regions decide); no
region: the default map for privileged code when PRIVDEFENA is set, a fault
otherwise.  AP as in table B3-15, execution needs read access and XN clear.
In HardFault, NMI and with FAULTMASK set the MPU is off unless HFNMIENA.

Enforced on flash and RAM, through Unicorn's page protections (1 KiB pages)
and protection hooks.  Any memory hook over a page keeps Unicorn from
marking its TLB entry dirty, so every store there takes the slow path (half
of Zephyr's fpu_sharing once); with the TLB filled by the PageMap
(emu/cpu/_pagemap.c) the RAM's pages therefore carry hooks only while the
MPU protects them (``_follow_runs``: runs added before a change, removed
after it), and pages wholly execute-never are refused to fetches by the
fill (``set_xn``) instead of protected.  A map that protects more than
RAM_FOLLOW_PAGES pages (a switch to a user thread) goes back, for good, to
Unicorn's own TLB and hooks over all of the RAM: following runs at every
switch would cost more than it saves.

Whenever the configuration or the privilege changes each page gets the
access every byte of it allows.  CTRL writes apply at the next block
boundary (as after the DSB/ISB the architecture asks for); region writes at
the next slice boundary, exception entry or return, or privilege change (an
RTOS reprograms regions at every context switch); a privilege drop by
``MSR CONTROL`` at the next instruction.  The protection faults are decided
here byte-exactly from the registers as they are: an allowed store into RAM
is done in C (``FlashGuard.set_mpu``, one access byte per 32-byte granule)
or here, an allowed load or fetch goes on (an access let go on puts the IT
bits back to zero: Unicorn synced them to the accessing instruction for the
hook, see ``CortexM.resume_after_access_hook``).  A forbidden data access raises
MemManage with DACCVIOL and MMFAR (MMARVALID); a forbidden fetch IACCVIOL;
a store into flash the MPU forbids faults before the NVMC would ignore it;
exception stacking into a forbidden region MSTKERR (the words the MPU allows
are written, the stack pointer moves as on silicon, MemManage is entered as
a derived exception and the original one stays pending); MemManage
escalates to HardFault when it is disabled or cannot preempt.  Firmware
that never enables the MPU pays nothing: no hook exists until CTRL.ENABLE
is first set.

While the MPU is on, an unprivileged access to the System Control Space
(NVIC, SCB, SysTick, the MPU itself) is a precise BusFault, as the
architecture says (STIR with CCR.USERSETMPEND excepted: not modelled).

Not modelled: unstacking checks (MUNSTKERR: a frame is popped from where
it was pushed), MPU checks of peripheral and system space (0x40000000 and up:
the default map applies there), lazy FP stacking (MLSPERR: FP context is
stacked eagerly and a violation there is an MSTKERR), the memory attributes
(TEX, C, B, S are stored), and byte-exact checks of loads and fetches in a
page a region boundary cuts through after the first allowed one in the same
translation block (the engine caches the page's read access until the block
ends).
"""
from __future__ import annotations

import ctypes
import logging

from unicorn import UC_HOOK_CODE, UC_HOOK_MEM_FETCH_PROT, UC_HOOK_MEM_READ_PROT
from unicorn.arm_const import UC_ARM_REG_PC

log = logging.getLogger("emu.cpu.mpu")

R, W, X = 1, 2, 4
PPB_SCS = 0xE000E000             # System Control Space: privileged accesses only
PAGE = 1024                      # Unicorn's ARM page
NUM_REGIONS = 8
# AP field -> (privileged, unprivileged) data access (ARMv7-M ARM table B3-15)
_AP = {0: (0, 0), 1: (R | W, 0), 2: (R | W, R), 3: (R | W, R | W), 4: (0, 0),
       5: (R, 0), 6: (R, R), 7: (R, R)}
OFFSETS = range(0xD90, 0xDBC, 4)
# more protected RAM pages than this at once: Unicorn's own TLB and the
# MPU's hooks over all of the RAM from then on (Mpu._to_unicorn_tlb)
RAM_FOLLOW_PAGES = 16


class Mpu:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("_applied", "_base", "_cache", "_config", "_fp_prot", "_fp_wprot", "_installed",
                 "_pages", "_perms", "_ppb_pages", "_prot", "_prot_key", "_ram", "_ram_runs",
                 "_transitions", "cpu", "ctrl", "rasr", "rbar", "rnr")
    def __init__(self, cpu):
        self.cpu = cpu
        self._installed = False
        self._ram_runs = None         # protected RAM runs -> their hooks (None: hooks everywhere)
        self._prot: dict = {}
        self._prot_key = None
        self._ram = None
        self._perms = None
        self.reset()

    # -- state -----------------------------------------------------------------
    def reset(self) -> None:
        if self._installed:
            self._restore_all()
        self.ctrl = 0
        self.rnr = 0
        self.rbar = [0] * NUM_REGIONS
        self.rasr = [0] * NUM_REGIONS
        self._config = 0              # bumped on every change of the regions or CTRL
        self._applied = None          # (config, privileged, off) the pages were set for
        self._prot: dict = {}         # page -> protection set (only pages changed)
        self._cache: dict = {}
        self._transitions: dict = {}   # (from map key, to map key) -> mem_protect runs

    def save_state(self) -> dict:
        return {"ctrl": self.ctrl, "rnr": self.rnr, "rbar": list(self.rbar),
                "rasr": list(self.rasr)}

    def load_state(self, st: dict) -> None:
        self.reset()
        self.ctrl, self.rnr = st["ctrl"], st["rnr"]
        self.rbar, self.rasr = list(st["rbar"]), list(st["rasr"])
        self._changed()                  # pages follow before the next slice

    @property
    def enabled(self) -> bool:
        return bool(self.ctrl & 1)

    # -- registers ---------------------------------------------------------------
    def read(self, off: int) -> int:
        if off == 0xD90:
            return NUM_REGIONS << 8               # TYPE: DREGION=8, IREGION=0, SEPARATE=0
        if off == 0xD94:
            return self.ctrl
        if off == 0xD98:
            return self.rnr
        if off in (0xD9C, 0xDA4, 0xDAC, 0xDB4):
            return (self.rbar[self.rnr] & ~0x1F) | self.rnr
        if off in (0xDA0, 0xDA8, 0xDB0, 0xDB8):
            return self.rasr[self.rnr]
        return 0

    def write(self, off: int, value: int) -> None:
        value &= 0xFFFFFFFF
        if off == 0xD94:
            self.ctrl = value & 7
        elif off == 0xD98:
            self.rnr = value & 0xFF
            if self.rnr >= NUM_REGIONS:
                log.warning("MPU_RNR = %d: only %d regions", self.rnr, NUM_REGIONS)
                self.rnr &= NUM_REGIONS - 1
            return
        elif off in (0xD9C, 0xDA4, 0xDAC, 0xDB4):
            if value & 0x10:                          # VALID: REGION selects RNR
                self.rnr = value & (NUM_REGIONS - 1)
            self.rbar[self.rnr] = value & ~0x1F
        elif off in (0xDA0, 0xDA8, 0xDB0, 0xDB8):
            self.rasr[self.rnr] = value & 0x173FFF3F
        else:
            return
        # CTRL applies at the next block boundary; region writes at the next
        # slice boundary, exception entry or return, or privilege change (an
        # RTOS reprograms regions, several writes each, at every context
        # switch, in a handler: each write ending the slice cost more than the
        # switch).  The fault hooks read the registers as they are.
        self._changed(stop=off == 0xD94)

    def _changed(self, stop: bool = True) -> None:
        self._config += 1            # (the page maps are cached by content: kept)
        if self.ctrl & 1:
            self._install()
        cpu = self.cpu
        cpu.mpu_dirty = True
        if stop:
            cpu.request_stop()                        # applied at the next block boundary

    # -- the access an address allows ------------------------------------------------
    def off_now(self) -> bool:
        """MPU not in force for the current execution priority."""
        if not (self.ctrl & 1):
            return True
        if self.ctrl & 2:                             # HFNMIENA
            return False
        return self.cpu.execution_priority() < 0     # HardFault, NMI, FAULTMASK

    def access(self, addr: int, privileged: bool) -> int:
        """R|W|X the regions allow at ``addr`` (flash and RAM: default map RWX)."""
        for i in range(NUM_REGIONS - 1, -1, -1):
            rasr = self.rasr[i]
            if not rasr & 1:
                continue
            size_log = ((rasr >> 1) & 0x1F) + 1
            if size_log < 5:
                continue                               # UNPREDICTABLE: ignored
            base = self.rbar[i] & ~((1 << size_log) - 1) & 0xFFFFFFFF
            if not base <= addr < base + (1 << size_log):
                continue
            if size_log >= 8 and (rasr >> (8 + ((addr - base) >> (size_log - 3)))) & 1:
                continue                               # subregion disabled
            data = _AP[(rasr >> 24) & 7][0 if privileged else 1]
            if data & R and not rasr & (1 << 28):
                data |= X
            return data
        if privileged and self.ctrl & 4:               # PRIVDEFENA: the default map
            return R | W | X
        return 0

    def allows(self, addr: int, size: int, what: int, privileged: bool) -> bool:
        for a in range(addr & ~31, addr + size, 32):
            if self.access(a, privileged) & what != what:
                return False
        return True

    # -- enforcement -------------------------------------------------------------------
    def _install(self) -> None:
        if self._installed:
            return
        self._installed = True
        uc = self.cpu.uc
        cpu = self.cpu
        # A memory hook over a page keeps Unicorn from marking the page's TLB
        # entry dirty (uc_mem_hook_installed in its notdirty_write): every
        # store there takes the slow path.  With the TLB filled by the
        # PageMap (and the store guard in C) the RAM's pages get the hooks
        # only while they are protected (_follow_runs), and pages wholly
        # execute-never are refused to fetches by the fill (set_xn);
        # otherwise Unicorn's own TLB and hooks over all of the RAM.
        self._ram_runs = None
        if cpu.fast_ram_range() is None or cpu._flash_guard is None:
            cpu.slow_ram()         # Unicorn's own TLB, the store hooks over the RAM too
        else:
            self._ram_runs = {}    # (first page, end) -> hook handles, while protected
            self._fp_prot = cpu.raw_callback("HOOK_MEM_INVALID_CFUNC", self._hook_prot, False)
            self._fp_wprot = cpu.raw_callback("HOOK_MEM_INVALID_CFUNC", cpu._hook_write_prot,
                                              False)
        cpu.no_loop_skip()         # its hooks may fault a load: no polling loop skipped
        self._pages = []                               # (page, base protection)
        for (start, end, kind, _name) in self.cpu.regions:
            if kind in ("ram", "flash") and start < 0x40000000:
                from unicorn import UC_PROT_EXEC, UC_PROT_READ, UC_PROT_WRITE
                base = UC_PROT_READ | UC_PROT_EXEC | (UC_PROT_WRITE if kind == "ram" else 0)
                for p in range(start, end, PAGE):
                    self._pages.append((p, base))
        self._pages.sort()
        self._base = dict(self._pages)
        # the System Control Space: privileged only (ARMv7-M B3.2; an
        # unprivileged access is a BusFault), made inaccessible while the
        # core is unprivileged
        from unicorn import UC_PROT_READ, UC_PROT_WRITE
        self._ppb_pages = [p for p in range(PPB_SCS, PPB_SCS + 0x1000, PAGE)
                           if any(s <= p < e for (s, e, _k, _n) in self.cpu.regions)]
        for p in self._ppb_pages:
            self._base[p] = UC_PROT_READ | UC_PROT_WRITE
        ram = self.cpu.ram_host
        self._ram = None
        if len(ram) == 1:
            rbase, (rsize, _buf, host) = next(iter(ram.items()))
            self._ram = (rbase, rsize, host)
        # stores: CortexM._hook_write_prot hands the MPU's pages to _hook_prot
        if self._ram_runs is None:
            uc.hook_add(UC_HOOK_MEM_READ_PROT | UC_HOOK_MEM_FETCH_PROT, self._hook_prot)
        else:
            rbase, rsize = cpu.fast_ram_range()
            for b, e in ((0, rbase - 1), (rbase + rsize, (1 << 64) - 1)):
                uc.hook_add(UC_HOOK_MEM_READ_PROT | UC_HOOK_MEM_FETCH_PROT, self._hook_prot,
                            begin=b, end=e)
        log.info("MPU enabled: enforced on flash and RAM through page protections "
                 "(peripheral space uses the default map)")

    def sync(self) -> None:
        """Page protections for the current configuration and privilege."""
        cpu = self.cpu
        cpu.mpu_dirty = False
        if not self._installed:
            return
        off = self.off_now()
        priv = self.cpu.privileged()
        key = (self._config, priv, off)
        if key == self._applied:
            return
        self._applied = key
        if off:
            self._restore_all()
            return
        ckey = (self.ctrl, tuple(self.rbar), tuple(self.rasr), priv)
        got = self._cache.get(ckey)
        if got is None:
            if len(self._cache) >= 64:
                self._cache.clear()
            got = self._cache[ckey] = self._page_map(priv)
        want, perms, xn = got
        if self._ram_runs is not None and len(self._ram_pages(want)) > RAM_FOLLOW_PAGES:
            self._to_unicorn_tlb()
            got = self._cache[ckey] = self._page_map(priv)
            want, perms, xn = got
        self._set(want, ckey)
        self._set_guard(perms)
        self._set_xn(xn)

    def _restore_all(self) -> None:
        self._set({}, None)
        self._set_guard(None)
        self._set_xn(None)

    def _set_xn(self, xn) -> None:
        """Hand the RAM pages the regions make wholly execute-never to the
        TLB fill (emu/cpu/_pagemap.c set_xn); the TLB goes when they change."""
        if self._ram_runs is None:
            return
        if self.cpu.pagemap.set_xn(xn):
            self.cpu._flush_tlb()

    def _ram_pages(self, want: dict) -> list:
        """The RAM's pages of ``want``, in address order."""
        rbase, rsize = self.cpu.fast_ram_range()
        return sorted(p for p in want if rbase <= p < rbase + rsize)

    def _to_unicorn_tlb(self) -> None:
        """A map protects much of the RAM (a switch to a user thread): from
        now on Unicorn's own TLB and the hooks over all of the RAM, as when
        the PageMap is off (kernel/sleep switches 16 389 times a run: adding
        and removing the runs' hooks each time cost more than it saved)."""
        from unicorn import UC_HOOK_MEM_FETCH_PROT, UC_HOOK_MEM_READ_PROT
        cpu = self.cpu
        rbase, rsize = cpu.fast_ram_range()
        self._set_xn(None)
        cpu.uc.hook_add(UC_HOOK_MEM_READ_PROT | UC_HOOK_MEM_FETCH_PROT, self._hook_prot,
                        begin=rbase, end=rbase + rsize - 1)
        cpu.slow_ram()             # its store hooks over the RAM, Unicorn's TLB
        for handles in self._ram_runs.values():
            for h in handles:
                cpu.raw_hook_del(h)
        self._ram_runs = None
        self._cache.clear()        # (maps made for the TLB fill: execute-never pages apart)
        self._transitions.clear()

    def _follow_runs(self, want: dict, add: bool) -> None:
        """The RAM's protected pages of ``want`` in runs, each with the
        protection hooks (the C store guard, then _hook_write_prot; loads and
        fetches: _hook_prot): ``add`` the runs missing (before the pages
        change), else remove those no longer wanted (after)."""
        runs = []
        for p in self._ram_pages(want):
            if runs and runs[-1][1] == p:
                runs[-1][1] = p + PAGE
            else:
                runs.append([p, p + PAGE])
        target = {(b, e - 1) for b, e in runs}
        cur = self._ram_runs
        cpu = self.cpu
        if add:
            from unicorn import UC_HOOK_MEM_WRITE_PROT
            for b, e in sorted(target - cur.keys()):
                cur[(b, e)] = (cpu.guard_hook(b, e),
                               cpu.raw_hook_add(UC_HOOK_MEM_WRITE_PROT, self._fp_wprot, b, e),
                               cpu.raw_hook_add(UC_HOOK_MEM_READ_PROT | UC_HOOK_MEM_FETCH_PROT,
                                                self._fp_prot, b, e))
        else:
            for run in [r for r in cur if r not in target]:
                for h in cur.pop(run):
                    cpu.raw_hook_del(h)

    def _set_guard(self, perms) -> None:
        """Hand the RAM's granule access table to the native store hook."""
        self._perms = perms
        g = self.cpu._flash_guard
        if g is None or self._ram is None:
            return
        base, size, host = self._ram
        g.set_mpu(host, base, size, perms)

    def _set(self, want: dict, key) -> None:
        """Apply page -> protection (pages absent: their base protection),
        one mem_protect a run of pages that change to the same protection.
        ``key`` names ``want`` (None: every page at its base); the runs
        between two named maps are remembered (an RTOS goes back and forth
        between a few)."""
        uc = self.cpu.uc
        following = self._ram_runs is not None
        if following:
            self._follow_runs(want, True)
        tkey = (self._prot_key, key)
        runs = self._transitions.get(tkey) if key is not None or self._prot_key is not None \
            else None
        if runs is not None:
            for start, size, prot in runs:
                uc.mem_protect(start, size, prot)
            self._prot, self._prot_key = want, key
            if following:
                self._follow_runs(want, False)
            return
        cur, base = self._prot, self._base
        changes = []
        for page in set(cur) | set(want):
            prot = want.get(page, base[page])
            if cur.get(page, base[page]) != prot:
                changes.append((page, prot))
        changes.sort()
        runs = []
        i = 0
        while i < len(changes):
            start, prot = changes[i]
            j = i + 1
            while j < len(changes) and changes[j] == (start + (j - i) * PAGE, prot):
                j += 1
            runs.append((start, (j - i) * PAGE, prot))
            uc.mem_protect(start, (j - i) * PAGE, prot)
            i = j
        if self._prot_key is not None or key is not None:
            if len(self._transitions) >= 256:
                self._transitions.clear()
            self._transitions[tkey] = tuple(runs)
        self._prot, self._prot_key = want, key
        if following:
            self._follow_runs(want, False)

    def _page_map(self, priv: bool) -> tuple:
        """(page -> protection for the pages that differ from their base,
        the RAM's access per 32-byte granule for the native store hook, the
        RAM pages wholly execute-never for the TLB fill or None)."""
        # the answer can change only at region (and subregion) edges
        edges = {0}
        for i in range(NUM_REGIONS):
            rasr = self.rasr[i]
            if not rasr & 1:
                continue
            size_log = ((rasr >> 1) & 0x1F) + 1
            if size_log < 5:
                continue
            base = self.rbar[i] & ~((1 << size_log) - 1) & 0xFFFFFFFF
            step = (1 << (size_log - 3)) if size_log >= 8 else (1 << size_log)
            edges.update(range(base, base + (1 << size_log) + 1, step))
        points = sorted(e for e in edges if e < (1 << 32))
        values = [self.access(p, priv) for p in points]
        want = {}
        # following the protected RAM (_follow_runs), a RAM page whose only
        # loss is execution, on all of it, is refused to fetches by the TLB
        # fill (set_xn) rather than protected: no hook on it
        rng = self.cpu.fast_ram_range() if self._ram_runs is not None else None
        xn = bytearray(rng[1] // PAGE) if rng is not None else None
        k = 0
        for page, base in self._pages:             # in address order
            while k + 1 < len(points) and points[k + 1] <= page:
                k += 1
            allowed = any_x = values[k]            # what all of the page allows
            j = k + 1
            while j < len(points) and points[j] < page + PAGE:
                allowed &= values[j]
                any_x |= values[j]
                j += 1
            prot = base & allowed
            if prot != base:
                if (xn is not None and prot | X == base and not any_x & X
                        and rng[0] <= page < rng[0] + rng[1]):
                    xn[(page - rng[0]) // PAGE] = 1
                else:
                    want[page] = prot
        if not priv:
            for p in self._ppb_pages:
                want[p] = 0
        perms = None
        if self._ram is not None:                   # access per 32-byte granule of RAM
            rbase, rsize, _host = self._ram
            table = bytearray(rsize // 32)
            k = 0
            for g in range(len(table)):
                a = rbase + 32 * g
                while k + 1 < len(points) and points[k + 1] <= a:
                    k += 1
                table[g] = values[k]
            perms = bytes(table)
        return want, perms, (bytes(xn) if xn is not None and any(xn) else None)

    def _hook_prot(self, uc, access, address, size, value, _ud):
        """A protection fault on flash or RAM: decide it byte-exactly."""
        from unicorn import UC_MEM_FETCH_PROT, UC_MEM_WRITE_PROT
        cpu = self.cpu
        page = address & ~(PAGE - 1)
        if page not in self._prot:
            return False                              # not the MPU's (flash stores, ...)
        if PPB_SCS <= address < PPB_SCS + 0x1000:
            if self.cpu.privileged():
                if access != UC_MEM_FETCH_PROT:
                    cpu.resume_after_access_hook()
                return True                           # the pages lag a privilege change
            pc = uc.reg_read(UC_ARM_REG_PC)
            cpu._trap = ("ppb", address, pc)
            return False
        what = W if access == UC_MEM_WRITE_PROT else X if access == UC_MEM_FETCH_PROT else R
        base = self._base.get(page, 0)
        if not (base & what):
            return False                              # the memory itself forbids it
        # the registers as they are now: a change made earlier in this block
        # (the pages follow at its end) already counts here
        if self.off_now() or self.allows(address, size, what, self.cpu.privileged()):
            if what == W:
                data = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
                ram = self._ram
                if ram is not None and ram[0] <= address and address + size <= ram[0] + ram[1]:
                    ctypes.memmove(ram[2] + address - ram[0], data, size)   # host memory
                else:
                    uc.mem_write(address, data)
            if what != X:
                cpu.resume_after_access_hook()       # the IT bits as the block keeps them
            return True
        pc = uc.reg_read(UC_ARM_REG_PC)
        cpu._trap = ("mpu", what, address, pc)
        return False

    # -- MSR CONTROL ------------------------------------------------------------------
    def hook_after_msr_control(self, addr: int) -> None:
        """A code hook on the instruction after an ``MSR CONTROL`` (which
        may drop the thread's privilege): the run loop re-applies."""
        self.cpu.uc.hook_add(UC_HOOK_CODE, self._hook_after_msr, begin=addr, end=addr)

    def _hook_after_msr(self, uc, address, size, _ud):
        if self._installed and self._applied is not None \
                and self._applied[1] != self.cpu.privileged():
            self.cpu.mpu_dirty = True
            self.cpu._trap = ("mpu_sync",)
            uc.emu_stop()
