"""BM25's idf over what one user may see, not over every user's documents.

Tantivy's idf(n, N) counts the whole index, so a user's score for their own note would fall
each time another user saved a private note with that word.  Each term query of a user's
search is boosted by idf(n_v, N_v) / idf(n, N), n_v and N_v counted over what the user may
see (`filters.visible_to`).  n is tantivy's `doc_freq`, N its total with deleted versions
(read once per reader generation from one hit's explanation); n_v is kept per (user,
field, term) while n and the deleted count are unchanged.  `Sight.within` names what the
user may see, so a stem's word forms are counted over that alone."""

from collections.abc import Callable
from typing import Any, NamedTuple

import orjson
import tantivy
from tantivy import Occur, Query

from .ranking import _idf

MAX_KEPT = 65_536
"""Counts kept per index before the cache starts over."""

Scale = Callable[[str, str], float]
"""(field, term) → the boost that makes a term query's idf the user's."""


def unscaled(field: str, term: str) -> float:
    """No user, no boundary: the whole index is what the search may see."""
    return 1.0


class Sight(NamedTuple):
    """What one search's statistics are counted over: each term's idf boost (`scale`)
    and the documents it may see (`within`; None: the whole index, no user)."""

    scale: Scale
    within: Query | None


EVERYTHING = Sight(unscaled, None)
"""A search without a user (the operator's): every document, tantivy's own idf."""


class VisibleIdf:
    """The counts behind `scale`, kept for one index across searches."""

    def __init__(self) -> None:
        self._terms: dict[tuple[Any, ...], tuple[tuple[int, int], int]] = {}  # → ((n, deleted), n_v)
        self._totals: dict[tuple[Any, ...], tuple[float, int, int]] = {}  # → (N, deleted, N_v)

    def sight(
        self, searcher: tantivy.Searcher, schema: tantivy.Schema, generation: Any, user: str, visible: Query
    ) -> Sight:
        """`user`'s sight on `searcher` (of reader `generation`): `visible`, and the boost
        per (field, term) that makes each term's idf theirs."""
        totals = self._totals.get((generation, user))
        if totals is None:
            if len(self._totals) > 64:
                self._totals.clear()
            totals = self._totals[(generation, user)] = _totals(searcher, visible)
        total, deleted, seen = totals
        if not seen:  # nothing to see: no term query matches anything the user may see
            return Sight(unscaled, visible)
        if len(self._terms) > MAX_KEPT:
            self._terms.clear()
        scales: dict[tuple[str, str], float] = {}
        only = (Occur.Must, Query.const_score_query(visible, 0.0))  # counted, not scored

        def scale(field: str, term: str) -> float:
            if (field, term) in scales:
                return scales[(field, term)]
            n = searcher.doc_freq(field, term)
            if n == 0:
                return 1.0  # nothing has it: the query matches nothing
            key = (generation[0], user, field, term)
            kept = self._terms.get(key)
            if kept is None or kept[0] != (n, deleted):
                word = Query.const_score_query(Query.term_query(schema, field, term), 0.0)
                kept = self._terms[key] = (
                    (n, deleted),
                    _count(searcher, Query.boolean_query([(Occur.Must, word), only])),
                )
            value = scales[(field, term)] = _idf(kept[1], seen) / _idf(n, total)
            return value

        return Sight(scale, visible)


def _count(searcher: tantivy.Searcher, query: Query) -> int:
    return searcher.search(query, 1, count=True).count  # type: ignore[attr-defined]  # (tantivy's stub lacks it)


def _totals(searcher: tantivy.Searcher, visible: Query) -> tuple[float, int, int]:
    """(N as tantivy's BM25 counts it, deleted documents included; the deleted ones; the
    documents the user may see), N read from one such document's score explanation; (0, 0, 0)
    when the user may see nothing."""
    found = searcher.search(visible, 1, count=True)
    if not found.hits:
        return 0.0, 0, 0
    explained = orjson.loads(visible.explain(searcher, found.hits[0][1]).to_json())
    total = _detail(explained, "N, total number of docs")
    if total is None:
        raise RuntimeError("tantivy's score explanation no longer names N; the idf cannot be made per user")
    return total, int(total) - searcher.num_docs, found.count  # type: ignore[attr-defined]


def _detail(node: dict[str, Any], description: str) -> float | None:
    if node.get("description") == description:
        return float(node["value"])
    for child in node.get("details") or ():
        found = _detail(child, description)
        if found is not None:
            return found
    return None
