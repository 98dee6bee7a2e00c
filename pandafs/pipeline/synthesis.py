"""Phase 6 — Synthesis (VOICE) and Phase 7 — Validation (MIND).

Synthesis is given *facts* (`grounding`): the statements of the §2 sources and the
§4 tool results with their origin and date, repeats removed and disagreements
settled, plus the datum the question asks for.  Validation is given the mechanical
checks of the answer (requested datum present, no contradiction of a stated fact)
and an APPROVE that a failed check contradicts is turned into RETRY (tools not yet
tried), REVISE, or — at the bound — FAIL: the verdict stays honest whatever the
backend says.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import Any

from events.documents import split_sections
from events.projection import TurnView
from events.schema import GateResult, Payload, ResponseSynthesized, ValidationDecided
from indexers.errors import IndexingError

from ..memory.store import parse_entries
from ..memory.turn_records import parse_time
from ..tasks.grounding import (
    NEW_CLAUSE,
    Fact,
    about_focus,
    answer_checks,
    asks_now,
    end_of_day,
    focus_of,
    is_question,
    requested_kind,
    settle,
    statement_form,
)
from ..tasks.schemas import AnswerIn, AnswerOut, FactView, SourceView, ToolResultView, ValidateIn, ValidateOut
from ..tokens import count_tokens, truncate_tokens
from .context import TurnContext, context_text, feedback
from .sources import source_text, visit_text
from .tools import canonical_tool, finding_line

__all__ = ["answer", "validate"]

_TURN_KINDS = ("turn", "archived_turn")
_ITEMS = re.compile(r"(?:^|\s)[-*]\s+")
_TURN_HIT = "From a conversation: "  # a turn's snippet mixes what the user and the assistant said
_TOOL_LINES = (("Asked:", "stated"), ("Answered:", "answer"), (_TURN_HIT, "tool"))
"""How a line of a tool result says whose words follow (a turn's text, a search hit)."""
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_TAGS = re.compile(r"(?<!\S)#[\w-]+")
ASKED = {"resolved_query", "query_type", "keywords", "entities"}
"""What Synthesis and Validation are told of the question's analysis."""


def sources_of(ctx: TurnContext, view: TurnView) -> list[SourceView]:
    """The §2 sources, numbered as cited ([1], [2], …), with their text."""
    if view.context is None:
        return []
    cache: dict[tuple[str, ...], list[SourceView]] = ctx.extras.setdefault("_sources", {})
    key = tuple(s.doc_path for s in view.context.sources)  # Synthesis and Validation: built once
    if key not in cache:
        kinds = {c.doc_id: c.kind for c in view.retrieval.candidates} if view.retrieval else {}
        cache[key] = [
            SourceView(
                n=n,
                doc_id=source.doc_id,
                title=source.title,
                text=source_text(ctx, source.doc_path, kinds.get(source.doc_id, ""))[:6000],
            )
            for n, source in enumerate(view.context.sources, 1)
        ]
    return cache[key]


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
                snippet = str(hit.get("snippet", "")).replace("**", "")
                is_turn = re.search(r"/turn_\d+$", str(hit.get("doc_id", "")))  # its title is its question
                lines.append(f"{_TURN_HIT}{snippet}" if is_turn else f"{hit.get('title', '')}: {snippet}")
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


def _facts(text: str, origin: str, n: int, doc_id: str, when: datetime | None = None) -> list[Fact]:
    """The clauses of `text` (`NEW_CLAUSE`) as facts of `origin`: what the user stated in its
    stored form, and not its questions (a question states nothing)."""
    from ..llm.offline import sentences

    stated = origin == "stated"
    said = [c for s in sentences(text) if not (stated and is_question(s)) for c in NEW_CLAUSE.split(s)]
    return [Fact(statement_form(c) if stated else c, origin, n, doc_id, when) for c in said if c.strip()]


_REPLIES = {"APPROVE": "answer", "IMPORTED": "assistant"}
"""Whose words a turn's answer (§5) are, by its outcome: an APPROVEd reply, an imported one."""


def _turn_facts(n: int, doc_id: str, sections: dict[int, str], meta: dict[str, Any]) -> list[Fact]:
    """A turn teaches what the user stated (§0) and, if it was APPROVEd, what was answered
    (§5); an imported turn's reply is what the assistant said then."""
    asked = sections.get(0, "").split("\n\n")[0].strip() if sections else ""
    answered = sections.get(5, "").strip() if sections else ""
    when = parse_time(meta.get("created_at"))
    facts = _facts(asked, "stated", n, doc_id, when)
    replied = _REPLIES.get(str(meta.get("outcome")))
    return facts + _facts(answered, replied, n, doc_id, when) if replied else facts


def _source_facts(ctx: TurnContext, n: int, doc_id: str, doc_path: str, kind: str) -> list[Fact]:
    if kind == "visit":
        return _facts(visit_text(ctx.vault.root, doc_path), "document", n, doc_id)
    doc = ctx.read(doc_path)
    if doc is None:
        return []
    meta = doc.metadata
    sections = split_sections(doc.content) if kind in _TURN_KINDS else {}
    if sections:
        return _turn_facts(n, doc_id, sections, meta)
    when = parse_time(meta.get("updated_at") or meta.get("created_at"))
    types = meta.get("content_types") or []
    if doc_id.endswith(("/preferences", "/facts")) or {"preference", "fact"} & set(types):
        facts = []
        for entry in parse_entries(doc.content):
            text = _TAGS.sub("", entry.text).strip()
            day = _DAY.search(entry.note or "")
            stamp = end_of_day(day.group(0)) if day else when
            facts.append(Fact(text, "memory", n, doc_id, stamp, seq=entry.line))
        return facts
    return _facts(doc.content, "memory" if kind == "memory" else "document", n, doc_id, when)


NEWEST = "newest_statements"
"""The tool name under which Synthesis and Validation read the user's newest statements
about the thing asked (`newest_statements`)."""
NEWEST_HITS = 20  # turns the subject's search brings, before they are put in time order
NEWEST_TURNS = 3  # the newest of them whose statements are read


def newest_statements(ctx: TurnContext, view: TurnView) -> list[Fact]:
    """`_newest_statements`, searched once a turn (Synthesis, Validation and each attempt ask
    for it); each call gets its own copies, as `settle` sets their text and slot."""
    found: list[Fact] | None = ctx.extras.get("_newest")
    if found is None:
        found = ctx.extras["_newest"] = _newest_statements(ctx, view)
    return [replace(f, replaces=[]) for f in found]


def _newest_statements(ctx: TurnContext, view: TurnView) -> list[Fact]:
    """For a question about how a thing stands now (`grounding.asks_now`: how many, how
    much, which, who, where): what the user said about that thing in their newest turns.
    §2 is chosen by relevance to the whole question, so the statement that replaced an
    older value may be missing from it; a search of the thing's words alone (its focus),
    over the user's turns, put in time order, finds it.  Statements of turns §2 already
    holds are left to §2."""
    resolved = view.analysis.resolved_query if view.analysis else view.query
    focus = focus_of(resolved) if is_question(view.query) else ()
    if not focus or not asks_now(view.query, requested_kind(view.query)):
        return []
    try:
        hits = ctx.memory.search(
            " ".join(focus),
            user=ctx.user,
            now=ctx.clock(),
            exclude_ids=[ctx.doc_id],
            kinds=_TURN_KINDS,
            limit=NEWEST_HITS,
            snippets=False,
        )
    except IndexingError:  # the search is a second look; §2 stands without it
        return []
    facts: list[Fact] = []
    held = {s.doc_id for s in view.context.sources} if view.context else set()
    hits.sort(key=lambda h: str(h.get("created_at") or ""), reverse=True)
    for hit in hits[:NEWEST_TURNS]:
        if hit["doc_id"] in held:
            continue
        doc = ctx.read(hit["doc_path"])
        if doc is None:
            continue
        said = _turn_facts(0, hit["doc_id"], split_sections(doc.content), doc.metadata)
        facts += [f for f in said if f.origin == "stated" and about_focus(focus, f.text, "", resolved)]
    return facts


def _newest_result(facts: list[Fact]) -> list[ToolResultView]:
    """The newest statements as Synthesis and Validation read a tool result (each dated)."""
    if not facts:
        return []
    lines = [f"{f.when.date().isoformat() if f.when else ''} ({f.doc_id}): {f.text}" for f in facts]
    summary = f"{len(facts)} newest statement(s) about the thing asked"
    return [ToolResultView(tool=NEWEST, ok=True, summary=summary, text="\n".join(lines))]


def _tool_results(ctx: TurnContext, view: TurnView) -> list[ToolResultView]:
    """§4 and the newest statements, as Synthesis and Validation read them."""
    newest = _newest_result(newest_statements(ctx, view))
    return tool_results_of(view, ctx.config.pipeline.tool_tokens) + newest


def _tool_facts(results: list[ToolResultView]) -> list[Fact]:
    facts = []
    for result in results:
        if result.tool == NEWEST:  # read from `newest_statements` with their dates
            continue
        for line in result.text.splitlines():
            lead, origin = next(((lead, o) for lead, o in _TOOL_LINES if line.startswith(lead)), ("", ""))
            if lead:
                facts += _facts(line.removeprefix(lead), origin, 0, result.tool)
            else:  # a document's snippet ("Facts of alice: - … - …"): its entries, in its own words
                entries = _ITEMS.split(line.split(": ", 1)[-1])
                facts += [f for e in entries for f in _facts(e, "document", 0, result.tool)]
    return facts


def facts_of(ctx: TurnContext, view: TurnView, tools: list[ToolResultView]) -> list[Fact]:
    """The settled facts of §2 and §4 (grounding.settle): what an answer may say."""
    cache: dict[str, list[Fact]] = ctx.extras.setdefault("_facts", {})
    key = f"{len(view.attempts)}:{len(tools)}"
    if key in cache:
        return cache[key]
    kinds = {c.doc_id: c.kind for c in view.retrieval.candidates} if view.retrieval else {}
    read: dict[tuple[int, str, str], list[Fact]] = ctx.extras.setdefault("_source_facts", {})
    raw: list[Fact] = []
    for n, source in enumerate(view.context.sources if view.context else [], 1):
        at = (n, source.doc_id, source.doc_path)  # each attempt settles them again: read once a turn
        if at not in read:
            read[at] = _source_facts(ctx, n, source.doc_id, source.doc_path, kinds.get(source.doc_id, ""))
        raw += [replace(f, replaces=[]) for f in read[at]]  # `settle` sets their text and slot
    raw += _tool_facts(tools)
    if any(r.tool == NEWEST for r in tools):
        raw += newest_statements(ctx, view)
    cache[key] = settle(raw, view.query)
    return cache[key]


def _views(facts: list[Fact]) -> list[FactView]:
    return [
        FactView(
            n=f.n,
            doc_id=f.doc_id,
            text=f.text,
            origin=f.origin,  # type: ignore[arg-type]
            when=f.when.date().isoformat() if f.when else "",
            slot=f.slot.kind if f.slot else "",
            key=f.slot.key if f.slot else "",
            replaces=f.replaces,
        )
        for f in facts
    ]


def answer(ctx: TurnContext, view: TurnView, attempt: int) -> list[Payload]:
    analysis = view.analysis
    assert analysis is not None
    tools = _tool_results(ctx, view)
    out: AnswerOut = ctx.think(
        "answer",
        AnswerIn(
            query=view.query,
            **analysis.model_dump(include=ASKED | {"content_reference"}),
            requested=requested_kind(view.query),
            facts=_views(facts_of(ctx, view, tools)),
            context_text=context_text(view.context.blocks if view.context else []),
            sources=sources_of(ctx, view),
            tool_results=tools,
            staged_memory=[c.content for c in view.staged],
            feedback=feedback(view, attempt),
        ),
    )
    return [ResponseSynthesized(attempt=attempt, answer=out.answer, citations=out.citations)]


def validate(ctx: TurnContext, view: TurnView, attempt: int) -> list[Payload]:
    analysis, reflection = view.analysis, view.reflection
    assert analysis is not None and reflection is not None
    response = view.attempts[-1].response
    assert response is not None
    tools = _tool_results(ctx, view)
    facts = facts_of(ctx, view, tools)
    requested = requested_kind(view.query)
    checks = answer_checks(response.answer, view.query, requested, facts, analysis.resolved_query)
    tried = any(a.tools for a in view.attempts)
    max_attempts = ctx.config.pipeline.max_revisions + 1
    out: ValidateOut = ctx.think(
        "validate",
        ValidateIn(
            query=view.query,
            **analysis.model_dump(include=ASKED),
            data_requirements=reflection.data_requirements,
            requested=requested,
            facts=_views(facts),
            checks=checks,
            tools_tried=tried,
            answer=response.answer,
            citations=response.citations,
            sources=sources_of(ctx, view),
            tool_results=tools,
            attempt=attempt,
            max_attempts=max_attempts,
        ),
    )
    decision, reasons = _honest(out, checks, tried, last=attempt + 1 >= max_attempts)
    merged = checks + [c for c in out.checks if c.gate not in {g.gate for g in checks}]
    return [ValidationDecided(attempt=attempt, decision=decision, reasons=reasons, checks=merged)]


def _honest(out: ValidateOut, checks: list[GateResult], tried: bool, *, last: bool) -> tuple[str, list[str]]:
    """The backend's verdict, unless a mechanical check says it cannot be APPROVE."""
    failed = [c for c in checks if not c.passed]
    if out.decision != "APPROVE" or not failed:
        return out.decision, list(out.reasons)
    reasons = [f"{c.gate}: {c.detail}" for c in failed]
    if last:
        return "FAIL", reasons
    if any(c.gate in ("requested_data", "about_what_was_asked") for c in failed) and not tried:
        return "RETRY", reasons
    if any(c.gate == "consistent_with_memory" for c in failed):
        return "REVISE", reasons
    return "FAIL", reasons
