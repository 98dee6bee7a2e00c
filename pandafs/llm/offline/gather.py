"""Phase 2 by rule: keep the documents and memory that share words with the query, and
extract the sentences that do (irrelevant preferences and facts are omitted)."""

from __future__ import annotations

from events.layout import TURN_KINDS
from indexers.words import query_terms

from ...tasks import schemas as t
from .text import sentences, stems_overlap


def plan_retrieval(data: t.RetrievalIn) -> t.RetrievalOut:
    # every content word of the question, not only the analyzer's first keywords: a long
    # question often names what it asks for after them
    asked = list(dict.fromkeys([*data.keywords, *query_terms(data.resolved_query)]))
    # Scores are compared within their class: a long turn that repeats the words of a
    # short memory outscores it, and the memory must not fall under the threshold for it.
    top: dict[bool, float] = {}
    for c in data.candidates:
        top[c.kind in TURN_KINDS] = max(top.get(c.kind in TURN_KINDS, 0.0), c.score)
    picks: list[t.Pick] = []
    for c in data.candidates:
        overlap = stems_overlap(asked, f"{c.title} {c.snippet}")
        norm = c.score / (top.get(c.kind in TURN_KINDS) or 1.0)
        if c.tier == "reference":
            picks.append(t.Pick(doc_id=c.doc_id, relevance="high", reason="the query refers to this turn"))
            continue
        if overlap == 0 or (c.tier == "search" and norm < data.threshold):
            continue
        relevance = (
            "high" if norm >= 0.6 and overlap >= 2 else "medium" if norm >= 0.3 or overlap >= 2 else "low"
        )
        where = f"{c.tier} tier, " if c.tier else ""
        picks.append(
            t.Pick(
                doc_id=c.doc_id,
                relevance=relevance,
                reason=f"{where}shares {overlap} query term(s)",
            )
        )
    memory = [m for m in data.memory_entries if stems_overlap(data.keywords, m) > 0]
    reasoning = (
        f"{len(picks)} of {len(data.candidates)} documents and {len(memory)} memory entries share query terms"
    )
    return t.RetrievalOut(relevant=picks, relevant_memory=memory, reasoning=reasoning)


def _key_facts(keywords: list[str], text: str, limit: int = 3) -> list[str]:
    scored = [(stems_overlap(keywords, s), -i, s) for i, s in enumerate(sentences(text))]
    scored = [x for x in scored if x[0] > 0]
    scored.sort(reverse=True)
    return [s[:300] for _, _, s in scored[:limit]]


def synthesize_context(data: t.SynthesizeContextIn) -> t.SynthesizeContextOut:
    keywords = data.keywords
    out = t.SynthesizeContextOut()
    out.memory = list(data.memory)
    covered: set[str] = set()
    for doc in data.documents:
        facts = _key_facts(keywords, doc.text)
        if not facts:
            continue
        for word in keywords:
            if any(stems_overlap([word], f) for f in facts):
                covered.add(word)
        row = t.DocRow(
            doc_id=doc.doc_id,
            relevance=doc.relevance,
            summary=doc.title or facts[0][:120],
            key_facts=facts,
        )
        if doc.kind in ("turn", "archived_turn"):
            out.prior_turns.append(row)
        elif doc.kind == "research":
            out.research.append(row)
        else:
            out.knowledge.append(row)
    out.gaps = [
        w for w in keywords if w not in covered and not any(stems_overlap([w], m.value) for m in out.memory)
    ]
    found = len(out.prior_turns) + len(out.research) + len(out.knowledge) + len(out.memory)
    out.context_quality = round(min(1.0, 0.3 + 0.15 * found) if found else 0.0, 2)
    return out
