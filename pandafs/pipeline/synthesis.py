"""Phase 6 — Synthesis (VOICE) and Phase 7 — Validation (MIND)."""

from __future__ import annotations

from events import Payload, TurnView
from events.schema import ResponseSynthesized, ValidationDecided

from .context import TurnContext
from .gatherer import source_text
from .tasks import AnswerIn, AnswerOut, SourceView, ToolResultView, ValidateIn, ValidateOut
from ..tokens import count_tokens, truncate_tokens
from .tools import canonical_tool, finding_line

__all__ = ["answer", "sources_of", "tool_results_of", "validate"]


def sources_of(ctx: TurnContext, view: TurnView) -> list[SourceView]:
    """The §2 sources, numbered as cited ([1], [2], …), with their text."""
    if view.context is None:
        return []
    kinds = {c.doc_id: c.kind for c in view.retrieval.candidates} if view.retrieval else {}
    out: list[SourceView] = []
    for n, source in enumerate(view.context.sources, 1):
        text = source_text(ctx, source.doc_path, kinds.get(source.doc_id, ""))
        out.append(SourceView(n=n, doc_id=source.doc_id, title=source.title, text=text[:6000]))
    return out


def tool_results_of(view: TurnView, budget: int) -> list[ToolResultView]:
    """Every tool result of the turn (§4) as Synthesis reads it, within `budget` tokens:
    each result gets an equal share, and what a short one leaves over goes to the rest."""
    raw: list[tuple[str, bool, str, str]] = []
    for attempt in view.attempts:
        for tool in attempt.tools:
            lines = []
            if isinstance(tool.result.get("text"), str):
                lines.append(tool.result["text"])
            for hit in tool.result.get("hits", []):
                lines.append(f"{hit.get('title', '')}: {str(hit.get('snippet', '')).replace('**', '')}")
            lines += [finding_line(f) for f in tool.result.get("findings", [])]
            raw.append((canonical_tool(tool.tool), tool.ok, tool.summary, "\n".join(lines)))
    results: list[ToolResultView] = []
    left = budget
    for i, (name, ok, summary, text) in enumerate(raw):
        share = left // (len(raw) - i)
        text = truncate_tokens(text, max(0, share))
        left -= count_tokens(text)
        results.append(ToolResultView(tool=name, ok=ok, summary=summary, text=text))
    return results


def answer(ctx: TurnContext, view: TurnView, attempt: int) -> list[Payload]:
    analysis = view.analysis
    assert analysis is not None
    feedback: list[str] = []
    previous = next((a for a in view.attempts if a.number == attempt - 1), None)
    if previous is not None and previous.validation is not None:
        feedback = list(previous.validation.reasons)
    out: AnswerOut = ctx.think(
        "answer",
        AnswerIn(
            query=view.query,
            resolved_query=analysis.resolved_query,
            query_type=analysis.query_type,
            keywords=analysis.keywords,
            content_reference=analysis.content_reference,
            context_text="\n".join(
                " | ".join(r) for b in (view.context.blocks if view.context else []) for r in b.rows
            ),
            sources=sources_of(ctx, view),
            tool_results=tool_results_of(view, ctx.config.pipeline.tool_tokens),
            staged_memory=[c.content for c in view.staged],
            feedback=feedback,
        ),
    )
    return [ResponseSynthesized(attempt=attempt, answer=out.answer, citations=out.citations)]


def validate(ctx: TurnContext, view: TurnView, attempt: int) -> list[Payload]:
    analysis, reflection = view.analysis, view.reflection
    assert analysis is not None and reflection is not None
    response = view.attempts[-1].response
    assert response is not None
    out: ValidateOut = ctx.think(
        "validate",
        ValidateIn(
            query=view.query,
            resolved_query=analysis.resolved_query,
            query_type=analysis.query_type,
            keywords=analysis.keywords,
            data_requirements=reflection.data_requirements,
            answer=response.answer,
            citations=response.citations,
            sources=sources_of(ctx, view),
            tool_results=tool_results_of(view, ctx.config.pipeline.tool_tokens),
            attempt=attempt,
            max_attempts=ctx.config.pipeline.max_revisions + 1,
        ),
    )
    return [ValidationDecided(attempt=attempt, decision=out.decision, reasons=out.reasons, checks=out.checks)]
