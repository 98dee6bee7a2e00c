"""Phase 2 — Context Gatherer (MIND), step two, SYNTHESIS: compile §2 from the documents
RETRIEVAL chose (`pipeline.gatherer`).

It loads them (each at most `PER_DOC_TOKENS`), asks the backend what helps, and compiles
§2 as markdown tables with YAML `_meta` blocks within `[pipeline] context_tokens`: memory,
research and knowledge first, then the prior turns, most relevant first, each dated (when,
its episode, the date each "two days ago" names), read from its own file, whole while it
fits, else abridged by its least relevant sentences, never one sharing a word with the
question.  Irrelevant preferences and facts are omitted; every source used is listed with
its doc id, and the quality gates are recorded."""

import re
from typing import Any, NamedTuple

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
from events.stamps import format_ts
from indexers.words import query_terms, stem, words_of

from ..memory.tiers import TIER_NAMES
from ..tasks.schemas import DocRow, LoadedDoc, MemoryRow, SynthesizeContextIn, SynthesizeContextOut
from ..tokens import count_tokens, truncate_tokens
from .context import TurnContext
from .gatherer import RANK
from .sources import (
    PER_DOC_TOKENS,
    abridge,
    age_days,
    date_phrases,
    first_share,
    plain_text,
    prior_turn,
    sentence_pieces,
    turn_text,
    visit_text,
)

__all__ = ["synthesize"]

MIN_TEXT_TOKENS = 24
"""A prior turn gets at least this much room for its text, or none."""
READ_WHOLE = 2
"""The most relevant chosen prior turns the backend reads whole (up to `PER_DOC_TOKENS`) ..."""
READ_TOKENS = 400
"""... and what it reads of each of the others."""
USER_WORDS = 1000.0
"""The score that puts a sentence of the user's own message before any that matches."""
KIND_PRIORITY = {"preferences": 0, "facts": 0, "memory": 1, "research": 2, "visit": 2, "knowledge": 3}
KIND_PRIORITY |= {"site": 3, "note": 3, "turn": 4, "archived_turn": 5}


def _load(ctx: TurnContext, candidate: Candidate, rank: int, asked: set[str]) -> LoadedDoc | None:
    """A chosen document as the backend reads it: a prior turn the 2 most relevant whole
    (up to `PER_DOC_TOKENS`), the others abridged to `READ_TOKENS` (the user's words and
    the matching sentences first); §2's rows read the turns again, whole."""
    if candidate.kind == "visit":
        text = visit_text(ctx.vault.root, candidate.doc_path)
        seen = {"doc_id": candidate.doc_id, "title": candidate.title, "relevance": candidate.relevance}
        return LoadedDoc(**seen, kind="research", text=text) if text else None
    record = prior_turn(ctx, candidate.doc_id, candidate.kind)
    if record is not None:
        return LoadedDoc(
            doc_id=candidate.doc_id,
            kind=candidate.kind,
            title=candidate.title or record.query[:80],
            text=_read_text(record.full_text(), rank, asked),
            created_at=format_ts(record.created_at) if record.created_at else "",
            relevance=candidate.relevance,
            archived=record.archived,
        )
    doc = ctx.read(candidate.doc_path)
    if doc is None:
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


class _Block(NamedTuple):
    """A §2 block being built, with the doc id behind each row (to list sources)."""

    priority: int
    block: ContextBlock
    row_ids: list[str]


def _block(
    priority: int, heading: str, kind: str, columns: list[str], rows: list[list[str]], ids: list[str]
) -> _Block:
    meta: dict[str, Any] = {"type": kind, "count": len(rows)}
    return _Block(priority, ContextBlock(heading=heading, meta=meta, columns=columns, rows=rows), ids)


def _blocks(out: SynthesizeContextOut, paths: dict[str, str], memory: list[MemoryEntry]) -> list[_Block]:
    built: list[_Block] = []
    anchors = [e for e in memory if (e.model_extra or {}).get("identity")]
    if anchors:
        rows = [[a.value, wikilink(a.doc_path, "facts")] for a in anchors]
        ids = [a.doc_id for a in anchors]
        built.append(_block(-1, "Identity Anchors", "identity_anchors", ["Fact", "Source"], rows, ids))
    stated = {plain_text(a.value) for a in anchors}
    for kind, heading, label in (
        ("preference", "User Preferences", "Preference"),
        ("fact", "Known Facts", "Fact"),
    ):
        said = [
            m
            for m in out.memory
            if m.kind == kind and plain_text(f"{m.key}: {m.value}" if m.key else m.value) not in stated
        ]
        entry = next((e for e in memory if e.kind == kind), None)
        if said and entry is not None:
            link = wikilink(entry.doc_path, f"{kind}s")
            rows = [[m.key or "-", m.value, link] for m in said]
            built.append(
                _block(0, heading, f"{kind}s", [label, "Value", "Source"], rows, [entry.doc_id] * len(rows))
            )
    columns = ["Source", "Relevance", "Summary", "Key Facts"]
    for priority, heading, kind, found in (
        (1, "Cached Research Intelligence", "research_cache", out.research),
        (2, "Forever Memory Knowledge", "knowledge", out.knowledge),
    ):
        kept = [r for r in found if r.doc_id in paths]
        if kept:
            rows = [
                [wikilink(paths[r.doc_id], _label(r.doc_id)), r.relevance, r.summary, "; ".join(r.key_facts)]
                for r in kept
            ]
            built.append(_block(priority, heading, kind, columns, rows, [r.doc_id for r in kept]))
    return built


class _Turn(NamedTuple):
    """A chosen prior turn as §2 shows it: its row's cells but the text, and its text."""

    doc_id: str
    cells: list[str]  # source, when, relevance
    text: str
    facts: list[str]  # what the backend extracted that the text does not already say
    tier: str | None


def _turns(ctx: TurnContext, chosen: list[Candidate], rows: dict[str, DocRow]) -> list[_Turn]:
    out = []
    for candidate in chosen:
        row = rows.get(candidate.doc_id)
        record = prior_turn(ctx, candidate.doc_id, candidate.kind)
        if row is None or record is None:
            continue
        text = " ".join(date_phrases(record.full_text(), record.created_at).split())
        words = words_of(text)
        said = {stem(w) for w in set(words)} - {""}
        facts = [f for f in row.key_facts if not _said(f, said, words)]
        link = wikilink(candidate.doc_path, _label(candidate.doc_id))
        when = record.created_at.strftime("%Y-%m-%d (%a) %H:%M") if record.created_at else "undated"
        if record.session:  # its episode: the session it was imported with
            when += f", session {record.session}"
        cells = [link, when, row.relevance]
        out.append(_Turn(candidate.doc_id, cells, text, facts, candidate.tier))
    return out


def _said(fact: str, stems: set[str], words: list[str]) -> bool:
    """Whether a text (its `stems` and `words`) already says `fact`: every word of it, the
    last one perhaps cut short."""
    said = words_of(fact)
    if not said or {stem(w) for w in said[:-1]} - {""} - stems:
        return False
    return stem(said[-1]) in stems or any(w.startswith(said[-1]) for w in words)


def _stems(text: str) -> set[str]:
    return {stem(w) for w in set(words_of(text))} - {""}


def _turn_block(turns: list[_Turn], asked: set[str], room: int) -> _Block | None:
    """The prior turns, most relevant first, in `room` tokens.  Each is first given its
    `first_share` (the best ones whole), then what is left grows them in the same order
    up to `PER_DOC_TOKENS`; a turn given less than its text is abridged: the user's own
    words are kept first, then the sentences holding a word of the question (`asked`: its
    stems), best first, then their neighbours.  A turn with no room for `MIN_TEXT_TOKENS` is left out."""
    room -= count_tokens(render_block(_turn_context([], "high", {}))) + 8
    plan: list[list[Any]] = []  # [turn, its tokens, the tokens it is given]
    budget = room
    for turn in turns:
        # its other cells, the pipes around them and its number in `_meta`
        fixed = count_tokens(" | ".join([*turn.cells, "; ".join(turn.facts)])) + 10
        size = count_tokens(turn.text)
        give = min(first_share(size, [p[2] for p in plan], budget), room - fixed)
        if give < min(size, MIN_TEXT_TOKENS):
            continue
        plan.append([turn, size, give])
        room -= fixed + give
    for item in plan:
        more = min(min(item[1], PER_DOC_TOKENS) - item[2], room)
        if more > 0:
            item[2] += more
            room -= more
    kept: list[tuple[_Turn, list[str]]] = []
    for turn, size, give in plan:
        text = turn.text if size <= give else abridge(turn.text, _sentence_scores(turn.text, asked), give)
        if text:
            kept.append((turn, [*turn.cells, text, "; ".join(turn.facts)]))
    if not kept:
        return None
    numbers = [int(re.sub(r"\D", "", t.doc_id.split("/")[-1]) or 0) for t, _ in kept]
    best = min((t.cells[2] for t, _ in kept), key=RANK.__getitem__)
    by_tier = {
        tier: [n for n, (t, _) in zip(numbers, kept, strict=True) if t.tier == tier] for tier in TIER_NAMES
    }
    block = _turn_context([cells for _, cells in kept], best, {t: n for t, n in by_tier.items() if n})
    block.meta["relevant_turns"] = numbers
    return _Block(3, block, [t.doc_id for t, _ in kept])


def _read_text(text: str, rank: int, asked: set[str]) -> str:
    budget = PER_DOC_TOKENS if rank < READ_WHOLE else READ_TOKENS
    if count_tokens(text) <= budget:
        return text
    return abridge(text, _sentence_scores(text, asked), budget) or truncate_tokens(text, budget)


def _sentence_scores(text: str, asked: set[str]) -> list[float]:
    """Per sentence of a turn: the question's words it holds, and above any of them
    every sentence of the user's message (what the user said about themselves)."""
    scores, user = [], True
    for piece in sentence_pieces(text):
        user = user and not piece.startswith("Assistant:")
        scores.append(len(_stems(piece) & asked) + (USER_WORDS if user else 0.0))
    return scores


def _turn_context(rows: list[list[str]], best: str, tiers: dict[str, list[int]]) -> ContextBlock:
    meta: dict[str, Any] = {"type": "turn_context", "relevant_turns": [], "highest_relevance": best}
    if tiers:
        meta["tiers"] = tiers
    meta["count"] = len(rows)
    return ContextBlock(
        heading="Relevant Prior Turns",
        meta=meta,
        columns=["Source", "When", "Relevance", "Turn", "Key Facts"],
        rows=rows,
    )


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
    picked = [c for c in retrieval.candidates if c.selected]  # in the order retrieval ranked them
    selected = sorted(picked, key=lambda c: (KIND_PRIORITY.get(c.kind, 4), c.tier != "reference"))
    asked = _stems(" ".join(query_terms(f"{analysis.resolved_query} {' '.join(analysis.keywords)}")))
    rank = {c.doc_id: i for i, c in enumerate(picked)}
    loaded = [doc for doc in (_load(ctx, c, rank[c.doc_id], asked) for c in selected) if doc is not None]
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
        meta={"type": "assessment", "context_quality": out.context_quality, "gaps_identified": out.gaps},
        text=f"**Context Quality:** {out.context_quality:.2f} · "
        f"**Gaps:** {', '.join(out.gaps) or 'none identified'}",
    )
    room = budget - count_tokens(render_block(assessment)) - 150
    built = _blocks(out, paths, retrieval.memory)
    turns = _turn_block(
        _turns(ctx, picked, {r.doc_id: r for r in out.prior_turns}),
        asked,
        room - sum(count_tokens(render_block(b.block)) for b in built),
    )
    capped = _cap([*built, *([turns] if turns else [])], room)
    blocks = [b.block for b in capped] + [assessment]
    tokens = sum(count_tokens(render_block(b)) for b in blocks)
    all_paths = {**paths, **{e.doc_id: e.doc_path for e in retrieval.memory}}
    titles = {d.doc_id: d.title for d in loaded}
    used: list[SourceRef] = []
    for doc_id in dict.fromkeys(i for b in capped for i in b.row_ids):
        used.append(SourceRef(doc_id=doc_id, doc_path=all_paths[doc_id], title=titles.get(doc_id) or doc_id))
    unlinked = sum(1 for b in blocks for r in b.rows if "[[" not in " ".join(r))
    stale = [d.doc_id for d in loaded if d.kind == "research" and age_days(d.created_at, ctx.clock()) > 1.0]
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
