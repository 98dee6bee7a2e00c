"""Phase 1 — Reflection (REFLEX): PROCEED or CLARIFY, the user's purpose, data needs."""

from __future__ import annotations

from events.projection import TurnView
from events.schema import Payload, ReflectionDecided

from ..tasks.schemas import AnalyzeOut, ReflectIn, ReflectOut
from .context import TurnContext

__all__ = ["run"]


def run(ctx: TurnContext, view: TurnView) -> list[Payload]:
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
