"""Pseudo-relevance feedback (RM3): words of the best first-round turns re-weigh the candidates.

A question and the turns that answer it often share few words ("how many musical
instruments do I own?": turns about a guitar and a cello).  RM3 (Lavrenko & Croft 2001, in
Anserini's form) estimates from the `feedback_docs` best documents of the first round

    P(w|R) = Σ_D P(w|D) · P(D|Q),   P(w|D) = tf(w, D) / |D|,   P(D|Q) ∝ BM25 score(D)

(not exp(score), with which the best turn alone would make the model) and adds its
`feedback_terms` likeliest words not in the query (nor stop words) as one more term group,
each weighted

    w_e = λ / (1 − λ) · Σ_g w_g · P(e|R) / Σ_{e' kept} P(e'|R)      [λ = feedback_weight]

so at λ = ½ the added words together weigh what the question does, before each is scaled
by its spread (`indexers.search`).  The second round keeps only documents with one of the
question's own words: the added words rank, they bring in nothing.  Words are read from
the prose the index stores for snippets, as the index's own stems (`en_stem`)."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from operator import itemgetter

from .query import TermGroup
from .words import SEARCH_STOP_WORDS, _analyzer, stem

__all__ = ["FEEDBACK_GROUP", "feedback_terms"]

FEEDBACK_GROUP = "\x00rm3"
"""The key of the feedback words' group among a search's term groups (no stem looks like it)."""

MIN_LENGTH = 3
"""Stems shorter than this (and numbers) are not feedback words: too unspecific."""


@lru_cache(maxsize=1)
def _stop_stems() -> frozenset[str]:
    return frozenset(stem(w) for w in SEARCH_STOP_WORDS) - {""}


CHUNK_CACHE = 65536
"""Chunks (runs between white space) whose analysis is remembered: words recur across documents."""

_chunks: dict[str, tuple[tuple[str, ...], int]] = {}


def _chunk_terms(chunk: str) -> tuple[tuple[str, ...], int]:
    """The kept terms of one chunk as `en_stem` indexes it, and how many terms it has in all."""
    found = _chunks.get(chunk)
    if found is None:
        if len(_chunks) >= CHUNK_CACHE:
            _chunks.clear()
        stems = _analyzer().analyze(chunk)
        stop = _stop_stems()
        kept = tuple(t for t in stems if len(t) >= MIN_LENGTH and t not in stop and not t.isdigit())
        found = _chunks[chunk] = (kept, len(stems))
    return found


@lru_cache(maxsize=512)
def _term_counts(prose: str) -> tuple[dict[str, int], int]:
    """{term: tf} of `prose` as `en_stem` indexes it, in first-seen order, without the terms
    no query keeps (short, numbers, stop words), and its length in terms (all of them);
    remembered for the last documents read (the best turns recur).  Read the counts, never
    change them (shared with the cache).  A dict, not a tuple of pairs: one object the
    garbage collector never tracks.  Counted per white-space chunk, each analysed once:
    `en_stem` splits at white space too, so a text's terms are its chunks' terms in order."""
    counts: dict[str, int] = {}
    get = counts.get
    length = 0
    for chunk, n in Counter(prose.split()).items():
        kept, size = _chunk_terms(chunk)
        length += size * n
        for term in kept:
            counts[term] = get(term, 0) + n
    return counts, length


def feedback_terms(
    documents: Iterable[tuple[float, str]], groups: Iterable[TermGroup], *, terms: int, weight: float
) -> dict[str, float]:
    """RM3's feedback words and their weights, from (score, prose) of the best first-round documents."""
    groups = list(groups)
    known = {g.stem for g in groups} | {v for g in groups for v in g.variants}
    docs = [(score, prose) for score, prose in documents if score > 0]
    if not docs or terms <= 0 or not 0 < weight < 1:
        return {}
    total = sum(score for score, _ in docs)  # P(D|Q) ∝ score(D)
    model: dict[str, float] = {}  # first-seen order
    get = model.get
    for score, prose in docs:
        counts, length = _term_counts(prose)
        if not length:
            continue
        p_doc = score / total
        share = p_doc / length
        for term, tf in counts.items():
            model[term] = get(term, 0.0) + share * tf
    for term in known:  # the rest keep their order: ties in the top terms go to the earlier word
        model.pop(term, None)
    best = heapq.nlargest(terms, model.items(), key=itemgetter(1))  # as Counter.most_common
    mass = sum(p for _, p in best)
    if mass <= 0:
        return {}
    query_mass = sum(g.weight for g in groups)
    scale = weight / (1.0 - weight) * query_mass / mass
    return {term: p * scale for term, p in best}
