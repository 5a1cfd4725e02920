"""What every command line of the emulator shares: the exit statuses, the
one-line :class:`ArgumentParser`, the option types and the flash file's own
check.  It sits below every front end (the CLI, the bridge's ``phone``
client, the scenario runner) so none of them imports another for these.
The files a command reads and writes are declared to
:class:`emu.outputs.Files` (clashes refused, each output's folder checked),
imported where used: ``twister-flash`` runs under a Python without the
emulator's dependencies and imports this module.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Optional

EXIT_OK, EXIT_GUEST, EXIT_USAGE = 0, 1, 2
FLASH_FILE_SIZE = 4 * 1024 * 1024          # the PineTime's XT25F32 SPI NOR


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the CLI's bad-input contract: a usage error is one line
    on stderr naming the problem, and exit status 2 (no usage block)."""

    def error(self, message: str):
        message = message.replace("\x00", "\\0")     # e.g. an unrecognized argument's NUL
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def _get_values(self, action, arg_strings):
        # Python before 3.12 hands "--opt=--" over as ['--'], strips the "--"
        # and gives the option the empty list as its value (a later .upper()
        # or .encode() then fails); "--" is the value written
        if arg_strings == ["--"] and action.nargs is None and action.option_strings:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)


def display_available() -> bool:
    """A display for the pygame window (or SDL told to draw off screen)."""
    if os.environ.get("SDL_VIDEODRIVER") in ("dummy", "offscreen"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _int(s: str) -> int:
    try:
        return int(s, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None


def _address(s: str) -> int:
    v = _int(s)
    if not 0 <= v <= 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(f"not a 32-bit address: {s}")
    return v


def _port(s: str) -> int:
    v = _int(s)
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {s}")
    return v


def _scale(s: str) -> int:
    v = _int(s)
    if not 1 <= v <= 8:
        raise argparse.ArgumentTypeError(f"must be 1 to 8, not {s}")
    return v


def _seconds(s: str) -> float:
    """Emulated seconds: finite, above 0, and within the clock's range."""
    from emu.clock import NEVER, TICKS_PER_SECOND
    longest = NEVER // 2 // TICKS_PER_SECOND          # about 142 years
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"not a finite number: {s!r}")
    if v <= 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    if v > longest:
        raise argparse.ArgumentTypeError(f"at most {longest} (the emulated clock's range), "
                                         f"not {s}")
    return v


def remote_port(s: str) -> int:
    """The TCP port of a server to connect to (1-65535)."""
    try:
        v = int(s, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if not 1 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {s}")
    return v


def wait_seconds(s: str) -> float:
    """Seconds of host time to wait, 0 to 3600."""
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if not 0 <= v <= 3600:          # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"must be 0 to 3600 seconds, not {s}")
    return v


def _host(s: str) -> str:
    """A host name or address to listen on or connect to: text a resolver can
    take (the command line may carry bytes that are not UTF-8, or a name
    longer than DNS allows)."""
    try:
        s.encode("idna")
        ok = "\x00" not in s and s == s.strip()
    except UnicodeError:
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(f"not a host name or address: {s!r}")
    return s


def path_arg(s: str) -> str:
    """A file name on a command line: one a file can have.  The system ends
    a name at a NUL byte, which a shell cannot pass but a script calling
    ``main([...])`` can: refused here rather than cut short, or a ValueError
    deep in ``os``."""
    if "\x00" in s:
        raise argparse.ArgumentTypeError(f"a file name cannot hold a NUL byte: {s!r}")
    return s


def text_arg(s: str) -> str:
    """Text a command sends on (to the watch, in JSON, into a REPL line):
    UTF-8.  Bytes of the command line that are not UTF-8 reach Python as
    lone surrogates ('\\udcff'), which no encoder takes."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"not UTF-8 text: {s!r}") from None
    return s


def flash_file_problem(path: str) -> Optional[str]:
    """Why an existing ``path`` cannot back the 4 MiB SPI NOR flash (None if it
    can; a new file can).  The file is rewritten whole when the flash
    changes, so an existing file must already be a flash image (or empty):
    anything else would be clobbered.  (That it is writable, and no input or
    other output of the command, :class:`emu.outputs.Files` checks.)"""
    if not os.path.exists(path):
        return None
    if not os.path.isfile(path):
        return "not a regular file"
    size = os.path.getsize(path)
    if size not in (0, FLASH_FILE_SIZE):
        return (f"{size} bytes, not a {FLASH_FILE_SIZE // (1024 * 1024)} MiB flash image "
                f"({FLASH_FILE_SIZE} bytes); give a new file, or 'none'")
    if not os.access(path, os.R_OK):
        return "not readable"
    return None


def report_stop(machine, result, out=None) -> None:
    """A guest fault or lockup: the message, the PC and its symbol, the
    fault registers and the core registers (to stderr by default)."""
    out = sys.stderr if out is None else out
    info = result.info or machine.cpu.stop_info
    print(f"pinetime-emu: {info.get('message', result.reason)}", file=out)
    pc = info.get("pc", machine.cpu.pc)
    sym = info.get("symbol") or machine.describe_address(pc)
    print(f"  pc={pc:#010x}{' <' + sym + '>' if sym else ''}  in {info.get('exception', '?')}"
          f"  at t={machine.time:.6f} s (cycle {machine.cpu.cycles})", file=out)
    print(f"  CFSR={info.get('cfsr', 0):#010x} HFSR={info.get('hfsr', 0):#010x} "
          f"BFAR={info.get('bfar', 0):#010x} MMFAR={info.get('mmfar', 0):#010x}", file=out)
    regs = info.get("registers") or {}
    names = [f"r{i}" for i in range(13)] + ["sp", "lr", "pc", "xpsr", "msp", "psp", "control"]
    line = []
    for n in names:
        if n in regs:
            line.append(f"{n}={regs[n]:#010x}")
            if len(line) == 5:
                print("  " + " ".join(line), file=out)
                line = []
    if line:
        print("  " + " ".join(line), file=out)
