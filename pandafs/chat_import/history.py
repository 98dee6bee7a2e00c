"""Importing a chat history: the reader for its format converts the export, then
`turn_import.import_turns` does the rest, exactly as for `pandafs import-turns`."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from indexers.documents import IndexDoc, Skipped

from ..errors import BadInput
from ..turn_import import import_turns
from ..vault import Vault
from ._common import Conversion
from .chatgpt import read_chatgpt
from .claude import read_claude
from .claude_code import read_claude_code

FORMATS = ("chatgpt", "claude", "claude-code")


@dataclass
class HistoryReport:
    format: str
    source: str
    conversations: int = 0
    turns: int = 0
    imported: int = 0
    skipped: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "source": self.source,
            "conversations": self.conversations,
            "turns": self.turns,
            "imported": self.imported,
            "skipped": self.skipped,
            "failed": self.failed,
            "seconds": round(self.seconds, 3),
        }


READERS: dict[str, Callable[[Path, str], Conversion]] = {
    "chatgpt": read_chatgpt,
    "claude": read_claude,
    "claude-code": read_claude_code,
}


def convert(fmt: str, path: Path, user: str) -> Conversion:
    """Read an export into import-turns lines (nothing is written)."""
    if fmt not in READERS:
        raise BadInput(f"unknown format {fmt!r} (use one of {', '.join(FORMATS)})")
    return READERS[fmt](path, user)


def import_history(
    vault: Vault,
    fmt: str,
    path: Path,
    user: str,
    *,
    on_total: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
    after_batch: Callable[[list[IndexDoc | Skipped]], None] | None = None,
) -> HistoryReport:
    """Import one export for `user`: convert it, then `import_turns` does the rest."""
    started = time.perf_counter()
    conversion = convert(fmt, path, user)
    report = HistoryReport(fmt, str(path), conversion.conversations, len(conversion.lines))
    report.failed = list(conversion.failed)
    if on_total is not None:
        on_total(len(conversion.lines))
    if conversion.lines:
        with tempfile.TemporaryDirectory(prefix="pandafs-import-") as tmp:
            staged = Path(tmp) / "turns.jsonl"
            staged.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in conversion.lines))
            result = import_turns(vault, staged, progress=progress, after_batch=after_batch)
        report.imported, report.skipped = result.imported, result.skipped
        report.failed += [_named(conversion.labels, f) for f in result.failed]
    report.seconds = time.perf_counter() - started
    return report


def _named(labels: list[str], failure: dict[str, Any]) -> dict[str, str]:
    line = failure.get("line")
    entry = labels[line - 1] if isinstance(line, int) and 0 < line <= len(labels) else f"line {line}"
    return {"entry": entry, "error": str(failure.get("error"))}
