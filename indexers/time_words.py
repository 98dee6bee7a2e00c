"""Time words in a query ("last week", "in May", "two months ago", "the first time"), as
TimeML's TIMEX3 classes them, resolved against the search's `now` into a generous window
of creation times: it boosts, it does not filter."""

import re
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import NamedTuple

__all__ = ["TimeHint", "resolve_time"]

MONTHS = {
    name: i + 1
    for i, names in enumerate(
        "january jan|february feb|march mar|april apr|may|june jun|july jul|august aug|"
        "september sep sept|october oct|november nov|december dec".split("|")
    )
    for name in names.split()
}
WEEKDAYS = {d: i for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())}
NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2, "few": 3,
    "several": 3,
}  # fmt: skip
UNIT_DAYS = {"day": 1, "week": 7, "month": 30.44, "year": 365.25}
_NUM = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple|few|several)"
_UNIT = r"(day|week|month|year)s?"
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
TRIGGERS = frozenset(
    {"ago", "last", "past", "previous", "this", "yesterday", "today", "tonight", "first"}
    | {"earliest", "initially", "originally", "recently", "recent", "lately", "other", "now"}
    | set(MONTHS)
    | set(WEEKDAYS)
)
"""Words at least one of which every time expression holds as a whole word (a month or
weekday name, "ago", "last", …; a year is a number, and "mid" may prefix a month):
a query without any is left as it is without compiling or running the patterns."""
_WORD = re.compile(r"\w+")
_DAY_ONLY = frozenset("jan feb mar apr jun jul aug sep oct nov dec".split())
"""Month abbreviations taken only with a day ("Mar 5"); "may" is mostly the verb."""


@cache
def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    """The expressions, compiled when a query first may hold one (a noticeable share of
    the start-up of a `pandafs search` that has none)."""
    return [
        ("ago", re.compile(rf"\b(?:about |around |roughly )?(?:a )?{_NUM} (?:of )?{_UNIT} ago\b")),
        ("past", re.compile(rf"\b(?:in |over |during )?the (?:last|past) {_NUM} {_UNIT}\b")),
        ("last_unit", re.compile(r"\b(?:last|past|previous) (day|week|weekend|month|year)\b")),
        ("this_unit", re.compile(r"\bthis (week|weekend|month|year)\b")),
        ("yesterday", re.compile(r"\byesterday\b")),
        ("today", re.compile(r"\b(?:today|tonight|this morning|this afternoon|this evening)\b")),
        (
            "date",
            re.compile(
                rf"\b(?:on |in |during |since )?({_MONTH})\.? (\d{{1,2}})(?:st|nd|rd|th)?\b"
                r"(?:,? (\d{4}))?"
            ),
        ),
        (
            "month",
            re.compile(
                rf"\b(?:in |during |since |back in )?(?:early |late |mid-?)?({_MONTH})\b" r"(?:,? (\d{4}))?"
            ),
        ),
        ("weekday", re.compile(r"\b(?:last |on |this past )?" rf"({'|'.join(WEEKDAYS)})\b")),
        (
            "first",
            re.compile(
                r"\b(?:the |my )?(?:very )?first (?:time|ever)\b"
                r"|\b(?:earliest|initially|originally|at first)\b"
            ),
        ),
        ("recent", re.compile(r"\b(?:recently|recent|lately|the other day|just now|the last time)\b")),
        ("iso", re.compile(r"\b(?:on |since )?(\d{4})-(\d{2})-(\d{2})\b")),
    ]


def _may_hold_time(lowered: str) -> bool:
    """False only if no pattern of `_patterns` can match `lowered` (see `TRIGGERS`)."""
    words = set(_WORD.findall(lowered))
    return not words.isdisjoint(TRIGGERS) or any(w.isdigit() or w.startswith("mid") for w in words)


class TimeHint(NamedTuple):
    """What the query says about *when*: a window of creation times and/or an order."""

    after: datetime | None = None
    before: datetime | None = None
    order: str | None = None  # "earliest" | "latest"


def _count(word: str) -> int:
    return int(word) if word.isdigit() else NUMBER_WORDS.get(word, 1)


def _month_start(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _shift_month(year: int, month: int, by: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + by
    return index // 12, index % 12 + 1


def resolve_time(text: str, now: datetime) -> tuple[str, TimeHint]:
    """The query without its time expressions, and the hint they resolve to at `now`."""
    lowered = text.lower().replace("’", "'")
    day = datetime(now.year, now.month, now.day, tzinfo=UTC)
    after: datetime | None = None
    before: datetime | None = None
    order: str | None = None

    def window(lo: datetime, hi: datetime) -> None:
        nonlocal after, before
        if after is None or lo > after:
            after = lo
        if before is None or hi < before:
            before = hi

    if not _may_hold_time(lowered):
        return lowered, TimeHint()
    for kind, pattern in _patterns():
        for m in list(pattern.finditer(lowered)):
            if (
                kind == "month"
                and m.group(1) == "may"
                and not re.search(r"\b(?:in|during|since) may\b|\bmay,? \d{4}", m.group(0))
            ):
                continue  # "may" is mostly the verb
            if kind == "month" and m.group(1) in _DAY_ONLY:
                continue  # abbreviations only with a day ("Mar 5")
            if kind == "ago":
                span = _count(m.group(1)) * UNIT_DAYS[m.group(2)]
                centre = now - timedelta(days=span)
                margin = timedelta(days=max(3.0, span * 0.35))
                window(centre - margin, centre + margin)
            elif kind == "past":
                window(
                    now - timedelta(days=_count(m.group(1)) * UNIT_DAYS[m.group(2)] + 1),
                    now + timedelta(days=1),
                )
            elif kind == "last_unit":
                unit = m.group(1)
                if unit == "day":
                    window(day - timedelta(days=2), now + timedelta(days=1))
                elif unit in ("week", "weekend"):
                    window(day - timedelta(days=14), day + timedelta(days=1))
                elif unit == "month":
                    y, mo = _shift_month(now.year, now.month, -1)
                    window(_month_start(y, mo) - timedelta(days=7), now + timedelta(days=1))
                else:
                    window(datetime(now.year - 1, 1, 1, tzinfo=UTC), now + timedelta(days=1))
            elif kind == "this_unit":
                span = {"week": 7, "weekend": 7, "month": 31, "year": 366}[m.group(1)]
                window(day - timedelta(days=span), now + timedelta(days=1))
            elif kind == "yesterday":
                window(day - timedelta(days=2), day + timedelta(days=1))
            elif kind == "today":
                window(day - timedelta(days=1), now + timedelta(days=1))
            elif kind == "iso":
                try:
                    at = datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), tzinfo=UTC)
                except ValueError:
                    continue
                window(at - timedelta(days=1), at + timedelta(days=2))
            elif kind == "date":
                month, dom = MONTHS[m.group(1)], int(m.group(2))
                year = int(m.group(3)) if m.group(3) else now.year
                try:
                    at = datetime(year, month, dom, tzinfo=UTC)
                except ValueError:
                    continue
                if not m.group(3) and at > now:
                    at = at.replace(year=year - 1)
                window(at - timedelta(days=3), at + timedelta(days=4))
            elif kind == "month":
                month = MONTHS[m.group(1)]
                year = int(m.group(2)) if m.group(2) else now.year
                if not m.group(2) and _month_start(year, month) > now:
                    year -= 1
                ny, nm = _shift_month(year, month, 1)
                window(
                    _month_start(year, month) - timedelta(days=3), _month_start(ny, nm) + timedelta(days=7)
                )
            elif kind == "weekday":
                back = (now.weekday() - WEEKDAYS[m.group(1)]) % 7 or 7
                at = day - timedelta(days=back)
                window(at - timedelta(days=1), at + timedelta(days=2))
            elif kind == "first":
                order = "earliest"
            elif kind == "recent":
                order = order or "latest"
            lowered = lowered[: m.start()] + " " * (m.end() - m.start()) + lowered[m.end() :]
    if after is not None and before is not None and after >= before:
        after = before = None  # contradictory expressions: no window
    return lowered, TimeHint(after, before, order)
