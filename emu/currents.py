"""Every current the energy model (emu/power.py) uses, in one declaration.

Each :class:`Figure` is one current in nanoamperes (an integer, so that the
model's integral is exact) with where it comes from: the datasheet, its
table or section, whether it is the typical or the maximum value, and its
``basis``:

* ``datasheet``: the figure as the datasheet prints it, checked against a
  public quotation of that table;
* ``unchecked``: a datasheet figure as transcribed for this table, not
  checked again against the PDF when it was written (the nRF52832 PS v1.4
  PDF was not at hand); verify before relying on the last digit;
* ``derived``: computed from datasheet figures (the note says how);
* ``estimate``: no datasheet gives it for this part or this condition; the
  note says what the estimate rests on.

The table is for a 3.0 V supply at 25 degC, the PS's common conditions
(nRF52832 PS v1.4, "Current consumption scenarios"); the PineTime's cell is
3.7-4.2 V, which the model does not correct for.  docs/energy.md lists the
table and how each state is chosen.  Imports nothing of ours (base layer).
"""
from __future__ import annotations

from dataclasses import dataclass

PS = "nRF52832 Product Specification v1.4"


@dataclass(frozen=True)
class Figure:
    key: str            # "radio.tx.0dbm.dcdc"
    nA: int             # current in nanoamperes
    what: str           # the condition, in the datasheet's words where there are any
    source: str         # datasheet, table or section
    kind: str = "typ"   # "typ" or "max"
    basis: str = "datasheet"
    note: str = ""


def _radio_tx(dbm: int, dcdc_nA: int, basis: str = "unchecked") -> tuple:
    name = f"+{dbm}" if dbm > 0 else str(dbm)
    return (Figure(f"radio.tx.{name}dbm.dcdc", dcdc_nA,
                   f"RADIO TX at {name} dBm, 1 Mbit/s BLE, DC/DC",
                   f"{PS}, RADIO 'Radio current consumption (Transmitter)'", basis=basis),
            Figure(f"radio.tx.{name}dbm.ldo", dcdc_nA * 22 // 10,
                   f"RADIO TX at {name} dBm, LDO", f"{PS}, RADIO (DC/DC figure)",
                   basis="derived",
                   note="the DC/DC figure x 2.2, the LDO/DC-DC ratio of the PS's 0 dBm pair "
                        "(5.3 mA / 11.6 mA, the latter unchecked)"))


FIGURES: tuple = (
    # ---------------------------------------------------------------- CPU
    Figure("cpu.flash.cache.dcdc", 3_700_000,
           "CPU running CoreMark at 64 MHz from flash, cache enabled, Clock = HFXO, DC/DC",
           f"{PS}, 'Current consumption: CPU running' (I_CPU0); the product brief's "
           "58 uA/MHz x 64 MHz"),
    Figure("cpu.flash.cache.ldo", 7_400_000,
           "CPU running CoreMark at 64 MHz from flash, cache enabled, LDO",
           f"{PS}, 'Current consumption: CPU running'", basis="unchecked"),
    Figure("cpu.flash.nocache.dcdc", 4_300_000,
           "CPU running from flash, cache disabled, DC/DC",
           f"{PS}, 'Current consumption: CPU running'", basis="estimate",
           note="the cache-disabled row was not at hand: the cached figure plus ~16 % for a "
                "flash read on every fetch (the PS's flash-vs-RAM spread, 3.7 vs 3.3 mA, "
                "is the other way round: there the flash is quiet)"),
    Figure("cpu.flash.nocache.ldo", 8_600_000,
           "CPU running from flash, cache disabled, LDO", f"{PS}", basis="estimate",
           note="the DC/DC estimate x 2"),
    # ---------------------------------------------------------- sleep, off
    Figure("sleep.on", 1_500,
           "System ON, full RAM retention, wake on any event (ION_RAMON_EVENT)",
           f"{PS}, 'Current consumption: Sleep'"),
    Figure("off.ramoff", 300,
           "System OFF, no RAM retention, wake on reset (IOFF_RAMOFF_RESET)",
           f"{PS}, 'Current consumption: Sleep'"),
    Figure("off.ramon", 700,
           "System OFF, full 64 kB RAM retention, wake on reset (IOFF_RAMON_RESET)",
           f"{PS}, 'Current consumption: Sleep'"),
    # -------------------------------------------------------------- clocks
    Figure("lfclk.lfrc", 600, "32.768 kHz RC oscillator (LFRC) running",
           f"{PS}, CLOCK 'LFRC' electrical specification (I_LFRC)", basis="unchecked",
           note="with RTC below it adds up to ION_RAMOFF_RTC - ION_RAMOFF_EVENT = "
                "1.9 - 1.2 = 0.7 uA, the PS's own difference"),
    Figure("lfclk.lfxo", 250, "32.768 kHz crystal oscillator (LFXO) running",
           f"{PS}, CLOCK 'LFXO' electrical specification (I_LFXO)", basis="unchecked"),
    Figure("lfclk.lfsynt", 100_000, "32.768 kHz synthesized from HFCLK (LFSYNT)",
           f"{PS}, CLOCK 'LFSYNT' electrical specification (I_LFSYNT)", basis="unchecked"),
    Figure("hfxo", 250_000, "64 MHz crystal oscillator (HFXO) running",
           f"{PS}, CLOCK 'HFXO' electrical specification", basis="unchecked"),
    Figure("hfint", 250_000,
           "HFCLK from HFINT kept running for a peripheral while the CPU sleeps",
           f"{PS}, CLOCK 'HFINT'", basis="estimate",
           note="the CPU figures include their clock; asleep, a TIMER, a serial transfer, "
                "PWM or a GPIOTE IN channel keeps HFCLK and the PCLK tree up. InfiniTime's "
                "PR 1758 measured 490 uA saved by releasing one such PPI/GPIOTE user"),
    # ---------------------------------------------------------- peripherals
    Figure("rtc", 100, "RTC counting on LFCLK", f"{PS}, 'Current consumption: Sleep'",
           basis="derived",
           note="ION_RAMOFF_RTC - ION_RAMOFF_EVENT (0.7 uA) less I_LFRC (0.6 uA)"),
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
    *_radio_tx(4, 7_500_000), *_radio_tx(3, 7_000_000),
    *_radio_tx(0, 5_300_000, basis="datasheet"),
    *_radio_tx(-4, 4_200_000), *_radio_tx(-8, 3_800_000), *_radio_tx(-12, 3_500_000),
    *_radio_tx(-16, 3_300_000), *_radio_tx(-20, 3_200_000), *_radio_tx(-30, 2_900_000),
    *_radio_tx(-40, 2_700_000),
    Figure("radio.rx.1m.dcdc", 5_400_000, "RADIO RX, 1 Mbit/s BLE, DC/DC",
           f"{PS}, RADIO 'Radio current consumption (Receiver)'; product brief"),
    Figure("radio.rx.1m.ldo", 11_700_000, "RADIO RX, 1 Mbit/s BLE, LDO",
           f"{PS}, RADIO 'Radio current consumption (Receiver)'", basis="unchecked"),
    Figure("radio.rx.2m.dcdc", 5_800_000, "RADIO RX, 2 Mbit/s BLE, DC/DC",
           f"{PS}, RADIO 'Radio current consumption (Receiver)'", basis="unchecked"),
    Figure("radio.rx.2m.ldo", 12_900_000, "RADIO RX, 2 Mbit/s BLE, LDO",
           f"{PS}, RADIO 'Radio current consumption (Receiver)'", basis="unchecked"),
    Figure("radio.rampup.dcdc", 2_700_000, "RADIO ramping up (TXRU/RXRU) or disabling, DC/DC",
           f"{PS}, RADIO (I_START_TX / I_START_RX)", basis="estimate",
           note="half the RX current: the synthesizer settles, the PA is off"),
    Figure("radio.rampup.ldo", 5_900_000, "RADIO ramping up or disabling, LDO", f"{PS}, RADIO",
           basis="estimate", note="the DC/DC estimate x 2.2"),
    # -------------------------------------------------------- PineTime parts
    Figure("display.on", 3_000_000, "ST7789V awake, display on (normal mode, panel driven)",
           "Sitronix ST7789V datasheet v1.x, 'Power consumption' (IDD, normal mode)",
           basis="estimate", note="logic + panel drive without the backlight; the datasheet's "
                                 "figure depends on the image"),
    Figure("display.idle", 1_000_000, "ST7789V awake, display off (DISPOFF)",
           "Sitronix ST7789V datasheet", basis="estimate",
           note="the controller awake without driving the panel: a third of 'display.on'"),
    Figure("display.sleep", 10_000, "ST7789V in sleep (SLPIN)",
           "Sitronix ST7789V datasheet, 'Sleep in mode' (IDD)", basis="estimate",
           note="the order of magnitude of a TFT driver's sleep-in current"),
    Figure("backlight.1", 2_500_000, "backlight LEDs, low enable (P0.14) driven low",
           "PineTime schematic v1.0a (three transistors and resistors from VBAT)",
           basis="estimate", note="no datasheet: the LEDs' current is set by the board's "
                                 "resistors; community measurements put full brightness at "
                                 "some tens of mA"),
    Figure("backlight.2", 8_000_000, "backlight, mid enable (P0.22) driven low",
           "PineTime schematic v1.0a", basis="estimate", note="as backlight.1"),
    Figure("backlight.3", 20_000_000, "backlight, high enable (P0.23) driven low",
           "PineTime schematic v1.0a", basis="estimate", note="as backlight.1"),
    Figure("motor", 70_000_000, "vibration motor on (P0.16 low)",
           "PineTime schematic v1.0a (coin ERM motor, no datasheet named)", basis="estimate",
           note="a 3 V coin vibration motor's rated current, 60-80 mA"),
    Figure("nor.dpd", 1_000, "XT25F32B in deep power-down (B9)",
           "XTX XT25F32B datasheet, DC characteristics (I_DPD)", basis="unchecked"),
    Figure("nor.standby", 15_000, "XT25F32B standby (CS high, not powered down)",
           "XTX XT25F32B datasheet, DC characteristics (I_SB)", kind="max",
           basis="unchecked"),
    Figure("nor.read", 6_000_000, "XT25F32B selected (read at 8 MHz)",
           "XTX XT25F32B datasheet, DC characteristics (I_CC1)", basis="estimate",
           note="held for the whole time CS is low, idle or not: an upper bound"),
    Figure("nor.write", 15_000_000, "XT25F32B programming or erasing",
           "XTX XT25F32B datasheet, DC characteristics (I_CC3/I_CC4)", basis="estimate",
           note="typical of 32 Mbit SPI NORs of its class while programming or erasing"),
    Figure("touch.active", 200_000, "CST816S active (scanning, with its own auto-standby)",
           "Hynitron CST816S datasheet", basis="estimate",
           note="the controller drops to its own standby between touches, which the model "
                "does not follow: this is an average"),
    Figure("touch.sleep", 5_000, "CST816S in deep sleep (0xA5 = 0x03)",
           "Hynitron CST816S datasheet", basis="estimate",
           note="the order of magnitude of a touch controller's deep sleep"),
    Figure("accel.on", 150_000, "BMA421 accelerometer enabled (PWR_CTRL acc_en)",
           "Bosch BMA423 datasheet (the BMA421's public sibling), 'current consumption, "
           "performance mode'", basis="estimate",
           note="the BMA421's own datasheet is not public"),
    Figure("accel.off", 3_500, "BMA421 accelerometer disabled (suspend)",
           "Bosch BMA423 datasheet, 'suspend' current", basis="estimate",
           note="the BMA421's own datasheet is not public"),
    Figure("hrs.on", 1_200_000, "HRS3300 enabled (HEN), LED pulsing",
           "Tianyihexin HRS3300 datasheet", basis="estimate",
           note="average of the LED's pulses at the default PDRIVER"),
    Figure("hrs.off", 5_000, "HRS3300 disabled", "Tianyihexin HRS3300 datasheet",
           basis="estimate", note="the PineTime wiki notes the HRS does not sleep at power "
                                  "on unless PDRIVER is 0; not modelled"),
)

CURRENT = {f.key: f.nA for f in FIGURES}
BY_KEY = {f.key: f for f in FIGURES}
assert len(CURRENT) == len(FIGURES), "two figures with one key"

# the PineTime's cell: "170-180mAh" (PINE64 wiki, PineTime, Specifications,
# Battery); the smaller figure, so an implied life is never the optimistic one
BATTERY_MAH = 170
BATTERY_SOURCE = "PINE64 wiki, PineTime 'Specifications': 170-180 mAh LiPo (170 used)"

# RADIO TXPOWER register values (nRF52832 PS v1.4, RADIO TXPOWER) -> dBm
TXPOWER_DBM = {0x04: 4, 0x03: 3, 0x00: 0, 0xFC: -4, 0xF8: -8, 0xF4: -12, 0xF0: -16,
               0xEC: -20, 0xE2: -30, 0xD8: -40}
