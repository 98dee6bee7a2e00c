"""The one wall clock of PandaFS.

Entry points read it once and hand `now` down.  `PANDAFS_CLOCK_SHIFT` (`365d`, `-12h`,
`90m`) shifts it for the whole system, subprocesses included: how the tests check that
nothing depends on today's date."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta

from .errors import ClockOutOfRange

__all__ = ["SHIFT_ENV", "TIME_RANGE", "aware", "clock_shift", "out_of_range", "utcnow"]

SHIFT_ENV = "PANDAFS_CLOCK_SHIFT"
_SHIFT = re.compile(r"^\s*([+-]?\d+)\s*([dhms])\s*$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}

TIME_RANGE = (datetime(1900, 1, 1, tzinfo=UTC), datetime(9000, 12, 31, 23, 59, 59, tzinfo=UTC))
"""The times PandaFS takes from outside (a `--now`, a batch line's `now`, an expiry):
windows, TTLs and time words ("next year") are added to them, so they stay far from
`datetime`'s own limits."""


def clock_shift() -> timedelta:
    """The shift the environment names; empty means none.  A malformed value is an error:
    a test run that believes it moved the clock must have."""
    text = os.environ.get(SHIFT_ENV, "")
    if not text.strip():
        return timedelta(0)
    match = _SHIFT.match(text)
    if match is None:
        raise ValueError(f"{SHIFT_ENV}={text!r}: expected a number and a unit d/h/m/s, e.g. 365d")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def utcnow() -> datetime:
    """Timezone-aware UTC now, shifted by PANDAFS_CLOCK_SHIFT.  A clock outside `TIME_RANGE`
    is refused (`ClockOutOfRange`), never clamped."""
    now = datetime.now(UTC) + clock_shift()
    problem = out_of_range(now)
    if problem is not None:
        why = f"the clock says {problem}: set the system clock (or {SHIFT_ENV}); nothing was written"
        raise ClockOutOfRange(why)
    return now


def aware(moment: datetime) -> datetime:
    """`moment` with a zone: a naive one is UTC, as every timestamp of the vault is."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def out_of_range(moment: datetime) -> str | None:
    """Why `moment` (naive = UTC) is outside `TIME_RANGE`, or None when it is inside."""
    low, high = TIME_RANGE
    if low <= aware(moment) <= high:
        return None
    return f"{moment.isoformat()} is out of range ({low.year}–{high.year})"
