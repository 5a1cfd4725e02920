"""What the seeded fuzz tests (tests/fuzz/test_fuzz_*.py) share: a per-case time
bound and hostile values.  Every fuzz test uses a fixed seed and a fixed
number of cases, so a failure names a case that can be run again."""
from __future__ import annotations

import contextlib
import signal


class CaseTooSlow(Exception):
    pass


@contextlib.contextmanager
def time_bound(seconds: float, what: str):
    """Raise CaseTooSlow in the body after ``seconds`` (wall clock).  Python-level
    loops are interrupted; a hang inside C code is left to pytest-timeout."""
    def alarm(signum, frame):
        raise CaseTooSlow(f"{what}: still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# values that have broken parsers before: huge and non-finite numbers, wrong
# types, text that is not what it seems
HOSTILE_NUMBERS = ["-1", "0", "1e309", "-1e309", ".inf", "-.inf", ".nan", "1.0e+30", "2e3",
                   "9" * 400, "-" + "9" * 400, "18446744073709551616", "0x7fffffff",
                   "4503599627371", "1.5", "1_000", "0o777", "+1", "~", "true", "[]", "{}"]
HOSTILE_TEXT = ["", " ", "\\x00", "\\ud800", "\\u202e", "é", "\\x1b[2J", "a\\nb", "x" * 300,
                "%s%n", "../../etc/passwd", "'", '"', "*", "&", "!", "|", ">", "#", "@"]
