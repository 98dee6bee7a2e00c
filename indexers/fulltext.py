"""The tantivy full-text index over every document of a vault.

Layout under `indexes/`:

    fulltext/            the live index: tantivy/ (segments), state.jsonl, schema.json
    fulltext.lock        writer lock (flock; holds the writer's pid)
    fulltext.new/        a rebuild in progress (swapped in when complete)

The schema is derived from `IndexDoc` (itself derived from `DocumentMetadata`):
stemmed English text for title/body/keywords; raw terms for ids, owner, scope and
content types; a facet for the hierarchical topic (`pet.hamster` matches
`pet.hamster.syrian`); fast fields for the ranking signals.

Ranking (also in the README; weights are `[search]` in pandafs.toml).  Time words in
the query ("last week", "in May", "two months ago", "the first time", "recently") are
resolved against the search's `now` by `indexers.query.resolve_time` and taken out of
the text.  The rest is planned by `indexers.query`: one *group* g per content word, of
weight w_g (1, or 0.4 for question framing such as "name", "usually"), made of its
stem and of variants v of weight w_v < 1 (irregular forms 0.9, thesaurus synonyms
`synonym_weight`, index terms sharing all but the last 3 letters of a stem of 6+
letters `prefix_weight`).  Per document d, with F(d) its quality · freshness · trust ·
topic · time factor:

    c_g(d) = spread_g · w_g · max( BM25_stem(d), max_v w_v · BM25_v(d) ) · F(d)
             BM25_stem over title (×title_boost), keywords (×keywords_boost), body (×1);
             BM25_v over the body
    F(d)   = (1 + wq·(quality − ½)) · (1 + wf·2^(−age_days / half_life))
             · (1 + wt·(trust − ½))   [when trust is known]
             · (1 + wtopic·m)          [m = 1 exact topic, ½ parent or child]
             · (1 + wtime)             [created inside the window the time words name]
    spread_g = (idf(n_g, N) / idf(1, N)) ^ spread_weight     [only with a user]
             idf(n, N) = ln(1 + (N − n + ½)/(n + ½)), N = conversations (sessions, else
             days) of the documents the user may see, n_g = those whose body has the stem

Stage 1 takes the top `candidate_pool` documents by s(d) = Σ_g c_g(d) (and, when the
query names a time, the best `candidate_pool`/2 inside that window).  Stage 2 takes the
`expand_episodes` *episodes* whose best stage-1 turn scores highest and scores every
turn t of those episodes (time order; t−1, t+1 its neighbours in that episode).  An
episode is one conversation: the turns imported with the same session id
(`meta.session`), else a run of one user's turns with no silence longer than
`episode_gap_minutes` (30, the usual web-analytics session timeout):

    window(t) = Σ_g max( c_g(t), β·c_g(t−1), β·c_g(t+1) )     [β = neighbour_weight]
    ep(E)     = Σ_g max{ c_g(u) : u in E }                     [the episode as one bag]
    final(t)  = window(t) + wep · ep(E)                        [if window(t) > 0]
    final(d)  = (1 + wep) · s(d)   [other documents, and turns of other episodes]

When the query asks for the current state ("now", "currently", "recently") or the
first time ("the first time", "originally"), each turn of an episode E with ep(E) ≥
latest_band · max ep(·) is multiplied by 1 + latest_weight · (E − first)/(last − first)
(reversed for "first"), first/last the earliest and latest start of those episodes.
Hits are sorted by final score (ties: newer first, then by path), and at most
`episode_cap` turns of one episode come before every other hit, so a page shows
several conversations.  Each hit names its `episode` (the session id, or
`gap:` and the first turn's time) and its `date`.

So a fresher, higher-quality, better-trusted document wins a tie, an exact topic
beats its neighbours, a turn that only *answers* (the question's words are in the
turn next to it) is still found, a conversation that covers more of the question
ranks higher, and a word found in most of a user's conversations (their own name in
greetings) counts little.  Filters (user visibility, topic, types, scope, quality,
expiry, `after`/`before`) are constant-score clauses and never change BM25.  Nothing
is computed at index time from other documents: a new turn changes no other
document, and a rebuild gives the same results.

Writers hold `fulltext.lock` only for one batch; a second writer waits up to
`wait_s` and then gets `IndexBusy` naming the holder's pid.  Readers never wait:
every search reloads the reader (≈50 µs) and reopens the index if a rebuild swapped
the folder.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson
import tantivy
from tantivy import Facet, FieldType, Occur, Query

from events import format_ts
from events.clock import utcnow
from events.errors import EventsError
from events.fsio import atomic_write, held_lock, read_vault_file

from .documents import SESSION_KEYS, TURN_KINDS, IndexDoc
from .errors import IndexBusy, IndexIncompatible, IndexingError
from .query import (
    STOP_WORDS,
    Lexicon,
    QueryPlan,
    TermGroup,
    TimeHint,
    plan_query,
    query_terms,
    resolve_time,
)

__all__ = [
    "STOP_WORDS",
    "FullTextIndex",
    "IndexBatch",
    "Ranking",
    "SearchRequest",
    "StateEntry",
    "query_terms",
]

SCHEMA_VERSION = 3
GLOBAL_OWNER = "_global"
NEVER = 2**62
TEXT_FIELDS = ["title", "keywords", "body"]
PREFIX_MIN = 6
"""Query stems at least this long also match index terms sharing all but their last 3
letters (allergi → allerg…): word forms the stemmer keeps apart."""
PREFIX_TERMS = 10
EXPAND_LIMIT = 4096
"""Turns fetched at most for the expanded days of one query."""


def _h64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1


def _facet(topic: str) -> Facet:
    parts = [p.strip().replace("/", "_") for p in topic.split(".") if p.strip()]
    return Facet.from_string("/" + "/".join(parts or ["general"]))


def _parent(topic: str) -> str:
    return topic.rsplit(".", 1)[0] if "." in topic else ""


def _epoch(ts: datetime) -> int:
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return int(ts.timestamp())


def build_schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    for name in ("path", "doc_id", "owner", "scope", "ctype", "kind", "external_id"):
        sb.add_text_field(name, stored=name == "path", tokenizer_name="raw", index_option="basic")
    for name in TEXT_FIELDS:
        sb.add_text_field(name, stored=False, tokenizer_name="en_stem")
    sb.add_facet_field("topic")
    sb.add_float_field("quality", fast=True, indexed=True)
    sb.add_float_field("trust", fast=True, indexed=False)
    sb.add_integer_field("created", fast=True, indexed=True)
    sb.add_integer_field("expires", fast=True, indexed=True)
    sb.add_integer_field("day", fast=True, indexed=True)
    sb.add_unsigned_field("episode", fast=True, indexed=True)
    sb.add_unsigned_field("unit", fast=True, indexed=False)
    sb.add_unsigned_field("owner_h", fast=True, indexed=False)
    sb.add_unsigned_field("topic_h", fast=True, indexed=False)
    sb.add_unsigned_field("topic_ph", fast=True, indexed=False)
    sb.add_bytes_field("payload", stored=True, indexed=False)
    return sb.build()


@dataclass(frozen=True)
class Ranking:
    """Weights of the ranking formula (values come from `[search]` in pandafs.toml)."""

    quality_weight: float = 0.5
    freshness_weight: float = 0.25
    freshness_half_life_days: float = 30.0
    trust_weight: float = 0.2
    topic_boost: float = 0.5
    title_boost: float = 0.25
    keywords_boost: float = 1.5
    synonym_weight: float = 0.7
    prefix_weight: float = 0.5
    spread_weight: float = 0.5
    neighbour_weight: float = 0.4
    episode_weight: float = 0.2
    expand_episodes: int = 8
    episode_gap_minutes: float = 30.0
    latest_weight: float = 1.0
    latest_band: float = 0.4
    episode_cap: int = 3
    candidate_pool: int = 60
    time_words: bool = True
    time_weight: float = 1.0
    stop_words: bool = True
    framing: bool = True
    word_forms: bool = True

    def lexicon(self) -> Lexicon:
        """Which lexical resources of `indexers.query` the query planner uses."""
        return Lexicon(
            stop_words=self.stop_words,
            framing=self.framing,
            word_forms=self.word_forms,
        )

    def field_boosts(self) -> dict[str, float]:
        boosts = {"title": self.title_boost, "keywords": self.keywords_boost, "body": 1.0}
        return {name: boost for name, boost in boosts.items() if boost > 0}


@dataclass(frozen=True)
class SearchRequest:
    query: str = ""
    user: str | None = None
    topic_filter: str | None = None
    topic: str | None = None
    content_types: tuple[str, ...] = ()
    scope: str | None = None
    min_quality: float | None = None
    include_expired: bool = False
    limit: int = 10
    now: datetime | None = None
    exclude_ids: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    snippets: bool = True  # reading each hit's file for a snippet is half the cost of a search
    after: datetime | None = None  # created at or after
    before: datetime | None = None  # created strictly before


@dataclass(frozen=True)
class StateEntry:
    checksum: str
    mtime_ns: int
    size: int
    skipped: bool = False  # seen but not indexed (broken frontmatter, binary, too large)


def _state_line(path: str, entry: StateEntry) -> bytes:
    row: dict[str, Any] = {"p": path, "c": entry.checksum, "m": entry.mtime_ns, "s": entry.size}
    if entry.skipped:
        row["k"] = 1
    return orjson.dumps(row)


def _fold_state(state: dict[str, StateEntry], raw: bytes) -> None:
    for line in raw.splitlines():
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # torn last line of a crashed writer; reconcile re-checks that file
        if entry.get("d"):
            state.pop(entry["p"], None)
        else:
            state[entry["p"]] = StateEntry(entry["c"], entry["m"], entry["s"], bool(entry.get("k")))


CatchUp = Callable[[Callable[[], Any], dict[str, StateEntry]], None]


def _to_document(doc: IndexDoc) -> tantivy.Document:
    d = tantivy.Document()
    d.add_text("path", doc.path)
    d.add_text("doc_id", doc.doc_id)
    d.add_text("owner", doc.user or GLOBAL_OWNER)
    d.add_text("scope", doc.scope)
    d.add_text("kind", doc.kind)
    if doc.external_id is not None:
        d.add_text("external_id", doc.external_id)
    for content_type in doc.content_types:
        d.add_text("ctype", content_type)
    d.add_text("title", doc.title)
    d.add_text("keywords", " ".join(doc.keywords))
    d.add_text("body", doc.body)
    d.add_facet("topic", _facet(doc.primary_topic))
    d.add_float("quality", doc.quality)
    d.add_float("trust", -1.0 if doc.trust is None else float(doc.trust))
    created = _epoch(doc.created_at)
    d.add_integer("created", created)
    d.add_integer("expires", NEVER if doc.expires_at is None else _epoch(doc.expires_at))
    d.add_integer("day", created // 86400 if doc.is_turn else -1)
    session = doc.session if doc.is_turn else None
    episode = _h64(f"{doc.user}\x00{session}") if session else 0
    d.add_unsigned("episode", episode)
    # what `spread` counts: conversations (the session, else the calendar day)
    d.add_unsigned("unit", episode or (_h64(f"{doc.user}\x00{created // 86400}") if doc.is_turn else 0))
    d.add_unsigned("owner_h", _h64(doc.user or GLOBAL_OWNER))
    d.add_unsigned("topic_h", _h64(doc.primary_topic))
    d.add_unsigned("topic_ph", _h64(_parent(doc.primary_topic)))
    payload = doc.payload()
    payload["created_at"] = format_ts(doc.created_at)
    payload["expires_at"] = format_ts(doc.expires_at) if doc.expires_at else None
    d.add_bytes("payload", orjson.dumps(payload))
    return d


class IndexBatch:
    """Upserts and deletes by path, committed together when the batch closes."""

    def __init__(
        self, writer: Any, trust_of: Callable[[str], float | None] | None = None, *, redoable: bool = True
    ) -> None:
        self._writer = writer
        self._trust_of = trust_of
        self.changes: dict[str, StateEntry | None] = {}
        # kept so a failed commit can be redone; a fresh index (rebuild) has nothing to
        # fail on and must not hold every document of the vault in memory
        self._ops: list[tuple[str, Any]] | None = [] if redoable else None

    def _apply(self, op: str, arg: Any) -> None:
        if op == "upsert":
            self._writer.delete_documents_by_term("path", arg.path)
            self._writer.add_document(_to_document(arg))
        elif op == "delete":
            self._writer.delete_documents_by_term("path", arg)
        else:
            self._writer.delete_documents_by_term(*arg)

    def _do(self, op: str, arg: Any) -> None:
        if self._ops is not None:
            self._ops.append((op, arg))
        self._apply(op, arg)

    def redo_on(self, writer: Any) -> None:
        if self._ops is None:
            raise IndexingError("this batch cannot be redone (it did not keep its operations)")
        self._writer = writer
        for op, arg in self._ops:
            self._apply(op, arg)

    def upsert(self, doc: IndexDoc) -> None:
        if doc.trust is None and self._trust_of is not None:
            trust = self._trust_of(doc.doc_id)  # derived trust of a document that has none in its file
            if trust is not None:
                doc = replace(doc, trust=trust)
        self._do("upsert", doc)
        self.changes[doc.path] = StateEntry(doc.checksum, doc.mtime_ns, doc.size)

    def delete(self, path: str) -> None:
        self._do("delete", path)
        self.changes[path] = None

    def delete_where(self, field_name: str, value: str) -> None:
        """Delete every document whose raw `field_name` equals `value` (e.g. owner)."""
        self._do("delete_where", (field_name, value))

    def touch(self, path: str, entry: StateEntry) -> None:
        """Record a new mtime for a file whose content (checksum) did not change."""
        self.changes[path] = entry


class FullTextIndex:
    """One vault's full-text index.  Cheap to construct; opens tantivy lazily."""

    def __init__(
        self, indexes_dir: Path, *, wait_s: float = 30.0, heap_mb: int = 128, name: str = "fulltext"
    ) -> None:
        self.indexes_dir = indexes_dir
        self.dir = indexes_dir / name
        self.lock_path = indexes_dir / f"{name}.lock"
        self.wait_s = wait_s
        self.heap_mb = heap_mb
        self._index: tantivy.Index | None = None
        self._ino: int | None = None
        self._state_cache: tuple[int, int, dict[str, StateEntry]] | None = None
        self._generation: tuple[int | None, int] | None = None
        self._counts: dict[tuple[Any, ...], float] = {}
        # where documents without `trust` in their frontmatter (turns) get it from
        self.trust_of: Callable[[str], float | None] | None = None
        self._schema = build_schema()
        self._root = str(indexes_dir.parent)  # doc paths are relative to the vault root

    # --- opening ------------------------------------------------------------------

    @property
    def tantivy_dir(self) -> Path:
        return self.dir / "tantivy"

    @property
    def state_path(self) -> Path:
        return self.dir / "state.jsonl"

    def exists(self) -> bool:
        self._recover_swap()
        return (self.dir / "schema.json").is_file()

    def _recover_swap(self) -> None:
        """Finish a rebuild swap interrupted between its two renames."""
        new, old = (
            self.dir.with_name(self.dir.name + ".new"),
            self.dir.with_name(self.dir.name + ".old"),
        )
        if not self.dir.exists() and (new / "complete").exists():
            os.replace(new, self.dir)
        if self.dir.exists() and old.exists():
            shutil.rmtree(old, ignore_errors=True)

    def _create(self, directory: Path) -> tantivy.Index:
        (directory / "tantivy").mkdir(parents=True, exist_ok=True)
        index = tantivy.Index(self._schema, path=str(directory / "tantivy"))
        atomic_write(directory / "schema.json", orjson.dumps({"schema_version": SCHEMA_VERSION}))
        return index

    def _open(self) -> tantivy.Index:
        """The live tantivy index, reopened if a rebuild replaced the folder."""
        if not self.exists():
            self.indexes_dir.mkdir(parents=True, exist_ok=True)
            with self._lock():
                if not self.exists():
                    self._create(self.dir)
        ino = os.stat(self.dir).st_ino
        if self._index is None or ino != self._ino:
            info = orjson.loads((self.dir / "schema.json").read_bytes())
            if info.get("schema_version") != SCHEMA_VERSION:
                raise IndexIncompatible(
                    f"{self.dir} was built by another PandaFS version; run `pandafs rebuild`"
                )
            self._index = tantivy.Index.open(str(self.tantivy_dir))
            self._ino = ino
        return self._index

    # --- writing ------------------------------------------------------------------

    @contextmanager
    def _lock(self) -> Iterator[None]:
        def busy(holder: str) -> Exception:
            return IndexBusy(
                f"index is busy, held by pid {holder} for more than {self.wait_s:g} s; "
                "try again when it finishes"
            )

        with held_lock(self.lock_path, wait_s=self.wait_s, on_busy=busy):
            yield

    def _tantivy_writer(self, index: tantivy.Index) -> Any:
        try:
            return index.writer(heap_size=self.heap_mb * 1_000_000, num_threads=1)
        except ValueError as exc:  # tantivy's own lock: a writer we do not know about
            raise IndexBusy(f"index is busy ({exc}); try again") from exc

    @contextmanager
    def _batch_on(
        self, index: tantivy.Index, state_path: Path, *, redoable: bool = True
    ) -> Iterator[IndexBatch]:
        writer = self._tantivy_writer(index)
        batch = IndexBatch(writer, self.trust_of, redoable=redoable)
        try:
            yield batch
        except BaseException:
            writer.rollback()
            raise
        try:
            writer.commit()
        except ValueError as exc:
            # A writer killed mid-commit left `{segment}.{opstamp}.del`; redoing the same
            # operations reaches the same opstamp and tantivy refuses to overwrite it.  An
            # empty commit moves the opstamp on (tantivy's GC then removes the file).
            if "FileAlreadyExists" not in str(exc):
                raise
            writer.rollback()
            empty = self._tantivy_writer(index)
            empty.commit()
            empty.wait_merging_threads()
            writer = self._tantivy_writer(index)
            batch.redo_on(writer)
            writer.commit()
        writer.wait_merging_threads()
        self._append_state(state_path, batch.changes)

    @contextmanager
    def batch(self) -> Iterator[IndexBatch]:
        """Hold the writer lock for one batch of upserts/deletes, then commit."""
        self._open()
        with self._lock(), self._batch_on(self._open(), self.state_path) as batch:
            yield batch

    def _append_state(self, path: Path, changes: dict[str, StateEntry | None]) -> None:
        if not changes:
            return
        lines = [
            orjson.dumps({"p": p, "d": 1}) if e is None else _state_line(p, e) for p, e in changes.items()
        ]
        with open(path, "ab") as handle:
            handle.write(b"\n".join(lines) + b"\n")
            handle.flush()
            os.fsync(handle.fileno())

    def state(self) -> dict[str, StateEntry]:
        """What has been indexed: path → (checksum, mtime, size), folded from the state log.

        The log only grows between compactions, so the fold is cached and only the lines
        appended since the last call are read (a 100k-document log is read once).
        Callers must not modify the returned mapping.
        """
        path = self.state_path
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._state_cache = None
            return {}
        cache = self._state_cache
        if cache is None or cache[0] != st.st_ino or st.st_size < cache[1]:
            cache = (st.st_ino, 0, {})
        ino, offset, state = cache
        if st.st_size > offset:
            with open(path, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read(st.st_size - offset)
            end = chunk.rfind(b"\n") + 1  # a torn last line is left for the next call
            _fold_state(state, chunk[:end])
            offset += end
        self._state_cache = (ino, offset, state)
        return state

    @staticmethod
    def _read_state(path: Path) -> dict[str, StateEntry]:
        state: dict[str, StateEntry] = {}
        try:
            _fold_state(state, path.read_bytes())
        except FileNotFoundError:
            pass
        return state

    def compact_state(self, *, force: bool = False) -> bool:
        """Rewrite the state log with one line per indexed path, when it has grown to
        several times that (or `force`).  Returns whether it rewrote it."""
        with self._lock():
            state = self.state()
            try:
                size = self.state_path.stat().st_size
            except FileNotFoundError:
                return False
            if not force and size < max(1_000_000, 4 * 120 * len(state)):
                return False
            data = b"".join(_state_line(p, e) + b"\n" for p, e in sorted(state.items()))
            atomic_write(self.state_path, data)
            return True

    @contextmanager
    def rebuild(self, catch_up: CatchUp | None = None) -> Iterator[IndexBatch]:
        """Build a fresh index beside the live one and swap it in when the block ends.

        The live index keeps serving searches and other writers meanwhile.  Just before
        the swap, under the writer lock, `catch_up(open_batch, state)` may bring the new
        index up to date with files that changed while it was being built.
        """
        new = self.dir.with_name(self.dir.name + ".new")
        shutil.rmtree(new, ignore_errors=True)
        index = self._create(new)
        state_path = new / "state.jsonl"
        try:
            with self._batch_on(index, state_path, redoable=False) as batch:
                yield batch
            with self._lock():
                if catch_up is not None:
                    catch_up(lambda: self._batch_on(index, state_path), self._read_state(state_path))
                (new / "complete").write_bytes(b"")
                old = self.dir.with_name(self.dir.name + ".old")
                shutil.rmtree(old, ignore_errors=True)
                if self.dir.exists():
                    os.replace(self.dir, old)
                os.replace(new, self.dir)
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(new, ignore_errors=True)
            raise
        self._index = None

    # --- reading ------------------------------------------------------------------

    def searcher(self) -> tantivy.Searcher:
        index = self._open()
        try:
            generation = (self._ino, os.stat(self.tantivy_dir / "meta.json").st_mtime_ns)
        except FileNotFoundError:
            generation = (self._ino, 0)
        if generation != self._generation:  # a commit (or a swap) since the last search
            index.reload()
            self._generation = generation
            self._counts.clear()
        return index.searcher()

    def _count_days(self, searcher: tantivy.Searcher, key: tuple[Any, ...], query: Query) -> float:
        """Distinct conversations (sessions, else days) matching `query`, cached until the index changes."""
        if key not in self._counts:
            if len(self._counts) > 4096:
                self._counts.clear()
            self._counts[key] = searcher.cardinality(query, "unit")
        return self._counts[key]

    def count(self) -> int:
        return self.searcher().num_docs

    def lookup(self, doc_id: str) -> dict[str, Any] | None:
        """Stored payload of the document with this id (None if not indexed)."""
        searcher = self.searcher()
        result = searcher.search(Query.term_query(self._schema, "doc_id", doc_id), 1)
        for _, address in result.hits:
            return orjson.loads(searcher.doc(address).get_first("payload"))
        return None

    def paths(self) -> list[str]:
        return sorted(self.state())

    def _any_of(self, field_name: str, values: Iterable[Any]) -> Query:
        """Documents whose `field_name` is one of `values`.

        A boolean of term queries: in tantivy-py 0.27 `term_set_query` costs ~0.3 ms
        per search on 100k documents, this ~0.01 ms.
        """
        terms = [Query.term_query(self._schema, field_name, v) for v in dict.fromkeys(values)]
        if len(terms) == 1:
            return terms[0]
        return Query.boolean_query([(Occur.Should, t) for t in terms])

    def _filters(self, req: SearchRequest, now: datetime) -> list[Query]:
        schema = self._schema
        filters: list[Query] = []
        if req.user is not None:
            visible = [
                (Occur.Should, self._any_of("owner", [req.user, GLOBAL_OWNER])),
                (Occur.Should, Query.term_query(schema, "scope", "global")),
            ]
            filters.append(Query.boolean_query(visible))
        if req.topic_filter:
            filters.append(Query.term_query(schema, "topic", _facet(req.topic_filter)))
        if req.content_types:
            filters.append(self._any_of("ctype", req.content_types))
        if req.kinds:
            filters.append(self._any_of("kind", req.kinds))
        if req.scope:
            filters.append(Query.term_query(schema, "scope", req.scope))
        if req.min_quality is not None:
            filters.append(
                Query.range_query(schema, "quality", FieldType.Float, float(req.min_quality), None)
            )
        if not req.include_expired:
            filters.append(Query.range_query(schema, "expires", FieldType.Integer, _epoch(now) + 1, None))
        if req.after is not None or req.before is not None:
            lo = _epoch(req.after) if req.after is not None else None
            hi = _epoch(req.before) - 1 if req.before is not None else None
            filters.append(Query.range_query(schema, "created", FieldType.Integer, lo, hi))
        return filters

    def search(self, req: SearchRequest, ranking: Ranking) -> list[dict[str, Any]]:
        """Hits for `req`, best first, each a dict (see module docstring for the score)."""
        now = req.now or utcnow()
        searcher = self.searcher()
        filters = self._filters(req, now)
        clauses: list[tuple[Occur, Query]] = [(Occur.Must, Query.const_score_query(f, 0.0)) for f in filters]
        for doc_id in req.exclude_ids:
            clauses.append((Occur.MustNot, Query.term_query(self._schema, "doc_id", doc_id)))
        pool = max(ranking.candidate_pool, req.limit * 3)
        text, hint = resolve_time(req.query, now) if ranking.time_words else (req.query, TimeHint())
        plan = plan_query(text, synonym_weight=ranking.synonym_weight, lexicon=ranking.lexicon())
        window = None
        if hint.after is not None or hint.before is not None:
            window = (
                _epoch(hint.after) if hint.after is not None else -NEVER,
                _epoch(hint.before) if hint.before is not None else NEVER,
            )
        if plan.groups:
            groups = self._group_queries(searcher, plan, req, filters, ranking)
            text_query = Query.boolean_query([(Occur.Should, q) for q in groups.values()])
            query = Query.boolean_query([(Occur.Must, text_query), *clauses])
            hits = searcher.search(query, pool, count=False).hits
            if window is not None:  # the window's own best, which a wide history may bury
                lo, hi = window
                in_window = Query.range_query(
                    self._schema, "created", FieldType.Integer, max(lo, 0), min(hi, NEVER) - 1
                )
                filtered = [(Occur.Must, text_query), *clauses]
                filtered.append((Occur.Must, Query.const_score_query(in_window, 0.0)))
                hits += searcher.search(Query.boolean_query(filtered), pool // 2, count=False).hits
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
            self._expand_episodes(searcher, scorer, groups, clauses, ranking)
        order = hint.order or ("latest" if plan.wants_latest else None)
        ranked = scorer.final(order)
        page = self._page(searcher, ranked, req.limit)
        terms = query_terms(text) if req.snippets else []
        return [self._hit(payload, score, label, terms, req.snippets) for score, payload, label in page]

    def _group_queries(
        self,
        searcher: tantivy.Searcher,
        plan: QueryPlan,
        req: SearchRequest,
        filters: list[Query],
        ranking: Ranking,
    ) -> dict[str, Query]:
        """One query per term group, weighted by how few of the user's days use it.

        A word said on most of a user's days (their own name in greetings, "work",
        "today") is a poor guide to *which* conversation answers: its weight is scaled
        by `(idf(n, N) / idf(1, N)) ^ spread_weight`, N = days of the documents the user
        may see (with the request's filters), n = those whose body has the word.
        Without a user there is no one person's days to count: no scaling.
        """
        visible = Query.boolean_query([(Occur.Must, f) for f in filters]) if filters else None
        now = req.now or utcnow()
        scope_key = (
            req.user,
            req.topic_filter,
            req.content_types,
            req.kinds,
            req.scope,
            req.min_quality,
            req.include_expired,
            _epoch(now) // 60,
        )  # expiry moves with time: minute grain
        days = 0.0
        if req.user is not None and visible is not None and ranking.spread_weight:
            days = self._count_days(searcher, (*scope_key, None), visible)
        out: dict[str, Query] = {}
        for group in plan.groups:
            query = self._term_group_query(searcher, group, ranking)
            weight = group.weight
            if days > 1 and visible is not None:
                word = Query.term_query(self._schema, "body", group.stem)
                spread = self._count_days(
                    searcher,
                    (*scope_key, group.stem),
                    Query.boolean_query([(Occur.Must, word), (Occur.Must, visible)]),
                )
                if spread >= 1:
                    ratio = _idf(min(spread, days), days) / _idf(1.0, days)
                    weight *= ratio**ranking.spread_weight
            out[group.stem] = Query.boost_query(query, weight)
        return out

    def _term_group_query(self, searcher: tantivy.Searcher, group: TermGroup, ranking: Ranking) -> Query:
        """The best of the stem (every text field) and its down-weighted variants (body)."""
        boosts = ranking.field_boosts()

        def fields(term: str, weight: float) -> Query:
            return Query.boolean_query(
                [
                    (
                        Occur.Should,
                        Query.boost_query(Query.term_query(self._schema, name, term), boost * weight),
                    )
                    for name, boost in boosts.items()
                ]
            )

        variants = dict(group.variants)
        if ranking.word_forms and ranking.prefix_weight > 0 and len(group.stem) >= PREFIX_MIN:
            prefix = group.stem[: max(4, len(group.stem) - 3)]
            for term, _ in searcher.terms_with_prefix("body", prefix, limit=PREFIX_TERMS):
                if term != group.stem and variants.get(term, 0.0) < ranking.prefix_weight:
                    variants[term] = ranking.prefix_weight
        parts = [fields(group.stem, 1.0)]
        parts += [  # variants in the body only: a third of the postings to read
            Query.boost_query(Query.term_query(self._schema, "body", term), weight)
            for term, weight in sorted(variants.items())
        ]
        return parts[0] if len(parts) == 1 else Query.disjunction_max_query(parts)

    def _expand_episodes(
        self,
        searcher: tantivy.Searcher,
        scorer: _Scorer,
        groups: dict[str, Query],
        clauses: list[tuple[Occur, Query]],
        ranking: Ranking,
    ) -> None:
        """Second stage: every turn of the best episodes, with its score per term group."""
        episodes = scorer.top_episodes(ranking.expand_episodes)
        if not episodes:
            return
        schema = self._schema
        parts: list[Query] = []
        sessions = sorted({ep[2] for ep in episodes if ep[0] == SESSION_EP})
        if sessions:
            parts.append(self._any_of("episode", sessions))
        span = int(ranking.episode_gap_minutes * 60 * GAP_SPAN)
        for _, owner_h, centre in (ep for ep in episodes if ep[0] == GAP_EP):
            parts.append(
                Query.boolean_query(
                    [
                        (Occur.Must, Query.term_query(schema, "owner", scorer.owner_name(owner_h))),
                        (Occur.Must, Query.term_query(schema, "episode", 0)),
                        (Occur.Must, Query.range_query(schema, "day", FieldType.Integer, 0, None)),
                        (
                            Occur.Must,
                            Query.range_query(
                                schema, "created", FieldType.Integer, centre - span, centre + span
                            ),
                        ),
                    ]
                )
            )
        within = Query.const_score_query(
            parts[0] if len(parts) == 1 else Query.boolean_query([(Occur.Should, q) for q in parts]), 0.0
        )
        members = searcher.search(
            Query.boolean_query([(Occur.Must, within), *clauses]), EXPAND_LIMIT, count=False
        ).hits
        scorer.add_members([a for _, a in members], episodes, int(ranking.episode_gap_minutes * 60))
        for stem, query in groups.items():
            found = searcher.search(
                Query.boolean_query([(Occur.Must, query), (Occur.Must, within), *clauses]),
                EXPAND_LIMIT,
                count=False,
            ).hits
            scorer.set_term_scores(stem, found)

    def _page(
        self, searcher: tantivy.Searcher, ranked: list[tuple[float, int, Any, str | None]], limit: int
    ) -> list[tuple[float, dict[str, Any], str | None]]:
        """The first `limit` hits; each run of exact ties (score and time) is ordered by path."""
        cut = min(limit, len(ranked))
        while 0 < cut < len(ranked) and ranked[cut][:2] == ranked[cut - 1][:2]:
            cut += 1
        rows = [
            (score, created, orjson.loads(searcher.doc(address).get_first("payload")), label)
            for score, created, address, label in ranked[:cut]
        ]
        page: list[tuple[float, dict[str, Any], str | None]] = []
        start = 0
        while start < len(rows):
            end = start + 1
            while end < len(rows) and rows[end][:2] == rows[start][:2]:
                end += 1
            tied = sorted(rows[start:end], key=lambda row: row[2]["doc_path"])
            page.extend((score, payload, label) for score, _, payload, label in tied)
            start = end
        return page[:limit]

    def _hit(
        self, payload: dict[str, Any], score: float, episode: str | None, terms: list[str], snippets: bool
    ) -> dict[str, Any]:
        payload["score"] = round(score, 6)
        created = payload.get("created_at")
        payload["date"] = created[:10] if isinstance(created, str) else None
        if episode is None and payload.get("kind") in TURN_KINDS:
            meta = payload.get("meta") or {}
            episode = next((str(meta[k]) for k in SESSION_KEYS if meta.get(k) not in (None, "")), None)
        payload["episode"] = episode
        payload["snippet"] = snippet_for(self._root, payload["doc_path"], terms) if snippets else ""
        return payload


def _idf(n: float, total: float) -> float:
    return math.log(1.0 + (total - n + 0.5) / (n + 0.5))


_Key = tuple[int, int]  # a document's (segment, doc id) within one searcher
_Ep = tuple[int, int, int]
"""An episode: (SESSION_EP, owner hash, session hash) for turns imported with a session id;
(GAP_EP, owner hash, first turn's time) for a run of turns with no long gap (before the
second stage knows the run, a turn is its own run, keyed by its own time)."""
SESSION_EP, GAP_EP = 1, 2
GAP_SPAN = 12
"""The second stage looks this many gaps either side of a turn for the rest of its run."""


class _Scorer:
    """Candidates of one search and the arithmetic of the module docstring's formula."""

    def __init__(
        self,
        searcher: tantivy.Searcher,
        req: SearchRequest,
        ranking: Ranking,
        now: datetime,
        window: tuple[int, int] | None = None,
    ) -> None:
        self.searcher = searcher
        self.ranking = ranking
        want = req.topic or req.topic_filter
        self.want_h = _h64(want) if want else None
        self.want_ph = _h64(_parent(want)) if want else None
        self.now_s = _epoch(now)
        self.window = window
        self.address: dict[_Key, Any] = {}
        self.created: dict[_Key, int] = {}
        self.episode_of: dict[_Key, _Ep | None] = {}
        self.factor: dict[_Key, float] = {}
        self.base: dict[_Key, float] = {}
        self.terms: dict[_Key, dict[str, float]] = {}
        self.expanded: set[_Ep] = set()
        self._owners: dict[int, str] = {}

    def add_hits(self, hits: list[tuple[float, Any]]) -> None:
        """Stage-1 hits with their BM25 (a document already seen keeps its best)."""
        keys = self._place([a for _, a in hits])
        self._factors(keys)
        for (score, _), key in zip(hits, keys, strict=True):
            value = float(score) * self.factor[key]
            if value > self.base.get(key, -1.0):
                self.base[key] = value

    def add_members(self, addresses: list[Any], episodes: list[_Ep], gap_s: int) -> None:
        """Every turn of the expanded episodes; gap episodes are cut into runs here."""
        self._place(addresses)
        wanted = {ep for ep in episodes if ep[0] == SESSION_EP}
        centres = {(ep[1], ep[2]) for ep in episodes if ep[0] == GAP_EP}
        if centres:
            by_owner: dict[int, list[_Key]] = {}
            for key, ep in self.episode_of.items():
                if ep is not None and ep[0] == GAP_EP:
                    by_owner.setdefault(ep[1], []).append(key)
            for owner_h, keys in by_owner.items():
                keys.sort(key=lambda k: (self.created[k], k))
                run: list[_Key] = []
                for key in [*keys, None]:
                    if run and (key is None or self.created[key] - self.created[run[-1]] > gap_s):
                        if any((owner_h, self.created[k]) in centres for k in run):
                            ep = (GAP_EP, owner_h, self.created[run[0]])
                            wanted.add(ep)
                            for k in run:
                                self.episode_of[k] = ep
                        run = []
                    if key is not None:
                        run.append(key)
        for key in list(self.address):
            if self.episode_of[key] not in wanted and key not in self.base:
                del self.address[key]  # outside the chosen runs, or another user's same session
        self.expanded = wanted

    def _place(self, addresses: list[Any]) -> list[_Key]:
        """Record where each document sits in time (created, episode); its key."""
        keys = [(a.segment_ord, a.doc) for a in addresses]
        fresh = [a for a, k in zip(addresses, keys, strict=True) if k not in self.address]
        if fresh:
            ff = self.searcher.fast_field_values
            created, day, owner = ff("created", fresh), ff("day", fresh), ff("owner_h", fresh)
            episode = ff("episode", fresh)
            for i, address in enumerate(fresh):
                key = (address.segment_ord, address.doc)
                self.address[key] = address
                self.created[key] = created[i] if created[i] is not None else self.now_s
                if day[i] is None or day[i] < 0:
                    self.episode_of[key] = None  # not a turn
                elif episode[i]:
                    self.episode_of[key] = (SESSION_EP, owner[i], episode[i])
                else:
                    self.episode_of[key] = (GAP_EP, owner[i], self.created[key])
        return keys

    def _factors(self, keys: list[_Key]) -> None:
        """quality · freshness · trust · topic · time window, for the keys that lack it."""
        todo = [k for k in dict.fromkeys(keys) if k not in self.factor]
        if not todo:
            return
        addresses = [self.address[k] for k in todo]
        ff = self.searcher.fast_field_values
        quality, trust = ff("quality", addresses), ff("trust", addresses)
        topic_h, topic_ph = ff("topic_h", addresses), ff("topic_ph", addresses)
        r = self.ranking
        half_life = max(r.freshness_half_life_days, 1e-6)
        for i, key in enumerate(todo):
            age_days = max(0.0, (self.now_s - self.created[key]) / 86400.0)
            f = 1.0 + r.quality_weight * ((quality[i] or 0.0) - 0.5)
            f *= 1.0 + r.freshness_weight * math.pow(2.0, -age_days / half_life)
            t = trust[i]
            if t is not None and t >= 0.0:
                f *= 1.0 + r.trust_weight * (t - 0.5)
            if self.want_h is not None:
                if topic_h[i] == self.want_h:
                    f *= 1.0 + r.topic_boost
                elif topic_ph[i] == self.want_h or topic_h[i] == self.want_ph:
                    f *= 1.0 + r.topic_boost * 0.5
            if self.window is not None and self.window[0] <= self.created[key] < self.window[1]:
                f *= 1.0 + r.time_weight
            self.factor[key] = f

    def owner_name(self, owner_h: int) -> str:
        """The owner (user) whose hash is `owner_h`, from a stage-1 hit's payload."""
        if owner_h not in self._owners:
            name = GLOBAL_OWNER
            for key in self.base:
                ep = self.episode_of[key]
                if ep is not None and ep[1] == owner_h:
                    payload = orjson.loads(self.searcher.doc(self.address[key]).get_first("payload"))
                    name = payload.get("user") or GLOBAL_OWNER
                    break
            self._owners[owner_h] = name
        return self._owners[owner_h]

    def top_episodes(self, count: int) -> list[_Ep]:
        """The `count` episodes whose best stage-1 turn scores highest."""
        best: dict[_Ep, float] = {}
        for key, score in self.base.items():
            ep = self.episode_of[key]
            if ep is not None and score > best.get(ep, -1.0):
                best[ep] = score
        return sorted(best, key=lambda e: (-best[e], -e[2], e[1]))[:count]

    def set_term_scores(self, stem: str, hits: list[tuple[float, Any]]) -> None:
        """c_g(d) for the expanded episodes' turns that match group `stem`."""
        keys = [(a.segment_ord, a.doc) for _, a in hits]
        keys = [k for k in keys if k in self.address]
        self._factors(keys)
        lookup = dict(zip(((a.segment_ord, a.doc) for _, a in hits), (s for s, _ in hits), strict=True))
        for key in keys:
            self.terms.setdefault(key, {})[stem] = float(lookup[key]) * self.factor[key]

    def final(self, order: str | None) -> list[tuple[float, int, Any, str | None]]:
        """(score, created, address, episode label) best first: see the module docstring."""
        r = self.ranking
        scores: dict[_Key, float] = {}
        members: dict[_Ep, list[_Key]] = {}
        for key in self.address:
            ep = self.episode_of[key]
            if ep is not None and ep in self.expanded:
                members.setdefault(ep, []).append(key)
            elif key in self.base:
                scores[key] = (1.0 + r.episode_weight) * self.base[key]
        terms, created, beta = self.terms, self.created, r.neighbour_weight
        empty: dict[str, float] = {}
        ep_score: dict[_Ep, float] = {}
        for ep, keys in members.items():
            keys.sort(key=lambda k: (created[k], k))
            cover: dict[str, float] = {}
            for key in keys:
                for stem, value in terms.get(key, empty).items():
                    if value > cover.get(stem, 0.0):
                        cover[stem] = value
            bonus = r.episode_weight * sum(cover.values())
            ep_score[ep] = sum(cover.values())
            last = len(keys) - 1
            for i, key in enumerate(keys):
                own = terms.get(key, empty)
                before = terms.get(keys[i - 1], empty) if i > 0 else empty
                after = terms.get(keys[i + 1], empty) if i < last else empty
                if not (own or before or after):
                    continue
                window = dict(own)
                for side in (before, after):
                    for stem, value in side.items():
                        value *= beta
                        if value > window.get(stem, 0.0):
                            window[stem] = value
                score = sum(window.values())
                if score > 0:
                    scores[key] = score + bonus
        if order is not None and r.latest_weight and ep_score:
            self._prefer_order(scores, members, ep_score, order == "earliest")
        ranked = sorted(scores, key=lambda k: (-scores[k], -created[k], k))
        if r.episode_cap > 0:
            ranked = self._cap_episodes(ranked, r.episode_cap)
        starts = {ep: created[keys[0]] for ep, keys in members.items()}
        return [(scores[k], created[k], self.address[k], self._label(k, starts)) for k in ranked]

    def _label(self, key: _Key, starts: dict[_Ep, int]) -> str | None:
        """How a hit names its episode: the session id, else `gap:` and the run's first time."""
        ep = self.episode_of[key]
        if ep is None or ep[0] == SESSION_EP:
            return None  # the session id is in the hit's meta; filled in by the caller
        start = starts.get(ep, ep[2])
        return "gap:" + datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _cap_episodes(self, ranked: list[_Key], cap: int) -> list[_Key]:
        """At most `cap` turns of one episode ahead of every other hit: more episodes in a page."""
        seen: dict[_Ep, int] = {}
        first: list[_Key] = []
        later: list[_Key] = []
        for key in ranked:
            ep = self.episode_of[key]
            if ep is not None:
                seen[ep] = seen.get(ep, 0) + 1
                if seen[ep] > cap:
                    later.append(key)
                    continue
            first.append(key)
        return first + later

    def _prefer_order(
        self,
        scores: dict[_Key, float],
        members: dict[_Ep, list[_Key]],
        ep_score: dict[_Ep, float],
        earliest: bool,
    ) -> None:
        """Among episodes scoring within `latest_band` of the best, the later (or earlier) the better."""
        best = max(ep_score.values())
        band = [e for e, s in ep_score.items() if s > 0 and s >= self.ranking.latest_band * best]
        if not band:
            return
        when = {e: self.created[members[e][0]] for e in band}
        first, last = min(when.values()), max(when.values())
        if last == first:
            return
        for ep in band:
            share = (when[ep] - first) / (last - first)
            boost = 1.0 + self.ranking.latest_weight * ((1.0 - share) if earliest else share)
            for key in members[ep]:
                if key in scores:
                    scores[key] *= boost


# --- snippets -------------------------------------------------------------------------

SNIPPET_CHARS = 220


def _body_of(text: str) -> str:
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            return text[end + 4 :]
    return text


_NOT_PROSE = re.compile(r"^(?:#|```|_meta|\|---|  type:).*$", re.MULTILINE)
"""Lines a snippet skips: headings, code fences, `_meta` blocks, table rules."""


def snippet_for(root: Path | str, rel_path: str, terms: Iterable[str]) -> str:
    """A ~220-character window of the file around the query terms, terms in **bold**.

    Read like every vault file (`read_vault_file`): a file swapped for a symlink
    since it was indexed gives no snippet."""
    try:
        data, _ = read_vault_file(root, rel_path)
    except (OSError, EventsError):
        return ""
    text = _body_of(data.decode("utf-8", errors="replace").replace("\x00", ""))
    flat = " ".join(_NOT_PROSE.sub(" ", text).split())
    stems = tuple(
        sorted({t[: max(4, len(t) - 2)] if len(t) > 4 else t for t in terms}, key=len, reverse=True)
    )
    if not stems:
        return flat[:SNIPPET_CHARS]
    if flat.isascii():  # then lower() keeps every offset: find on the lowered copy
        haystack = flat.lower()
        matches = _find_words(haystack, stems)
    else:
        pattern = _snippet_pattern(stems, True)
        matches = [m.span() for m in pattern.finditer(flat)]
    if not matches:
        return flat[:SNIPPET_CHARS]
    best_start, best_count, right = matches[0][0], 0, 0
    for left, (m_start, _) in enumerate(matches):  # sliding window: most matches within SNIPPET_CHARS
        while right < len(matches) and matches[right][0] < m_start + SNIPPET_CHARS:
            right += 1
        if right - left > best_count:
            best_start, best_count = m_start, right - left
    start = max(0, best_start - 40)
    start = flat.rfind(" ", 0, start) + 1 if start else 0
    end = start + SNIPPET_CHARS
    pieces, last = [], start
    for m_start, m_end in matches:
        if m_start < start or m_start >= end:
            continue
        if m_end > end:  # cut by the window: still bold only if a whole stem is left
            if not any(flat[m_start:end].lower().startswith(stem) for stem in stems):
                continue
            m_end = end
        pieces += [flat[last:m_start], "**", flat[m_start:m_end], "**"]
        last = m_end
    out = "".join(pieces) + flat[last:end]
    return ("…" if start else "") + out + ("…" if end < len(flat) else "")


def _find_words(haystack: str, stems: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of each word of `haystack` (lower-case ASCII) that begins with a stem.

    `str.find` per stem: several times faster than one regex alternation scanning
    every position, and snippets are a third of a search's time.
    """
    spans: dict[int, int] = {}
    rest_of_word = _REST_OF_WORD.match
    for stem_text in stems:
        at = haystack.find(stem_text)
        while at != -1:
            if at not in spans and (at == 0 or not _word_char(haystack[at - 1])):
                match = rest_of_word(haystack, at + len(stem_text))
                spans[at] = match.end() if match else at + len(stem_text)
            at = haystack.find(stem_text, at + 1)
    return sorted(spans.items())


_REST_OF_WORD = re.compile(r"\w*")


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


@lru_cache(maxsize=512)
def _snippet_pattern(stems: tuple[str, ...], ignore_case: bool) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(s.lower() if not ignore_case else s) for s in stems)
    return re.compile(r"\b(" + alternatives + r")\w*", re.IGNORECASE if ignore_case else 0)
