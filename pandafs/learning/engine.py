"""The learning engine: `sync` (or `rebuild`) folds turn events into usage and trust, the
turn catalog and the daily rollups, under the cache in `indexes/learning/`.

One `sync`, under `indexes/learning.lock`: (1) fold the turns completed since the last sync
and the maintenance logs' new events (`trust.Projection`; Save: its own user's only); (2)
append their catalog rows and rewrite their days' rollups (Save leaves both to a later
sync; its rows wait in `LearningState.catalog_rows`); (3) journal what changed, naming the
documents about to be written dirty; (4) write usage, validation, trust and scope into
their frontmatter, atomically, other keys kept, and re-index them; (5) clear the dirty list.

Turns and site notes keep usage and trust in the index only (`IndexDoc.trust`).  A crash
is repaired by the next sync: step 4 by the dirty list, a torn cache by a full recompute
to the same numbers.  Save's `on_turn` folds the turn's own contribution in a preview
(its events are not written yet) so the policy can promote what the turn used."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from datetime import date
from functools import cached_property
from itertools import groupby
from typing import TYPE_CHECKING, Any

from events.errors import EventsError
from events.fsio import check_folders, lock_is_held, vault_folder
from events.layout import turn_name
from events.schema import ScopeChanged

from ..errors import first_line
from ..memory.api import Memory
from ..vault import Vault, file_lock
from .maintenance import read_changes
from .materialise import Materialiser
from .policy import ScopePolicy
from .reading import TurnReader
from .rollups import ROW_FIELDS, rollup, write_rollups
from .rows import TurnRow, turn_row, turn_row_values
from .state import Cursor, LearningCache, StaleCache, learned_memory
from .trust import Projection, ScopeRecord, turn_facts

if TYPE_CHECKING:  # pyarrow
    from .catalog import Catalog

__all__ = ["Learning", "SyncReport"]

LOCK_NAME = "learning.lock"
CATALOG_BATCH = 32
"""Catalog rows Save lets wait in the learning cache before it writes them as a delta itself."""
PROGRESS_EVERY = 1024  # turns between two progress reports of a full fold


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector paused while a rebuild folds every turn: what it keeps is
    millions of objects in no cycle, which each full collection would walk for nothing.
    Objects are still freed by reference counting; the collector runs again afterwards (as
    it was: a caller's pause stays)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@dataclass(eq=False)
class SyncReport:
    """What a learning sync folded and wrote."""

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
        out = {k: v for k, v in asdict(self).items() if k != "stages"}
        return {**out, "documents_written": out.pop("documents"), "seconds": round(self.seconds, 3)}


class Learning:
    """The learning fold of one vault, indexing through `memory` (else one with what it
    learned).  Use `with Learning(vault).open() as engine:`."""

    def __init__(self, vault: Vault, memory: Memory | None = None) -> None:
        self.vault = vault
        self.cache = LearningCache.of(vault)
        self.reader = TurnReader(vault)
        self.documents = Materialiser(vault, memory or learned_memory(vault), self.cache)
        self.policy = ScopePolicy(vault, self.cache, self.reader, self.documents)
        self.daily_dir = vault.layout.observability / "daily"
        self.stale: str | None = None
        # When given (rebuild): told how many turns the fold will read, then each
        # `PROGRESS_EVERY` read, as the indexer tells the documents it indexes.
        self.on_total: Callable[[int], None] | None = None
        self.progress: Callable[[int], None] | None = None

    @cached_property
    def catalog(self) -> Catalog:
        """The turn catalog (its module loads pyarrow: only a sync that writes or reads
        catalog rows gets here, not a turn's Save)."""
        from .catalog import Catalog

        return Catalog.of(self.vault)

    @contextmanager
    def open(self, *, wait_s: float = 120.0) -> Iterator[Learning]:
        root = self.vault.root
        lock = vault_folder(root, self.vault.layout.indexes) / LOCK_NAME
        catalog_dir = self.vault.layout.observability / "catalog"
        check_folders(root, self.cache.dir, catalog_dir, self.daily_dir)  # no linked folder
        with file_lock(lock, wait_s=wait_s, what="the learning state", root=root):
            try:
                self.cache.load()
                self.stale = None
            except StaleCache as exc:
                self.cache.reset()
                self.stale = str(exc)
            try:
                yield self
            finally:
                self.cache.release()

    # --- the fold ----------------------------------------------------------------------

    def _fold_users(
        self,
        projection: Projection,
        report: SyncReport,
        rows: Callable[[Any], None],
        full: bool,
        users: Sequence[str] | None = None,
    ) -> set[str]:
        """Fold every user's new turns (or those of `users`), handing each catalog row to `rows`
        (a full fold: row values for a `CatalogRebuild`, its total to `on_total` first)."""
        listed: dict[str, list[int] | None] = {
            user: sorted(self.vault.layout.turn_numbers(user)) if full else None
            for user in (self.vault.layout.users() if users is None else users)
        }
        if full and self.on_total is not None:
            self.on_total(sum(len(numbers or ()) for numbers in listed.values()))
        changed: set[str] = set()
        for user, numbers in listed.items():
            with self.reader.turns_open(user) if full else nullcontext():
                changed |= self._fold_user(user, projection, report, rows, numbers)
        return changed

    def _fold_user(
        self,
        user: str,
        projection: Projection,
        report: SyncReport,
        rows: Callable[[Any], None],
        listed: list[int] | None,
    ) -> set[str]:
        """Fold `user`'s turns that are complete and not folded yet; advance the cursor.
        `listed`: a full fold's list of the user's turns (None: fold what is new)."""
        full = listed is not None
        cursor = Cursor() if full else self.cache.state.users.get(user, Cursor())
        old_pending = set(cursor.pending)
        if listed is not None:
            numbers = listed
            high = max(numbers, default=0)
            if lock_is_held(self.vault.layout.import_lock):  # it may hold numbers below `high`
                numbers = list(range(1, high + 1))  # not placed yet: pending, below
        else:
            high = self.vault.layout.newest_turn(user, cursor.upto)
            numbers = sorted(old_pending | set(range(cursor.upto + 1, high + 1)))
        done: set[int] = set()
        pending: list[int] = []
        changed: set[str] = set()

        def folded(_user: str, number: int) -> bool:
            return number in done or (number <= cursor.upto and number not in old_pending)

        tick = self.progress if full else None
        for at, number in enumerate(numbers, 1):
            if tick is not None and at % PROGRESS_EVERY == 0:
                tick(PROGRESS_EVERY)
            try:
                loaded = self.reader.load_turn(user, number)
                if loaded is None:  # a number the counter passed, with no turn
                    if lock_is_held(self.vault.layout.import_lock):
                        loaded = "pending"  # reserved by the import under way, placed later
                    else:  # looked at again: an import places its turns before it lets go
                        loaded = self.reader.load_turn(user, number)
            except (EventsError, OSError, ValueError) as exc:
                report.problems.append(f"{user}/{turn_name(number)}: {first_line(exc)}")
                pending.append(number)
                continue
            if loaded is None:
                continue
            if isinstance(loaded, str):
                pending.append(number)
                continue
            view, events = loaded
            fact = turn_facts(view, events)
            changed |= projection.fold_turn(fact, self.reader.facts, folded)
            rows(turn_row_values(view, events) if full else turn_row(view, events))
            done.add(number)
            report.turns += 1
        if tick is not None and len(numbers) % PROGRESS_EVERY:
            tick(len(numbers) % PROGRESS_EVERY)
        self.cache.state.users[user] = Cursor(max(high, cursor.upto), tuple(pending))
        return changed

    def _fold_logs(
        self, projection: Projection, report: SyncReport, full: bool, users: Sequence[str] | None = None
    ) -> tuple[set[str], set[str]]:
        changed: set[str] = set()
        days: set[str] = set()
        for user in self.vault.layout.users() if users is None else users:
            start = 0 if full else self.cache.state.logs.get(user, 0)
            events, problem = read_changes(self.vault, user, start)
            if problem is not None:
                report.problems.append(problem)
            for event in events:
                if isinstance(event.data, ScopeChanged):
                    record = ScopeRecord.from_event(event, event.ts)
                    changed |= projection.fold_scope(record)
                    days.add(record.at[:10])
            if events or start:
                self.cache.state.logs[user] = start + len(events)
            report.log_events += len(events)
        return changed, days

    def sync(
        self, *, write: bool = True, rollups: bool = True, users: Sequence[str] | None = None
    ) -> SyncReport:
        """Fold what is new (everything, if the cache is stale) and materialise it.

        `rollups=False` (Save) only notes the days whose rollups are out of date and keeps the
        catalog rows waiting.  `users` (Save: the turn's own user) folds only their new turns and
        scope changes, so a Save's cost does not grow with the vault's users; the others' are
        folded by their next Save or any full sync, exactly once either way."""
        if self.stale is not None:
            return self.rebuild(write=write)
        started = time.perf_counter()
        report = SyncReport()
        projection = self.cache.projection()
        rows: list[dict[str, Any]] = []
        changed = self._fold_users(projection, report, rows.append, full=False, users=users)
        more, days = self._fold_logs(projection, report, full=False, users=users)
        days |= {r["date"] for r in rows}
        if write:
            docs = changed | more | set(self.cache.state.dirty)
            self._commit(report, docs, rows, days, projection, rollups=rollups)
        report.seconds = time.perf_counter() - started
        return report

    @_collector_paused()
    def rebuild(self, *, write: bool = True) -> SyncReport:
        """Recompute everything from the events: counters, scope, catalog, rollups."""
        started = time.perf_counter()
        report = SyncReport(full=True)
        self.cache.reset()
        projection = self.cache.projection()
        from .catalog import CatalogRebuild

        catalog = CatalogRebuild(self.catalog) if write else None
        add = catalog.add if catalog is not None else lambda row: None
        changed = self._fold_users(projection, report, add, full=True)
        more, _ = self._fold_logs(projection, report, full=True)
        folded = time.perf_counter()
        report.stages["learning fold"] = folded - started
        if catalog is not None:
            report.catalog_months = catalog.finish()
            catalogued = time.perf_counter()
            report.stages["catalog"] = catalogued - folded
            days = {d.isoformat() for d in catalog.days} | set(self.cache.state.scope_days)
            self._commit(report, changed | more, [], days, projection)
            report.stages["rollups and materialise"] = time.perf_counter() - catalogued
        self.stale = None
        report.seconds = time.perf_counter() - started
        return report

    def _commit(
        self,
        report: SyncReport,
        docs: set[str],
        rows: list[dict[str, Any]],
        days: set[str],
        projection: Projection,
        rollups: bool = True,
    ) -> None:
        """Steps 2-5 of a sync (see the module docstring)."""
        plans, overlay = self.documents.plan(sorted(docs), projection)
        waiting = self.cache.state.catalog_rows
        for row in rows:
            waiting[f"{row['user']}/{row['turn']}"] = row
        if waiting and (rollups or len(waiting) >= CATALOG_BATCH):  # before the rollups read them
            written = [TurnRow.model_validate(r) for r in waiting.values()]
            report.catalog_months = self.catalog.append(written)
            waiting.hold(())
        days |= set(self.cache.state.rollup_days)
        if rollups:
            report.rollup_days = self._write_rollups(days)
            days = set()
        self.cache.state.rollup_days.hold(days)
        self.cache.state.dirty.hold(plans)
        self.cache.save()
        report.documents, report.index_updates = self.documents.apply(plans, overlay)
        if plans:  # else the cache just saved names nothing dirty already
            self.cache.state.dirty.hold(())
            self.cache.save()

    def _write_rollups(self, days: set[str]) -> list[str]:
        made = []
        for month, month_days in groupby(sorted(days), key=lambda day: day[:7]):
            rows_of = self.catalog.days_of(month, ROW_FIELDS)  # each month's catalog is read once
            for day in month_days:
                when = date.fromisoformat(day)
                rows = rows_of(when)
                scope = self.cache.state.scope_days.get(day, {})
                if rows or any(scope.values()):
                    made.append(rollup(when, rows, scope))
        return [p.stem for p in write_rollups(self.daily_dir, made, self.vault.root)]
