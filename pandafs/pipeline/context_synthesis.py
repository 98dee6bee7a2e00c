"""Phase 2 — Context Gatherer (MIND), step two, SYNTHESIS: compile §2 from the
documents RETRIEVAL chose (`pipeline.gatherer`).

It loads the chosen documents (each cut to 1,500 tokens, memory first, then research,
then recent turns, then older ones; a turn chosen from a tier is loaded as the tier
packed it, within the tier's budget), asks the backend to extract what helps, and
compiles §2: markdown tables with YAML `_meta` blocks, prior-turn rows within their
tier's budget, capped at `[pipeline] context_tokens` (rows of the lowest-priority
blocks are dropped first, identity anchors last).  Irrelevant preferences and facts
are omitted, not labelled.  Everything used is listed with its doc id, and the
quality gates are recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from events.documents import wikilink
from events.projection import TurnView
from events.render import render_block
from events.schema import (
    Candidate,
    ContextBlock,
    ContextSynthesized,
    GateResult,
    MemoryEntry,
    Payload,
    SourceRef,
)

from ..errors import BadInput, Unreadable
from ..memory.packing import TIER_NAMES
from ..memory.tiers import item_text
from ..tasks.schemas import (
    DocRow,
    LoadedDoc,
    MemoryRow,
    SynthesizeContextIn,
    SynthesizeContextOut,
)
from ..tokens import count_tokens, truncate_tokens
from .context import TurnContext
from .sources import age_days, plain_text, turn_text, visit_text

__all__ = ["synthesize"]

PER_DOC_TOKENS = 1500
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
        text = visit_text(ctx.vault.root, candidate.doc_path)
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
    except (BadInput, Unreadable):
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
    stated = {plain_text(a.value) for a in anchors}
    for kind, heading, label in (
        ("preference", "User Preferences", "Preference"),
        ("fact", "Known Facts", "Fact"),
    ):
        rows = [
            m
            for m in out.memory
            if m.kind == kind and plain_text(f"{m.key}: {m.value}" if m.key else m.value) not in stated
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
    stale = [d.doc_id for d in loaded if d.kind == "research" and age_days(d.created_at, ctx.now()) > 1.0]
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
