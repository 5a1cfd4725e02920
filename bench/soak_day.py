"""A day on the wrist: 24 emulated hours of real wasp-os or InfiniTime in use,
with the energy model, the heap, the clock and the host's memory watched.

    python3 bench/soak_day.py wasp|infinitime [--hours 24] [--power FILE.csv]
                              [--power-interval 1] [--sample-minutes 30]
                              [--wall-minutes N]

The images as bench/soak_wasp.py and bench/bench_infinitime.py find them.
The watch boots from an erased NOR, the emulated phone connects (as
Gadgetbridge stays connected: for wasp-os the emulated SoftDevice's NUS,
after one soft reset as bench/soak_wasp.py does; for InfiniTime over the
air, emu/phone/gattphone.py) and sets the time to 08:00; then the energy
model starts (``machine.power()``, rows of ``--power-interval`` streamed to
``--power``, default bench/out/soak_day_<firmware>.csv) and the day runs,
minute by minute, on a fixed script (the same on every run):

* 08:00-23:00, awake: a notification every 5 minutes (from a fixed set of
  twelve senders and texts, taken in turn; see below; read on the phone
  3 minutes later: for wasp-os the phone then deletes it, Gadgetbridge's
  ``notify-``, as wasp-os keeps every notification in its heap until then;
  InfiniTime keeps the last five in a fixed ring and has no such message), 120 steps
  (``accel.walk``) every 10, and twice an hour a look at the watch: the
  wrist raised (the accelerometer swung from hanging to face up) and the
  button pressed (neither firmware wakes on the raise by default), the
  screen then left to time out by itself;
* 12:30 an incoming call (wasp-os: ended by the phone 20 s later; InfiniTime:
  the button dismisses it), 18:00 music playing (track info and state),
  19:00 paused;
* 23:00-08:00, asleep: nothing but the connection.

Why a fixed set of texts: Gadgetbridge gives wasp-os each notification as
a line of Python (``GB({...})``) typed at its REPL, and MicroPython's parser
interns every short string literal it meets in its qstr pool, which lives in
the heap and is never freed.  So each *distinct* title or text costs wasp-os
heap for the rest of its run (measured here, twenty notifications titled
``Message 1`` .. ``Message 20``: 25 more qstrs and a third pool, 1 024 B less
free after ``gc.collect()``; the same twenty with one title: flat).  That is
wasp-os and MicroPython as they are, not the emulator; ``--unique-texts``
numbers every title to show it.

Every ``--sample-minutes`` the script reads the firmware's heap
(``machine.heaps()``; for wasp-os after a ``gc.collect()`` over the REPL, so
garbage does not hide a leak), the watch's clock (wasp-os:
``wasp.watch.rtc.time()`` over the REPL; InfiniTime: the Current Time
Service read over the air) against emulated time, the host's resident memory
(VmRSS) and the battery: the charge the energy model has counted so far is
taken from the 170 mAh cell and the cell's voltage, fed to the SAADC, follows
it (this script's own linear 4.18 V full to 3.50 V empty: the model has no
discharge curve), so the firmware's battery gauge sees the day's drain.  A
fault, a reset or a stopped run ends the soak (exit status 1).

At the end: the wall time, the host's peak RSS, the heap at the start and
the end, the clock's largest drift, the battery used and the life it
implies, and the energy report (average, share per part).

Not a test: it prints what it saw; wall times depend on the host.
"""
from __future__ import annotations

import argparse
import calendar
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

WASP = Path.home() / ".cache" / "pinetime-emu" / "wasp-os" / "upstream" / "micropython.elf"
MESSAGES = [                     # (sender, text): the day's notifications, in turn
    ("Alice", "See you at the station at six?"),
    ("Bob", "Running ten minutes late"),
    ("Mum", "Call me when you can"),
    ("Team", "Stand-up moved to 10:30"),
    ("Carol", "Lunch?"),
    ("Calendar", "Dentist tomorrow at 9:00"),
    ("Dave", "Got the tickets!"),
    ("Bank", "Card payment of 12.40 EUR"),
    ("Erin", "Photos from Saturday"),
    ("Parcel", "Your parcel is out for delivery"),
    ("Frank", "ok"),
    ("Weather", "Rain from 16:00"),
]
DAY0 = calendar.timegm((2026, 12, 7, 8, 0, 0, 0, 0, 0))     # 08:00, the day's start
V_FULL, V_EMPTY = 4.18, 3.50


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Watch:
    """What the script does with one firmware: set-up, actions, readings."""

    def __init__(self, m):
        self.m = m
        self.p = m.phone


class Wasp(Watch):
    name = "wasp-os"

    def setup(self) -> None:
        m, p = self.m, self.p
        m.run(seconds=5.0)
        p.connect()
        # Two soft resets, the time set between them.  The first because
        # wasp-os's first boot leaves its REPL answering MemoryError to every
        # line (docs/firmware.md); the second because wasp-os keeps its clock
        # across a soft reset (PNVRAM at 0x200039C0), so it boots knowing the
        # time, as a watch worn for a while does.  Set only after the boot,
        # the clock would jump from wasp-os's default (2020-03-01) to 2026
        # and the step logger, started at boot, would catch up one 6-minute
        # period a second all day, a day's step file every 30 s: the CPU's
        # load grows from 0.5 to 2 mA in the first 90 minutes and the NOR
        # fills.  wasp-os's own behaviour after a first time set, measured
        # here; not what a day on the wrist looks like.
        from emu.phone.wasptool import rtc_line
        for set_first in (False, True):
            if set_first:
                p.repl(rtc_line(time.gmtime(DAY0)), timeout_ms=8000)
            start = len(p.output)
            p.send(b"\x04")                          # soft reset, then reconnect
            m.run_until(lambda: not p.central.connected, timeout_ms=3000)
            p.connect(timeout_ms=8000)
            if not p.wait_for(b">>> ", start=start, timeout_ms=8000):
                raise RuntimeError("no REPL prompt after the soft reset")
        p.repl("import gc, wasp")
        p.set_time(DAY0)
        p.flush()
        m.run(seconds=1)
        t = int(p.repl("print(wasp.system.steps._t)").strip())
        if abs(t - (DAY0 - 946684800)) > 600:             # (MicroPython's epoch: 2000)
            raise RuntimeError(f"the step logger started at {t}, not the day's time")

    def heap(self):
        self.p.repl("gc.collect()")
        h = self.m.heaps()
        return h[0] if h else None

    def clock(self) -> int:
        return int(self.p.repl("print(wasp.watch.rtc.time())").strip())

    def battery(self) -> str:
        return self.p.repl("print(wasp.watch.battery.level())").strip() + " %"

    def steps(self):
        return int(self.p.repl("print(wasp.watch.accel.steps)").strip())

    def call(self) -> None:
        self.p.incoming_call("Alice", "+44 20 7946 0000")
        self.m.run(seconds=20)
        self.p.end_call()

    def dismiss(self, nid: int) -> None:
        self.p.send_gb({"t": "notify-", "id": nid})


class InfiniTime(Watch):
    name = "InfiniTime"

    def setup(self) -> None:
        m, p = self.m, self.p
        m.run(seconds=3.0)
        p.connect()
        p.set_time(DAY0)
        m.run(seconds=1)

    def heap(self):
        h = self.m.heaps()
        return h[0] if h else None

    def clock(self) -> int:
        from emu.phone.gattphone import CTS_CURRENT_TIME
        g = self.p.gatt
        v = g._do(g.gatt.read(CTS_CURRENT_TIME), "read time")
        y = int.from_bytes(v[:2], "little")
        return calendar.timegm((y, v[2], v[3], v[4], v[5], v[6], 0, 0, 0))

    def battery(self) -> str:
        return f"{self.p.battery()} %"

    def steps(self):
        return self.p.steps()

    def call(self) -> None:
        self.p.incoming_call("Alice", "+44 20 7946 0000")
        self.m.run(seconds=20)
        self.m.board.button.hold(ms=100)

    def dismiss(self, nid: int) -> None:
        pass                      # a fixed ring of five; the ANS has no delete


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("firmware", choices=("wasp", "infinitime"))
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--power", default=None, help="the record's CSV (default "
                    "bench/out/soak_day_<firmware>.csv)")
    ap.add_argument("--power-interval", type=float, default=1.0)
    ap.add_argument("--sample-minutes", type=int, default=30)
    ap.add_argument("--unique-texts", action="store_true",
                    help="number every notification's title (Message 1, 2, ...): on "
                         "wasp-os each distinct string stays interned in the heap")
    ap.add_argument("--wall-minutes", type=float, default=None,
                    help="end the day early, at the first emulated minute after this many "
                         "minutes of wall time (a loaded host cannot always give a whole "
                         "day); the summary says how far it got")
    a = ap.parse_args()
    if not 0 < a.hours <= 24 * 7 or a.sample_minutes < 1 or a.power_interval < 0:
        print("soak_day: --hours must be in (0, 168], --sample-minutes >= 1, "
              "--power-interval >= 0", file=sys.stderr)
        return 2
    if a.firmware == "wasp":
        path = os.environ.get("PINETIME_EMU_WASP_IMAGE") or str(WASP)
        if not Path(path).exists():
            print(f"soak_day: no wasp-os image: set PINETIME_EMU_WASP_IMAGE or build one into "
                  f"{WASP.parent} (docs/firmware.md, 'Real wasp-os')", file=sys.stderr)
            return 2
    else:
        from bench_infinitime import image
        path = image()
    out = Path(a.power) if a.power else ROOT / "bench" / "out" / f"soak_day_{a.firmware}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)

    from emu import Machine
    from emu.clock import TICKS_PER_SECOND
    from emu.phone.errors import PhoneError
    from frontends import power_output

    wall0 = time.perf_counter()
    m = Machine(path, flash_file=None)
    # a full cell from power-on: InfiniTime measures it 1.5 s after boot and
    # afterwards only ever lowers its percentage while not charging (its
    # BatteryController), so a first reading at the model's default 3.9 V
    # would hold its gauge at 66 % all day
    m.board.battery.voltage = V_FULL
    w = (Wasp if a.firmware == "wasp" else InfiniTime)(m)
    w.setup()
    resets0 = m.resets
    meter = m.power(interval=a.power_interval)
    stream = power_output.CsvStream(meter, str(out))
    bat = m.board.battery
    bat.voltage = V_FULL
    t0 = m.clock.now
    print(f"soak_day: {w.name} ({path}); set up in {time.perf_counter() - wall0:.1f} s wall; "
          f"the day starts at 08:00, emulated t={t0 / TICKS_PER_SECOND:.1f} s", flush=True)
    watch0 = w.clock()
    heap0 = w.heap()
    level0 = w.battery()
    t_watch0 = m.clock.now
    print("  time   wall s  RSS MB  heap free (min ever)   clock drift  used mAh  volts  "
          "average", flush=True)
    samples = []
    failures = []
    walked = notified = 0
    unread = []                   # (minute, id): notifications the phone deletes then
    wall_day = time.perf_counter()
    minutes = int(round(a.hours * 60))
    problem = None
    problem_free_cut = ""
    for k in range(minutes):
        hour = (8 + k // 60) % 24
        awake = 8 <= hour < 23
        try:
            while unread and unread[0][0] <= k:
                w.dismiss(unread.pop(0)[1])
            if awake and k % 5 == 4:
                notified += 1
                sender, text = MESSAGES[(notified - 1) % len(MESSAGES)]
                if a.unique_texts:
                    sender = f"Message {notified}"
                nid = w.p.notify(sender, text)
                unread.append((k + 3, nid))
            if awake and k % 10 == 2:
                m.board.accel.walk(120)
                walked += 120
            if awake and k % 30 in (7, 22):
                m.board.accel.set_orientation(0.0, -1.0, 0.0)    # the arm hanging
                m.run(seconds=0.4)
                m.board.accel.set_orientation(0.0, 0.0, 1.0)     # raised, face up
                m.board.button.hold(ms=100)
            if k == 270:
                w.call()
            if k == 600:
                w.p.music_info("Nina Simone", "Feeling Good", "I Put a Spell on You")
                w.p.music_state(True)
            if k == 660:
                w.p.music_state(False)
        except (PhoneError, RuntimeError) as e:
            failures.append(f"{hour:02d}:{k % 60:02d} {type(e).__name__}: {e}")
            print(f"  failure: {failures[-1]}", flush=True)
        target = t0 + (k + 1) * 60 * TICKS_PER_SECOND
        r = m.run(seconds=max(0, target - m.clock.now) / TICKS_PER_SECOND)
        used_mAh = float(meter.charge_uC()) / 3.6e6
        bat.voltage = max(V_EMPTY, V_FULL - (V_FULL - V_EMPTY) * used_mAh / 170)
        if not r.ok or m.resets != resets0 or 3 <= m.cpu._ipsr <= 6:
            problem = (f"{hour:02d}:{k % 60:02d}: run {r.reason} {r.info} resets "
                       f"{m.resets - resets0} IPSR {m.cpu._ipsr}")
            break
        cut = a.wall_minutes is not None and time.perf_counter() - wall_day > a.wall_minutes * 60
        if (k + 1) % a.sample_minutes == 0 or k + 1 == minutes or cut:
            try:
                heap = w.heap()
                drift = (w.clock() - watch0) - (m.clock.now - t_watch0) / TICKS_PER_SECOND
            except (PhoneError, RuntimeError, ValueError) as e:
                failures.append(f"sample at minute {k + 1}: {type(e).__name__}: {e}")
                print(f"  failure: {failures[-1]}", flush=True)
                heap, drift = None, float("nan")
            rep = meter.report()
            hh, mm = (8 + (k + 1) // 60) % 24, (k + 1) % 60
            samples.append((k + 1, heap, drift, rss_mb(), used_mAh))
            print(f"  {hh:02d}:{mm:02d} {time.perf_counter() - wall_day:8.0f} {rss_mb():7.1f}  "
                  f"{_heap(heap):22s} {drift:+8.1f} s {used_mAh:9.3f}  {bat.voltage:.3f}  "
                  f"{rep.average_uA / 1000:.3f} mA", flush=True)
        if cut:
            minutes = k + 1
            problem_free_cut = f"; ended by --wall-minutes {a.wall_minutes:g} at minute {k + 1}"
            break
    wall = time.perf_counter() - wall_day
    stream.close()
    emulated = (m.clock.now - t0) / TICKS_PER_SECOND
    rep = meter.report()
    print(f"soak_day: {w.name}: {emulated / 3600:.2f} emulated hours in {wall:.0f} s of wall "
          f"time ({emulated / wall:.1f}x real time){problem_free_cut}"
          f"{'; PROBLEM ' + problem if problem else ''}")
    print(f"  host: peak RSS {peak_rss_mb():.1f} MB; RSS at the first sample "
          f"{samples[0][3] if samples else 0:.1f} MB, at the end {rss_mb():.1f} MB; "
          f"the meter keeps {meter.kept_rows} rows ({meter.kept_interval_s:g} s each), "
          f"{stream.rows} rows written to {out}")
    heaps = [s[1] for s in samples if s[1] is not None]
    if heap0 is not None and heaps:
        frees = [h.free for h in heaps]
        print(f"  heap ({heap0.kind}): free {heap0.free} B at the start, {heaps[-1].free} B at "
              f"the end, lowest sample {min(frees)} B, highest {max(frees)} B"
              + (f"; minimum ever free {heaps[-1].min_ever_free} B"
                 if heaps[-1].min_ever_free is not None else ""))
    drifts = [s[2] for s in samples if s[2] == s[2]]
    if drifts:
        print(f"  watch clock against emulated time: largest drift {max(drifts, key=abs):+.1f} s "
              f"(read with 1 s resolution)")
    try:
        steps = w.steps()
    except (PhoneError, RuntimeError, ValueError) as e:
        steps = f"unread ({e})"
    try:
        level = w.battery()
    except (PhoneError, RuntimeError, ValueError) as e:
        level = f"unread ({e})"
    used = float(meter.charge_uC()) / 3.6e6
    print(f"  use: {notified} notifications, {walked} steps walked (the watch counts {steps}), "
          f"{sum(1 for k in range(minutes) if (8 <= (8 + k // 60) % 24 < 23) and k % 30 in (7, 22))}"
          f" looks, {1 if minutes > 270 else 0} call; {len(failures)} phone failures")
    for f in failures[:10]:
        print(f"    {f}")
    print(f"  battery: {used:.2f} mAh of {rep.battery_mAh} mAh used ({used / rep.battery_mAh:.1%}),"
          f" the cell at {bat.voltage:.3f} V; the watch's gauge read {level0} at the start, "
          f"{level} at the end")
    for line in power_output.power_lines(meter, top=8):
        print("  " + line)
    return 1 if problem else 0


def _heap(h) -> str:
    if h is None:
        return "?"
    return f"{h.free} ({h.min_ever_free})" if h.min_ever_free is not None else f"{h.free}"


if __name__ == "__main__":
    sys.exit(main())
