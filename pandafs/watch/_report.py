"""What a watch run did: inbox results, index counts, upkeep results, problems."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from indexers.sync import SyncReport

from ..inbox import InboxReport
from ._upkeep import UpkeepResult


@dataclass
class WatchReport:
    """What a watch run did (cumulative for the foreground loop)."""

    inbox: InboxReport = field(default_factory=InboxReport)
    index: dict[str, int] = field(
        default_factory=lambda: {"indexed": 0, "deleted": 0, "unchanged": 0, "skipped": 0}
    )
    reconciles: int = 0
    documents: int = 0
    upkeep: list[UpkeepResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (
            self.problems
            or self.inbox.of("failed")
            or self.inbox.of("rejected")
            or any(u.status == "error" for u in self.upkeep)
        )

    def add_sync(self, report: SyncReport) -> None:
        self.index["indexed"] += report.indexed
        self.index["deleted"] += report.deleted
        self.index["unchanged"] += report.unchanged
        self.index["skipped"] += len(report.skipped)
        if report.documents:
            self.documents = report.documents

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "inbox": self.inbox.as_json(),
            "index": {**self.index, "documents": self.documents, "reconciles": self.reconciles},
            "upkeep": [u.as_json() for u in self.upkeep],
            "problems": self.problems,
            "seconds": round(self.seconds, 3),
        }
