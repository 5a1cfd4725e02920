"""pinetime-emu: the command line.

    pinetime-emu run FIRMWARE [--headless --seconds N] [--screenshot out.png]
                              [--bridge PORT] [--gdb PORT [--gdb-wait]] ...
                              [--snapshot IN.snap] [--save-snapshot OUT.snap]
    pinetime-emu demo [--headless | --web [PORT]]   (our demo firmware, shipped in the package)
    pinetime-emu doctor             (what this installation can do, and the fixes)
    pinetime-emu info FIRMWARE
    pinetime-emu phone ...          (talk to a running --bridge like Gadgetbridge)
    pinetime-emu nus-console ...    (a console on a running --bridge, as wasp-os's pynus)
    pinetime-emu fs ls|get|put|rm|mkdir FLASH ...   (the littlefs in a NOR flash image)
    pinetime-emu test SCENARIO... --firmware FIRMWARE [--junit out.xml]
    pinetime-emu preview FIRMWARE --script "run 1s, screenshot, ..."   (PNG strip, GIF, Markdown)

Exit status: 0 success; 1 the firmware faulted, locked up or exited non-zero
(or a scenario failed); 2 bad input (unreadable or corrupt firmware, a bad
option, an output that is an input or another output, an output file that
could not be written), always one line on stderr and, but for a write that
fails during or after the run (a full disk: the run stops, one line per
file), always before anything runs: options and output paths are checked
first (emu/outputs.py).
``phone``, ``nus-console``, ``fs`` and ``test`` parse their own command lines (frontends.bridge,
frontends.fs, frontends.scenario) with the same one-line :class:`ArgumentParser`.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Optional

from frontends.common import (EXIT_GUEST, EXIT_OK, EXIT_USAGE, ArgumentParser, _address,
                              _host, _port, _scale, _seconds, display_available,
                              flash_file_problem, path_arg, report_stop)
from frontends.rtt import rtt_address as _rtt_address, rtt_port as _rtt_port


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="pinetime-emu",
        description="Cycle-timed emulator of the nRF52832 and the PineTime smartwatch.")
    p.add_argument("--version", action=_VersionAction,
                   help="the version and the commit it was built from, then exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    r = sub.add_parser("run", help="run a firmware image",
                       description="Run FIRMWARE on an emulated board: an ELF, an Intel HEX, "
                                   "a raw .bin, a full 512 KiB flash dump, an MCUBoot image "
                                   "(InfiniTime), or a Nordic DFU .zip package (application "
                                   "only).  Bad input (a file "
                                   "that cannot be loaded or written, an output that is an "
                                   "input or another output, a bad option) is one "
                                   "line on stderr and exit status 2, before anything runs.  "
                                   "Files written whole (snapshot, screenshot, recording, "
                                   "flash) replace the old file only when complete.")
    r.add_argument("firmware", type=path_arg, metavar="FIRMWARE",
                   help="firmware file: .elf, .hex, raw .bin, 512 KiB flash dump, MCUBoot "
                        "image, DFU .zip")
    r.add_argument("--board", default=None,
                   help="board to emulate: pinetime, nrf52dk (Nordic's nRF52 DK, PCA10040: 4 LEDs, 4 buttons, UART console), nrf52832 "
                        "(bare chip), microbit (BBC micro:bit v1, nRF51822); default: the "
                        "one the image was built for, from its build attributes, symbols, "
                        "vector table and code ('info' shows the evidence; a generic nRF52 "
                        "image runs on the PineTime)")
    r.add_argument("--base", type=_address, default=None, metavar="ADDR",
                   help="load address of a raw .bin or DFU .zip (default: 0x26000 when a "
                        ".bin's vector table points there or for a .zip, else 0), or the "
                        "slot of an MCUBoot image (default 0x8000)")
    r.add_argument("--softdevice-hex", type=path_arg, metavar="HEX", default=None,
                   help="run a real Nordic SoftDevice (its .hex with the MBR, e.g. "
                        "s132_nrf52_6.1.1_softdevice.hex) under an application built for it "
                        "instead of the emulated S132 API: the chip boots from the MBR")
    r.add_argument("--bootloader", type=path_arg, metavar="BIN", default=None,
                   help="run the PineTime bootloader (InfiniTime's bootloader-5.0.4.bin, "
                        "MCUBoot on Mynewt) at 0 under FIRMWARE, an MCUBoot image: its logo "
                        "from the NOR, the swap of an update, the watchdog (docs/flash.md)")
    r.add_argument("--headless", action="store_true",
                   help="no window: run for --seconds of emulated time and exit (with "
                        "--bridge or --gdb: until Ctrl-C or SIGTERM)")
    r.add_argument("--seconds", type=_seconds, default=None, metavar="N",
                   help="emulated seconds to run, a finite number > 0 (headless default 5, "
                        "or until stopped with --bridge or --gdb; window: until closed)")
    r.add_argument("--screenshot", type=path_arg, metavar="PNG", default=None,
                   help="save the screen as a PNG when the run ends (its directory must "
                        "exist)")
    r.add_argument("--scale", type=_scale, default=2, metavar="N",
                   help="window scale factor, 1 to 8 (default 2)")
    r.add_argument("--fast", action="store_true",
                   help="run as fast as possible instead of pacing to real time (the window, "
                        "and --headless with --bridge)")
    r.add_argument("--flash-file", type=path_arg, default=None, metavar="PATH",
                   help="file backing the PineTime's 4 MiB external SPI flash: a new file in "
                        "an existing directory, or a 4 MiB flash image (default: a per-user "
                        "data file; 'none' keeps it in memory)")
    r.add_argument("--bridge", type=_port, default=None, metavar="PORT",
                   help="serve a byte stream on HOST:PORT (raw TCP; 0 = any free port): "
                        "the PineTime's BLE Nordic UART; on microbit, nrf52dk and nrf52832 the "
                        "UART console")
    r.add_argument("--web", type=_port, default=None, metavar="PORT",
                   help="show the board in a web browser instead of a window: a page on "
                        "http://HOST:PORT/ (0 = any free port) with the screen, touch by "
                        "mouse, the buttons, the phone's actions and the console; any number "
                        "of tabs (docs/web.md)")
    r.add_argument("--web-host", default="127.0.0.1", metavar="HOST", type=_host,
                   help="web view address (127.0.0.1)")
    r.add_argument("--hci", default=None, metavar="tcp:PORT|pty",
                   help="a Bluetooth LE controller on the emulated air for a real host "
                        "(Bumble, BlueZ): HCI in H4 framing on 127.0.0.1:PORT, or on a "
                        "pseudo-terminal whose path is printed; emulated time is held to "
                        "real time while it serves")
    r.add_argument("--bridge-host", default="127.0.0.1", metavar="HOST", type=_host,
                   help="bridge address (127.0.0.1)")
    r.add_argument("--gdb", type=_port, default=None, metavar="PORT",
                   help="GDB remote stub on HOST:PORT (0 = any free port)")
    r.add_argument("--gdb-host", default="127.0.0.1", metavar="HOST", type=_host,
                   help="GDB stub address (127.0.0.1)")
    r.add_argument("--gdb-wait", action="store_true",
                   help="with --gdb: halt at reset until GDB continues")
    r.add_argument("--rtt", action="store_true",
                   help="SEGGER RTT: print up channel 0 (the firmware's RTT terminal) on "
                        "stdout and in the window's console pane; stdin goes to down channel 0 "
                        "instead of the UART (docs/debugging.md, RTT)")
    r.add_argument("--rtt-port", type=_rtt_port, action="append", default=None,
                   metavar="PORT[:CHANNEL]",
                   help="serve RTT channel CHANNEL (default 0) on 127.0.0.1:PORT, both ways, "
                        "as OpenOCD's 'rtt server start PORT CHANNEL'; repeat for more "
                        "channels (0 = any free port)")
    r.add_argument("--rtt-address", type=_rtt_address, default=None, metavar="SYMBOL|ADDR",
                   help="where the RTT control block is (default: the _SEGGER_RTT symbol, "
                        "else RAM is searched for its \"SEGGER RTT\" id, as J-Link does)")
    r.add_argument("--console", choices=["stdout", "none"], default="stdout",
                   help="where the firmware's debug text (semihosting, ITM) and the board's "
                        "UART console go; with stdout, stdin is typed into the UART console "
                        "(a terminal is taken over on microbit and nrf52dk only)")
    r.add_argument("--snapshot", type=path_arg, metavar="FILE", default=None,
                   help="start from a machine snapshot taken on this firmware and board "
                        "(the NOR flash comes from the snapshot unless --flash-file is given)")
    r.add_argument("--save-snapshot", type=path_arg, metavar="FILE", default=None,
                   help="save a machine snapshot when the run ends (after --seconds; its "
                        "directory must exist); the same FILE as --snapshot continues that "
                        "snapshot in place")
    r.add_argument("--pcap", type=path_arg, metavar="FILE", default=None,
                   help="write every packet on the air (the RADIO's and the phone's) as "
                        "Wireshark reads it, LINKTYPE 256 ('-': stdout, for wireshark -k -i -; "
                        "several boards on one air: pinetime-emu world, docs/air.md)")
    r.add_argument("--vcd", type=path_arg, metavar="FILE", default=None,
                   help="write a value change dump over emulated time: GPIO pins, SPI and I2C "
                        "bytes, interrupt lines, backlight and motor (GTKWave, PulseView)")
    r.add_argument("--record", type=path_arg, metavar="FILE.gif|FILE.png", default=None,
                   help="record the screen as the firmware drew it, timed in emulated time: "
                        "an animated GIF or PNG (APNG), written when the run ends")
    r.add_argument("--trace", type=path_arg, metavar="FILE", default=None,
                   help="write an instruction trace: time, address, symbol, disassembly and "
                        "the registers each instruction changed (slow; see --trace-range)")
    r.add_argument("--trace-range", metavar="SYMBOL|START-END", default=None,
                   help="trace only this function (by ELF symbol) or address range")
    r.add_argument("--trace-mmio", type=path_arg, metavar="FILE", default=None,
                   help="write every peripheral access: time, guest PC and symbol, "
                        "register name, address and value")
    r.add_argument("--trace-limit", metavar="SIZE", default="64M",
                   help="stop each trace file at this size (default 64M)")
    r.add_argument("--power", type=path_arg, metavar="FILE.csv|.json|.png", default=None,
                   help="run the energy model and write the current over emulated time: CSV "
                        "(a row per --power-interval, each part's average, written as the "
                        "run goes), JSON (average, share per part, battery life, the "
                        "series) or a PNG plot (needs matplotlib), both at the end; the "
                        "summary lines go to stderr (docs/energy.md)")
    r.add_argument("--power-interval", metavar="SECONDS", default=None,
                   help="the --power record's row: the average over this many emulated "
                        "seconds (default 1; 0: a row at every change of a current)")
    r.add_argument("--summary", action="store_true",
                   help="at the end of the run print a summary to stderr: emulated time, "
                        "the firmware's heaps and tasks read from RAM (FreeRTOS heap_4 and "
                        "tasks, MicroPython's GC heap) and, with --power, the current")
    r.add_argument("--pure-python", action="store_true",
                   help="use the pure-Python cycle counter instead of the native one")
    r.add_argument("--log-level", default="warning",
                   choices=["debug", "info", "warning", "error"], help="log verbosity")

    i = sub.add_parser("info", help="describe a firmware image",
                       description="Print what the loader sees in FIRMWARE.")
    i.add_argument("firmware", type=path_arg, metavar="FIRMWARE")
    i.add_argument("--base", type=_address, default=None, metavar="ADDR",
                   help="load address of a raw .bin or DFU .zip (as for run)")
    i.add_argument("--board", default="pinetime", help=argparse.SUPPRESS)   # accepted, unused

    # These two parse their own arguments (main() hands them the rest of the
    # command line); they are listed here for the top-level --help.
    sub.add_parser("phone", help="send Gadgetbridge messages to a running --bridge "
                                 "(pinetime-emu phone --help)", add_help=False)
    sub.add_parser("nus-console", help="a console on a running --bridge that wasp-os's "
                   "wasptool can drive in pynus's place (pinetime-emu nus-console --help)",
                   add_help=False)
    sub.add_parser("fs", help="list, read and write the files in a NOR flash image's "
                   "littlefs (pinetime-emu fs --help)", add_help=False)
    sub.add_parser("test", help="run scenario files against a firmware "
                                "(pinetime-emu test --help)", add_help=False)
    sub.add_parser("preview", help="screenshots of a firmware after a few steps as a PNG "
                   "strip, a GIF and Markdown for a pull request (pinetime-emu preview --help)",
                   add_help=False)
    sub.add_parser("powercut", help="cut the power at every flash operation of a run and "
                   "check the firmware recovers (pinetime-emu powercut --help)", add_help=False)
    sub.add_parser("world", help="several images on one air: each with its board, name, "
                   "place and outputs; a pcap for Wireshark (pinetime-emu world --help)",
                   add_help=False)
    sub.add_parser("demo", help="run our demo firmware, shipped in the package: a window, "
                   "--headless with a screenshot, or --web", add_help=False)
    sub.add_parser("doctor", help="what this installation can do, one line each, and how to "
                   "fix what it cannot", add_help=False)
    sub.add_parser("twister-serial", help="Zephyr twister's --device-serial-pty program "
                   "(see docs/firmware.md, Twister)", add_help=False)
    sub.add_parser("twister-flash", help="what scripts/twister/west runs for twister's "
                   "--west-flash", add_help=False)
    return p


class _VersionAction(argparse.Action):
    """--version, worked out only when asked (git in a checkout)."""

    def __init__(self, option_strings, dest, **kw):
        kw.pop("nargs", None)
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog} {_version()}")
        parser.exit()


def _version() -> str:
    """The version and the commit (emu/version.py)."""
    from emu.version import describe
    return describe()


# the commands that run firmware: the first line of each says when the
# native helpers are not used (emu/native.py's announce)
_RUNS = ("run", "demo", "test", "preview", "powercut", "world", "twister-serial")


def main(argv: Optional[list] = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        # Ctrl-C outside a run's loop (loading a firmware, a phone waiting for
        # its reply): one line, no traceback; a run's own loop ends through
        # _Terminator and writes its files first
        print("\npinetime-emu: interrupted", file=sys.stderr)
        return 130


def _main(argv: Optional[list] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    for stream in (sys.stdout, sys.stderr):
        # a file name that is not UTF-8 reaches us as surrogates: print it, escaped
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    if argv and argv[0] in _RUNS and not {"-h", "--help"} & set(argv):
        from emu import native
        native.announce(pure="--pure-python" in argv)     # first: no slow run is silent
    if argv and argv[0] == "doctor":
        from frontends.doctor import main as doctor_main
        return doctor_main(argv[1:])
    if argv and argv[0] == "demo":          # our demo firmware: a run of it, as `run` is
        from frontends.demo import run_args
        demo = run_args(argv[1:], build_parser)
        if isinstance(demo, int):
            return demo
        argv = demo
    if argv and argv[0] == "phone":
        try:
            from frontends.bridge import phone_client_main
        except ImportError:
            _error("the phone client is not available in this build")
            return EXIT_USAGE
        return phone_client_main(argv[1:])
    if argv and argv[0] == "nus-console":
        from frontends.nus_console import main as nus_console_main
        return nus_console_main(argv[1:])
    if argv and argv[0] == "fs":
        from frontends.fs import main as fs_main
        return fs_main(argv[1:])
    if argv and argv[0] in ("twister-flash", "twister-serial"):
        from frontends import twister
        if argv[0] == "twister-flash":
            return twister.flash_main(argv[1:])
        return twister.serial_main(argv[1:], run_main=main)
    if argv and argv[0] == "powercut":
        from frontends.powercut import main as powercut_main
        return powercut_main(argv[1:])
    if argv and argv[0] == "world":
        from frontends.worldcli import main as world_main
        return world_main(argv[1:])
    if argv and argv[0] == "preview":
        from frontends.preview import main as preview_main
        return preview_main(argv[1:])
    if argv and argv[0] == "test":
        try:
            from frontends.scenario import main as scenario_main
        except ImportError:
            _error("scenario tests are not available in this build")
            return EXIT_USAGE
        return scenario_main(argv[1:])
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        prog = f"pinetime-emu {args.command}" if args.command else "pinetime-emu"
        print(f"{prog}: error: unrecognized arguments: {' '.join(extra)} (see {prog} --help)",
              file=sys.stderr)
        return EXIT_USAGE
    if args.command == "run":
        return cmd_run(args)
    if args.command == "info":
        return cmd_info(args)
    print("pinetime-emu: error: a command is needed: run, demo, doctor, info, phone, nus-console, "
          "fs, test, preview, powercut or world "
          "(see pinetime-emu --help)", file=sys.stderr)
    return EXIT_USAGE


def _error(msg: str) -> None:
    print(f"pinetime-emu: error: {msg}", file=sys.stderr)


def _give_up(closers: list, msg: str) -> int:
    """Close what was opened, say why in one line: exit status 2."""
    for c in closers:
        c()
    _error(msg)
    return EXIT_USAGE


def _make_machine(args):
    from emu.loader import FirmwareError
    from emu.machine import BOARDS, Machine
    firmware = args.firmware
    if args.board is None:
        from emu.detect import detect
        try:
            detection = detect(args.firmware, base=args.base)
            args.board = detection.require_board()      # BoardDetectionError: one line
        except FirmwareError as e:
            _error(str(e))
            return None
        if detection.note:
            print(f"pinetime-emu: note: {detection.note}", file=sys.stderr)
        if detection.chip == "nrf52":
            firmware = detection.image        # loaded already, in the nRF52832's layout
    if args.board not in BOARDS:
        _error(f"unknown board {args.board!r} (known: {', '.join(sorted(BOARDS))})")
        return None
    opts = {}
    flash_file = getattr(args, "flash_file", None)
    if flash_file is not None and args.board == "pinetime":
        opts["flash_file"] = None if flash_file.lower() == "none" else flash_file
    elif flash_file is not None and flash_file.lower() != "none":
        _error(f"--flash-file: the {args.board} board has no external SPI flash")
        return None
    if getattr(args, "softdevice_hex", None) is not None and args.board == "microbit":
        _error(f"--softdevice-hex: an S132 SoftDevice runs on the nRF52832, and "
               f"{args.firmware} is for the nRF51822 (micro:bit)")
        return None
    try:
        return Machine(firmware, board=args.board, base=args.base,
                       pure_python=getattr(args, "pure_python", False),
                       softdevice_hex=getattr(args, "softdevice_hex", None),
                       bootloader=getattr(args, "bootloader", None), **opts)
    except FirmwareError as e:
        _error(str(e))
        return None


def _run_args_problem(args) -> Optional[str]:
    """What is wrong with run's options beyond what the parser checks: option
    combinations and the files a run will write (so that a long run never ends
    in a failed save, and a flash file that cannot persist is refused)."""
    problem = run_files(args).unnamable()        # a NUL byte: before any message shows it
    if problem is not None:
        return problem
    if args.gdb_wait and args.gdb is None:
        return "--gdb-wait needs --gdb PORT"
    if args.bridge is not None and args.bridge == args.gdb and args.bridge != 0 \
            and args.bridge_host == args.gdb_host:
        return f"--bridge and --gdb both ask for port {args.bridge}"
    if args.softdevice_hex is not None and args.board not in (None, "pinetime", "nrf52832",
                                                              "nrf52dk"):
        return f"--softdevice-hex: an S132 SoftDevice runs on the nRF52832, not on {args.board}"
    if getattr(args, "bootloader", None) is not None and args.board not in (None, "pinetime"):
        return f"--bootloader: the PineTime's bootloader runs on the pinetime board, not {args.board}"
    if args.trace_range is not None and args.trace is None:
        return "--trace-range needs --trace FILE"
    if args.web is not None and args.web != 0:
        for other, port, host in (("--bridge", args.bridge, args.bridge_host),
                                  ("--gdb", args.gdb, args.gdb_host)):
            if port == args.web and host == args.web_host:
                return f"--web and {other} both ask for port {args.web}"
    rtt_ports = [p for p, _c in args.rtt_port or ()]
    if args.rtt_address is not None and not (args.rtt or rtt_ports):
        return "--rtt-address needs --rtt or --rtt-port"
    for p in set(rtt_ports) - {0}:
        if rtt_ports.count(p) > 1:
            return f"--rtt-port {p} is given twice: one channel per port"
        if p in (args.gdb, args.bridge):
            return f"--rtt-port {p} is also the {'--gdb' if p == args.gdb else '--bridge'} port"
    if getattr(args, "power", None) is not None:
        from frontends.power_output import format_problem
        p = format_problem(args.power)
        if p is not None:
            return p
    if getattr(args, "power_interval", None) is not None:
        if getattr(args, "power", None) is None:
            return "--power-interval needs --power"
        from emu.power import interval_ticks
        try:
            interval_ticks(float(args.power_interval))
        except (TypeError, ValueError) as e:
            return f"--power-interval {args.power_interval}: {str(e).replace('interval ', '', 1)}"
    if args.hci is not None:
        from frontends.hci import parse_hci
        try:
            args.hci_transport = parse_hci(args.hci)
        except ValueError as e:
            return f"--hci {e}"
        if args.bridge is not None:
            return "--hci and --bridge both play the phone on the air: give one"
        if args.hci_transport[1] is not None and args.hci_transport[1] == args.gdb \
                and args.hci_transport[1] != 0:
            return f"--hci and --gdb both ask for port {args.gdb}"
    problem = run_files(args).problem()
    if problem is not None:
        return problem
    if args.record is not None and not args.record.lower().endswith((".gif", ".png", ".apng")):
        return f"--record {args.record}: the recording is written as .gif or .png (APNG)"
    if args.trace or args.trace_mmio:
        from emu.trace import TraceError, parse_size
        try:
            parse_size(args.trace_limit)
        except TraceError as e:
            return f"--trace-limit: {e}"
    return None


def run_files(args):
    """Every file ``run`` reads and writes (emu/outputs.py): an output that is
    an input or another output is refused before anything runs.  The one
    exception: ``--snapshot S --save-snapshot S`` continues S in place (it is
    read whole before the run; the save is atomic)."""
    from emu.outputs import Files
    files = Files()
    files.read("FIRMWARE", args.firmware)
    files.read("--softdevice-hex", args.softdevice_hex)
    files.read("--bootloader", getattr(args, "bootloader", None))
    files.read("--snapshot", args.snapshot)
    files.write("--save-snapshot", args.save_snapshot, may_replace=("--snapshot",))
    files.write("--screenshot", args.screenshot)
    files.write("--record", args.record)
    files.write("--vcd", args.vcd)
    if getattr(args, "pcap", None) not in (None, "-"):
        files.write("--pcap", args.pcap)
    files.write("--trace", args.trace)
    files.write("--trace-mmio", args.trace_mmio)
    files.write("--power", getattr(args, "power", None))
    if args.flash_file is not None and args.flash_file.lower() != "none":
        files.write("--flash-file", args.flash_file, check=flash_file_problem)
    elif args.flash_file is None and args.snapshot is None and args.board in (None,
                                                                              "pinetime"):
        from emu.board.pinetime import default_flash_path
        files.write("the default flash file", default_flash_path(), checked=False)
    return files


def cmd_info(args) -> int:
    from emu.loader import FirmwareError, boots_own_softdevice, load_firmware, softdevice_present
    try:
        img = load_firmware(args.firmware, base=args.base)
    except FirmwareError as e:
        _error(str(e))
        return EXIT_USAGE
    print(f"file:          {img.path}")
    print(f"format:        {img.format}")
    for a, d in img.segments:
        print(f"segment:       {a:#010x}-{a + len(d) - 1:#010x} ({len(d)} bytes)")
    mcu = img.mcuboot
    if mcu is not None:
        print(f"MCUBoot:       header at {mcu.slot:#010x}, version {mcu.version}, header "
              f"{mcu.hdr_size} bytes, image {mcu.img_size} bytes, TLVs {mcu.tlv_size} bytes, "
              f"SHA-256 {'matches' if mcu.sha256 else 'absent'}")
        print(f"boots:         vector table at {mcu.entry_table:#010x} (after the header)")
    vt = img.vector_table
    print(f"vector table:  {vt:#010x} (initial SP {img.word_at(vt):#010x}, "
          f"reset {img.word_at(vt + 4):#010x})")
    print(f"symbols:       {len(img.symbols.by_name)}")
    if softdevice_present(img):
        # the SoftDevice's info structure (0x3000): its size (where the
        # application starts) at +8 and its firmware ID at +12
        fwid = img.word_at(0x300C) & 0xFFFF
        if boots_own_softdevice(img):
            how = ("'run' boots it from the MBR and runs this SoftDevice's code (as "
                   "--softdevice-hex does), not the emulated API")
        else:
            how = ("'run' boots the application with the SoftDevice emulated at its API; "
                   "'run APP --softdevice-hex FILE' runs this code instead")
        print(f"SoftDevice:    present (firmware ID {fwid:#06x}, application from "
              f"{img.word_at(0x3008):#x}): {how}")
    else:
        print("SoftDevice:    not in image")
    for n in img.notes:
        print(f"note:          {n}")
    _print_detection(img)
    return EXIT_OK


def _print_detection(img) -> None:
    """The board 'run' picks for the image (emu.detect) and why."""
    from emu.detect import BOARD_NAMES, CHIP_NAMES, CORES, detect
    d = detect(img)
    if d.board is None:
        print(f"board:         undecided: {d.problem}")
    else:
        why = " (no board named in the image: the default)" if d.guessed else ""
        print(f"chip:          {CHIP_NAMES[d.chip]} ({CORES[d.chip]})")
        print(f"board:         {d.board}, {BOARD_NAMES[d.board]}{why}")
    for e in d.evidence:
        print(f"evidence:      {e}")


def cmd_run(args) -> int:
    level = getattr(logging, args.log_level.upper())
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    problem = _run_args_problem(args)
    if problem is not None:
        _error(problem)
        return EXIT_USAGE
    if not args.headless and args.web is None and not display_available():
        _error("no display available for the window; use --headless (for example: "
               f"pinetime-emu run {args.firmware} --headless --seconds 5 --screenshot out.png)")
        return EXIT_USAGE
    snap = getattr(args, "snapshot", None)
    if snap is not None and getattr(args, "flash_file", None) is None:
        args.flash_file = "none"          # the snapshot holds the NOR flash contents
    machine = _make_machine(args)
    if machine is None:
        return EXIT_USAGE
    if args.screenshot and getattr(machine.board, "screenshot", None) is None:
        _error(f"--screenshot: the {args.board} board has no screen")
        return EXIT_USAGE
    if snap is not None:
        from emu.snapshot import SnapshotError
        try:
            machine.load_snapshot(snap)
        except SnapshotError as e:
            _error(str(e))
            return EXIT_USAGE
        print(f"pinetime-emu: restored {snap} (t={machine.time:.6f} s)", file=sys.stderr)
    meter = None
    if getattr(args, "power", None):
        interval = getattr(args, "power_interval", None)
        meter = machine.power(interval=1.0 if interval is None else float(interval))
    if args.console == "stdout":
        def echo(data: bytes) -> None:
            sys.stdout.write(data.decode("utf-8", "replace"))
            sys.stdout.flush()
        machine.console_listeners.append(echo)
    rtt = None
    if args.rtt or args.rtt_port:
        try:
            rtt = machine.start_rtt(address=args.rtt_address)
        except ValueError as e:
            _error(f"--rtt-address: {e}")
            return EXIT_USAGE
        if args.rtt:
            from frontends.rtt import StdoutEcho
            StdoutEcho(rtt)
    # a file that fails as the run goes (a trace, the VCD, the flash file)
    # stops the run at the next slice boundary: one line each, exit status 2
    term = _Terminator(machine)
    machine.output_error_listeners.append(term.fail)
    pollers = []
    closers = []
    if meter is not None:
        from frontends import power_output
        if power_output.is_stream(args.power):
            try:
                args.power_stream = power_output.CsvStream(
                    meter, args.power, on_error=lambda msg: term.fail(f"--power {msg}"))
            except OSError as e:
                return _give_up(closers, f"--power {args.power}: cannot write "
                                         f"({e.strerror or e})")
            closers.append(args.power_stream.close)
    if args.trace or args.trace_mmio:
        from emu.trace import TraceError, parse_size
        limit = parse_size(args.trace_limit)
        try:
            if args.trace:
                closers.append(machine.trace(args.trace, range=args.trace_range,
                                             limit=limit).close)
            if args.trace_mmio:
                closers.append(machine.trace_mmio(args.trace_mmio, limit=limit).close)
        except (TraceError, OSError) as e:
            for c in closers:
                c()
            _error(f"--trace: {e}")
            return EXIT_USAGE
    if getattr(args, "pcap", None):
        if machine.air is None:
            return _give_up(closers, f"--pcap: the {machine.board_name} board has no radio")
        from emu.pcap import MachineCapture
        try:
            cap = MachineCapture(machine, args.pcap)
        except OSError as e:
            return _give_up(closers, f"--pcap {args.pcap}: cannot write ({e.strerror or e})")

        def close_capture(cap=cap):
            cap.close()
            if cap.error:
                term.fail(f"--pcap {args.pcap}: {cap.error}")
        closers.append(close_capture)
    if args.vcd:
        try:
            closers.append(machine.vcd(args.vcd).close)
        except OSError as e:
            return _give_up(closers, f"--vcd {args.vcd}: {e}")
    if args.record:
        from frontends.record import Recorder, RecordError
        try:
            rec = Recorder(machine, args.record)
        except RecordError as e:
            return _give_up(closers, f"--record: {e}")

        def close_recording(rec=rec):
            try:
                rec.close()                # atomic: a failure keeps the previous file
            except OSError as e:
                term.fail(f"--record {args.record}: cannot write ({e.strerror or e})")
        closers.append(close_recording)
    # Every board has a UART console: a terminal on the pins its UART0 console
    # uses (emu/devices/terminal.py).  Its output reaches stdout through the
    # machine console; stdin is typed into it.  A terminal on stdin is taken
    # over (raw mode, real-time pacing, run until stopped) only on boards whose
    # console is the way in (micro:bit, nRF52 DK); elsewhere stdin is read when
    # it is a pipe or a file.
    board = machine.board
    uart_board = hasattr(board, "uart_send")
    if (uart_board or args.rtt) and args.console == "stdout" and sys.stdin is not None:
        from frontends.serial_console import StdinConsole
        # --rtt: stdin is typed into RTT's down channel 0 instead of the UART
        send = (lambda data: rtt.write(data, 0)) if args.rtt else None
        try:
            console = StdinConsole(machine, take_terminal=getattr(board, "console_is_main",
                                                                  False), send=send)
        except (OSError, ValueError):
            console = None                        # no usable stdin (closed)
        if console is not None:
            pollers.append(console.poll)
            closers.append(console.close)
            args.interactive_console = console.interactive
    # the handlers go in before any server listens: a client (a test) that
    # acts on a "listening" line and stops the run at once still gets every
    # file; a signal during the set-up ends the run at its first slice
    old_term = term.install()
    started = False
    try:
        if args.bridge is not None and getattr(machine, "phone", None) is not None:
            # the PineTime: the phone's Nordic UART (BLE), as before; its UART
            # console stays on stdin/stdout
            from frontends.bridge import BridgeServer
            bridge = BridgeServer(machine, args.bridge_host, args.bridge)
            pollers.append(bridge.poll)
            closers.append(bridge.close)
            print(f"pinetime-emu: bridge listening on {args.bridge_host}:{bridge.port}",
                  file=sys.stderr)
        elif args.bridge is not None and uart_board:
            from frontends.serial_console import UartTcpServer
            server = UartTcpServer(machine, args.bridge_host, args.bridge)
            pollers.append(server.poll)
            closers.append(server.close)
            print(f"pinetime-emu: UART console on {args.bridge_host}:{server.port}",
                  file=sys.stderr)
        elif args.bridge is not None:
            _error(f"--bridge: the {args.board or machine.board_name} board has no Bluetooth "
                   f"phone (no emulated SoftDevice, no radio link, no UART console); "
                   f"use --board pinetime")
            for c in closers:
                c()
            return EXIT_USAGE
        if args.hci is not None:
            if machine.air is None:
                _error(f"--hci: the {args.board or machine.board_name} board has no radio")
                for c in closers:
                    c()
                return EXIT_USAGE
            from frontends.hci import HciPty, HciTcpServer
            kind, port = args.hci_transport
            if kind == "tcp":
                hci = HciTcpServer(machine, "127.0.0.1", port)
                where = f"127.0.0.1:{hci.port}"
            else:
                hci = HciPty(machine)
                where = hci.path
            pollers.append(hci.poll)
            closers.append(hci.close)
            print(f"pinetime-emu: HCI controller (H4) on {where}", file=sys.stderr)
        for port, channel in args.rtt_port or ():
            from frontends.rtt import RttTcpServer
            server = RttTcpServer(rtt, channel, "127.0.0.1", port)
            pollers.append(server.poll)
            closers.append(server.close)
            print(f"pinetime-emu: RTT channel {channel} on 127.0.0.1:{server.port}",
                  file=sys.stderr)
        stub = None
        if args.gdb is not None:
            from frontends.gdbstub import GdbStub
            stub = GdbStub(machine, host=args.gdb_host, port=args.gdb)
            closers.append(stub.close)
            print(f"pinetime-emu: GDB stub listening on {args.gdb_host}:{stub.port}"
                  f"{' (halted at reset until GDB continues)' if args.gdb_wait else ''}",
                  file=sys.stderr)
        web = None
        if args.web is not None:
            from frontends.web.view import WebView
            try:
                web = WebView(machine, port=args.web, host=args.web_host,
                              realtime=not args.fast, seconds=args.seconds,
                              pollers=pollers + [term.poll] + ([stub.poll] if stub else []),
                              gdb=stub, scale=args.scale)
            except OSError as e:
                for c in closers:
                    c()
                _error(f"--web {args.web}: cannot listen on {args.web_host}:{args.web} "
                       f"({os.strerror(e.errno) if e.errno else e})")
                return EXIT_USAGE
            closers.append(web.close)
            print(f"pinetime-emu: web view on {web.url}", file=sys.stderr, flush=True)
        if args.gdb_wait and stub is not None:
            while stub.conn is None and term.fired is None:   # a signal: the run ends
                stub.poll(0.2)
        started = True
    except (OSError, UnicodeError, TypeError) as e:   # TypeError: a host that is not text
        for c in closers:
            c()
        _error(f"cannot listen: {e}")
        return EXIT_USAGE
    except KeyboardInterrupt:                  # a second Ctrl-C before the run began
        for c in closers:
            c()
        close = getattr(machine.board, "close", None)
        if close is not None:
            close()                               # the flash file, as it was
        term.stopped()
        return term.status
    finally:
        if not started:
            term.uninstall(old_term)
    # Ctrl-C and `kill` (SIGTERM) end the run at a slice boundary.  However
    # the run ends (by itself, by a signal, by a stream that failed), what it
    # promised is written then, whole: the screenshot, the snapshot, the
    # --power file; the closers finish the recording, the traces, the VCD
    # and the capture, and the flash file is saved.  A signal while they
    # write is noted, and they finish first.
    rc = EXIT_OK
    try:
        try:
            if web is not None:
                rc = _run_web(machine, args, web)
            elif args.headless:
                rc = _run_headless(machine, args, pollers, stub, term)
            else:
                rc = _run_window(machine, args, pollers + [term.poll], stub)
            if rtt is not None:
                rtt.poll()                # what the firmware wrote since the last poll
                for p in pollers:
                    p()
            term.poll()
        except _OutputFailed:
            rc = EXIT_USAGE               # the lines are printed below
        except KeyboardInterrupt:         # a signal (_Terminated for SIGTERM)
            term.stopped()
        term.writing = True
        rc = _write_outputs(machine, args, meter) or rc
    finally:
        term.writing = True
        for c in closers:
            try:
                c()
            except Exception:
                pass
        close = getattr(machine.board, "close", None)
        if close is not None:
            close()                       # the flash file: a failure goes to term.fail
        term.uninstall(old_term)
    if term.failures:
        for message in term.failures:
            _error(message)
        rc = EXIT_USAGE
    if term.status is not None:
        term.stopped(late=True)           # a signal that came while the files were written
        if rc != EXIT_USAGE:              # a file that could not be written says so first
            rc = term.status
    return rc


def _write_outputs(machine, args, meter) -> int:
    """The files a run writes when it ends, however it ended: the
    screenshot, the snapshot, the --power file and the summary lines.
    EXIT_USAGE if one could not be written (one line each), else 0."""
    rc = 0
    if args.screenshot:
        try:
            machine.board.screenshot(args.screenshot)
            print(f"pinetime-emu: screenshot saved to {args.screenshot}", file=sys.stderr)
        except OSError as e:            # checked before the run; gone since (atomic)
            _error(f"--screenshot {args.screenshot}: cannot write ({e.strerror or e})")
            rc = EXIT_USAGE
    if getattr(args, "save_snapshot", None):
        rc = _save_snapshot(machine, args.save_snapshot) or rc
    return _end_of_run(machine, args, meter) or rc


def _end_of_run(machine, args, meter) -> int:
    """The --power file and the end-of-run summary (--summary, --power)."""
    from frontends import power_output
    rc = 0
    lines = []
    if getattr(args, "summary", False):
        lines.append(f"summary: {machine.time:.6f} s emulated, {machine.cpu.cycles} CPU cycles")
        lines += power_output.inspect_lines(machine)
    if meter is not None:
        lines += power_output.power_lines(meter)
        stream = getattr(args, "power_stream", None)
        if stream is not None:
            stream.close()                # the last rows, up to now
            if stream.error:
                rc = EXIT_USAGE           # term.fail has the line
            else:
                lines.append(f"power: written to {args.power}")
        else:
            try:
                power_output.write(meter, args.power)
                lines.append(f"power: written to {args.power}")
            except OSError as e:          # atomic: the previous file is as it was
                _error(f"--power {args.power}: cannot write ({e.strerror or e})")
                rc = EXIT_USAGE
    for line in lines:
        print(f"pinetime-emu: {line}", file=sys.stderr)
    return rc


def _save_snapshot(machine, path: str) -> int:
    from emu.snapshot import SnapshotError
    try:
        machine.save_snapshot(path)
    except SnapshotError as e:
        _error(f"cannot save snapshot: {e}")
        return EXIT_USAGE
    except OSError as e:                  # atomic: the previous file is as it was
        _error(f"--save-snapshot {path}: cannot write ({e.strerror or e}); "
               f"{'the previous file is unchanged' if os.path.exists(path) else 'not saved'}")
        return EXIT_USAGE
    print(f"pinetime-emu: snapshot saved to {path} (t={machine.time:.6f} s)", file=sys.stderr)
    return 0


def _finish(machine, args, result) -> int:
    """The run's verdict from how the firmware stopped (the files it writes
    at its end: :func:`_write_outputs`)."""
    from emu.cpu.cortexm import StopReason
    if result.reason in (StopReason.LOCKUP, StopReason.FAULT):
        report_stop(machine, result)
        return EXIT_GUEST
    if result.reason == StopReason.EXIT:
        if result.exit_code:
            print(f"pinetime-emu: firmware exited with status {result.exit_code}",
                  file=sys.stderr)
            return EXIT_GUEST
        return EXIT_OK
    return EXIT_OK


class _Terminated(KeyboardInterrupt):
    """SIGTERM arrived: the run ends through the same clean-up as Ctrl-C."""


class _OutputFailed(KeyboardInterrupt):
    """A file written as the run goes failed (a trace, the VCD, the flash
    file): the run ends through the same clean-up as Ctrl-C, exit status 2."""


class _Terminator:
    """SIGTERM and SIGINT (Ctrl-C) ask the machine to halt at the next block
    boundary: raising from the handler could land inside one of Unicorn's
    callbacks, where ctypes prints the exception and drops it, and the run
    would go on.  ``poll`` raises from plain Python, between slices.  A
    second Ctrl-C raises at once, in case the first never reaches a poll.
    Once the run is over and its files are being written (``writing``), a
    signal is only noted: the files finish first, and the exit status is
    still the signal's (``status``: 130 for SIGINT, 143 for SIGTERM)."""

    def __init__(self, machine):
        self.machine = machine
        self.fired = None
        self.writing = False
        self.said = False                 # the "interrupted" line is printed
        self.failures: list = []          # one-line messages of outputs that failed

    @property
    def status(self):
        """The exit status a signal asks for, or None."""
        import signal
        if self.fired is None:
            return None
        return 143 if self.fired == signal.SIGTERM else 130

    def stopped(self, late: bool = False) -> None:
        """Say, once, that a signal ended the run (``late``: it came while
        the files were written, which finished first)."""
        import signal
        if self.said:
            return
        self.said = True
        if self.fired is None:            # a KeyboardInterrupt of no signal of ours
            self.fired = signal.SIGINT
        after = " (after writing its files)" if late else ""
        if self.fired == signal.SIGTERM:
            print(f"pinetime-emu: terminated{after}", file=sys.stderr)
        else:
            print(f"\npinetime-emu: interrupted{after}", file=sys.stderr)

    def fail(self, message: str) -> None:
        """An output could not be written (Machine.report_output_error): halt
        at the next block boundary; ``poll`` ends the run."""
        if message not in self.failures:
            self.failures.append(message)
        self.machine.halt_requested = True
        self.machine.cpu.request_stop()

    def handler(self, signum, frame) -> None:
        import signal
        if self.writing:                  # the files finish first
            if self.fired is None:
                self.fired = signum
            return
        if self.fired == signal.SIGINT and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.fired = signum
        self.machine.halt_requested = True
        self.machine.cpu.request_stop()

    def poll(self) -> None:
        import signal
        if self.failures:
            raise _OutputFailed()
        if self.fired == signal.SIGTERM:
            raise _Terminated()
        if self.fired is not None:
            raise KeyboardInterrupt

    def install(self):
        import signal
        import threading
        if threading.current_thread() is not threading.main_thread():
            return None
        return [(n, signal.signal(n, self.handler)) for n in (signal.SIGTERM, signal.SIGINT)]

    @staticmethod
    def uninstall(old) -> None:
        import signal
        for n, h in old or ():
            signal.signal(n, h)


def _run_headless(machine, args, pollers, stub, term) -> int:
    from emu.clock import NEVER, TICKS_PER_MS, TICKS_PER_SECOND
    # with no --seconds a headless run is 5 s, unless something outside talks
    # to it (GDB, a console on a terminal, a bridge): then it runs until it is
    # stopped (Ctrl-C or `kill`), as a watch on a desk would
    serving = (stub or getattr(args, "interactive_console", False)
               or getattr(args, "bridge", None) is not None or getattr(args, "rtt_port", None)
               or getattr(args, "hci", None) is not None)
    seconds = args.seconds if args.seconds is not None else (None if serving else 5.0)
    end = NEVER if seconds is None else machine.clock.now + int(seconds * TICKS_PER_SECOND)
    if stub is not None:
        return _finish(machine, args, _run_headless_gdb(machine, stub, end,
                                                        pollers + [term.poll]))
    step = 10 * TICKS_PER_MS if pollers else end - machine.clock.now
    # a bridge is a phone (or a terminal) on the desk: the watch keeps the
    # host's time (wasptool --rtc, then --check-rtc), so it never runs ahead
    # of the wall clock; behind it (busy), it catches up when idle
    pace = _Pacer(machine) if (getattr(args, "bridge", None) is not None
                               or getattr(args, "rtt_port", None)) and \
        not getattr(args, "fast", False) else None
    while True:
        result = machine.run(until_tick=min(end, machine.clock.now + step))
        term.poll()
        for p in pollers:
            p()
        if result.reason != "deadline" or machine.clock.now >= end:
            break
        if pace is not None:
            pace.wait()
    return _finish(machine, args, result)


class _Pacer:
    """Keeps emulated time from running ahead of the host's clock."""

    def __init__(self, machine):
        import time
        self.machine = machine
        self.host0, self.emu0 = time.monotonic(), machine.time

    def wait(self) -> None:
        import time
        ahead = (self.machine.time - self.emu0) - (time.monotonic() - self.host0)
        if ahead > 0.002:
            time.sleep(min(ahead, 0.05))   # short: the servers are polled between slices


def _run_headless_gdb(machine, stub, end, pollers):
    """Headless run under the GDB stub: the target runs until a client halts it,
    and stays halted while the client is attached; a fault with no client ends
    the run with the usual report."""
    from emu.clock import TICKS_PER_MS
    from emu.machine import RunResult
    while not stub.killed:
        for p in pollers:
            p()
        reason = machine.cpu.stop_reason
        if stub.halted or stub.exited is not None:
            if stub.conn is None:
                if stub.exited is not None or reason in ("lockup", "fault"):
                    break
                stub.halted = False      # the client left: keep running
                continue
            stub.poll(0.05)
            continue
        if machine.clock.now >= end:
            break
        stub.run_machine(min(end, machine.clock.now + 10 * TICKS_PER_MS))
    reason = machine.cpu.stop_reason or "deadline"
    if machine.exit_code is not None:
        reason = "exit"
    return RunResult(reason, machine)


def _run_web(machine, args, web) -> int:
    result = web.run()
    if result is None:
        return EXIT_OK
    return _finish(machine, args, result)


def _run_window(machine, args, pollers, stub) -> int:
    try:
        from frontends.window import NoDisplayError, run_window
    except ImportError as e:
        _error(f"the window frontend is not available ({e}); use --headless")
        return EXIT_USAGE
    if stub is not None:
        pollers = list(pollers) + [stub.poll]
    try:
        result = run_window(machine, scale=args.scale, realtime=not args.fast,
                            pollers=pollers, seconds=args.seconds, gdb=stub)
    except NoDisplayError as e:
        _error(str(e))
        return EXIT_USAGE
    if result is None:
        return EXIT_OK
    return _finish(machine, args, result)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
