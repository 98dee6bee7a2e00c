"""Importing a chat history: its format's reader converts it, `turn_import.import_turns` does the rest."""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from indexers.documents import IndexDoc, Skipped

from ..errors import BadInput
from ..turn_import import import_turns
from ..vault import Vault
from ._common import Conversion
from .chatgpt import read_chatgpt
from .claude import read_claude
from .claude_code import read_claude_code


@dataclass
class HistoryReport:
    """What an import did, and its `account` of every conversation and message of the export."""

    format: str
    source: str
    conversations: int = 0
    turns: int = 0
    imported: int = 0
    completed: int = 0
    skipped: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    account: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 3)}

    def account_lines(self) -> list[str]:
        """The account in words, as the human output prints it."""
        conv, msg = self.account["conversations"], self.account["messages"]
        lines = [
            f"conversations: {conv['seen']} seen: {conv['new']} new, {conv['grown']} went on or grew, "
            f"{conv['already_present']} already present"
            + (f", {conv['nothing_imported']} with nothing to import" if conv["nothing_imported"] else ""),
            f"messages: {msg['seen']} seen: {msg['imported']} imported, {msg['already_present']} already "
            f"present, {sum(msg['skipped'].values())} skipped",
        ]
        lines += [f"  skipped, {reason}: {count}" for reason, count in sorted(msg["skipped"].items())]
        if self.account["not_messages"]:
            kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(self.account["not_messages"].items()))
            lines.append(f"not messages (kept out of the answers, counted): {kinds}")
        return lines


READERS: dict[str, Callable[[Path, str, int, Conversion], Conversion]] = {
    "chatgpt": read_chatgpt,
    "claude": read_claude,
    "claude-code": read_claude_code,
}
FORMATS = tuple(READERS)


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
    """Import one export for `user`: its reader converts it (each file at most [index]
    import_max_bytes) into import-turns lines, then `import_turns` does the rest."""
    if fmt not in READERS:
        raise BadInput(f"unknown format {fmt!r} (use one of {', '.join(FORMATS)})")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pandafs-import-") as tmp:
        staged = Path(tmp) / "turns.jsonl"
        with staged.open("wb") as sink:  # lines as the export is read: it is never held whole
            conversion = READERS[fmt](path, user, vault.config.index.import_max_bytes, Conversion(sink=sink))
        report = HistoryReport(fmt, str(path), conversion.conversations, len(conversion.lines))
        report.failed = list(conversion.failed)
        tally = _Tally(conversion)
        if on_total is not None:
            on_total(report.turns)
        if report.turns:
            result = import_turns(vault, staged, progress=progress, after_batch=after_batch, on_line=tally)
            report.imported, report.skipped = result.imported, result.skipped
            report.completed = result.completed
            report.failed += [_named(conversion.lines, f) for f in result.failed]
    report.account = tally.account()
    report.seconds = time.perf_counter() - started
    return report


class _Tally:
    """The account of an import: what became of each line, over its messages and conversations."""

    def __init__(self, conversion: Conversion) -> None:
        self.conversion = conversion
        self.messages = {"imported": 0, "already_present": 0}
        self.skipped = Counter(conversion.skipped)
        self.by_conversation: dict[int, set[str]] = {}

    def __call__(self, number: int, outcome: str, held: int = 0) -> None:
        _, count, owner = self.conversion.lines[number - 1]
        self.by_conversation.setdefault(owner, set()).add(outcome)
        if outcome == "new":
            self.messages["imported"] += count
        elif outcome == "present":
            self.messages["already_present"] += count
        elif outcome == "completed":
            before = min(held, count)
            self.messages["already_present"] += before
            self.messages["imported"] += count - before
        else:
            self.skipped["failed (named in `failed`)"] += count

    def account(self) -> dict[str, Any]:
        outcomes = self.by_conversation.values()
        new = sum(1 for o in outcomes if o == {"new"} or o == {"new", "failed"})
        grown = sum(1 for o in outcomes if "completed" in o or ("new" in o and "present" in o))
        present = sum(1 for o in outcomes if o == {"present"})
        conversations = self.conversion.conversations
        return {
            "conversations": {
                "seen": conversations,
                "new": new,
                "grown": grown,
                "already_present": present,
                "nothing_imported": conversations - new - grown - present,
            },
            "messages": {
                "seen": self.conversion.messages,
                **self.messages,
                "skipped": dict(sorted(self.skipped.items())),
            },
            "not_messages": dict(sorted(self.conversion.not_messages.items())),
        }


def _named(lines: list[tuple[str, int, int]], failure: dict[str, Any]) -> dict[str, str]:
    line = failure.get("line")
    entry = lines[line - 1][0] if isinstance(line, int) and 0 < line <= len(lines) else f"line {line}"
    return {"entry": entry, "error": str(failure.get("error"))}
