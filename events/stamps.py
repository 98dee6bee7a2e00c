"""The one timestamp form in our files (kept apart from the event log so reading a
document's dates does not load the event schemas)."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["format_ts"]


def format_ts(ts: datetime) -> str:
    """ISO-8601 UTC with microseconds and a `Z`, the one timestamp form in our files."""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return ts.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
