"""Phase 2 — Context Gatherer (MIND), run once: RETRIEVAL then SYNTHESIS (seed 003).

RETRIEVAL collects candidates from every source — the turn the query refers to,
the hot, warm and cold tiers (`memory.tiers`: last turns, recent turns, ranked
archive stubs and older turns, each within its token budget), the unified search
over turns, research, memories, knowledge and archive stubs, the user's
preference and fact lines, and cached visit records — and asks the backend which
are relevant and why.  The user's identity anchors always go into §2.  A tier
that fails is a `tier_failed` event; the turn goes on with the others.

SYNTHESIS loads the chosen documents (each cut to 1,500 tokens, memory first,
then research, then recent turns, then older ones; a turn chosen from a tier is
loaded as the tier packed it, within the tier's budget), asks the backend to
extract what helps, and compiles §2: markdown tables with YAML `_meta` blocks,
prior-turn rows within their tier's budget, capped at `[pipeline] context_tokens`
(rows of the lowest-priority blocks are dropped first, identity anchors last).
Irrelevant preferences and facts are omitted, not labelled.  Everything used is
listed with its doc id, and the quality gates are recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from events import Payload, TurnView, parse_document, read_vault_file, render_block, split_sections, wikilink
from events.errors import FrontmatterError, NotInVault
from events.schema import (
    Candidate,
    ContextBlock,
    ContextRetrieved,
    ContextSynthesized,
    GateResult,
    MemoryEntry,
    SourceRef,
    TierFailed,
)
from indexers.fulltext import query_terms

from ..errors import BadInput
from ..memory.packing import TIER_NAMES, TierItem
from ..memory.store import parse_entries
from ..memory.tiers import assemble_tiers, item_text
from ..research import find_visits
from ..tokens import count_tokens, truncate_tokens
from .context import RECORD_CACHE, TurnContext
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
        rel = path.relative_to(ctx.vault.root).as_posix()
        try:  # never through a symlink: it could be another user's file
            data, _ = read_vault_file(ctx.vault.root, rel)
            body = parse_document(data.decode("utf-8"), rel).body
        except (OSError, NotInVault, FrontmatterError, UnicodeDecodeError):
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
    """The text of a document as the pipeline reads it (a turn: its question and answer;
    a visit record: the fields extracted from the page)."""
    if kind == "visit":
        return _visit_text(ctx.vault.root / doc_path)
    try:
        content = ctx.read(doc_path).content
    except BadInput:
        return ""
    return turn_text(content) if kind == "turn" else content


def _visit_text(page: Path) -> str:
    try:
        manifest = orjson.loads((page.parent / "manifest.json").read_bytes())
        data = orjson.loads((page.parent / "extracted_data.json").read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return ""
    fields = data.get("extracted_data", data) if isinstance(data, dict) else {}
    lines = [f"{fields.get('title') or manifest.get('title', '')}."]
    for key in ("price", "availability", "description"):
        if fields.get(key):
            lines.append(f"{key.capitalize()}: {fields[key]}.")
    lines.append(
        f"Visited {manifest.get('visited_at', '')} at {manifest.get('final_url') or manifest.get('url')}."
    )
    return "\n".join(lines)


def _visit_candidates(ctx: TurnContext, terms: list[str]) -> list[Candidate]:
    """Earlier page visits matching the query, so follow-ups reuse them (seed 003 §6)."""
    if not terms:
        return []
    out = []
    for visit in find_visits(ctx.vault.layout.users_dir, ctx.user, terms, limit=4):
        rel = visit.rel_path
        parts = rel.split("/")
        if len(parts) < 6:
            continue
        out.append(
            Candidate(
                doc_id=f"{ctx.user}/{parts[3]}/visit/{visit.visit_id}",
                doc_path=f"{rel}/page_content.md",
                kind="visit",
                title=visit.title,
                tier="visit",
            )
        )
    return out


def _entry_text(entry: MemoryEntry) -> str:
    return f"{entry.key}: {entry.value}" if entry.key else entry.value


def _plain(text: str) -> str:
    return " ".join(re.sub(r"(?<!\S)#identity\b", "", text, flags=re.I).split()).lower()


def _tier_candidate(tier: str, item: TierItem) -> Candidate:
    record = item.record
    return Candidate(
        doc_id=record.doc_id,
        doc_path=record.doc_path,
        kind=record.kind,
        title=record.query[:80],
        score=item.search_score,
        tier=tier,
    )


def _tier_view(tier: str, item: TierItem, now: datetime) -> CandidateView:
    created = item.record.created_at
    return CandidateView(
        doc_id=item.doc_id,
        kind=item.record.kind,
        title=item.record.query[:80],
        score=item.search_score,
        snippet=item.text[:600],
        age_days=max(0.0, (now - created).total_seconds() / 86400.0) if created else 0.0,
        tier=tier,
    )


def retrieve(ctx: TurnContext, view: TurnView) -> list[Payload]:
    analysis = view.analysis
    assert analysis is not None
    now = ctx.now()
    candidates: dict[str, Candidate] = {}

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
    topic = analysis.primary_topic if analysis.primary_topic != "general" else None
    found = ctx.memory.search(  # one search serves the candidates and the cold tier
        analysis.resolved_query,
        user=ctx.user,
        topic=topic,
        limit=max(SEARCH_LIMIT, ctx.config.tiers.cold_candidates),
        now=now,
        exclude_ids=[ctx.doc_id],
    )
    hits = found[:SEARCH_LIMIT]
    assembled = assemble_tiers(
        ctx.vault,
        ctx.user,
        analysis.resolved_query,
        before=ctx.turn,
        now=now,
        memory=ctx.memory,
        search_hits=[h for h in found if h["kind"] in ("turn", "archived_turn")],
        cache=ctx.extras.get(RECORD_CACHE),
    )
    tiers: dict[str, Any] = assembled.summary()
    in_tier = {item.doc_id: name for name, item in assembled.items()}
    for item in assembled.hot.items:
        add(_tier_candidate("hot", item))
    extra_tiers = ctx.extras.get("tiers")
    if callable(extra_tiers):
        for candidate in extra_tiers(ctx, view, tiers):
            add(candidate)
    visit_terms = query_terms(reference.title) if reference is not None else analysis.keywords
    for candidate in _visit_candidates(ctx, visit_terms):
        add(candidate)
    views: dict[str, CandidateView] = {}
    for hit in hits:
        add(
            Candidate(
                doc_id=hit["doc_id"],
                doc_path=hit["doc_path"],
                kind=hit["kind"],
                title=hit["title"],
                score=hit["score"],
                tier=in_tier.get(hit["doc_id"], "search"),
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
            tier=candidates[hit["doc_id"]].tier if hit["doc_id"] in candidates else "search",
        )
    for name, item in assembled.items():  # after the search: its hits lead the ties
        add(_tier_candidate(name, item))
        if item.doc_id in candidates and candidates[item.doc_id].tier == name:
            views.setdefault(item.doc_id, _tier_view(name, item, now))
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
    anchors = [
        MemoryEntry(
            kind="fact",
            value=a.statement,
            doc_id=a.doc_id,
            doc_path=a.doc_path,
            identity=True,  # type: ignore[call-arg]
        )
        for a in assembled.cold.anchors
    ]
    stated = {_plain(a.value) for a in anchors}
    memory = anchors + [
        e for e in entries if _entry_text(e) in wanted and _plain(_entry_text(e)) not in stated
    ]
    failed: list[Payload] = [
        TierFailed(tier=t.name, error_type=t.error[0], message=t.error[1])  # type: ignore[arg-type]
        for t in assembled.failures
        if t.error is not None
    ]
    return failed + [
        ContextRetrieved(
            queries=[analysis.resolved_query],
            candidates=final,
            memory=memory,
            reasoning=plan.reasoning,
            tiers=tiers,
        )
    ]


def _load_tier_item(ctx: TurnContext, candidate: Candidate, item: dict[str, Any]) -> LoadedDoc | None:
    """A turn chosen from a tier, as the tier packed it (never more than its tokens there)."""
    text = item_text(ctx.vault, ctx.user, item)
    if text is None:
        return None
    return LoadedDoc(
        doc_id=candidate.doc_id,
        kind=candidate.kind,
        title=candidate.title,
        text=text,
        relevance=candidate.relevance,
        archived=bool(item.get("archived")),
    )


def _load(ctx: TurnContext, candidate: Candidate) -> LoadedDoc | None:
    if candidate.kind == "visit":
        text = _visit_text(ctx.vault.root / candidate.doc_path)
        return (
            LoadedDoc(
                doc_id=candidate.doc_id,
                kind="research",
                title=candidate.title,
                text=text,
                relevance=candidate.relevance,
            )
            if text
            else None
        )
    try:
        doc = ctx.read(candidate.doc_path)
    except BadInput:
        return None
    created = str(doc.metadata.get("created_at", ""))
    quality = doc.metadata.get("quality", 0.5)
    content = turn_text(doc.content) if candidate.kind == "turn" else doc.content
    return LoadedDoc(
        doc_id=candidate.doc_id,
        kind=candidate.kind,
        title=candidate.title or str(doc.metadata.get("title", "")),
        text=truncate_tokens(content, PER_DOC_TOKENS),
        created_at=created,
        quality=quality if isinstance(quality, (int, float)) else 0.5,
        relevance=candidate.relevance,
        archived=doc.archived,
    )


@dataclass
class _Block:
    """A §2 block being built, with the doc id behind each row (to list sources)."""

    priority: int
    block: ContextBlock
    row_ids: list[str]


def _blocks(
    out: SynthesizeContextOut,
    paths: dict[str, str],
    memory: list[MemoryEntry],
    tiers: dict[str, str],
) -> list[_Block]:
    built: list[_Block] = []
    anchors = [e for e in memory if (e.model_extra or {}).get("identity")]
    if anchors:
        built.append(
            _Block(
                -1,
                ContextBlock(
                    heading="Identity Anchors",
                    meta={"type": "identity_anchors", "count": len(anchors)},
                    columns=["Fact", "Source"],
                    rows=[[a.value, wikilink(a.doc_path, "facts")] for a in anchors],
                ),
                [a.doc_id for a in anchors],
            )
        )
    stated = {_plain(a.value) for a in anchors}
    for kind, heading, label in (
        ("preference", "User Preferences", "Preference"),
        ("fact", "Known Facts", "Fact"),
    ):
        rows = [
            m
            for m in out.memory
            if m.kind == kind and _plain(f"{m.key}: {m.value}" if m.key else m.value) not in stated
        ]
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
        meta: dict[str, Any] = {
            "type": "turn_context",
            "relevant_turns": numbers,
            "highest_relevance": best,
        }
        by_tier = {
            tier: [n for n, r in zip(numbers, out.prior_turns, strict=True) if tiers.get(r.doc_id) == tier]
            for tier in TIER_NAMES
        }
        if any(by_tier.values()):
            meta["tiers"] = {t: n for t, n in by_tier.items() if n}
        add(3, "Relevant Prior Turns", meta, out.prior_turns)
    return built


def _within_tier_budgets(
    rows: list[DocRow], paths: dict[str, str], tiers: dict[str, str], budgets: dict[str, int]
) -> list[DocRow]:
    """Prior-turn rows whose turn came from a tier, kept only while that tier's budget holds."""
    used = dict.fromkeys(budgets, 0)
    kept = []
    for row in rows:
        tier = tiers.get(row.doc_id)
        if tier in budgets and row.doc_id in paths:
            cells = [wikilink(paths[row.doc_id], _label(row.doc_id)), row.relevance, row.summary]
            tokens = count_tokens(" | ".join([*cells, "; ".join(row.key_facts)]))
            if used[tier] + tokens > budgets[tier]:
                continue
            used[tier] += tokens
        kept.append(row)
    return kept


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
    packed = {
        item["doc_id"]: item
        for tier in TIER_NAMES
        for item in (retrieval.tiers.get(tier) or {}).get("items", [])
        if isinstance(item, dict) and "doc_id" in item
    }
    tier_of = {c.doc_id: c.tier for c in selected if c.tier in TIER_NAMES and c.doc_id in packed}
    loaded = [
        doc
        for doc in (
            _load_tier_item(ctx, c, packed[c.doc_id]) if c.doc_id in tier_of else _load(ctx, c)
            for c in selected
        )
        if doc is not None
    ]
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
    cfg = ctx.config.tiers
    budgets = {"hot": cfg.hot_tokens, "warm": cfg.warm_tokens, "cold": cfg.cold_tokens}
    out = out.model_copy(
        update={"prior_turns": _within_tier_budgets(out.prior_turns, paths, tier_of, budgets)}
    )
    capped = _cap(
        _blocks(out, paths, retrieval.memory, tier_of),
        budget - count_tokens(render_block(assessment)) - 150,
    )
    blocks = [b.block for b in capped] + [assessment]
    tokens = sum(count_tokens(render_block(b)) for b in blocks)
    all_paths = {**paths, **{e.doc_id: e.doc_path for e in retrieval.memory}}
    titles = {d.doc_id: d.title for d in loaded}
    used: list[SourceRef] = []
    for doc_id in dict.fromkeys(i for b in capped for i in b.row_ids):
        used.append(SourceRef(doc_id=doc_id, doc_path=all_paths[doc_id], title=titles.get(doc_id) or doc_id))
    unlinked = sum(1 for b in blocks for r in b.rows if "[[" not in " ".join(r))
    stale = [d.doc_id for d in loaded if d.kind == "research" and _age_days(d.created_at, ctx.now()) > 1.0]
    gates = [
        GateResult(gate="schema", passed=True, detail="GatheredContext validated"),
        GateResult(
            gate="source_linking",
            passed=unlinked == 0,
            detail=f"{unlinked} row(s) without a source" if unlinked else "every row links its source",
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
        GateResult(gate="token_budget", passed=tokens <= budget, detail=f"{tokens} of {budget} tokens"),
    ]
    return [ContextSynthesized(blocks=blocks, sources=used, gates=gates, tokens=tokens)]
