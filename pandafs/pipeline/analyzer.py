"""Phases 0-1 (REFLEX): the Query Analyzer resolves references, classifies, picks topic and
keywords; Reflection decides PROCEED or CLARIFY, the user's purpose and data needs."""

from __future__ import annotations

from events.layout import turn_number
from events.projection import TurnView
from events.schema import ContentReference, FeedbackRecorded, Payload, QueryAnalyzed, ReflectionDecided

from ..memory.turn_records import TurnReader
from ..tasks.schemas import AnalyzeIn, AnalyzeOut, PriorTurn, ReflectIn, ReflectOut
from ..turns import read_metadata
from .context import RECORD_CACHE, TurnContext

__all__ = ["analyze", "reflect"]


def recent_turns(ctx: TurnContext, count: int) -> list[PriorTurn]:
    """The user's last `count` completed turns before this one, oldest first (hot memory)."""
    out: list[PriorTurn] = []
    reader = TurnReader(ctx.vault, ctx.user, ctx.extras.get(RECORD_CACHE))  # their text: context.md
    for path in ctx.vault.layout.recent_turn_dirs(ctx.user, ctx.turn, count):
        meta = read_metadata(ctx.vault.root, path)
        if meta is None:
            continue
        ref = meta.get("content_reference")
        record = reader.live(turn_number(path.name))
        if record is None:
            continue
        out.append(
            PriorTurn(
                turn=path.name,
                query=record.query,
                answer=record.body[:600],
                subject=meta.get("subject"),
                content_reference=ContentReference.model_validate(ref) if ref else None,
            )
        )
    return list(reversed(out))


def analyze(ctx: TurnContext, view: TurnView) -> list[Payload]:
    recent = recent_turns(ctx, ctx.config.tiers.hot_turns)
    out: AnalyzeOut = ctx.think(
        "analyze_query", AnalyzeIn(query=view.query, recent_turns=recent, topics=ctx.config.topics)
    )
    reference = out.content_reference
    if reference is not None and reference.doc_id is None:
        reference = reference.model_copy(update={"doc_id": f"{ctx.user}/{reference.source_turn}"})
    as_said = out.model_dump(exclude={"resolved_query", "content_reference", "primary_topic", "feedback"})
    analyzed = QueryAnalyzed(
        **as_said,
        resolved_query=out.resolved_query or view.query,
        content_reference=reference,
        primary_topic=out.primary_topic or "general",
    )
    events: list[Payload] = [analyzed]
    if out.feedback is not None and recent:
        events.append(
            FeedbackRecorded(target_turn=recent[-1].turn, status=out.feedback, signal=view.query[:200])
        )
    return events


def reflect(ctx: TurnContext, view: TurnView) -> list[Payload]:
    assert view.analysis is not None
    analysis = AnalyzeOut.model_validate(view.analysis.model_dump())
    out: ReflectOut = ctx.think("reflect", ReflectIn(query=view.query, analysis=analysis))
    question = out.clarification_question
    if out.decision == "CLARIFY" and not question:
        question = "Could you say a little more about what you need?"
    decided = out.model_dump(exclude={"clarification_question"})
    return [
        ReflectionDecided(**decided, clarification_question=question if out.decision == "CLARIFY" else None)
    ]
