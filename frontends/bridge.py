"""TCP bridge to the watch's Bluetooth UART: `pinetime-emu run FW --bridge PORT`.

A client connecting to 127.0.0.1:PORT is the phone connecting over BLE
(GAP CONNECTED, NUS discovery, TX notifications enabled); its bytes are
written to the NUS RX characteristic (paced like a phone, 20 bytes per
connection event); TX notifications are sent back to it; closing the socket
disconnects the phone, once what the client sent before has gone over the
air (a phone's queued writes go out before it ends the link; wasptool's
--reset types Ctrl-D and hangs up at once).  One client at a time; more are
refused, but a client that has just closed its end is noticed first, and the
next one waits while the last one's bytes are delivered (wasptool runs one
console after another, many in a row).

The emulator loop calls :meth:`BridgeServer.poll` at slice boundaries (every
few ms of emulated time).  Sockets are non-blocking and no thread touches the
machine.  Socket errors and garbage input only drop the client.

``phone_client_main(argv)`` is the ``pinetime-emu phone`` subcommand: connect
to a running bridge and send Gadgetbridge messages or REPL lines.

Firmware with its own Bluetooth stack (InfiniTime) has no UART to forward:
the bridge then speaks JSON lines to the emulated phone's GATT client
instead (frontends/gattbridge.py), and ``pinetime-emu phone`` notices that from
the bridge's first line.

Not modelled: several simultaneous phones.
"""
from __future__ import annotations

import argparse
import os
import json
import logging
import select
import socket
import sys
from typing import Optional

from emu.clock import TICKS_PER_SECOND
from emu.outputs import Files, atomic_write

log = logging.getLogger("frontends.bridge")
MAX_PENDING = 64 * 1024     # RX bytes buffered from the client before reading pauses
MAX_UNREAD = 1 << 20        # TX bytes a client may leave unread before it is dropped
DRAIN_TICKS = 10 * TICKS_PER_SECOND   # emulated time the last bytes of a client that
                                      # hung up may take to reach the watch
QUIET_TICKS = TICKS_PER_SECOND // 10  # after a hang-up the link stays until the watch has
                                      # sent nothing for this long (a host ends a link some
                                      # time after its last user left, not at once)
MAX_INPUT = 4 << 20         # bytes of a file --exec, --upload or --push sends: the whole NOR
MAX_GB_DEPTH = 32           # arrays and objects inside each other in a --gb message


class TcpByteServer:
    """One TCP client at a time on host:port, as a raw byte stream; a second
    client is refused.  :meth:`poll` (called by the emulator loop between
    slices) accepts, reads what the client sent into ``rx_pending`` (reading
    pauses at MAX_PENDING), lets the subclass :meth:`_forward` it, and writes
    ``tx_pending`` back.  Any socket error drops the client, never the
    emulator.  Subclasses hook :meth:`_on_connect` and :meth:`_on_disconnect`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, what: str = "bridge"):
        self.what = what
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(16)          # a burst of clients is refused quickly, not left queued
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.client: Optional[socket.socket] = None
        self.rx_pending = bytearray()     # from the client, not yet taken by the watch
        self.tx_pending = bytearray()     # from the watch, waiting for the socket
        self._unread = False              # the client stopped reading: drop it
        # the client hung up with bytes not yet handed to the watch: they are
        # still delivered (a phone's queued writes go out before the link is
        # closed), and the next client waits in the backlog until then
        self.closing = False
        self._next = None                 # (socket, address) of a client waiting for that
        log.info("%s listening on %s:%d", what, host, self.port)

    def poll(self) -> None:
        try:
            if self._unread:
                log.warning("%s: the client left more than %d bytes unread; dropping it",
                            self.what, MAX_UNREAD)
                self._drop()
            if self.closing:
                self._forward()
                if not self._delivered():
                    return
                self.closing = False
                self.rx_pending.clear()
                self._on_disconnect()
            if self._next is not None and self.client is None:
                nxt, self._next = self._next, None
                self._adopt(*nxt)
            self._accept()
            if self.client is not None:
                self._read()
            if self.client is not None:      # (the read may have found it gone)
                self._forward()
                self._write()
        except Exception as e:          # never let the network break the emulator
            log.warning("%s: %s; dropping client", self.what, e)
            self._drop()

    def close(self) -> None:
        self._drop()
        if self._next is not None:
            self._next[0].close()
            self._next = None
        self.listener.close()

    def _accept(self) -> None:
        while True:                       # every waiting client: one is taken, the rest told no
            try:
                conn, addr = self.listener.accept()
            except BlockingIOError:
                return
            if self.client is not None:
                self._read()              # the last client may have just left
            if self.client is None and self._next is None:
                break
            log.info("%s: a second client from %s:%d refused (one at a time)", self.what,
                     *addr[:2])
            conn.close()
        if self.closing:                  # the last one's bytes are still on their way
            self._next = (conn, addr)
            return
        self._adopt(conn, addr)

    def _adopt(self, conn, addr) -> None:
        conn.setblocking(False)
        self.client = conn
        self.rx_pending.clear()
        self.tx_pending.clear()
        log.info("%s: client connected from %s:%d", self.what, *addr[:2])
        self._on_connect()

    def _read(self) -> None:
        while len(self.rx_pending) < MAX_PENDING:
            try:
                data = self.client.recv(4096)
            except BlockingIOError:
                return
            if not data:
                log.info("%s: client disconnected", self.what)
                self._hangup()
                return
            self.rx_pending += data

    def _forward(self) -> None:
        """Hand rx_pending to the watch (subclasses)."""

    def _write(self) -> None:
        while self.tx_pending and self.client is not None:
            try:
                n = self.client.send(self.tx_pending)
            except BlockingIOError:
                return
            del self.tx_pending[:n]

    def _from_watch(self, data) -> None:
        if self.client is not None and not self._unread:
            self.tx_pending += data
            if len(self.tx_pending) > MAX_UNREAD:     # connected, never reading:
                self._unread = True                   # dropped at the next poll
                self.tx_pending.clear()

    def _hangup(self) -> None:
        """The client closed its end: what it sent before is still handed to
        the watch (:meth:`_delivered` says when), then the phone leaves."""
        try:
            self.client.close()
        except OSError:
            pass
        self.client = None
        self.tx_pending.clear()
        self._unread = False
        self.closing = True

    def _delivered(self) -> bool:
        """After a hang-up: everything the client sent has reached the watch
        (or never can).  Subclasses that hand bytes on later override it."""
        return True

    def _drop(self) -> None:
        was_closing, self.closing = self.closing, False
        if self.client is not None or was_closing:
            if self.client is not None:
                try:
                    self.client.close()
                except OSError:
                    pass
            self.client = None
            try:
                self._on_disconnect()
            except Exception as e:       # noqa: BLE001 - the emulator goes on regardless
                log.warning("%s: after the client left: %s", self.what, e)
        self.tx_pending.clear()
        self.rx_pending.clear()
        self._unread = False

    def _on_connect(self) -> None:
        pass

    def _on_disconnect(self) -> None:
        pass


class BridgeServer(TcpByteServer):
    """The watch's Nordic UART Service: a client is the phone connecting."""

    def __init__(self, machine, host: str = "127.0.0.1", port: int = 0):
        self.machine = machine
        self.phone = machine.phone
        self.gatt_bridge = None          # frontends.gattbridge.GattBridge for own-stack firmware
        self._last_output = 0            # when the watch last sent something (emulated ticks)
        self._hung_up_at = 0
        super().__init__(host, port, "bridge")
        self.phone.on_output(self._from_watch)

    def _forward(self) -> None:
        ph = self.phone
        if self.gatt_bridge is None and not ph.uart_ready and ph.radio_firmware:
            from frontends.gattbridge import GattBridge
            self.gatt_bridge = GattBridge(ph.gatt, self._from_watch)
        elif self.gatt_bridge is None and not ph.central.connected:
            dfu = ph.dfu_watch()         # the real S132 under a bootloader in DFU mode
            if dfu is not None:
                from frontends.gattbridge import GattBridge
                self.gatt_bridge = GattBridge(ph.gatt_to(*dfu), self._from_watch)
        if self.gatt_bridge is not None:
            gb = self.gatt_bridge
            if self.rx_pending:
                data = bytes(self.rx_pending)
                self.rx_pending.clear()
                gb.feed(data)
            gb.poll()
            return
        if not ph.uart_ready:
            return                       # still booting: which Bluetooth stack is unknown
        if not ph.central.connected:
            if not self.closing and ph.central.can_connect():
                ph.central.connect(mtu=247)
                ph.nus.discover()
            return
        if ph.nus.rx_handle is None:
            # the real SoftDevice: discovery goes on over the air; the emulated
            # one: the watch may have connected before its table was complete
            ph.nus.discover()
            return
        if self.rx_pending and ph.central.writes_pending < 4:
            chunk = bytes(self.rx_pending[:80])
            del self.rx_pending[:80]
            ph.nus.send(chunk)

    def _hangup(self) -> None:
        super()._hangup()
        self._hung_up_at = self.machine.now
        log.info("bridge: %d byte(s) the client sent before it hung up still to deliver",
                 len(self.rx_pending) + self._in_flight())

    def _from_watch(self, data) -> None:
        self._last_output = self.machine.now
        super()._from_watch(data)

    def _in_flight(self) -> int:
        ph = self.phone
        return ph.central.writes_pending if ph.central.connected else 0

    def _delivered(self) -> bool:
        """Every byte the client sent is written over the air and the watch
        has been quiet for QUIET_TICKS (or talked on for a second), or the
        link is gone (the watch reset or dropped it: nothing more can be
        delivered), or DRAIN_TICKS of emulated time went by (a watch that
        reads nothing more).  wasptool's --reset ends with Ctrl-D and hangs
        up at once: that Ctrl-D must still reach the watch."""
        if self.gatt_bridge is not None:
            return not self.rx_pending
        ph = self.phone
        now = self.machine.now
        if not ph.central.connected or ph.nus.rx_handle is None:
            return True
        waited = now - self._hung_up_at
        if not self.rx_pending and ph.central.writes_pending == 0:
            # and the watch has finished answering (or talks on and on): a
            # link cut while it still notifies loses what it queued (the S132
            # reports none of it; docs/phone.md says what that does to
            # MicroPython's REPL)
            return now - max(self._last_output, self._hung_up_at) >= QUIET_TICKS \
                or waited > TICKS_PER_SECOND
        if waited > DRAIN_TICKS:
            log.warning("bridge: the watch took none of the last %d byte(s) the client sent "
                        "in %d emulated s; dropped", len(self.rx_pending) + self._in_flight(),
                        DRAIN_TICKS // TICKS_PER_SECOND)
            return True
        return False

    def _on_disconnect(self) -> None:
        if self.gatt_bridge is not None:
            self.gatt_bridge.close()
            self.gatt_bridge = None
        elif self.phone.central.connected:
            self.phone.disconnect()


def _gb_json(s: str) -> dict:
    """--gb's JSON object: UTF-8 text, and nested no deeper than a
    Gadgetbridge message can be (JSON nested a thousand deep raised
    RecursionError while it was parsed)."""
    from frontends.common import text_arg
    try:
        msg = json.loads(text_arg(s))
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON ({e})") from None
    except RecursionError:
        msg = None
    if msg is None or _depth(msg) > MAX_GB_DEPTH:
        raise argparse.ArgumentTypeError(f"arrays and objects nested more than "
                                         f"{MAX_GB_DEPTH} deep")
    if not isinstance(msg, dict):
        raise argparse.ArgumentTypeError("not a JSON object ({...})")
    return msg


def _depth(v) -> int:
    """How deep lists and dicts are nested in ``v`` (without recursing)."""
    deepest, stack = 0, [(v, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, dict)):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def _input_problem(path: str, limit: int) -> Optional[str]:
    """Why ``path`` cannot be sent to the watch (None if it can): a regular
    file of at most ``limit`` bytes (/dev/zero was read until memory ran
    out)."""
    import stat
    try:
        st = os.stat(path)
    except OSError as e:
        return f"cannot read ({e.strerror or e})"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a device, a FIFO)"
    if st.st_size > limit:
        return f"{st.st_size} bytes, more than the {limit} the watch's flash can hold"
    return None


def _read_input(path: str, limit: int) -> bytes:
    """The bytes of a file checked by :func:`_input_problem`, read whole but
    never more than ``limit`` (OSError if it grew past it since)."""
    import errno
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"more than the {limit} bytes the watch's flash can hold")
    return data




def _unix_time(s: str) -> int:
    if s == "now":
        import time as _host_time      # a host tool: 'now' is the host's clock
        import calendar
        return calendar.timegm(_host_time.localtime())   # the local wall clock, as CTS wants
    try:
        v = int(s, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not seconds since 1970 or 'now': {s!r}") from None
    if not 0 <= v < 2 ** 32:
        raise argparse.ArgumentTypeError(f"out of range: {s}")
    return v




def _watch_file(s: str) -> str:
    """--pull's FILE: the watch's file name (UTF-8 text in a REPL line) and
    a local one (no NUL byte)."""
    from frontends.common import path_arg, text_arg
    return path_arg(text_arg(s))


def _pull_destination(name: str) -> str:
    """--pull FILE writes the watch's FILE to a local file of the same name."""
    return os.path.basename(name)


def phone_files(a):
    """Every file ``phone`` reads and writes (emu/outputs.py), checked before
    it connects."""
    files = Files()
    files.read("--exec", a.exec_file)
    files.read("--upload", a.upload)
    files.read("--push", a.push)
    files.read("--dfu", getattr(a, "dfu", None))
    files.read("--ota", getattr(a, "ota", None))
    files.read("--resources", getattr(a, "resources", None))
    files.write("--pull", _pull_destination(a.pull) if a.pull else None)
    return files


def _inputs_problem(a) -> Optional[str]:
    """What is wrong with the files ``phone`` sends, before it connects: each
    a regular file the watch can hold, and a name the watch can take."""
    for label, path in (("--exec", a.exec_file), ("--upload", a.upload), ("--push", a.push)):
        if path is None:
            continue
        problem = _input_problem(path, MAX_INPUT)
        if problem is not None:
            return f"{label} {path}: {problem}"
        if label != "--exec" and a.as_name is None:
            try:
                os.path.basename(path).encode("utf-8")
            except UnicodeEncodeError:
                return (f"{label} {path!r}: the name is not UTF-8 text, which the watch's "
                        f"file names are: give one with --as NAME")
    for label, path in (("--dfu", getattr(a, "dfu", None)), ("--ota", getattr(a, "ota", None)),
                        ("--resources", getattr(a, "resources", None))):
        if path is not None:
            problem = _input_problem(path, 64 << 20)     # each has its own limit later
            if problem is not None:
                return f"{label} {path}: {problem}"
    if getattr(a, "ota", None) is not None:      # checked before the watch is reset
        from emu.loader import FirmwareError
        from emu.phone.dfu import read_package
        try:
            read_package(a.ota)
        except FirmwareError as e:
            return f"--ota: {e}"
    return None


def _wasptool_verb(a, s) -> int:
    """One of wasptool's verbs against a running --bridge."""
    import time as _host_time   # a host tool: the host's clock is what --rtc sends
    from frontends.common import EXIT_GUEST, EXIT_OK, EXIT_USAGE
    from emu.phone.wasptool import SocketTransport, WaspTool, WaspToolError

    def err(msg: str, code: int) -> int:
        msg = str(msg).replace("\r", "\\r").replace("\n", "\\n")      # one line
        print(f"pinetime-emu phone: error: {msg}", file=sys.stderr)
        return code
    data = None
    for path in (a.exec_file, a.upload, a.push):
        if path is not None:
            try:
                data = _read_input(path, MAX_INPUT)
            except OSError as e:
                return err(f"cannot read {path}: {e.strerror or e}", EXIT_USAGE)
    with s:
        if a.console:
            return _console(s, quiet=max(a.wait, 3.0))
        w = WaspTool(SocketTransport(s), timeout_s=a.timeout)
        try:
            if a.reset:
                # first, and without wasptool's sync: a watch whose heap is
                # too fragmented to parse a line (wasp-os after its first
                # boot) answers sync's print MemoryError, and a reset is
                # what it needs (WaspTool.reset needs no parser)
                w.reset()
                return EXIT_OK
            # as wasptool: stop the watch and meet it at the prompt, the verb,
            # then set it running again
            w.sync()
            if a.exec_file:
                sys.stdout.write(w.exec_text(data.decode("utf-8", "replace")))
            elif a.eval is not None:
                sys.stdout.write(w.eval(a.eval))
            elif a.upload or a.push:
                name = a.as_name or os.path.basename(a.upload or a.push)
                w.upload(data, name, binary=bool(a.binary or a.push))
                print(f"{name}: {len(data)} bytes written")
            elif a.pull:
                got = w.pull(a.pull)
                local = _pull_destination(a.pull)
                try:
                    atomic_write(local, got)     # whole, or the previous file kept
                except OSError as e:
                    return err(f"cannot write {local}: {e.strerror or e}", EXIT_USAGE)
                print(f"{local}: {len(got)} bytes read")
            elif a.rtc:
                # wasptool waits for the host's second to tick over first
                then = _host_time.localtime()
                now = then
                while now.tm_sec == then.tm_sec:
                    _host_time.sleep(0.005)
                    now = _host_time.localtime()
                w.set_rtc(now)
            elif a.check_rtc:
                delta = w.check_rtc(_host_time.localtime())
                print(f"watch {time_text(w.get_rtc())}, host {time_text(_host_time.localtime())}"
                      f", delta {delta:+.0f} s")
            elif a.memfree:
                before, after = w.memfree()
                print(f"{before},{after}")
            elif a.battery:
                print(f"{w.battery()}%")
            elif a.send_notification:
                w.notify(a.title, a.body, a.id)
            try:
                w.unsync()
            except WaspToolError as e:      # the verb is done; say what the watch does
                print(f"pinetime-emu phone: warning: the watch is not running again ({e})",
                      file=sys.stderr)
        except WaspToolError as e:
            return err(str(e), EXIT_GUEST)
        except OSError as e:
            return err(f"connection to {a.host}:{a.port} lost ({e.strerror or e})", EXIT_GUEST)
    return EXIT_OK


def time_text(t) -> str:
    if isinstance(t, tuple):
        return "%04d-%02d-%02d %02d:%02d:%02d" % t[:6]
    return "%04d-%02d-%02d %02d:%02d:%02d" % (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour,
                                             t.tm_min, t.tm_sec)


def _console(s, quiet: float = 3.0) -> int:
    """stdin to the watch's REPL and its output to stdout until Ctrl-] (a
    terminal, in raw mode) or the end of stdin (a pipe: lines typed in)."""
    import termios
    import tty
    fd = sys.stdin.fileno()
    raw = sys.stdin.isatty()
    old = termios.tcgetattr(fd) if raw else None
    try:
        if raw:
            tty.setraw(fd)
            sys.stderr.write("pinetime-emu phone: console (Ctrl-] quits)\r\n")
        s.setblocking(False)
        inputs = [s, fd]
        while True:
            # stdin at its end (a pipe): print the replies until the watch is
            # quiet for `quiet` seconds (--wait, at least 3), then stop
            r, _, _ = select.select(inputs, [], [], None if fd in inputs else quiet)
            if not r:
                break
            if s in r:
                try:
                    data = s.recv(4096)
                except OSError:         # the bridge dropped the link (the watch reset)
                    data = b""
                if not data:
                    sys.stderr.write("pinetime-emu phone: the watch closed the link\r\n"
                                     if raw else "pinetime-emu phone: the watch closed the link\n")
                    break
                os.write(sys.stdout.fileno(), data)
            if fd in r:
                data = os.read(fd, 1024)
                if not data:
                    inputs.remove(fd)
                    continue
                if b"\x1d" in data:
                    break
                try:
                    s.sendall(data.replace(b"\n", b"\r") if not raw else data)
                except OSError:
                    sys.stderr.write("pinetime-emu phone: the watch closed the link\n")
                    break
    finally:
        if old is not None:
            termios.tcsetattr(fd, termios.TCSADRAIN, old)
    return 0


def phone_client_main(argv=None) -> int:
    """pinetime-emu phone [--port N] (--gb JSON | --notify T B | --call NAME NUM | --repl LINE)"""
    from frontends.common import (EXIT_GUEST, EXIT_OK, EXIT_USAGE, ArgumentParser, _host,
                                  path_arg, remote_port, text_arg,
                                  wait_seconds)
    ap = ArgumentParser(prog="pinetime-emu phone",
                        description="Send one Gadgetbridge message, REPL line or wasptool verb "
                                    "to a running 'pinetime-emu run FIRMWARE --bridge PORT' and "
                                    "print what the watch sends back.  With firmware that has "
                                    "its own Bluetooth stack (InfiniTime) the bridge's GATT "
                                    "phone is used instead: --notify, --call, --gb, --rtc, "
                                    "--set-time, --battery, --steps, --music, --music-state, "
                                    "--firmware-version, --read, --write, --dfu and --resources.")
    ap.add_argument("--host", default="127.0.0.1", type=_host, help="bridge address (127.0.0.1)")
    ap.add_argument("--port", type=remote_port, default=7878, help="bridge port (7878)")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--gb", type=_gb_json, metavar="JSON",
                      help="raw Gadgetbridge JSON object, e.g. '{\"t\":\"find\",\"n\":true}'")
    what.add_argument("--notify", type=text_arg, nargs=2, metavar=("TITLE", "BODY"),
                      help="a notification")
    what.add_argument("--call", type=text_arg, nargs=2, metavar=("NAME", "NUMBER"),
                      help="an incoming call")
    what.add_argument("--repl", type=text_arg, metavar="LINE",
                      help="a line for the watch's Python REPL")
    # wasptool's verbs (emu/phone/wasptool.py), with wasptool's meanings
    what.add_argument("--exec", type=path_arg, metavar="FILE", dest="exec_file",
                      help="run FILE in the REPL (paste mode) and print its output")
    what.add_argument("--eval", type=text_arg, metavar="CODE",
                      help="run CODE in paste mode and print what it prints (as wasptool: "
                           "--eval 'print(6*7)'; --repl shows a value)")
    what.add_argument("--upload", type=path_arg, metavar="FILE",
                      help="write FILE into the watch's filesystem with wasp-os's shell.upload, "
                           "as wasptool (comments, docstrings and blank lines left out; "
                           "--binary: the bytes as they are); name: --as, else FILE's")
    what.add_argument("--push", type=path_arg, metavar="FILE",
                      help="copy FILE to the watch as it is (--upload --binary)")
    what.add_argument("--pull", type=_watch_file, metavar="FILE",
                      help="copy the watch's FILE to a local file of the same name")
    what.add_argument("--rtc", action="store_true", help="set the watch's clock to the host's")
    what.add_argument("--check-rtc", action="store_true",
                      help="print the watch's clock against the host's")
    what.add_argument("--memfree", action="store_true", help="print the free heap (after a GC)")
    what.add_argument("--battery", action="store_true", help="print the battery level (%%)")
    what.add_argument("--reset", action="store_true",
                      help="restart the watch's software: Ctrl-C then Ctrl-D, a soft reset that "
                           "works when the REPL answers every line MemoryError")
    what.add_argument("--console", action="store_true",
                      help="an interactive terminal on the REPL (Ctrl-] quits)")
    what.add_argument("--send-notification", action="store_true",
                      help="show a notification (--title, --body) as wasptool does")
    # InfiniTime's services (firmware with its own Bluetooth stack; frontends/gattbridge.py)
    what.add_argument("--set-time", metavar="UNIX|now", type=_unix_time,
                      help="set the watch's clock (Current Time Service); 'now' is the host's")
    what.add_argument("--steps", action="store_true", help="print the step count")
    what.add_argument("--music", type=text_arg, nargs=2, metavar=("ARTIST", "TRACK"),
                      help="show a track in the music app")
    what.add_argument("--music-state", choices=("play", "pause"), help="playing or paused")
    what.add_argument("--firmware-version", action="store_true",
                      help="print the firmware revision (Device Information)")
    what.add_argument("--read", type=text_arg, metavar="UUID",
                      help="read a characteristic, print its hex")
    what.add_argument("--write", type=text_arg, nargs=2, metavar=("UUID", "HEX"),
                      help="write bytes (hex) to a characteristic")
    what.add_argument("--dfu", type=path_arg, metavar="FILE.zip",
                      help="update the watch's firmware over the air with this DFU package "
                           "(legacy Nordic DFU, as Gadgetbridge does; docs/flash.md)")
    what.add_argument("--bootloader", action="store_true",
                      help="reboot wasp-os into its bootloader's DFU mode "
                           "(machine.enter_ota_dfu(), as wasptool --bootloader)")
    what.add_argument("--ota", type=path_arg, metavar="FILE.zip",
                      help="update a running wasp-os as wasptool --ota: into its bootloader, "
                           "then this DFU package (needs the watch's own bootloader and S132: "
                           "docs/flash.md)")
    what.add_argument("--resources", type=path_arg, metavar="FILE.zip",
                      help="put InfiniTime's resources package (fonts, pictures) into the "
                           "watch's files over its file transfer service (docs/flash.md)")
    ap.add_argument("--as", type=text_arg, dest="as_name", metavar="NAME",
                    help="the watch's file name for --upload/--push")
    ap.add_argument("--binary", action="store_true",
                    help="--upload the bytes as they are (base64 lines), as wasptool --binary")
    ap.add_argument("--title", type=text_arg, default="Title",
                    help="--send-notification's title (Title)")
    ap.add_argument("--body", type=text_arg, default="Body",
                    help="--send-notification's body (Body)")
    ap.add_argument("--id", type=int, default=1, help="--send-notification's id (1)")
    ap.add_argument("--timeout", type=wait_seconds, default=30.0, metavar="S",
                    help="seconds to wait for each REPL reply of --repl and the wasptool "
                         "verbs (30)")
    ap.add_argument("--wait", type=wait_seconds, default=1.0, metavar="S",
                    help="seconds to print replies to --gb/--notify/--call (default 1; "
                         "--repl stops at the prompt)")
    a = ap.parse_args(sys.argv[1:] if argv is None else argv)
    problem = phone_files(a).problem() or _inputs_problem(a)
    if a.binary and not a.upload:
        problem = "--binary goes with --upload (--push is always binary)"
    if problem is not None:
        print(f"pinetime-emu phone: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    gatt_only = a.set_time is not None or a.steps or a.music or a.music_state or \
        a.firmware_version or a.read or a.write or a.dfu or a.resources
    try:
        s = socket.create_connection((a.host, a.port), timeout=5)
    except OSError as e:
        print(f"pinetime-emu phone: error: cannot connect to {a.host}:{a.port} "
              f"({e.strerror or e}); is 'pinetime-emu run FIRMWARE --bridge {a.port}' "
              "running?", file=sys.stderr)
        return EXIT_USAGE
    gatt, early = _probe_gatt(s, 5.0 if gatt_only else 0.5)
    if gatt:
        from frontends.gattbridge import client_verb
        with s:
            return client_verb(a, s, early)
    if a.ota or a.bootloader:
        # wasp-os's REPL over its Nordic UART: the emulated SoftDevice's, or
        # the real S132's over the air (under wasp-os's bootloader)
        with s:
            try:
                s.sendall(b"\x03\x03import machine\rmachine.enter_ota_dfu()\r")
            except OSError as e:
                print(f"pinetime-emu phone: error: the bridge connection failed "
                      f"({e.strerror or e})", file=sys.stderr)
                return EXIT_GUEST
            _receive(s, 1.0, lambda _d: False)      # let the lines go before closing
        if a.bootloader:
            print("asked wasp-os to enter its bootloader (machine.enter_ota_dfu()); on the "
                  "emulated SoftDevice, which has no bootloader, it restarts")
            return EXIT_OK
        from frontends.gattbridge import dfu_after_reset
        return dfu_after_reset(a)
    if gatt_only:
        s.close()
        print("pinetime-emu phone: error: the watch serves the Nordic UART Service (wasp-os): "
              "--set-time, --steps, --music, --music-state, --firmware-version, --read, "
              "--write and --resources are for firmware with its own Bluetooth stack "
              "(InfiniTime); --dfu for InfiniTime or a bootloader in DFU mode (wasp-os's, "
              "advertising PineDFU)", file=sys.stderr)
        return EXIT_USAGE
    if any((a.exec_file, a.eval, a.upload, a.push, a.pull, a.rtc, a.check_rtc, a.memfree,
            a.battery, a.reset, a.console, a.send_notification)):
        return _wasptool_verb(a, s)
    if a.gb is not None:
        msg = a.gb
    elif a.notify:
        msg = {"t": "notify", "id": 1, "src": "Messages", "title": a.notify[0], "body": a.notify[1]}
    elif a.call:
        msg = {"t": "call", "cmd": "incoming", "name": a.call[0], "number": a.call[1]}
    else:
        msg = None
    payload = (b"\x10GB(" + json.dumps(msg, separators=(",", ":")).encode() + b")\n") \
        if msg is not None else ((a.repl or "").encode() + b"\r")
    with s:
        try:
            if early:
                sys.stdout.write(early.decode("utf-8", "replace"))
            s.sendall(payload)

            seen = bytearray(early or b"")

            def show(data: bytes) -> bool:
                sys.stdout.write(data.decode("utf-8", "replace"))
                sys.stdout.flush()
                if msg is not None:
                    return False
                seen.extend(data)           # --repl: done at the prompt after the echo
                echo = seen.find(payload[:-1] + b"\r\n")
                return echo >= 0 and seen.endswith(b">>> ") and \
                    len(seen) > echo + len(payload) + 1
            _receive(s, a.wait if msg is not None else max(a.wait, a.timeout), show)
        except OSError as e:
            print(f"pinetime-emu phone: error: connection to {a.host}:{a.port} lost "
                  f"({e.strerror or e})", file=sys.stderr)
            return EXIT_GUEST
    return EXIT_OK


def _receive(s, seconds: float, fn) -> None:
    """Hand what ``s`` receives to ``fn(data)`` for up to ``seconds`` of host
    time (a CLI tool on the host, not emulation code), polling every 50 ms;
    stop early when ``fn`` returns True or the peer closes."""
    s.setblocking(False)
    for _ in range(int(seconds / 0.05)):
        r, _, _ = select.select([s], [], [], 0.05)
        if r:
            data = s.recv(4096)
            if not data or fn(data):
                return


def _probe_gatt(s, wait: float):
    """Read what the bridge says first, for up to ``wait`` seconds (host
    time): (True, rest) when it is the JSON-lines bridge of own-stack
    firmware, else (False, whatever bytes came)."""
    got = bytearray()

    def first_line(data: bytes) -> bool:
        got.extend(data)
        return b"\n" in got or not got.startswith(b"{") or len(got) > 65536
    try:
        _receive(s, wait, first_line)
    except OSError:
        pass
    s.settimeout(5)
    if got.startswith(b'{"bridge": "gatt"'):
        line, _, rest = bytes(got).partition(b"\n")
        return True, rest
    return False, bytes(got)
