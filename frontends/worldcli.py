"""``pinetime-emu world``: several images on one air (emu/world.py).

    pinetime-emu world [WORLD OPTIONS]
        --node NAME[@X,Y[,Z]] FIRMWARE [NODE OPTIONS]
        [--node ...]

Each ``--node`` starts a machine: its name (letters, digits, ``_.-``), its
place in metres (default the origin), its firmware, and its own options:
``--board``, ``--base``, ``--ppm`` (crystal offset), ``--flash-file``,
``--softdevice-hex``, ``--bootloader``, ``--screenshot PNG`` (at the end),
``--bridge PORT`` (the board's UART console on TCP, or the PineTime's
Bluetooth Nordic UART through its phone), ``--gdb PORT`` (a GDB stub for
that node: halting it holds the others at the moment it could next reach
them), ``--rtt-port PORT[:CH]``, ``--console prefix|none`` (its debug text
and UART console on stdout, each line after ``[NAME]``; default prefix) and
``--poke ADDR=WORD`` (a 32-bit word written before it starts: UICR
customer words that test firmware reads).  A PineTime node's ``--bridge``
serves its phone (emu/phone), placed at the watch; the Python API places a
phone anywhere and lets it talk to any watch (``World.add_phone``).

World options: ``--seconds`` (default 5; with a bridge or GDB, until
stopped), ``--seed``, ``--pcap FILE`` ('-' for stdout, e.g. into
``wireshark -k -i -``), ``--sniffer X,Y[,Z]`` (where the capture's signal
power is measured; default the first node), ``--loss``,
``--path-loss-exponent``, ``--capture-db`` (or ``none``),
``--no-collisions``, ``--ideal-air``, ``--processes`` (each machine in a
process of its own; no per-node ports then), ``--window`` (every screen in
one window), ``--web PORT`` (every screen in a browser), ``--fast``,
``--scenario FILE`` (a world scenario: frontends/worldscenario.py),
``--summary`` and ``--log-level``.

Bad input (an unknown option, a bad place, two nodes with one name, an
image that does not load) is one line and exit status 2; a guest fault
names the node, the PC and its symbol (exit status 1).
"""
from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from typing import Optional

from frontends.common import (EXIT_GUEST, EXIT_OK, EXIT_USAGE, ArgumentParser, _address,
                              _port, _seconds, flash_file_problem, path_arg,
                              report_stop)
from frontends.rtt import rtt_port as _rtt_port

PROG = "pinetime-emu world"


class UsageError(Exception):
    """A bad command line: one line, exit status 2."""


def _error(msg: str) -> None:
    print(f"{PROG}: error: {msg}", file=sys.stderr)


def _place(text: str, what: str) -> tuple:
    """NAME[@X,Y[,Z]] -> (name, (x, y, z))."""
    name, _at, pos = text.partition("@")
    coords = (0.0, 0.0, 0.0)
    if _at:
        try:
            vals = [float(v) for v in pos.split(",")]
        except ValueError:
            raise UsageError(f"{what} {text!r}: a place is X,Y or X,Y,Z in metres") from None
        if not 2 <= len(vals) <= 3 or not all(math.isfinite(v) and abs(v) <= 1e6 for v in vals):
            raise UsageError(f"{what} {text!r}: a place is X,Y or X,Y,Z in metres (finite)")
        coords = tuple(vals) + (0.0,) * (3 - len(vals))
    if not name:
        raise UsageError(f"{what} needs a name: {what} NAME[@X,Y]")
    return name, coords


def _coords(text: str) -> tuple:
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not X,Y[,Z]: {text!r}") from None
    if not 2 <= len(vals) <= 3 or not all(math.isfinite(v) for v in vals):
        raise argparse.ArgumentTypeError(f"not X,Y[,Z] in metres: {text!r}")
    return tuple(vals)


def _fraction(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"a rate from 0 to 1, not {text}")
    return v


def _float_in(lo: float, hi: float):
    def conv(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not (math.isfinite(v) and lo <= v <= hi):
            raise argparse.ArgumentTypeError(f"{text} is not between {lo:g} and {hi:g}")
        return v
    return conv


def _seed(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= v < 1 << 63:
        raise argparse.ArgumentTypeError(f"a seed from 0 to 2**63-1, not {text}")
    return v


def _capture(text: str):
    if text.lower() == "none":
        return None
    return _float_in(0, 100)(text)


def _poke(text: str) -> tuple:
    addr, eq, word = text.partition("=")
    if not eq:
        raise argparse.ArgumentTypeError(f"not ADDR=WORD: {text!r}")
    a = _address(addr)
    try:
        v = int(word, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {word!r}") from None
    if not 0 <= v <= 0xFFFFFFFF or a % 4:
        raise argparse.ArgumentTypeError(f"{text}: a 32-bit word at a word-aligned address")
    return a, v


def world_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description="Several images on one emulated air: each "
                       "--node is a machine with its board, its place and its own options.",
                       usage="%(prog)s [WORLD OPTIONS] --node NAME[@X,Y[,Z]] FIRMWARE "
                             "[NODE OPTIONS] [--node ...]",
                       epilog=__doc__.split("\n\n", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=_seconds, default=None, metavar="N",
                   help="emulated seconds (default 5; with --bridge or --gdb until stopped)")
    p.add_argument("--seed", type=_seed, default=0,
                   help="the air's random loss seed (default 0)")
    p.add_argument("--pcap", type=path_arg, metavar="FILE", default=None,
                   help="write every packet on the air as Wireshark reads it ('-': stdout)")
    p.add_argument("--sniffer", type=_coords, default=None, metavar="X,Y[,Z]",
                   help="where the capture measures each packet's power (default: the first "
                        "node's place)")
    p.add_argument("--loss", type=_fraction, default=0.0, metavar="RATE",
                   help="random loss, 0 to 1 (default 0)")
    p.add_argument("--path-loss-exponent", type=_float_in(0.1, 10), default=2.0, metavar="N",
                   help="log-distance path loss exponent (2: free space; 2.5-4 indoors)")
    p.add_argument("--capture-db", type=_capture, default=10.0, metavar="DB|none",
                   help="how much stronger a packet must be to survive a collision "
                        "(default 10; none: every overlap destroys both)")
    p.add_argument("--no-collisions", action="store_true", help="overlapping packets survive")
    p.add_argument("--ideal-air", action="store_true",
                   help="no distance, sensitivity, collisions or loss: -60 dBm everywhere")
    p.add_argument("--processes", action="store_true",
                   help="each machine in a process of its own (the same results)")
    p.add_argument("--window", action="store_true", help="every screen in one window")
    p.add_argument("--web", type=_port, default=None, metavar="PORT",
                   help="every screen in a browser on http://127.0.0.1:PORT/")
    p.add_argument("--scale", type=int, default=1, choices=range(1, 5), metavar="N",
                   help="window scale, 1 to 4 (default 1)")
    p.add_argument("--fast", action="store_true",
                   help="run as fast as possible (the window and served runs pace to real time)")
    p.add_argument("--scenario", type=path_arg, metavar="FILE", default=None,
                   help="a world scenario: its nodes and steps (frontends/worldscenario.py)")
    p.add_argument("--junit", type=path_arg, metavar="FILE", default=None,
                   help="with --scenario: a JUnit XML report")
    p.add_argument("--summary", action="store_true",
                   help="at the end: each node's emulated time, cycles and packets sent")
    p.add_argument("--log-level", default="warning",
                   choices=["debug", "info", "warning", "error"])
    return p


def node_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, add_help=False)
    p.add_argument("firmware", type=path_arg, metavar="FIRMWARE")
    p.add_argument("--board", default=None)
    p.add_argument("--base", type=_address, default=None)
    p.add_argument("--ppm", type=_float_in(-1000, 1000), default=0.0)
    p.add_argument("--flash-file", type=path_arg, default=None)
    p.add_argument("--softdevice-hex", type=path_arg, default=None)
    p.add_argument("--bootloader", type=path_arg, default=None)
    p.add_argument("--screenshot", type=path_arg, default=None)
    p.add_argument("--bridge", type=_port, default=None)
    p.add_argument("--gdb", type=_port, default=None)
    p.add_argument("--rtt-port", type=_rtt_port, action="append", default=None)
    p.add_argument("--console", choices=["prefix", "none"], default="prefix")
    p.add_argument("--poke", type=_poke, action="append", default=[])
    return p


def parse(argv: list):
    """(world args, [(name, place, node args)])."""
    groups: list = [("world", None, [])]
    it = iter(argv)
    for a in it:
        if a == "--node":
            try:
                head = next(it)
            except StopIteration:
                raise UsageError(f"{a} needs NAME[@X,Y]") from None
            groups.append((a, head, []))
        else:
            groups[-1][2].append(a)
    world = world_parser().parse_args(groups[0][2])
    nodes = []
    for kind, head, rest in groups[1:]:
        name, place = _place(head, kind)
        try:
            nodes.append((name, place, node_parser().parse_args(rest)))
        except SystemExit:
            raise
    if not nodes and world.scenario is None:
        raise UsageError("no --node: give at least one, --node NAME[@X,Y] FIRMWARE "
                         "(or --scenario FILE)")
    if nodes and world.scenario is not None:
        raise UsageError("--scenario describes its nodes: no --node with it")
    return world, nodes


class _Printer:
    """A node's console on stdout, each line after [NAME]."""

    def __init__(self, name: str):
        self.prefix = f"[{name}] "
        self.partial = ""

    def __call__(self, data: bytes) -> None:
        text = self.partial + data.decode("utf-8", "replace")
        *lines, self.partial = text.replace("\r\n", "\n").split("\n")
        for line in lines:
            sys.stdout.write(self.prefix + line + "\n")
        sys.stdout.flush()

    def flush(self) -> None:
        if self.partial:
            sys.stdout.write(self.prefix + self.partial + "\n")
            self.partial = ""


def build(world_args, nodes):
    """The World with its nodes, or UsageError."""
    from emu.airspace import AirModel
    from emu.loader import FirmwareError
    from emu.world import World
    from emu.worldproc import WorldError
    if world_args.ideal_air:
        model = AirModel.ideal()
    else:
        model = AirModel(path_loss_exponent=world_args.path_loss_exponent,
                         capture_db=world_args.capture_db, loss=world_args.loss,
                         collisions=not world_args.no_collisions)
    names = [n for n, _p, _a in nodes]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise UsageError(f"two nodes named {dup!r}")
    w = World(seed=world_args.seed, air=model, processes=world_args.processes)
    try:
        for name, place, a in nodes:
            if world_args.processes and (a.bridge is not None or a.gdb is not None
                                         or a.rtt_port):
                raise UsageError(f"--node {name}: --bridge, --gdb and --rtt-port need the "
                                 "node in this process (drop --processes)")
            for path in (a.firmware, a.softdevice_hex, a.bootloader):
                if path is not None and not os.path.isfile(path):
                    raise UsageError(f"--node {name}: {path}: no such file")
            opts = {}
            if a.board is not None:
                opts["board"] = a.board
            if a.base is not None:
                opts["base"] = a.base
            if a.softdevice_hex is not None:
                opts["softdevice_hex"] = a.softdevice_hex
            if a.bootloader is not None:
                opts["bootloader"] = a.bootloader
            board = a.board
            if a.flash_file is not None:
                if a.flash_file.lower() != "none":
                    problem = flash_file_problem(a.flash_file)
                    if problem:
                        raise UsageError(f"--node {name}: --flash-file {problem}")
                opts["flash_file"] = None if a.flash_file.lower() == "none" else a.flash_file
            elif board in (None, "pinetime"):
                opts["flash_file"] = None          # several watches: no shared default file
            pokes = [(addr, word.to_bytes(4, "little")) for addr, word in a.poke]
            try:
                w.add(a.firmware, name=name, position=place, ppm=a.ppm, preload=pokes,
                      **opts)
            except TypeError as e:
                if "flash_file" in str(e) and a.flash_file is None:
                    opts.pop("flash_file", None)
                    w.add(a.firmware, name=name, position=place, ppm=a.ppm, preload=pokes,
                          **opts)
                else:
                    raise UsageError(f"--node {name}: {e}") from None
    except (FirmwareError, WorldError, ValueError) as e:
        w.close()
        raise UsageError(f"{e}") from None
    except UsageError:
        w.close()
        raise
    return w


def main(argv: Optional[list] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        world_args, nodes = parse(argv)
    except UsageError as e:
        _error(str(e))
        return EXIT_USAGE
    logging.basicConfig(level=getattr(logging, world_args.log_level.upper()),
                        format="%(levelname)s %(name)s: %(message)s")
    if world_args.scenario is not None:
        from frontends.worldscenario import main as scenario_main
        return scenario_main(world_args)
    for name, _p, a in nodes:
        if a.screenshot is not None:
            d = os.path.dirname(os.path.abspath(a.screenshot))
            if not os.path.isdir(d):
                _error(f"--node {name}: --screenshot {a.screenshot}: no folder {d}")
                return EXIT_USAGE
    try:
        w = build(world_args, nodes)
    except UsageError as e:
        _error(str(e))
        return EXIT_USAGE
    try:
        return _run(w, world_args, nodes)
    finally:
        w.close()


def _run(w, world_args, nodes) -> int:
    from emu.clock import NEVER, TICKS_PER_SECOND
    pollers, closers, stubs = [], [], []
    printers = []
    cap = None
    try:
        if world_args.pcap is not None:
            try:
                cap = w.pcap(world_args.pcap, position=world_args.sniffer)
            except OSError as e:
                _error(f"--pcap {world_args.pcap}: cannot write ({e.strerror or e})")
                return EXIT_USAGE
            closers.append(cap.close)
        for name, _place, a in nodes:
            node = w.node(name)
            if a.console == "prefix":
                pr = _Printer(name)
                printers.append(pr)
                if world_args.processes:
                    node.side.console_listener = pr
                else:
                    node.machine.console_listeners.append(pr)
            if world_args.processes:
                continue
            m = node.machine
            if a.bridge is not None:
                if getattr(m, "phone", None) is not None:
                    from frontends.bridge import BridgeServer
                    srv = BridgeServer(m, "127.0.0.1", a.bridge)
                elif hasattr(m.board, "uart_send"):
                    from frontends.serial_console import UartTcpServer
                    srv = UartTcpServer(m, "127.0.0.1", a.bridge)
                else:
                    raise UsageError(f"--node {name} --bridge: the {m.board_name} board has "
                                     "no Bluetooth phone and no UART console")
                pollers.append(srv.poll)
                closers.append(srv.close)
                print(f"pinetime-emu: {name}: bridge on 127.0.0.1:{srv.port}", file=sys.stderr)
            for port, channel in a.rtt_port or ():
                from frontends.rtt import RttTcpServer
                rtt = m.rtt or m.start_rtt()
                srv = RttTcpServer(rtt, channel, "127.0.0.1", port)
                pollers.append(srv.poll)
                closers.append(srv.close)
                print(f"pinetime-emu: {name}: RTT channel {channel} on 127.0.0.1:{srv.port}",
                      file=sys.stderr)
            if a.gdb is not None:
                from frontends.gdbstub import GdbStub
                stub = GdbStub(m, host="127.0.0.1", port=a.gdb)
                stubs.append((node, stub))
                closers.append(stub.close)
                print(f"pinetime-emu: {name}: GDB stub on 127.0.0.1:{stub.port}",
                      file=sys.stderr)
    except UsageError as e:
        for c in closers:
            c()
        _error(str(e))
        return EXIT_USAGE
    except OSError as e:
        for c in closers:
            c()
        _error(f"cannot listen: {e.strerror or e}")
        return EXIT_USAGE
    serving = bool(pollers or stubs)
    seconds = world_args.seconds if world_args.seconds is not None else (
        None if serving else 5.0)
    end = NEVER - 1 if seconds is None else w.now + int(seconds * TICKS_PER_SECOND)
    rc = EXIT_OK
    try:
        if world_args.window or world_args.web is not None:
            from frontends.worldview import run_view
            rc = run_view(w, world_args, end, pollers, stubs)
        else:
            _headless(w, end, pollers, stubs, paced=serving and not world_args.fast)
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        rc = 130
    finally:
        for pr in printers:
            pr.flush()
        for c in closers:
            try:
                c()
            except Exception:               # noqa: BLE001 - closing is best effort
                pass
    if cap is not None and cap.error:
        _error(f"--pcap {world_args.pcap}: {cap.error}")
        rc = EXIT_USAGE
    return _finish(w, world_args, nodes) or rc


def _machine_sides(w) -> list:
    from emu.world import HostNode
    return [n.side for n in w.nodes.values() if not isinstance(n, HostNode)]


def _headless(w, end, pollers, stubs, paced: bool) -> None:
    """Run the world to ``end`` in 10 ms steps while serving (a whole run
    otherwise), polling the servers between steps.  A node halted by its
    debugger pauses the world (as a probe halts a board on a bench of
    boards that share a clock); GDB's continue and step run the world
    (Machine.run on a timeline runs every machine of it)."""
    import time
    from emu.clock import TICKS_PER_MS, TICKS_PER_SECOND
    step = 10 * TICKS_PER_MS if (pollers or stubs) else end - w.now
    host0, emu0 = time.monotonic(), w.now
    machines = _machine_sides(w)

    def hit() -> bool:
        return any(st._hit is not None or st.wants_halt for _n, st in stubs)
    while w.now < end:
        for p in pollers:
            p()
        paused = False
        for node, stub in stubs:
            stub.poll(0.0)
            if stub.killed:
                return
            if stub.halted or stub.exited is not None:
                if stub.conn is None and stub.exited is None:
                    stub.halted = False          # the client left: run on
                else:
                    paused = True
        if paused:
            for _node, stub in stubs:
                stub.poll(0.02)
            host0, emu0 = time.monotonic(), w.now
            continue
        w.run(until_tick=min(end, w.now + step), stop=hit if stubs else None)
        for node, stub in stubs:
            if node.side.last is not None:
                stub._after_run(node.side.last)
        if all(s.stopped is not None for s in machines):
            break
        if paced:
            ahead = (w.now - emu0) / TICKS_PER_SECOND - (time.monotonic() - host0)
            if ahead > 0.002:
                time.sleep(min(ahead, 0.05))


def _finish(w, world_args, nodes) -> int:
    rc = EXIT_OK
    for name, _place, a in nodes:
        node = w.node(name)
        side = node.side
        if a.screenshot is not None:
            try:
                if world_args.processes:
                    png = node.screenshot_png()
                    if png is None:
                        raise AttributeError
                    tmp = a.screenshot + ".tmp"
                    with open(tmp, "wb") as f:
                        f.write(png)
                    os.replace(tmp, a.screenshot)
                else:
                    shot = getattr(node.machine.board, "screenshot", None)
                    if shot is None:
                        raise AttributeError
                    shot(a.screenshot)
                print(f"pinetime-emu: {name}: screenshot saved to {a.screenshot}",
                      file=sys.stderr)
            except AttributeError:
                _error(f"--node {name} --screenshot: its board has no screen")
                rc = EXIT_USAGE
            except OSError as e:
                _error(f"--node {name} --screenshot {a.screenshot}: cannot write "
                       f"({e.strerror or e})")
                rc = EXIT_USAGE
        r = side.stopped
        if r is not None and r.reason in ("lockup", "fault"):
            print(f"pinetime-emu: node {name} stopped:", file=sys.stderr)
            if world_args.processes:
                info = r.info or {}
                print(f"  {info.get('message', r.reason)} pc={info.get('pc', 0):#010x} "
                      f"<{info.get('symbol', '')}>", file=sys.stderr)
            else:
                report_stop(node.machine, r)
            rc = rc or EXIT_GUEST
        elif r is not None and r.reason == "exit" and r.exit_code:
            print(f"pinetime-emu: node {name}: firmware exited with status {r.exit_code}",
                  file=sys.stderr)
            rc = rc or EXIT_GUEST
    if world_args.summary:
        sent = {}
        for t in w.log:
            sent[t.sender] = sent.get(t.sender, 0) + 1
        print(f"pinetime-emu: summary: {w.time:.6f} s emulated, {w.timeline.rounds} rounds, "
              f"{len(w.log)} packets on the air", file=sys.stderr)
        for name, node in w.nodes.items():
            cyc = ""
            if hasattr(node, "machine") and not world_args.processes:
                cyc = f", {node.machine.cpu.cycles} CPU cycles"
            print(f"pinetime-emu:   {name} at {node.position[:2]}: {sent.get(name, 0)} "
                  f"packets sent{cyc}", file=sys.stderr)
    return rc
