"""The emulator as a test bench: wait for things a firmware does, in emulated time.

    from emu import Machine
    from frontends.testbench import wait_for_text, wait_for_symbol
    m = Machine("firmware/build/cpu_exceptions.elf", board="nrf52832")
    wait_for_symbol(m, "main", timeout_ms=10)
    wait_for_text(m, "PASS cpuid", timeout_ms=100)

Every ``wait_for_*`` runs the machine (in emulated time, never host time)
until its condition holds, and returns the emulated time in seconds at
which it held.  On timeout it raises :class:`ExpectationFailed` carrying the
emulated time and what was seen instead (the console tail, the pixel's
colour, the pin's level, where the PC was), so a failing test says why.

Boot once, test many: :func:`booted` returns a machine in the state a
firmware reaches after ``boot_ms``; the first call for a (firmware, board,
options, boot_ms) boots and saves a snapshot (emu/snapshot.py), later calls
restore it, so every test starts from the same booted state without paying
for the boot.  ``machine.save_snapshot(path)`` / ``Machine.from_snapshot``
are the underlying API.

Screen regions: :func:`lit_count` (pixels in a box whose brightest channel
is above a threshold), :func:`wait_for_region` (until that count is within
bounds), :func:`region_diff` and :func:`wait_for_screen_change` (against an
earlier ``screen(machine).copy()``).  The phone (``machine.phone``):
:func:`wait_for_phone_text` and :func:`wait_for_phone_message` search from an
offset/index and return where the match ended, so a caller can move a cursor.

PNG helpers (:func:`write_png`, :func:`read_png`, :func:`compare_png`) are
self-contained (zlib only): 8-bit RGB/RGBA/grey, non-interlaced.

The PineTime board API (``board.screen()``, ``board.touch``,
``board.button``, ``board.motor``) is looked up with getattr; a board
without one of them gives a clear :class:`BoardFeatureMissing` error.

Not modelled / limits:
- ``wait_for_symbol`` stops at the end of the translation block holding the
  symbol's first instruction (``request_stop`` acts at block boundaries), so
  the PC may already be a few instructions past the symbol when it returns;
  the recorded time is the slice time at the hit.
- PNG: no 16-bit depth, palette or interlaced images.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional, Sequence

from emu.clock import TICKS_PER_MS, TICKS_PER_SECOND


class ExpectationFailed(AssertionError):
    """A ``wait_for``/``expect`` did not hold; ``seen`` says what was there instead."""

    def __init__(self, what: str, seen: str, time_s: float):
        self.what = what
        self.seen = seen
        self.time_s = time_s
        super().__init__(f"{what}: not met by t={time_s:.6f} s; saw {seen}")


class BoardFeatureMissing(ExpectationFailed):
    """The board has no such device (e.g. a screen on the bare nRF52832 board)."""

    def __init__(self, machine, feature: str):
        name = getattr(machine, "board_name", type(machine.board).__name__)
        super().__init__(f"board feature {feature!r}",
                         f"board {name!r} has no {feature} (use board 'pinetime' once it "
                         f"provides one)", machine.clock.now / TICKS_PER_SECOND)


# ----------------------------------------------------------------------
# waiting
# ----------------------------------------------------------------------
def _t(machine) -> float:
    return machine.clock.now / TICKS_PER_SECOND


def wait_until(machine, predicate: Callable[[], bool], timeout_ms: float, what: str,
               seen: Callable[[], str]) -> float:
    """Run ``machine`` until ``predicate()``; ExpectationFailed(what, seen()) on timeout.

    Also fails early (with the stop reason) when the firmware exits, locks
    up or faults before the condition holds.
    """
    end = machine.clock.now + int(round(timeout_ms * TICKS_PER_MS))
    step = max(1, TICKS_PER_MS)
    while True:
        if predicate():
            return _t(machine)
        if machine.clock.now >= end:
            break
        r = machine.run(until_tick=min(end, machine.clock.now + step), stop=predicate)
        if r.reason in ("exit", "lockup", "fault", "power-lost"):
            if predicate():
                return _t(machine)
            extra = f" (exit code {r.exit_code})" if r.reason == "exit" else ""
            raise ExpectationFailed(what, f"{seen()}; the firmware stopped: {r.reason}{extra}",
                                    _t(machine))
        if r.reason == "sleep":
            # asleep with nothing scheduled: nothing can change any more
            break
    raise ExpectationFailed(what, seen(), _t(machine))


def _tail(text: str, n: int = 200) -> str:
    t = text[-n:]
    return repr(("..." if len(text) > n else "") + t) if text else "no console output"


def wait_for_text(machine, text: str, timeout_ms: float) -> float:
    """Run until ``text`` appears anywhere in the console (semihosting + ITM)."""
    return wait_until(machine, lambda: text in machine.console_text(), timeout_ms,
                      f"console text {text!r}", lambda: "console " + _tail(machine.console_text()))


def expect_text(machine, text: str) -> float:
    """``text`` must already be in the console (no running)."""
    return wait_for_text(machine, text, 0)


def _pin(machine, pin: int):
    pins = machine.soc.pins
    if not 0 <= pin < len(pins):
        raise ValueError(f"no pin {pin} (0..{len(pins) - 1})")
    return pins[pin]


def wait_for_pin(machine, pin: int, level: int, timeout_ms: float) -> float:
    """Run until package pin P0.``pin`` reads ``level`` (0 or 1)."""
    p = _pin(machine, pin)
    want = bool(level)

    def seen() -> str:
        drivers = p.driven_by() if hasattr(p, "driven_by") else []
        return f"P0.{pin:02d} = {int(bool(p.level))}" + (
            f" (driven by {', '.join(map(str, drivers))})" if drivers else " (not driven)")
    return wait_until(machine, lambda: bool(p.level) == want, timeout_ms,
                      f"P0.{pin:02d} == {int(want)}", seen)


def wait_for_symbol(machine, name: str, timeout_ms: float) -> float:
    """Run until the PC reaches symbol ``name`` (an ELF function or label)."""
    from unicorn import UC_HOOK_CODE
    try:
        addr = machine.symbol(name) & ~1
    except KeyError as e:
        raise ExpectationFailed(f"PC reaches {name}", str(e.args[0]), _t(machine)) from None
    hit: list = []

    def on_code(uc, address, size, user_data):
        if not hit:
            hit.append(machine.cpu.sync_time())
        machine.cpu.request_stop()

    uc = machine.cpu.uc
    h = uc.hook_add(UC_HOOK_CODE, on_code, begin=addr, end=addr)
    try:
        def seen() -> str:
            pc = machine.cpu.pc
            where = machine.describe_address(pc)
            return f"PC={pc:#010x}" + (f" ({where})" if where else "")
        wait_until(machine, lambda: bool(hit), timeout_ms, f"PC reaches {name} ({addr:#010x})",
                   seen)
    finally:
        uc.hook_del(h)
    return hit[0] / TICKS_PER_SECOND


# ----------------------------------------------------------------------
# screen
# ----------------------------------------------------------------------
def screen(machine):
    """The board's screen as an (H, W, 3) uint8 array; BoardFeatureMissing if none."""
    import numpy as np
    fn = getattr(machine.board, "screen", None)
    if fn is None or not callable(fn):
        raise BoardFeatureMissing(machine, "screen")
    return np.asarray(fn())


def _rgb(value) -> tuple:
    if isinstance(value, str):
        s = value.lstrip("#")
        return tuple(int(s[i:i + 2], 16) for i in (0, 2, 4))
    return tuple(int(v) for v in value)


def wait_for_pixel(machine, x: int, y: int, rgb, timeout_ms: float,
                   tolerance: int = 0) -> float:
    """Run until screen pixel (x, y) is ``rgb`` (each channel within ``tolerance``)."""
    want = _rgb(rgb)
    screen(machine)     # fail now, clearly, if the board has none

    def px() -> tuple:
        return tuple(int(v) for v in screen(machine)[y, x][:3])
    return wait_until(machine, lambda: all(abs(a - b) <= tolerance for a, b in zip(px(), want)),
                      timeout_ms, f"pixel ({x},{y}) == #{'%02x%02x%02x' % want}",
                      lambda: "#%02x%02x%02x" % px())


def screen_region_equals(machine, x: int, y: int, w: int, h: int, expected,
                         tolerance: int = 0) -> bool:
    """True when screen[y:y+h, x:x+w] matches ``expected`` (array, or one RGB colour)."""
    import numpy as np
    region = screen(machine)[y:y + h, x:x + w, :3].astype(int)
    exp = np.asarray(expected, dtype=int)
    if exp.ndim == 1:
        exp = np.broadcast_to(exp[:3], region.shape)
    elif exp.shape != region.shape:
        return False
    return bool(np.all(np.abs(region - exp[..., :3]) <= tolerance))


def _box_slices(box: Sequence[int]) -> tuple:
    """(rows, columns) slices of ``box`` = (x, y, w, h), clipped at 0."""
    x, y, w, h = (int(v) for v in box)
    return slice(max(0, y), max(0, y + h)), slice(max(0, x), max(0, x + w))


def _box(machine, box: Sequence[int]):
    """screen[y:y+h, x:x+w] for ``box`` = (x, y, w, h), clipped to the screen."""
    return screen(machine)[_box_slices(box)][..., :3]


def lit_count(machine, box: Sequence[int], threshold: int = 64) -> int:
    """Pixels in ``box`` (x, y, w, h) whose brightest channel exceeds ``threshold``."""
    return int((_box(machine, box).max(axis=2) > threshold).sum())


def wait_for_region(machine, box: Sequence[int], timeout_ms: float, *,
                    min_lit: Optional[int] = None, max_lit: Optional[int] = None,
                    threshold: int = 64) -> float:
    """Run until the lit-pixel count of ``box`` is within [min_lit, max_lit]."""
    screen(machine)
    lo = 0 if min_lit is None else int(min_lit)
    hi = None if max_lit is None else int(max_lit)
    want = (f"{lo} <= " if min_lit is not None else "") + "lit" + (
        f" <= {hi}" if hi is not None else "")

    def ok() -> bool:
        n = lit_count(machine, box, threshold)
        return n >= lo and (hi is None or n <= hi)
    x, y, w, h = box
    return wait_until(machine, ok, timeout_ms,
                      f"{want} in box [{x}, {y}, {w}, {h}] (brightest channel > {threshold})",
                      lambda: f"lit = {lit_count(machine, box, threshold)} of {w * h} pixels")


def region_diff(before, after, box: Sequence[int], tolerance: int = 0) -> tuple:
    """(differing pixel count, bounding box or None) of ``box`` between two screens."""
    import numpy as np
    x, y = int(box[0]), int(box[1])
    sl = _box_slices(box)
    d = np.abs(np.asarray(before)[sl][..., :3].astype(int)
               - np.asarray(after)[sl][..., :3].astype(int)).max(axis=2) > tolerance
    n = int(d.sum())
    if not n:
        return 0, None
    ys, xs = np.nonzero(d)
    return n, (int(xs.min()) + max(0, x), int(ys.min()) + max(0, y),
               int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1))


def wait_for_screen_change(machine, reference, box: Sequence[int], timeout_ms: float,
                           tolerance: int = 0) -> float:
    """Run until ``box`` of the screen differs from the same box of ``reference``
    (an earlier ``screen(machine).copy()``) by more than ``tolerance`` somewhere."""
    x, y, w, h = box
    return wait_until(machine, lambda: region_diff(reference, screen(machine), box,
                                                   tolerance)[0] > 0, timeout_ms,
                      f"box [{x}, {y}, {w}, {h}] changes", lambda: "no pixel changed")


# ----------------------------------------------------------------------
# PNG
# ----------------------------------------------------------------------
def write_png(path: str, array) -> None:
    """Save an (H, W), (H, W, 3) or (H, W, 4) uint8 array as a PNG (Pillow),
    atomically (emu/outputs.py: the previous file stays whole until then)."""
    import io

    import numpy as np
    from PIL import Image

    from emu.outputs import atomic_write
    a = np.ascontiguousarray(np.asarray(array, dtype=np.uint8))
    mode = {2: "L"}.get(a.ndim) or {3: "RGB", 4: "RGBA", 1: "L"}[a.shape[2]]
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[..., 0]
    buf = io.BytesIO()
    Image.fromarray(a, mode).save(buf, format="PNG")
    atomic_write(path, buf.getbuffer())


def read_png(path: str):
    """Any PNG as an (H, W, 3) uint8 RGB array (emu.png.read_png)."""
    from emu.png import read_png as _read
    return _read(path)


class PngDiff:
    """Result of :func:`compare_png`; true when the images match."""

    def __init__(self, matches: bool, summary: str, differing: int = 0, max_delta: int = 0,
                 bbox: Optional[tuple] = None):
        self.matches = matches
        self.summary = summary
        self.differing = differing
        self.max_delta = max_delta
        self.bbox = bbox

    def __bool__(self) -> bool:
        return self.matches

    def __str__(self) -> str:
        return self.summary


def compare_png(actual, expected_png_path: str, tolerance: int = 0,
                masks: Iterable[Sequence[int]] = ()) -> PngDiff:
    """Compare an (H, W, 3) array with a PNG; pixels inside ``masks`` (x, y, w, h) are ignored.

    A pixel differs when any channel differs by more than ``tolerance``.
    """
    import numpy as np
    act = np.asarray(actual)[..., :3].astype(int)
    try:
        exp = read_png(expected_png_path).astype(int)
    except (OSError, ValueError) as e:
        return PngDiff(False, f"cannot read {expected_png_path}: {e}")
    if act.shape != exp.shape:
        return PngDiff(False, f"size differs: actual {act.shape[1]}x{act.shape[0]}, expected "
                              f"{exp.shape[1]}x{exp.shape[0]}")
    delta = np.abs(act - exp).max(axis=2)
    for (mx, my, mw, mh) in masks:
        delta[my:my + mh, mx:mx + mw] = 0
    bad = delta > tolerance
    n = int(bad.sum())
    if n == 0:
        return PngDiff(True, f"matches {expected_png_path} (tolerance {tolerance})")
    ys, xs = np.nonzero(bad)
    bbox = (int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1))
    y0, x0 = int(ys[0]), int(xs[0])
    return PngDiff(False, f"{n} pixels differ from {expected_png_path} (tolerance {tolerance}, "
                          f"max delta {int(delta.max())}, region x={bbox[0]} y={bbox[1]} "
                          f"w={bbox[2]} h={bbox[3]}; first at ({x0},{y0}): actual "
                          f"#{'%02x%02x%02x' % tuple(act[y0, x0])} expected "
                          f"#{'%02x%02x%02x' % tuple(exp[y0, x0])})",
                   n, int(delta.max()), bbox)


# ----------------------------------------------------------------------
# input devices (PineTime board API)
# ----------------------------------------------------------------------
def device(machine, name: str):
    """``machine.board.<name>`` (touch, button, motor...) or BoardFeatureMissing."""
    dev = getattr(machine.board, name, None)
    if dev is None:
        raise BoardFeatureMissing(machine, name)
    return dev


def motor_on(machine) -> bool:
    """Whether the vibration motor is on now (from ``board.motor``)."""
    motor = device(machine, "motor")
    for attr in ("on", "is_on", "running"):
        v = getattr(motor, attr, None)
        if v is not None:
            return bool(v() if callable(v) else v)
    timeline = getattr(motor, "timeline", None)
    if timeline:
        last = timeline[-1]
        return bool(last[1] if isinstance(last, (tuple, list)) else last)
    if timeline is not None:
        return False
    raise BoardFeatureMissing(machine, "motor state (motor.on or motor.timeline)")


# ---------------------------------------------------------------------------
# the phone (machine.phone: BLE central + Nordic UART, emu/phone/phone.py)
# ---------------------------------------------------------------------------
def phone(machine):
    """``machine.phone`` or BoardFeatureMissing (a board/firmware without the S132 layer)."""
    ph = getattr(machine, "phone", None)
    if ph is None:
        raise BoardFeatureMissing(machine, "phone (the emulated S132 SoftDevice)")
    return ph


def phone_tail(machine, start: int = 0, n: int = 200) -> str:
    """The last ``n`` bytes the watch sent to the phone since offset ``start``."""
    out = bytes(phone(machine).output[start:])
    if not out:
        return "no phone output" + (f" from byte {start} on" if start else "")
    return "phone output " + repr(out[-n:].decode("utf-8", "replace")
                                  if len(out) <= n else
                                  "..." + out[-n:].decode("utf-8", "replace"))


def wait_for_phone_text(machine, text, timeout_ms: float, start: int = 0) -> int:
    """Run until ``text`` (str or bytes) is in what the watch sent the phone from
    offset ``start``; returns the offset just past the first match."""
    ph = phone(machine)
    pat = text.encode() if isinstance(text, str) else bytes(text)
    wait_until(machine, lambda: ph.output.find(pat, start) >= 0, timeout_ms,
               f"phone text {pat.decode('utf-8', 'replace')!r}",
               lambda: phone_tail(machine, start))
    return ph.output.find(pat, start) + len(pat)


def wait_for_phone_message(machine, match: dict, timeout_ms: float, start: int = 0) -> int:
    """Run until a JSON message from the watch (``phone.messages[start:]``) holds
    every key/value of ``match``; returns its index."""
    ph = phone(machine)

    def find() -> int:
        for i in range(start, len(ph.messages)):
            msg = ph.messages[i]
            if all(k in msg and msg[k] == v for k, v in match.items()):
                return i
        return -1

    def seen() -> str:
        msgs = ph.messages[start:]
        return (f"messages {msgs[-5:]!r}" if msgs else "no message") + \
            (f" from message {start} on" if start else "") + "; " + phone_tail(machine)
    wait_until(machine, lambda: find() >= 0, timeout_ms, f"phone message with {match!r}", seen)
    return find()


# ---------------------------------------------------------------------------
# boot once, restore per test (snapshots)
# ---------------------------------------------------------------------------
_BOOT_CACHE: dict = {}


def booted(firmware: str, boot_ms: float, *, board: str = "pinetime",
           cache_dir: Optional[str] = None, **options):
    """A new Machine in the state ``firmware`` reaches after ``boot_ms`` of
    emulated time.  The boot runs once per process (per firmware file
    contents, board, options and ``boot_ms``); its snapshot is kept in
    ``cache_dir`` (default: a temporary directory) and restored for every
    later call.  On the PineTime the NOR flash is in memory unless
    ``flash_file`` is given."""
    import hashlib
    import os
    import tempfile
    from emu.machine import Machine
    if board == "pinetime":
        options.setdefault("flash_file", None)
    with open(firmware, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    key = (digest, board, float(boot_ms), tuple(sorted((k, repr(v)) for k, v in options.items())))
    path = _BOOT_CACHE.get(key)
    if path is not None and os.path.exists(path):
        return Machine.from_snapshot(path, firmware=firmware, **options)
    m = Machine(firmware, board=board, **options)
    m.run(ms=boot_ms)
    d = cache_dir or tempfile.mkdtemp(prefix="pinetime-emu-boot-")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"boot-{digest[:16]}-{board}-{boot_ms:g}ms.snap")
    m.save_snapshot(path)
    _BOOT_CACHE[key] = path
    return m
