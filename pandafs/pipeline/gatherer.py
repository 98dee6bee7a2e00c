"""Phase 2 — Context Gatherer (MIND), run once: RETRIEVAL then SYNTHESIS (seed 003).

RETRIEVAL collects candidates from every source — the turn the query refers to,
the hot tier (last turns), the unified search over turns, research, memories,
knowledge and archive stubs, the user's preference and fact lines, and cached
visit records — and asks the backend which are relevant and why.

SYNTHESIS loads the chosen documents (each cut to 1,500 tokens, memory first,
then research, then recent turns, then older ones), asks the backend to extract
what helps, and compiles §2: markdown tables with YAML `_meta` blocks, capped at
`[pipeline] context_tokens` (rows of the lowest-priority blocks are dropped
first).  Irrelevant preferences and facts are omitted, not labelled.  Everything
used is listed with its doc id, and the quality gates are recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events import Payload, TurnView, parse_document, render_block, split_sections, wikilink
from events.errors import FrontmatterError
from events.schema import (
    Candidate,
    ContextBlock,
    ContextRetrieved,
    ContextSynthesized,
    GateResult,
    MemoryEntry,
    SourceRef,
)

from ..errors import BadInput
from ..memory.store import parse_entries
from .analyzer import recent_turns
from .context import TurnContext
from .tasks import (
    CandidateView,
    DocRow,
    LoadedDoc,
    MemoryRow,
    RetrievalIn,
    RetrievalOut,
    SynthesizeContextIn,
    SynthesizeContextOut,
)
from .tokens import count_tokens, truncate_tokens

__all__ = ["retrieve", "source_text", "synthesize", "turn_text"]

PER_DOC_TOKENS = 1500
SEARCH_LIMIT = 12
KIND_PRIORITY = {
    "preferences": 0,
    "facts": 0,
    "memory": 1,
    "research": 2,
    "knowledge": 3,
    "site": 3,
    "note": 3,
    "turn": 4,
    "archived_turn": 5,
    "visit": 2,
}


def _age_days(created: str, now: datetime) -> float:
    try:
        when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max(0.0, (now - when).total_seconds() / 86400.0)


def _memory_entries(ctx: TurnContext) -> list[MemoryEntry]:
    entries: list[MemoryEntry] = []
    for kind, path in (
        ("preference", ctx.vault.layout.preferences(ctx.user)),
        ("fact", ctx.vault.layout.facts(ctx.user)),
    ):
        if not path.exists():
            continue
        rel = ctx.vault.rel(path)
        try:
            body = parse_document(path.read_text(encoding="utf-8"), rel).body
        except (FrontmatterError, UnicodeDecodeError):
            continue  # reported by rebuild/verify; a broken file must not break the turn
        doc_id = f"{ctx.user}/{path.stem}"
        for entry in parse_entries(body):
            entries.append(
                MemoryEntry(
                    kind=kind,
                    key=entry.key or "",
                    value=entry.value,  # type: ignore[arg-type]
                    doc_id=doc_id,
                    doc_path=rel,
                )
            )
    return entries


def turn_text(content: str) -> str:
    """What a turn's context.md teaches: the question (§0) and the answer (§5)."""
    sections = split_sections(content)
    if not sections:
        return content
    asked = sections.get(0, "").split("\n\n")[0].strip()
    answered = sections.get(5, "").strip()
    return f"Asked: {asked}\nAnswered: {answered}".strip()


def source_text(ctx: TurnContext, doc_path: str, kind: str) -> str:
    """The text of a document as the pipeline reads it (a turn: its question and answer)."""
    try:
        content = ctx.read(doc_path).content
    except BadInput:
        return ""
    return turn_text(content) if kind == "turn" else content


def _entry_text(entry: MemoryEntry) -> str:
    return f"{entry.key}: {entry.value}" if entry.key else entry.value


def retrieve(ctx: TurnContext, view: TurnView) -> list[Payload]:
    analysis = view.analysis
    assert analysis is not None
    now = ctx.now()
    candidates: dict[str, Candidate] = {}
    tiers: dict[str, Any] = {}

    def add(candidate: Candidate) -> None:
        if candidate.doc_id not in candidates and candidate.doc_id != ctx.doc_id:
            candidates[candidate.doc_id] = candidate

    reference = analysis.content_reference
    if reference is not None and reference.doc_id:
        try:
            path = ctx.memory.resolve(reference.doc_id)
            add(
                Candidate(
                    doc_id=reference.doc_id,
                    doc_path=ctx.vault.rel(path),
                    kind="turn",
                    title=reference.title,
                    tier="reference",
                )
            )
        except BadInput:
            pass
    hot = recent_turns(ctx, ctx.config.tiers.hot_turns)
    tiers["hot"] = [t.turn for t in hot]
    for prior in reversed(hot):
        add(
            Candidate(
                doc_id=f"{ctx.user}/{prior.turn}",
                doc_path=f"users/{ctx.user}/turns/{prior.turn}/context.md",
                kind="turn",
                title=prior.query[:80],
                tier="hot",
            )
        )
    extra_tiers = ctx.extras.get("tiers")
    if callable(extra_tiers):
        for candidate in extra_tiers(ctx, view, tiers):
            add(candidate)
    topic = analysis.primary_topic if analysis.primary_topic != "general" else None
    hits = ctx.memory.search(
        analysis.resolved_query,
        user=ctx.user,
        topic=topic,
        limit=SEARCH_LIMIT,
        now=now,
        exclude_ids=[ctx.doc_id],
    )
    views: dict[str, CandidateView] = {}
    for hit in hits:
        add(
            Candidate(
                doc_id=hit["doc_id"],
                doc_path=hit["doc_path"],
                kind=hit["kind"],
                title=hit["title"],
                score=hit["score"],
                tier="search",
            )
        )
        views[hit["doc_id"]] = CandidateView(
            doc_id=hit["doc_id"],
            kind=hit["kind"],
            title=hit["title"],
            score=hit["score"],
            snippet=hit["snippet"].replace("**", ""),
            age_days=_age_days(hit["created_at"], now),
            quality=hit["quality"],
            tier="search",
        )
    for c in candidates.values():
        if c.doc_id not in views:
            snippet = source_text(ctx, c.doc_path, c.kind)[:600]
            views[c.doc_id] = CandidateView(
                doc_id=c.doc_id, kind=c.kind, title=c.title, snippet=snippet, tier=c.tier
            )
    entries = _memory_entries(ctx)
    plan: RetrievalOut = ctx.think(
        "plan_retrieval",
        RetrievalIn(
            query=view.query,
            resolved_query=analysis.resolved_query,
            keywords=analysis.keywords,
            topic=analysis.primary_topic,
            candidates=[views[d] for d in candidates],
            memory_entries=[_entry_text(e) for e in entries],
            threshold=ctx.config.pipeline.relevance_threshold,
        ),
    )
    picks = {p.doc_id: p for p in plan.relevant if p.doc_id in candidates}
    chosen = sorted(
        picks,
        key=lambda d: (
            {"high": 0, "medium": 1, "low": 2}[picks[d].relevance],
            list(candidates).index(d),
        ),
    )[: ctx.config.pipeline.max_sources]
    final = [
        c.model_copy(
            update={
                "selected": True,
                "relevance": picks[c.doc_id].relevance,
                "reason": picks[c.doc_id].reason,
            }
        )
        if c.doc_id in chosen
        else c
        for c in candidates.values()
    ]
    wanted = set(plan.relevant_memory)
    memory = [e for e in entries if _entry_text(e) in wanted]
    return [
        ContextRetrieved(
            queries=[analysis.resolved_query],
            candidates=final,
            memory=memory,
            reasoning=plan.reasoning,
            tiers=tiers,
        )
    ]


def _load(ctx: TurnContext, candidate: Candidate) -> LoadedDoc | None:
    try:
        doc = ctx.read(candidate.doc_path)
    except BadInput:
        return None
    created = str(doc.metadata.get("created_at", ""))
    quality = doc.metadata.get("quality", 0.5)
    return LoadedDoc(
        doc_id=candidate.doc_id,
        kind=candidate.kind,
        title=candidate.title or str(doc.metadata.get("title", "")),
        text=truncate_tokens(doc.content, PER_DOC_TOKENS),
        created_at=created,
        quality=quality if isinstance(quality, (int, float)) else 0.5,
        relevance=candidate.relevance,
        archived=doc.archived,
    )


def _turn_label(doc_id: str) -> str:
    name = doc_id.split("/")[-1]
    return name.replace("turn_", "turn ").lstrip("0")


@dataclass
class _Block:
    """A §2 block being built, with the doc id behind each row (to list sources)."""

    priority: int
    block: ContextBlock
    row_ids: list[str]


def _blocks(
    out: SynthesizeContextOut, paths: dict[str, str], memory: list[MemoryEntry]
) -> list[_Block]:
    built: list[_Block] = []
    for kind, heading, label in (
        ("preference", "User Preferences", "Preference"),
        ("fact", "Known Facts", "Fact"),
    ):
        rows = [m for m in out.memory if m.kind == kind]
        entry = next((e for e in memory if e.kind == kind), None)
        if rows and entry is not None:
            link = wikilink(entry.doc_path, f"{kind}s")
            built.append(
                _Block(
                    0,
                    ContextBlock(
                        heading=heading,
                        meta={"type": f"{kind}s", "count": len(rows)},
                        columns=[label, "Value", "Source"],
                        rows=[[m.key or "-", m.value, link] for m in rows],
                    ),
                    [entry.doc_id] * len(rows),
                )
            )

    def add(priority: int, heading: str, meta: dict[str, Any], rows: list[DocRow]) -> None:
        rows = [r for r in rows if r.doc_id in paths]
        if not rows:
            return
        cells = [
            [
                wikilink(paths[r.doc_id], _label(r.doc_id)),
                r.relevance,
                r.summary,
                "; ".join(r.key_facts),
            ]
            for r in rows
        ]
        built.append(
            _Block(
                priority,
                ContextBlock(
                    heading=heading,
                    meta={**meta, "count": len(rows)},
                    columns=["Source", "Relevance", "Summary", "Key Facts"],
                    rows=cells,
                ),
                [r.doc_id for r in rows],
            )
        )

    add(1, "Cached Research Intelligence", {"type": "research_cache"}, out.research)
    add(2, "Forever Memory Knowledge", {"type": "knowledge"}, out.knowledge)
    if out.prior_turns:
        numbers = [int(re.sub(r"\D", "", r.doc_id.split("/")[-1]) or 0) for r in out.prior_turns]
        best = min((r.relevance for r in out.prior_turns), key=["high", "medium", "low"].index)
        add(
            3,
            "Relevant Prior Turns",
            {"type": "turn_context", "relevant_turns": numbers, "highest_relevance": best},
            out.prior_turns,
        )
    return built


def _label(doc_id: str) -> str:
    name = doc_id.split("/")[-1]
    return "turn " + name.removeprefix("turn_").lstrip("0") if name.startswith("turn_") else doc_id


def _cap(blocks: list[_Block], budget: int) -> list[_Block]:
    """Drop rows (then blocks) of the lowest priority until the blocks fit `budget` tokens."""
    kept = sorted(blocks, key=lambda b: b.priority)

    def total() -> int:
        return sum(count_tokens(render_block(b.block)) for b in kept)

    while kept and total() > budget:
        index = max(range(len(kept)), key=lambda i: (kept[i].priority, i))
        item = kept[index]
        if len(item.block.rows) > 1:
            rows = item.block.rows[:-1]
            block = item.block.model_copy(
                update={"rows": rows, "meta": {**item.block.meta, "count": len(rows)}}
            )
            kept[index] = _Block(item.priority, block, item.row_ids[:-1])
        else:
            del kept[index]
    return kept


def synthesize(ctx: TurnContext, view: TurnView) -> list[Payload]:
    analysis, retrieval = view.analysis, view.retrieval
    assert analysis is not None and retrieval is not None
    selected = [c for c in retrieval.candidates if c.selected]
    selected.sort(key=lambda c: (KIND_PRIORITY.get(c.kind, 4), c.tier != "reference"))
    loaded = [doc for doc in (_load(ctx, c) for c in selected) if doc is not None]
    paths = {c.doc_id: c.doc_path for c in selected}
    memory_rows = [
        MemoryRow(kind=e.kind, key=e.key, value=e.value, source=e.doc_id) for e in retrieval.memory
    ]
    out: SynthesizeContextOut = ctx.think(
        "synthesize_context",
        SynthesizeContextIn(
            query=view.query,
            resolved_query=analysis.resolved_query,
            keywords=analysis.keywords,
            documents=loaded,
            memory=memory_rows,
        ),
    )
    budget = ctx.config.pipeline.context_tokens
    assessment = ContextBlock(
        heading="Context Assessment",
        meta={
            "type": "assessment",
            "context_quality": out.context_quality,
            "gaps_identified": out.gaps,
        },
        text=f"**Context Quality:** {out.context_quality:.2f} · "
        f"**Gaps:** {', '.join(out.gaps) or 'none identified'}",
    )
    capped = _cap(
        _blocks(out, paths, retrieval.memory), budget - count_tokens(render_block(assessment)) - 150
    )
    blocks = [b.block for b in capped] + [assessment]
    tokens = sum(count_tokens(render_block(b)) for b in blocks)
    all_paths = {**paths, **{e.doc_id: e.doc_path for e in retrieval.memory}}
    titles = {d.doc_id: d.title for d in loaded}
    used: list[SourceRef] = []
    for doc_id in dict.fromkeys(i for b in capped for i in b.row_ids):
        used.append(
            SourceRef(doc_id=doc_id, doc_path=all_paths[doc_id], title=titles.get(doc_id) or doc_id)
        )
    unlinked = sum(1 for b in blocks for r in b.rows if "[[" not in " ".join(r))
    stale = [
        d.doc_id
        for d in loaded
        if d.kind == "research" and _age_days(d.created_at, ctx.now()) > 1.0
    ]
    gates = [
        GateResult(gate="schema", passed=True, detail="GatheredContext validated"),
        GateResult(
            gate="source_linking",
            passed=unlinked == 0,
            detail=f"{unlinked} row(s) without a source"
            if unlinked
            else "every row links its source",
        ),
        GateResult(
            gate="freshness",
            passed=not stale,
            detail=f"stale research: {', '.join(stale)}" if stale else "no stale research",
        ),
        GateResult(
            gate="relevance_threshold",
            passed=bool(used),
            detail=f"{len(used)} relevant source(s)"
            if used
            else "no relevant source; proceeding with empty context",
        ),
        GateResult(
            gate="token_budget", passed=tokens <= budget, detail=f"{tokens} of {budget} tokens"
        ),
    ]
    return [ContextSynthesized(blocks=blocks, sources=used, gates=gates, tokens=tokens)]
