"""Render one imported turn in memory: its event log, projected files and index document parts."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import orjson

from events.log import encode_events
from events.projection import project_turn
from events.render import context_parts, render_turn
from events.schema import (
    ContextBlock,
    ContextSynthesized,
    Payload,
    ResponseSynthesized,
    TurnCompleted,
    TurnStarted,
    parse_event,
)

from .lines import ImportLine
from .threads import THREAD_HEADING

__all__ = ["TurnFiles", "context_blocks", "held_digest", "line_digest", "size_bound", "turn_files"]

# (events.jsonl bytes, {projected file: bytes}, context.md frontmatter, context.md body)
TurnFiles = tuple[bytes, dict[str, bytes], dict[str, Any], str]


SUMMARY_CHARS = 240
OVERHEAD = 8192
"""What a turn's context.md holds besides the line's texts: frontmatter, headings, its
title and summary (each bounded), the conversation's links."""


def size_bound(line: ImportLine) -> int:
    """At least the bytes of the context.md `line` renders to: checked against the index's
    limit before any number is reserved for it."""
    texts = [line.query, line.response, *(c.heading + c.text for c in line.context)]
    return sum(len(t.encode()) for t in texts) + 2 * len(orjson.dumps(line.meta or {})) + OVERHEAD


def held_digest(answer: str, blocks: list[ContextBlock]) -> str:
    """What an imported turn holds of its line — the answer and the context that came with
    the question (not its links) — as a digest: a line whose digest differs has grown."""
    kept = [[b.heading, b.text] for b in blocks if b.heading != THREAD_HEADING]
    return hashlib.sha256(orjson.dumps([answer, kept])).hexdigest()[:16]


def line_digest(line: ImportLine) -> str:
    return held_digest(line.response, context_blocks(line, None))


def context_blocks(line: ImportLine, thread: ContextBlock | None) -> list[ContextBlock]:
    """§2 of an imported turn: what came with the question, then its place in its conversation."""
    blocks = [ContextBlock(heading=c.heading, text=c.text) for c in line.context]
    return blocks + ([thread] if thread is not None else [])


def turn_files(
    user: str, turn: str, line: ImportLine, *, ts: datetime, thread: ContextBlock | None = None
) -> TurnFiles:
    """The files of `turn` holding `line` as events stamped `ts`, and their projections,
    exactly as a replay of the log would render them."""
    started = TurnStarted(
        query=line.query,
        source="import",
        occurred_at=line.timestamp,
        external_id=line.external_id,
        meta=line.meta,
    )
    completed = TurnCompleted(
        outcome="IMPORTED",
        summary=" ".join(line.query.split()[:24])[:SUMMARY_CHARS],
        query_type="imported",
        quality=0.5,
    )
    blocks = context_blocks(line, thread)
    payloads: list[Payload] = [started]
    if blocks:
        payloads.append(ContextSynthesized(blocks=blocks))
    payloads += [ResponseSynthesized(answer=line.response), completed]
    log, records = encode_events(user, turn, payloads, ts=ts)
    view = project_turn([parse_event(r) for r in records])
    front, body = context_parts(view)
    return log, render_turn(view, parts=(front, body)), front, body
