"""Phase 8, Save: commit or discard staged memory, record what §2 used and how
validation went, summarise the turn, and on failure leave an intervention note.

Every step is idempotent, so a resumed turn never commits twice.  Last,
`learning.after_save` promotes or demotes what the turn used, as events of this turn."""

from __future__ import annotations

import re
from contextlib import suppress
from datetime import datetime

from events.doctypes import ENTRY_TYPES
from events.documents import DocumentMetadata, render_document, wikilink
from events.fsio import atomic_write, vault_folder
from events.projection import TurnView
from events.schema import DocumentsUsed, MemoryCommitted, MemoryDiscarded, Payload, TurnCompleted
from events.stamps import format_ts

from ..learning.api import INDEX_QUEUE, after_save
from ..llm.errors import LLMError
from ..tasks.grounding import is_honest_unknown
from ..tasks.schemas import SummarizeIn, SummarizeOut
from .context import TurnContext
from .tools import canonical_tool

__all__ = ["outcome_of", "run"]

QUALITY = {"APPROVE": 0.8, "REVISE": 0.5, "FAIL": 0.2, "CLARIFY": 0.3}

ADVICE = {
    "LLMUnavailable": "Start the LLM server or fix `[llm] base_url` in pandafs.toml; ask again.",
    "LLMTimeout": "The model answered too slowly: raise `[llm] timeout_s` or use a smaller model.",
    "LLMOutputError": "The model returned invalid JSON twice: use a stronger `[llm.roles]` model.",
    "LLMError": "Check the LLM server's log and `[llm]` in pandafs.toml.",
    "validation": "The answer could not be verified against memory. Add the missing facts (e.g. "
    "with `pandafs save`) or configure `[research] search_url`, then ask again.",
}


def outcome_of(view: TurnView, max_attempts: int) -> tuple[str, str]:
    """(outcome, why) of a turn whose phases are done."""
    if view.failures:
        failure = view.failures[-1]
        return "FAIL", f"{failure.phase} failed ({failure.error_type}: {failure.message})"
    if view.reflection is not None and view.reflection.decision == "CLARIFY":
        return "CLARIFY", "needs clarification"
    last = view.last_validation
    if last is None:
        return "FAIL", "no validated answer"
    if last.decision == "APPROVE":
        return "APPROVE", "validated"
    if last.decision == "FAIL":
        return "FAIL", "; ".join(last.reasons) or "validation failed"
    return "FAIL", f"still {last.decision} after {max_attempts} attempt(s): {'; '.join(last.reasons)}"


def _final_answer(view: TurnView, outcome: str, why: str) -> str:
    if outcome == "APPROVE":
        return view.answer or ""
    if outcome == "FAIL" and not view.failures and view.answer and is_honest_unknown(view.answer):
        # "I don't know the price of X; …" is honest, so it stands (verdict FAIL); what it
        # said it would remember is not kept on a FAIL, so that part goes
        return re.sub(r"^Noted — I'll remember: .*?\.\s+(?=I don't)", "", view.answer)
    if outcome == "CLARIFY":
        assert view.reflection is not None
        return view.reflection.clarification_question or "Could you say more?"
    if outcome == "FAIL" and not view.failures and view.answer and not view.staged:
        # what validation would not approve is shown as what it is: unverified, with why
        closest = re.sub(r"\s+", " ", view.answer).strip()[:600]
        return f"I couldn't verify an answer in memory ({why[:300]}). The closest it holds: {closest}"
    return f"Sorry — I couldn't give a reliable answer this time: {why}."


def write_intervention(ctx: TurnContext, view: TurnView, why: str, now: datetime) -> str:
    """A note for a person in observability/interventions/, linked to the turn."""
    failure = view.failures[-1] if view.failures else None
    kind = failure.error_type if failure else "validation"
    rel = f"observability/interventions/{now.date().isoformat()}-{ctx.user}-{ctx.turn}.md"
    meta = DocumentMetadata(
        id=f"intervention/{ctx.user}/{ctx.turn}",
        user=ctx.user,
        title=f"Intervention: turn {ctx.turn} of {ctx.user} failed",
        primary_topic="observability.intervention",
        content_types=["intervention"],
        created_at=now,
        tags=["pandafs/intervention"],
        turn=ctx.doc_id,
        phase=failure.phase if failure else "validation",
        error_type=kind,
    )
    other = "Look at the turn's events.jsonl and toolresults.md for the failing step."
    advice = ADVICE.get(kind, ADVICE["LLMError"] if kind.startswith("LLM") else other)
    body = (
        f"# Turn {ctx.turn} of {ctx.user} needs attention\n\n"
        f"- **Turn:** {wikilink(f'users/{ctx.user}/turns/{ctx.turn}/context.md', ctx.doc_id)}\n"
        f"- **Query:** {view.query}\n"
        f"- **What broke:** {why}\n"
        f"- **When:** {format_ts(now)}\n\n"
        f"## What to do\n\n{advice}\n"
    )
    vault_folder(ctx.vault.root, ctx.vault.layout.observability / "interventions")
    atomic_write(ctx.vault.root / rel, render_document(meta, body), root=ctx.vault.root)
    return rel


def run(ctx: TurnContext, view: TurnView) -> list[Payload]:
    max_attempts = ctx.config.pipeline.max_revisions + 1
    outcome, why = outcome_of(view, max_attempts)
    now = ctx.clock()
    events: list[Payload] = []
    settled = {c.candidate_id for c in view.committed} | {d.candidate_id for d in view.discarded}
    for candidate in view.staged:
        if candidate.candidate_id in settled:
            continue
        if outcome == "APPROVE":
            saved = ctx.memory.save(
                candidate.content,
                user=ctx.user,
                doc_type=candidate.doc_type,
                topic=candidate.topic,
                keywords=candidate.keywords,
                key=candidate.key if candidate.doc_type in ENTRY_TYPES else None,  # a model's stray key
                scope=(candidate.model_extra or {}).get("scope")
                or ("user" if candidate.doc_type != "memory" else "new"),
                ttl_hours=(candidate.model_extra or {}).get("ttl_hours"),  # as save_memory asked
                source_turn=ctx.turn,
                now=now,
                index=False,  # indexed with the turn, in one commit
            )
            committed = {"doc_id": saved.doc_id, "doc_path": saved.doc_path}
            events.append(MemoryCommitted(candidate_id=candidate.candidate_id, **committed))
        else:
            events.append(
                MemoryDiscarded(candidate_id=candidate.candidate_id, reason=f"turn outcome {outcome}: {why}")
            )
    if view.context is not None and view.used is None:
        last = view.last_validation
        decision = last.decision if last is not None and not view.failures else "FAIL"
        events.append(DocumentsUsed(doc_ids=[s.doc_id for s in view.context.sources], outcome=decision))
    analysis = view.analysis
    final = _final_answer(view, outcome, why)
    tools_used = [t.tool for t in view.tool_calls() if t.ok]
    summary = SummarizeOut(summary=f"Asked: {view.query[:140]}", topics=[])
    if analysis is not None:
        with suppress(LLMError):  # a model that cannot summarise leaves the plain summary: the
            summary = ctx.think(  # turn still ends, with its verdict recorded
                "summarize_turn",
                SummarizeIn(
                    query=view.query,
                    resolved_query=analysis.resolved_query,
                    answer=final,
                    outcome=outcome,
                    keywords=analysis.keywords,
                    entities=analysis.entities,
                    tools_used=tools_used,
                ),
            )
    research = [t for t in view.tool_calls() if canonical_tool(t.tool) == "internet_research" and t.ok]
    intervention = write_intervention(ctx, view, why, now) if outcome == "FAIL" else None
    quality = QUALITY[outcome] + (
        0.1 if outcome == "APPROVE" and view.context and view.context.sources else 0.0
    )
    events.append(
        TurnCompleted(
            outcome=outcome,
            answer=final,
            subject=summary.subject,
            summary=summary.summary,
            topics=summary.topics,
            query_type=analysis.query_type if analysis else "unknown",
            has_research=bool(research),
            research_topic=analysis.primary_topic if research and analysis else None,
            quality=round(quality, 2),
            intervention=intervention,
        )
    )
    changes = after_save(ctx.vault, ctx.memory, view, events, now, ctx.extras[INDEX_QUEUE])
    events[-1:-1] = changes  # scope changes; turn_completed stays last
    return events
