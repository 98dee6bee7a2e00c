"""Phase 3 — Planner (MIND): todo list, tool requests, memory candidates (staged)."""

from __future__ import annotations

import re

from events.projection import TurnView
from events.schema import MemoryCandidate, MemoryStaged, Payload, PlanCreated, Todo

from ..tasks.schemas import PlanIn, PlanOut
from .context import TurnContext, context_text, feedback
from .tools import available_tools

__all__ = ["is_transient", "run"]

_URL = re.compile(r"https?://|www\.", re.IGNORECASE)
# € apart: a class holding it, $ and £ is built as a 64k-entry table
_PRICE = re.compile(r"[$£]\s?\d|€\s?\d|\d\s?(?:usd|eur|gbp|dollars|euros)\b", re.IGNORECASE)
_OWN = re.compile(r"^Their\b|\b(?:my|our)\b", re.IGNORECASE)


def is_transient(text: str) -> bool:
    """Prices and URLs are never memory: they go stale.  An amount that is
    the user's own ("Their budget for a laptop is 800 dollars") is a fact about them."""
    return bool(_URL.search(text) or (_PRICE.search(text) and not _OWN.search(text)))


def run(ctx: TurnContext, view: TurnView, attempt: int) -> list[Payload]:
    analysis, reflection, context = view.analysis, view.reflection, view.context
    assert analysis is not None and reflection is not None
    blocks = context.blocks if context else []
    out: PlanOut = ctx.think(
        "plan",
        PlanIn(
            today=ctx.clock().date().isoformat(),
            query=view.query,
            resolved_query=analysis.resolved_query,
            query_type=analysis.query_type,
            keywords=analysis.keywords,
            topic=analysis.primary_topic,
            user_purpose=reflection.user_purpose,
            data_requirements=reflection.data_requirements,
            context_meta=[{"heading": b.heading, **b.meta} for b in blocks],
            context_text=context_text(blocks)[:4000],
            tools=available_tools(ctx),
            attempt=attempt,
            feedback=feedback(view, attempt),
        ),
    )
    todos = [Todo(id=i, text=text, status="pending") for i, text in enumerate(out.todos, 1)]
    planned = {"route": out.route, "tool_requests": out.tool_requests, "reasoning": out.reasoning}
    events: list[Payload] = [PlanCreated(attempt=attempt, todos=todos, **planned)]
    known = {c.content.lower() for c in view.staged}
    for number, draft in enumerate(out.memory_candidates, 1):
        if draft.content.lower() in known or is_transient(draft.content):
            continue
        known.add(draft.content.lower())
        candidate = MemoryCandidate(candidate_id=f"a{attempt}-c{number}", **draft.model_dump())
        events.append(MemoryStaged(candidate=candidate))
    return events
