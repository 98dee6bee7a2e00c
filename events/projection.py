"""Fold a turn's events into a `TurnView`: a pure function, no I/O."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from .errors import ProjectionError
from .schema import (
    ContextRetrieved,
    ContextSynthesized,
    DocumentsUsed,
    Event,
    ExecutorStepped,
    ExtractionRecorded,
    FeedbackRecorded,
    Forgotten,
    MemoryCandidate,
    MemoryCommitted,
    MemoryDiscarded,
    MemoryStaged,
    PhaseFailed,
    PhaseMetrics,
    PlanCreated,
    QueryAnalyzed,
    ReflectionDecided,
    ResponseSynthesized,
    ScopeChanged,
    TierFailed,
    ToolExecuted,
    TornTailRepaired,
    TurnCompleted,
    TurnStarted,
    ValidationDecided,
)

__all__ = ["TurnView", "metrics_of", "project_turn"]


class Attempt(BaseModel):
    """One pass through planner → executor/coordinator → synthesis → validation."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    number: int
    plan: PlanCreated | None = None
    steps: tuple[ExecutorStepped, ...] = ()
    tools: tuple[ToolExecuted, ...] = ()
    response: ResponseSynthesized | None = None
    validation: ValidationDecided | None = None


class TurnView(BaseModel):
    """What a turn's events say, folded (`project_turn`).  Built when a caller validates one:
    `project_turn` assembles it from payloads its events have validated already."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    user: str
    turn: str
    started: TurnStarted
    analysis: QueryAnalyzed | None = None
    reflection: ReflectionDecided | None = None
    retrieval: ContextRetrieved | None = None
    context: ContextSynthesized | None = None
    attempts: tuple[Attempt, ...] = ()
    staged: tuple[MemoryCandidate, ...] = ()
    committed: tuple[MemoryCommitted, ...] = ()
    discarded: tuple[MemoryDiscarded, ...] = ()
    used: DocumentsUsed | None = None
    completed: TurnCompleted | None = None
    failures: tuple[PhaseFailed, ...] = ()
    feedback: tuple[FeedbackRecorded, ...] = ()
    extractions: tuple[ExtractionRecorded, ...] = ()
    unknown_types: tuple[str, ...] = ()
    event_count: int = 0
    last_hash: str = ""
    phase_ms: dict[str, float] = {}
    phase_tokens: dict[str, int] = {}

    @property
    def doc_id(self) -> str:
        return f"{self.user}/{self.turn}"

    @property
    def query(self) -> str:
        return self.started.query

    @property
    def occurred_at(self) -> datetime:
        return self.started.occurred_at

    @property
    def answer(self) -> str | None:
        if self.completed is not None and self.completed.answer is not None:
            return self.completed.answer
        for attempt in reversed(self.attempts):
            if attempt.response is not None:
                return attempt.response.answer
        if self.reflection is not None and self.reflection.decision == "CLARIFY":
            return self.reflection.clarification_question
        return None

    @property
    def last_validation(self) -> ValidationDecided | None:
        return next((a.validation for a in reversed(self.attempts) if a.validation is not None), None)

    @property
    def outcome(self) -> str | None:
        return self.completed.outcome if self.completed else None

    @property
    def is_import(self) -> bool:
        return self.started.source == "import"

    def tool_calls(self) -> list[ToolExecuted]:
        return [tool for attempt in self.attempts for tool in attempt.tools]


def metrics_of(data: Any) -> PhaseMetrics | None:
    """The phase metrics an event's data carries; None for a kind that has none (asked of its
    class: `getattr` on the instance would raise and catch inside pydantic)."""
    return data.metrics if "metrics" in type(data).__pydantic_fields__ else None


_LATEST: dict[type, str] = {
    QueryAnalyzed: "analysis",
    ReflectionDecided: "reflection",
    ContextRetrieved: "retrieval",
    ContextSynthesized: "context",
    DocumentsUsed: "used",
    TurnCompleted: "completed",
}
"""The kinds a turn holds one of (the last one counts), by their `TurnView` field."""
_LISTED: dict[type, str] = {
    MemoryCommitted: "committed",
    MemoryDiscarded: "discarded",
    PhaseFailed: "failures",
    FeedbackRecorded: "feedback",
    ExtractionRecorded: "extractions",
}
"""The kinds a turn holds several of, in order, by their `TurnView` field."""
_OF_ATTEMPT: dict[type, str] = {
    PlanCreated: "plan",
    ResponseSynthesized: "response",
    ValidationDecided: "validation",
}
_SILENT = (TornTailRepaired, TierFailed, ScopeChanged, Forgotten)
"""Kinds recorded for verify, the learning rows and the chain that project to nothing."""


def project_turn(events: Sequence[Event]) -> TurnView:
    """Fold events (in seq order) into the view of their turn."""
    if not events:
        raise ProjectionError("a turn needs at least its turn_started event")
    first = events[0]
    if not isinstance(first.data, TurnStarted):
        raise ProjectionError(f"{first.user}/{first.turn}: first event is {first.type!r}")
    state: dict[str, Any] = {"user": first.user, "turn": first.turn, "started": first.data}
    attempts: dict[int, dict[str, Any]] = {}
    lists: dict[str, list[Any]] = {k: [] for k in ("staged", *_LISTED.values())}
    unknown: list[str] = []
    phase_ms: dict[str, float] = {}
    phase_tokens: dict[str, int] = {}
    for event in events[1:]:
        data = event.data
        kind: type = type(data)
        if not event.known:
            unknown.append(event.type)
            continue
        metrics = metrics_of(data)
        if metrics is not None and (metrics.duration_ms or metrics.tokens_in or metrics.tokens_out):
            phase_ms[event.phase] = round(phase_ms.get(event.phase, 0.0) + metrics.duration_ms, 3)
            tokens = metrics.tokens_in + metrics.tokens_out
            phase_tokens[event.phase] = phase_tokens.get(event.phase, 0) + tokens
        if isinstance(data, ToolExecuted):
            phase_ms[event.phase] = round(phase_ms.get(event.phase, 0.0) + data.duration_ms, 3)
        if kind in _LATEST:
            state[_LATEST[kind]] = data
        elif kind in _LISTED:
            lists[_LISTED[kind]].append(data)
        elif isinstance(data, MemoryStaged):
            lists["staged"].append(data.candidate)
        elif isinstance(
            data, PlanCreated | ExecutorStepped | ToolExecuted | ResponseSynthesized | ValidationDecided
        ):
            attempt = attempts.setdefault(data.attempt, {"number": data.attempt, "steps": [], "tools": []})
            if kind in _OF_ATTEMPT:
                attempt[_OF_ATTEMPT[kind]] = data
            else:
                attempt["steps" if kind is ExecutorStepped else "tools"].append(data)
        elif isinstance(data, TurnStarted):
            raise ProjectionError(f"{event.user}/{event.turn}: second turn_started at seq {event.seq}")
        elif not isinstance(data, _SILENT):
            unknown.append(event.type)
    last = events[-1]
    state.update({k: tuple(v) for k, v in lists.items()})
    state["attempts"] = tuple(
        Attempt.model_construct(**{**a, "steps": tuple(a["steps"]), "tools": tuple(a["tools"])})
        for _, a in sorted(attempts.items())
    )
    return TurnView.model_construct(
        **state,
        unknown_types=tuple(unknown),
        event_count=len(events),
        last_hash=last.hash,
        phase_ms=phase_ms,
        phase_tokens=phase_tokens,
    )
