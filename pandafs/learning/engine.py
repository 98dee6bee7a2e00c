"""The learning engine: folds new turn events into usage and trust, the turn catalog and
the daily rollups, and materialises what changed into the documents and the index.

One `sync`, under `indexes/learning.lock`:

  1. fold every turn completed since the last sync (per user: the turns above the
     cursor, and earlier ones that were still running) and every new event of the
     maintenance logs — `trust.Projection`;
  2. append the folded turns' catalog rows and rewrite the rollups of their days
     (Save's sync leaves the rollups to the next other sync: reading a month of the
     catalog costs more than a turn should);
  3. save the cache (`state`), naming the documents about to be written as dirty;
  4. write the changed values into each document's frontmatter — usage_count,
     validation_count, validation_success, trust, and scope after a scope change —
     only when they differ, atomically, keeping every other key; re-index them;
  5. clear the dirty list.

Turns are projections of their own events, so a turn's usage and trust go to the
index only (`IndexDoc.trust`), never into its context.md; so do site_knowledge notes,
which belong to the research tool.  A crash anywhere is repaired by the next sync: an
unfinished step 4 by the dirty list, a torn cache by a full recompute (`rebuild`),
which folds every turn — live folders and archived ones — from scratch and gives the
same numbers.

Save calls `on_turn` after a sync: the turn's own contribution is folded in a preview
(not into the cache: its events are not written yet) so the policy can promote what
the turn used; the scope changes become events of the turn, and the documents are
written at once, named dirty so the next sync re-derives them from the events.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from events import (
    DocumentMetadata,
    Event,
    LogRead,
    TurnView,
    atomic_write,
    candidate_paths,
    check_chain,
    classify,
    parse_document,
    parse_event,
    project_turn,
    read_events,
    read_vault_file,
    render_document,
    turn_name,
    turn_number,
)
from events.errors import EventsError, FrontmatterError, NotInVault
from events.layout import TURN_DIR_RE
from events.schema import DocumentsUsed, ScopeChanged, TurnCompleted
from indexers.archive import ArchiveStore
from indexers.documents import IndexDoc, load_index_doc
from indexers.errors import ArchiveError

from ..memory import Memory
from ..vault import Vault, file_lock
from .catalog import Catalog, TurnRow, turn_row
from .maintenance import append_changes, read_changes
from .policy import DocState, ScopeDecision, decide_steps, promotable
from .rollups import rollup, write_rollups
from .state import (
    CounterStore,
    Cursor,
    LearningState,
    StaleCache,
    load_state,
    save_state,
    trust_lookup,
    write_state_file,
)
from .trust import SCOPE_RANK, Counts, Projection, ScopeRecord, TurnFacts, trust_of, turn_facts

__all__ = ["DocInfo", "Learning", "SyncReport"]

INDEX_ONLY_KINDS = frozenset({"turn", "archived_turn", "site"})
EVENTS_FILE = "events.jsonl"
LOCK_NAME = "learning.lock"
LEARNING_KEYS = ("usage_count", "validation_count", "validation_success", "trust")
_ORDER = list(DocumentMetadata.model_fields)


@dataclass
class SyncReport:
    full: bool = False
    turns: int = 0
    log_events: int = 0
    documents: list[str] = field(default_factory=list)
    index_updates: int = 0
    catalog_months: list[str] = field(default_factory=list)
    rollup_days: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)  # a rebuild's seconds per stage

    def as_json(self) -> dict[str, Any]:
        return {
            "full": self.full,
            "turns": self.turns,
            "log_events": self.log_events,
            "documents_written": self.documents,
            "index_updates": self.index_updates,
            "catalog_months": self.catalog_months,
            "rollup_days": self.rollup_days,
            "problems": self.problems,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class DocInfo:
    """A document as the policy and the materialiser see it."""

    doc_id: str
    rel: str
    kind: str
    owner: str | None
    front: dict[str, Any]
    body: str
    scope: str  # the projected scope (latest scope change, else the file's)
    created_at: datetime
    quality: float


@dataclass(frozen=True)
class _Target:
    """What a document's file should say after materialisation."""

    counts: Counts | None
    scope: tuple[str, datetime | None] | None  # (scope, when decided) or None: leave it


def _utc(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        try:
            return _utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            return None
    return None


def _put(front: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """Set `key`, keeping the key order: a new key goes after its predecessors in
    `DocumentMetadata` (or after `scope` for scope_origin), else at the end."""
    if key in front:
        front[key] = value
        return front
    anchors = ["scope"] if key == "scope_origin" else _ORDER[: _ORDER.index(key)]
    items = list(front.items())
    at = len(items) if key not in _ORDER and key != "scope_origin" else 0
    for i, (k, _) in enumerate(items):
        if k in anchors:
            at = i + 1
    items.insert(at, (key, value))
    return dict(items)


def events_from_bytes(data: bytes, where: str) -> list[Event]:
    """Typed events of a log held in memory (an archived turn's events.jsonl)."""
    log = LogRead(Path(where))
    body = data[: data.rfind(b"\n") + 1] if b"\n" in data else b""
    for line in body.splitlines():
        record = orjson.loads(line)
        log.records.append(record)
        log.lines.append(line)
    problem = check_chain(log)
    if problem is not None:
        raise problem
    return [parse_event(r) for r in log.records]


class Learning:
    """The learning fold of one vault.  Use `with Learning(vault).open() as engine:`."""

    def __init__(self, vault: Vault, memory: Memory | None = None) -> None:
        self.vault = vault
        self.memory = memory or Memory(vault, trust=trust_lookup(vault))
        self.cfg = vault.config.memory
        self.dir = vault.layout.indexes / "learning"
        self.catalog = Catalog(vault.layout.observability / "catalog")
        self.daily_dir = vault.layout.observability / "daily"
        self.state = LearningState(prior_weight=self.cfg.trust_prior_weight)
        self.counts = CounterStore(self.dir / "counts", {}, fresh=True)
        self.stale: str | None = None
        self.defer_index = False  # Save: collect index updates, commit them once
        self._index_queue: list[IndexDoc] = []
        self._archive_parts: dict[str, Any] = {}
        self._turns_dirs: dict[str, str] = {}
        # When a dict (rebuild): each live turn's extractions as the fold reads it, so the
        # reliability table is rebuilt without reading every events.jsonl a second time.
        self.extractions: dict[str, tuple[tuple[Any, ...], datetime] | None] | None = None

    # --- opening ----------------------------------------------------------------------

    @contextmanager
    def open(self, *, wait_s: float = 120.0) -> Iterator[Learning]:
        lock = self.vault.layout.indexes / LOCK_NAME
        with file_lock(lock, wait_s=wait_s, what="the learning state"):
            try:
                self.state, self.counts = load_state(self.dir, self.cfg.trust_prior_weight)
                self.stale = None
            except StaleCache as exc:
                self.state = LearningState(prior_weight=self.cfg.trust_prior_weight)
                self.counts = CounterStore(self.dir / "counts", {}, fresh=True)
                self.stale = str(exc)
            yield self

    def projection(self) -> Projection:
        return Projection(
            counts=self.counts,
            feedback={k: (int(v[0]), str(v[1])) for k, v in self.state.feedback.items()},
            scope=self.state.scope_records(),
            scope_days={d: dict(c) for d, c in self.state.scope_days.items()},
        )

    def _keep(self, projection: Projection) -> None:
        self.state.feedback = dict(sorted(projection.feedback.items()))
        self.state.set_scope_records(projection.scope)
        self.state.scope_days = dict(sorted(projection.scope_days.items()))

    # --- reading turns -----------------------------------------------------------------

    def _stub(self, user: str, turn: str) -> Path:
        return self.vault.layout.archive_stub(user, turn)

    def _archived_events(self, user: str, turn: str) -> list[Event] | None:
        """Events of an archived turn, read from its Parquet part (None if unreadable)."""
        try:
            front = parse_document(self._stub(user, turn).read_text(encoding="utf-8")).frontmatter
            part = str(front.get("archive_file") or "")
            if part not in self._archive_parts:  # keep one part: archived turns come in runs
                store = ArchiveStore(self.vault.layout.archive / "turns")
                self._archive_parts = {part: store.read_part(self.vault.root / part)}
            files = self._archive_parts[part].intact((user, turn))
            data = files.file(EVENTS_FILE) if files is not None else None
            if data is None:
                return None
            return events_from_bytes(data, f"{part}#{user}/{turn}/{EVENTS_FILE}")
        except (OSError, EventsError, ArchiveError, ValueError, orjson.JSONDecodeError):
            return None

    def load_turn(self, user: str, number: int) -> tuple[TurnView, list[Event]] | str | None:
        """(view, events) of a completed turn; "pending" if not complete; None if absent."""
        name = turn_name(number)
        turns = self._turns_dirs.get(user)
        if turns is None:  # a string per user: a rebuild asks for every turn of the vault
            turns = self._turns_dirs[user] = os.fspath(self.vault.layout.turns_dir(user))
        folder = f"{turns}/{name}"
        if os.path.isdir(folder):
            if not os.path.exists(f"{folder}/metadata.json"):
                return "pending"
            events = read_events(Path(folder, EVENTS_FILE))
            view = project_turn(events)
            if self.extractions is not None:
                extracted = (view.extractions, view.occurred_at) if view.extractions else None
                self.extractions[f"{user}/{name}"] = extracted
            return (view, events) if view.is_complete else "pending"
        elif self._stub(user, name).exists():
            found = self._archived_events(user, name)
            if found is None:
                raise EventsError(f"{user}/{name}: archived events are unreadable")
            events = found
        else:
            return None
        view = project_turn(events)
        return (view, events) if view.is_complete else "pending"

    def _highest(self, user: str, upto: int) -> int:
        """The highest turn number allocated to `user` (counter hint, then probing)."""
        turns = self.vault.layout.turns_dir(user)
        try:
            high = int((turns / ".counter").read_text().strip()) - 1
        except (OSError, ValueError):
            high = 0
            for directory in (turns, self.vault.layout.archive / "stubs" / user):
                if directory.is_dir():
                    for entry in os.scandir(directory):
                        match = TURN_DIR_RE.fullmatch(entry.name.removesuffix(".md"))
                        if match:
                            high = max(high, int(match.group(1)))
        high = max(high, upto)
        while (turns / turn_name(high + 1)).is_dir() or self._stub(user, turn_name(high + 1)).exists():
            high += 1
        return high

    def _all_numbers(self, user: str) -> list[int]:
        found: set[int] = set()
        for directory in (self.vault.layout.turns_dir(user), self.vault.layout.archive / "stubs" / user):
            if directory.is_dir():
                for entry in os.scandir(directory):
                    match = TURN_DIR_RE.fullmatch(entry.name.removesuffix(".md"))
                    if match:
                        found.add(int(match.group(1)))
        return sorted(found)

    # --- the fold ----------------------------------------------------------------------

    def _fold_users(
        self, projection: Projection, report: SyncReport, full: bool
    ) -> tuple[set[str], list[TurnRow]]:
        changed: set[str] = set()
        rows: list[TurnRow] = []
        for user in self.vault.layout.users():
            changed |= self._fold_user(user, projection, report, rows, full)
        return changed, rows

    def _fold_user(
        self, user: str, projection: Projection, report: SyncReport, rows: list[TurnRow], full: bool
    ) -> set[str]:
        """Fold `user`'s turns that are complete and not folded yet; advance the cursor."""
        cursor = Cursor() if full else self.state.users.get(user, Cursor())
        old_pending = set(cursor.pending)
        if full:
            numbers = self._all_numbers(user)
            high = max(numbers, default=0)
        else:
            high = self._highest(user, cursor.upto)
            numbers = sorted(old_pending | set(range(cursor.upto + 1, high + 1)))
        seen: dict[str, TurnFacts] = {}
        done: set[int] = set()
        pending: list[int] = []
        changed: set[str] = set()

        def folded(_user: str, number: int) -> bool:
            return number in done or (number <= cursor.upto and number not in old_pending)

        def target(user: str, turn: str) -> TurnFacts | None:
            if turn in seen:
                return seen[turn]
            loaded = self.load_turn(user, turn_number(turn))
            return turn_facts(*loaded) if isinstance(loaded, tuple) else None

        for number in numbers:
            try:
                loaded = self.load_turn(user, number)
            except (EventsError, OSError, ValueError) as exc:
                report.problems.append(f"{user}/{turn_name(number)}: {str(exc).splitlines()[0]}")
                pending.append(number)
                continue
            if loaded is None:
                continue
            if isinstance(loaded, str):
                pending.append(number)
                continue
            view, events = loaded
            fact = turn_facts(view, events)
            changed |= projection.fold_turn(fact, target, folded)
            seen[fact.turn] = fact
            rows.append(turn_row(view, events))
            done.add(number)
            report.turns += 1
        self.state.users[user] = Cursor(upto=max(high, cursor.upto), pending=pending)
        return changed

    def _fold_logs(self, projection: Projection, report: SyncReport, full: bool) -> tuple[set[str], set[str]]:
        changed: set[str] = set()
        days: set[str] = set()
        for user in self.vault.layout.users():
            start = 0 if full else self.state.logs.get(user, 0)
            events, problem = read_changes(self.vault, user, start)
            if problem is not None:
                report.problems.append(problem)
            for event in events:
                if isinstance(event.data, ScopeChanged):
                    record = ScopeRecord.from_event(event, event.ts)
                    changed |= projection.fold_scope(record)
                    days.add(record.at[:10])
            if events or start:
                self.state.logs[user] = start + len(events)
            report.log_events += len(events)
        return changed, days

    def sync(self, *, write: bool = True, rollups: bool = True) -> SyncReport:
        """Fold what is new (everything, if the cache is stale) and materialise it.

        `rollups=False` (Save) only notes the days whose rollups are out of date; the
        next sync that writes rollups (stats, promote, prune, `learning.sync`) does it.
        """
        if self.stale is not None:
            return self.rebuild(write=write)
        started = time.perf_counter()
        report = SyncReport()
        try:  # a torn shard shows up when it is first read, always before anything is written
            projection = self.projection()
            changed, rows = self._fold_users(projection, report, full=False)
            more, days = self._fold_logs(projection, report, full=False)
            days |= {r.date.isoformat() for r in rows}
            self._keep(projection)
            if write:
                docs = changed | more | set(self.state.dirty)
                self._commit(report, docs, rows, days, projection, rollups=rollups)
        except StaleCache as exc:
            self.stale = str(exc)
            return self.rebuild(write=write)
        report.seconds = time.perf_counter() - started
        return report

    def sync_checked(self, *, write: bool = True) -> SyncReport:
        """`sync`, then read every shard, recomputing if any is torn (for whole-vault jobs
        like promote and prune, which look at every document; a turn's Save reads only
        the shards of what it touches)."""
        report = self.sync(write=write)
        try:
            len(self.counts)
        except StaleCache as exc:
            self.stale = str(exc)
            return self.rebuild(write=write)
        return report

    def rebuild(self, *, write: bool = True) -> SyncReport:
        """Recompute everything from the events: counters, scope, catalog, rollups."""
        started = time.perf_counter()
        report = SyncReport(full=True)
        self.state = LearningState(prior_weight=self.cfg.trust_prior_weight)
        self.counts = CounterStore(self.dir / "counts", {}, fresh=True)
        projection = self.projection()
        changed, rows = self._fold_users(projection, report, full=True)
        more, _ = self._fold_logs(projection, report, full=True)
        self._keep(projection)
        folded = time.perf_counter()
        report.stages["learning fold"] = folded - started
        if write:
            self.catalog.rebuild(rows)
            report.catalog_months = self.catalog.months()
            catalogued = time.perf_counter()
            report.stages["catalog"] = catalogued - folded
            days = {r.date.isoformat() for r in rows} | set(self.state.scope_days)
            self._commit(report, changed | more, [], days, projection)
            report.stages["rollups and materialise"] = time.perf_counter() - catalogued
        self.stale = None
        report.seconds = time.perf_counter() - started
        return report

    def _commit(
        self,
        report: SyncReport,
        docs: set[str],
        rows: list[TurnRow],
        days: set[str],
        projection: Projection,
        rollups: bool = True,
    ) -> None:
        """Steps 2-5 of a sync (see the module docstring)."""
        plans, overlay = self._plan(sorted(docs), projection)
        if rows:
            report.catalog_months = self.catalog.append(rows)
        days |= set(self.state.rollup_days)
        if rollups:
            report.rollup_days = self._write_rollups(days)
            days = set()
        self.state.rollup_days = sorted(days)
        self.state.dirty = sorted(plans)
        save_state(self.dir, self.state, self.counts)
        report.documents, report.index_updates = self._apply(plans, overlay)
        self.state.dirty = []
        write_state_file(self.dir, self.state)

    # --- documents ---------------------------------------------------------------------

    def locate(self, doc_id: str) -> tuple[str, str, str | None] | None:
        """(vault-relative path, kind, owner) of the file behind `doc_id`, if it exists."""
        for rel in candidate_paths(doc_id):
            ref = classify(rel)
            if ref is not None and (self.vault.root / rel).is_file():
                return rel, ref.kind, ref.user
        return None

    def doc_info(self, doc_id: str, projection: Projection | None = None) -> DocInfo | None:
        """The document behind `doc_id` as it is on disk, with its projected scope.

        Turns and site notes are not parsed (their values go to the index only)."""
        found = self.locate(doc_id)
        if found is None:
            return None
        rel, kind, owner = found
        if kind in INDEX_ONLY_KINDS:
            return DocInfo(doc_id, rel, kind, owner, {}, "", "user", datetime.min.replace(tzinfo=UTC), 0.5)
        try:  # never through a symlink: its counters are written back over this path
            data, st = read_vault_file(self.vault.root, rel)
            parsed = parse_document(data.decode("utf-8"), rel)
            stat_time = datetime.fromtimestamp(st.st_mtime, UTC)
        except (OSError, NotInVault, UnicodeDecodeError, FrontmatterError):
            return None
        front = dict(parsed.frontmatter)
        created = _utc(front.get("created_at")) or stat_time
        try:
            quality = float(front.get("quality", 0.5))
        except (TypeError, ValueError):
            quality = 0.5
        scope = str(front.get("scope") or ("user" if owner else "global"))
        record = (projection.scope if projection else self.state.scope_records()).get(doc_id)
        if record is not None and record.new in SCOPE_RANK:
            scope = record.new
        elif record is None and front.get("scope_origin") in SCOPE_RANK:
            scope = str(front["scope_origin"])  # a change whose event was never written
        return DocInfo(doc_id, rel, kind, owner, front, parsed.body, scope, created, quality)

    def _turn_quality(self, rel: str) -> float:
        path = self.vault.root / rel
        try:
            if path.name == "context.md":
                return float(orjson.loads((path.parent / "metadata.json").read_bytes())["quality"])
            front = parse_document(path.read_text(encoding="utf-8"), rel).frontmatter
            return float(front.get("quality", 0.5))
        except (OSError, KeyError, TypeError, ValueError, orjson.JSONDecodeError, FrontmatterError):
            return 0.5

    def _target_front(self, info: DocInfo, target: _Target) -> dict[str, Any]:
        front = dict(info.front)
        if target.counts is not None:
            c = target.counts
            trust = trust_of(c, info.quality, self.cfg.trust_prior_weight)
            for key, value in zip(LEARNING_KEYS, (c.usage, c.validations, c.successes, trust), strict=True):
                front = _put(front, key, value)
        if target.scope is not None:
            scope, when = target.scope
            current = str(front.get("scope") or ("user" if info.owner else "global"))
            if scope != current:
                if "scope_origin" not in front:
                    front = _put(front, "scope_origin", current)
                front = _put(front, "scope", scope)
                if scope == "new":
                    base = when or info.created_at
                    front = _put(front, "expires_at", base + timedelta(hours=self.cfg.new_ttl_hours))
                else:
                    front.pop("expires_at", None)
        return front

    def _scope_target(self, info: DocInfo, record: ScopeRecord | None) -> tuple[str, datetime | None] | None:
        if record is not None and record.new in SCOPE_RANK:
            return (record.new, _utc(record.at))
        if record is None and info.front.get("scope_origin") in SCOPE_RANK:
            return (str(info.front["scope_origin"]), None)
        return None

    def _plan(
        self, docs: Sequence[str], projection: Projection, preview: dict[str, _Target] | None = None
    ) -> tuple[dict[str, tuple[str, _Target]], dict[str, tuple[str, float]]]:
        """Files to rewrite ({doc: (rel, target)}) and turn trust for the index ({doc: (rel, t)})."""
        plans: dict[str, tuple[str, _Target]] = {}
        overlay: dict[str, tuple[str, float]] = {}
        w = self.cfg.trust_prior_weight
        for doc_id in docs:
            info = self.doc_info(doc_id, projection)
            if info is None:
                continue
            if preview is not None and doc_id in preview:
                target = preview[doc_id]
            else:
                counts = self.counts.get(doc_id)
                target = _Target(counts, self._scope_target(info, projection.scope.get(doc_id)))
            if info.kind in INDEX_ONLY_KINDS:
                if target.counts is None:
                    continue
                trust = trust_of(target.counts, self._turn_quality(info.rel), w)
                if self.counts.trust(doc_id) != trust:
                    overlay[doc_id] = (info.rel, trust)  # a preview, too, so the index is current
                    if preview is None:
                        self.counts.set_trust(doc_id, trust)
                continue
            front = self._target_front(info, target)
            if preview is None and target.counts is not None:
                self.counts.set_trust(doc_id, front.get("trust"))
            if front != info.front:
                plans[doc_id] = (info.rel, target)
        return plans, overlay

    def _apply(
        self, plans: dict[str, tuple[str, _Target]], overlay: dict[str, tuple[str, float]]
    ) -> tuple[list[str], int]:
        """Write the planned files, then index them and the turns' new trust in one batch.

        Each file is re-read under its owner's memory lock and only the learning keys and
        scope are changed on what it says *now*: a line a concurrent save added since the
        plan was made is kept (the plan's copy of the file is never written back).
        """
        written: list[str] = []
        for doc_id, (rel, target) in plans.items():
            ref = classify(rel)
            with self.vault.memory_lock(ref.user if ref else None):
                info = self.doc_info(doc_id)
                if info is None or info.rel != rel:
                    continue
                front = self._target_front(info, target)
                if front == info.front:
                    continue
                atomic_write(self.vault.root / rel, render_document(front, info.body))
            written.append(rel)
        max_bytes = self.vault.config.index.max_file_bytes
        for rel in written:
            loaded = load_index_doc(self.vault.root, rel, max_bytes=max_bytes)
            if isinstance(loaded, IndexDoc):
                self._index_queue.append(loaded)
        for rel, trust in overlay.values():
            loaded = load_index_doc(self.vault.root, rel, max_bytes=max_bytes)
            if isinstance(loaded, IndexDoc):
                self._index_queue.append(replace(loaded, trust=trust))
        count = len(self._index_queue)
        if not self.defer_index:
            self.flush_index()
        return sorted(written), count

    def take_index_queue(self) -> list[IndexDoc]:
        """The queued index updates, for a caller that commits them itself."""
        queue, self._index_queue = self._index_queue, []
        return list({d.path: d for d in queue}.values())

    def flush_index(self) -> None:
        """Commit the queued index updates (one tantivy commit)."""
        queue = self.take_index_queue()
        if queue:
            with self.memory.index.batch() as batch:
                for doc in queue:
                    batch.upsert(doc)

    def _write_rollups(self, days: set[str]) -> list[str]:
        made = []
        months: dict[str, list[str]] = {}
        for day in sorted(days):
            months.setdefault(day[:7], []).append(day)
        for month, month_days in months.items():  # each month's catalog is read once
            by_day: dict[date, list[dict[str, Any]]] = {}
            for row in self.catalog.read_rows(months=[month]):
                by_day.setdefault(row["date"], []).append(row)
            for day in month_days:
                when = date.fromisoformat(day)
                rows = by_day.get(when, [])
                scope = self.state.scope_days.get(day, {})
                if rows or any(scope.values()):
                    made.append(rollup(when, rows, scope))
        return [p.stem for p in write_rollups(self.daily_dir, made)]

    # --- policy -------------------------------------------------------------------------

    def doc_state(self, info: DocInfo, counts: Counts, now: datetime) -> DocState:
        return DocState(
            doc_id=info.doc_id,
            doc_path=info.rel,
            kind=info.kind,
            owner=info.owner,
            scope=info.scope,
            trust=trust_of(counts, info.quality, self.cfg.trust_prior_weight),
            usage=counts.usage,
            validations=counts.validations,
            age_hours=max(0.0, (now - info.created_at).total_seconds() / 3600.0),
        )

    def decide_all(self, now: datetime) -> list[ScopeDecision]:
        """What the policy does now to every promotable document that has been used."""
        decisions: list[ScopeDecision] = []
        projection = self.projection()
        for doc_id in sorted(self.counts):
            owner, _, rest = doc_id.partition("/")
            if not rest.startswith("memories/") and not rest.endswith("/research"):
                continue
            info = self.doc_info(doc_id, projection)
            if info is None or not promotable(info.kind, info.owner):
                continue
            record = projection.scope.get(doc_id)
            if record is not None and _utc(record.at) and now < _utc(record.at):  # type: ignore[operator]
                continue  # decided after `now`: nothing to decide in its past
            decisions += decide_steps(self.doc_state(info, self.counts[doc_id], now), self.cfg)
        return decisions

    def record_decisions(self, decisions: Sequence[ScopeDecision], now: datetime) -> list[Event]:
        """Append decisions to their owners' maintenance logs, dated `now` (the next sync
        folds them and writes the documents: events first)."""
        written: list[Event] = []
        by_owner: dict[str, list[ScopeChanged]] = {}
        for d in decisions:
            by_owner.setdefault(d.owner, []).append(_event(d))
        for owner, changes in sorted(by_owner.items()):
            written += append_changes(self.vault, owner, changes, now)
        return written

    # --- Save ---------------------------------------------------------------------------

    def on_turn(self, view: TurnView, pending: Sequence[Any], now: datetime) -> list[ScopeChanged]:
        """Run the policy for what this turn used (its events not yet written); write the
        documents at once and return the scope changes as events of the turn."""
        facts = _pending_facts(view, pending)
        projection = self.projection()
        cursor = self.state.users.get(view.user, Cursor())

        def folded(_user: str, number: int) -> bool:
            return number <= cursor.upto and number not in cursor.pending

        def target(user: str, turn: str) -> TurnFacts | None:
            loaded = self.load_turn(user, turn_number(turn))
            return turn_facts(*loaded) if isinstance(loaded, tuple) else None

        preview = projection.preview(facts, target, folded)
        changes: list[ScopeChanged] = []
        targets: dict[str, _Target] = {}
        for doc_id, counts in preview.items():
            info = self.doc_info(doc_id, projection)
            if info is None:
                continue
            scope = self._scope_target(info, projection.scope.get(doc_id))
            if doc_id in facts.used and promotable(info.kind, info.owner):
                steps = decide_steps(self.doc_state(info, counts, now), self.cfg)
                changes += [_event(step) for step in steps]
                if steps:  # dated like the fold will date it: when the turn happened
                    scope = (steps[-1].new_scope, facts.occurred_at)
            targets[doc_id] = _Target(counts, scope)
        plans, overlay = self._plan(sorted(targets), projection, preview=targets)
        if plans:
            self.state.dirty = sorted(set(self.state.dirty) | set(plans))
            write_state_file(self.dir, self.state)
        if plans or overlay:
            self._apply(plans, overlay)
        return changes


def _event(d: ScopeDecision) -> ScopeChanged:
    return ScopeChanged(
        doc_id=d.doc_id,
        doc_path=d.doc_path,
        old_scope=d.old_scope,
        new_scope=d.new_scope,
        reason=d.reason,
        trust=d.trust,
        usage_count=d.usage_count,
    )


def _pending_facts(view: TurnView, pending: Sequence[Any]) -> TurnFacts:
    """The facts of a turn whose Save events are about to be written."""
    facts = turn_facts(view)
    used = next((p for p in pending if isinstance(p, DocumentsUsed)), view.used)
    completed = next((p for p in pending if isinstance(p, TurnCompleted)), view.completed)
    technical = any(f.phase != "learning" for f in view.failures)
    return replace(
        facts,
        used=tuple(dict.fromkeys(used.doc_ids)) if used else (),
        outcome=used.outcome if used and not technical else None,
        quality=completed.quality if completed else facts.quality,
    )
