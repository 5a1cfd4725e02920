"""Checks of the values the Python API is given (times, coordinates, rates).

Each returns the value (as int or float) or raises TypeError (not a number)
or ValueError (not finite, or out of range) with a message naming the
parameter, so a bad argument fails where it is passed, not later inside a
run.
"""
from __future__ import annotations

import math
import numbers
from typing import Optional


def number(name: str, v, lo: Optional[float] = None, hi: Optional[float] = None) -> float:
    """A finite real number in [lo, hi]."""
    t = type(v)     # (an int or a float first: numbers.Real's check is an ABC's, slow)
    if t is not float and t is not int and (isinstance(v, bool)
                                            or not isinstance(v, numbers.Real)):
        raise TypeError(f"{name} must be a number, not {type(v).__name__} {_short(v)}")
    f = float(v)
    if not math.isfinite(f):
        raise ValueError(f"{name} must be a finite number, not {v!r}")
    _range(name, v, lo, hi)
    return f


def integer(name: str, v, lo: Optional[int] = None, hi: Optional[int] = None) -> int:
    """An integer in [lo, hi]."""
    if type(v) is not int and (isinstance(v, bool) or not isinstance(v, numbers.Integral)):
        raise TypeError(f"{name} must be an integer, not {type(v).__name__} {_short(v)}")
    i = int(v)
    _range(name, i, lo, hi)
    return i


def _range(name: str, v, lo, hi) -> None:
    if lo is not None and v < lo or hi is not None and v > hi:
        if lo is not None and hi is not None:
            want = f"from {lo} to {hi}"
        elif lo is not None:
            want = f"at least {lo}"
        else:
            want = f"at most {hi}"
        raise ValueError(f"{name} must be {want}, not {_short(v)}")


def _short(v) -> str:
    r = repr(v)
    return r if len(r) <= 40 else r[:37] + "..."
