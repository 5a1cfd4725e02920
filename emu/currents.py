"""Every current the energy model (emu/power.py) uses, in one declaration.

Each :class:`Figure` is one current in nanoamperes (an integer, so that the
model's integral is exact) with where it comes from: the datasheet, its
table and symbol, whether it is the typical or the maximum value, and its
``basis``:

* ``checked``: read, when this table was checked (issue 27), in a public
  copy of the datasheet's own table; ``source`` names the table, the
  symbol and the copy, and the figure is that table's, digit for digit;
* ``datasheet``: the datasheet's figure as a public quotation of it gives
  it (a vendor's blog, another project's transcription), its table not
  read here; the note says what the quotation is;
* ``unchecked``: a datasheet figure as transcribed for this table, found in
  no public copy of its table when it was checked; verify before relying on
  the last digit (the note says what was looked for);
* ``derived``: computed from datasheet figures (the note says how);
* ``estimate``: no datasheet gives it for this part or this condition, or
  none could be read; the note says what the estimate rests on.

The nRF52832's tables were read in Raytac's MDBT42Q datasheet (an nRF52832
module; version E, 2017-10-31, section 5.3, which reproduces the PS's
RADIO, CPU and power-management tables: MDBT42Q below): Nordic's own pages
(docs.nordicsemi.com, ps_nrf52832) could not be read for the check.  The
table is for a 3.0 V supply at 25 degC, the PS's common conditions
("Current consumption scenarios"); the PineTime's cell is 3.7-4.2 V, which
the model does not correct for.  docs/energy.md lists the table and how
each state is chosen.  Imports nothing of ours (base layer).
"""
from __future__ import annotations

from dataclasses import dataclass

PS = "nRF52832 Product Specification v1.4"
# the public copy the PS's tables were read in (section 5.3 of the module's
# datasheet reproduces them; "Any technical spec shall refer to Nordic's
# official documents as final reference")
MDBT42Q = ("read in Raytac MDBT42Q datasheet v.E (2017-10-31) {sec}, "
           "https://www.espruino.com/datasheets/MDBT42Q-E.pdf")
CST816S = ("Hynitron CST816S datasheet V1.3, 7 'Electrical characteristics' (25 degC, "
           "VDDA 3.3 V)")
CST816S_COPY = "https://www.espruino.com/datasheets/CST816S.pdf"
# the PineTime parts' datasheets PINE64 publishes (wiki, "PineTime" page)
# could not be read for the check: their figures stay estimates
NOT_READ = "its datasheet could not be read for the check (issue 27)"

BASES = ("checked", "datasheet", "unchecked", "derived", "estimate")


@dataclass(frozen=True)
class Figure:
    key: str            # "radio.tx.0dbm.dcdc"
    nA: int             # current in nanoamperes
    what: str           # the condition, in the datasheet's words where there are any
    source: str         # datasheet, table and symbol (and the copy read, when checked)
    kind: str = "typ"   # "typ" or "max"
    basis: str = "checked"
    note: str = ""


def _dbm(dbm: int) -> str:
    return f"+{dbm}" if dbm > 0 else str(dbm)


def _radio_tx(dbm: int, dcdc_nA: int, ldo_nA: int) -> tuple:
    """The PS's 'Radio current consumption (Transmitter)' pair for one TXPOWER."""
    sym = f"PLUS{dbm}" if dbm > 0 else (f"MINUS{-dbm}" if dbm < 0 else "0")
    table = f"{PS}, RADIO 'Radio current consumption (Transmitter)'"
    copy = MDBT42Q.format(sec="5.3.2")
    return (Figure(f"radio.tx.{_dbm(dbm)}dbm.dcdc", dcdc_nA,
                   f"TX only run current (DCDC, 3 V), PRF = {_dbm(dbm)} dBm",
                   f"{table}, I_TX,{sym}dBM,DCDC; {copy}"),
            Figure(f"radio.tx.{_dbm(dbm)}dbm.ldo", ldo_nA,
                   f"TX only run current, PRF = {_dbm(dbm)} dBm (LDO)",
                   f"{table}, I_TX,{sym}dBM; {copy}"))


def _radio_tx_between(dbm: int, lo: int, hi: int, rows: tuple) -> tuple:
    """A TXPOWER the PS's current table leaves out: linear in dBm between two rows."""
    by_key = {f.key: f for f in rows}
    out = []
    for reg in ("dcdc", "ldo"):
        a, b = by_key[f"radio.tx.{_dbm(lo)}dbm.{reg}"], by_key[f"radio.tx.{_dbm(hi)}dbm.{reg}"]
        nA = a.nA + (b.nA - a.nA) * (dbm - lo) // (hi - lo)
        out.append(Figure(f"radio.tx.{_dbm(dbm)}dbm.{reg}", nA,
                          f"TX run current, PRF = {_dbm(dbm)} dBm ({reg.upper()})",
                          f"{PS}, RADIO 'Radio current consumption (Transmitter)', "
                          f"its {_dbm(lo)} and {_dbm(hi)} dBm rows", basis="derived",
                          note=f"the table has no {_dbm(dbm)} dBm row: linear in dBm between "
                               f"its {_dbm(lo)} and {_dbm(hi)} dBm rows ({a.nA / 1e6:g} and "
                               f"{b.nA / 1e6:g} mA)"))
    return tuple(out)


_TX = (*_radio_tx(4, 7_500_000, 16_600_000), *_radio_tx(0, 5_300_000, 11_600_000),
       *_radio_tx(-4, 4_200_000, 9_300_000), *_radio_tx(-8, 3_800_000, 8_400_000),
       *_radio_tx(-12, 3_500_000, 7_700_000), *_radio_tx(-16, 3_300_000, 7_300_000),
       *_radio_tx(-20, 3_200_000, 7_000_000), *_radio_tx(-40, 2_700_000, 5_900_000))
_TX_PLUS3 = _radio_tx_between(3, 0, 4, _TX)

_CPU = f"{PS}, CPU electrical specification"
_SLEEP = f"{PS}, POWER electrical specification (sleep currents)"

FIGURES: tuple = (
    # ---------------------------------------------------------------- CPU
    Figure("cpu.flash.cache.dcdc", 3_700_000,
           "CPU current, running from flash, cache enabled, DCDC 3V",
           f"{_CPU}, I_DDFLASHCACHEDCDC; {MDBT42Q.format(sec='5.3.10')}",
           note="58 uA/MHz x 64 MHz (I_DDFLASHDCDC/MHz, and the product brief) agrees"),
    Figure("cpu.flash.cache.ldo", 7_400_000,
           "CPU current, running from flash, cache enabled, LDO",
           f"{_CPU}, I_DDFLASHCACHE; {MDBT42Q.format(sec='5.3.10')}"),
    Figure("cpu.flash.nocache.dcdc", 3_900_000,
           "CPU current, running from flash, cache disabled, DCDC 3V",
           f"{_CPU}, I_DDFLASHDCDC; {MDBT42Q.format(sec='5.3.10')}"),
    Figure("cpu.flash.nocache.ldo", 8_000_000,
           "CPU current, running from flash, cache disabled, LDO",
           f"{_CPU}, I_DDFLASH; {MDBT42Q.format(sec='5.3.10')}"),
    # ---------------------------------------------------------- sleep, off
    Figure("sleep.on", 1_500,
           "System ON, full RAM retention, wake on any event",
           f"{_SLEEP}, I_ON_RAMON_EVENT; {MDBT42Q.format(sec='5.3.11')}",
           note="the same table's I_ON_RAMOFF_EVENT 1.2 uA and I_ON_RAMOFF_RTC 1.9 uA were "
                "read too ('rtc' below)"),
    Figure("off.ramoff", 300,
           "System OFF, no RAM retention, wake on reset (IOFF_RAMOFF_RESET)",
           f"{_SLEEP}, I_OFF_RAMOFF_RESET", basis="datasheet",
           note="as PS v1.4 is quoted (its features list's '0.3 uA at 3 V in System OFF "
                "mode') and Nordic's DevZone blog 'Optimizing Power on nRF52 Designs' "
                "('300nA (nRF52832)'); the MDBT42Q's copy, of an earlier PS revision, "
                "prints 0.7 uA"),
    Figure("off.ramon", 700,
           "System OFF, full 64 kB RAM retention, wake on reset (IOFF_RAMON_RESET)",
           f"{_SLEEP}, I_OFF_RAMON_RESET", basis="datasheet",
           note="as PS v1.4 is quoted ('0.7 uA at 3 V in System OFF mode with full 64 kB "
                "RAM retention'); the MDBT42Q's copy, of an earlier PS revision, prints "
                "1.0 uA"),
    # -------------------------------------------------------------- clocks
    Figure("lfclk.lfrc", 600, "32.768 kHz RC oscillator (LFRC) running",
           f"{PS}, CLOCK 'LFRC' electrical specification (I_LFRC)", basis="unchecked",
           note="the CLOCK tables are not in the MDBT42Q's copy; a Nordic engineer's "
                "DevZone answer gives 'about 0.6 uA' for the nRF52832's RC oscillator, "
                "and with 'rtc' it makes I_ON_RAMOFF_RTC - I_ON_RAMOFF_EVENT = 0.7 uA"),
    Figure("lfclk.lfxo", 250, "32.768 kHz crystal oscillator (LFXO) running",
           f"{PS}, CLOCK 'LFXO' electrical specification (I_LFXO)", basis="unchecked",
           note="the CLOCK tables are not in the MDBT42Q's copy"),
    Figure("lfclk.lfsynt", 100_000, "32.768 kHz synthesized from HFCLK (LFSYNT)",
           f"{PS}, CLOCK 'LFSYNT' electrical specification (I_LFSYNT)", basis="unchecked",
           note="the CLOCK tables are not in the MDBT42Q's copy"),
    Figure("hfxo", 250_000, "64 MHz crystal oscillator (HFXO) running",
           f"{PS}, CLOCK 'HFXO' electrical specification", basis="unchecked",
           note="the CLOCK tables are not in the MDBT42Q's copy"),
    Figure("hfint", 250_000,
           "HFCLK from HFINT kept running for a peripheral while the CPU sleeps",
           f"{PS}, CLOCK 'HFINT'", basis="estimate",
           note="the CPU figures include their clock; asleep, a TIMER, a serial transfer, "
                "PWM or a GPIOTE IN channel keeps HFCLK and the PCLK tree up. InfiniTime's "
                "PR 1758 measured 490 uA saved by releasing one such PPI/GPIOTE user"),
    # ---------------------------------------------------------- peripherals
    Figure("rtc", 100, "RTC counting on LFCLK", f"{_SLEEP}", basis="derived",
           note="I_ON_RAMOFF_RTC - I_ON_RAMOFF_EVENT (1.9 - 1.2 = 0.7 uA, both checked in "
                "the MDBT42Q's copy) less I_LFRC (0.6 uA, unchecked)"),
    Figure("timer.1m", 5_000, "TIMER running from PCLK1M (PRESCALER >= 4)",
           f"{PS}, TIMER electrical specification", basis="estimate",
           note="the block alone; its HF clock is 'hfint' (the PS's TIMER rows include it)"),
    Figure("timer.16m", 70_000, "TIMER running from PCLK16M (PRESCALER < 4)",
           f"{PS}, TIMER electrical specification", basis="estimate",
           note="the block alone; its HF clock is 'hfint'"),
    Figure("spi", 50_000, "SPI/SPIM transferring (8 MHz)",
           f"{PS}, SPIM electrical specification", basis="estimate", note="block + pads"),
    Figure("twi", 50_000, "TWI/TWIM transferring (400 kHz)",
           f"{PS}, TWIM electrical specification", basis="estimate",
           note="the block and its pads while a transfer runs; the HF clock is 'hfint'"),
    Figure("uart", 55_000, "UART/UARTE receiver or transmitter on",
           f"{PS}, UARTE electrical specification (I_UARTE)", basis="estimate",
           note="an enabled receiver keeps HFCLK: the PineTime wiki's 'Reducing power "
                "consumption' lists the UART among the big sleep-current items"),
    Figure("saadc", 700_000, "SAADC sampling", f"{PS}, SAADC electrical specification",
           basis="estimate", note="converting continuously at full speed; a single "
                                  "battery sample lasts tens of us, so it rarely matters"),
    Figure("pwm", 200_000, "PWM running a sequence", f"{PS}, PWM electrical specification",
           basis="estimate", note="the block on its 16 MHz clock; the HF clock is 'hfint'"),
    Figure("gpiote.in", 20_000, "GPIOTE IN channel (event mode) armed",
           f"{PS}, GPIOTE electrical specification", basis="estimate",
           note="its HF clock is 'hfint'"),
    # ----------------------------------------------------------------- RADIO
    *_TX[:2], *_TX_PLUS3, *_TX[2:],
    Figure("radio.rx.1m.dcdc", 5_400_000, "RX only run current (DCDC, 3V) 1Msps / 1Msps BLE",
           f"{PS}, RADIO 'Radio current consumption (Receiver)', I_RX,1M,DCDC; "
           f"{MDBT42Q.format(sec='5.3.3')}"),
    Figure("radio.rx.1m.ldo", 11_700_000, "RX only run current 1Msps / 1Msps BLE (LDO)",
           f"{PS}, RADIO 'Radio current consumption (Receiver)', I_RX,1M; "
           f"{MDBT42Q.format(sec='5.3.3')}"),
    Figure("radio.rx.2m.dcdc", 5_800_000, "RX only run current (DCDC, 3V) 2Msps",
           f"{PS}, RADIO 'Radio current consumption (Receiver)', I_RX,2M,DCDC; "
           f"{MDBT42Q.format(sec='5.3.3')}"),
    Figure("radio.rx.2m.ldo", 12_900_000, "RX only run current 2Msps (LDO)",
           f"{PS}, RADIO 'Radio current consumption (Receiver)', I_RX,2M; "
           f"{MDBT42Q.format(sec='5.3.3')}"),
    Figure("radio.rampup.tx.dcdc", 4_000_000,
           "TX start-up current DCDC, 3V, PRF = 4 dBm (TXRU; also TXDISABLE)",
           f"{PS}, RADIO 'Radio current consumption (Transmitter)', I_START,TX,DCDC; "
           f"{MDBT42Q.format(sec='5.3.2')}",
           note="the PS gives it at +4 dBm only, and no current for TXDISABLE (6 us): the "
                "model applies it at every TXPOWER and while disabling"),
    Figure("radio.rampup.tx.ldo", 8_800_000,
           "TX start-up current, PRF = 4 dBm (LDO; TXRU, also TXDISABLE)",
           f"{PS}, RADIO 'Radio current consumption (Transmitter)', I_START,TX; "
           f"{MDBT42Q.format(sec='5.3.2')}", note="as radio.rampup.tx.dcdc"),
    Figure("radio.rampup.rx.dcdc", 3_500_000,
           "RX start-up current (DCDC 3V) 1Msps / 1Msps BLE (RXRU; also RXDISABLE)",
           f"{PS}, RADIO 'Radio current consumption (Receiver)', I_START,RX,1M,DCDC; "
           f"{MDBT42Q.format(sec='5.3.3')}",
           note="given for 1 Mbit/s only, applied at 2 Mbit/s too; RXDISABLE lasts 0 us "
                "(t_RXDISABLE)"),
    Figure("radio.rampup.rx.ldo", 7_500_000,
           "RX start-up current 1Msps / 1Msps BLE (LDO; RXRU, also RXDISABLE)",
           f"{PS}, RADIO 'Radio current consumption (Receiver)', I_START,RX,1M; "
           f"{MDBT42Q.format(sec='5.3.3')}", note="as radio.rampup.rx.dcdc"),
    # -------------------------------------------------------- PineTime parts
    Figure("display.on", 3_000_000, "ST7789V awake, display on (normal mode, panel driven)",
           "Sitronix ST7789V datasheet v1.6 (PINE64 wiki), 'Power consumption' (normal "
           "mode)", basis="estimate",
           note=f"logic + panel drive without the backlight; {NOT_READ}"),
    Figure("display.idle", 1_000_000, "ST7789V awake, display off (DISPOFF)",
           "Sitronix ST7789V datasheet v1.6", basis="estimate",
           note=f"the controller awake without driving the panel: a third of 'display.on'; "
                f"{NOT_READ}"),
    Figure("display.sleep", 10_000, "ST7789V in sleep (SLPIN)",
           "Sitronix ST7789V datasheet v1.6, 'Sleep in mode'", basis="estimate",
           note=f"the order of magnitude of a TFT driver's sleep-in current; {NOT_READ}"),
    Figure("backlight.1", 2_500_000, "backlight LEDs, low enable (P0.14) driven low",
           "PineTime schematic v1.0a (three transistors and resistors from VBAT)",
           basis="estimate",
           note="no datasheet: the LEDs' current is set by the board's resistors (2.2 kohm, "
                "100 ohm and 30 ohm for low, mid and high, as the PINE64 forum reads the "
                "schematic: thread 9378) and the LEDs', unpublished, forward voltage; "
                "community measurements put full brightness at some tens of mA"),
    Figure("backlight.2", 8_000_000, "backlight, mid enable (P0.22) driven low",
           "PineTime schematic v1.0a", basis="estimate", note="as backlight.1"),
    Figure("backlight.3", 20_000_000, "backlight, high enable (P0.23) driven low",
           "PineTime schematic v1.0a", basis="estimate", note="as backlight.1"),
    Figure("motor", 70_000_000, "vibration motor on (P0.16 low)",
           "PineTime schematic v1.0a (coin ERM motor, no datasheet named)", basis="estimate",
           note="no part number is published; a 3 V coin vibration motor's rated current, "
                "60-80 mA"),
    Figure("nor.dpd", 1_000, "XT25F32B in deep power-down (B9)",
           "XTX XT25F32B datasheet, DC characteristics (I_DPD)", basis="unchecked",
           note=NOT_READ),
    Figure("nor.standby", 15_000, "XT25F32B standby (CS high, not powered down)",
           "XTX XT25F32B datasheet, DC characteristics (I_SB)", kind="max",
           basis="unchecked", note=NOT_READ),
    Figure("nor.read", 6_000_000, "XT25F32B selected (read at 8 MHz)",
           "XTX XT25F32B datasheet, DC characteristics (I_CC1)", basis="estimate",
           note=f"held for the whole time CS is low, idle or not: an upper bound; {NOT_READ}"),
    Figure("nor.write", 15_000_000, "XT25F32B programming or erasing",
           "XTX XT25F32B datasheet, DC characteristics (I_CC3/I_CC4)", basis="estimate",
           note=f"typical of 32 Mbit SPI NORs of its class while programming or erasing; "
                f"{NOT_READ}"),
    Figure("touch.active", 200_000, "CST816S active (scanning, with its own auto-standby)",
           f"{CST816S}: 'Working current (Dynamic mode)' 2.5 mA, '(Standby mode)' 10 uA; "
           f"{CST816S_COPY}", basis="estimate",
           note="the datasheet gives 2.5 mA while it scans fast (dynamic mode, until 2 s "
                "after the last touch) and no figure for the monitoring mode it drops to "
                "when untouched, which the model does not follow: an average between them"),
    Figure("touch.sleep", 5_000, "CST816S in sleep mode (deep sleep, 0xA5 = 0x03)",
           f"{CST816S}, 'Working current (Sleep mode)'; {CST816S_COPY}"),
    Figure("accel.on", 150_000, "BMA421 accelerometer enabled (PWR_CTRL acc_en)",
           "Bosch BMA423 datasheet (the BMA421's public sibling), 'current consumption, "
           "performance mode'", basis="estimate",
           note="the BMA421's own datasheet is not public (PINE64 publishes a flyer); "
                f"{NOT_READ}"),
    Figure("accel.off", 3_500, "BMA421 accelerometer disabled (suspend)",
           "Bosch BMA423 datasheet, 'suspend' current", basis="estimate",
           note=f"the BMA421's own datasheet is not public; {NOT_READ}"),
    Figure("hrs.on", 1_200_000, "HRS3300 enabled (HEN), LED pulsing",
           "Tianyihexin HRS3300 datasheet", basis="estimate",
           note=f"average of the LED's pulses at the default PDRIVER; {NOT_READ}"),
    Figure("hrs.off", 5_000, "HRS3300 disabled", "Tianyihexin HRS3300 datasheet",
           basis="estimate", note="the PineTime wiki notes the HRS does not sleep at power "
                                  f"on unless PDRIVER is 0; not modelled; {NOT_READ}"),
)

CURRENT = {f.key: f.nA for f in FIGURES}
BY_KEY = {f.key: f for f in FIGURES}
assert len(CURRENT) == len(FIGURES), "two figures with one key"

# the PineTime's cell: "170-180mAh" (PINE64 wiki, PineTime, Specifications,
# Battery); the smaller figure, so an implied life is never the optimistic one
BATTERY_MAH = 170
BATTERY_SOURCE = "PINE64 wiki, PineTime 'Specifications': 170-180 mAh LiPo (170 used)"

# RADIO TXPOWER register values (nRF52832 PS v1.4, RADIO TXPOWER) -> dBm; 0xE2,
# once -30 dBm, is "Deprecated enumerator - -40 dBm" in Nordic's MDK
# (nrf52_bitfields.h, RADIO_TXPOWER_TXPOWER_Neg30dBm)
TXPOWER_DBM = {0x04: 4, 0x03: 3, 0x00: 0, 0xFC: -4, 0xF8: -8, 0xF4: -12, 0xF0: -16,
               0xEC: -20, 0xE2: -40, 0xD8: -40}
