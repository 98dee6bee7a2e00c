"""Render one imported turn in memory: its event log, projected files and index document parts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from events.log import encode_events
from events.projection import project_turn
from events.render import context_parts, render_turn
from events.schema import ResponseSynthesized, TurnCompleted, TurnStarted, parse_event

from .lines import ImportLine

__all__ = ["TurnFiles", "turn_files"]

# (events.jsonl bytes, {projected file: bytes}, context.md frontmatter, context.md body)
TurnFiles = tuple[bytes, dict[str, bytes], dict[str, Any], str]


def turn_files(user: str, turn: str, line: ImportLine, *, ts: datetime) -> TurnFiles:
    """The files of `turn` holding `line` as three events (turn_started,
    response_synthesized, turn_completed) stamped `ts`, and their projections —
    rendered from the parsed events, exactly as a replay of the log would render them."""
    started = TurnStarted(
        query=line.query,
        source="import",
        occurred_at=line.timestamp,
        external_id=line.external_id,
        meta=line.meta,
    )
    words = line.query.split()
    completed = TurnCompleted(
        outcome="IMPORTED", summary=" ".join(words[:24]), query_type="imported", quality=0.5
    )
    log, records = encode_events(
        user, turn, [started, ResponseSynthesized(answer=line.response), completed], ts=ts
    )
    view = project_turn([parse_event(r) for r in records])
    front, body = context_parts(view)
    return log, render_turn(view, parts=(front, body)), front, body
