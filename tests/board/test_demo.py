"""The default firmware (scripts/demo.sh) draws its face and ticks its bar."""
import subprocess
import sys


def test_demo_draws_watch_face(fw, tmp_path):
    from emu import Machine
    m = Machine(fw("pinetime_demo"), board="pinetime", flash_file=None)
    m.run(seconds=3.2)
    px = m.board.screen()
    assert tuple(px[85, 42]) == (255, 255, 255)      # the "1" of 10:09 (middle column)
    assert tuple(px[85, 33]) == (0, 0, 0)            # left of the "1" top
    assert tuple(px[75, 25]) == (0, 0, 0)            # the black face
    assert px[5, 120][2] < px[230, 120][2]           # gradient gets bluer downwards
    orange = [x for x in range(20, 220)
              if px[205, x][0] > 240 and 150 < px[205, x][1] < 170 and px[205, x][2] < 16]
    assert 10 <= len(orange) <= 40                   # 1-4 seconds of the bar after 3.2 s
    assert "pinetime demo running" in m.console_text()


def test_demo_cli_screenshot(fw, tmp_path):
    out = tmp_path / "demo.png"
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", fw("pinetime_demo"),
                        "--headless", "--seconds", "1", "--screenshot", str(out),
                        "--flash-file", "none"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
