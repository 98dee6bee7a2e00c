"""Errors of the record layer (events, documents, vault layout), each an `EventsError`.
`is_bad_input` tells the CLI whether the fault is in what the user gave us (exit 2) or in
what we found on disk (exit 1)."""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ChangedMeanwhile",
    "ChainError",
    "EventLogError",
    "EventsError",
    "FrontmatterError",
    "InvalidUserId",
    "LogBusyError",
    "NotInVault",
    "ProjectionError",
    "TornTailError",
    "json_problem",
]


class EventsError(Exception):
    """Root of every error raised by the `events` package."""

    is_bad_input = False


class ClockOutOfRange(EventsError):
    """The machine's clock is outside the times PandaFS records (`events.clock.TIME_RANGE`)."""


class InvalidUserId(EventsError, ValueError):
    """A user id that would not be a safe folder name."""

    is_bad_input = True

    def __init__(self, user: object, reason: str) -> None:
        self.user = user
        super().__init__(
            f"invalid user id {user!r}: {reason} "
            "(use 1-64 characters of a-z, 0-9, '_' or '-', starting with a letter or digit)"
        )


class FrontmatterError(EventsError):
    """YAML frontmatter that cannot be parsed (names file and line)."""

    def __init__(self, path: Path | str, line: int, message: str) -> None:
        self.path = str(path)
        self.line = line
        super().__init__(f"{path}:{line}: broken frontmatter: {message} (fix the YAML by hand)")


class NotInVault(EventsError):
    """A vault path that is a link (itself or a folder on its way), resolves outside the vault,
    or is not a regular file: never read, or one user could read another's files."""

    is_bad_input = True

    def __init__(self, rel: str, reason: str, *, action: str = "read") -> None:
        self.rel = rel
        self.reason = reason
        super().__init__(f"{rel}: {reason}; not {action}")


class EventLogError(EventsError):
    def __init__(self, path: Path | str, message: str) -> None:
        self.path = str(path)
        super().__init__(f"{path}: {message}")


class TornTailError(EventLogError):
    """The log ends in an incomplete line; `pandafs verify --repair` moves it aside."""


class ChainError(EventLogError):
    """A seq gap, a bad hash or a broken prev link (names file and seq)."""

    def __init__(self, path: Path | str, seq: int, message: str) -> None:
        self.seq = seq
        super().__init__(path, f"seq {seq}: {message}")


class LogBusyError(EventLogError):
    """A second writer tried to append to a log that another process is writing."""


class ProjectionError(EventsError):
    """Events that cannot be folded into a turn view."""


class ChangedMeanwhile(EventsError):
    """A file changed between being read and being replaced by what was made from it (a
    person's editor takes no lock of ours): nothing was written over their change."""

    def __init__(self, path: Path | str, attempts: int = 1) -> None:
        self.path = str(path)
        tries = f" {attempts} times" if attempts > 1 else ""
        super().__init__(
            f"{path} changed{tries} while it was being rewritten; nothing was written (try again)"
        )


def json_problem(raw: bytes, exc: Exception) -> str:
    """Why `raw` is no JSON, in the user's terms: bytes that are not UTF-8 (an export saved
    as Latin-1) by their offset, where the parser would say "surrogates not allowed" at
    line 1 column 1; anything else in the parser's own words."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"not valid UTF-8 (byte {bad.start})"
    return f"not valid JSON: {exc}"
