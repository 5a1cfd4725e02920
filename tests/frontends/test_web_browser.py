"""The web view in a real browser: Debian's Chromium, headless, driven by
Selenium through chromedriver (both installed by scripts/setup.sh, which
skips them where they cannot be installed: then these tests skip, saying
so).

Each test runs a WebView in a thread of this process (tests/helpers/web.py), so
it can look at the machine between two slices while the page shows it.  Our
firmware/tests/pinetime_web.c runs everywhere (see tests/frontends/test_web.py for
what it draws); the real wasp-os and InfiniTime images run when they are in
~/.cache/pinetime-emu (skipped otherwise).  One browser serves the module.
"""
from __future__ import annotations

import base64
import io
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from helpers.web import console, pause, running_view, screen, wait

WHITE = (255, 255, 255)
CACHE = Path.home() / ".cache" / "pinetime-emu"


def _find(*names):
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    return None


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                    "(pip install -e .[test])")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    chrome = os.environ.get("PINETIME_EMU_CHROMIUM") or _find("chromium", "chromium-browser",
                                                               "google-chrome")
    driver = os.environ.get("PINETIME_EMU_CHROMEDRIVER") or _find("chromedriver")
    if chrome is None or driver is None:
        pytest.skip("no Chromium or chromedriver: scripts/setup.sh installs Debian's chromium "
                    "and chromium-driver (or set PINETIME_EMU_CHROMIUM and "
                    "PINETIME_EMU_CHROMEDRIVER)")
    opts = Options()
    opts.binary_location = chrome
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1000", "--force-device-scale-factor=1",
              "--disable-extensions", "--no-first-run"):
        opts.add_argument(a)
    try:
        d = webdriver.Chrome(options=opts, service=Service(driver))
    except Exception as e:                       # noqa: BLE001 - a browser that cannot start
        pytest.skip(f"Chromium does not start here: {str(e).splitlines()[0][:200]}")
    d.set_script_timeout(20)
    yield d
    d.quit()


@pytest.fixture
def machine(fw):
    from emu import Machine
    m = Machine(fw("pinetime_web"), flash_file=None)
    m.run(ms=300)
    yield m
    m.close()


# ---------------------------------------------------------------- page helpers
def open_page(d, view):
    d.get(view.url)
    wait(lambda: d.execute_script("return window.pinetime.lastSeq") > 0, timeout=15,
         what="the first frame on the page")


def canvas(d) -> np.ndarray:
    """The canvas's own pixels (not the scaled picture)."""
    from PIL import Image
    url = d.execute_script("return document.getElementById('screen').toDataURL('image/png')")
    data = base64.b64decode(url.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def pixel(d, x, y) -> tuple:
    return tuple(d.execute_script(
        "return Array.from(document.getElementById('screen').getContext('2d')"
        ".getImageData(arguments[0], arguments[1], 1, 1).data.slice(0, 3))", x, y))


def shown_frame(d, seq):
    wait(lambda: d.execute_script("return window.pinetime.lastSeq") >= seq,
         what=f"frame {seq} on the page")


def text_of(d, element_id) -> str:
    return d.execute_script("return document.getElementById(arguments[0]).textContent",
                            element_id)


def at_panel(d, x, y):
    """Selenium's offset (from the canvas's centre) of panel pixel (x, y)."""
    el = d.find_element("id", "screen")
    r = d.execute_script("const r = arguments[0].getBoundingClientRect();"
                         "return [r.width, r.height, arguments[0].width, arguments[0].height]",
                         el)
    sx, sy = r[0] / r[2], r[1] / r[3]
    return el, int((x + 0.5) * sx - r[0] / 2), int((y + 0.5) * sy - r[1] / 2)


def click_panel(d, x, y):
    from selenium.webdriver import ActionChains
    el, dx, dy = at_panel(d, x, y)
    ActionChains(d).move_to_element_with_offset(el, dx, dy).click().perform()


def drag_panel(d, x0, y0, x1, y1, steps=4):
    from selenium.webdriver import ActionChains
    el, dx, dy = at_panel(d, x0, y0)
    _el, ex, ey = at_panel(d, x1, y1)
    a = ActionChains(d).move_to_element_with_offset(el, dx, dy).click_and_hold()
    for i in range(steps):
        a.move_by_offset((ex - dx) // steps, (ey - dy) // steps)
    a.release().perform()


# ---------------------------------------------------------------- our firmware
def test_the_page_shows_the_watch_s_pixels_crisply(browser, machine):
    d = browser
    with running_view(machine) as view:
        open_page(d, view)
        seq = pause(view)
        shown_frame(d, seq)
        expected = screen(view)
        got = canvas(d)
        assert got.shape == (240, 240, 3)
        assert np.array_equal(got, expected), f"{(got != expected).any(axis=2).sum()} pixels differ"
        assert expected.max() > 0
        style = d.execute_script("const s = getComputedStyle(document.getElementById('screen'));"
                                 "return [s.width, s.imageRendering]")
        assert style == ["480px", "pixelated"]             # 2x, nearest neighbour
        assert "pinetime web demo running" in text_of(d, "console")
        wait(lambda: "1 tab" in text_of(d, "status"), what="the status line")


def test_a_click_taps_the_watch_and_a_drag_swipes(browser, machine):
    d = browser
    with running_view(machine) as view:
        open_page(d, view)
        click_panel(d, 120, 40)
        wait(lambda: "touch 5 120 40" in console(view), what="the tap at (120, 40)")
        wait(lambda: pixel(d, 120, 40) == WHITE, what="the white square on the page")
        wait(lambda: "touch 5 120 40" in text_of(d, "console"), what="the console pane")
        before = pixel(d, 10, 10)
        drag_panel(d, 120, 200, 120, 60)
        wait(lambda: "touch 2 " in console(view), what="the swipe up")
        wait(lambda: pixel(d, 10, 10) != before, what="the repainted background")
        assert pixel(d, 10, 10)[2] > 150                  # blue: a swipe up


def test_the_side_button(browser, machine):
    from selenium.webdriver import ActionChains
    d = browser
    with running_view(machine) as view:
        open_page(d, view)
        side = d.find_element("id", "side")
        ActionChains(d).click_and_hold(side).perform()
        wait(lambda: view.call(lambda: machine.board.button.pressed), what="the press")
        wait(lambda: pixel(d, 1, 120) == WHITE, what="the frame drawn while held")
        ActionChains(d).release().perform()
        wait(lambda: not view.call(lambda: machine.board.button.pressed), what="the release")
        assert "button" in console(view)


def test_a_phone_notification_appears(browser, machine):
    d = browser
    with running_view(machine) as view:
        open_page(d, view)
        title = d.find_element("id", "ntitle")
        title.clear()
        title.send_keys("Lunch?")
        d.find_element("id", "nsend").click()
        wait(lambda: "phone -> notification: Lunch?" in text_of(d, "log"), timeout=15,
             what="the log line")
        wait(lambda: pixel(d, 20, 30)[0] > 200 and pixel(d, 20, 30)[2] < 60,
             what="the orange banner on the page")
        wait(lambda: "connected" == text_of(d, "phonestate"), what="the phone's state")
        # the REPL pane: the firmware echoes what the phone writes
        from selenium.webdriver.support.ui import Select
        Select(d.find_element("id", "stream")).select_by_value("phone")
        d.find_element("id", "line").send_keys("hello from the page\n")
        wait(lambda: "hello from the page" in text_of(d, "console"), what="the echo")


def test_two_tabs_watch_one_emulator(browser, machine):
    d = browser
    with running_view(machine) as view:
        open_page(d, view)
        first = d.current_window_handle
        d.switch_to.new_window("tab")
        try:
            open_page(d, view)
            click_panel(d, 60, 200)                       # tapped in the second tab
            wait(lambda: "touch 5 60 200" in console(view), what="the tap")
            seq = pause(view)
            shown_frame(d, seq)
            second = canvas(d)
            d.switch_to.window(first)
            shown_frame(d, seq)
            assert np.array_equal(canvas(d), second)      # the first tab shows it too
            assert np.array_equal(second, screen(view))
            wait(lambda: "2 tabs" in text_of(d, "status"), what="two tabs counted")
        finally:
            d.switch_to.window(first)
            for h in d.window_handles:
                if h != first:
                    d.switch_to.window(h)
                    d.close()
            d.switch_to.window(first)


def test_the_nrf52dk_buttons(browser, fw):
    from emu import Machine
    from selenium.webdriver import ActionChains
    d = browser
    m = Machine(fw("board_nrf52dk"), board="nrf52dk")
    with running_view(m) as view:
        open_page(d, view)
        assert d.find_element("id", "side").is_displayed() is False
        assert d.find_element("id", "phone").is_displayed() is False
        b = d.find_element("id", "board-button-1")
        assert b.text == "2"
        ActionChains(d).click_and_hold(b).perform()
        wait(lambda: view.call(lambda: m.board.buttons[1].pressed), what="BUTTON2")
        ActionChains(d).release().perform()
        wait(lambda: not view.call(lambda: m.board.buttons[1].pressed), what="its release")
        seq = pause(view)
        shown_frame(d, seq)
        assert np.array_equal(canvas(d), screen(view))       # the board's picture


# ---------------------------------------------------------------- real firmware
def _image(env, *candidates):
    p = os.environ.get(env)
    if not p:
        found = [c for c in candidates if c.exists()]
        p = str(found[0]) if found else ""
    if not p or not Path(p).exists():
        pytest.skip(f"no image: set {env} or put it in {CACHE} (docs/firmware.md)")
    return p


def _real_firmware_in_the_page(d, m, swipe, boot_s):
    m.run(seconds=boot_s)
    with running_view(m) as view:
        open_page(d, view)
        seq = pause(view)
        shown_frame(d, seq)
        face = screen(view)
        assert np.array_equal(canvas(d), face)
        assert (face.max(axis=2) > 64).sum() > 1000          # a face is drawn
        view.call(lambda: view.set_paused(False))
        drag_panel(d, 120, 120, *swipe)
        wait(lambda: (canvas(d) != face).any(axis=2).sum() > 2000, timeout=20,
             what="the screen after the swipe")
        d.find_element("id", "nsend").click()
        wait(lambda: "phone -> notification" in text_of(d, "log"), timeout=30,
             what="the notification sent")


def test_wasp_os_in_the_page(browser):
    from emu import Machine
    p = _image("PINETIME_EMU_WASP_IMAGE", CACHE / "wasp-os" / "upstream" / "micropython.elf")
    m = Machine(p, flash_file=None)
    try:
        _real_firmware_in_the_page(browser, m, (120, 20), 5.0)    # swipe up: the launcher
    finally:
        m.close()


def test_infinitime_in_the_page(browser):
    from emu import Machine
    found = sorted((CACHE / "infinitime").glob("pinetime-app-*.out"))
    p = _image("PINETIME_EMU_INFINITIME_IMAGE", *found)
    m = Machine(p, flash_file=None)
    try:
        _real_firmware_in_the_page(browser, m, (120, 20), 3.0)    # swipe up: the menu
    finally:
        m.close()
