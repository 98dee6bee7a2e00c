"""Run one import: stream the file in batches, skip ids already in, place each batch's turns,
then hand their index documents on and move the ledger marks.

Per batch: the lines are validated, each user's new lines are staged (rendered on
this thread, written and fsynced by I/O threads), and then the batch staged before
it is placed (its folders are durable by now), the ledgers record its external ids
and `scanned`, and its documents go to the background indexer (one index commit per
batch, for every user in it).  So rendering overlaps both the disk and the index,
with at most two batches in memory; a batch is placed only once the one before it
is indexed, so an indexing failure stops the import as before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from events.errors import NotInVault
from events.fsio import checked_folders, open_outside_file, vault_folder
from events.layout import turn_number

from ..errors import BadInput
from ..vault import STAGING_DIR, Vault, file_lock
from .indexing import AfterBatch, BackgroundIndexer
from .ledger import Ledger
from .lines import ImportLine, chunks, parse_line
from .place import Batch, Placer

__all__ = ["ImportReport", "import_turns"]


@dataclass
class ImportReport:
    imported: int = 0
    skipped: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    turns: list[str] = field(default_factory=list)
    recovered: int = 0  # turns a killed import had placed, indexed (again) by this one
    # seconds per stage: on the importing thread, except "index" (the indexer's thread,
    # overlapping the others; "index wait" is what the importing thread waited for it)
    stages: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        rate = self.imported / self.seconds if self.seconds else 0.0
        return {
            "imported": self.imported,
            "skipped": self.skipped,
            "failed": self.failed,
            "seconds": round(self.seconds, 3),
            "turns_per_s": round(rate, 1),
            "recovered": self.recovered,
            "stages": {name: round(seconds, 3) for name, seconds in self.stages.items()},
        }


class _Importer:
    def __init__(
        self,
        vault: Vault,
        report: ImportReport,
        after_batch: AfterBatch | None,
        progress: Callable[[int], None] | None,
        keep_turns: bool = True,
    ) -> None:
        self.vault = vault
        self.report = report
        self.progress = progress
        self.keep_turns = keep_turns
        self.ledgers: dict[str, Ledger] = {}
        self.placer = Placer(vault)
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
                    # absent, or holds what a failed batch left (the next import clears it),
                    # or its folder is a link (removed nowhere): left
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

    def run_chunk(self, chunk: list[tuple[int, bytes]]) -> None:
        start = time.perf_counter()
        by_user: dict[str, list[ImportLine]] = {}
        for number, raw in chunk:
            parsed = parse_line(number, raw)
            if not isinstance(parsed, ImportLine):
                self.report.failed.append(parsed)
                continue
            ledger = self.ledger(parsed.user)
            key = parsed.external_id
            if key is not None:
                if key in ledger.ids:
                    self.report.skipped += 1
                    continue
                ledger.ids.add(key)  # a repeat later in the file is skipped
            by_user.setdefault(parsed.user, []).append(parsed)
        self.parse_s += time.perf_counter() - start
        batch = self.placer.stage(by_user)  # while the previous batch's disk writes finish
        self.finish()
        self._previous = (batch, len(chunk))

    def finish(self) -> None:
        """Place the batch staged before, record it in the ledgers and hand it to the indexer."""
        if self._previous is None:
            return
        batch, lines = self._previous
        self._previous = None
        # the batch before it was indexed meanwhile: if that failed, this one stays staged
        self.indexer.drain()
        placed = self.placer.place(batch)
        by_user_placed: dict[str, list[str]] = {}
        for item in placed:
            by_user_placed.setdefault(item.user, []).append(item.turn)
        marks: list[tuple[Ledger, int]] = []
        for user, names in by_user_placed.items():
            ledger = self.ledgers[user]
            ledger.scanned = max(ledger.scanned, max(turn_number(name) for name in names))
            entries = [
                {"e": item.line.external_id, "t": item.turn}
                for item in placed
                if item.user == user and item.line.external_id is not None
            ]
            ledger.append([*entries, {"scanned": ledger.scanned}])
            marks.append((ledger, ledger.scanned))
            if self.keep_turns:
                self.report.turns.extend(f"{user}/{name}" for name in names)
        self.report.imported += len(placed)
        self.indexer.submit([item.doc for item in placed], marks)
        if self.progress is not None:
            self.progress(lines)


def import_turns(
    vault: Vault,
    source: Path,
    *,
    batch_size: int | None = None,
    after_batch: AfterBatch | None = None,
    progress: Callable[[int], None] | None = None,
    keep_turns: bool = True,
) -> ImportReport:
    """Import every valid line of `source`; bad lines are reported, the rest go in.

    `progress(n)` is called with the number of lines (good or bad) handled so far
    in each batch.  `keep_turns=False` leaves `report.turns` empty (a million ids
    the CLI never prints).  One import runs at a time per vault (a second one waits).
    When it returns, every imported turn is durable and (with `after_batch`) indexed.
    """
    started = time.perf_counter()
    report = ImportReport()
    batch_size = batch_size or vault.config.index.batch_size
    try:  # the vault's one rule for what is read (a pipe handed over on the command line too)
        handle = open_outside_file(source)
    except NotInVault as exc:
        raise BadInput(
            f"{source}: {exc.reason}; not read (PandaFS reads only plain files with one name)"
        ) from None
    except OSError as exc:
        raise BadInput(f"cannot read {source}: {exc.strerror or exc}") from None
    with handle:  # closed on every way out: the users folder failing to be made too
        vault.layout.users_dir.mkdir(parents=True, exist_ok=True)
        with file_lock(vault.layout.import_lock, what="import", root=vault.root):
            importer = _Importer(vault, report, after_batch, progress, keep_turns)
            failed = True
            try:
                for chunk in chunks(handle, batch_size):
                    importer.run_chunk(chunk)
                importer.finish()
                failed = False
            finally:
                importer.close(failed=failed)
                report.stages = importer.stages()
    report.seconds = time.perf_counter() - started
    return report
