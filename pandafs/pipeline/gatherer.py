"""Phase 2 — Context Gatherer (MIND), step one, RETRIEVAL: collect candidates from every
source and ask the backend which are relevant and why.

Sources: the turn the query refers to, the hot, warm and cold tiers (`memory.tiers`), the
unified search, the user's preference and fact lines, and cached visit records; the
identity anchors always go into §2.  A tier that fails, or a search that cannot read the
index, is a `tier_failed` event and the turn goes on.  Step two is
`pipeline.context_synthesis`."""

from __future__ import annotations

from contextlib import suppress
from datetime import datetime
from typing import Any

from events.documents import parse_document
from events.errors import FrontmatterError, NotInVault
from events.fsio import read_vault_file
from events.projection import TurnView
from events.schema import Candidate, ContextRetrieved, MemoryEntry, Payload, TierFailed
from indexers.errors import IndexingError
from indexers.words import query_terms

from ..errors import BadInput, first_line
from ..memory.store import parse_entries
from ..memory.tiers import assemble_tiers
from ..memory.turn_records import TurnReader, TurnRecord
from ..research.visits import find_visits
from ..tasks.schemas import CandidateView, Pick, RetrievalIn, RetrievalOut
from ..tokens import count_tokens
from .context import RECORD_CACHE, TurnContext
from .sources import age_days, first_share, plain_text, prior_turn, source_text

__all__ = ["retrieve"]

SEARCH_LIMIT = 30
"""Search hits offered as candidates: §2's budget, not this, bounds what goes in."""
NEIGHBOURS_OF = 3
"""The best turn hits whose neighbours in their episode are candidates too."""


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
        entries += [
            MemoryEntry(kind=kind, key=e.key or "", value=e.value, doc_id=doc_id, doc_path=rel)  # type: ignore[arg-type]
            for e in parse_entries(body)
        ]
    return entries


def _visit_candidates(ctx: TurnContext, terms: list[str]) -> list[Candidate]:
    """Earlier page visits matching the query, so follow-ups reuse them."""
    out = []
    for visit in find_visits(ctx.vault.layout, ctx.user, terms, limit=4):
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


def _turn_candidate(record: TurnRecord, score: float, tier: str) -> Candidate:
    """A past turn as a candidate."""
    return Candidate(
        doc_id=record.doc_id,
        kind=record.kind,
        title=record.query[:80],
        doc_path=record.doc_path,
        score=score,
        tier=tier,
    )


def _turn_view(record: TurnRecord, score: float, tier: str, snippet: str, now: datetime) -> CandidateView:
    """A past turn as the backend is shown it."""
    return CandidateView(
        doc_id=record.doc_id,
        kind=record.kind,
        title=record.query[:80],
        score=score,
        snippet=snippet[:600],
        age_days=age_days(record.created_at, now),
        tier=tier,
    )


RANK = {"high": 0, "medium": 1, "low": 2}
ROW_TOKENS = 50
"""What a source's row in §2 takes beside its text (its link, date and relevance): a
source chosen beyond what the rows hold would be read for nothing."""
NEIGHBOUR_WEIGHT = 0.5
"""A strong hit's neighbour ranks at this share of the hit's score."""


def _neighbours(
    ctx: TurnContext, hits: list[dict[str, Any]], now: datetime
) -> list[tuple[Candidate, CandidateView]]:
    """The turns just before and after each strong turn hit, in the same episode (no
    longer silence than `[search] episode_gap_minutes` between them): a conversation's
    evidence is often split over a question and the turn that answers or follows it."""
    reader = TurnReader(ctx.vault, ctx.user, ctx.extras.get(RECORD_CACHE))
    gap = ctx.config.search.episode_gap_minutes * 60.0
    out = []
    for hit in hits:
        origin = prior_turn(ctx, str(hit["doc_id"]), "turn") if hit["kind"] == "turn" else None
        if origin is None or origin.created_at is None:
            continue
        for number in (origin.number - 1, origin.number + 1):
            record = reader.live(number) if number > 0 else None
            if record is None or record.created_at is None:
                continue
            if abs((record.created_at - origin.created_at).total_seconds()) > gap:
                continue
            score = float(hit["score"]) * NEIGHBOUR_WEIGHT
            out.append(
                (
                    _turn_candidate(record, score, "neighbour"),
                    _turn_view(record, score, "neighbour", record.full_text(), now),
                )
            )
    return out


def _by_budget(ctx: TurnContext, candidates: dict[str, Candidate], picks: dict[str, Pick]) -> list[str]:
    """The picked documents, most relevant first (the referenced turn, then by relevance
    and search score), until their rows fill §2's token budget: the last one chosen may
    be abridged there, none is cut for a count."""
    order = list(candidates)
    ranked = sorted(
        picks,
        key=lambda d: (
            candidates[d].tier != "reference",
            RANK[picks[d].relevance],
            -candidates[d].score,
            order.index(d),
        ),
    )
    cfg = ctx.config.pipeline
    chosen: list[str] = []
    given: list[int] = []
    for doc_id in ranked:
        if sum(given) + ROW_TOKENS * len(given) >= cfg.context_tokens:
            break
        if cfg.max_sources and len(chosen) >= cfg.max_sources:
            break
        candidate = candidates[doc_id]
        record = prior_turn(ctx, doc_id, candidate.kind)
        tokens = (
            record.tokens if record else count_tokens(source_text(ctx, candidate.doc_path, candidate.kind))
        )
        chosen.append(doc_id)
        given.append(first_share(tokens, given, cfg.context_tokens))
    return chosen


def retrieve(ctx: TurnContext, view: TurnView) -> list[Payload]:
    analysis = view.analysis
    assert analysis is not None
    now = ctx.clock()
    candidates: dict[str, Candidate] = {}

    def add(candidate: Candidate) -> None:
        if candidate.doc_id not in candidates and candidate.doc_id != ctx.doc_id:
            candidates[candidate.doc_id] = candidate

    reference = analysis.content_reference
    if reference is not None and reference.doc_id:
        with suppress(BadInput):  # a turn that is not there is no candidate
            path = ctx.memory.resolve(reference.doc_id)
            add(
                Candidate(
                    doc_id=reference.doc_id,
                    doc_path=path,
                    kind="turn",
                    title=reference.title,
                    tier="reference",
                )
            )
    topic = analysis.primary_topic if analysis.primary_topic != "general" else None
    unsearched: list[Payload] = []
    try:
        found = ctx.memory.search(  # one search serves the candidates and the cold tier
            analysis.resolved_query,
            user=ctx.user,
            topic=topic,
            limit=max(SEARCH_LIMIT, ctx.config.tiers.cold_candidates),
            now=now,
            exclude_ids=[ctx.doc_id],
            snippets=SEARCH_LIMIT,  # the candidates show theirs; the cold tier reads summaries
        )
    except IndexingError as exc:  # a damaged or unreadable index costs its hits, not the turn:
        # the tiers, memory lines and visits are read from the files (`verify` names the damage)
        found = []
        unsearched.append(TierFailed(tier="search", error_type=type(exc).__name__, message=first_line(exc)))
    hits = found[:SEARCH_LIMIT]
    assembled = assemble_tiers(
        ctx.vault,
        ctx.user,
        analysis.resolved_query,
        before=ctx.turn,
        now=now,
        search_hits=[h for h in found if h["kind"] in ("turn", "archived_turn")],
        cache=ctx.extras.get(RECORD_CACHE),
    )
    tiers: dict[str, Any] = assembled.summary()
    in_tier = {item.doc_id: name for name, item in assembled.items()}
    for item in assembled.hot.items:
        add(_turn_candidate(item.record, item.search_score, "hot"))
    visit_terms = query_terms(reference.title) if reference is not None else analysis.keywords
    for candidate in _visit_candidates(ctx, visit_terms):
        add(candidate)
    views: dict[str, CandidateView] = {}
    for hit in hits:
        both = {k: hit[k] for k in ("doc_id", "kind", "title", "score")}
        add(Candidate(**both, doc_path=hit["doc_path"], tier=in_tier.get(hit["doc_id"], "search")))
        views[hit["doc_id"]] = CandidateView(
            **both,
            snippet=hit["snippet"].replace("**", ""),
            age_days=age_days(hit["created_at"], now),
            quality=hit["quality"],
            tier=candidates[hit["doc_id"]].tier if hit["doc_id"] in candidates else "search",
        )
    for candidate, neighbour in _neighbours(ctx, hits[:NEIGHBOURS_OF], now):
        add(candidate)
        views.setdefault(candidate.doc_id, neighbour)
    for name, item in assembled.items():  # after the search: its hits lead the ties
        doc_id = item.doc_id
        if doc_id not in candidates:
            add(_turn_candidate(item.record, item.search_score, name))
        if doc_id in candidates and candidates[doc_id].tier == name and doc_id not in views:
            views[doc_id] = _turn_view(item.record, item.search_score, name, item.text, now)
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
    chosen = _by_budget(ctx, candidates, picks)
    final = [  # the chosen first, in the order they spend §2's budget
        candidates[d].model_copy(
            update={"selected": True, "relevance": picks[d].relevance, "reason": picks[d].reason}
        )
        for d in chosen
    ] + [c for c in candidates.values() if c.doc_id not in chosen]
    wanted = set(plan.relevant_memory)
    anchors = [
        MemoryEntry(kind="fact", value=a.statement, doc_id=a.doc_id, doc_path=a.doc_path, identity=True)  # type: ignore[call-arg]
        for a in assembled.cold.anchors
    ]
    stated = {plain_text(a.value) for a in anchors}
    memory = anchors + [
        e for e in entries if _entry_text(e) in wanted and plain_text(_entry_text(e)) not in stated
    ]
    failed: list[Payload] = unsearched + [
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
