"""Run one import: stream the file in batches, skip ids already in, place each batch's
turns, hand their index documents on and move the ledger marks.

A batch is staged (rendered here, written by I/O threads) while the one before is placed
and indexed, so rendering overlaps disk and index with at most two batches in memory; a
batch is placed only once the one before is indexed."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from events.errors import NotInVault
from events.fsio import checked_folders, vault_folder
from events.layout import turn_number
from indexers.documents import IndexDoc, Skipped, load_index_doc
from indexers.sync import chunked

from ..vault import STAGING_DIR, Vault, file_lock
from .ledger import PENDING, Ledger
from .lines import ImportLine, chunks, open_source, parse_line
from .place import Batch, Placed, Placer
from .render import OVERHEAD, Completer, conversation_of, line_digest, size_bound, write_notes

__all__ = ["import_turns"]


Outcome = Callable[[int, str, int], None]
"""Told what became of each line number — `new`, `completed` (its turn got new events),
`present`, `failed` — and, when completed, the messages its turn held before."""


AfterBatch = Callable[[list[IndexDoc | Skipped]], None]


class BackgroundIndexer:
    """Run `after_batch` off the caller's thread; ledger marks are written on the caller's."""

    def __init__(self, vault: Vault, after_batch: AfterBatch | None) -> None:
        self.vault = vault
        self.after_batch = after_batch
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="pandafs-import-index") if after_batch else None
        self._pending: tuple[Future[None], list[tuple[Ledger, int]]] | None = None
        # "index": time in `after_batch` (its thread); "index wait": the caller blocked on it
        self.seconds = {"index": 0.0, "index wait": 0.0}

    def _index(self, docs: list[IndexDoc | Skipped]) -> None:
        start = time.perf_counter()
        try:
            self.after_batch(docs)  # type: ignore[misc]
        finally:
            self.seconds["index"] += time.perf_counter() - start

    def submit(self, docs: list[IndexDoc | Skipped], marks: list[tuple[Ledger, int]]) -> None:
        """Index `docs`, then mark each `(ledger, turn number)`: after the previous batch is done."""
        self.drain()
        if self._pool is None or not docs:
            self._mark(marks)
            return
        self._pending = (self._pool.submit(self._index, docs), marks)

    def drain(self) -> None:
        """Wait for the batch in flight; write its marks (re-raises its failure)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            future, marks = pending
            start = time.perf_counter()
            future.result()
            self.seconds["index wait"] += time.perf_counter() - start
            self._mark(marks)

    def recovered(self, ledger: Ledger, names: list[str]) -> None:
        """Index again the turns a killed import placed (read back from disk), then mark."""
        if self.after_batch is not None and names:
            root = self.vault.root
            max_bytes = self.vault.config.index.max_file_bytes
            size = self.vault.config.index.batch_size
            for chunk in chunked(names, size):
                paths = (f"users/{ledger.user}/turns/{name}/context.md" for name in chunk)
                docs = [d for p in paths if (d := load_index_doc(root, p, max_bytes=max_bytes)) is not None]
                self.submit(docs, [])
        if names or not ledger.marked:
            self.submit([], [(ledger, ledger.scanned)])

    def close(self, *, failed: bool) -> None:
        """Finish the batch in flight (its failure raised unless already failing), stop the thread."""
        try:
            self.drain()
        except BaseException:
            if not failed:
                raise
        finally:
            if self._pool is not None:
                self._pool.shutdown()

    @staticmethod
    def _mark(marks: list[tuple[Ledger, int]]) -> None:
        for ledger, upto in marks:
            ledger.mark_indexed(upto)


@dataclass
class ImportReport:
    imported: int = 0
    skipped: int = 0
    completed: int = 0  # lines already in whose turn grew: new events on that turn
    failed: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    recovered: int = 0  # turns a killed import had placed, indexed (again) by this one
    # seconds per stage on the importing thread; "index" on the indexer's thread, overlapping
    stages: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        rate = self.imported / self.seconds if self.seconds else 0.0
        data = asdict(self)
        stages = {name: round(seconds, 3) for name, seconds in self.stages.items()}
        return {**data, "seconds": round(self.seconds, 3), "turns_per_s": round(rate, 1), "stages": stages}


class _Importer:
    def __init__(
        self,
        vault: Vault,
        report: ImportReport,
        after_batch: AfterBatch | None,
        progress: Callable[[int], None] | None,
        on_line: Outcome | None = None,
    ) -> None:
        self.vault = vault
        self.report = report
        self.progress = progress
        self.on_line = on_line or (lambda number, outcome, held: None)
        self.ledgers: dict[str, Ledger] = {}
        self.placer = Placer(vault, lambda user, key: self.ledgers[user].last_of.get(key))
        self.completer = Completer(vault)
        self.indexer = BackgroundIndexer(vault, after_batch)
        self.parse_s = 0.0
        self._previous: tuple[Batch, int] | None = None  # staged, not yet placed; its line count

    def close(self, *, failed: bool) -> None:
        try:
            self.placer.close()
        finally:
            try:
                self.indexer.close(failed=failed)
            finally:
                for user in self.ledgers:
                    turns = self.vault.layout.turns_dir(user)
                    # absent, holding a failed batch's (the next import clears it), or a link: left
                    with (
                        suppress(OSError, NotInVault),
                        checked_folders(self.vault.root, durable=False) as folders,
                    ):
                        os.rmdir(STAGING_DIR, dir_fd=folders.fd(turns))

    def ledger(self, user: str) -> Ledger:
        ledger = self.ledgers.get(user)
        if ledger is None:
            vault_folder(self.vault.root, self.vault.layout.turns_dir(user))  # never through a link
            ledger = self.ledgers[user] = Ledger(self.vault, user)
            names = ledger.recover()
            self.indexer.recovered(ledger, names)
            self.report.recovered += len(names) if self.indexer.after_batch is not None else 0
        return ledger

    def stages(self) -> dict[str, float]:
        return {"parse": self.parse_s, **self.placer.seconds, **self.indexer.seconds}

    def fail(self, number: int, error: str) -> None:
        self.report.failed.append({"line": number, "error": error})
        self.on_line(number, "failed", 0)

    def run_chunk(self, chunk: list[tuple[int, bytes]]) -> None:
        start = time.perf_counter()
        by_user: dict[str, list[ImportLine]] = {}
        limit = self.vault.config.index.max_file_bytes
        for number, raw in chunk:
            parsed = parse_line(number, raw)
            if not isinstance(parsed, ImportLine):
                self.fail(number, parsed["error"])
                continue
            if size_bound(parsed) > limit:
                self.fail(number, too_large(size_bound(parsed) - OVERHEAD, limit))
                continue
            ledger = self.ledger(parsed.user)
            key = parsed.external_id
            if key is not None:
                turn = ledger.turn_of(key)
                if turn is not None:
                    self.settle_present(ledger, key, turn, parsed)
                    continue
                ledger.ids[key] = PENDING  # a repeat later in the file is skipped
            by_user.setdefault(parsed.user, []).append(parsed)
        self.parse_s += time.perf_counter() - start
        batch = self.placer.stage(by_user)  # while the previous batch's disk writes finish
        for line, size in self.placer.refused:
            if line.external_id is not None:
                self.ledgers[line.user].ids.pop(line.external_id, None)
            self.fail(line.number, too_large(size, limit))
        self.placer.refused.clear()
        self.finish()
        self._previous = (batch, len(chunk))

    def settle_present(self, ledger: Ledger, key: str, turn: str, line: ImportLine) -> None:
        """A line whose id is in already: skipped if its turn holds it, completed if it grew."""
        digest, result = line_digest(line), None
        if turn:  # "": the same id earlier in this file
            held = ledger.digest_of(key)
            if held is None:
                held = self.completer.held(ledger.user, turn)
                if held == digest:
                    ledger.record([{"e": key, "t": turn, "h": digest}])
            if held is not None and held != digest:  # else archived (its stub holds it) or unchanged
                result = self.completer.complete(ledger.user, turn, line)
        if result is None:  # held already (`complete` says None for an older export)
            self.report.skipped += 1
            self.on_line(line.number, "present", 0)
            return
        if isinstance(result, str):
            self.fail(line.number, result)
            return
        doc, held_messages = result
        ledger.record([{"e": key, "t": turn, "h": digest}])
        self.report.completed += 1
        self.on_line(line.number, "completed", held_messages)
        self.indexer.submit([doc], [])

    def finish(self) -> None:
        """Place the batch staged before, record it in the ledgers and hand it to the indexer."""
        if self._previous is None:
            return
        batch, lines = self._previous
        self._previous = None
        # the batch before it was indexed meanwhile: if that failed, this one stays staged
        self.indexer.drain()
        placed = self.placer.place(batch)
        by_user: dict[str, list[Placed]] = {}
        for item in placed:
            by_user.setdefault(item.user, []).append(item)
        marks: list[tuple[Ledger, int]] = []
        for user, items in by_user.items():
            ledger = self.ledgers[user]
            ledger.scanned = max(ledger.scanned, *(turn_number(item.turn) for item in items))
            entries = [_entry(item.line, item.turn) for item in items if item.line.external_id]
            ledger.record([*entries, {"scanned": ledger.scanned}])
            marks.append((ledger, ledger.scanned))
        self.report.imported += len(placed)
        for item in placed:
            self.on_line(item.line.number, "new", 0)
        self.indexer.submit([item.doc for item in placed], marks)

        if self.progress is not None:
            self.progress(lines)

    def link(self) -> None:
        """The `Next:` links rendered late and the notes of the conversations, indexed like the turns."""
        docs = [
            doc
            for user, turn, nxt in self.placer.threads.fix_ups
            if (doc := self.completer.link_next(user, turn, nxt, self.placer.threads)) is not None
        ]
        docs += write_notes(self.vault, self.placer.threads.touched.values())
        self.indexer.submit(docs, [])
        self.indexer.drain()


def too_large(size: int, limit: int) -> str:
    return (
        f"too large for the index: its turn would be {size:,} bytes > [index] max_file_bytes "
        f"{limit:,} (raise the limit, then import again)"
    )


def _entry(line: ImportLine, turn: str) -> dict[str, Any]:
    entry = {"e": line.external_id, "t": turn, "h": line_digest(line)}
    conversation = conversation_of(line)
    if conversation is not None:
        entry["c"] = conversation[0]
    return entry


def import_turns(
    vault: Vault,
    source: Path,
    *,
    batch_size: int | None = None,
    after_batch: AfterBatch | None = None,
    progress: Callable[[int], None] | None = None,
    on_line: Outcome | None = None,
) -> ImportReport:
    """Import every valid line of `source`; bad lines are reported, the rest go in (one import
    at a time per vault).  `progress(n)`: lines handled; `on_line`: what became of each.
    On return every imported turn is durable and (with `after_batch`) indexed."""
    started = time.perf_counter()
    report = ImportReport()
    batch_size = batch_size or vault.config.index.batch_size
    # closed on every way out: the users folder failing to be made too
    with open_source(source) as handle:
        vault.layout.users_dir.mkdir(parents=True, exist_ok=True)
        with file_lock(vault.layout.import_lock, what="import", root=vault.root):
            importer = _Importer(vault, report, after_batch, progress, on_line)
            failed = True
            try:
                for chunk in chunks(handle, batch_size):
                    importer.run_chunk(chunk)
                importer.finish()
                importer.link()
                failed = False
            finally:
                importer.close(failed=failed)
                report.stages = importer.stages()
    report.seconds = time.perf_counter() - started
    return report
