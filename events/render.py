"""Render a `TurnView` into the turn folder's files (`render_turn`): pure and
deterministic, no clock, disk or environment."""

from __future__ import annotations

from typing import Any

import orjson

from .documents import SECTION_TITLES, DocumentMetadata, dump_frontmatter, render_document, shorten, wikilink
from .projection import TurnView
from .schema import ContextBlock, GateResult
from .stamps import format_ts

__all__ = ["context_parts", "render_block", "render_turn", "wikilink"]


def _cell(value: Any) -> str:
    text = " ".join(str(value).split())
    return text.replace("|", "\\|")


def _json(data: Any) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def _table(columns: list[str], rows: list[list[str]]) -> str:
    head = "| " + " | ".join(_cell(c) for c in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join([head, rule, *body])


def _gates(gates: tuple[GateResult, ...] | list[GateResult]) -> str:
    rows = [[g.gate, "yes" if g.passed else "no", g.detail] for g in gates]
    return _table(["Check", "Passed", "Detail"], rows)


def render_block(block: ContextBlock) -> str:
    """One `###` block of §2 as markdown (the pipeline measures its tokens with this)."""
    parts = [f"### {block.heading}"]
    if block.meta:
        parts.append("```yaml\n" + dump_frontmatter({"_meta": block.meta}) + "```")
    if block.columns:
        parts.append(_table(block.columns, block.rows))
    if block.text:
        parts.append(block.text)
    return "\n\n".join(parts)


def turn_metadata(view: TurnView) -> DocumentMetadata:
    """Frontmatter of the turn's context.md (also the index's view of the turn)."""
    analysis, reflection, completed = view.analysis, view.reflection, view.completed
    extra: dict[str, Any] = {
        "turn": view.turn,
        "source": view.started.source,
        "outcome": view.outcome or "INCOMPLETE",
    }
    if analysis is not None:
        extra["query_type"] = analysis.query_type
    if completed is not None and completed.summary and completed.summary != view.query:
        extra["summary"] = completed.summary  # an import's summary is its query: said once
    if view.started.external_id is not None:
        extra["external_id"] = view.started.external_id
    if view.started.meta:
        extra["meta"] = view.started.meta
    return DocumentMetadata(
        id=view.doc_id,
        user=view.user,
        title=shorten(view.query),
        primary_topic=analysis.primary_topic if analysis else "conversation",
        keywords=list(analysis.keywords) if analysis else [],
        content_types=["context"],
        scope="user",
        quality=completed.quality if completed else 0.5,
        created_at=view.occurred_at,
        user_purpose=(reflection.user_purpose or None) if reflection else None,
        data_requirements=list(reflection.data_requirements) if reflection else [],
        tags=["pandafs/turn"],
        **extra,
    )


def _said(*fields: tuple[str, str | None]) -> list[str]:
    """`**Label:** value` for each of `fields` that has a value."""
    return [f"**{label}:** {value}" for label, value in fields if value]


def _section(number: int, text: str) -> str:
    return f"## {number}. {SECTION_TITLES[number]}\n\n{text.strip()}\n"


def context_parts(view: TurnView) -> tuple[dict[str, Any], str]:
    """Frontmatter (as a dict) and body of the turn's context.md."""
    sections: list[str] = []
    analysis, reflection = view.analysis, view.reflection
    s0 = [view.query.strip() or "_(empty query)_"]
    if analysis is not None:
        if analysis.resolved_query.strip() != view.query.strip():
            s0.append(f"**Resolved query:** {analysis.resolved_query}")
        s0.append(f"**Query type:** {analysis.query_type} · **Topic:** {analysis.primary_topic}")
        if analysis.content_reference is not None:
            ref = analysis.content_reference
            link = wikilink(f"users/{view.user}/turns/{ref.source_turn}/context.md", ref.source_turn)
            s0.append(f"**Refers to:** {ref.title} (from {link})")
    s0 += [f"**Feedback on {f.target_turn}:** {f.status} ({f.signal})" for f in view.feedback]
    sections.append(_section(0, "\n\n".join(s0)))
    if reflection is not None:
        s1 = [f"**Decision:** {reflection.decision} (confidence {reflection.confidence:.2f})"]
        s1 += _said(
            ("User purpose", reflection.user_purpose),
            ("Data requirements", ", ".join(reflection.data_requirements)),
            ("Reasoning", reflection.reasoning),
            ("Question for the user", reflection.clarification_question),
        )
        sections.append(_section(1, "\n\n".join(s1)))
    if view.context is not None:
        s2 = [render_block(b) for b in view.context.blocks]
        if view.context.sources:
            refs = [
                f"- [{i}] {wikilink(s.doc_path, s.title or s.doc_id)} `{s.doc_id}`"
                for i, s in enumerate(view.context.sources, 1)
            ]
            s2.append("### Source References\n\n" + "\n".join(refs))
        if view.context.gates:
            s2.append("### Quality Gates\n\n" + _gates(view.context.gates))
        sections.append(_section(2, "\n\n".join(s2) or "_(no relevant context found)_"))
    plans = [(a.number, a.plan) for a in view.attempts if a.plan is not None]
    if plans:
        s3 = []
        for number, plan in plans:
            one = len(plans) == 1
            lines = [f"**Route:** {plan.route}" if one else f"### Attempt {number + 1} · route: {plan.route}"]
            lines += [f"{t.id}. [{t.status}] {t.text}" for t in plan.todos]
            if plan.reasoning:
                lines.append(f"\n**Reasoning:** {plan.reasoning}")
            s3.append("\n".join(lines))
        if view.staged:
            rows = [[c.candidate_id, c.doc_type, c.content] for c in view.staged]
            s3.append("### Memory Candidates\n\n" + _table(["Candidate", "Type", "Content"], rows))
        sections.append(_section(3, "\n\n".join(s3)))
    tools = [(a.number, t) for a in view.attempts for t in a.tools]
    if plans or tools:
        s4 = []
        for number, t in tools:
            status = "ok" if t.ok else f"error: {t.error}"
            args = ", ".join(f"{k}={v!r}" for k, v in sorted(t.args.items()))
            when = f" · attempt {number + 1}" if len(plans) > 1 else ""
            s4.append(f"### {t.tool} ({status}){when}\n\n**Args:** {args}\n\n{t.summary}".rstrip())
        sections.append(_section(4, "\n\n".join(s4) or "_(no tools needed)_"))
    clarify = view.reflection is not None and view.reflection.decision == "CLARIFY"
    final = view.answer
    if final is not None and not clarify:
        sections.append(_section(5, final or "_(no response)_"))
    validations = [a.validation for a in view.attempts if a.validation is not None]
    if validations or view.failures:
        s6 = []
        for v in validations:
            reasons = "".join(f"\n- {r}" for r in v.reasons)
            s6.append(f"**Attempt {v.attempt + 1}:** {v.decision}{reasons}")
        if validations and validations[-1].checks:
            s6.append(_gates(validations[-1].checks))
        s6 += [f"**Failure in {f.phase}:** {f.error_type}: {f.message}" for f in view.failures]
        s6 += _said(
            ("Memory committed", ", ".join(wikilink(c.doc_path, c.doc_id) for c in view.committed)),
            ("Memory discarded", ", ".join(f"{d.candidate_id} ({d.reason})" for d in view.discarded)),
            ("Outcome", view.completed.outcome if view.completed is not None else None),
        )
        sections.append(_section(6, "\n\n".join(s6)))
    title = f"# Turn {view.turn.removeprefix('turn_')} — {shorten(view.query)}\n\n"
    return turn_metadata(view).to_frontmatter(), title + "\n".join(sections)


KEPT_EMPTY = frozenset({"id", "user", "turn", "created_at", "outcome", "quality", "events", "last_hash"})
"""metadata.json keys written even when empty; any other key whose value is None or
empty is left out (a reader's `.get` gives None), and so are the query and what only
repeats it (an import's `summary`, an unchanged `resolved_query`)."""


def _metadata_json(view: TurnView) -> dict[str, Any]:
    """What machines read without parsing markdown: ids, outcome, quality, counts, how much
    of the log the projection saw.  No text of the turn (that is in the log and context.md)."""
    analysis, completed = view.analysis, view.completed
    validation = view.last_validation
    full = {
        "id": view.doc_id,
        "user": view.user,
        "turn": view.turn,
        "source": view.started.source,
        "created_at": format_ts(view.occurred_at),
        "query": view.query,
        "resolved_query": analysis.resolved_query if analysis else view.query,
        "query_type": analysis.query_type if analysis else None,
        "primary_topic": analysis.primary_topic if analysis else "conversation",
        "keywords": list(analysis.keywords) if analysis else [],
        "content_reference": (
            analysis.content_reference.model_dump(mode="json", exclude_none=True)
            if analysis and analysis.content_reference
            else None
        ),
        "reflection": view.reflection.decision if view.reflection else None,
        "validation": validation.decision if validation else None,
        "outcome": view.outcome or "INCOMPLETE",
        "revision_count": max(0, len([a for a in view.attempts if a.validation]) - 1),
        "summary": completed.summary if completed else "",
        "topics": list(completed.topics) if completed else [],
        "has_research": completed.has_research if completed else False,
        "subject": completed.subject if completed else None,
        "research_topic": completed.research_topic if completed else None,
        "quality": completed.quality if completed else 0.5,
        "sources_used": list(view.used.doc_ids) if view.used else [],
        "memory_committed": [c.doc_id for c in view.committed],
        "external_id": view.started.external_id,
        "inbox_file": view.started.inbox_file,
        "meta": view.started.meta,
        "unknown_event_types": sorted(set(view.unknown_types)),
        # how much of the log this projection saw: a log later cut short is then detected
        "events": view.event_count,
        "last_hash": view.last_hash,
    }
    return {
        k: v
        for k, v in full.items()
        if k in KEPT_EMPTY or (k != "query" and v not in (None, "", [], {}) and v != full["query"])
    }


def _ticket_md(view: TurnView) -> str:
    lines = [f"# Ticket {view.doc_id}", "", f"**Query:** {view.query}", ""]
    for a in view.attempts:
        if a.plan is None:
            continue
        lines.append(f"## Attempt {a.number + 1} — route: {a.plan.route}")
        lines += [f"- [{'x' if t.status == 'completed' else ' '}] {t.text}" for t in a.plan.todos]
        lines += [f"- tool request: `{r.tool}` {orjson.dumps(r.args).decode()}" for r in a.plan.tool_requests]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _toolresults_md(view: TurnView) -> str:
    lines = [f"# Tool results {view.doc_id}", ""]
    for a in view.attempts:
        for t in a.tools:
            lines.append(f"## {t.tool} (attempt {a.number + 1}, {'ok' if t.ok else 'error'})")
            payload = {"args": t.args, "result": t.result, "error": t.error}
            lines += ["", "```json", orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode(), "```", ""]
    if len(lines) == 2:
        lines.append("_(no tools were called)_")
    return "\n".join(lines).rstrip() + "\n"


def _metrics_json(view: TurnView) -> dict[str, Any]:
    tools = view.tool_calls()
    return {
        "id": view.doc_id,
        "phase_ms": dict(sorted(view.phase_ms.items())),
        "phase_tokens": dict(sorted(view.phase_tokens.items())),
        "total_ms": round(sum(view.phase_ms.values()), 3),
        "total_tokens": sum(view.phase_tokens.values()),
        "tool_calls": len(tools),
        "tool_errors": sum(1 for t in tools if not t.ok),
        "attempts": len(view.attempts),
        "outcome": view.outcome or "INCOMPLETE",
    }


def render_turn(view: TurnView, *, parts: tuple[dict[str, Any], str] | None = None) -> dict[str, bytes]:
    """Every projected file of the turn folder, as bytes (`parts`: `context_parts(view)`, if made)."""
    files = {
        "context.md": render_document(*(parts or context_parts(view))).encode("utf-8"),
        "metadata.json": orjson.dumps(_metadata_json(view), option=orjson.OPT_SORT_KEYS) + b"\n",
    }
    if not view.is_import:
        if view.analysis is not None:
            analysis = view.analysis.model_dump(mode="json", exclude_none=True)
            analysis["original_query"] = view.query
            files["query_analysis.json"] = _json(analysis)
        files["ticket.md"] = _ticket_md(view).encode("utf-8")
        files["toolresults.md"] = _toolresults_md(view).encode("utf-8")
        files["metrics.json"] = _json(_metrics_json(view))
    return files
