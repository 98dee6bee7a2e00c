"""What became of each inbox file: one result a file, and the report of a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class InboxResult:
    """What became of one file."""

    source: str
    status: Literal["answered", "rejected", "deferred", "failed"]
    user: str | None = None
    turn: str | None = None
    outcome: str | None = None
    answer: str | None = None
    query_file: str | None = None
    rejected: str | None = None
    error_file: str | None = None
    reason: str | None = None
    message: str | None = None
    recovered: bool = False
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"source": self.source, "status": self.status}
        if self.status == "answered":
            data.update(
                user=self.user,
                turn_id=self.turn,
                doc_id=f"{self.user}/{self.turn}",
                outcome=self.outcome,
                answer=self.answer,
                query_file=self.query_file,
            )
        elif self.status == "rejected":
            data.update(
                rejected=self.rejected,
                error_file=self.error_file,
                reason=self.reason,
                message=self.message,
            )
        else:
            data.update(reason=self.reason, message=self.message)
        data["recovered"] = self.recovered
        data["seconds"] = round(self.seconds, 4)
        return data

    def describe(self) -> str:
        """One log line."""
        again = " (resumed after a crash)" if self.recovered else ""
        if self.status == "answered":
            return (
                f"answered {self.source} → {self.answer} "
                f"[{self.outcome}] {self.user}/{self.turn} in {self.seconds:.2f} s{again}"
            )
        if self.status == "rejected":
            return f"rejected {self.source} → {self.rejected or self.error_file}: {self.message}{again}"
        return f"{self.status} {self.source}: {self.message}"


@dataclass
class InboxReport:
    results: list[InboxResult] = field(default_factory=list)

    def of(self, status: str) -> list[InboxResult]:
        return [r for r in self.results if r.status == status]

    def as_json(self) -> dict[str, Any]:
        return {
            "answered": [r.as_json() for r in self.of("answered")],
            "rejected": [r.as_json() for r in self.of("rejected")],
            "failed": [r.as_json() for r in self.of("failed")],
            "deferred": [r.as_json() for r in self.of("deferred")],
            "recovered": sum(1 for r in self.results if r.recovered),
        }
