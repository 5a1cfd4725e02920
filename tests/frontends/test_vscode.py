"""docs/vscode.md: gdb-multiarch in MI mode, as Cortex-Debug drives it against
an external GDB server, on the stub serving firmware/tests/gdb_target.c."""
import queue
import re
import subprocess
import threading
import time

import pytest

from helpers.gdb import GDB, Served, gdb


class Mi:
    def __init__(self):
        self.p = subprocess.Popen([GDB, "--interpreter=mi3", "-nx", "-q"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  bufsize=1)
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.until(r"^\(gdb\)")

    def _read(self):
        for line in self.p.stdout:
            self.q.put(line.rstrip("\n"))

    def until(self, pattern, timeout=20.0) -> list:
        out, t0 = [], time.monotonic()
        while time.monotonic() - t0 < timeout:
            try:
                line = self.q.get(timeout=0.2)
            except queue.Empty:
                continue
            out.append(line)
            if re.search(pattern, line):
                return out
        raise AssertionError(f"no {pattern!r} within {timeout} s; got {out[-10:]}")

    def cmd(self, c, pattern=r"^\^(done|error|connected|running|exit)"):
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()
        return self.until(pattern)

    def close(self):
        try:
            self.p.stdin.write("-gdb-exit\n")
            self.p.stdin.flush()
            self.p.wait(10)
        except Exception:
            self.p.kill()


def test_cortex_debug_launch_sequence(target_elf):
    if GDB is None:
        pytest.skip("gdb-multiarch not installed")
    s = Served(target_elf)
    mi = Mi()
    try:
        assert mi.cmd("-gdb-set mi-async on")[-1] == "^done"
        assert mi.cmd(f"-file-exec-and-symbols {target_elf}")[-1] == "^done"
        out = mi.cmd(f"-target-select extended-remote 127.0.0.1:{s.port}")
        assert out[-1].startswith("^connected")
        assert any('func="Reset_Handler"' in l for l in out if l.startswith("*stopped"))
        out = mi.cmd('-interpreter-exec console "monitor reset halt"')
        assert any(l.startswith('@"reset: PC=0x') for l in out) and out[-1] == "^done"
        out = mi.cmd("-target-download")
        assert any(l.startswith('+download,{section=".text"') for l in out)
        assert out[-1].startswith("^done,address=")
        assert mi.cmd('-interpreter-exec console "monitor reset halt"')[-1] == "^done"
        out = mi.cmd("-break-insert bump")
        assert out[-1].startswith("^done,bkpt=") and 'func="bump"' in out[-1]
        addr = int(re.search(r'addr="(0x[0-9a-f]+)"', out[-1]).group(1), 16)
        mi.cmd("-exec-continue", r"^\^running")
        stop = [l for l in mi.until(r"^\*stopped") if l.startswith("*stopped")][-1]
        assert 'reason="breakpoint-hit"' in stop and 'func="bump"' in stop, stop
        out = mi.cmd("-data-list-register-values x 15")
        pc = int(re.search(r'value="(0x[0-9a-f]+)"', out[-1]).group(1), 16)
        assert pc == addr
        out = mi.cmd("-data-evaluate-expression counter")
        counter = int(re.search(r'value="(\d+)"', out[-1]).group(1))
        out = mi.cmd("-data-read-memory-bytes &counter 4")
        contents = re.search(r'contents="([0-9a-f]{8})"', out[-1]).group(1)
        assert int.from_bytes(bytes.fromhex(contents), "little") == counter
        out = mi.cmd('-interpreter-exec console "monitor cycles"')
        assert any(l.startswith('@"cycles: ') for l in out)
        assert mi.cmd("-target-detach")[-1] == "^done"
    finally:
        mi.close()
    s.join()


def test_load_into_flash_reaches_the_image(target_elf):
    """vFlashErase/vFlashWrite land in the emulated flash: after an erase
    the code reads back as the ELF's bytes (GDB's compare-sections)."""
    if GDB is None:
        pytest.skip("gdb-multiarch not installed")
    s = Served(target_elf)
    out = gdb(target_elf, s.port, "load", "compare-sections .text", "kill")
    s.join()
    assert "Start address" in out and "matched" in out and "MIS-MATCHED" not in out, out
