"""A catalog row: what one completed turn was about, how it went, what it cost.
`TurnRow` is the row; the catalog's Arrow schema is derived from it."""

import operator
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_core import to_jsonable_python

from events.layout import turn_number
from events.projection import TurnView, metrics_of
from events.schema import Event, PhaseFailed, ScopeChanged

__all__ = ["PHASES", "RowValues", "TurnRow", "row_values", "turn_row", "turn_row_values"]


class TurnRow(BaseModel):
    """One row of the catalog: what a turn was about, how it went, what it cost."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built when rows are written

    user: str
    turn: str
    turn_number: int
    created_at: datetime
    date: date
    source: str
    topic: str
    query_type: str | None
    outcome: str
    validation: str | None
    quality: float
    attempts: int
    revisions: int
    ms_total: float
    ms_query_analyzer: float | None
    ms_reflection: float | None
    ms_context_gatherer: float | None
    ms_planner: float | None
    ms_executor: float | None
    ms_coordinator: float | None
    ms_synthesis: float | None
    ms_validation: float | None
    ms_save: float | None
    llm_calls: int
    tokens_in: int
    tokens_out: int
    tool_calls: int
    tool_errors: int
    tools: list[str]
    sources_used: int
    memory_committed: int
    scope_changes: int
    failures: int
    feedback_on: str | None
    feedback_status: str | None
    has_research: bool


PHASES = tuple(n.removeprefix("ms_") for n in TurnRow.model_fields if n.startswith("ms_") and n != "ms_total")
"""The phases whose time a row keeps (`ms_{phase}`), in the order they run."""


def _row_fields(view: TurnView, events: Sequence[Event]) -> dict[str, Any]:
    """The catalog fields of a completed turn (a pure function of its events)."""
    created = view.occurred_at.astimezone(UTC)
    analysis, completed = view.analysis, view.completed
    validations = [a.validation for a in view.attempts if a.validation is not None]
    llm_calls = tokens_in = tokens_out = scope_changes = failures = 0
    for event in events:
        data = event.data
        metrics = metrics_of(data)
        if metrics is not None:
            llm_calls += metrics.llm_calls
            tokens_in += metrics.tokens_in
            tokens_out += metrics.tokens_out
        if isinstance(data, ScopeChanged):
            scope_changes += 1
        elif isinstance(data, PhaseFailed):
            failures += 1
    tools = view.tool_calls()
    feedback = view.feedback[-1] if view.feedback else None
    ms = {f"ms_{p}": None if view.phase_ms.get(p) is None else float(view.phase_ms[p]) for p in PHASES}
    return {
        "user": view.user,
        "turn": view.turn,
        "turn_number": turn_number(view.turn),
        "created_at": created,
        "date": created.date(),
        "source": view.started.source,
        "topic": analysis.primary_topic if analysis else "conversation",
        "query_type": analysis.query_type if analysis else (completed.query_type if completed else None),
        "outcome": view.outcome or "INCOMPLETE",
        "validation": validations[-1].decision if validations else None,
        "quality": float(completed.quality) if completed else 0.5,
        "attempts": len(view.attempts),
        "revisions": max(0, len(validations) - 1),
        "ms_total": float(round(sum(view.phase_ms.values()), 3)),
        **ms,
        "llm_calls": llm_calls,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "tool_calls": len(tools),
        "tool_errors": sum(1 for t in tools if not t.ok),
        "tools": [t.tool for t in tools],
        "sources_used": len(view.used.doc_ids) if view.used else 0,
        "memory_committed": len(view.committed),
        "scope_changes": scope_changes,
        "failures": failures,
        "feedback_on": feedback.target_turn if feedback else None,
        "feedback_status": feedback.status if feedback else None,
        "has_research": bool(completed.has_research) if completed else False,
    }


def turn_row(view: TurnView, events: Sequence[Event]) -> dict[str, Any]:
    """The catalog row of a completed turn (a pure function of its events) in its JSON form,
    as it waits for the catalog; `TurnRow` validates it when the catalog is written."""
    return to_jsonable_python(_row_fields(view, events))  # type: ignore[no-any-return]


def turn_row_values(view: TurnView, events: Sequence[Event]) -> "RowValues":
    """`row_values(turn_row(view, events))` without building the model (a rebuild makes
    one per turn of the vault; the fields are typed already, from the events)."""
    fields = _row_fields(view, events)
    return tuple(fields[name] for name in _NAMES)


RowValues = tuple[Any, ...]
"""A row's values in `CATALOG_SCHEMA` order: what a rebuild keeps of every turn's row
(a `TurnRow` model costs several times the memory of its values)."""

_NAMES = tuple(TurnRow.model_fields)
row_values: Callable[[TurnRow], RowValues] = operator.attrgetter(*_NAMES)
