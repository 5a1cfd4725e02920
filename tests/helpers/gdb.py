"""The real gdb-multiarch against our GDB stub (tests/frontends/test_gdb.py,
test_vscode.py): a machine served on an emulator thread, and gdb in batch
mode against it.  The stub's firmware, firmware/build/gdb_target.elf, is the
``target_elf`` fixture of tests/conftest.py."""
from __future__ import annotations

import shutil
import subprocess
import threading

import pytest

from emu.machine import Machine
from frontends.gdbstub import GdbStub, serve

GDB = shutil.which("gdb-multiarch")


class Served:
    """A machine under a GDB stub, run by serve() on one emulator thread."""

    def __init__(self, elf: str, wait: bool = True, run_seconds=None):
        self.machine = Machine(elf)
        self.stub = GdbStub(self.machine, port=0)
        self.port = self.stub.port
        self.error = None

        def target():
            try:
                serve(self.machine, self.port, wait=wait, run_seconds=run_seconds, stub=self.stub)
            except BaseException as e:  # noqa: BLE001 - reported by the test
                self.error = e
        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()

    def join(self, timeout=10.0):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "emulator thread did not finish"
        assert self.error is None, self.error


def gdb(elf: str, port: int, *cmds: str, timeout: float = 30.0) -> str:
    if GDB is None:
        pytest.skip("gdb-multiarch not installed")
    args = [GDB, "-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off",
            "-ex", f"target remote 127.0.0.1:{port}"]
    for c in cmds:
        args += ["-ex", c]
    args.append(elf)
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return r.stdout + r.stderr
