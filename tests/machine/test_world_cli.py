"""``pinetime-emu world`` (frontends/worldcli.py), world scenarios
(frontends/worldscenario.py) and the views of every screen
(frontends/worldview.py), with our own firmware on the bare RADIO."""
from __future__ import annotations

import os
import subprocess
import sys

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import pytest

from emu.world import World

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PING = ["--poke", "0x10001080=10000", "--poke", "0x10001084=3", "--poke", "0x10001090=1"]


def cli(*args, timeout=120):
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "world", *map(str, args)],
                       capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    return r.returncode, r.stdout, r.stderr


def test_two_nodes_on_the_command_line_with_a_pcap_and_a_summary(fw, tmp_path):
    rc, out, err = cli("--seconds", "0.05", "--pcap", tmp_path / "air.pcap", "--summary",
                       "--node", "a@0,0", fw("air_beacon"), "--board", "nrf52832", *PING,
                       "--node", "p@3,0", fw("air_ponger"), "--board", "nrf52832")
    assert rc == 0, err
    assert [l for l in out.splitlines() if l.startswith("[a] PONG")] == \
        [f"[a] PONG n={i} crc=1 tifs=150" for i in range(3)]
    assert "[p] ECHO n=2 crc=1" in out
    assert "6 packets on the air" in err and "a at (0.0, 0.0): 3 packets sent" in err
    data = (tmp_path / "air.pcap").read_bytes()
    assert data[:4] == bytes.fromhex("4d3cb2a1") and len(data) == 24 + 6 * (16 + 36)


def test_the_same_run_in_processes_prints_the_same(fw, tmp_path):
    runs = []
    for extra in ((), ("--processes",)):
        rc, out, err = cli("--seconds", "0.05", "--pcap", tmp_path / f"{len(runs)}.pcap",
                           *extra, "--node", "a@0,0", fw("air_beacon"), "--board", "nrf52832",
                           *PING, "--node", "p@3,0", fw("air_ponger"), "--board", "nrf52832",
                           "--screenshot", tmp_path / "p.png")
        assert rc == 2 and "its board has no screen" in err
        runs.append((sorted(out.splitlines()), (tmp_path / f"{len(runs)}.pcap").read_bytes()))
    assert runs[0] == runs[1]


def test_a_live_pcap_on_stdout(fw):
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "world", "--seconds", "0.05",
                        "--pcap", "-", "--node", "a", fw("air_beacon"), "--board", "nrf52832",
                        "--console", "none"], capture_output=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0
    assert r.stdout[:4] == bytes.fromhex("4d3cb2a1") and len(r.stdout) == 24 + 5 * 52


@pytest.mark.parametrize("args,msg", [
    ((), "no --node"),
    (("--node",), "--node needs NAME"),
    (("--node", "a@x,y", "FW"), "a place is X,Y"),
    (("--node", "a", "nope.elf"), "no such file"),
    (("--node", "a", "FW", "--node", "a", "FW"), "two nodes named 'a'"),
    (("--node", "a b", "FW"), "a node's name"),
    (("--node", "a", "FW", "--bogus"), "unrecognized arguments: --bogus"),
    (("--loss", "2", "--node", "a", "FW"), "a rate from 0 to 1"),
    (("--seed", "-1", "--node", "a", "FW"), "a seed from 0"),
    (("--sniffer", "1", "--node", "a", "FW"), "not X,Y"),
    (("--path-loss-exponent", "nan", "--node", "a", "FW"), "not between"),
    (("--node", "a", "FW", "--ppm", "5000"), "not between"),
    (("--processes", "--node", "a", "FW", "--gdb", "0"), "drop --processes"),
    (("--node", "a", "FW", "--poke", "3=4"), "word-aligned"),
    (("--node", "a", "/etc/passwd", "--board", "nrf52832"), "not a firmware image"),
    (("--node", "a", "FW", "--screenshot", "/nonexistent/x.png"), "no folder"),
    (("--scenario", "S", "--node", "a", "FW"), "no --node with it"),
])
def test_bad_command_lines_are_one_line_and_status_2(fw, args, msg):
    args = [fw("air_beacon") if a == "FW" else a for a in args]
    rc, out, err = cli("--seconds", "0.01", *args, timeout=60)
    assert rc == 2 and msg in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_guest_fault_names_the_node_and_the_pc(fw):
    rc, out, err = cli("--seconds", "0.5", "--node", "ok", fw("air_beacon"), "--board",
                       "nrf52832", "--node", "bad", fw("cli_fault"), "--board", "nrf52832")
    assert rc == 1, (out, err)
    assert "node bad stopped" in err and "has not returned for 200 ms" in err
    assert "pc=0x000000e0 <read_bad_address+0x4>" in err and "[ok] SENT 20" in out


def test_a_world_scenario_passes_and_reports(fw, tmp_path):
    sc = tmp_path / "ping.yaml"
    sc.write_text(f"""name: ping pong
world:
  seed: 1
  pcap: out.pcap
  nodes:
    - {{name: a, firmware: {fw('air_beacon')}, board: nrf52832, at: [0, 0],
       poke: {{0x10001080: 10000, 0x10001084: 3, 0x10001090: 1}}}}
    - {{name: p, firmware: {fw('air_ponger')}, board: nrf52832, at: [3, 0]}}
steps:
  - run: {{ms: 5}}
  - wait_text: {{text: "PONG n=2 crc=1 tifs=150", timeout_ms: 100}}
  - node: p
  - expect_text: "ECHO n=2 crc=1"
""")
    rc, out, err = cli("--scenario", sc, "--junit", tmp_path / "j.xml")
    assert rc == 0, out + err
    assert "PASS [t=0.005000 s]  1. [a] run 5 ms" in out
    assert "4. [p] expect_text" in out and "PASS ping pong" in out
    assert (tmp_path / "out.pcap").stat().st_size == 24 + 6 * 52
    assert 'failures="0"' in (tmp_path / "j.xml").read_text()
    # a failing step: status 1, the rest skipped
    sc.write_text(sc.read_text().replace('"ECHO n=2 crc=1"', '"ECHO n=7"')
                  + "  - run: {ms: 1}\n")
    rc, out, err = cli("--scenario", sc)
    assert rc == 1 and "FAIL" in out and "SKIP" in out


@pytest.mark.parametrize("text,msg", [
    ("steps: [{run: {ms: 1}}]\n", "mapping with 'world' and 'steps'"),
    ("world: {nodes: []}\nsteps: [{run: {ms: 1}}]\n", "non-empty list"),
    ("world: {nodes: [{name: a, firmware: x.elf}], bogus: 1}\nsteps: [{run: {ms: 1}}]\n",
     "unknown key"),
    ("world: {nodes: [{name: a, firmware: x.elf}]}\nsteps: [{node: b}]\n", "no node 'b'"),
    ("world: {nodes: [{name: a, firmware: x.elf}]}\nsteps: [{save_snapshot: s}]\n",
     "a world has no snapshot"),
    ("world: {nodes: [{name: a, firmware: missing.elf}]}\nsteps: [{run: {ms: 1}}]\n",
     "missing.elf"),
    ("world: [\n", "invalid YAML"),
])
def test_bad_world_scenarios_are_one_line(tmp_path, text, msg):
    sc = tmp_path / "bad.yaml"
    sc.write_text(text)
    rc, out, err = cli("--scenario", sc, timeout=60)
    assert rc == 2 and msg in err, err
    assert "Traceback" not in err


def test_the_window_shows_every_screen_and_routes_input(fw):
    from frontends.worldview import WorldWindow
    pg = pytest.importorskip("pygame")
    w = World()
    a = w.add(fw("pinetime_demo"), name="left", board="pinetime", flash_file=None)
    b = w.add(fw("pinetime_demo"), name="right", board="pinetime", flash_file=None,
              position=(1, 0))
    win = WorldWindow(w, end=w.now + 512_000_000, scale=1, realtime=False)
    assert [p.node.name for p in win.panels] == ["left", "right"]
    for _ in range(6):
        win.frame()
    assert w.time > 0.09 and a.machine.time == b.machine.time
    taps = []
    b.machine.board.touch.tap = lambda x, y: taps.append((x, y))
    p = win.panels[1]
    for kind in (pg.MOUSEBUTTONDOWN, pg.MOUSEBUTTONUP):
        win.handle_event(pg.event.Event(kind, button=1, pos=(p.x + 100, p.y + 50)))
    assert taps == [(100, 50)] and win.focus == 1
    win.handle_event(pg.event.Event(pg.KEYDOWN, key=pg.K_TAB, mod=0, unicode="\t"))
    assert win.focus == 0
    win.close()
    w.close()


def test_the_web_view_serves_a_page_of_every_node(fw):
    import threading
    from frontends import worldview
    w = World()
    w.add(fw("pinetime_demo"), name="left", board="pinetime", flash_file=None)
    w.add(fw("air_beacon"), name="beacon", board="nrf52832", position=(1, 0))
    got = {}
    real = worldview.index_page

    def page(views):
        got["views"] = views
        return real(views)
    worldview.index_page = page
    try:
        end = w.now + 512_000_000 // 5
        t = threading.Thread(target=worldview.run_web, args=(w, 0, end), kwargs={
            "realtime": False})
        t.start()
        t.join(60)
    finally:
        worldview.index_page = real
    assert not t.is_alive()
    assert [n for n, _u in got["views"]] == ["left", "beacon"]
    html = real(got["views"]).decode()
    assert html.count("<iframe") == 2 and "left" in html and "beacon" in html
    assert w.time >= 0.2
    w.close()


def test_gdb_halts_and_steps_one_node_and_the_air_stays_exact(fw):
    """gdb-multiarch on one node of a world: it halts the node (and so the
    world), steps it, detaches; the exchange between the chips still has
    its exact TIFS, as without the debugger."""
    import re
    import shutil
    import time
    gdb_bin = shutil.which("gdb-multiarch")
    if gdb_bin is None:
        pytest.skip("gdb-multiarch not installed")
    # pings 1 s apart, paced to real time: the debugger halts the world between them
    proc = subprocess.Popen([sys.executable, "-m", "frontends.cli", "world", "--seconds",
                             "2.5", "--node", "a@0,0", fw("air_beacon"), "--board", "nrf52832",
                             "--poke", "0x10001080=1000000", "--poke", "0x10001084=3",
                             "--poke", "0x10001090=1", "--node", "p@3,0", fw("air_ponger"),
                             "--board",
                             "nrf52832", "--gdb", "0"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        port = None
        deadline = time.monotonic() + 30
        while port is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            m = re.search(r"p: GDB stub on 127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
        assert port, "no GDB port printed"
        g = subprocess.run([gdb_bin, "-batch", "-nx", "-ex", "set pagination off",
                            "-ex", f"target remote 127.0.0.1:{port}", "-ex", "stepi",
                            "-ex", "stepi", "-ex", "info registers pc", "-ex", "detach",
                            fw("air_ponger")], capture_output=True, text=True, timeout=60)
        assert "pc " in g.stdout, g.stdout + g.stderr
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert [l for l in out.splitlines() if l.startswith("[a] PONG")] == \
        [f"[a] PONG n={i} crc=1 tifs=150" for i in range(3)], out
