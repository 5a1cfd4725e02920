"""S132 v6.1.1 SoC library SVCs and the SoftDevice's resource rules.

A mixin of :class:`emu.softdevice.SoftDevice`: every method named
``_sd_<name>`` answers the SVC of that name (numbers in :data:`SOC_SVC_NAMES`,
from nrf_soc.h: SOC_SVC_BASE 0x20, SOC_SVC_BASE_NOT_AVAILABLE 0x2C).  Return
codes are those of nrf_error.h / nrf_error_soc.h.  The SoftDevice drives the
chip through the same peripheral models the application would use: PPI and
CLOCK/POWER through their registers, flash through the NVMC model (bits only
clear, NVMC busy time), AES through the ECB model's cipher.

SVCs 0x20-0x2B (PPI, flash, flash protection) work with the SoftDevice
disabled; 0x2C and above answer NRF_ERROR_SOFTDEVICE_NOT_ENABLED until
``sd_softdevice_enable`` (S132 v6.1.1 API, nrf_soc.h).

Flash (sd_flash_write, sd_flash_page_erase): with the SoftDevice enabled the
call returns NRF_SUCCESS at once, the NVMC is busy (READY reads 0) for its
write time (T_WRITE per word) or page erase time (T_ERASEPAGE), scheduled on
the clock, and at the end of it the memory changes (the source buffer is read then, as the
API warns) and NRF_EVT_FLASH_OPERATION_SUCCESS is queued (SWI2 pended, read
with sd_evt_get).  Another flash call meanwhile answers NRF_ERROR_BUSY.
With the SoftDevice disabled the operation is done before the call returns
(the call takes its time: the CPU waits, as for the NVMC) and no event is
queued.  Pages below the application area (MBR + SoftDevice,
0x00000-0x25FFF) answer NRF_ERROR_FORBIDDEN; misaligned pointers or addresses
past the 512 KiB flash NRF_ERROR_INVALID_ADDR; a size of 0 or more than one
page of words NRF_ERROR_INVALID_LENGTH.

Random numbers: the application pool (RAND_POOL_CAPACITY bytes) fills at the
RNG's bias-corrected rate (120 us per byte) from enable; the bytes come from a
PRNG seeded from the machine's RNG seed (``soc.peripherals['rng'].seed``), so
two runs of one firmware get the same bytes.

sd_app_evt_wait: returns at once if an application interrupt (an IRQ, SysTick
or PendSV taken) happened since the previous call, or if an interrupt is
pending that is masked by PRIMASK/BASEPRI, or (with SCR.SEVONPEND) a disabled
interrupt is pending.  Otherwise the core sleeps as in WFE; the SVC is
re-executed when it wakes, so an enabled interrupt is taken first and the
call then returns in thread mode, as the API describes.

Resource rules while the SoftDevice is enabled (S132 SoftDevice
Specification, "Hardware peripherals" and "Peripheral runtime protection"):
an application write to a peripheral the SoftDevice blocks or restricts
(:data:`PROTECTED_SLOTS`: CLOCK/POWER/BPROT, RADIO, TIMER0, RTC0, TEMP, RNG,
ECB, CCM/AAR, EGU5/SWI5, NVMC) is a HardFault on silicon (MWU); here it is
logged once per (peripheral, offset) with the guest PC (of the basic block
doing the store) and symbol, and performed.  With ``strict = True`` on the
SoftDevice it is not performed and faults instead: at the next block
boundary a HardFault is taken and, as the SoftDevice's HardFault handler
does, the application's fault handler (sd_softdevice_enable's second
argument) is called with NRF_FAULT_ID_APP_MEMACC, the PC and the
peripheral ID.  Reads are allowed, as on silicon.  An application write to NVIC
ISER enabling an interrupt of SD_RESERVED_IRQ_MASK is logged once per IRQ with
the caller (the real sd_nvic_EnableIRQ, an inline function of nrf_nvic.h,
refuses with NRF_ERROR_SOC_NVIC_INTERRUPT_NOT_AVAILABLE).  The checks cost
nothing while the SoftDevice is disabled: the guards are installed by
sd_softdevice_enable and removed when it is disabled or the chip resets.

Where nrf_soc.h documents only NRF_SUCCESS, invalid arguments get the code
the rest of the API uses for them (our choice): sd_ppi_channel_enable_set/
clr with a SoftDevice channel in the mask NRF_ERROR_SOC_PPI_INVALID_CHANNEL,
a RAM section index above 7 NRF_ERROR_INVALID_PARAM.

sd_nvic_* (nrf_nvic.h) are inline functions in the application, not SVCs:
nothing to emulate.

Not modelled: the exact faulting instruction (strict faults at the end of the
basic block; the PC logged is the block's); which registers of a protected
peripheral are protected (the whole 4 KiB slot is); PPI is not
write-guarded (nRF5 SDK 15's nrfx_ppi writes NRF_PPI directly for its own
channels; the SoftDevice's channels 17-31 and groups 4-5 are refused by the
sd_ppi_* calls only); the CPU stall during a flash operation while the
SoftDevice is enabled (the NVMC's READY reads 0 for its duration; disabled,
the call takes the operation's time, the CPU held as by the NVMC); splitting flash operations into radio timeslots and
NRF_EVT_FLASH_OPERATION_ERROR (never raised); BPROT (sd_flash_protect and
sd_protected_register_write store CONFIG0-3/DISABLEINDEBUG, which are not
enforced on flash writes); the power-fail comparator (sd_power_pof_* store
the setting, NRF_EVT_POWER_FAILURE_WARNING is never raised); radio
notification signals (sd_radio_notification_cfg_set is accepted and logged
once; SWI1 is never pended); the radio timeslot API (0x48-0x4A answer
NOT_SUPPORTED); NRF_EVT_HFCLKSTARTED (sd_clock_hfclk_is_running is polled);
the time the blocking calls take (ECB, temperature).
"""
from __future__ import annotations

import functools
import logging
import random
import struct

from emu.clock import us
from emu.loader import APP_BASE_S132
from emu.peripherals.nvmc import FLASH_SIZE, PAGE as FLASH_PAGE, T_ERASEPAGE, T_WRITE

log = logging.getLogger("emu.softdevice")

# nrf_error.h, nrf_error_soc.h
NRF_SUCCESS = 0
NRF_ERROR_SOFTDEVICE_NOT_ENABLED = 2
NRF_ERROR_INVALID_PARAM = 7
NRF_ERROR_INVALID_LENGTH = 9
NRF_ERROR_FORBIDDEN = 15
NRF_ERROR_INVALID_ADDR = 16
NRF_ERROR_BUSY = 17
NRF_ERROR_SOC_BASE_NUM = 0x2000
NRF_ERROR_SOC_MUTEX_ALREADY_TAKEN = NRF_ERROR_SOC_BASE_NUM + 0
NRF_ERROR_SOC_NVIC_INTERRUPT_NOT_AVAILABLE = NRF_ERROR_SOC_BASE_NUM + 1
NRF_ERROR_SOC_POWER_MODE_UNKNOWN = NRF_ERROR_SOC_BASE_NUM + 4
NRF_ERROR_SOC_POWER_POF_THRESHOLD_UNKNOWN = NRF_ERROR_SOC_BASE_NUM + 5
NRF_ERROR_SOC_POWER_OFF_SHOULD_NOT_RETURN = NRF_ERROR_SOC_BASE_NUM + 6
NRF_ERROR_SOC_RAND_NOT_ENOUGH_VALUES = NRF_ERROR_SOC_BASE_NUM + 7
NRF_ERROR_SOC_PPI_INVALID_CHANNEL = NRF_ERROR_SOC_BASE_NUM + 8
NRF_ERROR_SOC_PPI_INVALID_GROUP = NRF_ERROR_SOC_BASE_NUM + 9

# nrf_soc.h
SOC_SVC_BASE = 0x20
SOC_SVC_BASE_NOT_AVAILABLE = 0x2C
SVC_SOC_LAST = SOC_SVC_BASE_NOT_AVAILABLE + 37
NRF_FAULT_ID_APP_MEMACC = 0x1001           # nrf_sdm.h
NRF_EVT_HFCLKSTARTED = 0
NRF_EVT_POWER_FAILURE_WARNING = 1
NRF_EVT_FLASH_OPERATION_SUCCESS = 2
NRF_EVT_FLASH_OPERATION_ERROR = 3
NRF_SOC_SD_PPI_CHANNELS_SD_ENABLED_MSK = 0xFFFE0000     # channels 17-31
NRF_SOC_SD_PPI_GROUPS_SD_ENABLED_MSK = 0x30             # groups 4-5
NRF_MUTEX_FREE, NRF_MUTEX_TAKEN = 0, 1
NRF_POWER_MODE_CONSTLAT, NRF_POWER_MODE_LOWPWR = 0, 1
NRF_POWER_THRESHOLD_V17, NRF_POWER_THRESHOLD_V28 = 4, 15
NRF_RADIO_NOTIFICATION_TYPE_INT_ON_BOTH = 3
NRF_RADIO_NOTIFICATION_DISTANCE_800US = 1

SOC_SVC_NAMES = {
    0x20: "sd_ppi_channel_enable_get", 0x21: "sd_ppi_channel_enable_set",
    0x22: "sd_ppi_channel_enable_clr", 0x23: "sd_ppi_channel_assign",
    0x24: "sd_ppi_group_task_enable", 0x25: "sd_ppi_group_task_disable",
    0x26: "sd_ppi_group_assign", 0x27: "sd_ppi_group_get",
    0x28: "sd_flash_page_erase", 0x29: "sd_flash_write", 0x2A: "sd_flash_protect",
    0x2B: "sd_protected_register_write",
    0x2C: "sd_mutex_new", 0x2D: "sd_mutex_acquire", 0x2E: "sd_mutex_release",
    0x2F: "sd_rand_application_pool_capacity_get",
    0x30: "sd_rand_application_bytes_available_get",
    0x31: "sd_rand_application_vector_get",
    0x32: "sd_power_mode_set", 0x33: "sd_power_system_off",
    0x34: "sd_power_reset_reason_get", 0x35: "sd_power_reset_reason_clr",
    0x36: "sd_power_pof_enable", 0x37: "sd_power_pof_threshold_set",
    0x39: "sd_power_ram_power_set", 0x3A: "sd_power_ram_power_clr",
    0x3B: "sd_power_ram_power_get",
    0x3C: "sd_power_gpregret_set", 0x3D: "sd_power_gpregret_clr",
    0x3E: "sd_power_gpregret_get", 0x3F: "sd_power_dcdc_mode_set",
    0x41: "sd_app_evt_wait",
    0x42: "sd_clock_hfclk_request", 0x43: "sd_clock_hfclk_release",
    0x44: "sd_clock_hfclk_is_running", 0x45: "sd_radio_notification_cfg_set",
    0x46: "sd_ecb_block_encrypt", 0x47: "sd_ecb_blocks_encrypt",
    0x48: "sd_radio_session_open", 0x49: "sd_radio_session_close",
    0x4A: "sd_radio_request",
    0x4B: "sd_evt_get", 0x4C: "sd_temp_get",
}

SD_EVT_WAIT_SVC = 0x41
SD_RESERVED_IRQ_MASK = 0x4200F903      # __NRF_NVIC_SD_IRQS_0 (nrf_nvic.h)

# Application flash area: above the MBR (4 KiB) and S132 6.1.1 (SD_FLASH_SIZE 0x25000)
APP_FLASH_START = APP_BASE_S132

RAND_POOL_CAPACITY = 64
T_RAND_BYTE = us(120)          # RNG with bias correction (CONFIG.DERCEN)

# BPROT (slot 0x40000000): CONFIG0, CONFIG1, DISABLEINDEBUG, CONFIG2, CONFIG3
BPROT_REGS = {0x40000600: "CONFIG0", 0x40000604: "CONFIG1", 0x40000608: "DISABLEINDEBUG",
              0x40000610: "CONFIG2", 0x40000614: "CONFIG3"}

# Peripheral slots the application must not write while the SoftDevice is
# enabled (S132 SDS "Hardware peripherals with limited availability").
PROTECTED_SLOTS = {
    0x40000000: ("CLOCK/POWER/BPROT", "restricted"),
    0x40001000: ("RADIO", "blocked"),
    0x40008000: ("TIMER0", "blocked"),
    0x4000B000: ("RTC0", "blocked"),
    0x4000C000: ("TEMP", "restricted"),
    0x4000D000: ("RNG", "restricted"),
    0x4000E000: ("ECB", "restricted"),
    0x4000F000: ("CCM/AAR", "blocked"),
    0x40019000: ("EGU5/SWI5", "blocked"),
    0x4001E000: ("NVMC", "restricted"),
}

# ClockPower / Nvmc / Ppi register offsets used here (nRF52832 PS)
_RESETREAS, _SYSTEMOFF, _POFCON, _GPREGRET, _GPREGRET2 = 0x400, 0x500, 0x510, 0x51C, 0x520
_DCDCEN, _RAM_POWER = 0x578, 0x900
_TASKS_HFCLKSTART, _TASKS_HFCLKSTOP, _TASKS_CONSTLAT, _TASKS_LOWPWR = 0x000, 0x004, 0x078, 0x07C
_NVMC_CONFIG, _NVMC_ERASEPAGE = 0x504, 0x508
_PPI_CHEN, _PPI_CHENSET, _PPI_CHENCLR, _PPI_CH_EEP, _PPI_CH_TEP, _PPI_CHG = (
    0x500, 0x504, 0x508, 0x510, 0x514, 0x800)
_PPI_PROG_CHANNELS, _PPI_GROUPS = 20, 6


def _reg_write(p, offset: int, value: int) -> None:
    """A register write by the SoftDevice itself (never through the guards)."""
    type(p).write(p, offset, value & 0xFFFFFFFF, 4)


class SocLibrary:
    """The SoC library half of the emulated SoftDevice (mixed into SoftDevice)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_app_irq_seen", "_flash_event", "_guards_installed", "_mwu_event",
                "_mwu_pending", "_rand_avail", "_rand_prng", "_rand_since", "bprot",
                "flash_op", "pof_enabled", "pof_threshold", "radio_notification")

    # set by SoftDevice: machine, cpu, clock, enabled, fault_handler, _logged, post_soc_event
    #: True: an application write to a protected peripheral is not performed and
    #: faults as on silicon (see _mwu_fault); False (default): logged and performed.
    strict = False

    def _soc_init(self) -> None:
        """Called once from SoftDevice.__init__, before the first reset()."""
        self._flash_event = self.clock.event("sd.flash_done", self._flash_done)
        self._mwu_event = self.clock.event("sd.mwu_fault", self._mwu_fault)
        self._mwu_pending = None
        self._app_irq_seen = False
        self._guards_installed = False
        self.cpu.on_exception.append(self._soc_on_exception)

    def _soc_reset(self) -> None:
        """Part of SoftDevice.reset(): power-on/system reset or sd_softdevice_disable."""
        self._flash_event.cancel()
        self._mwu_event.cancel()
        self._mwu_pending = None
        self.flash_op = None          # ("write", dst, src, words) / ("erase", addr) in flight
        self.bprot = {}               # BPROT register address -> value written through the SD
        self.pof_enabled = False
        self.pof_threshold = None
        self.radio_notification = (0, 0)
        self._app_irq_seen = False
        self._rand_prng = random.Random(self._rand_seed())
        self._rand_avail = 0
        self._rand_since = self.clock.now
        self._remove_guards()

    def _soc_enabled(self) -> None:
        """Called by sd_softdevice_enable once it succeeded."""
        self._app_irq_seen = False
        self._rand_avail = 0
        self._rand_since = self.clock.now
        self._install_guards()

    # ------------------------------------------------------------------
    # snapshot support: the guards are wiring, re-derived from `enabled`
    # ------------------------------------------------------------------
    def save_state(self) -> dict:
        return {"guards": bool(self.enabled)}

    def load_state(self, state: dict) -> None:
        self._remove_guards()
        if state.get("guards"):
            self._install_guards()

    # ------------------------------------------------------------------
    # helpers
    # ------------------------------------------------------------------
    def _periph(self, name: str):
        return self.machine.soc.peripherals[name]

    def _soc_log_once(self, key, msg: str, *args, level=logging.WARNING) -> None:
        if key not in self._logged:
            self._logged.add(key)
            log.log(level, msg, *args)

    def _guest_pc(self) -> str:
        pc = self.cpu.pc
        sym = self.machine.describe_address(pc)
        return f"{pc:#010x}" + (f" ({sym})" if sym else "")

    def _rand_seed(self) -> int:
        rng = self.machine.soc.peripherals.get("rng")
        return (getattr(rng, "seed", 0x52832) ^ 0x5D132) & 0xFFFFFFFF

    # ------------------------------------------------------------------
    # PPI
    # ------------------------------------------------------------------
    def _ppi_reserved(self) -> tuple[int, int]:
        if self.enabled:
            return NRF_SOC_SD_PPI_CHANNELS_SD_ENABLED_MSK, NRF_SOC_SD_PPI_GROUPS_SD_ENABLED_MSK
        return 0, 0

    def _sd_ppi_channel_enable_get(self, p_channel_enable, *_):
        self._wr(p_channel_enable, struct.pack("<I", self._periph("ppi").values[_PPI_CHEN]))
        return NRF_SUCCESS

    def _sd_ppi_channel_enable_set(self, msk, *_):
        if msk & self._ppi_reserved()[0]:
            return NRF_ERROR_SOC_PPI_INVALID_CHANNEL
        _reg_write(self._periph("ppi"), _PPI_CHENSET, msk)
        return NRF_SUCCESS

    def _sd_ppi_channel_enable_clr(self, msk, *_):
        if msk & self._ppi_reserved()[0]:
            return NRF_ERROR_SOC_PPI_INVALID_CHANNEL
        _reg_write(self._periph("ppi"), _PPI_CHENCLR, msk)
        return NRF_SUCCESS

    def _sd_ppi_channel_assign(self, ch, eep, tep, *_):
        ch &= 0xFF
        if ch >= _PPI_PROG_CHANNELS or (1 << ch) & self._ppi_reserved()[0]:
            return NRF_ERROR_SOC_PPI_INVALID_CHANNEL
        ppi = self._periph("ppi")
        _reg_write(ppi, _PPI_CH_EEP + 8 * ch, eep)
        _reg_write(ppi, _PPI_CH_TEP + 8 * ch, tep)
        return NRF_SUCCESS

    def _group_ok(self, g: int) -> bool:
        return g < _PPI_GROUPS and not (1 << g) & self._ppi_reserved()[1]

    def _sd_ppi_group_task_enable(self, g, *_):
        g &= 0xFF
        if not self._group_ok(g):
            return NRF_ERROR_SOC_PPI_INVALID_GROUP
        self._periph("ppi").trigger(8 * g)            # TASKS_CHG[g].EN
        return NRF_SUCCESS

    def _sd_ppi_group_task_disable(self, g, *_):
        g &= 0xFF
        if not self._group_ok(g):
            return NRF_ERROR_SOC_PPI_INVALID_GROUP
        self._periph("ppi").trigger(8 * g + 4)        # TASKS_CHG[g].DIS
        return NRF_SUCCESS

    def _sd_ppi_group_assign(self, g, msk, *_):
        g &= 0xFF
        if not self._group_ok(g):
            return NRF_ERROR_SOC_PPI_INVALID_GROUP
        _reg_write(self._periph("ppi"), _PPI_CHG + 4 * g, msk)
        return NRF_SUCCESS

    def _sd_ppi_group_get(self, g, p_channel_msk, *_):
        g &= 0xFF
        if not self._group_ok(g):
            return NRF_ERROR_SOC_PPI_INVALID_GROUP
        self._wr(p_channel_msk, struct.pack("<I", self._periph("ppi").values[_PPI_CHG + 4 * g]))
        return NRF_SUCCESS

    # ------------------------------------------------------------------
    # flash
    # ------------------------------------------------------------------
    def _sd_flash_write(self, p_dst, p_src, size, *_):
        if p_dst & 3 or p_src & 3:
            return NRF_ERROR_INVALID_ADDR
        if size == 0 or size > FLASH_PAGE // 4:
            return NRF_ERROR_INVALID_LENGTH
        if p_dst + 4 * size > FLASH_SIZE:
            return NRF_ERROR_INVALID_ADDR
        if p_dst < APP_FLASH_START:
            return NRF_ERROR_FORBIDDEN
        return self._flash_start(("write", p_dst, p_src, size))

    def _sd_flash_page_erase(self, page_number, *_):
        addr = page_number * FLASH_PAGE
        if addr >= FLASH_SIZE:
            return NRF_ERROR_INVALID_ADDR
        if addr < APP_FLASH_START:
            return NRF_ERROR_FORBIDDEN
        return self._flash_start(("erase", addr))

    def _flash_start(self, op: tuple) -> int:
        if self.flash_op is not None:
            return NRF_ERROR_BUSY
        if not self.enabled:          # done before the call returns, no event
            self._flash_do(op)
            return NRF_SUCCESS
        self.flash_op = op
        ticks = T_ERASEPAGE if op[0] == "erase" else T_WRITE * op[3]
        self._flash_event.schedule_in(ticks)
        nvmc = self._periph("nvmc")
        with nvmc.background():              # the application runs on meanwhile
            nvmc._busy(ticks)                # the NVMC is busy (READY = 0) meanwhile
        return NRF_SUCCESS

    def _flash_done(self) -> None:
        op, self.flash_op = self.flash_op, None
        if op is None:
            return
        nvmc = self._periph("nvmc")
        busy = nvmc.busy_until
        try:
            with nvmc.background():
                self._flash_do(op)
            nvmc.busy_until = busy           # its busy time was the window just ended
        except Exception as e:                   # a bad source pointer: the data is lost
            self._soc_log_once(("flash_src", op[0]), "sd_flash_%s: %s", op[0], e)
        self.post_soc_event(NRF_EVT_FLASH_OPERATION_SUCCESS)

    def _flash_do(self, op: tuple) -> None:
        nvmc = self._periph("nvmc")
        cpu = self.cpu
        saved = nvmc.values[_NVMC_CONFIG]
        try:
            if op[0] == "erase":
                nvmc.values[_NVMC_CONFIG] = 2          # Een
                _reg_write(nvmc, _NVMC_ERASEPAGE, op[1])
            else:
                _, dst, src, words = op
                data = bytes(cpu.read_mem(src, 4 * words))
                before = bytes(cpu.read_mem(dst, 4 * words))
                nvmc.values[_NVMC_CONFIG] = 1          # Wen
                out = nvmc.cpu_flash_write(dst, before, data)
                cpu.write_mem(dst, out)
                cpu.invalidate_code(dst, dst + 4 * words)
        finally:
            nvmc.values[_NVMC_CONFIG] = saved

    def _sd_flash_protect(self, cfg0, cfg1, cfg2, cfg3):
        for addr, v in zip((0x40000600, 0x40000604, 0x40000610, 0x40000614),
                           (cfg0, cfg1, cfg2, cfg3)):
            self.bprot[addr] = self.bprot.get(addr, 0) | v    # protection only adds
        self._soc_log_once("bprot", "sd_flash_protect: BPROT is not modelled (stored only)",
                           level=logging.INFO)
        return NRF_SUCCESS

    def _sd_protected_register_write(self, p_register, value, *_):
        if p_register not in BPROT_REGS:
            return NRF_ERROR_INVALID_ADDR
        self.bprot[p_register] = value
        self._soc_log_once("bprot", "sd_protected_register_write: BPROT %s is not modelled "
                           "(stored only)", BPROT_REGS[p_register], level=logging.INFO)
        return NRF_SUCCESS

    # ------------------------------------------------------------------
    # mutex
    # ------------------------------------------------------------------
    def _sd_mutex_new(self, p_mutex, *_):
        self._wr(p_mutex, bytes([NRF_MUTEX_FREE]))
        return NRF_SUCCESS

    def _sd_mutex_acquire(self, p_mutex, *_):
        if self._u8(p_mutex) == NRF_MUTEX_TAKEN:
            return NRF_ERROR_SOC_MUTEX_ALREADY_TAKEN
        self._wr(p_mutex, bytes([NRF_MUTEX_TAKEN]))
        return NRF_SUCCESS

    def _sd_mutex_release(self, p_mutex, *_):
        self._wr(p_mutex, bytes([NRF_MUTEX_FREE]))
        return NRF_SUCCESS

    # ------------------------------------------------------------------
    # random numbers
    # ------------------------------------------------------------------
    def rand_bytes_available(self) -> int:
        filled = (self.clock.now - self._rand_since) // T_RAND_BYTE
        return min(RAND_POOL_CAPACITY, self._rand_avail + filled)

    def _sd_rand_application_pool_capacity_get(self, p_cap, *_):
        self._wr(p_cap, bytes([RAND_POOL_CAPACITY]))
        return NRF_SUCCESS

    def _sd_rand_application_bytes_available_get(self, p_avail, *_):
        self._wr(p_avail, bytes([self.rand_bytes_available()]))
        return NRF_SUCCESS

    def _sd_rand_application_vector_get(self, p_buff, length, *_):
        length &= 0xFF
        avail = self.rand_bytes_available()
        if length > avail:
            return NRF_ERROR_SOC_RAND_NOT_ENOUGH_VALUES
        data = bytes(self._rand_prng.getrandbits(8) for _ in range(length))
        if length:
            self._wr(p_buff, data)
        # the pool refills from now; a full pool had stopped filling
        self._rand_avail = avail - length
        self._rand_since = self.clock.now
        return NRF_SUCCESS

    # ------------------------------------------------------------------
    # POWER
    # ------------------------------------------------------------------
    def _sd_power_mode_set(self, mode, *_):
        mode &= 0xFF
        if mode == NRF_POWER_MODE_CONSTLAT:
            self._periph("clock_power").trigger(_TASKS_CONSTLAT)
        elif mode == NRF_POWER_MODE_LOWPWR:
            self._periph("clock_power").trigger(_TASKS_LOWPWR)
        else:
            return NRF_ERROR_SOC_POWER_MODE_UNKNOWN
        return NRF_SUCCESS

    def _sd_power_system_off(self, *_):
        _reg_write(self._periph("clock_power"), _SYSTEMOFF, 1)
        return NRF_ERROR_SOC_POWER_OFF_SHOULD_NOT_RETURN     # never seen: the core is off

    def _sd_power_reset_reason_get(self, p_reset_reason, *_):
        self._wr(p_reset_reason, struct.pack("<I", self._periph("clock_power").values[_RESETREAS]))
        return NRF_SUCCESS

    def _sd_power_reset_reason_clr(self, msk, *_):
        _reg_write(self._periph("clock_power"), _RESETREAS, msk)     # W1C
        return NRF_SUCCESS

    def _sd_power_pof_enable(self, enable, *_):
        self.pof_enabled = bool(enable & 0xFF)
        p = self._periph("clock_power")
        _reg_write(p, _POFCON, (p.values[_POFCON] & ~1) | int(self.pof_enabled))
        return NRF_SUCCESS

    def _sd_power_pof_threshold_set(self, threshold, *_):
        threshold &= 0xFF
        if not NRF_POWER_THRESHOLD_V17 <= threshold <= NRF_POWER_THRESHOLD_V28:
            return NRF_ERROR_SOC_POWER_POF_THRESHOLD_UNKNOWN
        self.pof_threshold = threshold
        p = self._periph("clock_power")
        _reg_write(p, _POFCON, (p.values[_POFCON] & ~0x1E) | (threshold << 1))
        return NRF_SUCCESS

    def _ram_index_ok(self, index: int) -> bool:
        return (index & 0xFF) < 8

    def _sd_power_ram_power_set(self, index, msk, *_):
        if not self._ram_index_ok(index):
            return NRF_ERROR_INVALID_PARAM
        _reg_write(self._periph("clock_power"), _RAM_POWER + 16 * (index & 0xFF) + 4, msk)
        return NRF_SUCCESS

    def _sd_power_ram_power_clr(self, index, msk, *_):
        if not self._ram_index_ok(index):
            return NRF_ERROR_INVALID_PARAM
        _reg_write(self._periph("clock_power"), _RAM_POWER + 16 * (index & 0xFF) + 8, msk)
        return NRF_SUCCESS

    def _sd_power_ram_power_get(self, index, p_ram_power, *_):
        if not self._ram_index_ok(index):
            return NRF_ERROR_INVALID_PARAM
        v = self._periph("clock_power").values[_RAM_POWER + 16 * (index & 0xFF)]
        self._wr(p_ram_power, struct.pack("<I", v))
        return NRF_SUCCESS

    def _gpregret(self, gid: int):
        return {0: _GPREGRET, 1: _GPREGRET2}.get(gid)

    def _sd_power_gpregret_set(self, gid, msk, *_):
        off = self._gpregret(gid)
        if off is None:
            return NRF_ERROR_INVALID_PARAM
        p = self._periph("clock_power")
        _reg_write(p, off, p.values[off] | msk)
        return NRF_SUCCESS

    def _sd_power_gpregret_clr(self, gid, msk, *_):
        off = self._gpregret(gid)
        if off is None:
            return NRF_ERROR_INVALID_PARAM
        p = self._periph("clock_power")
        _reg_write(p, off, p.values[off] & ~msk)
        return NRF_SUCCESS

    def _sd_power_gpregret_get(self, gid, p_gpregret, *_):
        off = self._gpregret(gid)
        if off is None:
            return NRF_ERROR_INVALID_PARAM
        self._wr(p_gpregret, struct.pack("<I", self._periph("clock_power").values[off]))
        return NRF_SUCCESS

    def _sd_power_dcdc_mode_set(self, mode, *_):
        mode &= 0xFF
        if mode > 1:
            return NRF_ERROR_INVALID_PARAM
        _reg_write(self._periph("clock_power"), _DCDCEN, mode)
        return NRF_SUCCESS

    # ------------------------------------------------------------------
    # CLOCK
    # ------------------------------------------------------------------
    def _sd_clock_hfclk_request(self, *_):
        self._periph("clock_power").trigger(_TASKS_HFCLKSTART)
        return NRF_SUCCESS

    def _sd_clock_hfclk_release(self, *_):
        self._periph("clock_power").trigger(_TASKS_HFCLKSTOP)
        return NRF_SUCCESS

    def _sd_clock_hfclk_is_running(self, p_is_running, *_):
        running = bool(getattr(self._periph("clock_power"), "hfxo_running", False))
        self._wr(p_is_running, struct.pack("<I", int(running)))
        return NRF_SUCCESS

    # ------------------------------------------------------------------
    # radio notification, ECB
    # ------------------------------------------------------------------
    def _sd_radio_notification_cfg_set(self, ntype, distance, *_):
        ntype &= 0xFF
        distance &= 0xFF
        if ntype > NRF_RADIO_NOTIFICATION_TYPE_INT_ON_BOTH or \
                distance > NRF_RADIO_NOTIFICATION_DISTANCE_800US:
            return NRF_ERROR_INVALID_PARAM
        self.radio_notification = (ntype, distance)
        if ntype:
            self._soc_log_once("radio_notification", "sd_radio_notification_cfg_set(%d, %d) "
                               "accepted; radio notifications (SWI1) are not raised by the "
                               "emulated SoftDevice", ntype, distance)
        return NRF_SUCCESS

    def _sd_ecb_block_encrypt(self, p_ecb_data, *_):
        from emu.peripherals.ecb import aes128_ecb
        data = bytes(self._rd(p_ecb_data, 32))
        self._wr(p_ecb_data + 32, aes128_ecb(data[:16], data[16:32]))
        return NRF_SUCCESS

    def _sd_ecb_blocks_encrypt(self, count, p_blocks, *_):
        from emu.peripherals.ecb import aes128_ecb
        for i in range(count & 0xFF):
            p_key, p_clear, p_cipher = struct.unpack("<III", self._rd(p_blocks + 12 * i, 12))
            self._wr(p_cipher, aes128_ecb(bytes(self._rd(p_key, 16)),
                                          bytes(self._rd(p_clear, 16))))
        return NRF_SUCCESS

    # ------------------------------------------------------------------
    # sd_app_evt_wait
    # ------------------------------------------------------------------
    def _soc_on_exception(self, exc: int, entering: bool) -> None:
        if entering and exc >= 14:       # PendSV, SysTick, IRQs: application interrupts
            self._app_irq_seen = True

    def _sd_app_evt_wait(self, *_):
        cpu = self.cpu
        if self._app_irq_seen:
            self._app_irq_seen = False
            return NRF_SUCCESS
        best = cpu.best_pending()
        if best is not None and best[0] < cpu.active_priority() \
                and best[0] >= cpu.execution_priority():
            return NRF_SUCCESS           # pending, masked by PRIMASK/BASEPRI: wakes, returns
        disabled_pending = (cpu.pending >> 16) & ~cpu.irq_enabled
        if disabled_pending and cpu.scr & 0x10:     # SEVONPEND
            return NRF_SUCCESS
        # Sleep as in WFE and run this SVC again on wake-up: an enabled
        # interrupt is taken first (returning to the SVC), then it returns.
        pc = cpu.pc
        if struct.unpack("<H", bytes(cpu.read_mem(pc - 2, 2)))[0] == 0xDF00 | SD_EVT_WAIT_SVC:
            cpu.pc = pc - 2
            cpu.sleep_kind = "wfe"
            cpu.sleeping = True
        return NRF_SUCCESS

    # ------------------------------------------------------------------
    # resource rules: write guards on protected peripherals and NVIC ISER
    # ------------------------------------------------------------------
    def _install_guards(self) -> None:
        if self._guards_installed:
            return
        soc = self.machine.soc
        for base, (label, kind) in PROTECTED_SLOTS.items():
            p = soc.peripheral_at(base) if hasattr(soc, "peripheral_at") else None
            if p is None or "write" in vars(p):
                continue
            p.write = functools.partial(self._guarded_write, p, label, kind)
            p.ops_changed()          # the bus's ops must not go around the guard
        scs = getattr(soc, "scs", None)
        if scs is not None and "write_word" not in vars(scs):
            scs.write_word = functools.partial(self._guarded_nvic_write, scs)
            if getattr(scs, "page", None) is not None:
                scs.page.ops_changed()   # ISER/ICER ops must not go around the guard
        self._guards_installed = True

    def _remove_guards(self) -> None:
        if not getattr(self, "_guards_installed", False):
            return
        soc = self.machine.soc
        for base in PROTECTED_SLOTS:
            p = soc.peripheral_at(base)
            w = vars(p).get("write") if p is not None else None
            if isinstance(w, functools.partial) and w.func == self._guarded_write:
                del p.write
                p.ops_changed()
        scs = getattr(soc, "scs", None)
        w = vars(scs).get("write_word") if scs is not None else None
        if isinstance(w, functools.partial) and w.func == self._guarded_nvic_write:
            del scs.write_word
            if getattr(scs, "page", None) is not None:
                scs.page.ops_changed()
        self._guards_installed = False

    def _guarded_write(self, p, label: str, kind: str, offset: int, value: int,
                       size: int = 4) -> None:
        if self.strict:
            if self._mwu_pending is None:
                self._mwu_pending = (p.base + offset, label, self.cpu.pc)
                self._mwu_event.schedule_in(0)
                self.cpu.request_stop()
            return
        key = ("protected", p.base, offset)
        if key not in self._logged:
            self._logged.add(key)
            log.warning("application write %#x to %s +%#05x (%#010x) at pc %s while the "
                        "SoftDevice is enabled: %s peripheral, a HardFault on silicon (MWU); "
                        "performed here", value, label, offset, p.base + offset,
                        self._guest_pc(), kind)
        type(p).write(p, offset, value, size)

    def _mwu_fault(self) -> None:
        """strict: the MWU's fault for a protected write, at the next block boundary.

        The SoftDevice's HardFault handler calls the application's fault
        handler (given to sd_softdevice_enable) with NRF_FAULT_ID_APP_MEMACC,
        the PC and the PREGION[0] subregion (the peripheral ID) as ``info``
        (nrf_sdm.h); without one, the application's HardFault handler runs.
        """
        pend, self._mwu_pending = self._mwu_pending, None
        if pend is None or not self.enabled:
            return
        addr, label, pc = pend
        cpu = self.cpu
        from emu.cpu.cortexm import HARDFAULT
        from unicorn import arm_const as A
        # the exception returns to where the core stopped (after the store's block)
        cpu.take_fault(HARDFAULT, 0, cpu.pc, f"write to {label} ({addr:#010x}) while the "
                       f"SoftDevice is enabled, in the block at {pc:#010x} (MWU, strict "
                       "SoftDevice)")
        handler = getattr(self, "fault_handler", 0) or 0
        if handler and cpu.ipsr == HARDFAULT:
            cpu.set_reg(A.UC_ARM_REG_R0, NRF_FAULT_ID_APP_MEMACC)
            cpu.set_reg(A.UC_ARM_REG_R1, pc)
            cpu.set_reg(A.UC_ARM_REG_R2, (addr >> 12) & 0x1F)
            cpu.pc = handler & ~1

    def _guarded_nvic_write(self, scs, off: int, value: int, lanes: int) -> None:
        if 0x100 <= off < 0x140:                       # NVIC ISER[n]
            shift = 32 * ((off - 0x100) // 4)
            bits = ((value & lanes) << shift) & SD_RESERVED_IRQ_MASK
            for irq in range(32):
                if bits >> irq & 1 and ("nvic", irq) not in self._logged:
                    self._logged.add(("nvic", irq))
                    log.warning("application enables IRQ %d (reserved by the SoftDevice, "
                                "SD_RESERVED_IRQ_MASK) in NVIC ISER at pc %s; "
                                "sd_nvic_EnableIRQ would return "
                                "NRF_ERROR_SOC_NVIC_INTERRUPT_NOT_AVAILABLE", irq,
                                self._guest_pc())
        type(scs).write_word(scs, off, value, lanes)
