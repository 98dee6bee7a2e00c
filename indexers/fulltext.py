"""The tantivy full-text index over every document of a vault.

Layout under `indexes/`:

    fulltext/            the live index: tantivy/ (segments), state.jsonl, schema.json
    fulltext.lock        writer lock (flock; holds the writer's pid)
    fulltext.new/        a rebuild in progress (swapped in when complete)

The schema is derived from `IndexDoc` (itself derived from `DocumentMetadata`):
stemmed English text for title/body/keywords; raw terms for ids, owner, scope and
content types; a facet for the hierarchical topic (`pet.hamster` matches
`pet.hamster.syrian`); fast fields for the ranking signals.

Ranking (also in the README): tantivy gives BM25 over title (×2), keywords (×1.5)
and body; the top `candidate_pool` candidates are re-ranked with

    s     = bm25 · (1 + wq·(quality − ½)) · (1 + wf·2^(−age_days / half_life))
                 · (1 + wt·(trust − ½))   [when trust is known]
                 · (1 + wtopic·m)          [m = 1 exact topic, ½ parent or child]
    final = s + wday · max{ s' : same user, same day }      [turns only]

so a fresher, higher-quality, better-trusted document wins a tie, an exact topic
beats its neighbours, and a turn inherits part of the best score of its day (a
conversation is usually answered by a neighbour of the turn that matches).
Filters (user visibility, topic, types, scope, quality, expiry) are constant-score
clauses and never change BM25.

Writers hold `fulltext.lock` only for one batch; a second writer waits up to
`wait_s` and then gets `IndexBusy` naming the holder's pid.  Readers never wait:
every search reloads the reader (≈50 µs) and reopens the index if a rebuild swapped
the folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import math
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import tantivy
from tantivy import Facet, FieldType, Occur, Query

from events import format_ts
from events.fsio import atomic_write

from .documents import IndexDoc
from .errors import IndexBusy, IndexIncompatible

__all__ = ["FullTextIndex", "IndexBatch", "Ranking", "SearchRequest", "StateEntry", "query_terms"]

SCHEMA_VERSION = 2
GLOBAL_OWNER = "_global"
NEVER = 2**62
TEXT_FIELDS = ["title", "keywords", "body"]
FIELD_BOOSTS = {"title": 2.0, "keywords": 1.5, "body": 1.0}

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    did does tell know remember recall ever""".split()
)
_WORD = re.compile(r"[0-9A-Za-zÀ-ÖØ-öø-ÿ]+")


def query_terms(text: str) -> list[str]:
    """Lower-cased content words of a natural-language query (no operators, no stop words)."""
    words = [w.lower() for w in _WORD.findall(text)]
    kept = [w for w in words if w not in STOP_WORDS and not (len(w) == 1 and not w.isdigit())]
    return kept or [w for w in words if len(w) > 1]


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
    sb.add_unsigned_field("owner_h", fast=True, indexed=False)
    sb.add_unsigned_field("topic_h", fast=True, indexed=False)
    sb.add_unsigned_field("topic_ph", fast=True, indexed=False)
    sb.add_bytes_field("payload", stored=True, indexed=False)
    return sb.build()


@dataclass(frozen=True)
class Ranking:
    """Weights of the re-ranking formula (values come from `[search]` in pandafs.toml)."""

    quality_weight: float
    freshness_weight: float
    freshness_half_life_days: float
    trust_weight: float
    topic_boost: float
    day_weight: float
    candidate_pool: int


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


@dataclass(frozen=True)
class StateEntry:
    checksum: str
    mtime_ns: int
    size: int


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

    def __init__(self, writer: Any) -> None:
        self._writer = writer
        self.changes: dict[str, StateEntry | None] = {}

    def upsert(self, doc: IndexDoc) -> None:
        self._writer.delete_documents_by_term("path", doc.path)
        self._writer.add_document(_to_document(doc))
        self.changes[doc.path] = StateEntry(doc.checksum, doc.mtime_ns, doc.size)

    def delete(self, path: str) -> None:
        self._writer.delete_documents_by_term("path", path)
        self.changes[path] = None

    def delete_where(self, field_name: str, value: str) -> None:
        """Delete every document whose raw `field_name` equals `value` (e.g. owner)."""
        self._writer.delete_documents_by_term(field_name, value)

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
        self._schema = build_schema()

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
        self.indexes_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + self.wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                        raise IndexBusy(
                            f"index is busy, held by pid {holder} for more than {self.wait_s:g} s; "
                            "try again when it finishes"
                        ) from None
                    time.sleep(0.02)
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            try:
                yield
            finally:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _tantivy_writer(self, index: tantivy.Index) -> Any:
        try:
            return index.writer(heap_size=self.heap_mb * 1_000_000, num_threads=1)
        except ValueError as exc:  # tantivy's own lock: a writer we do not know about
            raise IndexBusy(f"index is busy ({exc}); try again") from exc

    @contextmanager
    def _batch_on(self, index: tantivy.Index, state_path: Path) -> Iterator[IndexBatch]:
        writer = self._tantivy_writer(index)
        batch = IndexBatch(writer)
        try:
            yield batch
        except BaseException:
            writer.rollback()
            raise
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
        lines = []
        for p, entry in changes.items():
            if entry is None:
                lines.append(orjson.dumps({"p": p, "d": 1}))
            else:
                lines.append(
                    orjson.dumps(
                        {"p": p, "c": entry.checksum, "m": entry.mtime_ns, "s": entry.size}
                    )
                )
        with open(path, "ab") as handle:
            handle.write(b"\n".join(lines) + b"\n")
            handle.flush()
            os.fsync(handle.fileno())

    def state(self) -> dict[str, StateEntry]:
        """What has been indexed: path → (checksum, mtime, size), folded from the state log."""
        return self._read_state(self.state_path)

    @staticmethod
    def _read_state(path: Path) -> dict[str, StateEntry]:
        state: dict[str, StateEntry] = {}
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return state
        for line in raw.splitlines():
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # torn last line of a crashed writer; reconcile re-checks that file
            if entry.get("d"):
                state.pop(entry["p"], None)
            else:
                state[entry["p"]] = StateEntry(entry["c"], entry["m"], entry["s"])
        return state

    def compact_state(self) -> None:
        """Rewrite the state log with one line per indexed path."""
        with self._lock():
            state = self.state()
            data = b"".join(
                orjson.dumps({"p": p, "c": e.checksum, "m": e.mtime_ns, "s": e.size}) + b"\n"
                for p, e in sorted(state.items())
            )
            atomic_write(self.state_path, data)

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
            with self._batch_on(index, state_path) as batch:
                yield batch
            with self._lock():
                if catch_up is not None:
                    catch_up(
                        lambda: self._batch_on(index, state_path), self._read_state(state_path)
                    )
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
        index.reload()
        return index.searcher()

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

    def _filters(self, req: SearchRequest, now: datetime) -> list[Query]:
        schema = self._schema
        filters: list[Query] = []
        if req.user is not None:
            visible = [
                (Occur.Should, Query.term_set_query(schema, "owner", [req.user, GLOBAL_OWNER])),
                (Occur.Should, Query.term_query(schema, "scope", "global")),
            ]
            filters.append(Query.boolean_query(visible))
        if req.topic_filter:
            filters.append(Query.term_query(schema, "topic", _facet(req.topic_filter)))
        if req.content_types:
            filters.append(Query.term_set_query(schema, "ctype", list(req.content_types)))
        if req.kinds:
            filters.append(Query.term_set_query(schema, "kind", list(req.kinds)))
        if req.scope:
            filters.append(Query.term_query(schema, "scope", req.scope))
        if req.min_quality is not None:
            filters.append(
                Query.range_query(schema, "quality", FieldType.Float, float(req.min_quality), None)
            )
        if not req.include_expired:
            filters.append(
                Query.range_query(schema, "expires", FieldType.Integer, _epoch(now) + 1, None)
            )
        return filters

    def search(self, req: SearchRequest, ranking: Ranking) -> list[dict[str, Any]]:
        """Hits for `req`, best first, each a dict (see module docstring for the score)."""
        now = req.now or datetime.now(UTC)
        searcher = self.searcher()
        index = self._open()
        terms = query_terms(req.query)
        filters = self._filters(req, now)
        clauses: list[tuple[Occur, Query]] = [
            (Occur.Must, Query.const_score_query(f, 0.0)) for f in filters
        ]
        for doc_id in req.exclude_ids:
            clauses.append((Occur.MustNot, Query.term_query(self._schema, "doc_id", doc_id)))
        pool = max(ranking.candidate_pool, req.limit * 3)
        if terms:
            text_query = index.parse_query(" ".join(terms), TEXT_FIELDS, field_boosts=FIELD_BOOSTS)
            query = Query.boolean_query([(Occur.Must, text_query), *clauses])
            hits = searcher.search(query, pool, count=False).hits
        else:
            query = Query.boolean_query([(Occur.Must, Query.all_query()), *clauses])
            hits = [
                (1.0, a)
                for _, a in searcher.search(query, pool, count=False, order_by_field="created").hits
            ]
        if not hits:
            return []
        ranked = self._rerank(searcher, hits, req, ranking, now)
        return [
            self._hit(searcher, address, score, terms) for score, address in ranked[: req.limit]
        ]

    def _rerank(
        self,
        searcher: tantivy.Searcher,
        hits: list[tuple[float, Any]],
        req: SearchRequest,
        ranking: Ranking,
        now: datetime,
    ) -> list[tuple[float, Any]]:
        addresses = [a for _, a in hits]
        quality = searcher.fast_field_values("quality", addresses)
        trust = searcher.fast_field_values("trust", addresses)
        created = searcher.fast_field_values("created", addresses)
        day = searcher.fast_field_values("day", addresses)
        owner = searcher.fast_field_values("owner_h", addresses)
        topic_h = searcher.fast_field_values("topic_h", addresses)
        topic_ph = searcher.fast_field_values("topic_ph", addresses)
        want = req.topic or req.topic_filter
        want_h = _h64(want) if want else None
        want_ph = _h64(_parent(want)) if want else None
        now_s = _epoch(now)
        half_life = max(ranking.freshness_half_life_days, 1e-6)
        scored: list[float] = []
        for i, (bm25, _) in enumerate(hits):
            age_days = max(0.0, (now_s - (created[i] or now_s)) / 86400.0)
            s = float(bm25)
            s *= 1.0 + ranking.quality_weight * ((quality[i] or 0.0) - 0.5)
            s *= 1.0 + ranking.freshness_weight * math.pow(2.0, -age_days / half_life)
            t = trust[i]
            if t is not None and t >= 0.0:
                s *= 1.0 + ranking.trust_weight * (t - 0.5)
            if want_h is not None:
                if topic_h[i] == want_h:
                    s *= 1.0 + ranking.topic_boost
                elif topic_ph[i] == want_h or topic_h[i] == want_ph:
                    s *= 1.0 + ranking.topic_boost * 0.5
            scored.append(s)
        best_of_day: dict[tuple[int, int], float] = {}
        for i, s in enumerate(scored):
            if day[i] is not None and day[i] >= 0:
                key = (owner[i], day[i])
                best_of_day[key] = max(best_of_day.get(key, 0.0), s)
        final = []
        for i, s in enumerate(scored):
            if day[i] is not None and day[i] >= 0 and ranking.day_weight:
                s += ranking.day_weight * best_of_day[(owner[i], day[i])]
            final.append((s, i))
        final.sort(key=lambda pair: (-pair[0], pair[1]))
        return [(s, addresses[i]) for s, i in final]

    def _hit(
        self, searcher: tantivy.Searcher, address: Any, score: float, terms: list[str]
    ) -> dict[str, Any]:
        doc = searcher.doc(address)
        hit = orjson.loads(doc.get_first("payload"))
        hit["score"] = round(score, 6)
        hit["snippet"] = snippet_for(self.indexes_dir.parent / hit["doc_path"], terms)
        return hit


# --- snippets -------------------------------------------------------------------------

SNIPPET_CHARS = 220


def _body_of(text: str) -> str:
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            return text[end + 4 :]
    return text


def snippet_for(path: Path, terms: Iterable[str]) -> str:
    """A ~220-character window of the file around the query terms, terms in **bold**."""
    try:
        text = _body_of(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return ""
    lines = [
        ln
        for ln in text.splitlines()
        if ln.strip() and not ln.startswith(("#", "```", "_meta", "|---", "  type:"))
    ]
    flat = " ".join(" ".join(lines).split())
    stems = sorted(
        {t[: max(4, len(t) - 2)] if len(t) > 4 else t for t in terms}, key=len, reverse=True
    )
    if not stems:
        return flat[:SNIPPET_CHARS]
    pattern = re.compile(r"\b(" + "|".join(re.escape(s) for s in stems) + r")\w*", re.IGNORECASE)
    matches = list(pattern.finditer(flat))
    if not matches:
        return flat[:SNIPPET_CHARS]
    best_start, best_count = matches[0].start(), 0
    for m in matches:
        count = sum(1 for n in matches if m.start() <= n.start() < m.start() + SNIPPET_CHARS)
        if count > best_count:
            best_start, best_count = m.start(), count
    start = max(0, best_start - 40)
    start = flat.rfind(" ", 0, start) + 1 if start else 0
    window = flat[start : start + SNIPPET_CHARS]
    out = pattern.sub(lambda m: f"**{m.group(0)}**", window)
    return ("…" if start else "") + out + ("…" if start + SNIPPET_CHARS < len(flat) else "")
