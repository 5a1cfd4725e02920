"""wasp-os's own bootloader and an update over the air (issue 26, the wasp-os part).

wasp-os's bootloader (the Adafruit nRF52 bootloader fork, ``make
bootloader``) runs on Nordic's real S132 (``--softdevice-hex``): the MBR
starts it from UICR.NRFFW[0], and with no application it stays in DFU mode
advertising "PineDFU", as a new watch does.  The emulated phone sends
wasp-os's DFU package with the legacy Nordic DFU (emu/phone/dfu.py, as
wasptool's pynus dfu.py does); the bootloader takes it and writes it at
0x26000, saves its settings ("bank 0 valid", size, CRC) through the
SoftDevice's flash API and starts it.

Issue 48: it used to stay in DFU mode.  On ACTIVATE it disconnects and asks
the S132 to erase its settings page; the S132 sends LL_TERMINATE_IND with MD
set and stops listening for the rest of that connection event, so it needs
the phone's acknowledgement at the next anchor.  The emulated phone
acknowledged only in the same event and left: the S132 went on with its
connection events, could not fit the 85 ms page erase between them, reported
NRF_EVT_FLASH_OPERATION_ERROR after 0.78 s, and pstorage's NRF_ERROR_TIMEOUT
reached APP_ERROR_CHECK: NVIC_SystemReset, back in DFU mode.  The phone now
acknowledges in the next event, as Zephyr's controller does
(tests/peripherals/test_radio_conn.py checks that without these files).

Needs files never committed: ``$PINETIME_EMU_WASP_BOOTLOADER`` or
``~/.cache/pinetime-emu/wasp-os/bootloader/*-nosd.hex`` (built as that
folder's MANIFEST.md says), ``$PINETIME_EMU_S132_HEX`` or
``~/.cache/pinetime-emu/s132/s132_nrf52_6.1.1_softdevice.hex``, and
``$PINETIME_EMU_WASP_DFU`` or ``~/.cache/pinetime-emu/wasp-os/upstream/micropython-dfu.zip``,
and for the whole-chip test ``$PINETIME_EMU_WASP_BOOTLOADER_HEX`` or that folder's
``bootloader.hex``.
The whole wasp-os image (the transfer's 156 emulated seconds) takes about
half a minute of wall time (20 minutes before round four: the bootloader's
DFU-mode loop, which feeds the watchdog, now counted instead of run, and
flash stores no longer dropping Unicorn's translated code).  The small
updates send our own
``firmware/build/s132/cli_exit3.bin`` (396 bytes, linked at 0x26000: it
prints a line and exits with status 3) in about 30 s.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from emu import Machine
from emu.loader import load_firmware
from emu.phone.dfu import package_from_bytes, read_package
from emu.phone.gattphone import GattPhone
from emu.phone.scanner import Scanner

CACHE = Path.home() / ".cache" / "pinetime-emu"
SETTINGS = 0x7F000          # the bootloader's settings page (bootloader_settings_t)


def _files() -> tuple:
    bl = os.environ.get("PINETIME_EMU_WASP_BOOTLOADER")
    if not bl:
        found = sorted((CACHE / "wasp-os" / "bootloader").glob("*-nosd.hex"))
        bl = str(found[-1]) if found else ""
    sd = os.environ.get("PINETIME_EMU_S132_HEX") or \
        str(CACHE / "s132" / "s132_nrf52_6.1.1_softdevice.hex")
    dfu = os.environ.get("PINETIME_EMU_WASP_DFU") or \
        str(CACHE / "wasp-os" / "upstream" / "micropython-dfu.zip")
    if not bl or not all(Path(p).exists() for p in (bl, sd, dfu)):
        pytest.skip("no wasp-os bootloader, S132 or wasp-os DFU package (see "
                    "tests/firmware/test_wasp_ota.py's docstring)")
    return bl, sd, dfu


def test_bootloader_found_through_uicr():
    bl, _sd, _dfu = _files()
    img = load_firmware(bl)
    assert img.vector_table == 0x78000 == img.word_at(0x10001014)


def test_bootloader_advertises_dfu_mode():
    bl, sd, _dfu = _files()
    m = Machine(bl, board="pinetime", softdevice_hex=sd, flash_file=None)
    assert _dfu_mode(m, 3)
    assert 0x78000 <= m.cpu.pc < 0x80000 or m.cpu.pc < 0x26000   # bootloader or SoftDevice


def _whole_chip() -> str:
    """``make bootloader``'s hex: the MBR, S132, the bootloader and UICR in one file."""
    p = os.environ.get("PINETIME_EMU_WASP_BOOTLOADER_HEX") or \
        str(CACHE / "wasp-os" / "bootloader" / "bootloader.hex")
    if not Path(p).exists():
        pytest.skip(f"no {p}: wasp-os's `make bootloader` output (see "
                    "tests/firmware/test_wasp_ota.py's docstring)")
    return p


def test_whole_chip_hex_runs_the_s132_it_carries():
    """Issue 48: the hex a new watch gets over SWD boots from its own MBR and
    S132 (not the emulated API): the bootloader draws its screen and
    advertises PineDFU."""
    m = Machine(_whole_chip(), flash_file=None)
    assert m.own_softdevice and m.vector_table == 0 and m.phone.sd is None
    assert _dfu_mode(m, 3)
    assert int((m.board.screen().max(axis=2) > 64).sum()) > 3000     # logo and "Start"
    assert m.resets == 1                # its UICR fix-up only: no error resets


def _app_package(fw, name: str = "cli_exit3") -> tuple:
    """(image, DFU .zip bytes) of one of our applications linked at 0x26000
    (firmware/build/s132/<name>.bin)."""
    from helpers.images import package_bytes
    image = Path(fw(f"s132/{name}", "bin")).read_bytes()
    return image, package_bytes(image)


def _small_update(fw):
    """The bootloader in DFU mode, given our 396-byte application over the air."""
    bl, sd, _dfu = _files()
    image, package = _app_package(fw)
    m = Machine(bl, board="pinetime", softdevice_hex=sd, flash_file=None)
    m.run(seconds=3)
    phone = GattPhone(m, name="PineDFU")
    d = phone.dfu(package_from_bytes("cli_exit3.zip", package))
    assert d.step == "done" and d.sent == len(image) == 396
    return m, phone, image


@pytest.mark.timeout(600)
def test_bootloader_starts_the_application_it_received(fw):
    m, phone, image = _small_update(fw)
    assert phone.link.reason == "terminated by the watch (reason 0x13)"
    resets = m.resets
    assert m.run_until(lambda: m.exit_code is not None, timeout_ms=3000)
    assert m.exit_code == 3 and "exiting with 3" in m.console_text()
    assert m.resets == resets                     # started without a reset
    assert m.cpu.read_mem(0x26000, len(image)) == image
    bank_0, _crc, bank_1, size = struct.unpack("<HHII", m.cpu.read_mem(SETTINGS, 12))
    assert (bank_0, bank_1 & 0xFF, size) == (1, 0xFF, 396)   # BANK_VALID_APP, its size


@pytest.mark.timeout(600)
def test_phone_leaving_before_the_s132_hears_its_ack_is_detected(fw, monkeypatch):
    """Companion: the phone as it was (gone right after acknowledging
    LL_TERMINATE_IND in the same event, which the S132 no longer hears):
    the S132 never ends the link, its settings-page erase times out, the
    bootloader resets (NVIC_SystemReset from APP_ERROR_CHECK) and is back in
    DFU mode with "bank 0 invalid" in its settings."""
    from helpers.radio import leave_right_after_terminate
    leave_right_after_terminate(monkeypatch)
    m, _phone, _image = _small_update(fw)
    resets = m.resets
    sc = Scanner(m.air)
    m.run(seconds=4)
    assert m.exit_code is None and m.resets == resets + 1
    assert "PineDFU" in {d.name for d in sc.devices.values()}
    assert struct.unpack("<HHII", m.cpu.read_mem(SETTINGS, 12))[::3] == (0xFF, 0)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("verb", ["--dfu", "--ota"])
def test_phone_dfu_through_the_bridge(fw, tmp_path, capsys, verb):
    """``pinetime-emu run bootloader.hex --bridge`` and ``pinetime-emu phone
    --dfu``: the bridge sees the real S132 advertise the DFU service and
    serves the JSON-lines GATT phone; the update goes through and the
    bootloader starts the application (here in one process: the machine
    polls the bridge, the phone command runs in a thread).  ``--ota`` to a
    watch already in its bootloader is the update itself."""
    image, package = _app_package(fw)
    pkg = tmp_path / "app.zip"
    pkg.write_bytes(package)
    m = Machine(_whole_chip(), flash_file=None)
    m.run(seconds=3)
    rc = _phone_through_bridge(m, [verb, str(pkg)], 600)
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert f"sent {len(image)} bytes" in out.out
    assert m.exit_code == 3 and "exiting with 3" in m.console_text()


@pytest.mark.timeout(900)
def test_update_wasp_os_over_the_air(tmp_path):
    """The whole of wasp-os through its bootloader, then its clock face.  The
    NOR is formatted first by wasp-os itself (its first boot on an erased
    NOR ends in MemoryError on the real S132: docs/firmware.md), as on a
    watch that ran wasp-os before."""
    import time
    from helpers.wasp import wasp_image
    bl, sd, dfu = _files()
    f = Machine(wasp_image(), softdevice_hex=sd, flash_file=None)
    f.run(seconds=4)
    nor = tmp_path / "nor.bin"
    nor.write_bytes(bytes(f.board.flash.data))
    m = Machine(bl, board="pinetime", softdevice_hex=sd, flash_file=str(nor))
    m.run(seconds=3)
    phone = GattPhone(m, name="PineDFU")
    pkg = read_package(dfu)
    seen = []
    t0, w0 = m.time, time.monotonic()
    d = phone.dfu(pkg, on_progress=lambda a, t: seen.append(a))
    assert d.step == "done" and d.sent == len(pkg.image)
    assert seen[-1] == d.total and seen == sorted(seen)
    print(f"\ntransfer: {m.time - t0:.1f} s emulated, {time.monotonic() - w0:.0f} s wall")
    assert m.run_until(lambda: 0x26000 <= m.cpu.pc < 0x78000, timeout_ms=2000)
    assert m.cpu.read_mem(0x26000, len(pkg.image)) == pkg.image     # written where it runs
    bank_0, _crc, _bank_1, size = struct.unpack("<HHII", m.cpu.read_mem(SETTINGS, 12))
    assert (bank_0, size) == (1, len(pkg.image))    # BANK_VALID_APP (CRC 0: not checked)
    m.run(seconds=6)
    digits = m.board.screen()[60:160].max(axis=2) > 64
    assert int(digits.sum()) > 2000                 # the clock face's digits


def _phone_through_bridge(m, args: list, wall_s: float) -> int:
    """``pinetime-emu phone --port P *args`` in a thread against a BridgeServer
    on ``m``, which this thread runs and polls (until the command ends and,
    when it was asked to, the application exits, or ``wall_s`` host seconds
    pass): the command's exit status."""
    import threading
    import time
    from frontends.bridge import BridgeServer, phone_client_main
    br = BridgeServer(m, port=0)
    got = {}
    t = threading.Thread(target=lambda: got.update(rc=phone_client_main(
        ["--port", str(br.port)] + list(args))))
    t.start()
    wall = time.monotonic() + wall_s
    try:
        while t.is_alive() and time.monotonic() < wall:
            m.run(ms=20)
            br.poll()
        if got.get("rc") == 0:                # the update sent: run until its app exits
            while m.exit_code is None and time.monotonic() < wall:
                m.run(ms=20)
                br.poll()
    finally:
        t.join(timeout=60)
        br.close()
    return got.get("rc")


def _installed(fw, name: str = "cli_exit3"):
    """A bootloader (in DFU mode from an erased application area) given our
    application ``name`` over the air, which it then starts."""
    bl, sd, _dfu = _files()
    image, package = _app_package(fw, name)
    m = Machine(bl, board="pinetime", softdevice_hex=sd, flash_file=None)
    m.run(seconds=3)
    d = GattPhone(m, name="PineDFU").dfu(package_from_bytes(f"{name}.zip", package))
    assert d.step == "done" and d.sent == len(image)
    return m


def _update_runs_app(m, fw) -> None:
    """The phone sends our application (cli_exit3) to the bootloader in DFU
    mode; the bootloader takes it and starts it (it exits with status 3)."""
    _image, package = _app_package(fw)
    d = GattPhone(m, name="PineDFU").dfu(package_from_bytes("cli_exit3.zip", package))
    assert d.step == "done"
    assert m.run_until(lambda: m.exit_code is not None, timeout_ms=3000) and m.exit_code == 3


def _dfu_mode(m, seconds: float = 3) -> bool:
    """Whether the bootloader advertises PineDFU within ``seconds``."""
    sc = Scanner(m.air)
    m.run(seconds=seconds)
    return "PineDFU" in {d.name for d in sc.devices.values()}


@pytest.mark.timeout(600)
def test_button_held_at_power_on_keeps_dfu_mode_and_a_press_leaves_it(fw):
    """With a valid application, the button held at power-on keeps the
    bootloader in DFU mode (src/main.c: button_pressed(BUTTON_DFU)); a
    press once it has run 2.75 s starts the application (its SysTick:
    GPREGRET = FORCE_APP_BOOT, then a reset)."""
    m = _installed(fw)
    assert m.run_until(lambda: m.exit_code is not None, timeout_ms=3000) and m.exit_code == 3
    m.power_cycle(1)
    m.board.button.hold(ms=1000)
    assert _dfu_mode(m, 4) and m.exit_code is None
    assert 0x78000 <= m.cpu.pc < 0x80000 or m.cpu.pc < 0x26000
    m.power_cycle(2)                                 # without the button: the app
    assert m.run_until(lambda: m.exit_code is not None, timeout_ms=3000) and m.exit_code == 3
    m.power_cycle(3)
    m.board.button.hold(ms=1000)
    m.run(seconds=3.5)
    assert m.exit_code is None
    resets = m.resets
    m.board.button.hold(ms=200)
    assert m.run_until(lambda: m.exit_code is not None, timeout_ms=3000) and m.exit_code == 3
    assert m.resets == resets + 1


@pytest.mark.timeout(900)
def test_dfu_mode_times_out_to_the_valid_application(fw):
    """DFU mode entered with a valid application (the button held at power-on)
    and no phone: the bootloader's DFU timer (DFU_TIMEOUT_INTERVAL, 300 s
    from dfu_init at DFU mode's start) ends DFU mode, and the application
    starts (src/main.c: bootloader_app_is_valid, then bootloader_app_start)."""
    m = _installed(fw)
    assert m.run_until(lambda: m.exit_code is not None, timeout_ms=3000) and m.exit_code == 3
    m.power_cycle(1)
    t0 = m.time
    m.board.button.hold(ms=1000)
    assert _dfu_mode(m, 4) and m.exit_code is None
    assert not m.run_until(lambda: m.exit_code is not None, timeout_ms=290_000)
    assert _dfu_mode(m, 1)                 # still advertising at 295 s
    assert m.run_until(lambda: m.exit_code is not None, timeout_ms=10_000) and m.exit_code == 3
    assert 300 <= m.time - t0 < 303, m.time - t0


@pytest.mark.timeout(600)
def test_an_image_with_a_bad_crc_is_refused(fw):
    """In DFU mode, an image whose init packet's CRC16 does not match what
    arrived is refused at VALIDATE (the phone hears the CRC error and
    leaves); the bootloader has written over the single bank, marks it
    invalid and stays in DFU mode, advertising again, across a power
    cycle; a good transfer then starts its application."""
    from emu.phone.gatt import GattError
    m = _installed(fw)
    m.run_until(lambda: m.exit_code is not None, timeout_ms=3000)
    m.power_cycle(1)
    m.board.button.hold(ms=1000)
    m.run(seconds=3)
    image, package = _app_package(fw, "app_hang")
    with pytest.raises(GattError, match="CRC error"):
        GattPhone(m, name="PineDFU").dfu(package_from_bytes("bad.zip", package), crc=0x1234)
    assert _dfu_mode(m, 3) and m.exit_code is None
    assert struct.unpack("<HHII", m.cpu.read_mem(SETTINGS, 12))[::3] == (0xFF, 0)
    m.power_cycle(2)
    assert _dfu_mode(m, 3) and m.exit_code is None and "hanging" not in m.console_text()
    _update_runs_app(m, fw)


@pytest.mark.timeout(600)
def test_an_application_enters_ota_dfu_as_wasp_os_does(fw):
    """wasp-os's machine.enter_ota_dfu() (what ``wasptool --ota`` sends
    first) writes GPREGRET = 0xA8 and resets: our ota_enter does the same;
    the bootloader then stays in OTA DFU mode although the application is
    valid, and the next update replaces it."""
    m = _installed(fw, "ota_enter")
    assert m.run_until(lambda: "entering OTA DFU" in m.console_text(), timeout_ms=3000)
    assert _dfu_mode(m, 4) and m.exit_code is None
    _update_runs_app(m, fw)


@pytest.mark.timeout(600)
def test_the_bootloaders_watchdog_brings_a_hung_application_back_to_dfu_mode(fw):
    """The bootloader starts the watchdog (5 s, RR[0]) for the application
    too; one that hangs without feeding it is reset by it, and the
    bootloader, seeing RESETREAS.DOG, stays in OTA DFU mode."""
    m = _installed(fw, "app_hang")
    wdt = m.soc.peripherals["wdt"]
    assert wdt.running and wdt.values[0x504] == 5 * 32768
    assert m.run_until(lambda: "hanging" in m.console_text(), timeout_ms=3000)
    resets = m.resets
    assert m.run_until(lambda: m.resets > resets, timeout_ms=6000)
    assert _dfu_mode(m, 4) and m.console_text().count("hanging") == 1


def _wasp_under_bootloader(fw, tmp_path, image_dir: str = "upstream"):
    """wasp-os running on the real S132 under its bootloader, as on a watch
    that took it over the air: the bootloader takes our small application
    over the air (its settings page then says "bank 0 valid"), the
    application area is then overwritten with wasp-os (``image_dir``'s DFU
    package) and the page's size field set to it, as the 155-s transfer
    would leave them, and the chip restarts.  The NOR is formatted first by
    wasp-os itself (see test_update_wasp_os_over_the_air)."""
    from helpers.wasp import wasp_image
    bl, sd, _dfu = _files()
    pkg_path = CACHE / "wasp-os" / image_dir / "micropython-dfu.zip"
    if not pkg_path.exists():
        pytest.skip(f"no {pkg_path} (the wasp-os images' MANIFEST.md)")
    f = Machine(wasp_image(), softdevice_hex=sd, flash_file=None)
    f.run(seconds=4)
    nor = tmp_path / "nor.bin"
    nor.write_bytes(bytes(f.board.flash.data))
    f.close()
    m = Machine(bl, board="pinetime", softdevice_hex=sd, flash_file=str(nor))
    m.run(seconds=3)
    _image, package = _app_package(fw)
    assert GattPhone(m, name="PineDFU").dfu(package_from_bytes("app.zip", package)).step == "done"
    assert m.run_until(lambda: m.exit_code is not None, timeout_ms=3000)
    wasp = read_package(str(pkg_path)).image
    m.cpu.write_mem(0x26000, wasp)
    page = bytearray(m.cpu.read_mem(SETTINGS, 4096))
    struct.pack_into("<I", page, 8, len(wasp))
    m.cpu.write_mem(SETTINGS, bytes(page))
    m.power_cycle(1)
    sc = Scanner(m.air)
    m.run(seconds=6)
    assert "PineTime" in {d.name for d in sc.devices.values()}
    assert 0x26000 <= m.cpu.pc < 0x78000 or m.cpu.pc < 0x26000      # wasp-os or its S132
    return m


@pytest.mark.timeout(900)
def test_update_from_a_running_wasp_os_through_its_repl(fw, tmp_path):
    """``wasptool --ota``'s way, over the air: the phone speaks to wasp-os's
    REPL through the real S132's Nordic UART Service (GattPhone.nus_send),
    asks it into its bootloader (machine.enter_ota_dfu()), and updates it
    (GattPhone.ota): here with our small application, which then runs."""
    m = _wasp_under_bootloader(fw, tmp_path)
    phone = GattPhone(m, name="PineTime")
    phone.nus_send(b"\x03print(6*7)\r")
    m.run(seconds=1)
    assert b"\r\n42\r\n" in bytes(phone.nus_output)
    image, package = _app_package(fw)
    d = phone.ota(package_from_bytes("cli_exit3.zip", package))
    assert d.step == "done" and d.sent == len(image)
    assert m.run_until(lambda: m.exit_code is not None, timeout_ms=3000) and m.exit_code == 3


@pytest.mark.timeout(900)
def test_phone_ota_through_the_bridge(fw, tmp_path, capsys):
    """``pinetime-emu phone --ota FILE`` against ``run ... --bridge``: the REPL
    line through the bridge's NUS, then the bridge again once the watch
    advertises its bootloader, and the update."""
    m = _wasp_under_bootloader(fw, tmp_path)
    image, package = _app_package(fw)
    pkg = tmp_path / "app.zip"
    pkg.write_bytes(package)
    rc = _phone_through_bridge(m, ["--ota", str(pkg), "--timeout", "120"], 800)
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert f"sent {len(image)} bytes" in out.out
    assert m.exit_code == 3


def test_phone_ota_without_a_bootloader_says_so(fw, tmp_path, capsys):
    """On the emulated SoftDevice (no bootloader) machine.enter_ota_dfu() only
    restarts wasp-os: ``phone --ota`` ends in one line and exit status 1
    once no DFU service comes (here our NUS firmware answers the lines)."""
    from helpers.images import make_package
    m = Machine(fw("s132/sd_nus"), board="pinetime", flash_file=None)
    m.run(seconds=1)
    pkg = make_package(tmp_path / "app.zip", b"\0" * 64)
    rc = _phone_through_bridge(m, ["--ota", pkg, "--timeout", "1"], 120)
    err = capsys.readouterr().err
    assert rc == 1
    assert "never came back in its bootloader's DFU mode" in err and len(err.splitlines()) == 1


@pytest.mark.timeout(900)
def test_update_wasp_os_to_a_second_build_keeping_its_files(fw, tmp_path):
    """wasp-os (upstream) running under its bootloader writes a file; the
    phone updates it over the air, as wasptool --ota does, to the second
    build (upstream2: its os.uname() names "PineTime-emu2"); it comes back to
    its clock face as the new build, with the file kept in its littlefs."""
    import time
    m = _wasp_under_bootloader(fw, tmp_path)
    phone = GattPhone(m, name="PineTime")
    phone.nus_send(b"\x03f = open('keep.txt', 'w')\rf.write('kept')\rf.close()\r"
                   b"print(open('keep.txt').read())\r")
    m.run(seconds=2)
    assert b"\r\nkept\r\n" in bytes(phone.nus_output)
    pkg = read_package(str(CACHE / "wasp-os" / "upstream2" / "micropython-dfu.zip"))
    w0, t0 = time.monotonic(), m.time
    d = phone.ota(pkg)
    assert d.step == "done" and d.sent == len(pkg.image)
    print(f"\nupdate: {m.time - t0:.1f} s emulated, {time.monotonic() - w0:.0f} s wall")
    assert m.run_until(lambda: 0x26000 <= m.cpu.pc < 0x78000, timeout_ms=2000)
    m.run(seconds=8)
    assert int((m.board.screen()[60:160].max(axis=2) > 64).sum()) > 2000    # the face
    phone = GattPhone(m, name="PineTime")
    phone.nus_send(b"\x03import os\rprint(os.uname().machine)\rprint(open('keep.txt').read())\r")
    m.run(seconds=2)
    out = bytes(phone.nus_output)
    assert b"PineTime-emu2" in out and b"\r\nkept\r\n" in out


# -- an update cut by a power loss (issue 48, with issue 45's campaign) -------------
_CUTS = None      # (the logged update, the package): set before the workers fork


def _cut_machine():
    bl, sd, _dfu = _files()
    return Machine(bl, board="pinetime", softdevice_hex=sd, flash_file=None)


def _cut_case(cut):
    """One cut of the logged update (a worker's entry point): the power back
    on what the flash then holds; the application runs when the cut left it
    whole and marked valid, else the bootloader is in DFU mode and a new
    update (the same package) brings the application up."""
    from emu.powercut import run_logged_case
    log, pkg = _CUTS
    seen = {}

    def after(m):
        if m.run_until(lambda: m.exit_code is not None, timeout_ms=4000):
            assert m.exit_code == 3, f"the application ended with {m.exit_code}"
            seen["which"] = "application"
            return
        assert _dfu_mode(m, 1), "not in DFU mode"
        d = GattPhone(m, name="PineDFU").dfu(pkg)
        assert d.step == "done", f"the new update stopped at {d.step}"
        assert m.run_until(lambda: m.exit_code is not None, timeout_ms=3000) \
            and m.exit_code == 3, "the application did not run after the new update"
        seen["which"] = "dfu"
    r = run_logged_case(_cut_machine, log, after, cut, seed=cut.op)
    r.details["which"] = seen.get("which")
    return r


@pytest.mark.timeout(1800)
def test_an_update_cut_by_a_power_loss_can_be_done_again(fw):
    """Our application sent over the air to the bootloader in DFU mode, the
    power cut at 24 seeded points of its flash operations (the settings
    page marked invalid, the application's erase and words, the final
    settings record; before, during or after each): every cut leaves a
    watch that runs the application (the cut came after its valid record)
    or stays in DFU mode and takes the update again (single bank: the old
    application is gone once the transfer has begun; the settings' CRC
    keeps a half-written record from passing for valid)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from emu.powercut import Cut, choose, logged_run
    global _CUTS
    _image, package = _app_package(fw)
    pkg = package_from_bytes("cli_exit3.zip", package)

    def work(m):
        m.run(seconds=3)
        assert GattPhone(m, name="PineDFU").dfu(pkg).step == "done"
        assert m.run_until(lambda: m.exit_code is not None, timeout_ms=3000) \
            and m.exit_code == 3
    log, m = logged_run(_cut_machine, work, flashes=("nvmc",))
    m.close()
    kinds = {(op.kind, op.address >= SETTINGS) for op in log.ops}
    assert {("erase", True), ("program", True), ("erase", False),
            ("program", False)} <= kinds, kinds
    last = log.ops[-1]
    assert [op.index for op in log.ops] == list(range(len(log.ops)))   # choose's numbering
    cuts = choose(log.ops, flashes=("nvmc",), sample=22, seed=48)
    cuts += [Cut(last.index, mode, last.flash, last.kind, last.address)
             for mode in ("during", "after")]
    _CUTS = (log, pkg)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as ex:
        results = list(ex.map(_cut_case, cuts))
    bad = [(r.cut.name, r.cut.kind, hex(r.cut.address), r.message) for r in results if not r.ok]
    assert not bad, bad
    which = {r.cut.name: r.details["which"] for r in results}
    assert which[f"op{last.index:04d}-after"] == "application"
    assert "dfu" in which.values()
    from collections import Counter
    print(f"\n{len(log.ops)} flash operations; {len(cuts)} cuts: "
          f"{dict(Counter(which.values()))}; the application ran after "
          f"{sorted(k for k, v in which.items() if v == 'application')}")
