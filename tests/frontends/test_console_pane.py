"""The window's RTT console pane (frontends/console_pane.py): terminal text
from up channel 0, keys into down channel 0; in a real window on SDL's dummy
driver with firmware/tests/rtt_echo.c."""
from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"       # before pygame is imported anywhere
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

import pytest

pygame = pytest.importorskip("pygame")

from frontends.console_pane import ConsolePane  # noqa: E402
from frontends.window import Window  # noqa: E402


class FakeRtt:
    found = True

    def __init__(self):
        self.listeners, self.written = [], []

    def write(self, data, channel=0):
        self.written.append((channel, bytes(data)))


def test_terminal_text_from_chunks():
    p = ConsolePane(FakeRtt())
    for chunk in (b"\x1b[m\r\n\r\n\x1b[1;3", b"2mrtt:~$ \x1b[m", b"help\r\nline one\r",
                  b"\nover", b"\rwritten\nabc\x08d\tx\n", "caf\u00e9 ".encode()[:4],
                  "caf\u00e9 ".encode()[4:] + b"end"):
        p.feed(chunk)
    assert p.lines == ["", "", "rtt:~$ help", "line one", "written", "abd     x",
                       "caf\u00e9 end"]


def test_keys_go_to_the_firmware_only_while_focused():
    rtt = FakeRtt()
    p = ConsolePane(rtt)
    assert not p.key("a", "a") and rtt.written == []         # the watch's key
    assert p.key("`", "`") and p.focused
    for name, text in (("h", "h"), ("i", "i"), ("return", "\r"), ("backspace", "\x08"),
                       ("tab", "\t"), ("c", "\x03"), ("up", "")):
        assert p.key(name, text)
    assert b"".join(d for _c, d in rtt.written) == b"hi\r\n\x7f\t\x03\x1b[A"
    assert p.key("escape", "") and not p.focused
    assert not p.key("b", "b")


def test_window_shows_rtt_and_types_into_it(firmware_dir):
    elf = firmware_dir / "rtt_echo.elf"
    if not elf.exists():
        pytest.skip("firmware/build/rtt_echo.elf not built")
    from emu.machine import Machine
    m = Machine(str(elf), board="pinetime", flash_file=None)
    m.start_rtt()
    t = [100.0]
    w = Window(m, scale=1, wall_clock=lambda: t[0],
               sleep=lambda s: t.__setitem__(0, t[0] + s))
    try:
        pane = w.console_pane
        assert pane is not None
        assert w.surface.get_width() == w.layout.width + pane.width
        for ch in "`ok!":
            w.handle_event(pygame.event.Event(pygame.KEYDOWN, key=ord(ch), mod=0, unicode=ch))
        for _ in range(20):
            t[0] += 1 / 60
            w.frame()
            if w.stopped:
                break
        text = pane.text()
        assert "hello from rtt" in text and "line 09: abcdefghijklmnopqrstuvwxyz" in text
        assert "echo:ok!" in text, text
        assert "PASS down bytes arrived" in m.console_text()
        w.draw()                                  # the pane draws (focused, with text)
        right = pygame.surfarray.array3d(w.surface)[w.layout.width + 10:, 40:200]
        assert right.max() > 150                  # some light text on the dark pane
    finally:
        w.close()


def test_no_pane_without_rtt(firmware_dir):
    from emu.machine import Machine
    m = Machine(str(firmware_dir / "pinetime_demo.elf"), board="pinetime", flash_file=None)
    w = Window(m, scale=1)
    try:
        assert w.console_pane is None and w.surface.get_width() == w.layout.width
    finally:
        w.close()
