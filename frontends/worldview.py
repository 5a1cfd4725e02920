"""Every screen of a World: ``pinetime-emu world --window`` and ``--web PORT``.

The window (:class:`WorldWindow`, pygame) draws each machine node's panel
side by side (``board.screen()``: the PineTime's display, the DK's LEDs and
buttons, the micro:bit's matrix; a board without one shows its console's
last lines), each under its name, place and emulated time.  The mouse acts
on the node under it: a click or a drag on a touch screen is a tap or a
swipe (frontends/input.py's GestureTracker, one per node), a click on a
DK's button holds it; keys act on the node in focus (Tab moves the focus,
drawn as a frame): space or B holds its side button, 1-4 its DK buttons;
F switches fast and real-time, Q quits.  The world runs in slices of 1/60 s
of emulated time, paced to the wall clock unless fast; input is applied
between slices, so the run stays deterministic for a given input sequence.

The web view starts one page per machine node (frontends/web: the screen,
touch, buttons, the phone's actions, the console; each on a port of its
own) and serves at ``http://127.0.0.1:PORT/`` a page that shows them all
side by side.  The first node's view paces the world; every page's input
is taken between slices.

Not modelled: input to a node in another process (``--processes`` shows no
window or web view), a node's own GDB stub inside the views (use the
headless run with ``--gdb``).
"""
from __future__ import annotations

import html
import os
import sys
import threading
import time
from typing import Optional

from emu.clock import TICKS_PER_SECOND
from frontends.common import EXIT_OK, EXIT_USAGE

SLICE = TICKS_PER_SECOND // 60
GAP = 16
LABEL_H = 40


def run_view(w, world_args, end: int, pollers, stubs) -> int:
    if world_args.processes:
        print("pinetime-emu world: error: --window and --web need every node in this "
              "process (drop --processes)", file=sys.stderr)
        return EXIT_USAGE
    if stubs:
        print("pinetime-emu world: error: --gdb runs headless (the views do not drive a "
              "debugger)", file=sys.stderr)
        return EXIT_USAGE
    if world_args.web is not None:
        return run_web(w, world_args.web, end, pollers, realtime=not world_args.fast)
    return run_window(w, end, pollers, scale=world_args.scale, realtime=not world_args.fast)


def _machine_nodes(w) -> list:
    from emu.world import MachineNode
    return [n for n in w.nodes.values() if isinstance(n, MachineNode)]


class _Panel:
    def __init__(self, node, scale: int):
        from frontends.input import GestureTracker
        self.node = node
        self.board = node.machine.board
        self.screen = getattr(self.board, "screen", None)
        img = self.screen() if self.screen is not None else None
        self.h, self.w = (img.shape[0], img.shape[1]) if img is not None else (120, 240)
        self.scale = scale
        self.gestures = GestureTracker()
        self.x = self.y = 0
        self.held: Optional[object] = None

    @property
    def size(self) -> tuple:
        return self.w * self.scale, self.h * self.scale + LABEL_H

    def to_panel(self, x: int, y: int, clamp: bool = False):
        px, py = (x - self.x) // self.scale, (y - self.y) // self.scale
        if clamp:
            return max(0, min(self.w - 1, px)), max(0, min(self.h - 1, py))
        if 0 <= px < self.w and 0 <= py < self.h:
            return px, py
        return None


class WorldWindow:
    """One window over every machine node of a World (see the module docstring)."""

    def __init__(self, w, end: int, pollers=(), scale: int = 1, realtime: bool = True):
        from frontends.window import NoDisplayError, _have_display, _no_display_message
        if not _have_display():
            raise NoDisplayError(_no_display_message())
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
        import pygame
        self.pg = pygame
        self.world = w
        self.end = end
        self.pollers = list(pollers)
        self.realtime = realtime
        self.panels = [_Panel(n, scale) for n in _machine_nodes(w)]
        if not self.panels:
            raise NoDisplayError("the world has no machine to show")
        x = GAP
        for p in self.panels:
            p.x, p.y = x, GAP
            x += p.size[0] + GAP
        width = x
        height = GAP * 2 + max(p.size[1] for p in self.panels)
        self.focus = 0
        self.closed = False
        try:
            pygame.display.init()
            pygame.font.init()
            self.surface = pygame.display.set_mode((width, height))
        except pygame.error as e:
            raise NoDisplayError(f"cannot open a window ({e}): use --headless") from None
        pygame.display.set_caption("pinetime-emu — world")
        self.font = pygame.font.Font(None, 18)
        self._anchor = (time.monotonic(), w.now)

    def _panel_at(self, x, y) -> Optional[_Panel]:
        for p in self.panels:
            pw, ph = p.size
            if p.x <= x < p.x + pw and p.y <= y < p.y + ph - LABEL_H:
                return p
        return None

    def handle_event(self, ev) -> None:
        pg = self.pg
        if ev.type == pg.QUIT:
            self.closed = True
        elif ev.type == pg.KEYDOWN:
            name = pg.key.name(ev.key)
            if name == "tab":
                self.focus = (self.focus + 1) % len(self.panels)
            elif name == "q":
                self.closed = True
            elif name == "f":
                self.realtime = not self.realtime
                self._anchor = (time.monotonic(), self.world.now)
            else:
                self._key_button(name, True)
        elif ev.type == pg.KEYUP:
            self._key_button(pg.key.name(ev.key), False)
        elif ev.type == pg.MOUSEBUTTONDOWN and ev.button == 1:
            p = self._panel_at(*ev.pos)
            if p is None:
                return
            self.focus = self.panels.index(p)
            pos = p.to_panel(*ev.pos)
            at = getattr(p.board, "button_at", None)
            if at is not None and pos is not None and at(*pos) is not None:
                p.held = p.board.buttons[at(*pos)]
                p.held.press()
                return
            p.gestures.down(pos, time.monotonic())
        elif ev.type == pg.MOUSEMOTION:
            p = self.panels[self.focus]
            if p.gestures.held:
                p.gestures.motion(p.to_panel(*ev.pos, clamp=True))
        elif ev.type == pg.MOUSEBUTTONUP and ev.button == 1:
            p = self.panels[self.focus]
            if p.held is not None:
                p.held.release()
                p.held = None
                return
            self._gestures(p, p.gestures.up(p.to_panel(*ev.pos, clamp=True), time.monotonic()))

    def _key_button(self, name: str, down: bool) -> None:
        """Space or B: the focused node's side button; 1-4: its DK buttons."""
        board = self.panels[self.focus].board
        button = None
        if name in ("space", "b"):
            button = getattr(board, "button", None)
        elif len(name) == 1 and name in "1234" and getattr(board, "buttons", None):
            i = int(name) - 1
            button = board.buttons[i] if i < len(board.buttons) else None
        if button is not None:
            button.press() if down else button.release()

    @staticmethod
    def _gestures(p: _Panel, gestures: list) -> None:
        touch = getattr(p.board, "touch", None)
        if touch is None:
            return
        for g in gestures:
            if g[0] == "swipe":
                touch.swipe(g[1])
            else:
                getattr(touch, g[0])(g[1], g[2])

    def frame(self) -> None:
        pg = self.pg
        for ev in pg.event.get():
            self.handle_event(ev)
        for p in self.panels:
            self._gestures(p, p.gestures.poll(time.monotonic()))
        for fn in self.pollers:
            fn()
        w = self.world
        if self.realtime:
            t0, e0 = self._anchor
            target = e0 + int((time.monotonic() - t0) * TICKS_PER_SECOND)
            if w.now > target:
                time.sleep(min((w.now - target) / TICKS_PER_SECOND, 0.05))
            elif target - w.now > TICKS_PER_SECOND // 4:
                self._anchor = (time.monotonic(), w.now)
        w.run(until_tick=min(self.end, w.now + SLICE))
        if w.now >= self.end:
            self.closed = True
        self.draw()

    def draw(self) -> None:
        pg = self.pg
        surf = self.surface
        surf.fill((205, 208, 214))
        for i, p in enumerate(self.panels):
            pw, ph = p.size
            if p.screen is not None:
                img = p.screen()
                s = pg.surfarray.make_surface(img.swapaxes(0, 1))
                if p.scale != 1:
                    s = pg.transform.scale(s, (p.w * p.scale, p.h * p.scale))
                surf.blit(s, (p.x, p.y))
            else:
                pg.draw.rect(surf, (20, 20, 24), (p.x, p.y, pw, ph - LABEL_H))
                lines = p.node.machine.console_text().splitlines()[-6:]
                for j, line in enumerate(lines):
                    surf.blit(self.font.render(line[:40], True, (200, 200, 200)),
                              (p.x + 4, p.y + 4 + 16 * j))
            if i == self.focus:
                pg.draw.rect(surf, (200, 60, 40), (p.x - 3, p.y - 3, pw + 6, ph - LABEL_H + 6), 2)
            n = p.node
            label = f"{n.name} @ {n.position[0]:g},{n.position[1]:g} m"
            surf.blit(self.font.render(label, True, (20, 20, 24)), (p.x, p.y + ph - LABEL_H + 4))
            surf.blit(self.font.render(f"t={n.machine.time:.3f} s", True, (90, 90, 100)),
                      (p.x, p.y + ph - LABEL_H + 20))
        pg.display.flip()

    def close(self) -> None:
        self.pg.display.quit()


def run_window(w, end: int, pollers=(), scale: int = 1, realtime: bool = True) -> int:
    from frontends.window import NoDisplayError
    try:
        win = WorldWindow(w, end, pollers, scale, realtime)
    except NoDisplayError as e:
        print(f"pinetime-emu world: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        while not win.closed:
            win.frame()
    finally:
        win.close()
    return EXIT_OK


def index_page(views: list) -> bytes:
    """The page that shows every node's own page side by side."""
    frames = "\n".join(
        f'<figure><figcaption>{html.escape(name)}</figcaption>'
        f'<iframe src="{html.escape(url)}" title="{html.escape(name)}"></iframe></figure>'
        for name, url in views)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>pinetime-emu world"
            f"</title><style>body{{font-family:sans-serif;background:#cdd0d6;margin:8px}}"
            f"main{{display:flex;flex-wrap:wrap;gap:12px}}figure{{margin:0}}"
            f"iframe{{width:560px;height:760px;border:1px solid #888;background:#fff}}"
            f"</style></head><body><h1>pinetime-emu world</h1><main>{frames}</main>"
            f"</body></html>").encode()


def run_web(w, port: int, end: int, pollers=(), realtime: bool = True) -> int:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from frontends.web.view import WebView
    nodes = _machine_nodes(w)
    views = []

    def give_up(what: str, e: OSError) -> int:
        for v in views:
            v.close()
        print(f"pinetime-emu world: error: {what}: cannot listen ({e.strerror or e})",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        for n in nodes:
            views.append(WebView(n.machine, port=0, realtime=realtime,
                                 pollers=pollers if not views else (), title=n.name))
    except OSError as e:
        return give_up("--web", e)
    page = index_page([(n.name, v.url) for n, v in zip(nodes, views)])

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):                        # noqa: N802 - the http.server API
            if self.path not in ("/", "/index.html"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *a):
            pass
    try:
        httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    except OSError as e:
        return give_up(f"--web {port}", e)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    print(f"pinetime-emu: world view on http://127.0.0.1:{httpd.server_address[1]}/",
          file=sys.stderr, flush=True)
    lead, others = views[0], views[1:]
    lead._end_tick = None
    try:
        while not lead.closed and w.now < end:
            for v in others:
                v._between_slices()
            lead.frame()                          # runs the world through its machine
            for v in others:
                for h in v._held():
                    h.after_slice()
                v._collect_messages()
                v._flush_console()
                v._publish_screen()
                v._measure_speed()
                v._publish_status()
    finally:
        httpd.shutdown()
        httpd.server_close()
        for v in views:
            v.close()
    return EXIT_OK
