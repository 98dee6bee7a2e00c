"""Searching the full-text index: the two stages of the ranking, and the page of hits.

Stage 1 runs one query per term group of the plan (`indexers.query`), weighted by the
word's spread over the user's conversations, for the candidate pool; stage 2 fetches every
turn of the best episodes.  `indexers.ranking` does the arithmetic (docs/search.md);
the hits get a snippet each."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from itertools import groupby, takewhile
from typing import TYPE_CHECKING, Any

import tantivy
from tantivy import FieldType, Occur, Query

from events.clock import utcnow
from events.doctypes import SESSION_KEYS
from events.layout import TURN_KINDS

from .episodes import GAP_EP, GAP_SPAN, SESSION_EP, episodes_query
from .feedback import FEEDBACK_GROUP, feedback_terms
from .filters import search_filters, visible_to
from .query import QueryPlan, TermGroup, plan_query
from .ranking import _idf, _Scorer
from .request import Ranking, SearchRequest
from .schema import NEVER, _epoch, stored_payload
from .snippets import snippet_of
from .time_words import TimeHint, resolve_time
from .visible_idf import EVERYTHING, Sight, VisibleIdf
from .words import query_terms

if TYPE_CHECKING:
    from .folder import IndexFolder

PREFIX_MIN = 6
"""Query stems at least this long also match index terms sharing all but their last letter
(allergi → allerg…): the forms Porter's y → i and final-e steps leave one letter apart.  A
shorter prefix is no word form ("assembl" would match "asse…": assess, asset)."""
PREFIX_TERMS = 10
EXPAND_LIMIT = 4096
"""Turns fetched at most for the expanded days of one query."""


class IndexReader:
    """Searches one index folder: the reader reloaded after each commit, and what it
    caches until the next (conversations counted per word, each user's idf)."""

    def __init__(self, folder: IndexFolder) -> None:
        self.folder = folder
        self._schema = folder.schema
        self._generation: tuple[int | None, int] | None = None  # (folder inode, meta.json mtime)
        self._counts: dict[tuple[Any, ...], float] = {}
        self._visible_idf = VisibleIdf()  # per user, the idf of what they may see

    def searcher(self) -> tantivy.Searcher:
        folder = self.folder
        folder.behind.settle()  # what this process wrote behind is searched once it has ended
        index = folder.open()
        try:
            generation = (folder.ino, os.stat(folder.tantivy_dir / "meta.json").st_mtime_ns)
        except FileNotFoundError:
            generation = (folder.ino, 0)
        try:
            if generation != self._generation:  # a commit (or a swap) since the last search
                index.reload()
                self._generation = generation
                self._counts.clear()
            return index.searcher()
        except ValueError as exc:  # a segment file corrupt or gone, or the disk's refusal
            raise folder.tantivy_error(exc, writing=False) from exc

    def _count_days(self, searcher: tantivy.Searcher, key: tuple[Any, ...], query: Query) -> float:
        """Distinct conversations (sessions, else days) matching `query`, cached until the index changes."""
        if key not in self._counts:
            if len(self._counts) > 4096:
                self._counts.clear()
            self._counts[key] = searcher.cardinality(query, "unit")
        return self._counts[key]

    def count(self) -> int:
        return self.searcher().num_docs

    def lookup(self, path: str) -> dict[str, Any] | None:
        """Stored payload of the document at this vault-relative path (None if not indexed): by
        path, the one key the index holds once, not by id, which two documents can share."""
        searcher = self.searcher()
        try:
            result = searcher.search(Query.term_query(self._schema, "path", path), 1)
            for _, address in result.hits:
                return stored_payload(searcher.doc(address))
        except ValueError as exc:  # a segment's bytes that do not decode
            raise self.folder.tantivy_error(exc, writing=False) from exc
        return None

    def search(self, req: SearchRequest, ranking: Ranking) -> list[dict[str, Any]]:
        """Hits for `req`, best first, each a dict (see module docstring for the score).
        A segment whose bytes do not decode (opened fine, read corrupt) is `IndexDamaged`."""
        try:
            return self._search(req, ranking)
        except ValueError as exc:
            raise self.folder.tantivy_error(exc, writing=False) from exc

    def _search(self, req: SearchRequest, ranking: Ranking) -> list[dict[str, Any]]:
        now = req.now or utcnow()
        searcher = self.searcher()
        filters = search_filters(self._schema, req, now)
        clauses: list[tuple[Occur, Query]] = [(Occur.Must, Query.const_score_query(f, 0.0)) for f in filters]
        for doc_id in req.exclude_ids:
            clauses.append((Occur.MustNot, Query.term_query(self._schema, "doc_id", doc_id)))

        def matching(limit: int, *musts: Query) -> list[tuple[float, Any]]:
            """The best `limit` documents matching each of `musts` and the request's filters."""
            query = Query.boolean_query([*((Occur.Must, must) for must in musts), *clauses])
            return searcher.search(query, limit, count=False).hits

        pool = max(ranking.candidate_pool, req.limit * 3)
        loaded: dict[tuple[int, int], Any] = {}  # stored documents read, for RM3 and the page
        text, hint = resolve_time(req.query, now) if ranking.time_words else (req.query, TimeHint())
        plan = plan_query(
            text,
            synonym_weight=ranking.synonym_weight,
            stop_words=ranking.stop_words,
            framing=ranking.framing,
            word_forms=ranking.word_forms,
        )
        window = None
        if hint.after is not None or hint.before is not None:
            window = (
                _epoch(hint.after) if hint.after is not None else -NEVER,
                _epoch(hint.before) if hint.before is not None else NEVER,
            )
        if plan.groups:
            sight = EVERYTHING  # no user: the whole index is what the search may see
            if req.user is not None:
                visible = visible_to(self._schema, req.user)
                sight = self._visible_idf.sight(searcher, self._schema, self._generation, req.user, visible)
            spread = self._spreads(searcher, req, filters, ranking, now)
            groups = {  # one query per term group, weighted by its spread over the user's days
                group.stem: Query.boost_query(
                    self._term_group_query(searcher, group, ranking, sight), group.weight * spread(group.stem)
                )
                for group in plan.groups
            }
            text_query = Query.boolean_query([(Occur.Should, q) for q in groups.values()])
            hits = matching(pool, text_query)
            if ranking.feedback_docs > 0 and hits and (plan.counts or ranking.feedback_always):
                # RM3, a second round with the best turns' words: for a count or a sum, whose
                # evidence is spread over conversations that need not say the question's words
                plan = self._with_feedback(searcher, plan, hits, ranking, loaded)
                if plan.feedback:  # the question's groups are the first round's, unchanged
                    # RM3's words: one query, body only, each word scaled by its spread as a question's
                    words = Query.boolean_query(
                        [
                            (Occur.Should, self._term("body", term, weight * spread(term), sight))
                            for term, weight in sorted(plan.feedback.items())
                        ]
                    )
                    groups = {**groups, FEEDBACK_GROUP: words}
                    # the question's words must match (the added words re-weigh, never widen
                    # the hits); their postings are read once, as in the first round
                    text_query = Query.boolean_query([(Occur.Must, text_query), (Occur.Should, words)])
                    hits = matching(pool, text_query)
            if window is not None:  # the window's own best, which a wide history may bury
                lo, hi = window
                in_window = Query.range_query(
                    self._schema, "created", FieldType.Integer, max(lo, 0), min(hi, NEVER) - 1
                )
                hits += matching(pool // 2, text_query, Query.const_score_query(in_window, 0.0))
        elif text.strip():  # words, none of them searchable: not a request to list everything
            return []
        else:
            groups = {}
            query = Query.boolean_query([(Occur.Must, Query.all_query()), *clauses])
            hits = [
                (1.0, a) for _, a in searcher.search(query, pool, count=False, order_by_field="created").hits
            ]
        if not hits:
            return []
        scorer = _Scorer(searcher, req, ranking, now, window)
        scorer.add_hits(hits)
        if groups:
            self._expand_episodes(matching, scorer, groups, ranking)
        order = hint.order or ("latest" if plan.wants_latest else None)
        ranked = scorer.final(order, per_episode=req.unit == "episode")
        wanted = req.limit if req.snippets is True else int(req.snippets)
        terms = query_terms(text) if wanted > 0 else None
        return self._page(searcher, ranked, req.limit, terms, wanted, loaded)

    def _with_feedback(
        self,
        searcher: tantivy.Searcher,
        plan: QueryPlan,
        hits: list[tuple[float, Any]],
        ranking: Ranking,
        loaded: dict[tuple[int, int], Any],
    ) -> QueryPlan:
        """The plan with RM3's feedback words of the first round's best documents (`indexers.feedback`)."""
        ranked = sorted(hits, key=lambda h: -h[0])
        last = ranked[min(ranking.feedback_docs, len(ranked)) - 1][0]
        tied = []  # ties at the cut go by path, not by tantivy's internal order (a rebuild changes it)
        for score, address in takewhile(lambda hit: hit[0] >= last, ranked):
            doc = _stored(searcher, address, loaded)  # the stored path is the payload's doc_path
            tied.append((score, doc.get_first("path"), (doc.get_first("prose") or b"").decode()))
        tied.sort(key=lambda d: (-d[0], d[1]))
        docs = [(score, prose) for score, _, prose in tied[: ranking.feedback_docs]]
        extra = feedback_terms(
            docs, plan.groups, terms=ranking.feedback_terms, weight=ranking.feedback_weight
        )
        return plan._replace(feedback=extra) if extra else plan

    def _spreads(
        self,
        searcher: tantivy.Searcher,
        req: SearchRequest,
        filters: list[Query],
        ranking: Ranking,
        now: datetime,
    ) -> Callable[[str], float]:
        """The spread factor of a stem: `(idf(n, N) / idf(1, N)) ^ spread_weight`, N the days
        of the documents the user may see (with the request's filters), n those whose body
        has it.  A word of most of a user's days (their name in greetings, "work") tells no
        conversation apart.  Without a user, 1 for every stem."""
        visible = Query.boolean_query([(Occur.Must, f) for f in filters]) if filters else None
        if req.user is None or visible is None or not ranking.spread_weight:
            return lambda stem: 1.0
        scope_key = (
            req.user,
            req.topic_filter,
            req.content_types,
            req.kinds,
            req.scope,
            req.min_quality,
            req.include_expired,
            req.after,
            req.before,
            _epoch(now) // 60,
        )  # expiry moves with time: minute grain
        days = self._count_days(searcher, (*scope_key, None), visible)
        if days <= 1:
            return lambda stem: 1.0

        def spread(stem: str) -> float:
            word = Query.term_query(self._schema, "body", stem)
            n = self._count_days(
                searcher, (*scope_key, stem), Query.boolean_query([(Occur.Must, word), (Occur.Must, visible)])
            )
            if n < 1:
                return 1.0
            return float((_idf(min(n, days), days) / _idf(1.0, days)) ** ranking.spread_weight)

        return spread

    def _term(self, field: str, term: str, weight: float, sight: Sight) -> Query:
        """One term query of a search, weighted, its idf the user's."""
        return Query.boost_query(
            Query.term_query(self._schema, field, term), weight * sight.scale(field, term)
        )

    def _term_group_query(
        self, searcher: tantivy.Searcher, group: TermGroup, ranking: Ranking, sight: Sight
    ) -> Query:
        """The best of the stem (every text field) and its down-weighted variants (body):
        the stem's word forms are the commonest index terms sharing its prefix among the
        documents the search may see (`sight.within`), never another user's words."""
        boosts = ranking.field_boosts()

        def fields(term: str, weight: float) -> Query:
            return Query.boolean_query(
                [
                    (Occur.Should, self._term(name, term, boost * weight, sight))
                    for name, boost in boosts.items()
                ]
            )

        variants = dict(group.variants)
        if ranking.word_forms and ranking.prefix_weight > 0 and len(group.stem) >= PREFIX_MIN:
            prefix = group.stem[:-1]
            forms = searcher.terms_with_prefix("body", prefix, filter_query=sight.within, limit=PREFIX_TERMS)
            for term, _ in forms:
                if term != group.stem and variants.get(term, 0.0) < ranking.prefix_weight:
                    variants[term] = ranking.prefix_weight
        parts = [fields(group.stem, 1.0)]
        parts += [  # variants in the body only: a third of the postings to read
            self._term("body", term, weight, sight) for term, weight in sorted(variants.items())
        ]
        return parts[0] if len(parts) == 1 else Query.disjunction_max_query(parts)

    def _expand_episodes(
        self,
        matching: Callable[..., list[tuple[float, Any]]],
        scorer: _Scorer,
        groups: dict[str, Query],
        ranking: Ranking,
    ) -> None:
        """Second stage: every turn of the best episodes, with its score per term group."""
        episodes = scorer.top_episodes(ranking.expand_episodes)
        if not episodes:
            return
        span = int(ranking.episode_gap_minutes * 60 * GAP_SPAN)
        sessions = sorted({ep[2] for ep in episodes if ep[0] == SESSION_EP})
        gaps = [(ep[1], ep[2] - span, ep[2] + span) for ep in episodes if ep[0] == GAP_EP]
        within = episodes_query(self._schema, scorer.owner_name, gaps, sessions=sessions)
        members = matching(EXPAND_LIMIT, within)
        scorer.add_members([a for _, a in members], episodes, int(ranking.episode_gap_minutes * 60))
        if scorer.narrowed:  # the runs found and the sessions cut (`episode_reach`): fewer turns per group
            whole = sorted(
                ep[2] for ep in scorer.expanded if ep[0] == SESSION_EP and ep not in scorer.narrowed
            )
            within = episodes_query(
                self._schema,
                scorer.owner_name,
                [(ep[1], lo, hi) for ep, lo, hi in scorer.spans if ep[0] == GAP_EP],
                sessions=whole,
                session_spans=[(ep[2], lo, hi) for ep, lo, hi in scorer.spans if ep[0] == SESSION_EP],
                kept_turns=scorer.kept_turns,
            )
        for stem, query in groups.items():
            scorer.set_term_scores(stem, matching(EXPAND_LIMIT, query, within))

    def _page(
        self,
        searcher: tantivy.Searcher,
        ranked: list[tuple[float, int, Any, str | None]],
        limit: int,
        terms: list[str] | None,
        snippet_hits: int,
        loaded: dict[tuple[int, int], Any],
    ) -> list[dict[str, Any]]:
        """The first `limit` hits, each run of exact ties (score and time) ordered by path, with a
        snippet for the first `snippet_hits` when `terms` asks for one."""
        cut = min(limit, len(ranked))
        while 0 < cut < len(ranked) and ranked[cut][:2] == ranked[cut - 1][:2]:
            cut += 1
        rows: list[tuple[float, int, dict[str, Any], str | None, bytes | None]] = []
        for score, created, address, label in ranked[:cut]:
            doc = _stored(searcher, address, loaded)
            payload = stored_payload(doc)
            prose = doc.get_first("prose") if terms is not None else None
            rows.append((score, created, payload, label, prose))
        page: list[dict[str, Any]] = []
        for _, tied in groupby(rows, key=lambda row: row[:2]):
            for score, _, payload, label, prose in sorted(tied, key=lambda row: row[2]["doc_path"]):
                snippet = ""
                if terms is not None and len(page) < snippet_hits:
                    snippet = snippet_of(prose.decode() if prose else "", terms)
                page.append(self._hit(payload, score, label, snippet))
        return page[:limit]

    def _hit(
        self, payload: dict[str, Any], score: float, episode: str | None, snippet: str
    ) -> dict[str, Any]:
        payload["score"] = round(score, 6)
        created = payload.get("created_at")
        payload["date"] = created[:10] if isinstance(created, str) else None
        if episode is None and payload.get("kind") in TURN_KINDS:
            meta = payload.get("meta") or {}
            episode = next((str(meta[k]) for k in SESSION_KEYS if meta.get(k) not in (None, "")), None)
        payload["episode"] = episode
        payload["snippet"] = snippet
        return payload


def _stored(searcher: tantivy.Searcher, address: Any, loaded: dict[tuple[int, int], Any]) -> Any:
    """The stored document at `address`, read once per search: RM3's feedback documents
    are mostly among the hits of the page (each read decompresses a block of the store)."""
    key = (address.segment_ord, address.doc)
    doc = loaded.get(key)
    if doc is None:
        doc = loaded[key] = searcher.doc(address)
    return doc
