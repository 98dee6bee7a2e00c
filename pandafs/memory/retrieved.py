"""What `Memory.retrieve` returns (`Retrieved`), and an archived turn's original as an
archive source returns it (`Expansion`); `pandafs.assembly` wires the source in."""

from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple

__all__ = ["ArchiveSource", "Expansion", "Retrieved", "jsonable"]


class Retrieved(NamedTuple):
    """A document read by id or path: its metadata and content, and whether it is archived."""

    doc_id: str
    doc_path: str
    metadata: dict[str, Any]
    content: str
    archived: bool

    def as_json(self) -> dict[str, Any]:
        return self._asdict()


class Expansion(NamedTuple):
    """An archived turn's original context.md, as an archive source returns it."""

    doc_id: str
    stub_path: str
    frontmatter: dict[str, Any]
    body: str
    archive_file: str
    archived_at: datetime | None
    expansions: int
    restored: bool


ArchiveSource = Callable[[str, "datetime | None"], Expansion]
"""`archive(doc_id, now)`: an archived turn's original; FileNotFoundError once restored."""


def jsonable(value: Any) -> Any:
    """Frontmatter values as JSON: timestamps in the vault's format, keys as strings."""
    if isinstance(value, datetime):
        from events.stamps import format_ts

        return format_ts(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value
