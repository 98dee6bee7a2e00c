"""What the memory API refuses from its callers (the CLI, the tools, scripts): each check
raises `BadInput` naming the value, so every door says the same thing about it."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from events.clock import TIME_RANGE, aware, out_of_range
from events.doctypes import TOPIC_RE

from ..errors import BadInput

__all__ = ["check_times", "check_topic", "check_ttl"]


def check_ttl(hours: float, now: datetime, name: str) -> None:
    """A TTL is a positive, finite number of hours whose expiry stays in `TIME_RANGE`."""
    if not (math.isfinite(hours) and hours > 0):
        raise BadInput(f"{name} must be a positive number of hours, not {hours!r}")
    latest = (TIME_RANGE[1] - aware(now)) / timedelta(hours=1)
    if hours > latest:
        raise BadInput(f"{name} {hours:g} is too long: a memory must expire by {TIME_RANGE[1].year}")


def check_topic(topic: str) -> None:
    """A topic is dot-separated lowercase words: one a document can carry, so a filter
    with any other would match nothing, silently."""
    if not TOPIC_RE.fullmatch(topic):
        raise BadInput(f"bad topic {topic!r}: use dot-separated lowercase words, e.g. pet.hamster")


def check_times(**times: datetime | None) -> None:
    """Each time given is inside `TIME_RANGE` (the `--now` rule, for every time a search takes)."""
    for name, when in times.items():
        if when is not None and (problem := out_of_range(when)) is not None:
            raise BadInput(f"{name}: {problem}")
